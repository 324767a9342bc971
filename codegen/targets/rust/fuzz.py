"""The fuzz harness of the Rust codecs: ``generated/rust/fuzz``, a stable-toolchain binary
(``wirestream-fuzz``) that runs a deterministic mutation loop over every generated crate's
``decode`` and stream splitter, and replays a corpus (``make test``).

An input has the layout of the Python harness's (``tests/fuzz/codecs.py``), so both read
the same committed corpus (``tests/fuzz/corpus/codec.<protocol>.<version>/``): ``[mode][a][b]``
then the body; ``mode`` bits 0-3 cut the body into chunks of (bits + 1) bytes for the
splitter, bit 6 sets the context (a keyed value gets key ``a`` set to ``b``; plain values
take ``a`` for the first and ``b``, shifted left by 8 when bit 7 is set, for the others).

Per crate this module spells ``check``: every sender the version needs (and the startup
decoder where there is one) decodes the body; what decodes encodes again and decodes back to
the same bytes; the splitter gives the same frames whether the body comes at once or in
chunks. ``main.rs`` (``templates/fuzz_main.rs.j2``) holds the loop, the mutators and the
panic catcher. It is a dev tool of this repository (``publish = false``).
"""

from __future__ import annotations

from wirestream.codegen.plan.codec import CodecPlan
from wirestream.codegen.targets.rust.codec import Code, Spell, crate_name, ident

__all__ = ["render_fuzz"]


def fuzz_module(plan: CodecPlan) -> str:
    sp = Spell(plan)
    crate = crate_name(plan).replace("-", "_")
    c = Code()
    c(f"//! The harness of {crate_name(plan)}.",
      "#![allow(unused_variables, irrefutable_let_patterns, clippy::single_element_loop, "
      "clippy::field_reassign_with_default, clippy::unnecessary_fallible_conversions, "
      "clippy::useless_conversion)]",
      f"use {crate}::*;",
      "use crate::Signature;",
      "/// The Python harness's corpus folder of this version (tests/fuzz/corpus/).",
      f'pub const CORPUS: &str = "codec.{plan.protocol}.{plan.version}";')  # fmt: skip
    # the context the header sets
    c("#[allow(unused_variables, unused_mut)]",
      "fn context(mode: u8, a: u8, b: u8) -> Option<Context> {",
      "if mode & 0x40 == 0 { return None; }",
      "let b = if mode & 0x80 != 0 { u64::from(b) << 8 } else { u64::from(b) };",
      "let mut ctx = Context::default();")  # fmt: skip
    for index, value in enumerate(plan.context):
        key, rtype = sp.ctx_types(value)
        name = ident(value.name)
        if key is not None:
            if index == 0:
                c(f"if b != 0 {{ if let (Ok(k), Ok(v)) = ({key}::try_from(a), {rtype}::try_from(b)) "
                  f"{{ ctx.{name}.insert(k, v); }} }}")  # fmt: skip
        elif index == 0:
            c(f"ctx.{name} = {rtype}::from(a);")
        else:
            c(f"ctx.{name} = {rtype}::try_from(b).unwrap_or_default();")
    c("Some(ctx) }")
    senders = (
        "[None, Some(Sender::Client), Some(Sender::Server)]" if plan.sender_tables else "[None]"
    )
    c("/// Decode `body` (as a startup frame when `startup`); what decodes must encode again,",
      "/// and decode back to the same bytes.",
      "fn round_trip(body: &[u8], ctx: Option<&Context>, sender: Option<Sender>, startup: bool, "
      "signature: &mut Signature) -> Result<(), String> {",
      "let decode = |data| -> Result<Frame<'_>, ProtocolError> {")  # fmt: skip
    if plan.startup is not None:
        c("if startup { return decode_startup(data, ctx); }")
    c("decode_with(data, ctx, sender) };",
      "let frame = match decode(body) {",
      "Err(error) => { signature.mix(error.class_name()); return Ok(()); }",
      "Ok(frame) => frame };",
      "signature.mix(frame.class_name());",
      "let first = frame.encode_with(ctx).map_err(|e| format!(\"{} decodes, but does not "
      "encode again: {e}\", frame.class_name()))?;",
      "let again = decode(&first).map_err(|e| format!(\"{} re-encoded does not decode: {e}\", "
      "frame.class_name()))?;",
      "let second = again.encode_with(ctx).map_err(|e| format!(\"{} decoded twice does not "
      "encode: {e}\", frame.class_name()))?;",
      "if first != second { return Err(format!(\"{} encodes differently once decoded again\", "
      "frame.class_name())); }",
      "Ok(()) }")  # fmt: skip
    c("/// The splitter's frames (bytes, or the error that stops it) with `body` given at once",
      "/// and in chunks of `chunk` bytes: they must be the same.",
      "fn stream(body: &[u8], chunk: usize, ctx: Option<&Context>, signature: &mut Signature) "
      "-> Result<(), String> {",
      "let mut whole: Vec<Result<&[u8], ProtocolError>> = Vec::new();",
      "let mut rest = body;",
      "loop { match split(rest) {",
      "Ok(Some((frame, consumed))) => { if consumed == 0 || consumed > rest.len() "
      "{ return Err(format!(\"split consumed {consumed} of {}\", rest.len())); } "
      "whole.push(Ok(frame)); rest = &rest[consumed..]; }",
      "Ok(None) => break,",
      "Err(error) => { whole.push(Err(error)); break; } } }",
      "for frame in whole.iter().flatten() { if let Err(error) = decode_with(frame, ctx, None) "
      "{ signature.mix(error.class_name()); } }",
      "signature.mix_len(whole.len());",
      "let (mut start, mut arrived, mut chunked) = (0usize, 0usize, Vec::new());",
      "'feed: while arrived < body.len() {",
      "arrived = (arrived + chunk).min(body.len());",
      "loop { match split(&body[start..arrived]) {",
      "Ok(Some((frame, consumed))) => { chunked.push(Ok(frame)); start += consumed; }",
      "Ok(None) => break,",
      "Err(error) => { chunked.push(Err(error)); break 'feed; } } } }",
      "if chunked != whole { return Err(format!(\"the splitter gives {} frames at once, {} in "
      "chunks of {chunk}\", whole.len(), chunked.len())); }",
      "Ok(()) }")  # fmt: skip
    c("/// Every check of one input; `Err`: what broke.",
      "pub fn check(input: &[u8], signature: &mut Signature) -> Result<(), String> {",
      "let header = |i: usize| input.get(i).copied().unwrap_or(0);",
      "let (mode, a, b) = (header(0), header(1), header(2));",
      "let body = input.get(3..).unwrap_or(&[]);",
      "let ctx = context(mode, a, b);",
      f"for sender in {senders} {{ round_trip(body, ctx.as_ref(), sender, false, signature)?; }}")  # fmt: skip
    if plan.startup is not None:
        c("round_trip(body, ctx.as_ref(), None, true, signature)?;")
    c("stream(body, usize::from(mode & 0x0f) + 1, ctx.as_ref(), signature) }")
    return c.text()


def render_fuzz(plans: list[CodecPlan]) -> dict[str, str]:
    from wirestream.codegen.targets.rust.codec import _ENV, rustfmt

    files: dict[str, str] = {}
    modules = []
    for plan in plans:
        folder = f"{plan.protocol}_{plan.version}"
        files[f"fuzz/src/{folder}.rs"] = rustfmt(fuzz_module(plan))
        modules.append((folder, crate_name(plan)))
    files["fuzz/Cargo.toml"] = _ENV.get_template("fuzz_Cargo.toml.j2").render(modules=modules)
    files["fuzz/src/main.rs"] = rustfmt(
        _ENV.get_template("fuzz_main.rs.j2").render(modules=modules)
    )
    return files
