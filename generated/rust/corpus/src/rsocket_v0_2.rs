//! The corpus's JSON form of wirestream-rsocket-v0-2's frames.
#![allow(
    clippy::all,
    unused_parens,
    unused_braces,
    unused_variables,
    unused_mut
)]
use crate::json::*;
use serde_json::{Map, Value};
use wirestream_rsocket_v0_2::*;
fn setup_json(x: &Setup<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Setup".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("lease".into(), Value::Bool(*&x.lease));
    m.insert("strict".into(), Value::Bool(*&x.strict));
    m.insert("resume".into(), Value::Bool(*&x.resume));
    m.insert("major_version".into(), int((*&x.major_version).into(), 16));
    m.insert("minor_version".into(), int((*&x.minor_version).into(), 16));
    m.insert(
        "keepalive_interval".into(),
        int((*&x.keepalive_interval).into(), 32),
    );
    m.insert("max_lifetime".into(), int((*&x.max_lifetime).into(), 32));
    m.insert("resume_token".into(), hex_json(&x.resume_token));
    m.insert(
        "metadata_mime_type".into(),
        Value::String((*&x.metadata_mime_type).into()),
    );
    m.insert(
        "data_mime_type".into(),
        Value::String((*&x.data_mime_type).into()),
    );
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn setup_from(v: &Value) -> Result<Setup<'static>, String> {
    let m = record(v, "Setup")?;
    Ok(Setup {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        lease: boolean(field(m, "lease")?)?,
        strict: boolean(field(m, "strict")?)?,
        resume: boolean(field(m, "resume")?)?,
        major_version: num::<u16>(field(m, "major_version")?)?,
        minor_version: num::<u16>(field(m, "minor_version")?)?,
        keepalive_interval: num::<u32>(field(m, "keepalive_interval")?)?,
        max_lifetime: num::<u32>(field(m, "max_lifetime")?)?,
        resume_token: bytes(field(m, "resume_token")?)?,
        metadata_mime_type: string(field(m, "metadata_mime_type")?)?,
        data_mime_type: string(field(m, "data_mime_type")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn lease_json(x: &Lease<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Lease".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("ttl".into(), int((*&x.ttl).into(), 32));
    m.insert(
        "number_of_requests".into(),
        int((*&x.number_of_requests).into(), 32),
    );
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn lease_from(v: &Value) -> Result<Lease<'static>, String> {
    let m = record(v, "Lease")?;
    Ok(Lease {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        ttl: num::<u32>(field(m, "ttl")?)?,
        number_of_requests: num::<u32>(field(m, "number_of_requests")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn keepalive_json(x: &Keepalive<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Keepalive".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("respond".into(), Value::Bool(*&x.respond));
    m.insert(
        "last_received_position".into(),
        int((*&x.last_received_position).into(), 64),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn keepalive_from(v: &Value) -> Result<Keepalive<'static>, String> {
    let m = record(v, "Keepalive")?;
    Ok(Keepalive {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        respond: boolean(field(m, "respond")?)?,
        last_received_position: num::<u64>(field(m, "last_received_position")?)?,
        data: bytes(field(m, "data")?)?,
    })
}
fn request_response_json(x: &RequestResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestResponse".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("follows".into(), Value::Bool(*&x.follows));
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn request_response_from(v: &Value) -> Result<RequestResponse<'static>, String> {
    let m = record(v, "RequestResponse")?;
    Ok(RequestResponse {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        follows: boolean(field(m, "follows")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn request_fnf_json(x: &RequestFnf<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestFnf".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("follows".into(), Value::Bool(*&x.follows));
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn request_fnf_from(v: &Value) -> Result<RequestFnf<'static>, String> {
    let m = record(v, "RequestFnf")?;
    Ok(RequestFnf {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        follows: boolean(field(m, "follows")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn request_stream_json(x: &RequestStream<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestStream".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("follows".into(), Value::Bool(*&x.follows));
    m.insert(
        "initial_request_n".into(),
        int((*&x.initial_request_n).into(), 32),
    );
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn request_stream_from(v: &Value) -> Result<RequestStream<'static>, String> {
    let m = record(v, "RequestStream")?;
    Ok(RequestStream {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        follows: boolean(field(m, "follows")?)?,
        initial_request_n: num::<i32>(field(m, "initial_request_n")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn request_channel_json(x: &RequestChannel<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestChannel".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("follows".into(), Value::Bool(*&x.follows));
    m.insert("complete".into(), Value::Bool(*&x.complete));
    m.insert(
        "initial_request_n".into(),
        x.initial_request_n
            .as_ref()
            .map_or(Value::Null, |v| int((*v).into(), 32)),
    );
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn request_channel_from(v: &Value) -> Result<RequestChannel<'static>, String> {
    let m = record(v, "RequestChannel")?;
    Ok(RequestChannel {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        follows: boolean(field(m, "follows")?)?,
        complete: boolean(field(m, "complete")?)?,
        initial_request_n: {
            let x = field(m, "initial_request_n")?;
            if x.is_null() {
                None
            } else {
                Some(num::<i32>(x)?)
            }
        },
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn request_n_json(x: &RequestN) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestN".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("request_n".into(), int((*&x.request_n).into(), 32));
    Value::Object(m)
}
fn request_n_from(v: &Value) -> Result<RequestN, String> {
    let m = record(v, "RequestN")?;
    Ok(RequestN {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        request_n: num::<i32>(field(m, "request_n")?)?,
    })
}
fn cancel_json(x: &Cancel<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Cancel".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn cancel_from(v: &Value) -> Result<Cancel<'static>, String> {
    let m = record(v, "Cancel")?;
    Ok(Cancel {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn response_json(x: &Response<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Response".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("follows".into(), Value::Bool(*&x.follows));
    m.insert("next".into(), Value::Bool(*&x.next));
    m.insert("complete".into(), Value::Bool(*&x.complete));
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn response_from(v: &Value) -> Result<Response<'static>, String> {
    let m = record(v, "Response")?;
    Ok(Response {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        follows: boolean(field(m, "follows")?)?,
        next: boolean(field(m, "next")?)?,
        complete: boolean(field(m, "complete")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn error_json(x: &Error<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Error".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("error_code".into(), int((*&x.error_code).into(), 32));
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn error_from(v: &Value) -> Result<Error<'static>, String> {
    let m = record(v, "Error")?;
    Ok(Error {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        error_code: num::<u32>(field(m, "error_code")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn metadata_push_json(x: &MetadataPush<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MetadataPush".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("metadata".into(), hex_json(&x.metadata));
    Value::Object(m)
}
fn metadata_push_from(v: &Value) -> Result<MetadataPush<'static>, String> {
    let m = record(v, "MetadataPush")?;
    Ok(MetadataPush {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        metadata: bytes(field(m, "metadata")?)?,
    })
}
fn resume_json(x: &Resume<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Resume".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("resume_token".into(), hex_json(&x.resume_token));
    m.insert(
        "last_received_position".into(),
        int((*&x.last_received_position).into(), 64),
    );
    Value::Object(m)
}
fn resume_from(v: &Value) -> Result<Resume<'static>, String> {
    let m = record(v, "Resume")?;
    Ok(Resume {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        resume_token: bytes(field(m, "resume_token")?)?,
        last_received_position: num::<u64>(field(m, "last_received_position")?)?,
    })
}
fn resume_ok_json(x: &ResumeOk) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ResumeOk".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert(
        "last_received_position".into(),
        int((*&x.last_received_position).into(), 64),
    );
    Value::Object(m)
}
fn resume_ok_from(v: &Value) -> Result<ResumeOk, String> {
    let m = record(v, "ResumeOk")?;
    Ok(ResumeOk {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        last_received_position: num::<u64>(field(m, "last_received_position")?)?,
    })
}
fn ext_json(x: &Ext<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Ext".into());
    m.insert("stream_id".into(), int((*&x.stream_id).into(), 32));
    m.insert("ignore".into(), Value::Bool(*&x.ignore));
    m.insert("extended_type".into(), int((*&x.extended_type).into(), 32));
    m.insert(
        "metadata".into(),
        x.metadata.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn ext_from(v: &Value) -> Result<Ext<'static>, String> {
    let m = record(v, "Ext")?;
    Ok(Ext {
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        ignore: boolean(field(m, "ignore")?)?,
        extended_type: num::<u32>(field(m, "extended_type")?)?,
        metadata: {
            let x = field(m, "metadata")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: bytes(field(m, "data")?)?,
    })
}
fn unknown_frame_json(x: &UnknownFrame<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "UnknownFrame".into());
    m.insert("code".into(), int(x.code.into(), 8));
    m.insert("stream_id".into(), int((x.stream_id).into(), 32));
    m.insert("flags".into(), int(x.flags.into(), 16));
    m.insert("body".into(), hex_json(x.body));
    Value::Object(m)
}
fn unknown_frame_from(v: &Value) -> Result<UnknownFrame<'static>, String> {
    let m = record(v, "UnknownFrame")?;
    Ok(UnknownFrame {
        code: num::<u32>(field(m, "code")?)?,
        stream_id: num::<u32>(field(m, "stream_id")?)?,
        flags: num::<u8>(field(m, "flags")?)?,
        body: bytes(field(m, "body")?)?,
    })
}
pub fn frame_json(f: &Frame<'_>) -> Value {
    match f {
        Frame::Setup(x) => setup_json(x),
        Frame::Lease(x) => lease_json(x),
        Frame::Keepalive(x) => keepalive_json(x),
        Frame::RequestResponse(x) => request_response_json(x),
        Frame::RequestFnf(x) => request_fnf_json(x),
        Frame::RequestStream(x) => request_stream_json(x),
        Frame::RequestChannel(x) => request_channel_json(x),
        Frame::RequestN(x) => request_n_json(x),
        Frame::Cancel(x) => cancel_json(x),
        Frame::Response(x) => response_json(x),
        Frame::Error(x) => error_json(x),
        Frame::MetadataPush(x) => metadata_push_json(x),
        Frame::Resume(x) => resume_json(x),
        Frame::ResumeOk(x) => resume_ok_json(x),
        Frame::Ext(x) => ext_json(x),
        Frame::UnknownFrame(x) => unknown_frame_json(x),
    }
}
pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("Setup") => Ok(Frame::Setup(setup_from(v)?)),
        Some("Lease") => Ok(Frame::Lease(lease_from(v)?)),
        Some("Keepalive") => Ok(Frame::Keepalive(keepalive_from(v)?)),
        Some("RequestResponse") => Ok(Frame::RequestResponse(request_response_from(v)?)),
        Some("RequestFnf") => Ok(Frame::RequestFnf(request_fnf_from(v)?)),
        Some("RequestStream") => Ok(Frame::RequestStream(request_stream_from(v)?)),
        Some("RequestChannel") => Ok(Frame::RequestChannel(request_channel_from(v)?)),
        Some("RequestN") => Ok(Frame::RequestN(request_n_from(v)?)),
        Some("Cancel") => Ok(Frame::Cancel(cancel_from(v)?)),
        Some("Response") => Ok(Frame::Response(response_from(v)?)),
        Some("Error") => Ok(Frame::Error(error_from(v)?)),
        Some("MetadataPush") => Ok(Frame::MetadataPush(metadata_push_from(v)?)),
        Some("Resume") => Ok(Frame::Resume(resume_from(v)?)),
        Some("ResumeOk") => Ok(Frame::ResumeOk(resume_ok_from(v)?)),
        Some("Ext") => Ok(Frame::Ext(ext_from(v)?)),
        Some("UnknownFrame") => Ok(Frame::UnknownFrame(unknown_frame_from(v)?)),
        _ => Err(format!("not a frame: {v}")),
    }
}
fn context_from(v: &Value) -> Result<Option<Context>, String> {
    if v.is_null() {
        return Ok(None);
    }
    let mut ctx = Context::default();
    Ok(Some(ctx))
}
fn context_json(ctx: &Context) -> Value {
    let mut m = Map::new();
    if m.is_empty() {
        Value::Null
    } else {
        Value::Object(m)
    }
}
type Decoded = (Value, Result<Vec<u8>, &'static str>, Option<Value>);
pub fn decode(
    data: &[u8],
    sender: Option<&str>,
    ctx: &Value,
    track: bool,
    startup: bool,
) -> Result<Decoded, (&'static str, Option<u64>)> {
    let sender = match sender {
        Some("client") => Some(Sender::Client),
        Some("server") => Some(Sender::Server),
        _ => None,
    };
    let ctx = context_from(ctx).map_err(|_| ("<bad context>", None))?;
    let decoded = wirestream_rsocket_v0_2::decode_with(data, ctx.as_ref(), sender);
    let _ = startup;
    match decoded {
        Ok(f) => {
            let tracked = if track {
                let mut running = ctx.clone().unwrap_or_default();
                track_context(&f, &mut running);
                Some(context_json(&running))
            } else {
                None
            };
            Ok((
                frame_json(&f),
                f.encode_with(ctx.as_ref()).map_err(|e| e.class_name()),
                tracked,
            ))
        }
        Err(ProtocolError::Truncated { needed }) => Err(("Truncated", Some(needed))),
        Err(e) => Err((e.class_name(), None)),
    }
}
pub fn build_encode(v: &Value, ctx: &Value) -> Result<Result<Vec<u8>, &'static str>, String> {
    let ctx = context_from(ctx)?;
    let f = frame_from(v)?;
    Ok(f.encode_with(ctx.as_ref()).map_err(|e| e.class_name()))
}
#[derive(Default)]
struct Recorder(Option<&'static str>);
impl machines::ConnectionClientHandlers for Recorder {
    fn on_connection_lease(&mut self, _: &Lease<'_>) {
        self.0 = Some("on_connection_lease");
    }
    fn on_connection_keepalive(&mut self, _: &Keepalive<'_>) {
        self.0 = Some("on_connection_keepalive");
    }
    fn on_connection_error(&mut self, _: &Error<'_>) {
        self.0 = Some("on_connection_error");
    }
    fn on_connection_metadata_push(&mut self, _: &MetadataPush<'_>) {
        self.0 = Some("on_connection_metadata_push");
    }
    fn on_connection_resume_ok(&mut self, _: &ResumeOk) {
        self.0 = Some("on_connection_resume_ok");
    }
    fn on_connection_ext(&mut self, _: &Ext<'_>) {
        self.0 = Some("on_connection_ext");
    }
}
impl machines::ConnectionServerHandlers for Recorder {
    fn on_connection_setup(&mut self, _: &Setup<'_>) {
        self.0 = Some("on_connection_setup");
    }
    fn on_connection_lease(&mut self, _: &Lease<'_>) {
        self.0 = Some("on_connection_lease");
    }
    fn on_connection_keepalive(&mut self, _: &Keepalive<'_>) {
        self.0 = Some("on_connection_keepalive");
    }
    fn on_connection_error(&mut self, _: &Error<'_>) {
        self.0 = Some("on_connection_error");
    }
    fn on_connection_metadata_push(&mut self, _: &MetadataPush<'_>) {
        self.0 = Some("on_connection_metadata_push");
    }
    fn on_connection_resume(&mut self, _: &Resume<'_>) {
        self.0 = Some("on_connection_resume");
    }
    fn on_connection_ext(&mut self, _: &Ext<'_>) {
        self.0 = Some("on_connection_ext");
    }
}
impl machines::StreamRequesterHandlers for Recorder {
    fn on_stream_request_n(&mut self, _: &RequestN) {
        self.0 = Some("on_stream_request_n");
    }
    fn on_stream_response(&mut self, _: &Response<'_>) {
        self.0 = Some("on_stream_response");
    }
    fn on_stream_error(&mut self, _: &Error<'_>) {
        self.0 = Some("on_stream_error");
    }
}
impl machines::StreamResponderHandlers for Recorder {
    fn on_stream_request_response(&mut self, _: &RequestResponse<'_>) {
        self.0 = Some("on_stream_request_response");
    }
    fn on_stream_request_fnf(&mut self, _: &RequestFnf<'_>) {
        self.0 = Some("on_stream_request_fnf");
    }
    fn on_stream_request_stream(&mut self, _: &RequestStream<'_>) {
        self.0 = Some("on_stream_request_stream");
    }
    fn on_stream_request_channel(&mut self, _: &RequestChannel<'_>) {
        self.0 = Some("on_stream_request_channel");
    }
    fn on_stream_request_n(&mut self, _: &RequestN) {
        self.0 = Some("on_stream_request_n");
    }
    fn on_stream_cancel(&mut self, _: &Cancel<'_>) {
        self.0 = Some("on_stream_cancel");
    }
}
type Applied = (
    Result<Option<&'static str>, machines::MachineError>,
    Option<&'static str>,
);
pub fn machine_outcome(
    class: &str,
    role: &str,
    state: &str,
    send: bool,
    data: &[u8],
    sender: Option<&str>,
    ctx: &Value,
) -> Result<Applied, String> {
    let sender = match sender {
        Some("client") => Some(Sender::Client),
        Some("server") => Some(Sender::Server),
        _ => None,
    };
    let ctx = context_from(ctx)?;
    let frame = wirestream_rsocket_v0_2::decode_with(data, ctx.as_ref(), sender)
        .map_err(|e| format!("decode: {e}"))?;
    let mut recorder = Recorder::default();
    match class {
        "ConnectionMachine" => {
            let role = machines::ConnectionRole::from_name(role).ok_or("no such role")?;
            let state = machines::ConnectionState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::ConnectionMachine::with_state(role, state);
            if send {
                let allowed = machine.allows_send(&frame);
                let sent = machine.send(&frame).map(|s| Some(s.value()));
                if allowed != sent.is_ok() {
                    return Err("allows_send disagrees with send".into());
                }
                return Ok((sent, None));
            }
            let received = machine.receive(&frame).map(|r| match r {
                machines::Received::To(s) => Some(s.value()),
                machines::Received::Ignored => None,
            });
            let mut again = machines::ConnectionMachine::with_state(role, state);
            let dispatched = match role {
                machines::ConnectionRole::Client => again.dispatch_client(&frame, &mut recorder),
                machines::ConnectionRole::Server => again.dispatch_server(&frame, &mut recorder),
            };
            match (&received, &dispatched) {
                (Ok(r), Ok(taken)) if r.is_some() == *taken => {}
                (Err(a), Err(b)) if a == b => {}
                _ => {
                    return Err(format!(
                        "dispatch gives {dispatched:?}, receive {received:?}"
                    ))
                }
            }
            if again != machine {
                return Err("dispatch and receive leave different states".into());
            }
            Ok((received, recorder.0))
        }
        "FragmentsMachine" => {
            let role = machines::FragmentsRole::from_name(role).ok_or("no such role")?;
            let state = machines::FragmentsState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::FragmentsMachine::with_state(role, state);
            if send {
                let allowed = machine.allows_send(&frame);
                let sent = machine.send(&frame).map(|s| Some(s.value()));
                if allowed != sent.is_ok() {
                    return Err("allows_send disagrees with send".into());
                }
                return Ok((sent, None));
            }
            let received = machine.receive(&frame).map(|r| match r {
                machines::Received::To(s) => Some(s.value()),
                machines::Received::Ignored => None,
            });
            let mut again = machines::FragmentsMachine::with_state(role, state);
            let dispatched = match role {
                machines::FragmentsRole::Sender => again
                    .receive(&frame)
                    .map(|r| r != machines::Received::Ignored),
                machines::FragmentsRole::Receiver => again
                    .receive(&frame)
                    .map(|r| r != machines::Received::Ignored),
            };
            match (&received, &dispatched) {
                (Ok(r), Ok(taken)) if r.is_some() == *taken => {}
                (Err(a), Err(b)) if a == b => {}
                _ => {
                    return Err(format!(
                        "dispatch gives {dispatched:?}, receive {received:?}"
                    ))
                }
            }
            if again != machine {
                return Err("dispatch and receive leave different states".into());
            }
            Ok((received, recorder.0))
        }
        "RequestResponseMachine" => {
            let role = machines::RequestResponseRole::from_name(role).ok_or("no such role")?;
            let state = machines::RequestResponseState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::RequestResponseMachine::with_state(role, state);
            if send {
                let allowed = machine.allows_send(&frame);
                let sent = machine.send(&frame).map(|s| Some(s.value()));
                if allowed != sent.is_ok() {
                    return Err("allows_send disagrees with send".into());
                }
                return Ok((sent, None));
            }
            let received = machine.receive(&frame).map(|r| match r {
                machines::Received::To(s) => Some(s.value()),
                machines::Received::Ignored => None,
            });
            let mut again = machines::RequestResponseMachine::with_state(role, state);
            let dispatched = match role {
                machines::RequestResponseRole::Requester => {
                    again.dispatch_requester(&frame, &mut recorder)
                }
                machines::RequestResponseRole::Responder => {
                    again.dispatch_responder(&frame, &mut recorder)
                }
            };
            match (&received, &dispatched) {
                (Ok(r), Ok(taken)) if r.is_some() == *taken => {}
                (Err(a), Err(b)) if a == b => {}
                _ => {
                    return Err(format!(
                        "dispatch gives {dispatched:?}, receive {received:?}"
                    ))
                }
            }
            if again != machine {
                return Err("dispatch and receive leave different states".into());
            }
            Ok((received, recorder.0))
        }
        "RequestFnfMachine" => {
            let role = machines::RequestFnfRole::from_name(role).ok_or("no such role")?;
            let state = machines::RequestFnfState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::RequestFnfMachine::with_state(role, state);
            if send {
                let allowed = machine.allows_send(&frame);
                let sent = machine.send(&frame).map(|s| Some(s.value()));
                if allowed != sent.is_ok() {
                    return Err("allows_send disagrees with send".into());
                }
                return Ok((sent, None));
            }
            let received = machine.receive(&frame).map(|r| match r {
                machines::Received::To(s) => Some(s.value()),
                machines::Received::Ignored => None,
            });
            let mut again = machines::RequestFnfMachine::with_state(role, state);
            let dispatched = match role {
                machines::RequestFnfRole::Requester => again
                    .receive(&frame)
                    .map(|r| r != machines::Received::Ignored),
                machines::RequestFnfRole::Responder => {
                    again.dispatch_responder(&frame, &mut recorder)
                }
            };
            match (&received, &dispatched) {
                (Ok(r), Ok(taken)) if r.is_some() == *taken => {}
                (Err(a), Err(b)) if a == b => {}
                _ => {
                    return Err(format!(
                        "dispatch gives {dispatched:?}, receive {received:?}"
                    ))
                }
            }
            if again != machine {
                return Err("dispatch and receive leave different states".into());
            }
            Ok((received, recorder.0))
        }
        "RequestStreamMachine" => {
            let role = machines::RequestStreamRole::from_name(role).ok_or("no such role")?;
            let state = machines::RequestStreamState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::RequestStreamMachine::with_state(role, state);
            if send {
                let allowed = machine.allows_send(&frame);
                let sent = machine.send(&frame).map(|s| Some(s.value()));
                if allowed != sent.is_ok() {
                    return Err("allows_send disagrees with send".into());
                }
                return Ok((sent, None));
            }
            let received = machine.receive(&frame).map(|r| match r {
                machines::Received::To(s) => Some(s.value()),
                machines::Received::Ignored => None,
            });
            let mut again = machines::RequestStreamMachine::with_state(role, state);
            let dispatched = match role {
                machines::RequestStreamRole::Requester => {
                    again.dispatch_requester(&frame, &mut recorder)
                }
                machines::RequestStreamRole::Responder => {
                    again.dispatch_responder(&frame, &mut recorder)
                }
            };
            match (&received, &dispatched) {
                (Ok(r), Ok(taken)) if r.is_some() == *taken => {}
                (Err(a), Err(b)) if a == b => {}
                _ => {
                    return Err(format!(
                        "dispatch gives {dispatched:?}, receive {received:?}"
                    ))
                }
            }
            if again != machine {
                return Err("dispatch and receive leave different states".into());
            }
            Ok((received, recorder.0))
        }
        "RequestChannelMachine" => {
            let role = machines::RequestChannelRole::from_name(role).ok_or("no such role")?;
            let state = machines::RequestChannelState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::RequestChannelMachine::with_state(role, state);
            if send {
                let allowed = machine.allows_send(&frame);
                let sent = machine.send(&frame).map(|s| Some(s.value()));
                if allowed != sent.is_ok() {
                    return Err("allows_send disagrees with send".into());
                }
                return Ok((sent, None));
            }
            let received = machine.receive(&frame).map(|r| match r {
                machines::Received::To(s) => Some(s.value()),
                machines::Received::Ignored => None,
            });
            let mut again = machines::RequestChannelMachine::with_state(role, state);
            let dispatched = match role {
                machines::RequestChannelRole::Requester => {
                    again.dispatch_requester(&frame, &mut recorder)
                }
                machines::RequestChannelRole::Responder => {
                    again.dispatch_responder(&frame, &mut recorder)
                }
            };
            match (&received, &dispatched) {
                (Ok(r), Ok(taken)) if r.is_some() == *taken => {}
                (Err(a), Err(b)) if a == b => {}
                _ => {
                    return Err(format!(
                        "dispatch gives {dispatched:?}, receive {received:?}"
                    ))
                }
            }
            if again != machine {
                return Err("dispatch and receive leave different states".into());
            }
            Ok((received, recorder.0))
        }
        _ => Err(format!("no machine {class}")),
    }
}
