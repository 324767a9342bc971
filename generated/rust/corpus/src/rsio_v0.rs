//! The corpus's JSON form of wirestream-rsio-v0's frames.
#![allow(
    clippy::all,
    unused_parens,
    unused_braces,
    unused_variables,
    unused_mut
)]
use crate::json::*;
use serde_json::{Map, Value};
use wirestream_rsio_v0::*;
fn client_hello_json(x: &ClientHello) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ClientHello".into());
    m.insert("version".into(), int((*&x.version).into(), 64));
    m.insert(
        "extensions".into(),
        Value::Array(
            (&x.extensions)
                .iter()
                .map(|e| int((*e).into(), 64))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn client_hello_from(v: &Value) -> Result<ClientHello, String> {
    let m = record(v, "ClientHello")?;
    Ok(ClientHello {
        version: num::<u64>(field(m, "version")?)?,
        extensions: list(field(m, "extensions")?)?
            .iter()
            .map(|e| Ok::<_, String>(num::<u64>(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn server_hello_json(x: &ServerHello) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ServerHello".into());
    m.insert("version".into(), int((*&x.version).into(), 64));
    m.insert(
        "extensions".into(),
        Value::Array(
            (&x.extensions)
                .iter()
                .map(|e| int((*e).into(), 64))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn server_hello_from(v: &Value) -> Result<ServerHello, String> {
    let m = record(v, "ServerHello")?;
    Ok(ServerHello {
        version: num::<u64>(field(m, "version")?)?,
        extensions: list(field(m, "extensions")?)?
            .iter()
            .map(|e| Ok::<_, String>(num::<u64>(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn goodbye_json(x: &Goodbye<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Goodbye".into());
    m.insert("reason".into(), Value::String((*&x.reason).into()));
    Value::Object(m)
}
fn goodbye_from(v: &Value) -> Result<Goodbye<'static>, String> {
    let m = record(v, "Goodbye")?;
    Ok(Goodbye {
        reason: string(field(m, "reason")?)?,
    })
}
fn subscribe_json(x: &Subscribe<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Subscribe".into());
    m.insert("publisher".into(), Value::String((*&x.publisher).into()));
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert(
        "initial_demand".into(),
        int((*&x.initial_demand).into(), 64),
    );
    Value::Object(m)
}
fn subscribe_from(v: &Value) -> Result<Subscribe<'static>, String> {
    let m = record(v, "Subscribe")?;
    Ok(Subscribe {
        publisher: string(field(m, "publisher")?)?,
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        initial_demand: num::<u64>(field(m, "initial_demand")?)?,
    })
}
fn request_json(x: &Request) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Request".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert("demand".into(), int((*&x.demand).into(), 64));
    Value::Object(m)
}
fn request_from(v: &Value) -> Result<Request, String> {
    let m = record(v, "Request")?;
    Ok(Request {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        demand: num::<u64>(field(m, "demand")?)?,
    })
}
fn cancel_json(x: &Cancel) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Cancel".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    Value::Object(m)
}
fn cancel_from(v: &Value) -> Result<Cancel, String> {
    let m = record(v, "Cancel")?;
    Ok(Cancel {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
    })
}
fn subscribed_json(x: &Subscribed) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Subscribed".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert("element_size".into(), int((*&x.element_size).into(), 64));
    Value::Object(m)
}
fn subscribed_from(v: &Value) -> Result<Subscribed, String> {
    let m = record(v, "Subscribed")?;
    Ok(Subscribed {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        element_size: num::<u64>(field(m, "element_size")?)?,
    })
}
fn on_next_json(x: &OnNext<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OnNext".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert("element".into(), hex_json(&x.element));
    Value::Object(m)
}
fn on_next_from(v: &Value) -> Result<OnNext<'static>, String> {
    let m = record(v, "OnNext")?;
    Ok(OnNext {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        element: bytes(field(m, "element")?)?,
    })
}
fn on_complete_json(x: &OnComplete) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OnComplete".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    Value::Object(m)
}
fn on_complete_from(v: &Value) -> Result<OnComplete, String> {
    let m = record(v, "OnComplete")?;
    Ok(OnComplete {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
    })
}
fn on_error_json(x: &OnError<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OnError".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert("error".into(), Value::String((*&x.error).into()));
    Value::Object(m)
}
fn on_error_from(v: &Value) -> Result<OnError<'static>, String> {
    let m = record(v, "OnError")?;
    Ok(OnError {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        error: string(field(m, "error")?)?,
    })
}
fn on_next_packed_json(x: &OnNextPacked<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OnNextPacked".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert(
        "elements".into(),
        Value::Array((&x.elements).iter().map(|e| hex_json(e)).collect()),
    );
    Value::Object(m)
}
fn on_next_packed_from(v: &Value) -> Result<OnNextPacked<'static>, String> {
    let m = record(v, "OnNextPacked")?;
    Ok(OnNextPacked {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        elements: list(field(m, "elements")?)?
            .iter()
            .map(|e| Ok::<_, String>(bytes(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn on_next_part_json(x: &OnNextPart<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OnNextPart".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert("element_id".into(), int((*&x.element_id).into(), 64));
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn on_next_part_from(v: &Value) -> Result<OnNextPart<'static>, String> {
    let m = record(v, "OnNextPart")?;
    Ok(OnNextPart {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        element_id: num::<u64>(field(m, "element_id")?)?,
        data: bytes(field(m, "data")?)?,
    })
}
fn on_next_last_part_json(x: &OnNextLastPart<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OnNextLastPart".into());
    m.insert("subscriber".into(), int((*&x.subscriber).into(), 64));
    m.insert("element_id".into(), int((*&x.element_id).into(), 64));
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn on_next_last_part_from(v: &Value) -> Result<OnNextLastPart<'static>, String> {
    let m = record(v, "OnNextLastPart")?;
    Ok(OnNextLastPart {
        subscriber: num::<u64>(field(m, "subscriber")?)?,
        element_id: num::<u64>(field(m, "element_id")?)?,
        data: bytes(field(m, "data")?)?,
    })
}
pub fn frame_json(f: &Frame<'_>) -> Value {
    match f {
        Frame::ClientHello(x) => client_hello_json(x),
        Frame::ServerHello(x) => server_hello_json(x),
        Frame::Goodbye(x) => goodbye_json(x),
        Frame::Subscribe(x) => subscribe_json(x),
        Frame::Request(x) => request_json(x),
        Frame::Cancel(x) => cancel_json(x),
        Frame::Subscribed(x) => subscribed_json(x),
        Frame::OnNext(x) => on_next_json(x),
        Frame::OnComplete(x) => on_complete_json(x),
        Frame::OnError(x) => on_error_json(x),
        Frame::OnNextPacked(x) => on_next_packed_json(x),
        Frame::OnNextPart(x) => on_next_part_json(x),
        Frame::OnNextLastPart(x) => on_next_last_part_json(x),
    }
}
pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("ClientHello") => Ok(Frame::ClientHello(client_hello_from(v)?)),
        Some("ServerHello") => Ok(Frame::ServerHello(server_hello_from(v)?)),
        Some("Goodbye") => Ok(Frame::Goodbye(goodbye_from(v)?)),
        Some("Subscribe") => Ok(Frame::Subscribe(subscribe_from(v)?)),
        Some("Request") => Ok(Frame::Request(request_from(v)?)),
        Some("Cancel") => Ok(Frame::Cancel(cancel_from(v)?)),
        Some("Subscribed") => Ok(Frame::Subscribed(subscribed_from(v)?)),
        Some("OnNext") => Ok(Frame::OnNext(on_next_from(v)?)),
        Some("OnComplete") => Ok(Frame::OnComplete(on_complete_from(v)?)),
        Some("OnError") => Ok(Frame::OnError(on_error_from(v)?)),
        Some("OnNextPacked") => Ok(Frame::OnNextPacked(on_next_packed_from(v)?)),
        Some("OnNextPart") => Ok(Frame::OnNextPart(on_next_part_from(v)?)),
        Some("OnNextLastPart") => Ok(Frame::OnNextLastPart(on_next_last_part_from(v)?)),
        _ => Err(format!("not a frame: {v}")),
    }
}
fn context_from(v: &Value) -> Result<Option<Context>, String> {
    if v.is_null() {
        return Ok(None);
    }
    let mut ctx = Context::default();
    for pair in list(field(
        v.as_object().ok_or("a context is an object")?,
        "element_size",
    )?)? {
        let pair = list(pair)?;
        if pair.len() != 2 {
            return Err("a pair".into());
        }
        ctx.element_size
            .insert(num::<u64>(&pair[0])?, num::<u64>(&pair[1])?);
    }
    Ok(Some(ctx))
}
fn context_json(ctx: &Context) -> Value {
    let mut m = Map::new();
    m.insert(
        "element_size".into(),
        Value::Array(
            ctx.element_size
                .iter()
                .map(|(k, v)| Value::Array(vec![int((*k).into(), 64), int((*v).into(), 64)]))
                .collect(),
        ),
    );
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
    let decoded = wirestream_rsio_v0::decode_with(data, ctx.as_ref(), sender);
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
    fn on_connection_server_hello(&mut self, _: &ServerHello) {
        self.0 = Some("on_connection_server_hello");
    }
    fn on_connection_goodbye(&mut self, _: &Goodbye<'_>) {
        self.0 = Some("on_connection_goodbye");
    }
}
impl machines::ConnectionServerHandlers for Recorder {
    fn on_connection_client_hello(&mut self, _: &ClientHello) {
        self.0 = Some("on_connection_client_hello");
    }
    fn on_connection_goodbye(&mut self, _: &Goodbye<'_>) {
        self.0 = Some("on_connection_goodbye");
    }
}
impl machines::SubscriptionSubscriberHandlers for Recorder {
    fn on_subscription_subscribed(&mut self, _: &Subscribed) {
        self.0 = Some("on_subscription_subscribed");
    }
    fn on_subscription_on_next(&mut self, _: &OnNext<'_>) {
        self.0 = Some("on_subscription_on_next");
    }
    fn on_subscription_on_complete(&mut self, _: &OnComplete) {
        self.0 = Some("on_subscription_on_complete");
    }
    fn on_subscription_on_error(&mut self, _: &OnError<'_>) {
        self.0 = Some("on_subscription_on_error");
    }
    fn on_subscription_on_next_packed(&mut self, _: &OnNextPacked<'_>) {
        self.0 = Some("on_subscription_on_next_packed");
    }
    fn on_subscription_on_next_part(&mut self, _: &OnNextPart<'_>) {
        self.0 = Some("on_subscription_on_next_part");
    }
    fn on_subscription_on_next_last_part(&mut self, _: &OnNextLastPart<'_>) {
        self.0 = Some("on_subscription_on_next_last_part");
    }
}
impl machines::SubscriptionPublisherHandlers for Recorder {
    fn on_subscription_subscribe(&mut self, _: &Subscribe<'_>) {
        self.0 = Some("on_subscription_subscribe");
    }
    fn on_subscription_request(&mut self, _: &Request) {
        self.0 = Some("on_subscription_request");
    }
    fn on_subscription_cancel(&mut self, _: &Cancel) {
        self.0 = Some("on_subscription_cancel");
    }
}
impl machines::ElementSubscriberHandlers for Recorder {
    fn on_element_on_next_part(&mut self, _: &OnNextPart<'_>) {
        self.0 = Some("on_element_on_next_part");
    }
    fn on_element_on_next_last_part(&mut self, _: &OnNextLastPart<'_>) {
        self.0 = Some("on_element_on_next_last_part");
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
    let frame = wirestream_rsio_v0::decode_with(data, ctx.as_ref(), sender)
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
        "SubscriptionMachine" => {
            let role = machines::SubscriptionRole::from_name(role).ok_or("no such role")?;
            let state = machines::SubscriptionState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::SubscriptionMachine::with_state(role, state);
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
            let mut again = machines::SubscriptionMachine::with_state(role, state);
            let dispatched = match role {
                machines::SubscriptionRole::Subscriber => {
                    again.dispatch_subscriber(&frame, &mut recorder)
                }
                machines::SubscriptionRole::Publisher => {
                    again.dispatch_publisher(&frame, &mut recorder)
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
        "SplitElementMachine" => {
            let role = machines::SplitElementRole::from_name(role).ok_or("no such role")?;
            let state = machines::SplitElementState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::SplitElementMachine::with_state(role, state);
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
            let mut again = machines::SplitElementMachine::with_state(role, state);
            let dispatched = match role {
                machines::SplitElementRole::Publisher => again
                    .receive(&frame)
                    .map(|r| r != machines::Received::Ignored),
                machines::SplitElementRole::Subscriber => {
                    again.dispatch_subscriber(&frame, &mut recorder)
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
