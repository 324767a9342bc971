//! The corpus's JSON form of wirestream-mqtt-v5's frames.
#![allow(
    clippy::all,
    unused_parens,
    unused_braces,
    unused_variables,
    unused_mut
)]
use crate::json::*;
use serde_json::{Map, Value};
use wirestream_mqtt_v5::*;
fn payload_format_indicator_json(x: &PayloadFormatIndicator) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PayloadFormatIndicator".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn payload_format_indicator_from(v: &Value) -> Result<PayloadFormatIndicator, String> {
    let m = record(v, "PayloadFormatIndicator")?;
    Ok(PayloadFormatIndicator {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn message_expiry_interval_json(x: &MessageExpiryInterval) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MessageExpiryInterval".into());
    m.insert("value".into(), int((*&x.value).into(), 32));
    Value::Object(m)
}
fn message_expiry_interval_from(v: &Value) -> Result<MessageExpiryInterval, String> {
    let m = record(v, "MessageExpiryInterval")?;
    Ok(MessageExpiryInterval {
        value: num::<u32>(field(m, "value")?)?,
    })
}
fn content_type_json(x: &ContentType<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ContentType".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn content_type_from(v: &Value) -> Result<ContentType<'static>, String> {
    let m = record(v, "ContentType")?;
    Ok(ContentType {
        value: string(field(m, "value")?)?,
    })
}
fn response_topic_json(x: &ResponseTopic<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ResponseTopic".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn response_topic_from(v: &Value) -> Result<ResponseTopic<'static>, String> {
    let m = record(v, "ResponseTopic")?;
    Ok(ResponseTopic {
        value: string(field(m, "value")?)?,
    })
}
fn correlation_data_json(x: &CorrelationData<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CorrelationData".into());
    m.insert("value".into(), hex_json(&x.value));
    Value::Object(m)
}
fn correlation_data_from(v: &Value) -> Result<CorrelationData<'static>, String> {
    let m = record(v, "CorrelationData")?;
    Ok(CorrelationData {
        value: bytes(field(m, "value")?)?,
    })
}
fn subscription_identifier_json(x: &SubscriptionIdentifier) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SubscriptionIdentifier".into());
    m.insert("value".into(), int((*&x.value).into(), 28));
    Value::Object(m)
}
fn subscription_identifier_from(v: &Value) -> Result<SubscriptionIdentifier, String> {
    let m = record(v, "SubscriptionIdentifier")?;
    Ok(SubscriptionIdentifier {
        value: num::<u32>(field(m, "value")?)?,
    })
}
fn session_expiry_interval_json(x: &SessionExpiryInterval) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SessionExpiryInterval".into());
    m.insert("value".into(), int((*&x.value).into(), 32));
    Value::Object(m)
}
fn session_expiry_interval_from(v: &Value) -> Result<SessionExpiryInterval, String> {
    let m = record(v, "SessionExpiryInterval")?;
    Ok(SessionExpiryInterval {
        value: num::<u32>(field(m, "value")?)?,
    })
}
fn assigned_client_identifier_json(x: &AssignedClientIdentifier<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "AssignedClientIdentifier".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn assigned_client_identifier_from(v: &Value) -> Result<AssignedClientIdentifier<'static>, String> {
    let m = record(v, "AssignedClientIdentifier")?;
    Ok(AssignedClientIdentifier {
        value: string(field(m, "value")?)?,
    })
}
fn server_keep_alive_json(x: &ServerKeepAlive) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ServerKeepAlive".into());
    m.insert("value".into(), int((*&x.value).into(), 16));
    Value::Object(m)
}
fn server_keep_alive_from(v: &Value) -> Result<ServerKeepAlive, String> {
    let m = record(v, "ServerKeepAlive")?;
    Ok(ServerKeepAlive {
        value: num::<u16>(field(m, "value")?)?,
    })
}
fn authentication_method_json(x: &AuthenticationMethod<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "AuthenticationMethod".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn authentication_method_from(v: &Value) -> Result<AuthenticationMethod<'static>, String> {
    let m = record(v, "AuthenticationMethod")?;
    Ok(AuthenticationMethod {
        value: string(field(m, "value")?)?,
    })
}
fn authentication_data_json(x: &AuthenticationData<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "AuthenticationData".into());
    m.insert("value".into(), hex_json(&x.value));
    Value::Object(m)
}
fn authentication_data_from(v: &Value) -> Result<AuthenticationData<'static>, String> {
    let m = record(v, "AuthenticationData")?;
    Ok(AuthenticationData {
        value: bytes(field(m, "value")?)?,
    })
}
fn request_problem_information_json(x: &RequestProblemInformation) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestProblemInformation".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn request_problem_information_from(v: &Value) -> Result<RequestProblemInformation, String> {
    let m = record(v, "RequestProblemInformation")?;
    Ok(RequestProblemInformation {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn will_delay_interval_json(x: &WillDelayInterval) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "WillDelayInterval".into());
    m.insert("value".into(), int((*&x.value).into(), 32));
    Value::Object(m)
}
fn will_delay_interval_from(v: &Value) -> Result<WillDelayInterval, String> {
    let m = record(v, "WillDelayInterval")?;
    Ok(WillDelayInterval {
        value: num::<u32>(field(m, "value")?)?,
    })
}
fn request_response_information_json(x: &RequestResponseInformation) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RequestResponseInformation".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn request_response_information_from(v: &Value) -> Result<RequestResponseInformation, String> {
    let m = record(v, "RequestResponseInformation")?;
    Ok(RequestResponseInformation {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn response_information_json(x: &ResponseInformation<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ResponseInformation".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn response_information_from(v: &Value) -> Result<ResponseInformation<'static>, String> {
    let m = record(v, "ResponseInformation")?;
    Ok(ResponseInformation {
        value: string(field(m, "value")?)?,
    })
}
fn server_reference_json(x: &ServerReference<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ServerReference".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn server_reference_from(v: &Value) -> Result<ServerReference<'static>, String> {
    let m = record(v, "ServerReference")?;
    Ok(ServerReference {
        value: string(field(m, "value")?)?,
    })
}
fn reason_string_json(x: &ReasonString<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ReasonString".into());
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn reason_string_from(v: &Value) -> Result<ReasonString<'static>, String> {
    let m = record(v, "ReasonString")?;
    Ok(ReasonString {
        value: string(field(m, "value")?)?,
    })
}
fn receive_maximum_json(x: &ReceiveMaximum) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ReceiveMaximum".into());
    m.insert("value".into(), int((*&x.value).into(), 16));
    Value::Object(m)
}
fn receive_maximum_from(v: &Value) -> Result<ReceiveMaximum, String> {
    let m = record(v, "ReceiveMaximum")?;
    Ok(ReceiveMaximum {
        value: num::<u16>(field(m, "value")?)?,
    })
}
fn topic_alias_maximum_json(x: &TopicAliasMaximum) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "TopicAliasMaximum".into());
    m.insert("value".into(), int((*&x.value).into(), 16));
    Value::Object(m)
}
fn topic_alias_maximum_from(v: &Value) -> Result<TopicAliasMaximum, String> {
    let m = record(v, "TopicAliasMaximum")?;
    Ok(TopicAliasMaximum {
        value: num::<u16>(field(m, "value")?)?,
    })
}
fn topic_alias_json(x: &TopicAlias) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "TopicAlias".into());
    m.insert("value".into(), int((*&x.value).into(), 16));
    Value::Object(m)
}
fn topic_alias_from(v: &Value) -> Result<TopicAlias, String> {
    let m = record(v, "TopicAlias")?;
    Ok(TopicAlias {
        value: num::<u16>(field(m, "value")?)?,
    })
}
fn maximum_qos_json(x: &MaximumQos) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MaximumQos".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn maximum_qos_from(v: &Value) -> Result<MaximumQos, String> {
    let m = record(v, "MaximumQos")?;
    Ok(MaximumQos {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn retain_available_json(x: &RetainAvailable) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RetainAvailable".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn retain_available_from(v: &Value) -> Result<RetainAvailable, String> {
    let m = record(v, "RetainAvailable")?;
    Ok(RetainAvailable {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn user_property_json(x: &UserProperty<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "UserProperty".into());
    m.insert("key".into(), Value::String((*&x.key).into()));
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn user_property_from(v: &Value) -> Result<UserProperty<'static>, String> {
    let m = record(v, "UserProperty")?;
    Ok(UserProperty {
        key: string(field(m, "key")?)?,
        value: string(field(m, "value")?)?,
    })
}
fn maximum_packet_size_json(x: &MaximumPacketSize) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MaximumPacketSize".into());
    m.insert("value".into(), int((*&x.value).into(), 32));
    Value::Object(m)
}
fn maximum_packet_size_from(v: &Value) -> Result<MaximumPacketSize, String> {
    let m = record(v, "MaximumPacketSize")?;
    Ok(MaximumPacketSize {
        value: num::<u32>(field(m, "value")?)?,
    })
}
fn wildcard_subscription_available_json(x: &WildcardSubscriptionAvailable) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "WildcardSubscriptionAvailable".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn wildcard_subscription_available_from(
    v: &Value,
) -> Result<WildcardSubscriptionAvailable, String> {
    let m = record(v, "WildcardSubscriptionAvailable")?;
    Ok(WildcardSubscriptionAvailable {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn subscription_identifier_available_json(x: &SubscriptionIdentifierAvailable) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SubscriptionIdentifierAvailable".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn subscription_identifier_available_from(
    v: &Value,
) -> Result<SubscriptionIdentifierAvailable, String> {
    let m = record(v, "SubscriptionIdentifierAvailable")?;
    Ok(SubscriptionIdentifierAvailable {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn shared_subscription_available_json(x: &SharedSubscriptionAvailable) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SharedSubscriptionAvailable".into());
    m.insert("value".into(), int((*&x.value).into(), 8));
    Value::Object(m)
}
fn shared_subscription_available_from(v: &Value) -> Result<SharedSubscriptionAvailable, String> {
    let m = record(v, "SharedSubscriptionAvailable")?;
    Ok(SharedSubscriptionAvailable {
        value: num::<u8>(field(m, "value")?)?,
    })
}
fn subscription_json(x: &Subscription<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Subscription".into());
    m.insert(
        "topic_filter".into(),
        Value::String((*&x.topic_filter).into()),
    );
    m.insert(
        "retain_handling".into(),
        int((*&x.retain_handling as u8).into(), 2),
    );
    m.insert(
        "retain_as_published".into(),
        Value::Bool(*&x.retain_as_published),
    );
    m.insert("no_local".into(), Value::Bool(*&x.no_local));
    m.insert("qos".into(), int((*&x.qos as u8).into(), 2));
    Value::Object(m)
}
fn subscription_from(v: &Value) -> Result<Subscription<'static>, String> {
    let m = record(v, "Subscription")?;
    Ok(Subscription {
        topic_filter: string(field(m, "topic_filter")?)?,
        retain_handling: RetainHandling::from_code(num::<u8>(field(m, "retain_handling")?)?)
            .ok_or("not a member of RetainHandling")?,
        retain_as_published: boolean(field(m, "retain_as_published")?)?,
        no_local: boolean(field(m, "no_local")?)?,
        qos: QoS::from_code(num::<u8>(field(m, "qos")?)?).ok_or("not a member of QoS")?,
    })
}
fn property_json(x: &Property<'_>) -> Value {
    match x {
        Property::PayloadFormatIndicator(r) => payload_format_indicator_json(r),
        Property::MessageExpiryInterval(r) => message_expiry_interval_json(r),
        Property::ContentType(r) => content_type_json(r),
        Property::ResponseTopic(r) => response_topic_json(r),
        Property::CorrelationData(r) => correlation_data_json(r),
        Property::SubscriptionIdentifier(r) => subscription_identifier_json(r),
        Property::SessionExpiryInterval(r) => session_expiry_interval_json(r),
        Property::AssignedClientIdentifier(r) => assigned_client_identifier_json(r),
        Property::ServerKeepAlive(r) => server_keep_alive_json(r),
        Property::AuthenticationMethod(r) => authentication_method_json(r),
        Property::AuthenticationData(r) => authentication_data_json(r),
        Property::RequestProblemInformation(r) => request_problem_information_json(r),
        Property::WillDelayInterval(r) => will_delay_interval_json(r),
        Property::RequestResponseInformation(r) => request_response_information_json(r),
        Property::ResponseInformation(r) => response_information_json(r),
        Property::ServerReference(r) => server_reference_json(r),
        Property::ReasonString(r) => reason_string_json(r),
        Property::ReceiveMaximum(r) => receive_maximum_json(r),
        Property::TopicAliasMaximum(r) => topic_alias_maximum_json(r),
        Property::TopicAlias(r) => topic_alias_json(r),
        Property::MaximumQos(r) => maximum_qos_json(r),
        Property::RetainAvailable(r) => retain_available_json(r),
        Property::UserProperty(r) => user_property_json(r),
        Property::MaximumPacketSize(r) => maximum_packet_size_json(r),
        Property::WildcardSubscriptionAvailable(r) => wildcard_subscription_available_json(r),
        Property::SubscriptionIdentifierAvailable(r) => subscription_identifier_available_json(r),
        Property::SharedSubscriptionAvailable(r) => shared_subscription_available_json(r),
    }
}
fn property_from(v: &Value) -> Result<Property<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("PayloadFormatIndicator") => Ok(Property::PayloadFormatIndicator(
            payload_format_indicator_from(v)?,
        )),
        Some("MessageExpiryInterval") => Ok(Property::MessageExpiryInterval(
            message_expiry_interval_from(v)?,
        )),
        Some("ContentType") => Ok(Property::ContentType(content_type_from(v)?)),
        Some("ResponseTopic") => Ok(Property::ResponseTopic(response_topic_from(v)?)),
        Some("CorrelationData") => Ok(Property::CorrelationData(correlation_data_from(v)?)),
        Some("SubscriptionIdentifier") => Ok(Property::SubscriptionIdentifier(
            subscription_identifier_from(v)?,
        )),
        Some("SessionExpiryInterval") => Ok(Property::SessionExpiryInterval(
            session_expiry_interval_from(v)?,
        )),
        Some("AssignedClientIdentifier") => Ok(Property::AssignedClientIdentifier(
            assigned_client_identifier_from(v)?,
        )),
        Some("ServerKeepAlive") => Ok(Property::ServerKeepAlive(server_keep_alive_from(v)?)),
        Some("AuthenticationMethod") => Ok(Property::AuthenticationMethod(
            authentication_method_from(v)?,
        )),
        Some("AuthenticationData") => {
            Ok(Property::AuthenticationData(authentication_data_from(v)?))
        }
        Some("RequestProblemInformation") => Ok(Property::RequestProblemInformation(
            request_problem_information_from(v)?,
        )),
        Some("WillDelayInterval") => Ok(Property::WillDelayInterval(will_delay_interval_from(v)?)),
        Some("RequestResponseInformation") => Ok(Property::RequestResponseInformation(
            request_response_information_from(v)?,
        )),
        Some("ResponseInformation") => {
            Ok(Property::ResponseInformation(response_information_from(v)?))
        }
        Some("ServerReference") => Ok(Property::ServerReference(server_reference_from(v)?)),
        Some("ReasonString") => Ok(Property::ReasonString(reason_string_from(v)?)),
        Some("ReceiveMaximum") => Ok(Property::ReceiveMaximum(receive_maximum_from(v)?)),
        Some("TopicAliasMaximum") => Ok(Property::TopicAliasMaximum(topic_alias_maximum_from(v)?)),
        Some("TopicAlias") => Ok(Property::TopicAlias(topic_alias_from(v)?)),
        Some("MaximumQos") => Ok(Property::MaximumQos(maximum_qos_from(v)?)),
        Some("RetainAvailable") => Ok(Property::RetainAvailable(retain_available_from(v)?)),
        Some("UserProperty") => Ok(Property::UserProperty(user_property_from(v)?)),
        Some("MaximumPacketSize") => Ok(Property::MaximumPacketSize(maximum_packet_size_from(v)?)),
        Some("WildcardSubscriptionAvailable") => Ok(Property::WildcardSubscriptionAvailable(
            wildcard_subscription_available_from(v)?,
        )),
        Some("SubscriptionIdentifierAvailable") => Ok(Property::SubscriptionIdentifierAvailable(
            subscription_identifier_available_from(v)?,
        )),
        Some("SharedSubscriptionAvailable") => Ok(Property::SharedSubscriptionAvailable(
            shared_subscription_available_from(v)?,
        )),
        _ => Err(format!("not a variant of Property: {v}")),
    }
}
fn connect_json(x: &Connect<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Connect".into());
    m.insert("will_retain".into(), Value::Bool(*&x.will_retain));
    m.insert("will_qos".into(), int((*&x.will_qos as u8).into(), 2));
    m.insert("clean_start".into(), Value::Bool(*&x.clean_start));
    m.insert("keep_alive".into(), int((*&x.keep_alive).into(), 16));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    m.insert("client_id".into(), Value::String((*&x.client_id).into()));
    m.insert(
        "will_properties".into(),
        x.will_properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    m.insert(
        "will_topic".into(),
        x.will_topic
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "will_payload".into(),
        x.will_payload.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert(
        "username".into(),
        x.username
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "password".into(),
        x.password.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn connect_from(v: &Value) -> Result<Connect<'static>, String> {
    let m = record(v, "Connect")?;
    Ok(Connect {
        will_retain: boolean(field(m, "will_retain")?)?,
        will_qos: QoS::from_code(num::<u8>(field(m, "will_qos")?)?).ok_or("not a member of QoS")?,
        clean_start: boolean(field(m, "clean_start")?)?,
        keep_alive: num::<u16>(field(m, "keep_alive")?)?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        client_id: string(field(m, "client_id")?)?,
        will_properties: {
            let x = field(m, "will_properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
        will_topic: {
            let x = field(m, "will_topic")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        will_payload: {
            let x = field(m, "will_payload")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        username: {
            let x = field(m, "username")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        password: {
            let x = field(m, "password")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn connack_json(x: &Connack<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Connack".into());
    m.insert("session_present".into(), Value::Bool(*&x.session_present));
    m.insert("reason_code".into(), int((*&x.reason_code as u8).into(), 8));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    Value::Object(m)
}
fn connack_from(v: &Value) -> Result<Connack<'static>, String> {
    let m = record(v, "Connack")?;
    Ok(Connack {
        session_present: boolean(field(m, "session_present")?)?,
        reason_code: ReasonCode::from_code(num::<u8>(field(m, "reason_code")?)?)
            .ok_or("not a member of ReasonCode")?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn publish_json(x: &Publish<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Publish".into());
    m.insert("dup".into(), Value::Bool(*&x.dup));
    m.insert("retain".into(), Value::Bool(*&x.retain));
    m.insert("qos".into(), int((*&x.qos as u8).into(), 2));
    m.insert("topic_name".into(), Value::String((*&x.topic_name).into()));
    m.insert(
        "packet_id".into(),
        x.packet_id
            .as_ref()
            .map_or(Value::Null, |v| int((*v).into(), 16)),
    );
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    m.insert("payload".into(), hex_json(&x.payload));
    Value::Object(m)
}
fn publish_from(v: &Value) -> Result<Publish<'static>, String> {
    let m = record(v, "Publish")?;
    Ok(Publish {
        dup: boolean(field(m, "dup")?)?,
        retain: boolean(field(m, "retain")?)?,
        qos: QoS::from_code(num::<u8>(field(m, "qos")?)?).ok_or("not a member of QoS")?,
        topic_name: string(field(m, "topic_name")?)?,
        packet_id: {
            let x = field(m, "packet_id")?;
            if x.is_null() {
                None
            } else {
                Some(num::<u16>(x)?)
            }
        },
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        payload: bytes(field(m, "payload")?)?,
    })
}
fn puback_json(x: &Puback<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Puback".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "reason_code".into(),
        x.reason_code
            .as_ref()
            .map_or(Value::Null, |v| int((*v as u8).into(), 8)),
    );
    m.insert(
        "properties".into(),
        x.properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    Value::Object(m)
}
fn puback_from(v: &Value) -> Result<Puback<'static>, String> {
    let m = record(v, "Puback")?;
    Ok(Puback {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        reason_code: {
            let x = field(m, "reason_code")?;
            if x.is_null() {
                None
            } else {
                Some(ReasonCode::from_code(num::<u8>(x)?).ok_or("not a member of ReasonCode")?)
            }
        },
        properties: {
            let x = field(m, "properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
    })
}
fn pubrec_json(x: &Pubrec<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Pubrec".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "reason_code".into(),
        x.reason_code
            .as_ref()
            .map_or(Value::Null, |v| int((*v as u8).into(), 8)),
    );
    m.insert(
        "properties".into(),
        x.properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    Value::Object(m)
}
fn pubrec_from(v: &Value) -> Result<Pubrec<'static>, String> {
    let m = record(v, "Pubrec")?;
    Ok(Pubrec {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        reason_code: {
            let x = field(m, "reason_code")?;
            if x.is_null() {
                None
            } else {
                Some(ReasonCode::from_code(num::<u8>(x)?).ok_or("not a member of ReasonCode")?)
            }
        },
        properties: {
            let x = field(m, "properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
    })
}
fn pubrel_json(x: &Pubrel<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Pubrel".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "reason_code".into(),
        x.reason_code
            .as_ref()
            .map_or(Value::Null, |v| int((*v as u8).into(), 8)),
    );
    m.insert(
        "properties".into(),
        x.properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    Value::Object(m)
}
fn pubrel_from(v: &Value) -> Result<Pubrel<'static>, String> {
    let m = record(v, "Pubrel")?;
    Ok(Pubrel {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        reason_code: {
            let x = field(m, "reason_code")?;
            if x.is_null() {
                None
            } else {
                Some(ReasonCode::from_code(num::<u8>(x)?).ok_or("not a member of ReasonCode")?)
            }
        },
        properties: {
            let x = field(m, "properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
    })
}
fn pubcomp_json(x: &Pubcomp<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Pubcomp".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "reason_code".into(),
        x.reason_code
            .as_ref()
            .map_or(Value::Null, |v| int((*v as u8).into(), 8)),
    );
    m.insert(
        "properties".into(),
        x.properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    Value::Object(m)
}
fn pubcomp_from(v: &Value) -> Result<Pubcomp<'static>, String> {
    let m = record(v, "Pubcomp")?;
    Ok(Pubcomp {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        reason_code: {
            let x = field(m, "reason_code")?;
            if x.is_null() {
                None
            } else {
                Some(ReasonCode::from_code(num::<u8>(x)?).ok_or("not a member of ReasonCode")?)
            }
        },
        properties: {
            let x = field(m, "properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
    })
}
fn subscribe_json(x: &Subscribe<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Subscribe".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    m.insert(
        "subscriptions".into(),
        Value::Array(
            (&x.subscriptions)
                .iter()
                .map(|e| subscription_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn subscribe_from(v: &Value) -> Result<Subscribe<'static>, String> {
    let m = record(v, "Subscribe")?;
    Ok(Subscribe {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        subscriptions: list(field(m, "subscriptions")?)?
            .iter()
            .map(|e| Ok::<_, String>(subscription_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn suback_json(x: &Suback<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Suback".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    m.insert(
        "reason_codes".into(),
        Value::Array(
            (&x.reason_codes)
                .iter()
                .map(|e| int((*e as u8).into(), 8))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn suback_from(v: &Value) -> Result<Suback<'static>, String> {
    let m = record(v, "Suback")?;
    Ok(Suback {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        reason_codes: list(field(m, "reason_codes")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    ReasonCode::from_code(num::<u8>(e)?).ok_or("not a member of ReasonCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn unsubscribe_json(x: &Unsubscribe<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Unsubscribe".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    m.insert(
        "topic_filters".into(),
        Value::Array(
            (&x.topic_filters)
                .iter()
                .map(|e| Value::String((*e).into()))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn unsubscribe_from(v: &Value) -> Result<Unsubscribe<'static>, String> {
    let m = record(v, "Unsubscribe")?;
    Ok(Unsubscribe {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        topic_filters: list(field(m, "topic_filters")?)?
            .iter()
            .map(|e| Ok::<_, String>(string(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn unsuback_json(x: &Unsuback<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Unsuback".into());
    m.insert("packet_id".into(), int((*&x.packet_id).into(), 16));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    m.insert(
        "reason_codes".into(),
        Value::Array(
            (&x.reason_codes)
                .iter()
                .map(|e| int((*e as u8).into(), 8))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn unsuback_from(v: &Value) -> Result<Unsuback<'static>, String> {
    let m = record(v, "Unsuback")?;
    Ok(Unsuback {
        packet_id: num::<u16>(field(m, "packet_id")?)?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        reason_codes: list(field(m, "reason_codes")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    ReasonCode::from_code(num::<u8>(e)?).ok_or("not a member of ReasonCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn pingreq_json(x: &Pingreq) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Pingreq".into());
    Value::Object(m)
}
fn pingreq_from(v: &Value) -> Result<Pingreq, String> {
    let m = record(v, "Pingreq")?;
    Ok(Pingreq {})
}
fn pingresp_json(x: &Pingresp) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Pingresp".into());
    Value::Object(m)
}
fn pingresp_from(v: &Value) -> Result<Pingresp, String> {
    let m = record(v, "Pingresp")?;
    Ok(Pingresp {})
}
fn disconnect_json(x: &Disconnect<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Disconnect".into());
    m.insert(
        "reason_code".into(),
        x.reason_code
            .as_ref()
            .map_or(Value::Null, |v| int((*v as u8).into(), 8)),
    );
    m.insert(
        "properties".into(),
        x.properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    Value::Object(m)
}
fn disconnect_from(v: &Value) -> Result<Disconnect<'static>, String> {
    let m = record(v, "Disconnect")?;
    Ok(Disconnect {
        reason_code: {
            let x = field(m, "reason_code")?;
            if x.is_null() {
                None
            } else {
                Some(ReasonCode::from_code(num::<u8>(x)?).ok_or("not a member of ReasonCode")?)
            }
        },
        properties: {
            let x = field(m, "properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
    })
}
fn auth_json(x: &Auth<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Auth".into());
    m.insert(
        "reason_code".into(),
        x.reason_code
            .as_ref()
            .map_or(Value::Null, |v| int((*v as u8).into(), 8)),
    );
    m.insert(
        "properties".into(),
        x.properties.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| property_json(e)).collect())
        }),
    );
    Value::Object(m)
}
fn auth_from(v: &Value) -> Result<Auth<'static>, String> {
    let m = record(v, "Auth")?;
    Ok(Auth {
        reason_code: {
            let x = field(m, "reason_code")?;
            if x.is_null() {
                None
            } else {
                Some(ReasonCode::from_code(num::<u8>(x)?).ok_or("not a member of ReasonCode")?)
            }
        },
        properties: {
            let x = field(m, "properties")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(property_from(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
    })
}
pub fn frame_json(f: &Frame<'_>) -> Value {
    match f {
        Frame::Connect(x) => connect_json(x),
        Frame::Connack(x) => connack_json(x),
        Frame::Publish(x) => publish_json(x),
        Frame::Puback(x) => puback_json(x),
        Frame::Pubrec(x) => pubrec_json(x),
        Frame::Pubrel(x) => pubrel_json(x),
        Frame::Pubcomp(x) => pubcomp_json(x),
        Frame::Subscribe(x) => subscribe_json(x),
        Frame::Suback(x) => suback_json(x),
        Frame::Unsubscribe(x) => unsubscribe_json(x),
        Frame::Unsuback(x) => unsuback_json(x),
        Frame::Pingreq(x) => pingreq_json(x),
        Frame::Pingresp(x) => pingresp_json(x),
        Frame::Disconnect(x) => disconnect_json(x),
        Frame::Auth(x) => auth_json(x),
    }
}
pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("Connect") => Ok(Frame::Connect(connect_from(v)?)),
        Some("Connack") => Ok(Frame::Connack(connack_from(v)?)),
        Some("Publish") => Ok(Frame::Publish(publish_from(v)?)),
        Some("Puback") => Ok(Frame::Puback(puback_from(v)?)),
        Some("Pubrec") => Ok(Frame::Pubrec(pubrec_from(v)?)),
        Some("Pubrel") => Ok(Frame::Pubrel(pubrel_from(v)?)),
        Some("Pubcomp") => Ok(Frame::Pubcomp(pubcomp_from(v)?)),
        Some("Subscribe") => Ok(Frame::Subscribe(subscribe_from(v)?)),
        Some("Suback") => Ok(Frame::Suback(suback_from(v)?)),
        Some("Unsubscribe") => Ok(Frame::Unsubscribe(unsubscribe_from(v)?)),
        Some("Unsuback") => Ok(Frame::Unsuback(unsuback_from(v)?)),
        Some("Pingreq") => Ok(Frame::Pingreq(pingreq_from(v)?)),
        Some("Pingresp") => Ok(Frame::Pingresp(pingresp_from(v)?)),
        Some("Disconnect") => Ok(Frame::Disconnect(disconnect_from(v)?)),
        Some("Auth") => Ok(Frame::Auth(auth_from(v)?)),
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
    let decoded = wirestream_mqtt_v5::decode_with(data, ctx.as_ref(), sender);
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
    fn on_connection_connack(&mut self, _: &Connack<'_>) {
        self.0 = Some("on_connection_connack");
    }
    fn on_connection_publish(&mut self, _: &Publish<'_>) {
        self.0 = Some("on_connection_publish");
    }
    fn on_connection_puback(&mut self, _: &Puback<'_>) {
        self.0 = Some("on_connection_puback");
    }
    fn on_connection_pubrec(&mut self, _: &Pubrec<'_>) {
        self.0 = Some("on_connection_pubrec");
    }
    fn on_connection_pubrel(&mut self, _: &Pubrel<'_>) {
        self.0 = Some("on_connection_pubrel");
    }
    fn on_connection_pubcomp(&mut self, _: &Pubcomp<'_>) {
        self.0 = Some("on_connection_pubcomp");
    }
    fn on_connection_suback(&mut self, _: &Suback<'_>) {
        self.0 = Some("on_connection_suback");
    }
    fn on_connection_unsuback(&mut self, _: &Unsuback<'_>) {
        self.0 = Some("on_connection_unsuback");
    }
    fn on_connection_pingresp(&mut self, _: &Pingresp) {
        self.0 = Some("on_connection_pingresp");
    }
    fn on_connection_disconnect(&mut self, _: &Disconnect<'_>) {
        self.0 = Some("on_connection_disconnect");
    }
    fn on_connection_auth(&mut self, _: &Auth<'_>) {
        self.0 = Some("on_connection_auth");
    }
}
impl machines::ConnectionServerHandlers for Recorder {
    fn on_connection_connect(&mut self, _: &Connect<'_>) {
        self.0 = Some("on_connection_connect");
    }
    fn on_connection_publish(&mut self, _: &Publish<'_>) {
        self.0 = Some("on_connection_publish");
    }
    fn on_connection_puback(&mut self, _: &Puback<'_>) {
        self.0 = Some("on_connection_puback");
    }
    fn on_connection_pubrec(&mut self, _: &Pubrec<'_>) {
        self.0 = Some("on_connection_pubrec");
    }
    fn on_connection_pubrel(&mut self, _: &Pubrel<'_>) {
        self.0 = Some("on_connection_pubrel");
    }
    fn on_connection_pubcomp(&mut self, _: &Pubcomp<'_>) {
        self.0 = Some("on_connection_pubcomp");
    }
    fn on_connection_subscribe(&mut self, _: &Subscribe<'_>) {
        self.0 = Some("on_connection_subscribe");
    }
    fn on_connection_unsubscribe(&mut self, _: &Unsubscribe<'_>) {
        self.0 = Some("on_connection_unsubscribe");
    }
    fn on_connection_pingreq(&mut self, _: &Pingreq) {
        self.0 = Some("on_connection_pingreq");
    }
    fn on_connection_disconnect(&mut self, _: &Disconnect<'_>) {
        self.0 = Some("on_connection_disconnect");
    }
    fn on_connection_auth(&mut self, _: &Auth<'_>) {
        self.0 = Some("on_connection_auth");
    }
}
impl machines::PacketSenderHandlers for Recorder {
    fn on_packet_pubrec(&mut self, _: &Pubrec<'_>) {
        self.0 = Some("on_packet_pubrec");
    }
    fn on_packet_pubcomp(&mut self, _: &Pubcomp<'_>) {
        self.0 = Some("on_packet_pubcomp");
    }
}
impl machines::PacketReceiverHandlers for Recorder {
    fn on_packet_publish(&mut self, _: &Publish<'_>) {
        self.0 = Some("on_packet_publish");
    }
    fn on_packet_pubrel(&mut self, _: &Pubrel<'_>) {
        self.0 = Some("on_packet_pubrel");
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
    let frame = wirestream_mqtt_v5::decode_with(data, ctx.as_ref(), sender)
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
        "PublishQos2Machine" => {
            let role = machines::PublishQos2Role::from_name(role).ok_or("no such role")?;
            let state = machines::PublishQos2State::from_value(state).ok_or("no such state")?;
            let mut machine = machines::PublishQos2Machine::with_state(role, state);
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
            let mut again = machines::PublishQos2Machine::with_state(role, state);
            let dispatched = match role {
                machines::PublishQos2Role::Sender => again.dispatch_sender(&frame, &mut recorder),
                machines::PublishQos2Role::Receiver => {
                    again.dispatch_receiver(&frame, &mut recorder)
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
