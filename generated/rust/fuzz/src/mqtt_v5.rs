//! The harness of wirestream-mqtt-v5.
#![allow(
    unused_variables,
    irrefutable_let_patterns,
    clippy::single_element_loop,
    clippy::field_reassign_with_default,
    clippy::unnecessary_fallible_conversions,
    clippy::useless_conversion
)]
use crate::Signature;
use wirestream_mqtt_v5::*;
/// The Python harness's corpus folder of this version (tests/fuzz/corpus/).
pub const CORPUS: &str = "codec.mqtt.v5";
#[allow(unused_variables, unused_mut)]
fn context(mode: u8, a: u8, b: u8) -> Option<Context> {
    if mode & 0x40 == 0 {
        return None;
    }
    let b = if mode & 0x80 != 0 {
        u64::from(b) << 8
    } else {
        u64::from(b)
    };
    let mut ctx = Context::default();
    Some(ctx)
}
/// Decode `body` (as a startup frame when `startup`); what decodes must encode again,
/// and decode back to the same bytes.
fn round_trip(
    body: &[u8],
    ctx: Option<&Context>,
    sender: Option<Sender>,
    startup: bool,
    signature: &mut Signature,
) -> Result<(), String> {
    let decode = |data| -> Result<Frame<'_>, ProtocolError> { decode_with(data, ctx, sender) };
    let frame = match decode(body) {
        Err(error) => {
            signature.mix(error.class_name());
            return Ok(());
        }
        Ok(frame) => frame,
    };
    signature.mix(frame.class_name());
    let first = frame.encode_with(ctx).map_err(|e| {
        format!(
            "{} decodes, but does not encode again: {e}",
            frame.class_name()
        )
    })?;
    let again = decode(&first)
        .map_err(|e| format!("{} re-encoded does not decode: {e}", frame.class_name()))?;
    let second = again
        .encode_with(ctx)
        .map_err(|e| format!("{} decoded twice does not encode: {e}", frame.class_name()))?;
    if first != second {
        return Err(format!(
            "{} encodes differently once decoded again",
            frame.class_name()
        ));
    }
    Ok(())
}
/// The splitter's frames (bytes, or the error that stops it) with `body` given at once
/// and in chunks of `chunk` bytes: they must be the same.
fn stream(
    body: &[u8],
    chunk: usize,
    ctx: Option<&Context>,
    signature: &mut Signature,
) -> Result<(), String> {
    let mut whole: Vec<Result<&[u8], ProtocolError>> = Vec::new();
    let mut rest = body;
    loop {
        match split(rest) {
            Ok(Some((frame, consumed))) => {
                if consumed == 0 || consumed > rest.len() {
                    return Err(format!("split consumed {consumed} of {}", rest.len()));
                }
                whole.push(Ok(frame));
                rest = &rest[consumed..];
            }
            Ok(None) => break,
            Err(error) => {
                whole.push(Err(error));
                break;
            }
        }
    }
    for frame in whole.iter().flatten() {
        if let Err(error) = decode_with(frame, ctx, None) {
            signature.mix(error.class_name());
        }
    }
    signature.mix_len(whole.len());
    let (mut start, mut arrived, mut chunked) = (0usize, 0usize, Vec::new());
    'feed: while arrived < body.len() {
        arrived = (arrived + chunk).min(body.len());
        loop {
            match split(&body[start..arrived]) {
                Ok(Some((frame, consumed))) => {
                    chunked.push(Ok(frame));
                    start += consumed;
                }
                Ok(None) => break,
                Err(error) => {
                    chunked.push(Err(error));
                    break 'feed;
                }
            }
        }
    }
    if chunked != whole {
        return Err(format!(
            "the splitter gives {} frames at once, {} in chunks of {chunk}",
            whole.len(),
            chunked.len()
        ));
    }
    Ok(())
}
/// Every check of one input; `Err`: what broke.
pub fn check(input: &[u8], signature: &mut Signature) -> Result<(), String> {
    let header = |i: usize| input.get(i).copied().unwrap_or(0);
    let (mode, a, b) = (header(0), header(1), header(2));
    let body = input.get(3..).unwrap_or(&[]);
    let ctx = context(mode, a, b);
    for sender in [None] {
        round_trip(body, ctx.as_ref(), sender, false, signature)?;
    }
    stream(body, usize::from(mode & 0x0f) + 1, ctx.as_ref(), signature)
}
