//! The corpus's JSON form of wirestream-rabbitmq-stream-v1's frames.
#![allow(
    clippy::all,
    unused_parens,
    unused_braces,
    unused_variables,
    unused_mut
)]
use crate::json::*;
use serde_json::{Map, Value};
use wirestream_rabbitmq_stream_v1::*;
fn property_json(x: &Property<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Property".into());
    m.insert(
        "key".into(),
        x.key
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "value".into(),
        x.value
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn property_from(v: &Value) -> Result<Property<'static>, String> {
    let m = record(v, "Property")?;
    Ok(Property {
        key: {
            let x = field(m, "key")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        value: {
            let x = field(m, "value")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn simple_entry_json(x: &SimpleEntry<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SimpleEntry".into());
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn simple_entry_from(v: &Value) -> Result<SimpleEntry<'static>, String> {
    let m = record(v, "SimpleEntry")?;
    Ok(SimpleEntry {
        data: bytes(field(m, "data")?)?,
    })
}
fn sub_entry_batch_json(x: &SubEntryBatch<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SubEntryBatch".into());
    m.insert("compression".into(), int((*&x.compression as u8).into(), 3));
    m.insert("num_records".into(), int((*&x.num_records).into(), 16));
    m.insert(
        "uncompressed_length".into(),
        int((*&x.uncompressed_length).into(), 32),
    );
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn sub_entry_batch_from(v: &Value) -> Result<SubEntryBatch<'static>, String> {
    let m = record(v, "SubEntryBatch")?;
    Ok(SubEntryBatch {
        compression: CompressionType::from_code(num::<u8>(field(m, "compression")?)?)
            .ok_or("not a member of CompressionType")?,
        num_records: num::<u16>(field(m, "num_records")?)?,
        uncompressed_length: num::<u32>(field(m, "uncompressed_length")?)?,
        data: bytes(field(m, "data")?)?,
    })
}
fn published_message_json(x: &PublishedMessage<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PublishedMessage".into());
    m.insert("publishing_id".into(), int((*&x.publishing_id).into(), 64));
    m.insert("entry".into(), entry_json(&x.entry));
    Value::Object(m)
}
fn published_message_from(v: &Value) -> Result<PublishedMessage<'static>, String> {
    let m = record(v, "PublishedMessage")?;
    Ok(PublishedMessage {
        publishing_id: num::<u64>(field(m, "publishing_id")?)?,
        entry: entry_from(field(m, "entry")?)?,
    })
}
fn published_message_v2_json(x: &PublishedMessageV2<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PublishedMessageV2".into());
    m.insert("publishing_id".into(), int((*&x.publishing_id).into(), 64));
    m.insert(
        "filter_value".into(),
        x.filter_value
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "message".into(),
        x.message.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn published_message_v2_from(v: &Value) -> Result<PublishedMessageV2<'static>, String> {
    let m = record(v, "PublishedMessageV2")?;
    Ok(PublishedMessageV2 {
        publishing_id: num::<u64>(field(m, "publishing_id")?)?,
        filter_value: {
            let x = field(m, "filter_value")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        message: {
            let x = field(m, "message")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn publishing_error_json(x: &PublishingError) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PublishingError".into());
    m.insert("publishing_id".into(), int((*&x.publishing_id).into(), 64));
    m.insert("code".into(), int((*&x.code).into(), 16));
    Value::Object(m)
}
fn publishing_error_from(v: &Value) -> Result<PublishingError, String> {
    let m = record(v, "PublishingError")?;
    Ok(PublishingError {
        publishing_id: num::<u64>(field(m, "publishing_id")?)?,
        code: num::<u16>(field(m, "code")?)?,
    })
}
fn broker_json(x: &Broker<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Broker".into());
    m.insert("reference".into(), int((*&x.reference).into(), 16));
    m.insert(
        "host".into(),
        x.host
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert("port".into(), int((*&x.port).into(), 32));
    Value::Object(m)
}
fn broker_from(v: &Value) -> Result<Broker<'static>, String> {
    let m = record(v, "Broker")?;
    Ok(Broker {
        reference: num::<u16>(field(m, "reference")?)?,
        host: {
            let x = field(m, "host")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        port: num::<u32>(field(m, "port")?)?,
    })
}
fn stream_metadata_json(x: &StreamMetadata<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "StreamMetadata".into());
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "leader_reference".into(),
        int((*&x.leader_reference).into(), 16),
    );
    m.insert(
        "replicas_references".into(),
        Value::Array(
            (&x.replicas_references)
                .iter()
                .map(|e| int((*e).into(), 16))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn stream_metadata_from(v: &Value) -> Result<StreamMetadata<'static>, String> {
    let m = record(v, "StreamMetadata")?;
    Ok(StreamMetadata {
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        response_code: num::<u16>(field(m, "response_code")?)?,
        leader_reference: num::<u16>(field(m, "leader_reference")?)?,
        replicas_references: list(field(m, "replicas_references")?)?
            .iter()
            .map(|e| Ok::<_, String>(num::<u16>(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn command_version_json(x: &CommandVersion) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CommandVersion".into());
    m.insert("key".into(), int((*&x.key).into(), 16));
    m.insert("min_version".into(), int((*&x.min_version).into(), 16));
    m.insert("max_version".into(), int((*&x.max_version).into(), 16));
    Value::Object(m)
}
fn command_version_from(v: &Value) -> Result<CommandVersion, String> {
    let m = record(v, "CommandVersion")?;
    Ok(CommandVersion {
        key: num::<u16>(field(m, "key")?)?,
        min_version: num::<u16>(field(m, "min_version")?)?,
        max_version: num::<u16>(field(m, "max_version")?)?,
    })
}
fn statistic_json(x: &Statistic<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Statistic".into());
    m.insert(
        "key".into(),
        x.key
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert("value".into(), int((*&x.value).into(), 64));
    Value::Object(m)
}
fn statistic_from(v: &Value) -> Result<Statistic<'static>, String> {
    let m = record(v, "Statistic")?;
    Ok(Statistic {
        key: {
            let x = field(m, "key")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        value: num::<i64>(field(m, "value")?)?,
    })
}
fn offset_spec_none_json(x: &OffsetSpecNone) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OffsetSpecNone".into());
    Value::Object(m)
}
fn offset_spec_none_from(v: &Value) -> Result<OffsetSpecNone, String> {
    let m = record(v, "OffsetSpecNone")?;
    Ok(OffsetSpecNone {})
}
fn offset_spec_first_json(x: &OffsetSpecFirst) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OffsetSpecFirst".into());
    Value::Object(m)
}
fn offset_spec_first_from(v: &Value) -> Result<OffsetSpecFirst, String> {
    let m = record(v, "OffsetSpecFirst")?;
    Ok(OffsetSpecFirst {})
}
fn offset_spec_last_json(x: &OffsetSpecLast) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OffsetSpecLast".into());
    Value::Object(m)
}
fn offset_spec_last_from(v: &Value) -> Result<OffsetSpecLast, String> {
    let m = record(v, "OffsetSpecLast")?;
    Ok(OffsetSpecLast {})
}
fn offset_spec_next_json(x: &OffsetSpecNext) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OffsetSpecNext".into());
    Value::Object(m)
}
fn offset_spec_next_from(v: &Value) -> Result<OffsetSpecNext, String> {
    let m = record(v, "OffsetSpecNext")?;
    Ok(OffsetSpecNext {})
}
fn offset_spec_offset_json(x: &OffsetSpecOffset) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OffsetSpecOffset".into());
    m.insert("offset".into(), int((*&x.offset).into(), 64));
    Value::Object(m)
}
fn offset_spec_offset_from(v: &Value) -> Result<OffsetSpecOffset, String> {
    let m = record(v, "OffsetSpecOffset")?;
    Ok(OffsetSpecOffset {
        offset: num::<u64>(field(m, "offset")?)?,
    })
}
fn offset_spec_timestamp_json(x: &OffsetSpecTimestamp) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OffsetSpecTimestamp".into());
    m.insert("timestamp".into(), int((*&x.timestamp).into(), 64));
    Value::Object(m)
}
fn offset_spec_timestamp_from(v: &Value) -> Result<OffsetSpecTimestamp, String> {
    let m = record(v, "OffsetSpecTimestamp")?;
    Ok(OffsetSpecTimestamp {
        timestamp: num::<i64>(field(m, "timestamp")?)?,
    })
}
fn osiris_chunk_json(x: &OsirisChunk<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OsirisChunk".into());
    m.insert("chunk_type".into(), int((*&x.chunk_type).into(), 8));
    m.insert("num_entries".into(), int((*&x.num_entries).into(), 16));
    m.insert("num_records".into(), int((*&x.num_records).into(), 32));
    m.insert("timestamp".into(), int((*&x.timestamp).into(), 64));
    m.insert("epoch".into(), int((*&x.epoch).into(), 64));
    m.insert(
        "chunk_first_offset".into(),
        int((*&x.chunk_first_offset).into(), 64),
    );
    m.insert("chunk_crc".into(), int((*&x.chunk_crc).into(), 32));
    m.insert(
        "trailer_length".into(),
        int((*&x.trailer_length).into(), 32),
    );
    m.insert("bloom_size".into(), int((*&x.bloom_size).into(), 8));
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn osiris_chunk_from(v: &Value) -> Result<OsirisChunk<'static>, String> {
    let m = record(v, "OsirisChunk")?;
    Ok(OsirisChunk {
        chunk_type: num::<i8>(field(m, "chunk_type")?)?,
        num_entries: num::<u16>(field(m, "num_entries")?)?,
        num_records: num::<u32>(field(m, "num_records")?)?,
        timestamp: num::<i64>(field(m, "timestamp")?)?,
        epoch: num::<u64>(field(m, "epoch")?)?,
        chunk_first_offset: num::<u64>(field(m, "chunk_first_offset")?)?,
        chunk_crc: num::<u32>(field(m, "chunk_crc")?)?,
        trailer_length: num::<u32>(field(m, "trailer_length")?)?,
        bloom_size: num::<u8>(field(m, "bloom_size")?)?,
        data: bytes(field(m, "data")?)?,
    })
}
fn entry_json(x: &Entry<'_>) -> Value {
    match x {
        Entry::SimpleEntry(r) => simple_entry_json(r),
        Entry::SubEntryBatch(r) => sub_entry_batch_json(r),
    }
}
fn entry_from(v: &Value) -> Result<Entry<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("SimpleEntry") => Ok(Entry::SimpleEntry(simple_entry_from(v)?)),
        Some("SubEntryBatch") => Ok(Entry::SubEntryBatch(sub_entry_batch_from(v)?)),
        _ => Err(format!("not a variant of Entry: {v}")),
    }
}
fn offset_specification_json(x: &OffsetSpecification) -> Value {
    match x {
        OffsetSpecification::OffsetSpecFirst(r) => offset_spec_first_json(r),
        OffsetSpecification::OffsetSpecLast(r) => offset_spec_last_json(r),
        OffsetSpecification::OffsetSpecNext(r) => offset_spec_next_json(r),
        OffsetSpecification::OffsetSpecOffset(r) => offset_spec_offset_json(r),
        OffsetSpecification::OffsetSpecTimestamp(r) => offset_spec_timestamp_json(r),
    }
}
fn offset_specification_from(v: &Value) -> Result<OffsetSpecification, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("OffsetSpecFirst") => Ok(OffsetSpecification::OffsetSpecFirst(
            offset_spec_first_from(v)?,
        )),
        Some("OffsetSpecLast") => Ok(OffsetSpecification::OffsetSpecLast(offset_spec_last_from(
            v,
        )?)),
        Some("OffsetSpecNext") => Ok(OffsetSpecification::OffsetSpecNext(offset_spec_next_from(
            v,
        )?)),
        Some("OffsetSpecOffset") => Ok(OffsetSpecification::OffsetSpecOffset(
            offset_spec_offset_from(v)?,
        )),
        Some("OffsetSpecTimestamp") => Ok(OffsetSpecification::OffsetSpecTimestamp(
            offset_spec_timestamp_from(v)?,
        )),
        _ => Err(format!("not a variant of OffsetSpecification: {v}")),
    }
}
fn consumer_update_offset_specification_json(x: &ConsumerUpdateOffsetSpecification) -> Value {
    match x {
        ConsumerUpdateOffsetSpecification::OffsetSpecNone(r) => offset_spec_none_json(r),
        ConsumerUpdateOffsetSpecification::OffsetSpecFirst(r) => offset_spec_first_json(r),
        ConsumerUpdateOffsetSpecification::OffsetSpecLast(r) => offset_spec_last_json(r),
        ConsumerUpdateOffsetSpecification::OffsetSpecNext(r) => offset_spec_next_json(r),
        ConsumerUpdateOffsetSpecification::OffsetSpecOffset(r) => offset_spec_offset_json(r),
        ConsumerUpdateOffsetSpecification::OffsetSpecTimestamp(r) => offset_spec_timestamp_json(r),
    }
}
fn consumer_update_offset_specification_from(
    v: &Value,
) -> Result<ConsumerUpdateOffsetSpecification, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("OffsetSpecNone") => Ok(ConsumerUpdateOffsetSpecification::OffsetSpecNone(
            offset_spec_none_from(v)?,
        )),
        Some("OffsetSpecFirst") => Ok(ConsumerUpdateOffsetSpecification::OffsetSpecFirst(
            offset_spec_first_from(v)?,
        )),
        Some("OffsetSpecLast") => Ok(ConsumerUpdateOffsetSpecification::OffsetSpecLast(
            offset_spec_last_from(v)?,
        )),
        Some("OffsetSpecNext") => Ok(ConsumerUpdateOffsetSpecification::OffsetSpecNext(
            offset_spec_next_from(v)?,
        )),
        Some("OffsetSpecOffset") => Ok(ConsumerUpdateOffsetSpecification::OffsetSpecOffset(
            offset_spec_offset_from(v)?,
        )),
        Some("OffsetSpecTimestamp") => Ok(ConsumerUpdateOffsetSpecification::OffsetSpecTimestamp(
            offset_spec_timestamp_from(v)?,
        )),
        _ => Err(format!(
            "not a variant of ConsumerUpdateOffsetSpecification: {v}"
        )),
    }
}
fn declare_publisher_request_json(x: &DeclarePublisherRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeclarePublisherRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("publisher_id".into(), int((*&x.publisher_id).into(), 8));
    m.insert(
        "publisher_reference".into(),
        x.publisher_reference
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn declare_publisher_request_from(v: &Value) -> Result<DeclarePublisherRequest<'static>, String> {
    let m = record(v, "DeclarePublisherRequest")?;
    Ok(DeclarePublisherRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        publisher_id: num::<u8>(field(m, "publisher_id")?)?,
        publisher_reference: {
            let x = field(m, "publisher_reference")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn declare_publisher_response_json(x: &DeclarePublisherResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeclarePublisherResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn declare_publisher_response_from(v: &Value) -> Result<DeclarePublisherResponse, String> {
    let m = record(v, "DeclarePublisherResponse")?;
    Ok(DeclarePublisherResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn publish_json(x: &Publish<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Publish".into());
    m.insert("publisher_id".into(), int((*&x.publisher_id).into(), 8));
    m.insert(
        "published_messages".into(),
        Value::Array(
            (&x.published_messages)
                .iter()
                .map(|e| published_message_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn publish_from(v: &Value) -> Result<Publish<'static>, String> {
    let m = record(v, "Publish")?;
    Ok(Publish {
        publisher_id: num::<u8>(field(m, "publisher_id")?)?,
        published_messages: list(field(m, "published_messages")?)?
            .iter()
            .map(|e| Ok::<_, String>(published_message_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn publish_v2_json(x: &PublishV2<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PublishV2".into());
    m.insert("publisher_id".into(), int((*&x.publisher_id).into(), 8));
    m.insert(
        "published_messages".into(),
        Value::Array(
            (&x.published_messages)
                .iter()
                .map(|e| published_message_v2_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn publish_v2_from(v: &Value) -> Result<PublishV2<'static>, String> {
    let m = record(v, "PublishV2")?;
    Ok(PublishV2 {
        publisher_id: num::<u8>(field(m, "publisher_id")?)?,
        published_messages: list(field(m, "published_messages")?)?
            .iter()
            .map(|e| Ok::<_, String>(published_message_v2_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn publish_confirm_json(x: &PublishConfirm) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PublishConfirm".into());
    m.insert("publisher_id".into(), int((*&x.publisher_id).into(), 8));
    m.insert(
        "publishing_ids".into(),
        Value::Array(
            (&x.publishing_ids)
                .iter()
                .map(|e| int((*e).into(), 64))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn publish_confirm_from(v: &Value) -> Result<PublishConfirm, String> {
    let m = record(v, "PublishConfirm")?;
    Ok(PublishConfirm {
        publisher_id: num::<u8>(field(m, "publisher_id")?)?,
        publishing_ids: list(field(m, "publishing_ids")?)?
            .iter()
            .map(|e| Ok::<_, String>(num::<u64>(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn publish_error_json(x: &PublishError) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PublishError".into());
    m.insert("publisher_id".into(), int((*&x.publisher_id).into(), 8));
    m.insert(
        "publishing_errors".into(),
        Value::Array(
            (&x.publishing_errors)
                .iter()
                .map(|e| publishing_error_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn publish_error_from(v: &Value) -> Result<PublishError, String> {
    let m = record(v, "PublishError")?;
    Ok(PublishError {
        publisher_id: num::<u8>(field(m, "publisher_id")?)?,
        publishing_errors: list(field(m, "publishing_errors")?)?
            .iter()
            .map(|e| Ok::<_, String>(publishing_error_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn query_publisher_sequence_request_json(x: &QueryPublisherSequenceRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "QueryPublisherSequenceRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "publisher_reference".into(),
        x.publisher_reference
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn query_publisher_sequence_request_from(
    v: &Value,
) -> Result<QueryPublisherSequenceRequest<'static>, String> {
    let m = record(v, "QueryPublisherSequenceRequest")?;
    Ok(QueryPublisherSequenceRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        publisher_reference: {
            let x = field(m, "publisher_reference")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn query_publisher_sequence_response_json(x: &QueryPublisherSequenceResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "QueryPublisherSequenceResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert("sequence".into(), int((*&x.sequence).into(), 64));
    Value::Object(m)
}
fn query_publisher_sequence_response_from(
    v: &Value,
) -> Result<QueryPublisherSequenceResponse, String> {
    let m = record(v, "QueryPublisherSequenceResponse")?;
    Ok(QueryPublisherSequenceResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        sequence: num::<u64>(field(m, "sequence")?)?,
    })
}
fn delete_publisher_request_json(x: &DeletePublisherRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeletePublisherRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("publisher_id".into(), int((*&x.publisher_id).into(), 8));
    Value::Object(m)
}
fn delete_publisher_request_from(v: &Value) -> Result<DeletePublisherRequest, String> {
    let m = record(v, "DeletePublisherRequest")?;
    Ok(DeletePublisherRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        publisher_id: num::<u8>(field(m, "publisher_id")?)?,
    })
}
fn delete_publisher_response_json(x: &DeletePublisherResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeletePublisherResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn delete_publisher_response_from(v: &Value) -> Result<DeletePublisherResponse, String> {
    let m = record(v, "DeletePublisherResponse")?;
    Ok(DeletePublisherResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn subscribe_request_json(x: &SubscribeRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SubscribeRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "offset_specification".into(),
        offset_specification_json(&x.offset_specification),
    );
    m.insert("credit".into(), int((*&x.credit).into(), 16));
    m.insert(
        "properties".into(),
        Value::Array((&x.properties).iter().map(|e| property_json(e)).collect()),
    );
    Value::Object(m)
}
fn subscribe_request_from(v: &Value) -> Result<SubscribeRequest<'static>, String> {
    let m = record(v, "SubscribeRequest")?;
    Ok(SubscribeRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        offset_specification: offset_specification_from(field(m, "offset_specification")?)?,
        credit: num::<u16>(field(m, "credit")?)?,
        properties: list(field(m, "properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn subscribe_response_json(x: &SubscribeResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SubscribeResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn subscribe_response_from(v: &Value) -> Result<SubscribeResponse, String> {
    let m = record(v, "SubscribeResponse")?;
    Ok(SubscribeResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn deliver_json(x: &Deliver<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Deliver".into());
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    m.insert("chunk".into(), osiris_chunk_json(&x.chunk));
    Value::Object(m)
}
fn deliver_from(v: &Value) -> Result<Deliver<'static>, String> {
    let m = record(v, "Deliver")?;
    Ok(Deliver {
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
        chunk: osiris_chunk_from(field(m, "chunk")?)?,
    })
}
fn deliver_v2_json(x: &DeliverV2<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeliverV2".into());
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    m.insert(
        "committed_chunk_id".into(),
        int((*&x.committed_chunk_id).into(), 64),
    );
    m.insert("chunk".into(), osiris_chunk_json(&x.chunk));
    Value::Object(m)
}
fn deliver_v2_from(v: &Value) -> Result<DeliverV2<'static>, String> {
    let m = record(v, "DeliverV2")?;
    Ok(DeliverV2 {
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
        committed_chunk_id: num::<u64>(field(m, "committed_chunk_id")?)?,
        chunk: osiris_chunk_from(field(m, "chunk")?)?,
    })
}
fn credit_request_json(x: &CreditRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreditRequest".into());
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    m.insert("credit".into(), int((*&x.credit).into(), 16));
    Value::Object(m)
}
fn credit_request_from(v: &Value) -> Result<CreditRequest, String> {
    let m = record(v, "CreditRequest")?;
    Ok(CreditRequest {
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
        credit: num::<u16>(field(m, "credit")?)?,
    })
}
fn credit_response_json(x: &CreditResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreditResponse".into());
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    Value::Object(m)
}
fn credit_response_from(v: &Value) -> Result<CreditResponse, String> {
    let m = record(v, "CreditResponse")?;
    Ok(CreditResponse {
        response_code: num::<u16>(field(m, "response_code")?)?,
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
    })
}
fn store_offset_json(x: &StoreOffset<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "StoreOffset".into());
    m.insert(
        "reference".into(),
        x.reference
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert("offset".into(), int((*&x.offset).into(), 64));
    Value::Object(m)
}
fn store_offset_from(v: &Value) -> Result<StoreOffset<'static>, String> {
    let m = record(v, "StoreOffset")?;
    Ok(StoreOffset {
        reference: {
            let x = field(m, "reference")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        offset: num::<u64>(field(m, "offset")?)?,
    })
}
fn query_offset_request_json(x: &QueryOffsetRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "QueryOffsetRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "reference".into(),
        x.reference
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn query_offset_request_from(v: &Value) -> Result<QueryOffsetRequest<'static>, String> {
    let m = record(v, "QueryOffsetRequest")?;
    Ok(QueryOffsetRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        reference: {
            let x = field(m, "reference")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn query_offset_response_json(x: &QueryOffsetResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "QueryOffsetResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert("offset".into(), int((*&x.offset).into(), 64));
    Value::Object(m)
}
fn query_offset_response_from(v: &Value) -> Result<QueryOffsetResponse, String> {
    let m = record(v, "QueryOffsetResponse")?;
    Ok(QueryOffsetResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        offset: num::<u64>(field(m, "offset")?)?,
    })
}
fn unsubscribe_request_json(x: &UnsubscribeRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "UnsubscribeRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    Value::Object(m)
}
fn unsubscribe_request_from(v: &Value) -> Result<UnsubscribeRequest, String> {
    let m = record(v, "UnsubscribeRequest")?;
    Ok(UnsubscribeRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
    })
}
fn unsubscribe_response_json(x: &UnsubscribeResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "UnsubscribeResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn unsubscribe_response_from(v: &Value) -> Result<UnsubscribeResponse, String> {
    let m = record(v, "UnsubscribeResponse")?;
    Ok(UnsubscribeResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn create_request_json(x: &CreateRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "arguments".into(),
        Value::Array((&x.arguments).iter().map(|e| property_json(e)).collect()),
    );
    Value::Object(m)
}
fn create_request_from(v: &Value) -> Result<CreateRequest<'static>, String> {
    let m = record(v, "CreateRequest")?;
    Ok(CreateRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        arguments: list(field(m, "arguments")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn create_response_json(x: &CreateResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn create_response_from(v: &Value) -> Result<CreateResponse, String> {
    let m = record(v, "CreateResponse")?;
    Ok(CreateResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn delete_request_json(x: &DeleteRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeleteRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn delete_request_from(v: &Value) -> Result<DeleteRequest<'static>, String> {
    let m = record(v, "DeleteRequest")?;
    Ok(DeleteRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn delete_response_json(x: &DeleteResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeleteResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn delete_response_from(v: &Value) -> Result<DeleteResponse, String> {
    let m = record(v, "DeleteResponse")?;
    Ok(DeleteResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn metadata_request_json(x: &MetadataRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MetadataRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "streams".into(),
        Value::Array(
            (&x.streams)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| Value::String((*&x).into())))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn metadata_request_from(v: &Value) -> Result<MetadataRequest<'static>, String> {
    let m = record(v, "MetadataRequest")?;
    Ok(MetadataRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        streams: list(field(m, "streams")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(string(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn metadata_response_json(x: &MetadataResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MetadataResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "brokers".into(),
        Value::Array((&x.brokers).iter().map(|e| broker_json(e)).collect()),
    );
    m.insert(
        "stream_metadata".into(),
        Value::Array(
            (&x.stream_metadata)
                .iter()
                .map(|e| stream_metadata_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn metadata_response_from(v: &Value) -> Result<MetadataResponse<'static>, String> {
    let m = record(v, "MetadataResponse")?;
    Ok(MetadataResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        brokers: list(field(m, "brokers")?)?
            .iter()
            .map(|e| Ok::<_, String>(broker_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
        stream_metadata: list(field(m, "stream_metadata")?)?
            .iter()
            .map(|e| Ok::<_, String>(stream_metadata_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn metadata_update_json(x: &MetadataUpdate<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "MetadataUpdate".into());
    m.insert("code".into(), int((*&x.code).into(), 16));
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn metadata_update_from(v: &Value) -> Result<MetadataUpdate<'static>, String> {
    let m = record(v, "MetadataUpdate")?;
    Ok(MetadataUpdate {
        code: num::<u16>(field(m, "code")?)?,
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn peer_properties_request_json(x: &PeerPropertiesRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PeerPropertiesRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "peer_properties".into(),
        Value::Array(
            (&x.peer_properties)
                .iter()
                .map(|e| property_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn peer_properties_request_from(v: &Value) -> Result<PeerPropertiesRequest<'static>, String> {
    let m = record(v, "PeerPropertiesRequest")?;
    Ok(PeerPropertiesRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        peer_properties: list(field(m, "peer_properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn peer_properties_response_json(x: &PeerPropertiesResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PeerPropertiesResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "peer_properties".into(),
        Value::Array(
            (&x.peer_properties)
                .iter()
                .map(|e| property_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn peer_properties_response_from(v: &Value) -> Result<PeerPropertiesResponse<'static>, String> {
    let m = record(v, "PeerPropertiesResponse")?;
    Ok(PeerPropertiesResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        peer_properties: list(field(m, "peer_properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn sasl_handshake_request_json(x: &SaslHandshakeRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SaslHandshakeRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    Value::Object(m)
}
fn sasl_handshake_request_from(v: &Value) -> Result<SaslHandshakeRequest, String> {
    let m = record(v, "SaslHandshakeRequest")?;
    Ok(SaslHandshakeRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
    })
}
fn sasl_handshake_response_json(x: &SaslHandshakeResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SaslHandshakeResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "mechanisms".into(),
        Value::Array(
            (&x.mechanisms)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| Value::String((*&x).into())))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn sasl_handshake_response_from(v: &Value) -> Result<SaslHandshakeResponse<'static>, String> {
    let m = record(v, "SaslHandshakeResponse")?;
    Ok(SaslHandshakeResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        mechanisms: list(field(m, "mechanisms")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(string(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn sasl_authenticate_request_json(x: &SaslAuthenticateRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SaslAuthenticateRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "mechanism".into(),
        x.mechanism
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "sasl_opaque_data".into(),
        x.sasl_opaque_data
            .as_ref()
            .map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn sasl_authenticate_request_from(v: &Value) -> Result<SaslAuthenticateRequest<'static>, String> {
    let m = record(v, "SaslAuthenticateRequest")?;
    Ok(SaslAuthenticateRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        mechanism: {
            let x = field(m, "mechanism")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        sasl_opaque_data: {
            let x = field(m, "sasl_opaque_data")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn sasl_authenticate_response_json(x: &SaslAuthenticateResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SaslAuthenticateResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "sasl_opaque_data".into(),
        Value::Array(
            (&x.sasl_opaque_data)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| hex_json(&x)))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn sasl_authenticate_response_from(v: &Value) -> Result<SaslAuthenticateResponse<'static>, String> {
    let m = record(v, "SaslAuthenticateResponse")?;
    Ok(SaslAuthenticateResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        sasl_opaque_data: list(field(m, "sasl_opaque_data")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(bytes(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn tune_json(x: &Tune) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Tune".into());
    m.insert("frame_max".into(), int((*&x.frame_max).into(), 32));
    m.insert("heartbeat".into(), int((*&x.heartbeat).into(), 32));
    Value::Object(m)
}
fn tune_from(v: &Value) -> Result<Tune, String> {
    let m = record(v, "Tune")?;
    Ok(Tune {
        frame_max: num::<u32>(field(m, "frame_max")?)?,
        heartbeat: num::<u32>(field(m, "heartbeat")?)?,
    })
}
fn open_request_json(x: &OpenRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OpenRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "virtual_host".into(),
        x.virtual_host
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn open_request_from(v: &Value) -> Result<OpenRequest<'static>, String> {
    let m = record(v, "OpenRequest")?;
    Ok(OpenRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        virtual_host: {
            let x = field(m, "virtual_host")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn open_response_json(x: &OpenResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "OpenResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "connection_properties".into(),
        Value::Array(
            (&x.connection_properties)
                .iter()
                .map(|e| property_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn open_response_from(v: &Value) -> Result<OpenResponse<'static>, String> {
    let m = record(v, "OpenResponse")?;
    Ok(OpenResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        connection_properties: list(field(m, "connection_properties")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn close_request_json(x: &CloseRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CloseRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("closing_code".into(), int((*&x.closing_code).into(), 16));
    m.insert(
        "closing_reason".into(),
        x.closing_reason
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn close_request_from(v: &Value) -> Result<CloseRequest<'static>, String> {
    let m = record(v, "CloseRequest")?;
    Ok(CloseRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        closing_code: num::<u16>(field(m, "closing_code")?)?,
        closing_reason: {
            let x = field(m, "closing_reason")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn close_response_json(x: &CloseResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CloseResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn close_response_from(v: &Value) -> Result<CloseResponse, String> {
    let m = record(v, "CloseResponse")?;
    Ok(CloseResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn heartbeat_json(x: &Heartbeat) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Heartbeat".into());
    Value::Object(m)
}
fn heartbeat_from(v: &Value) -> Result<Heartbeat, String> {
    let m = record(v, "Heartbeat")?;
    Ok(Heartbeat {})
}
fn route_request_json(x: &RouteRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RouteRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "routing_key".into(),
        x.routing_key
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "super_stream".into(),
        x.super_stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn route_request_from(v: &Value) -> Result<RouteRequest<'static>, String> {
    let m = record(v, "RouteRequest")?;
    Ok(RouteRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        routing_key: {
            let x = field(m, "routing_key")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        super_stream: {
            let x = field(m, "super_stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn route_response_json(x: &RouteResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RouteResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "streams".into(),
        Value::Array(
            (&x.streams)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| Value::String((*&x).into())))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn route_response_from(v: &Value) -> Result<RouteResponse<'static>, String> {
    let m = record(v, "RouteResponse")?;
    Ok(RouteResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        streams: list(field(m, "streams")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(string(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn partitions_request_json(x: &PartitionsRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PartitionsRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "super_stream".into(),
        x.super_stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn partitions_request_from(v: &Value) -> Result<PartitionsRequest<'static>, String> {
    let m = record(v, "PartitionsRequest")?;
    Ok(PartitionsRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        super_stream: {
            let x = field(m, "super_stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn partitions_response_json(x: &PartitionsResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PartitionsResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "streams".into(),
        Value::Array(
            (&x.streams)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| Value::String((*&x).into())))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn partitions_response_from(v: &Value) -> Result<PartitionsResponse<'static>, String> {
    let m = record(v, "PartitionsResponse")?;
    Ok(PartitionsResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        streams: list(field(m, "streams")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(string(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn consumer_update_request_json(x: &ConsumerUpdateRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ConsumerUpdateRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "subscription_id".into(),
        int((*&x.subscription_id).into(), 8),
    );
    m.insert("active".into(), int((*&x.active).into(), 8));
    Value::Object(m)
}
fn consumer_update_request_from(v: &Value) -> Result<ConsumerUpdateRequest, String> {
    let m = record(v, "ConsumerUpdateRequest")?;
    Ok(ConsumerUpdateRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        subscription_id: num::<u8>(field(m, "subscription_id")?)?,
        active: num::<u8>(field(m, "active")?)?,
    })
}
fn consumer_update_response_json(x: &ConsumerUpdateResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ConsumerUpdateResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "offset_specification".into(),
        consumer_update_offset_specification_json(&x.offset_specification),
    );
    Value::Object(m)
}
fn consumer_update_response_from(v: &Value) -> Result<ConsumerUpdateResponse, String> {
    let m = record(v, "ConsumerUpdateResponse")?;
    Ok(ConsumerUpdateResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        offset_specification: consumer_update_offset_specification_from(field(
            m,
            "offset_specification",
        )?)?,
    })
}
fn exchange_command_versions_request_json(x: &ExchangeCommandVersionsRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ExchangeCommandVersionsRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "commands".into(),
        Value::Array(
            (&x.commands)
                .iter()
                .map(|e| command_version_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn exchange_command_versions_request_from(
    v: &Value,
) -> Result<ExchangeCommandVersionsRequest, String> {
    let m = record(v, "ExchangeCommandVersionsRequest")?;
    Ok(ExchangeCommandVersionsRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        commands: list(field(m, "commands")?)?
            .iter()
            .map(|e| Ok::<_, String>(command_version_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn exchange_command_versions_response_json(x: &ExchangeCommandVersionsResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ExchangeCommandVersionsResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "commands".into(),
        Value::Array(
            (&x.commands)
                .iter()
                .map(|e| command_version_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn exchange_command_versions_response_from(
    v: &Value,
) -> Result<ExchangeCommandVersionsResponse, String> {
    let m = record(v, "ExchangeCommandVersionsResponse")?;
    Ok(ExchangeCommandVersionsResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        commands: list(field(m, "commands")?)?
            .iter()
            .map(|e| Ok::<_, String>(command_version_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn stream_stats_request_json(x: &StreamStatsRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "StreamStatsRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "stream".into(),
        x.stream
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn stream_stats_request_from(v: &Value) -> Result<StreamStatsRequest<'static>, String> {
    let m = record(v, "StreamStatsRequest")?;
    Ok(StreamStatsRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        stream: {
            let x = field(m, "stream")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn stream_stats_response_json(x: &StreamStatsResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "StreamStatsResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    m.insert(
        "stats".into(),
        Value::Array((&x.stats).iter().map(|e| statistic_json(e)).collect()),
    );
    Value::Object(m)
}
fn stream_stats_response_from(v: &Value) -> Result<StreamStatsResponse<'static>, String> {
    let m = record(v, "StreamStatsResponse")?;
    Ok(StreamStatsResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
        stats: list(field(m, "stats")?)?
            .iter()
            .map(|e| Ok::<_, String>(statistic_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn create_super_stream_request_json(x: &CreateSuperStreamRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateSuperStreamRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "name".into(),
        x.name
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "partitions".into(),
        Value::Array(
            (&x.partitions)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| Value::String((*&x).into())))
                .collect(),
        ),
    );
    m.insert(
        "binding_keys".into(),
        Value::Array(
            (&x.binding_keys)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| Value::String((*&x).into())))
                .collect(),
        ),
    );
    m.insert(
        "arguments".into(),
        Value::Array((&x.arguments).iter().map(|e| property_json(e)).collect()),
    );
    Value::Object(m)
}
fn create_super_stream_request_from(
    v: &Value,
) -> Result<CreateSuperStreamRequest<'static>, String> {
    let m = record(v, "CreateSuperStreamRequest")?;
    Ok(CreateSuperStreamRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        name: {
            let x = field(m, "name")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        partitions: list(field(m, "partitions")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(string(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
        binding_keys: list(field(m, "binding_keys")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(string(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
        arguments: list(field(m, "arguments")?)?
            .iter()
            .map(|e| Ok::<_, String>(property_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn create_super_stream_response_json(x: &CreateSuperStreamResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CreateSuperStreamResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn create_super_stream_response_from(v: &Value) -> Result<CreateSuperStreamResponse, String> {
    let m = record(v, "CreateSuperStreamResponse")?;
    Ok(CreateSuperStreamResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
fn delete_super_stream_request_json(x: &DeleteSuperStreamRequest<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeleteSuperStreamRequest".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert(
        "name".into(),
        x.name
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    Value::Object(m)
}
fn delete_super_stream_request_from(
    v: &Value,
) -> Result<DeleteSuperStreamRequest<'static>, String> {
    let m = record(v, "DeleteSuperStreamRequest")?;
    Ok(DeleteSuperStreamRequest {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        name: {
            let x = field(m, "name")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
    })
}
fn delete_super_stream_response_json(x: &DeleteSuperStreamResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DeleteSuperStreamResponse".into());
    m.insert(
        "correlation_id".into(),
        int((*&x.correlation_id).into(), 32),
    );
    m.insert("response_code".into(), int((*&x.response_code).into(), 16));
    Value::Object(m)
}
fn delete_super_stream_response_from(v: &Value) -> Result<DeleteSuperStreamResponse, String> {
    let m = record(v, "DeleteSuperStreamResponse")?;
    Ok(DeleteSuperStreamResponse {
        correlation_id: num::<u32>(field(m, "correlation_id")?)?,
        response_code: num::<u16>(field(m, "response_code")?)?,
    })
}
pub fn frame_json(f: &Frame<'_>) -> Value {
    match f {
        Frame::DeclarePublisherRequest(x) => declare_publisher_request_json(x),
        Frame::DeclarePublisherResponse(x) => declare_publisher_response_json(x),
        Frame::Publish(x) => publish_json(x),
        Frame::PublishV2(x) => publish_v2_json(x),
        Frame::PublishConfirm(x) => publish_confirm_json(x),
        Frame::PublishError(x) => publish_error_json(x),
        Frame::QueryPublisherSequenceRequest(x) => query_publisher_sequence_request_json(x),
        Frame::QueryPublisherSequenceResponse(x) => query_publisher_sequence_response_json(x),
        Frame::DeletePublisherRequest(x) => delete_publisher_request_json(x),
        Frame::DeletePublisherResponse(x) => delete_publisher_response_json(x),
        Frame::SubscribeRequest(x) => subscribe_request_json(x),
        Frame::SubscribeResponse(x) => subscribe_response_json(x),
        Frame::Deliver(x) => deliver_json(x),
        Frame::DeliverV2(x) => deliver_v2_json(x),
        Frame::CreditRequest(x) => credit_request_json(x),
        Frame::CreditResponse(x) => credit_response_json(x),
        Frame::StoreOffset(x) => store_offset_json(x),
        Frame::QueryOffsetRequest(x) => query_offset_request_json(x),
        Frame::QueryOffsetResponse(x) => query_offset_response_json(x),
        Frame::UnsubscribeRequest(x) => unsubscribe_request_json(x),
        Frame::UnsubscribeResponse(x) => unsubscribe_response_json(x),
        Frame::CreateRequest(x) => create_request_json(x),
        Frame::CreateResponse(x) => create_response_json(x),
        Frame::DeleteRequest(x) => delete_request_json(x),
        Frame::DeleteResponse(x) => delete_response_json(x),
        Frame::MetadataRequest(x) => metadata_request_json(x),
        Frame::MetadataResponse(x) => metadata_response_json(x),
        Frame::MetadataUpdate(x) => metadata_update_json(x),
        Frame::PeerPropertiesRequest(x) => peer_properties_request_json(x),
        Frame::PeerPropertiesResponse(x) => peer_properties_response_json(x),
        Frame::SaslHandshakeRequest(x) => sasl_handshake_request_json(x),
        Frame::SaslHandshakeResponse(x) => sasl_handshake_response_json(x),
        Frame::SaslAuthenticateRequest(x) => sasl_authenticate_request_json(x),
        Frame::SaslAuthenticateResponse(x) => sasl_authenticate_response_json(x),
        Frame::Tune(x) => tune_json(x),
        Frame::OpenRequest(x) => open_request_json(x),
        Frame::OpenResponse(x) => open_response_json(x),
        Frame::CloseRequest(x) => close_request_json(x),
        Frame::CloseResponse(x) => close_response_json(x),
        Frame::Heartbeat(x) => heartbeat_json(x),
        Frame::RouteRequest(x) => route_request_json(x),
        Frame::RouteResponse(x) => route_response_json(x),
        Frame::PartitionsRequest(x) => partitions_request_json(x),
        Frame::PartitionsResponse(x) => partitions_response_json(x),
        Frame::ConsumerUpdateRequest(x) => consumer_update_request_json(x),
        Frame::ConsumerUpdateResponse(x) => consumer_update_response_json(x),
        Frame::ExchangeCommandVersionsRequest(x) => exchange_command_versions_request_json(x),
        Frame::ExchangeCommandVersionsResponse(x) => exchange_command_versions_response_json(x),
        Frame::StreamStatsRequest(x) => stream_stats_request_json(x),
        Frame::StreamStatsResponse(x) => stream_stats_response_json(x),
        Frame::CreateSuperStreamRequest(x) => create_super_stream_request_json(x),
        Frame::CreateSuperStreamResponse(x) => create_super_stream_response_json(x),
        Frame::DeleteSuperStreamRequest(x) => delete_super_stream_request_json(x),
        Frame::DeleteSuperStreamResponse(x) => delete_super_stream_response_json(x),
    }
}
pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("DeclarePublisherRequest") => Ok(Frame::DeclarePublisherRequest(
            declare_publisher_request_from(v)?,
        )),
        Some("DeclarePublisherResponse") => Ok(Frame::DeclarePublisherResponse(
            declare_publisher_response_from(v)?,
        )),
        Some("Publish") => Ok(Frame::Publish(publish_from(v)?)),
        Some("PublishV2") => Ok(Frame::PublishV2(publish_v2_from(v)?)),
        Some("PublishConfirm") => Ok(Frame::PublishConfirm(publish_confirm_from(v)?)),
        Some("PublishError") => Ok(Frame::PublishError(publish_error_from(v)?)),
        Some("QueryPublisherSequenceRequest") => Ok(Frame::QueryPublisherSequenceRequest(
            query_publisher_sequence_request_from(v)?,
        )),
        Some("QueryPublisherSequenceResponse") => Ok(Frame::QueryPublisherSequenceResponse(
            query_publisher_sequence_response_from(v)?,
        )),
        Some("DeletePublisherRequest") => Ok(Frame::DeletePublisherRequest(
            delete_publisher_request_from(v)?,
        )),
        Some("DeletePublisherResponse") => Ok(Frame::DeletePublisherResponse(
            delete_publisher_response_from(v)?,
        )),
        Some("SubscribeRequest") => Ok(Frame::SubscribeRequest(subscribe_request_from(v)?)),
        Some("SubscribeResponse") => Ok(Frame::SubscribeResponse(subscribe_response_from(v)?)),
        Some("Deliver") => Ok(Frame::Deliver(deliver_from(v)?)),
        Some("DeliverV2") => Ok(Frame::DeliverV2(deliver_v2_from(v)?)),
        Some("CreditRequest") => Ok(Frame::CreditRequest(credit_request_from(v)?)),
        Some("CreditResponse") => Ok(Frame::CreditResponse(credit_response_from(v)?)),
        Some("StoreOffset") => Ok(Frame::StoreOffset(store_offset_from(v)?)),
        Some("QueryOffsetRequest") => Ok(Frame::QueryOffsetRequest(query_offset_request_from(v)?)),
        Some("QueryOffsetResponse") => {
            Ok(Frame::QueryOffsetResponse(query_offset_response_from(v)?))
        }
        Some("UnsubscribeRequest") => Ok(Frame::UnsubscribeRequest(unsubscribe_request_from(v)?)),
        Some("UnsubscribeResponse") => {
            Ok(Frame::UnsubscribeResponse(unsubscribe_response_from(v)?))
        }
        Some("CreateRequest") => Ok(Frame::CreateRequest(create_request_from(v)?)),
        Some("CreateResponse") => Ok(Frame::CreateResponse(create_response_from(v)?)),
        Some("DeleteRequest") => Ok(Frame::DeleteRequest(delete_request_from(v)?)),
        Some("DeleteResponse") => Ok(Frame::DeleteResponse(delete_response_from(v)?)),
        Some("MetadataRequest") => Ok(Frame::MetadataRequest(metadata_request_from(v)?)),
        Some("MetadataResponse") => Ok(Frame::MetadataResponse(metadata_response_from(v)?)),
        Some("MetadataUpdate") => Ok(Frame::MetadataUpdate(metadata_update_from(v)?)),
        Some("PeerPropertiesRequest") => Ok(Frame::PeerPropertiesRequest(
            peer_properties_request_from(v)?,
        )),
        Some("PeerPropertiesResponse") => Ok(Frame::PeerPropertiesResponse(
            peer_properties_response_from(v)?,
        )),
        Some("SaslHandshakeRequest") => {
            Ok(Frame::SaslHandshakeRequest(sasl_handshake_request_from(v)?))
        }
        Some("SaslHandshakeResponse") => Ok(Frame::SaslHandshakeResponse(
            sasl_handshake_response_from(v)?,
        )),
        Some("SaslAuthenticateRequest") => Ok(Frame::SaslAuthenticateRequest(
            sasl_authenticate_request_from(v)?,
        )),
        Some("SaslAuthenticateResponse") => Ok(Frame::SaslAuthenticateResponse(
            sasl_authenticate_response_from(v)?,
        )),
        Some("Tune") => Ok(Frame::Tune(tune_from(v)?)),
        Some("OpenRequest") => Ok(Frame::OpenRequest(open_request_from(v)?)),
        Some("OpenResponse") => Ok(Frame::OpenResponse(open_response_from(v)?)),
        Some("CloseRequest") => Ok(Frame::CloseRequest(close_request_from(v)?)),
        Some("CloseResponse") => Ok(Frame::CloseResponse(close_response_from(v)?)),
        Some("Heartbeat") => Ok(Frame::Heartbeat(heartbeat_from(v)?)),
        Some("RouteRequest") => Ok(Frame::RouteRequest(route_request_from(v)?)),
        Some("RouteResponse") => Ok(Frame::RouteResponse(route_response_from(v)?)),
        Some("PartitionsRequest") => Ok(Frame::PartitionsRequest(partitions_request_from(v)?)),
        Some("PartitionsResponse") => Ok(Frame::PartitionsResponse(partitions_response_from(v)?)),
        Some("ConsumerUpdateRequest") => Ok(Frame::ConsumerUpdateRequest(
            consumer_update_request_from(v)?,
        )),
        Some("ConsumerUpdateResponse") => Ok(Frame::ConsumerUpdateResponse(
            consumer_update_response_from(v)?,
        )),
        Some("ExchangeCommandVersionsRequest") => Ok(Frame::ExchangeCommandVersionsRequest(
            exchange_command_versions_request_from(v)?,
        )),
        Some("ExchangeCommandVersionsResponse") => Ok(Frame::ExchangeCommandVersionsResponse(
            exchange_command_versions_response_from(v)?,
        )),
        Some("StreamStatsRequest") => Ok(Frame::StreamStatsRequest(stream_stats_request_from(v)?)),
        Some("StreamStatsResponse") => {
            Ok(Frame::StreamStatsResponse(stream_stats_response_from(v)?))
        }
        Some("CreateSuperStreamRequest") => Ok(Frame::CreateSuperStreamRequest(
            create_super_stream_request_from(v)?,
        )),
        Some("CreateSuperStreamResponse") => Ok(Frame::CreateSuperStreamResponse(
            create_super_stream_response_from(v)?,
        )),
        Some("DeleteSuperStreamRequest") => Ok(Frame::DeleteSuperStreamRequest(
            delete_super_stream_request_from(v)?,
        )),
        Some("DeleteSuperStreamResponse") => Ok(Frame::DeleteSuperStreamResponse(
            delete_super_stream_response_from(v)?,
        )),
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
    let decoded = wirestream_rabbitmq_stream_v1::decode_with(data, ctx.as_ref(), sender);
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
    fn on_connection_declare_publisher_response(&mut self, _: &DeclarePublisherResponse) {
        self.0 = Some("on_connection_declare_publisher_response");
    }
    fn on_connection_publish_confirm(&mut self, _: &PublishConfirm) {
        self.0 = Some("on_connection_publish_confirm");
    }
    fn on_connection_publish_error(&mut self, _: &PublishError) {
        self.0 = Some("on_connection_publish_error");
    }
    fn on_connection_query_publisher_sequence_response(
        &mut self,
        _: &QueryPublisherSequenceResponse,
    ) {
        self.0 = Some("on_connection_query_publisher_sequence_response");
    }
    fn on_connection_delete_publisher_response(&mut self, _: &DeletePublisherResponse) {
        self.0 = Some("on_connection_delete_publisher_response");
    }
    fn on_connection_subscribe_response(&mut self, _: &SubscribeResponse) {
        self.0 = Some("on_connection_subscribe_response");
    }
    fn on_connection_deliver(&mut self, _: &Deliver<'_>) {
        self.0 = Some("on_connection_deliver");
    }
    fn on_connection_deliver_v2(&mut self, _: &DeliverV2<'_>) {
        self.0 = Some("on_connection_deliver_v2");
    }
    fn on_connection_credit_response(&mut self, _: &CreditResponse) {
        self.0 = Some("on_connection_credit_response");
    }
    fn on_connection_query_offset_response(&mut self, _: &QueryOffsetResponse) {
        self.0 = Some("on_connection_query_offset_response");
    }
    fn on_connection_unsubscribe_response(&mut self, _: &UnsubscribeResponse) {
        self.0 = Some("on_connection_unsubscribe_response");
    }
    fn on_connection_create_response(&mut self, _: &CreateResponse) {
        self.0 = Some("on_connection_create_response");
    }
    fn on_connection_delete_response(&mut self, _: &DeleteResponse) {
        self.0 = Some("on_connection_delete_response");
    }
    fn on_connection_metadata_response(&mut self, _: &MetadataResponse<'_>) {
        self.0 = Some("on_connection_metadata_response");
    }
    fn on_connection_metadata_update(&mut self, _: &MetadataUpdate<'_>) {
        self.0 = Some("on_connection_metadata_update");
    }
    fn on_connection_peer_properties_response(&mut self, _: &PeerPropertiesResponse<'_>) {
        self.0 = Some("on_connection_peer_properties_response");
    }
    fn on_connection_sasl_handshake_response(&mut self, _: &SaslHandshakeResponse<'_>) {
        self.0 = Some("on_connection_sasl_handshake_response");
    }
    fn on_connection_sasl_authenticate_response(&mut self, _: &SaslAuthenticateResponse<'_>) {
        self.0 = Some("on_connection_sasl_authenticate_response");
    }
    fn on_connection_tune(&mut self, _: &Tune) {
        self.0 = Some("on_connection_tune");
    }
    fn on_connection_open_response(&mut self, _: &OpenResponse<'_>) {
        self.0 = Some("on_connection_open_response");
    }
    fn on_connection_close_request(&mut self, _: &CloseRequest<'_>) {
        self.0 = Some("on_connection_close_request");
    }
    fn on_connection_close_response(&mut self, _: &CloseResponse) {
        self.0 = Some("on_connection_close_response");
    }
    fn on_connection_heartbeat(&mut self, _: &Heartbeat) {
        self.0 = Some("on_connection_heartbeat");
    }
    fn on_connection_route_response(&mut self, _: &RouteResponse<'_>) {
        self.0 = Some("on_connection_route_response");
    }
    fn on_connection_partitions_response(&mut self, _: &PartitionsResponse<'_>) {
        self.0 = Some("on_connection_partitions_response");
    }
    fn on_connection_consumer_update_request(&mut self, _: &ConsumerUpdateRequest) {
        self.0 = Some("on_connection_consumer_update_request");
    }
    fn on_connection_exchange_command_versions_response(
        &mut self,
        _: &ExchangeCommandVersionsResponse,
    ) {
        self.0 = Some("on_connection_exchange_command_versions_response");
    }
    fn on_connection_stream_stats_response(&mut self, _: &StreamStatsResponse<'_>) {
        self.0 = Some("on_connection_stream_stats_response");
    }
    fn on_connection_create_super_stream_response(&mut self, _: &CreateSuperStreamResponse) {
        self.0 = Some("on_connection_create_super_stream_response");
    }
    fn on_connection_delete_super_stream_response(&mut self, _: &DeleteSuperStreamResponse) {
        self.0 = Some("on_connection_delete_super_stream_response");
    }
}
impl machines::ConnectionServerHandlers for Recorder {
    fn on_connection_declare_publisher_request(&mut self, _: &DeclarePublisherRequest<'_>) {
        self.0 = Some("on_connection_declare_publisher_request");
    }
    fn on_connection_publish(&mut self, _: &Publish<'_>) {
        self.0 = Some("on_connection_publish");
    }
    fn on_connection_publish_v2(&mut self, _: &PublishV2<'_>) {
        self.0 = Some("on_connection_publish_v2");
    }
    fn on_connection_query_publisher_sequence_request(
        &mut self,
        _: &QueryPublisherSequenceRequest<'_>,
    ) {
        self.0 = Some("on_connection_query_publisher_sequence_request");
    }
    fn on_connection_delete_publisher_request(&mut self, _: &DeletePublisherRequest) {
        self.0 = Some("on_connection_delete_publisher_request");
    }
    fn on_connection_subscribe_request(&mut self, _: &SubscribeRequest<'_>) {
        self.0 = Some("on_connection_subscribe_request");
    }
    fn on_connection_credit_request(&mut self, _: &CreditRequest) {
        self.0 = Some("on_connection_credit_request");
    }
    fn on_connection_store_offset(&mut self, _: &StoreOffset<'_>) {
        self.0 = Some("on_connection_store_offset");
    }
    fn on_connection_query_offset_request(&mut self, _: &QueryOffsetRequest<'_>) {
        self.0 = Some("on_connection_query_offset_request");
    }
    fn on_connection_unsubscribe_request(&mut self, _: &UnsubscribeRequest) {
        self.0 = Some("on_connection_unsubscribe_request");
    }
    fn on_connection_create_request(&mut self, _: &CreateRequest<'_>) {
        self.0 = Some("on_connection_create_request");
    }
    fn on_connection_delete_request(&mut self, _: &DeleteRequest<'_>) {
        self.0 = Some("on_connection_delete_request");
    }
    fn on_connection_metadata_request(&mut self, _: &MetadataRequest<'_>) {
        self.0 = Some("on_connection_metadata_request");
    }
    fn on_connection_peer_properties_request(&mut self, _: &PeerPropertiesRequest<'_>) {
        self.0 = Some("on_connection_peer_properties_request");
    }
    fn on_connection_sasl_handshake_request(&mut self, _: &SaslHandshakeRequest) {
        self.0 = Some("on_connection_sasl_handshake_request");
    }
    fn on_connection_sasl_authenticate_request(&mut self, _: &SaslAuthenticateRequest<'_>) {
        self.0 = Some("on_connection_sasl_authenticate_request");
    }
    fn on_connection_tune(&mut self, _: &Tune) {
        self.0 = Some("on_connection_tune");
    }
    fn on_connection_open_request(&mut self, _: &OpenRequest<'_>) {
        self.0 = Some("on_connection_open_request");
    }
    fn on_connection_close_request(&mut self, _: &CloseRequest<'_>) {
        self.0 = Some("on_connection_close_request");
    }
    fn on_connection_close_response(&mut self, _: &CloseResponse) {
        self.0 = Some("on_connection_close_response");
    }
    fn on_connection_heartbeat(&mut self, _: &Heartbeat) {
        self.0 = Some("on_connection_heartbeat");
    }
    fn on_connection_route_request(&mut self, _: &RouteRequest<'_>) {
        self.0 = Some("on_connection_route_request");
    }
    fn on_connection_partitions_request(&mut self, _: &PartitionsRequest<'_>) {
        self.0 = Some("on_connection_partitions_request");
    }
    fn on_connection_consumer_update_response(&mut self, _: &ConsumerUpdateResponse) {
        self.0 = Some("on_connection_consumer_update_response");
    }
    fn on_connection_exchange_command_versions_request(
        &mut self,
        _: &ExchangeCommandVersionsRequest,
    ) {
        self.0 = Some("on_connection_exchange_command_versions_request");
    }
    fn on_connection_stream_stats_request(&mut self, _: &StreamStatsRequest<'_>) {
        self.0 = Some("on_connection_stream_stats_request");
    }
    fn on_connection_create_super_stream_request(&mut self, _: &CreateSuperStreamRequest<'_>) {
        self.0 = Some("on_connection_create_super_stream_request");
    }
    fn on_connection_delete_super_stream_request(&mut self, _: &DeleteSuperStreamRequest<'_>) {
        self.0 = Some("on_connection_delete_super_stream_request");
    }
}
impl machines::PublisherClientHandlers for Recorder {
    fn on_publisher_declare_publisher_response(&mut self, _: &DeclarePublisherResponse) {
        self.0 = Some("on_publisher_declare_publisher_response");
    }
    fn on_publisher_publish_confirm(&mut self, _: &PublishConfirm) {
        self.0 = Some("on_publisher_publish_confirm");
    }
    fn on_publisher_publish_error(&mut self, _: &PublishError) {
        self.0 = Some("on_publisher_publish_error");
    }
    fn on_publisher_delete_publisher_response(&mut self, _: &DeletePublisherResponse) {
        self.0 = Some("on_publisher_delete_publisher_response");
    }
    fn on_publisher_metadata_update(&mut self, _: &MetadataUpdate<'_>) {
        self.0 = Some("on_publisher_metadata_update");
    }
}
impl machines::PublisherServerHandlers for Recorder {
    fn on_publisher_declare_publisher_request(&mut self, _: &DeclarePublisherRequest<'_>) {
        self.0 = Some("on_publisher_declare_publisher_request");
    }
    fn on_publisher_publish(&mut self, _: &Publish<'_>) {
        self.0 = Some("on_publisher_publish");
    }
    fn on_publisher_publish_v2(&mut self, _: &PublishV2<'_>) {
        self.0 = Some("on_publisher_publish_v2");
    }
    fn on_publisher_delete_publisher_request(&mut self, _: &DeletePublisherRequest) {
        self.0 = Some("on_publisher_delete_publisher_request");
    }
}
impl machines::SubscriptionClientHandlers for Recorder {
    fn on_subscription_subscribe_response(&mut self, _: &SubscribeResponse) {
        self.0 = Some("on_subscription_subscribe_response");
    }
    fn on_subscription_deliver(&mut self, _: &Deliver<'_>) {
        self.0 = Some("on_subscription_deliver");
    }
    fn on_subscription_deliver_v2(&mut self, _: &DeliverV2<'_>) {
        self.0 = Some("on_subscription_deliver_v2");
    }
    fn on_subscription_credit_response(&mut self, _: &CreditResponse) {
        self.0 = Some("on_subscription_credit_response");
    }
    fn on_subscription_unsubscribe_response(&mut self, _: &UnsubscribeResponse) {
        self.0 = Some("on_subscription_unsubscribe_response");
    }
    fn on_subscription_metadata_update(&mut self, _: &MetadataUpdate<'_>) {
        self.0 = Some("on_subscription_metadata_update");
    }
    fn on_subscription_consumer_update_request(&mut self, _: &ConsumerUpdateRequest) {
        self.0 = Some("on_subscription_consumer_update_request");
    }
}
impl machines::SubscriptionServerHandlers for Recorder {
    fn on_subscription_subscribe_request(&mut self, _: &SubscribeRequest<'_>) {
        self.0 = Some("on_subscription_subscribe_request");
    }
    fn on_subscription_credit_request(&mut self, _: &CreditRequest) {
        self.0 = Some("on_subscription_credit_request");
    }
    fn on_subscription_unsubscribe_request(&mut self, _: &UnsubscribeRequest) {
        self.0 = Some("on_subscription_unsubscribe_request");
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
    let frame = wirestream_rabbitmq_stream_v1::decode_with(data, ctx.as_ref(), sender)
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
        "PublisherMachine" => {
            let role = machines::PublisherRole::from_name(role).ok_or("no such role")?;
            let state = machines::PublisherState::from_value(state).ok_or("no such state")?;
            let mut machine = machines::PublisherMachine::with_state(role, state);
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
            let mut again = machines::PublisherMachine::with_state(role, state);
            let dispatched = match role {
                machines::PublisherRole::Client => again.dispatch_client(&frame, &mut recorder),
                machines::PublisherRole::Server => again.dispatch_server(&frame, &mut recorder),
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
                machines::SubscriptionRole::Client => again.dispatch_client(&frame, &mut recorder),
                machines::SubscriptionRole::Server => again.dispatch_server(&frame, &mut recorder),
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
