//! RSocket 1.0's frame-log columns (`generated/rsocket/v1_0/spark.py`: `FRAME_COLUMNS`,
//! the `*_SCHEMA`s and `frame_row`) written from the generated Rust decoder's frames.
//!
//! Written by hand for this first protocol; `tests/native/test_native_capture.py` holds it
//! to the generated Python `frame_row` (same rows, same errors, over the corpus and
//! mutated inputs) and `layout()` to the Spark schema. The other versions read through
//! the pure-Python path until this mapping is generated from the same plan.

use wirestream_rsocket_v1_0::{self as codec, errorcode, Frame};

use crate::columns::{Column, Kind, StructColumn};
use crate::log::{Head, Protocol};

/// RSocket 1.0 in the frame log.
pub static PROTOCOL: Protocol = Protocol {
    name: "rsocket/1.0",
    protocol: "rsocket",
    version: "1.0",
    columns: COLUMNS,
    row,
};

const I32: Kind = Kind::Int32;
const I64: Kind = Kind::Int64;
const BOOL: Kind = Kind::Bool;
const BIN: Kind = Kind::Binary;
const STR: Kind = Kind::Utf8;

type Fields = &'static [(&'static str, Kind, bool)];

const COLUMNS: &[(&str, Fields)] = &[
    (
        "setup",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("lease", BOOL, false),
            ("major_version", I32, false),
            ("minor_version", I32, false),
            ("keepalive_interval", I32, false),
            ("max_lifetime", I32, false),
            ("resume_token", BIN, true),
            ("metadata_mime_type", STR, false),
            ("data_mime_type", STR, false),
            ("metadata", BIN, true),
            ("data", BIN, false),
        ],
    ),
    (
        "lease",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("ttl", I32, false),
            ("number_of_requests", I32, false),
            ("metadata", BIN, true),
        ],
    ),
    (
        "keepalive",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("respond", BOOL, false),
            ("last_received_position", I64, false),
            ("data", BIN, false),
        ],
    ),
    ("request_response", REQUEST),
    ("request_fnf", REQUEST),
    (
        "request_stream",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("follows", BOOL, false),
            ("initial_request_n", I32, false),
            ("metadata", BIN, true),
            ("data", BIN, false),
        ],
    ),
    (
        "request_channel",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("follows", BOOL, false),
            ("complete", BOOL, false),
            ("initial_request_n", I32, false),
            ("metadata", BIN, true),
            ("data", BIN, false),
        ],
    ),
    (
        "request_n",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("request_n", I32, false),
        ],
    ),
    (
        "cancel",
        &[("stream_id", I32, false), ("ignore", BOOL, false)],
    ),
    (
        "payload",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("follows", BOOL, false),
            ("complete", BOOL, false),
            ("next", BOOL, false),
            ("metadata", BIN, true),
            ("data", BIN, false),
        ],
    ),
    (
        "error",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("error_code", STR, false),
            ("data", BIN, false),
        ],
    ),
    (
        "metadata_push",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("metadata", BIN, false),
        ],
    ),
    (
        "resume",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("major_version", I32, false),
            ("minor_version", I32, false),
            ("resume_token", BIN, false),
            ("last_received_server_position", I64, false),
            ("first_available_client_position", I64, false),
        ],
    ),
    (
        "resume_ok",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("last_received_client_position", I64, false),
        ],
    ),
    (
        "ext",
        &[
            ("stream_id", I32, false),
            ("ignore", BOOL, false),
            ("extended_type", I32, false),
            ("metadata", BIN, true),
            ("data", BIN, false),
        ],
    ),
    (
        "unknown_frame",
        &[
            ("code", I32, false),
            ("stream_id", I32, false),
            ("flags", I32, false),
            ("body", BIN, false),
        ],
    ),
];

const REQUEST: Fields = &[
    ("stream_id", I32, false),
    ("ignore", BOOL, false),
    ("follows", BOOL, false),
    ("metadata", BIN, true),
    ("data", BIN, false),
];

/// `_ERROR_CODE_NAMES` of spark.py: a code no member names shows as its decimal number.
fn error_code_name(code: u32, scratch: &mut String) -> &str {
    match code {
        errorcode::RESERVED => "RESERVED",
        errorcode::INVALID_SETUP => "INVALID_SETUP",
        errorcode::UNSUPPORTED_SETUP => "UNSUPPORTED_SETUP",
        errorcode::REJECTED_SETUP => "REJECTED_SETUP",
        errorcode::REJECTED_RESUME => "REJECTED_RESUME",
        errorcode::CONNECTION_ERROR => "CONNECTION_ERROR",
        errorcode::CONNECTION_CLOSE => "CONNECTION_CLOSE",
        errorcode::APPLICATION_ERROR => "APPLICATION_ERROR",
        errorcode::REJECTED => "REJECTED",
        errorcode::CANCELED => "CANCELED",
        errorcode::INVALID => "INVALID",
        errorcode::RESERVED_FOR_EXTENSION => "RESERVED_FOR_EXTENSION",
        other => {
            use core::fmt::Write;
            scratch.clear();
            let _ = write!(scratch, "{other}");
            scratch
        }
    }
}

fn bit(set: bool, mask: u32) -> u32 {
    if set {
        mask
    } else {
        0
    }
}

/// The flag a present optional field sets (`frame_row`'s presence flags).
fn has<T>(value: &Option<T>, mask: u32) -> u32 {
    bit(value.is_some(), mask)
}

fn request(c: &mut [Column], stream_id: u32, ignore: bool, follows: bool, m: Option<&[u8]>) {
    c[0].i32(stream_id as i32);
    c[1].bool(ignore);
    c[2].bool(follows);
    c[3].opt_bytes(m);
}

/// Decode `data` and write its frame column's row; the frame log's head of the row.
fn row(
    data: &[u8],
    _flags: u8,
    columns: &mut [StructColumn],
    row: usize,
    scratch: &mut String,
) -> Result<Head, &'static str> {
    let frame = codec::decode(data).map_err(|e| e.class_name())?;
    // Every column index below is COLUMNS' order (the frame log's FRAME_COLUMNS).
    let head = |kind, stream_id: u32, flags| Head {
        frame_type: kind,
        stream_id: Some(i64::from(stream_id)),
        flags: Some(flags as i32),
    };
    const I: u32 = 0x200; // ignore
    Ok(match frame {
        Frame::Setup(f) => {
            let c = columns[0].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bool(f.lease);
            c[3].i32(i32::from(f.major_version));
            c[4].i32(i32::from(f.minor_version));
            c[5].i32(f.keepalive_interval as i32);
            c[6].i32(f.max_lifetime as i32);
            c[7].opt_bytes(f.resume_token);
            c[8].bytes(f.metadata_mime_type.as_bytes());
            c[9].bytes(f.data_mime_type.as_bytes());
            c[10].opt_bytes(f.metadata);
            c[11].bytes(f.data);
            let flags = bit(f.ignore, I)
                | bit(f.lease, 0x40)
                | has(&f.resume_token, 0x80)
                | has(&f.metadata, 0x100);
            head("SETUP", f.stream_id, flags)
        }
        Frame::Lease(f) => {
            let c = columns[1].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].i32(f.ttl as i32);
            c[3].i32(f.number_of_requests as i32);
            c[4].opt_bytes(f.metadata);
            let flags = bit(f.ignore, I) | has(&f.metadata, 0x100);
            head("LEASE", f.stream_id, flags)
        }
        Frame::Keepalive(f) => {
            let c = columns[2].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bool(f.respond);
            c[3].i64(f.last_received_position as i64);
            c[4].bytes(f.data);
            head(
                "KEEPALIVE",
                f.stream_id,
                bit(f.ignore, I) | bit(f.respond, 0x80),
            )
        }
        Frame::RequestResponse(f) => {
            let c = columns[3].row(row);
            request(c, f.stream_id, f.ignore, f.follows, f.metadata);
            c[4].bytes(f.data);
            let flags = bit(f.ignore, I) | bit(f.follows, 0x80) | has(&f.metadata, 0x100);
            head("REQUEST_RESPONSE", f.stream_id, flags)
        }
        Frame::RequestFnf(f) => {
            let c = columns[4].row(row);
            request(c, f.stream_id, f.ignore, f.follows, f.metadata);
            c[4].bytes(f.data);
            let flags = bit(f.ignore, I) | bit(f.follows, 0x80) | has(&f.metadata, 0x100);
            head("REQUEST_FNF", f.stream_id, flags)
        }
        Frame::RequestStream(f) => {
            let c = columns[5].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bool(f.follows);
            c[3].i32(f.initial_request_n as i32);
            c[4].opt_bytes(f.metadata);
            c[5].bytes(f.data);
            let flags = bit(f.ignore, I) | bit(f.follows, 0x80) | has(&f.metadata, 0x100);
            head("REQUEST_STREAM", f.stream_id, flags)
        }
        Frame::RequestChannel(f) => {
            let c = columns[6].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bool(f.follows);
            c[3].bool(f.complete);
            c[4].i32(f.initial_request_n as i32);
            c[5].opt_bytes(f.metadata);
            c[6].bytes(f.data);
            let flags = bit(f.ignore, I)
                | bit(f.follows, 0x80)
                | bit(f.complete, 0x40)
                | has(&f.metadata, 0x100);
            head("REQUEST_CHANNEL", f.stream_id, flags)
        }
        Frame::RequestN(f) => {
            let c = columns[7].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].i32(f.request_n as i32);
            head("REQUEST_N", f.stream_id, bit(f.ignore, I))
        }
        Frame::Cancel(f) => {
            let c = columns[8].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            head("CANCEL", f.stream_id, bit(f.ignore, I))
        }
        Frame::Payload(f) => {
            let c = columns[9].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bool(f.follows);
            c[3].bool(f.complete);
            c[4].bool(f.next);
            c[5].opt_bytes(f.metadata);
            c[6].bytes(f.data);
            let flags = bit(f.ignore, I)
                | bit(f.follows, 0x80)
                | bit(f.complete, 0x40)
                | bit(f.next, 0x20)
                | has(&f.metadata, 0x100);
            head("PAYLOAD", f.stream_id, flags)
        }
        Frame::Error(f) => {
            let c = columns[10].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bytes(error_code_name(f.error_code, scratch).as_bytes());
            c[3].bytes(f.data);
            head("ERROR", f.stream_id, bit(f.ignore, I))
        }
        Frame::MetadataPush(f) => {
            let c = columns[11].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].bytes(f.metadata);
            head("METADATA_PUSH", f.stream_id, bit(f.ignore, I) | 0x100)
        }
        Frame::Resume(f) => {
            let c = columns[12].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].i32(i32::from(f.major_version));
            c[3].i32(i32::from(f.minor_version));
            c[4].bytes(f.resume_token);
            c[5].i64(f.last_received_server_position as i64);
            c[6].i64(f.first_available_client_position as i64);
            head("RESUME", f.stream_id, bit(f.ignore, I))
        }
        Frame::ResumeOk(f) => {
            let c = columns[13].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].i64(f.last_received_client_position as i64);
            head("RESUME_OK", f.stream_id, bit(f.ignore, I))
        }
        Frame::Ext(f) => {
            let c = columns[14].row(row);
            c[0].i32(f.stream_id as i32);
            c[1].bool(f.ignore);
            c[2].i32(f.extended_type as i32);
            c[3].opt_bytes(f.metadata);
            c[4].bytes(f.data);
            let flags = bit(f.ignore, I) | has(&f.metadata, 0x100);
            head("EXT", f.stream_id, flags)
        }
        Frame::UnknownFrame(f) => {
            let c = columns[15].row(row);
            c[0].i32(f.code as i32);
            c[1].i32(f.stream_id as i32);
            c[2].i32(i32::from(f.flags));
            c[3].bytes(f.body);
            head("UNKNOWN_FRAME", f.stream_id, u32::from(f.flags))
        }
    })
}
