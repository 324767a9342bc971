//! The corpus's JSON form of wirestream-bpmux-rel's frames.
#![allow(
    clippy::all,
    unused_parens,
    unused_braces,
    unused_variables,
    unused_mut
)]
use crate::json::*;
use serde_json::{Map, Value};
use wirestream_bpmux_rel::*;
fn main_credit_json(x: &MainCredit) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MainCredit".into());
    m.insert("credit".into(), int((*&x.credit).into(), 64));
    Value::Object(m)
}
fn main_credit_from(v: &Value) -> Result<MainCredit, String> {
    let m = record(v, "MainCredit")?;
    Ok(MainCredit {
        credit: num::<u64>(field(m, "credit")?)?,
    })
}
fn close_json(x: &Close) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Close".into());
    Value::Object(m)
}
fn close_from(v: &Value) -> Result<Close, String> {
    let m = record(v, "Close")?;
    Ok(Close {})
}
fn minimum_json(x: &Minimum) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Minimum".into());
    m.insert("min_credit".into(), int((*&x.min_credit).into(), 64));
    Value::Object(m)
}
fn minimum_from(v: &Value) -> Result<Minimum, String> {
    let m = record(v, "Minimum")?;
    Ok(Minimum {
        min_credit: num::<u64>(field(m, "min_credit")?)?,
    })
}
fn cancel_all_json(x: &CancelAll) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CancelAll".into());
    Value::Object(m)
}
fn cancel_all_from(v: &Value) -> Result<CancelAll, String> {
    let m = record(v, "CancelAll")?;
    Ok(CancelAll {})
}
fn message_json(x: &Message<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Message".into());
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn message_from(v: &Value) -> Result<Message<'static>, String> {
    let m = record(v, "Message")?;
    Ok(Message {
        payload: bytes(field(m, "payload")?)?,
    })
}
fn messages_json(x: &Messages<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Messages".into());
    m.insert(
        "payloads".into(),
        Value::Array((&x.payloads).iter().map(|e| hex_json(e)).collect()),
    );
    Value::Object(m)
}
fn messages_from(v: &Value) -> Result<Messages<'static>, String> {
    let m = record(v, "Messages")?;
    Ok(Messages {
        payloads: list(field(m, "payloads")?)?
            .iter()
            .map(|e| Ok::<_, String>(bytes(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn request_json(x: &Request<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Request".into());
    m.insert("req_id".into(), int((*&x.req_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn request_from(v: &Value) -> Result<Request<'static>, String> {
    let m = record(v, "Request")?;
    Ok(Request {
        req_id: num::<u64>(field(m, "req_id")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn requests_json(x: &Requests<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Requests".into());
    m.insert(
        "initial_req_id".into(),
        int((*&x.initial_req_id).into(), 64),
    );
    m.insert(
        "payloads".into(),
        Value::Array((&x.payloads).iter().map(|e| hex_json(e)).collect()),
    );
    Value::Object(m)
}
fn requests_from(v: &Value) -> Result<Requests<'static>, String> {
    let m = record(v, "Requests")?;
    Ok(Requests {
        initial_req_id: num::<u64>(field(m, "initial_req_id")?)?,
        payloads: list(field(m, "payloads")?)?
            .iter()
            .map(|e| Ok::<_, String>(bytes(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn request_cancel_json(x: &RequestCancel) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestCancel".into());
    m.insert("req_id".into(), int((*&x.req_id).into(), 64));
    Value::Object(m)
}
fn request_cancel_from(v: &Value) -> Result<RequestCancel, String> {
    let m = record(v, "RequestCancel")?;
    Ok(RequestCancel {
        req_id: num::<u64>(field(m, "req_id")?)?,
    })
}
fn response_json(x: &Response<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Response".into());
    m.insert("req_id".into(), int((*&x.req_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn response_from(v: &Value) -> Result<Response<'static>, String> {
    let m = record(v, "Response")?;
    Ok(Response {
        req_id: num::<u64>(field(m, "req_id")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn response_error_json(x: &ResponseError<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ResponseError".into());
    m.insert("req_id".into(), int((*&x.req_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn response_error_from(v: &Value) -> Result<ResponseError<'static>, String> {
    let m = record(v, "ResponseError")?;
    Ok(ResponseError {
        req_id: num::<u64>(field(m, "req_id")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn create_stream_json(x: &CreateStream<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateStream".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("credit".into(), int((*&x.credit).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn create_stream_from(v: &Value) -> Result<CreateStream<'static>, String> {
    let m = record(v, "CreateStream")?;
    Ok(CreateStream {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        credit: num::<u64>(field(m, "credit")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn create_sink_json(x: &CreateSink<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateSink".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn create_sink_from(v: &Value) -> Result<CreateSink<'static>, String> {
    let m = record(v, "CreateSink")?;
    Ok(CreateSink {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn greedy_sink_json(x: &GreedySink<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "GreedySink".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    m.insert(
        "items".into(),
        Value::Array((&x.items).iter().map(|e| hex_json(e)).collect()),
    );
    Value::Object(m)
}
fn greedy_sink_from(v: &Value) -> Result<GreedySink<'static>, String> {
    let m = record(v, "GreedySink")?;
    Ok(GreedySink {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        payload: bytes(field(m, "payload")?)?,
        items: list(field(m, "items")?)?
            .iter()
            .map(|e| Ok::<_, String>(bytes(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn create_duplex_json(x: &CreateDuplex<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateDuplex".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("credit".into(), int((*&x.credit).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn create_duplex_from(v: &Value) -> Result<CreateDuplex<'static>, String> {
    let m = record(v, "CreateDuplex")?;
    Ok(CreateDuplex {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        credit: num::<u64>(field(m, "credit")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn greedy_duplex_json(x: &GreedyDuplex<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "GreedyDuplex".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("credit".into(), int((*&x.credit).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    m.insert(
        "items".into(),
        Value::Array((&x.items).iter().map(|e| hex_json(e)).collect()),
    );
    Value::Object(m)
}
fn greedy_duplex_from(v: &Value) -> Result<GreedyDuplex<'static>, String> {
    let m = record(v, "GreedyDuplex")?;
    Ok(GreedyDuplex {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        credit: num::<u64>(field(m, "credit")?)?,
        payload: bytes(field(m, "payload")?)?,
        items: list(field(m, "items")?)?
            .iter()
            .map(|e| Ok::<_, String>(bytes(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn inner_credit_json(x: &InnerCredit) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "InnerCredit".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("credit".into(), int((*&x.credit).into(), 64));
    Value::Object(m)
}
fn inner_credit_from(v: &Value) -> Result<InnerCredit, String> {
    let m = record(v, "InnerCredit")?;
    Ok(InnerCredit {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        credit: num::<u64>(field(m, "credit")?)?,
    })
}
fn inner_cancel_json(x: &InnerCancel) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "InnerCancel".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    Value::Object(m)
}
fn inner_cancel_from(v: &Value) -> Result<InnerCancel, String> {
    let m = record(v, "InnerCancel")?;
    Ok(InnerCancel {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
    })
}
fn inner_item_json(x: &InnerItem<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "InnerItem".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn inner_item_from(v: &Value) -> Result<InnerItem<'static>, String> {
    let m = record(v, "InnerItem")?;
    Ok(InnerItem {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn inner_items_json(x: &InnerItems<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "InnerItems".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert(
        "payloads".into(),
        Value::Array((&x.payloads).iter().map(|e| hex_json(e)).collect()),
    );
    Value::Object(m)
}
fn inner_items_from(v: &Value) -> Result<InnerItems<'static>, String> {
    let m = record(v, "InnerItems")?;
    Ok(InnerItems {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        payloads: list(field(m, "payloads")?)?
            .iter()
            .map(|e| Ok::<_, String>(bytes(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn inner_end_json(x: &InnerEnd) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "InnerEnd".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    Value::Object(m)
}
fn inner_end_from(v: &Value) -> Result<InnerEnd, String> {
    let m = record(v, "InnerEnd")?;
    Ok(InnerEnd {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
    })
}
fn inner_error_json(x: &InnerError<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "InnerError".into());
    m.insert("inner_id".into(), int((*&x.inner_id).into(), 64));
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn inner_error_from(v: &Value) -> Result<InnerError<'static>, String> {
    let m = record(v, "InnerError")?;
    Ok(InnerError {
        inner_id: num::<u64>(field(m, "inner_id")?)?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn unknown_frame_json(x: &UnknownFrame<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "UnknownFrame".into());
    m.insert("code".into(), int(x.code.into(), 8));
    m.insert("body".into(), hex_json(x.body));
    Value::Object(m)
}
fn unknown_frame_from(v: &Value) -> Result<UnknownFrame<'static>, String> {
    let m = record(v, "UnknownFrame")?;
    Ok(UnknownFrame {
        code: num::<u32>(field(m, "code")?)?,
        body: bytes(field(m, "body")?)?,
    })
}
pub fn frame_json(f: &Frame<'_>) -> Value {
    match f {
        Frame::MainCredit(x) => main_credit_json(x),
        Frame::Close(x) => close_json(x),
        Frame::Minimum(x) => minimum_json(x),
        Frame::CancelAll(x) => cancel_all_json(x),
        Frame::Message(x) => message_json(x),
        Frame::Messages(x) => messages_json(x),
        Frame::Request(x) => request_json(x),
        Frame::Requests(x) => requests_json(x),
        Frame::RequestCancel(x) => request_cancel_json(x),
        Frame::Response(x) => response_json(x),
        Frame::ResponseError(x) => response_error_json(x),
        Frame::CreateStream(x) => create_stream_json(x),
        Frame::CreateSink(x) => create_sink_json(x),
        Frame::GreedySink(x) => greedy_sink_json(x),
        Frame::CreateDuplex(x) => create_duplex_json(x),
        Frame::GreedyDuplex(x) => greedy_duplex_json(x),
        Frame::InnerCredit(x) => inner_credit_json(x),
        Frame::InnerCancel(x) => inner_cancel_json(x),
        Frame::InnerItem(x) => inner_item_json(x),
        Frame::InnerItems(x) => inner_items_json(x),
        Frame::InnerEnd(x) => inner_end_json(x),
        Frame::InnerError(x) => inner_error_json(x),
        Frame::UnknownFrame(x) => unknown_frame_json(x),
    }
}
pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("MainCredit") => Ok(Frame::MainCredit(main_credit_from(v)?)),
        Some("Close") => Ok(Frame::Close(close_from(v)?)),
        Some("Minimum") => Ok(Frame::Minimum(minimum_from(v)?)),
        Some("CancelAll") => Ok(Frame::CancelAll(cancel_all_from(v)?)),
        Some("Message") => Ok(Frame::Message(message_from(v)?)),
        Some("Messages") => Ok(Frame::Messages(messages_from(v)?)),
        Some("Request") => Ok(Frame::Request(request_from(v)?)),
        Some("Requests") => Ok(Frame::Requests(requests_from(v)?)),
        Some("RequestCancel") => Ok(Frame::RequestCancel(request_cancel_from(v)?)),
        Some("Response") => Ok(Frame::Response(response_from(v)?)),
        Some("ResponseError") => Ok(Frame::ResponseError(response_error_from(v)?)),
        Some("CreateStream") => Ok(Frame::CreateStream(create_stream_from(v)?)),
        Some("CreateSink") => Ok(Frame::CreateSink(create_sink_from(v)?)),
        Some("GreedySink") => Ok(Frame::GreedySink(greedy_sink_from(v)?)),
        Some("CreateDuplex") => Ok(Frame::CreateDuplex(create_duplex_from(v)?)),
        Some("GreedyDuplex") => Ok(Frame::GreedyDuplex(greedy_duplex_from(v)?)),
        Some("InnerCredit") => Ok(Frame::InnerCredit(inner_credit_from(v)?)),
        Some("InnerCancel") => Ok(Frame::InnerCancel(inner_cancel_from(v)?)),
        Some("InnerItem") => Ok(Frame::InnerItem(inner_item_from(v)?)),
        Some("InnerItems") => Ok(Frame::InnerItems(inner_items_from(v)?)),
        Some("InnerEnd") => Ok(Frame::InnerEnd(inner_end_from(v)?)),
        Some("InnerError") => Ok(Frame::InnerError(inner_error_from(v)?)),
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
    let decoded = wirestream_bpmux_rel::decode_with(data, ctx.as_ref(), sender);
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
impl machines::ConnectionPeerHandlers for Recorder {
    fn on_connection_main_credit(&mut self, _: &MainCredit) {
        self.0 = Some("on_connection_main_credit");
    }
    fn on_connection_close(&mut self, _: &Close) {
        self.0 = Some("on_connection_close");
    }
    fn on_connection_minimum(&mut self, _: &Minimum) {
        self.0 = Some("on_connection_minimum");
    }
    fn on_connection_cancel_all(&mut self, _: &CancelAll) {
        self.0 = Some("on_connection_cancel_all");
    }
    fn on_connection_message(&mut self, _: &Message<'_>) {
        self.0 = Some("on_connection_message");
    }
    fn on_connection_messages(&mut self, _: &Messages<'_>) {
        self.0 = Some("on_connection_messages");
    }
    fn on_connection_requests(&mut self, _: &Requests<'_>) {
        self.0 = Some("on_connection_requests");
    }
    fn on_connection_create_stream(&mut self, _: &CreateStream<'_>) {
        self.0 = Some("on_connection_create_stream");
    }
    fn on_connection_create_sink(&mut self, _: &CreateSink<'_>) {
        self.0 = Some("on_connection_create_sink");
    }
    fn on_connection_greedy_sink(&mut self, _: &GreedySink<'_>) {
        self.0 = Some("on_connection_greedy_sink");
    }
    fn on_connection_create_duplex(&mut self, _: &CreateDuplex<'_>) {
        self.0 = Some("on_connection_create_duplex");
    }
    fn on_connection_greedy_duplex(&mut self, _: &GreedyDuplex<'_>) {
        self.0 = Some("on_connection_greedy_duplex");
    }
}
impl machines::RequestRequesterHandlers for Recorder {
    fn on_request_response(&mut self, _: &Response<'_>) {
        self.0 = Some("on_request_response");
    }
    fn on_request_response_error(&mut self, _: &ResponseError<'_>) {
        self.0 = Some("on_request_response_error");
    }
}
impl machines::RequestResponderHandlers for Recorder {
    fn on_request_request(&mut self, _: &Request<'_>) {
        self.0 = Some("on_request_request");
    }
    fn on_request_request_cancel(&mut self, _: &RequestCancel) {
        self.0 = Some("on_request_request_cancel");
    }
}
impl machines::InnerFlowItemSenderHandlers for Recorder {
    fn on_inner_flow_inner_credit(&mut self, _: &InnerCredit) {
        self.0 = Some("on_inner_flow_inner_credit");
    }
    fn on_inner_flow_inner_cancel(&mut self, _: &InnerCancel) {
        self.0 = Some("on_inner_flow_inner_cancel");
    }
}
impl machines::InnerFlowItemReceiverHandlers for Recorder {
    fn on_inner_flow_inner_item(&mut self, _: &InnerItem<'_>) {
        self.0 = Some("on_inner_flow_inner_item");
    }
    fn on_inner_flow_inner_items(&mut self, _: &InnerItems<'_>) {
        self.0 = Some("on_inner_flow_inner_items");
    }
    fn on_inner_flow_inner_end(&mut self, _: &InnerEnd) {
        self.0 = Some("on_inner_flow_inner_end");
    }
    fn on_inner_flow_inner_error(&mut self, _: &InnerError<'_>) {
        self.0 = Some("on_inner_flow_inner_error");
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
    let frame = wirestream_bpmux_rel::decode_with(data, ctx.as_ref(), sender)
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
                machines::ConnectionRole::Peer => again.dispatch_peer(&frame, &mut recorder),
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
        "RequestMachine" => {
            let role = machines::RequestRole::from_name(role).ok_or("no such role")?;
            let state = machines::RequestState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::RequestMachine::with_state(role, state);
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
            let mut again = machines::RequestMachine::with_state(role, state);
            let dispatched = match role {
                machines::RequestRole::Requester => again.dispatch_requester(&frame, &mut recorder),
                machines::RequestRole::Responder => again.dispatch_responder(&frame, &mut recorder),
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
        "FlowMachine" => {
            let role = machines::FlowRole::from_name(role).ok_or("no such role")?;
            let state = machines::FlowState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::FlowMachine::with_state(role, state);
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
            let mut again = machines::FlowMachine::with_state(role, state);
            let dispatched = match role {
                machines::FlowRole::ItemSender => again.dispatch_item_sender(&frame, &mut recorder),
                machines::FlowRole::ItemReceiver => {
                    again.dispatch_item_receiver(&frame, &mut recorder)
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
