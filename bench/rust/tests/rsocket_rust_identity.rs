//! Byte identity with `rsocket_rust` 0.7.5 (the Rust RSocket implementation) for every frame
//! type it encodes, both ways: the same logical frame built with its builders and with ours
//! gives the same bytes; its bytes decode with ours and encode back unchanged, and ours
//! decode with it and encode back unchanged. Where it departs from the spec
//! (Protocol.md), the departure is pinned below, so a change of either side shows.
#![forbid(unsafe_code)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rsocket_rust::frame::{self as theirs, Frame as TheirFrame};
use rsocket_rust::utils::Writeable;
use wirestream_rsocket_v1_0::{self as ours, Frame, ProtocolError};

const F: u16 = TheirFrame::FLAG_FOLLOW;
const C: u16 = TheirFrame::FLAG_COMPLETE;
const N: u16 = TheirFrame::FLAG_NEXT;

fn b(data: &[u8]) -> Bytes {
    Bytes::copy_from_slice(data)
}

/// Their decode of `bytes`, written again (`None`: it panicked; `Some(Err)`: refused).
fn their_round_trip(bytes: &[u8]) -> Option<Result<Vec<u8>, String>> {
    let mut buf = BytesMut::from(bytes);
    catch_unwind(AssertUnwindSafe(|| {
        TheirFrame::decode(&mut buf)
            .map(|f| f.bytes())
            .map_err(|e| e.to_string())
    }))
    .ok()
}

/// Both encoders agree on `pair`, and each side's bytes survive the other's decode and encode.
fn identical(what: &str, their: TheirFrame, our: Frame<'_>) {
    let their_bytes = their.bytes();
    let our_bytes = our.encode().expect("ours encodes");
    assert_eq!(their_bytes, our_bytes, "{what}: the encoders differ");
    let decoded = ours::decode(&their_bytes).expect("ours decodes theirs");
    assert_eq!(decoded, our, "{what}: ours decodes theirs to another frame");
    assert_eq!(
        decoded.encode().as_deref(),
        Ok(&their_bytes[..]),
        "{what}: theirs -> ours -> bytes"
    );
    assert_eq!(
        their_round_trip(&our_bytes),
        Some(Ok(our_bytes.clone())),
        "{what}: ours -> theirs -> bytes"
    );
}

#[test]
fn every_frame_type_it_encodes_is_byte_identical() {
    let (meta, data, token) = (
        b"m3ta".as_slice(),
        b"some data".as_slice(),
        b"t0k3n".as_slice(),
    );
    identical(
        "SETUP",
        theirs::Setup::builder(0, 0)
            .set_keepalive(Duration::from_millis(20_000))
            .set_lifetime(Duration::from_millis(90_000))
            .set_mime_metadata("message/x.rsocket.composite-metadata.v0")
            .set_mime_data("application/json")
            .set_metadata(b(meta))
            .set_data(b(data))
            .build(),
        Frame::Setup(ours::Setup {
            stream_id: 0,
            ignore: false,
            lease: false,
            major_version: 1,
            minor_version: 0,
            keepalive_interval: 20_000,
            max_lifetime: 90_000,
            resume_token: None,
            metadata_mime_type: "message/x.rsocket.composite-metadata.v0",
            data_mime_type: "application/json",
            metadata: Some(meta),
            data,
        }),
    );
    identical(
        "SETUP with a resume token and LEASE",
        theirs::Setup::builder(0, TheirFrame::FLAG_LEASE)
            .set_keepalive(Duration::from_millis(1))
            .set_lifetime(Duration::from_millis(2))
            .set_token(b(token))
            .set_mime_metadata("a")
            .set_mime_data("b")
            .build(),
        Frame::Setup(ours::Setup {
            stream_id: 0,
            ignore: false,
            lease: true,
            major_version: 1,
            minor_version: 0,
            keepalive_interval: 1,
            max_lifetime: 2,
            resume_token: Some(token),
            metadata_mime_type: "a",
            data_mime_type: "b",
            metadata: None,
            data: b"",
        }),
    );
    identical(
        "LEASE",
        theirs::Lease::builder(0, 0)
            .set_ttl(1000)
            .set_number_of_requests(7)
            .set_metadata(b(meta))
            .build(),
        Frame::Lease(ours::Lease {
            stream_id: 0,
            ignore: false,
            ttl: 1000,
            number_of_requests: 7,
            metadata: Some(meta),
        }),
    );
    identical(
        "KEEPALIVE",
        theirs::Keepalive::builder(0, TheirFrame::FLAG_RESPOND)
            .set_last_received_position(42)
            .set_data(b(data))
            .build(),
        Frame::Keepalive(ours::Keepalive {
            stream_id: 0,
            ignore: false,
            respond: true,
            last_received_position: 42,
            data,
        }),
    );
    identical(
        "REQUEST_RESPONSE",
        theirs::RequestResponse::builder(1, 0)
            .set_metadata(b(meta))
            .set_data(b(data))
            .build(),
        Frame::RequestResponse(ours::RequestResponse {
            stream_id: 1,
            ignore: false,
            follows: false,
            metadata: Some(meta),
            data,
        }),
    );
    identical(
        "REQUEST_FNF (follows)",
        theirs::RequestFNF::builder(3, F).set_data(b(data)).build(),
        Frame::RequestFnf(ours::RequestFnf {
            stream_id: 3,
            ignore: false,
            follows: true,
            metadata: None,
            data,
        }),
    );
    identical(
        "REQUEST_STREAM",
        theirs::RequestStream::builder(5, 0)
            .set_initial_request_n(64)
            .set_metadata(b(meta))
            .set_data(b(data))
            .build(),
        Frame::RequestStream(ours::RequestStream {
            stream_id: 5,
            ignore: false,
            follows: false,
            initial_request_n: 64,
            metadata: Some(meta),
            data,
        }),
    );
    identical(
        "REQUEST_CHANNEL (complete)",
        theirs::RequestChannel::builder(7, C)
            .set_initial_request_n(0x7fff_ffff)
            .set_data(b(data))
            .build(),
        Frame::RequestChannel(ours::RequestChannel {
            stream_id: 7,
            ignore: false,
            follows: false,
            complete: true,
            initial_request_n: 0x7fff_ffff,
            metadata: None,
            data,
        }),
    );
    identical(
        "REQUEST_N",
        theirs::RequestN::builder(9, 0).set_n(1000).build(),
        Frame::RequestN(ours::RequestN {
            stream_id: 9,
            ignore: false,
            request_n: 1000,
        }),
    );
    identical(
        "CANCEL",
        theirs::Cancel::builder(11, 0).build(),
        Frame::Cancel(ours::Cancel {
            stream_id: 11,
            ignore: false,
        }),
    );
    identical(
        "PAYLOAD (next, complete, metadata)",
        theirs::Payload::builder(13, N | C)
            .set_metadata(b(meta))
            .set_data(b(data))
            .build(),
        Frame::Payload(ours::Payload {
            stream_id: 13,
            ignore: false,
            follows: false,
            complete: true,
            next: true,
            metadata: Some(meta),
            data,
        }),
    );
    identical(
        "PAYLOAD (complete only)",
        theirs::Payload::builder(13, C).build(),
        Frame::Payload(ours::Payload {
            stream_id: 13,
            ignore: false,
            follows: false,
            complete: true,
            next: false,
            metadata: None,
            data: b"",
        }),
    );
    identical(
        "ERROR",
        theirs::Error::builder(0, 0)
            .set_code(0x0000_0101)
            .set_data(b(b"boom"))
            .build(),
        Frame::Error(ours::Error {
            stream_id: 0,
            ignore: false,
            error_code: 0x101,
            data: b"boom",
        }),
    );
    identical(
        "RESUME",
        theirs::Resume::builder(0, 0)
            .set_token(b(token))
            .set_last_received_server_position(100)
            .set_first_available_client_position(50)
            .build(),
        Frame::Resume(ours::Resume {
            stream_id: 0,
            ignore: false,
            major_version: 1,
            minor_version: 0,
            resume_token: token,
            last_received_server_position: 100,
            first_available_client_position: 50,
        }),
    );
    identical(
        "RESUME_OK",
        theirs::ResumeOK::builder(0, 0).set_position(77).build(),
        Frame::ResumeOk(ours::ResumeOk {
            stream_id: 0,
            ignore: false,
            last_received_client_position: 77,
        }),
    );
}

/// Where it departs from Protocol.md: each pinned, with what the spec says.
#[test]
fn departures_from_the_spec_are_pinned() {
    // METADATA_PUSH: "(M)etadata: Metadata always present" -- the flag MUST be set. It
    // writes the frame without it (flags 0x000); ours sets it (0x100). Ours reads its
    // frame all the same and writes it back with the flag; it reads ours and writes it
    // back unchanged (it keeps the flags it read).
    let their_push = theirs::MetadataPush::builder(0, 0)
        .set_metadata(b(b"m"))
        .build()
        .bytes();
    let our_push = Frame::MetadataPush(ours::MetadataPush {
        stream_id: 0,
        ignore: false,
        metadata: b"m",
    });
    let our_bytes = our_push.encode().expect("encodes");
    assert_eq!(their_push, [0, 0, 0, 0, 0x30, 0x00, b'm']);
    assert_eq!(our_bytes, [0, 0, 0, 0, 0x31, 0x00, b'm']);
    let read = ours::decode(&their_push).expect("ours reads it");
    assert_eq!(read, our_push);
    assert_eq!(read.encode().expect("encodes"), our_bytes);
    assert_eq!(their_round_trip(&our_bytes), Some(Ok(our_bytes.clone())));

    // EXT (0x3F) is a frame type of the spec; it does not know it and panics
    // (`unreachable!("invalid frame type")`) instead of refusing it, even with the IGNORE
    // flag, which says a receiver that does not understand the frame MUST ignore it.
    let ext = Frame::Ext(ours::Ext {
        stream_id: 1,
        ignore: true,
        extended_type: 9,
        metadata: None,
        data: b"x",
    });
    let ext_bytes = ext.encode().expect("encodes");
    assert_eq!(
        their_round_trip(&ext_bytes),
        None,
        "EXT: it no longer panics"
    );
    assert_eq!(ours::decode(&ext_bytes), Ok(ext));

    // An unknown frame type (0x30) with IGNORE set: the spec says ignore it; it panics, ours
    // gives it as an UnknownFrame (and without IGNORE refuses it: UnknownFrameType).
    let unknown = [0, 0, 0, 1, 0x30 << 2 | 0x02, 0x00];
    assert_eq!(
        their_round_trip(&unknown),
        None,
        "unknown type: it no longer panics"
    );
    assert!(matches!(ours::decode(&unknown), Ok(Frame::UnknownFrame(_))));
    assert_eq!(
        ours::decode(&[0, 0, 0, 1, 0x30 << 2, 0x00]),
        Err(ProtocolError::UnknownFrameType)
    );

    // A metadata length beyond the frame: it panics in `split_to`; ours: Truncated.
    let overlong = [0, 0, 0, 1, 0x29, 0x00, 0x00, 0x00, 0xff, b'x'];
    assert_eq!(
        their_round_trip(&overlong),
        None,
        "overlong metadata: it no longer panics"
    );
    assert!(matches!(
        ours::decode(&overlong),
        Err(ProtocolError::Truncated { .. })
    ));

    // The stream id's reserved high bit: "Stream ID: 31 bits (the top bit is reserved)". It
    // keeps it as part of the id and writes it back; ours reads the 31 bits (the bit is
    // dropped on re-encode) and refuses to encode an id beyond them.
    let reserved = [0x80, 0, 0, 1, 0x24, 0x00];
    assert_eq!(their_round_trip(&reserved), Some(Ok(reserved.to_vec())));
    let ours_reserved = ours::decode(&reserved).expect("decodes");
    assert!(matches!(
        ours_reserved,
        Frame::Cancel(ours::Cancel { stream_id: 1, .. })
    ));
    assert_eq!(
        ours_reserved.encode().expect("encodes"),
        [0, 0, 0, 1, 0x24, 0x00]
    );
}
