//! The corpus's JSON form of wirestream-postgresql-v3's frames.
#![allow(
    clippy::all,
    unused_parens,
    unused_braces,
    unused_variables,
    unused_mut
)]
use crate::json::*;
use serde_json::{Map, Value};
use wirestream_postgresql_v3::*;
fn parameter_json(x: &Parameter<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Parameter".into());
    m.insert("name".into(), Value::String((*&x.name).into()));
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn parameter_from(v: &Value) -> Result<Parameter<'static>, String> {
    let m = record(v, "Parameter")?;
    Ok(Parameter {
        name: string(field(m, "name")?)?,
        value: string(field(m, "value")?)?,
    })
}
fn field_json(x: &Field<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Field".into());
    m.insert("code".into(), int((*&x.code).into(), 8));
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn field_from(v: &Value) -> Result<Field<'static>, String> {
    let m = record(v, "Field")?;
    Ok(Field {
        code: num::<u8>(field(m, "code")?)?,
        value: string(field(m, "value")?)?,
    })
}
fn field_description_json(x: &FieldDescription<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "FieldDescription".into());
    m.insert("name".into(), Value::String((*&x.name).into()));
    m.insert("table_oid".into(), int((*&x.table_oid).into(), 32));
    m.insert("column_number".into(), int((*&x.column_number).into(), 16));
    m.insert("type_oid".into(), int((*&x.type_oid).into(), 32));
    m.insert("type_size".into(), int((*&x.type_size).into(), 16));
    m.insert("type_modifier".into(), int((*&x.type_modifier).into(), 32));
    m.insert("format".into(), int((*&x.format as u16).into(), 16));
    Value::Object(m)
}
fn field_description_from(v: &Value) -> Result<FieldDescription<'static>, String> {
    let m = record(v, "FieldDescription")?;
    Ok(FieldDescription {
        name: string(field(m, "name")?)?,
        table_oid: num::<u32>(field(m, "table_oid")?)?,
        column_number: num::<i16>(field(m, "column_number")?)?,
        type_oid: num::<u32>(field(m, "type_oid")?)?,
        type_size: num::<i16>(field(m, "type_size")?)?,
        type_modifier: num::<i32>(field(m, "type_modifier")?)?,
        format: FormatCode::from_code(num::<u16>(field(m, "format")?)?)
            .ok_or("not a member of FormatCode")?,
    })
}
fn startup_message_json(x: &StartupMessage<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "StartupMessage".into());
    m.insert(
        "parameters".into(),
        Value::Array((&x.parameters).iter().map(|e| parameter_json(e)).collect()),
    );
    Value::Object(m)
}
fn startup_message_from(v: &Value) -> Result<StartupMessage<'static>, String> {
    let m = record(v, "StartupMessage")?;
    Ok(StartupMessage {
        parameters: list(field(m, "parameters")?)?
            .iter()
            .map(|e| Ok::<_, String>(parameter_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn ssl_request_json(x: &SslRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "SslRequest".into());
    Value::Object(m)
}
fn ssl_request_from(v: &Value) -> Result<SslRequest, String> {
    let m = record(v, "SslRequest")?;
    Ok(SslRequest {})
}
fn gssenc_request_json(x: &GssencRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "GssencRequest".into());
    Value::Object(m)
}
fn gssenc_request_from(v: &Value) -> Result<GssencRequest, String> {
    let m = record(v, "GssencRequest")?;
    Ok(GssencRequest {})
}
fn cancel_request_json(x: &CancelRequest) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CancelRequest".into());
    m.insert("process_id".into(), int((*&x.process_id).into(), 32));
    m.insert("secret_key".into(), int((*&x.secret_key).into(), 32));
    Value::Object(m)
}
fn cancel_request_from(v: &Value) -> Result<CancelRequest, String> {
    let m = record(v, "CancelRequest")?;
    Ok(CancelRequest {
        process_id: num::<u32>(field(m, "process_id")?)?,
        secret_key: num::<u32>(field(m, "secret_key")?)?,
    })
}
fn authentication_json(x: &Authentication<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Authentication".into());
    m.insert("auth_type".into(), int((*&x.auth_type as u32).into(), 32));
    m.insert(
        "salt".into(),
        x.salt.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert(
        "mechanisms".into(),
        x.mechanisms.as_ref().map_or(Value::Null, |v| {
            Value::Array((v).iter().map(|e| Value::String((*e).into())).collect())
        }),
    );
    m.insert(
        "data".into(),
        x.data.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn authentication_from(v: &Value) -> Result<Authentication<'static>, String> {
    let m = record(v, "Authentication")?;
    Ok(Authentication {
        auth_type: AuthType::from_code(num::<u32>(field(m, "auth_type")?)?)
            .ok_or("not a member of AuthType")?,
        salt: {
            let x = field(m, "salt")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        mechanisms: {
            let x = field(m, "mechanisms")?;
            if x.is_null() {
                None
            } else {
                Some(
                    list(x)?
                        .iter()
                        .map(|e| Ok::<_, String>(string(e)?))
                        .collect::<Result<Vec<_>, String>>()?,
                )
            }
        },
        data: {
            let x = field(m, "data")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn backend_key_data_json(x: &BackendKeyData) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "BackendKeyData".into());
    m.insert("process_id".into(), int((*&x.process_id).into(), 32));
    m.insert("secret_key".into(), int((*&x.secret_key).into(), 32));
    Value::Object(m)
}
fn backend_key_data_from(v: &Value) -> Result<BackendKeyData, String> {
    let m = record(v, "BackendKeyData")?;
    Ok(BackendKeyData {
        process_id: num::<u32>(field(m, "process_id")?)?,
        secret_key: num::<u32>(field(m, "secret_key")?)?,
    })
}
fn bind_complete_json(x: &BindComplete) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "BindComplete".into());
    Value::Object(m)
}
fn bind_complete_from(v: &Value) -> Result<BindComplete, String> {
    let m = record(v, "BindComplete")?;
    Ok(BindComplete {})
}
fn close_complete_json(x: &CloseComplete) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CloseComplete".into());
    Value::Object(m)
}
fn close_complete_from(v: &Value) -> Result<CloseComplete, String> {
    let m = record(v, "CloseComplete")?;
    Ok(CloseComplete {})
}
fn command_complete_json(x: &CommandComplete<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CommandComplete".into());
    m.insert("tag".into(), Value::String((*&x.tag).into()));
    Value::Object(m)
}
fn command_complete_from(v: &Value) -> Result<CommandComplete<'static>, String> {
    let m = record(v, "CommandComplete")?;
    Ok(CommandComplete {
        tag: string(field(m, "tag")?)?,
    })
}
fn copy_in_response_json(x: &CopyInResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CopyInResponse".into());
    m.insert("format".into(), int((*&x.format as u8).into(), 8));
    m.insert(
        "column_formats".into(),
        Value::Array(
            (&x.column_formats)
                .iter()
                .map(|e| int((*e as u16).into(), 16))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn copy_in_response_from(v: &Value) -> Result<CopyInResponse, String> {
    let m = record(v, "CopyInResponse")?;
    Ok(CopyInResponse {
        format: CopyFormat::from_code(num::<u8>(field(m, "format")?)?)
            .ok_or("not a member of CopyFormat")?,
        column_formats: list(field(m, "column_formats")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    FormatCode::from_code(num::<u16>(e)?).ok_or("not a member of FormatCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn copy_out_response_json(x: &CopyOutResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CopyOutResponse".into());
    m.insert("format".into(), int((*&x.format as u8).into(), 8));
    m.insert(
        "column_formats".into(),
        Value::Array(
            (&x.column_formats)
                .iter()
                .map(|e| int((*e as u16).into(), 16))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn copy_out_response_from(v: &Value) -> Result<CopyOutResponse, String> {
    let m = record(v, "CopyOutResponse")?;
    Ok(CopyOutResponse {
        format: CopyFormat::from_code(num::<u8>(field(m, "format")?)?)
            .ok_or("not a member of CopyFormat")?,
        column_formats: list(field(m, "column_formats")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    FormatCode::from_code(num::<u16>(e)?).ok_or("not a member of FormatCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn copy_both_response_json(x: &CopyBothResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CopyBothResponse".into());
    m.insert("format".into(), int((*&x.format as u8).into(), 8));
    m.insert(
        "column_formats".into(),
        Value::Array(
            (&x.column_formats)
                .iter()
                .map(|e| int((*e as u16).into(), 16))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn copy_both_response_from(v: &Value) -> Result<CopyBothResponse, String> {
    let m = record(v, "CopyBothResponse")?;
    Ok(CopyBothResponse {
        format: CopyFormat::from_code(num::<u8>(field(m, "format")?)?)
            .ok_or("not a member of CopyFormat")?,
        column_formats: list(field(m, "column_formats")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    FormatCode::from_code(num::<u16>(e)?).ok_or("not a member of FormatCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn data_row_json(x: &DataRow<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "DataRow".into());
    m.insert(
        "values".into(),
        Value::Array(
            (&x.values)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| hex_json(&x)))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn data_row_from(v: &Value) -> Result<DataRow<'static>, String> {
    let m = record(v, "DataRow")?;
    Ok(DataRow {
        values: list(field(m, "values")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(bytes(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn empty_query_response_json(x: &EmptyQueryResponse) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "EmptyQueryResponse".into());
    Value::Object(m)
}
fn empty_query_response_from(v: &Value) -> Result<EmptyQueryResponse, String> {
    let m = record(v, "EmptyQueryResponse")?;
    Ok(EmptyQueryResponse {})
}
fn error_response_json(x: &ErrorResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ErrorResponse".into());
    m.insert(
        "fields".into(),
        Value::Array((&x.fields).iter().map(|e| field_json(e)).collect()),
    );
    Value::Object(m)
}
fn error_response_from(v: &Value) -> Result<ErrorResponse<'static>, String> {
    let m = record(v, "ErrorResponse")?;
    Ok(ErrorResponse {
        fields: list(field(m, "fields")?)?
            .iter()
            .map(|e| Ok::<_, String>(field_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn function_call_response_json(x: &FunctionCallResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "FunctionCallResponse".into());
    m.insert(
        "result".into(),
        x.result.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn function_call_response_from(v: &Value) -> Result<FunctionCallResponse<'static>, String> {
    let m = record(v, "FunctionCallResponse")?;
    Ok(FunctionCallResponse {
        result: {
            let x = field(m, "result")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn negotiate_protocol_version_json(x: &NegotiateProtocolVersion<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "NegotiateProtocolVersion".into());
    m.insert(
        "newest_version".into(),
        int((*&x.newest_version).into(), 32),
    );
    m.insert(
        "unrecognized".into(),
        Value::Array(
            (&x.unrecognized)
                .iter()
                .map(|e| Value::String((*e).into()))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn negotiate_protocol_version_from(v: &Value) -> Result<NegotiateProtocolVersion<'static>, String> {
    let m = record(v, "NegotiateProtocolVersion")?;
    Ok(NegotiateProtocolVersion {
        newest_version: num::<u32>(field(m, "newest_version")?)?,
        unrecognized: list(field(m, "unrecognized")?)?
            .iter()
            .map(|e| Ok::<_, String>(string(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn no_data_json(x: &NoData) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "NoData".into());
    Value::Object(m)
}
fn no_data_from(v: &Value) -> Result<NoData, String> {
    let m = record(v, "NoData")?;
    Ok(NoData {})
}
fn notice_response_json(x: &NoticeResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "NoticeResponse".into());
    m.insert(
        "fields".into(),
        Value::Array((&x.fields).iter().map(|e| field_json(e)).collect()),
    );
    Value::Object(m)
}
fn notice_response_from(v: &Value) -> Result<NoticeResponse<'static>, String> {
    let m = record(v, "NoticeResponse")?;
    Ok(NoticeResponse {
        fields: list(field(m, "fields")?)?
            .iter()
            .map(|e| Ok::<_, String>(field_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn notification_response_json(x: &NotificationResponse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "NotificationResponse".into());
    m.insert("process_id".into(), int((*&x.process_id).into(), 32));
    m.insert("channel".into(), Value::String((*&x.channel).into()));
    m.insert("payload".into(), Value::String((*&x.payload).into()));
    Value::Object(m)
}
fn notification_response_from(v: &Value) -> Result<NotificationResponse<'static>, String> {
    let m = record(v, "NotificationResponse")?;
    Ok(NotificationResponse {
        process_id: num::<u32>(field(m, "process_id")?)?,
        channel: string(field(m, "channel")?)?,
        payload: string(field(m, "payload")?)?,
    })
}
fn parameter_description_json(x: &ParameterDescription) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ParameterDescription".into());
    m.insert(
        "type_oids".into(),
        Value::Array(
            (&x.type_oids)
                .iter()
                .map(|e| int((*e).into(), 32))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn parameter_description_from(v: &Value) -> Result<ParameterDescription, String> {
    let m = record(v, "ParameterDescription")?;
    Ok(ParameterDescription {
        type_oids: list(field(m, "type_oids")?)?
            .iter()
            .map(|e| Ok::<_, String>(num::<u32>(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn parameter_status_json(x: &ParameterStatus<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ParameterStatus".into());
    m.insert("name".into(), Value::String((*&x.name).into()));
    m.insert("value".into(), Value::String((*&x.value).into()));
    Value::Object(m)
}
fn parameter_status_from(v: &Value) -> Result<ParameterStatus<'static>, String> {
    let m = record(v, "ParameterStatus")?;
    Ok(ParameterStatus {
        name: string(field(m, "name")?)?,
        value: string(field(m, "value")?)?,
    })
}
fn parse_complete_json(x: &ParseComplete) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ParseComplete".into());
    Value::Object(m)
}
fn parse_complete_from(v: &Value) -> Result<ParseComplete, String> {
    let m = record(v, "ParseComplete")?;
    Ok(ParseComplete {})
}
fn portal_suspended_json(x: &PortalSuspended) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "PortalSuspended".into());
    Value::Object(m)
}
fn portal_suspended_from(v: &Value) -> Result<PortalSuspended, String> {
    let m = record(v, "PortalSuspended")?;
    Ok(PortalSuspended {})
}
fn ready_for_query_json(x: &ReadyForQuery) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "ReadyForQuery".into());
    m.insert("status".into(), int((*&x.status as u8).into(), 8));
    Value::Object(m)
}
fn ready_for_query_from(v: &Value) -> Result<ReadyForQuery, String> {
    let m = record(v, "ReadyForQuery")?;
    Ok(ReadyForQuery {
        status: TransactionStatus::from_code(num::<u8>(field(m, "status")?)?)
            .ok_or("not a member of TransactionStatus")?,
    })
}
fn row_description_json(x: &RowDescription<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "RowDescription".into());
    m.insert(
        "fields".into(),
        Value::Array(
            (&x.fields)
                .iter()
                .map(|e| field_description_json(e))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn row_description_from(v: &Value) -> Result<RowDescription<'static>, String> {
    let m = record(v, "RowDescription")?;
    Ok(RowDescription {
        fields: list(field(m, "fields")?)?
            .iter()
            .map(|e| Ok::<_, String>(field_description_from(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn copy_data_json(x: &CopyData<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CopyData".into());
    m.insert("data".into(), hex_json(&x.data));
    Value::Object(m)
}
fn copy_data_from(v: &Value) -> Result<CopyData<'static>, String> {
    let m = record(v, "CopyData")?;
    Ok(CopyData {
        data: bytes(field(m, "data")?)?,
    })
}
fn copy_done_json(x: &CopyDone) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CopyDone".into());
    Value::Object(m)
}
fn copy_done_from(v: &Value) -> Result<CopyDone, String> {
    let m = record(v, "CopyDone")?;
    Ok(CopyDone {})
}
fn bind_json(x: &Bind<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Bind".into());
    m.insert("portal".into(), Value::String((*&x.portal).into()));
    m.insert("statement".into(), Value::String((*&x.statement).into()));
    m.insert(
        "parameter_formats".into(),
        Value::Array(
            (&x.parameter_formats)
                .iter()
                .map(|e| int((*e as u16).into(), 16))
                .collect(),
        ),
    );
    m.insert(
        "parameters".into(),
        Value::Array(
            (&x.parameters)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| hex_json(&x)))
                .collect(),
        ),
    );
    m.insert(
        "result_formats".into(),
        Value::Array(
            (&x.result_formats)
                .iter()
                .map(|e| int((*e as u16).into(), 16))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn bind_from(v: &Value) -> Result<Bind<'static>, String> {
    let m = record(v, "Bind")?;
    Ok(Bind {
        portal: string(field(m, "portal")?)?,
        statement: string(field(m, "statement")?)?,
        parameter_formats: list(field(m, "parameter_formats")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    FormatCode::from_code(num::<u16>(e)?).ok_or("not a member of FormatCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
        parameters: list(field(m, "parameters")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(bytes(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
        result_formats: list(field(m, "result_formats")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    FormatCode::from_code(num::<u16>(e)?).ok_or("not a member of FormatCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn close_json(x: &Close<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Close".into());
    m.insert("target".into(), int((*&x.target as u8).into(), 8));
    m.insert("name".into(), Value::String((*&x.name).into()));
    Value::Object(m)
}
fn close_from(v: &Value) -> Result<Close<'static>, String> {
    let m = record(v, "Close")?;
    Ok(Close {
        target: Target::from_code(num::<u8>(field(m, "target")?)?)
            .ok_or("not a member of Target")?,
        name: string(field(m, "name")?)?,
    })
}
fn copy_fail_json(x: &CopyFail<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "CopyFail".into());
    m.insert("message".into(), Value::String((*&x.message).into()));
    Value::Object(m)
}
fn copy_fail_from(v: &Value) -> Result<CopyFail<'static>, String> {
    let m = record(v, "CopyFail")?;
    Ok(CopyFail {
        message: string(field(m, "message")?)?,
    })
}
fn describe_json(x: &Describe<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Describe".into());
    m.insert("target".into(), int((*&x.target as u8).into(), 8));
    m.insert("name".into(), Value::String((*&x.name).into()));
    Value::Object(m)
}
fn describe_from(v: &Value) -> Result<Describe<'static>, String> {
    let m = record(v, "Describe")?;
    Ok(Describe {
        target: Target::from_code(num::<u8>(field(m, "target")?)?)
            .ok_or("not a member of Target")?,
        name: string(field(m, "name")?)?,
    })
}
fn execute_json(x: &Execute<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Execute".into());
    m.insert("portal".into(), Value::String((*&x.portal).into()));
    m.insert("max_rows".into(), int((*&x.max_rows).into(), 32));
    Value::Object(m)
}
fn execute_from(v: &Value) -> Result<Execute<'static>, String> {
    let m = record(v, "Execute")?;
    Ok(Execute {
        portal: string(field(m, "portal")?)?,
        max_rows: num::<u32>(field(m, "max_rows")?)?,
    })
}
fn flush_json(x: &Flush) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Flush".into());
    Value::Object(m)
}
fn flush_from(v: &Value) -> Result<Flush, String> {
    let m = record(v, "Flush")?;
    Ok(Flush {})
}
fn function_call_json(x: &FunctionCall<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "FunctionCall".into());
    m.insert("function_oid".into(), int((*&x.function_oid).into(), 32));
    m.insert(
        "argument_formats".into(),
        Value::Array(
            (&x.argument_formats)
                .iter()
                .map(|e| int((*e as u16).into(), 16))
                .collect(),
        ),
    );
    m.insert(
        "arguments".into(),
        Value::Array(
            (&x.arguments)
                .iter()
                .map(|e| e.map_or(Value::Null, |x| hex_json(&x)))
                .collect(),
        ),
    );
    m.insert(
        "result_format".into(),
        int((*&x.result_format as u16).into(), 16),
    );
    Value::Object(m)
}
fn function_call_from(v: &Value) -> Result<FunctionCall<'static>, String> {
    let m = record(v, "FunctionCall")?;
    Ok(FunctionCall {
        function_oid: num::<u32>(field(m, "function_oid")?)?,
        argument_formats: list(field(m, "argument_formats")?)?
            .iter()
            .map(|e| {
                Ok::<_, String>(
                    FormatCode::from_code(num::<u16>(e)?).ok_or("not a member of FormatCode")?,
                )
            })
            .collect::<Result<Vec<_>, String>>()?,
        arguments: list(field(m, "arguments")?)?
            .iter()
            .map(|e| Ok::<_, String>(if e.is_null() { None } else { Some(bytes(e)?) }))
            .collect::<Result<Vec<_>, String>>()?,
        result_format: FormatCode::from_code(num::<u16>(field(m, "result_format")?)?)
            .ok_or("not a member of FormatCode")?,
    })
}
fn parse_json(x: &Parse<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Parse".into());
    m.insert("statement".into(), Value::String((*&x.statement).into()));
    m.insert("query".into(), Value::String((*&x.query).into()));
    m.insert(
        "parameter_types".into(),
        Value::Array(
            (&x.parameter_types)
                .iter()
                .map(|e| int((*e).into(), 32))
                .collect(),
        ),
    );
    Value::Object(m)
}
fn parse_from(v: &Value) -> Result<Parse<'static>, String> {
    let m = record(v, "Parse")?;
    Ok(Parse {
        statement: string(field(m, "statement")?)?,
        query: string(field(m, "query")?)?,
        parameter_types: list(field(m, "parameter_types")?)?
            .iter()
            .map(|e| Ok::<_, String>(num::<u32>(e)?))
            .collect::<Result<Vec<_>, String>>()?,
    })
}
fn password_json(x: &Password<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Password".into());
    m.insert(
        "password".into(),
        x.password
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "mechanism".into(),
        x.mechanism
            .as_ref()
            .map_or(Value::Null, |v| Value::String((*v).into())),
    );
    m.insert(
        "initial_response".into(),
        x.initial_response
            .as_ref()
            .map_or(Value::Null, |v| hex_json(v)),
    );
    m.insert(
        "data".into(),
        x.data.as_ref().map_or(Value::Null, |v| hex_json(v)),
    );
    Value::Object(m)
}
fn password_from(v: &Value) -> Result<Password<'static>, String> {
    let m = record(v, "Password")?;
    Ok(Password {
        password: {
            let x = field(m, "password")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        mechanism: {
            let x = field(m, "mechanism")?;
            if x.is_null() {
                None
            } else {
                Some(string(x)?)
            }
        },
        initial_response: {
            let x = field(m, "initial_response")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
        data: {
            let x = field(m, "data")?;
            if x.is_null() {
                None
            } else {
                Some(bytes(x)?)
            }
        },
    })
}
fn query_json(x: &Query<'_>) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Query".into());
    m.insert("query".into(), Value::String((*&x.query).into()));
    Value::Object(m)
}
fn query_from(v: &Value) -> Result<Query<'static>, String> {
    let m = record(v, "Query")?;
    Ok(Query {
        query: string(field(m, "query")?)?,
    })
}
fn sync_json(x: &Sync) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Sync".into());
    Value::Object(m)
}
fn sync_from(v: &Value) -> Result<Sync, String> {
    let m = record(v, "Sync")?;
    Ok(Sync {})
}
fn terminate_json(x: &Terminate) -> Value {
    let mut m = Map::new();
    m.insert("$type".into(), "Terminate".into());
    Value::Object(m)
}
fn terminate_from(v: &Value) -> Result<Terminate, String> {
    let m = record(v, "Terminate")?;
    Ok(Terminate {})
}
pub fn frame_json(f: &Frame<'_>) -> Value {
    match f {
        Frame::StartupMessage(x) => startup_message_json(x),
        Frame::SslRequest(x) => ssl_request_json(x),
        Frame::GssencRequest(x) => gssenc_request_json(x),
        Frame::CancelRequest(x) => cancel_request_json(x),
        Frame::Authentication(x) => authentication_json(x),
        Frame::BackendKeyData(x) => backend_key_data_json(x),
        Frame::BindComplete(x) => bind_complete_json(x),
        Frame::CloseComplete(x) => close_complete_json(x),
        Frame::CommandComplete(x) => command_complete_json(x),
        Frame::CopyInResponse(x) => copy_in_response_json(x),
        Frame::CopyOutResponse(x) => copy_out_response_json(x),
        Frame::CopyBothResponse(x) => copy_both_response_json(x),
        Frame::DataRow(x) => data_row_json(x),
        Frame::EmptyQueryResponse(x) => empty_query_response_json(x),
        Frame::ErrorResponse(x) => error_response_json(x),
        Frame::FunctionCallResponse(x) => function_call_response_json(x),
        Frame::NegotiateProtocolVersion(x) => negotiate_protocol_version_json(x),
        Frame::NoData(x) => no_data_json(x),
        Frame::NoticeResponse(x) => notice_response_json(x),
        Frame::NotificationResponse(x) => notification_response_json(x),
        Frame::ParameterDescription(x) => parameter_description_json(x),
        Frame::ParameterStatus(x) => parameter_status_json(x),
        Frame::ParseComplete(x) => parse_complete_json(x),
        Frame::PortalSuspended(x) => portal_suspended_json(x),
        Frame::ReadyForQuery(x) => ready_for_query_json(x),
        Frame::RowDescription(x) => row_description_json(x),
        Frame::CopyData(x) => copy_data_json(x),
        Frame::CopyDone(x) => copy_done_json(x),
        Frame::Bind(x) => bind_json(x),
        Frame::Close(x) => close_json(x),
        Frame::CopyFail(x) => copy_fail_json(x),
        Frame::Describe(x) => describe_json(x),
        Frame::Execute(x) => execute_json(x),
        Frame::Flush(x) => flush_json(x),
        Frame::FunctionCall(x) => function_call_json(x),
        Frame::Parse(x) => parse_json(x),
        Frame::Password(x) => password_json(x),
        Frame::Query(x) => query_json(x),
        Frame::Sync(x) => sync_json(x),
        Frame::Terminate(x) => terminate_json(x),
    }
}
pub fn frame_from(v: &Value) -> Result<Frame<'static>, String> {
    match v.get("$type").and_then(Value::as_str) {
        Some("StartupMessage") => Ok(Frame::StartupMessage(startup_message_from(v)?)),
        Some("SslRequest") => Ok(Frame::SslRequest(ssl_request_from(v)?)),
        Some("GssencRequest") => Ok(Frame::GssencRequest(gssenc_request_from(v)?)),
        Some("CancelRequest") => Ok(Frame::CancelRequest(cancel_request_from(v)?)),
        Some("Authentication") => Ok(Frame::Authentication(authentication_from(v)?)),
        Some("BackendKeyData") => Ok(Frame::BackendKeyData(backend_key_data_from(v)?)),
        Some("BindComplete") => Ok(Frame::BindComplete(bind_complete_from(v)?)),
        Some("CloseComplete") => Ok(Frame::CloseComplete(close_complete_from(v)?)),
        Some("CommandComplete") => Ok(Frame::CommandComplete(command_complete_from(v)?)),
        Some("CopyInResponse") => Ok(Frame::CopyInResponse(copy_in_response_from(v)?)),
        Some("CopyOutResponse") => Ok(Frame::CopyOutResponse(copy_out_response_from(v)?)),
        Some("CopyBothResponse") => Ok(Frame::CopyBothResponse(copy_both_response_from(v)?)),
        Some("DataRow") => Ok(Frame::DataRow(data_row_from(v)?)),
        Some("EmptyQueryResponse") => Ok(Frame::EmptyQueryResponse(empty_query_response_from(v)?)),
        Some("ErrorResponse") => Ok(Frame::ErrorResponse(error_response_from(v)?)),
        Some("FunctionCallResponse") => {
            Ok(Frame::FunctionCallResponse(function_call_response_from(v)?))
        }
        Some("NegotiateProtocolVersion") => Ok(Frame::NegotiateProtocolVersion(
            negotiate_protocol_version_from(v)?,
        )),
        Some("NoData") => Ok(Frame::NoData(no_data_from(v)?)),
        Some("NoticeResponse") => Ok(Frame::NoticeResponse(notice_response_from(v)?)),
        Some("NotificationResponse") => {
            Ok(Frame::NotificationResponse(notification_response_from(v)?))
        }
        Some("ParameterDescription") => {
            Ok(Frame::ParameterDescription(parameter_description_from(v)?))
        }
        Some("ParameterStatus") => Ok(Frame::ParameterStatus(parameter_status_from(v)?)),
        Some("ParseComplete") => Ok(Frame::ParseComplete(parse_complete_from(v)?)),
        Some("PortalSuspended") => Ok(Frame::PortalSuspended(portal_suspended_from(v)?)),
        Some("ReadyForQuery") => Ok(Frame::ReadyForQuery(ready_for_query_from(v)?)),
        Some("RowDescription") => Ok(Frame::RowDescription(row_description_from(v)?)),
        Some("CopyData") => Ok(Frame::CopyData(copy_data_from(v)?)),
        Some("CopyDone") => Ok(Frame::CopyDone(copy_done_from(v)?)),
        Some("Bind") => Ok(Frame::Bind(bind_from(v)?)),
        Some("Close") => Ok(Frame::Close(close_from(v)?)),
        Some("CopyFail") => Ok(Frame::CopyFail(copy_fail_from(v)?)),
        Some("Describe") => Ok(Frame::Describe(describe_from(v)?)),
        Some("Execute") => Ok(Frame::Execute(execute_from(v)?)),
        Some("Flush") => Ok(Frame::Flush(flush_from(v)?)),
        Some("FunctionCall") => Ok(Frame::FunctionCall(function_call_from(v)?)),
        Some("Parse") => Ok(Frame::Parse(parse_from(v)?)),
        Some("Password") => Ok(Frame::Password(password_from(v)?)),
        Some("Query") => Ok(Frame::Query(query_from(v)?)),
        Some("Sync") => Ok(Frame::Sync(sync_from(v)?)),
        Some("Terminate") => Ok(Frame::Terminate(terminate_from(v)?)),
        _ => Err(format!("not a frame: {v}")),
    }
}
fn context_from(v: &Value) -> Result<Option<Context>, String> {
    if v.is_null() {
        return Ok(None);
    }
    let mut ctx = Context::default();
    ctx.auth_request = num::<u32>(field(
        v.as_object().ok_or("a context is an object")?,
        "auth_request",
    )?)?;
    Ok(Some(ctx))
}
fn context_json(ctx: &Context) -> Value {
    let mut m = Map::new();
    m.insert("auth_request".into(), int(ctx.auth_request.into(), 32));
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
    let decoded = if startup {
        wirestream_postgresql_v3::decode_startup(data, ctx.as_ref())
    } else {
        wirestream_postgresql_v3::decode_with(data, ctx.as_ref(), sender)
    };
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
    fn on_connection_authentication(&mut self, _: &Authentication<'_>) {
        self.0 = Some("on_connection_authentication");
    }
    fn on_connection_backend_key_data(&mut self, _: &BackendKeyData) {
        self.0 = Some("on_connection_backend_key_data");
    }
    fn on_connection_bind_complete(&mut self, _: &BindComplete) {
        self.0 = Some("on_connection_bind_complete");
    }
    fn on_connection_close_complete(&mut self, _: &CloseComplete) {
        self.0 = Some("on_connection_close_complete");
    }
    fn on_connection_command_complete(&mut self, _: &CommandComplete<'_>) {
        self.0 = Some("on_connection_command_complete");
    }
    fn on_connection_copy_in_response(&mut self, _: &CopyInResponse) {
        self.0 = Some("on_connection_copy_in_response");
    }
    fn on_connection_copy_out_response(&mut self, _: &CopyOutResponse) {
        self.0 = Some("on_connection_copy_out_response");
    }
    fn on_connection_copy_both_response(&mut self, _: &CopyBothResponse) {
        self.0 = Some("on_connection_copy_both_response");
    }
    fn on_connection_data_row(&mut self, _: &DataRow<'_>) {
        self.0 = Some("on_connection_data_row");
    }
    fn on_connection_empty_query_response(&mut self, _: &EmptyQueryResponse) {
        self.0 = Some("on_connection_empty_query_response");
    }
    fn on_connection_error_response(&mut self, _: &ErrorResponse<'_>) {
        self.0 = Some("on_connection_error_response");
    }
    fn on_connection_function_call_response(&mut self, _: &FunctionCallResponse<'_>) {
        self.0 = Some("on_connection_function_call_response");
    }
    fn on_connection_negotiate_protocol_version(&mut self, _: &NegotiateProtocolVersion<'_>) {
        self.0 = Some("on_connection_negotiate_protocol_version");
    }
    fn on_connection_no_data(&mut self, _: &NoData) {
        self.0 = Some("on_connection_no_data");
    }
    fn on_connection_notice_response(&mut self, _: &NoticeResponse<'_>) {
        self.0 = Some("on_connection_notice_response");
    }
    fn on_connection_notification_response(&mut self, _: &NotificationResponse<'_>) {
        self.0 = Some("on_connection_notification_response");
    }
    fn on_connection_parameter_description(&mut self, _: &ParameterDescription) {
        self.0 = Some("on_connection_parameter_description");
    }
    fn on_connection_parameter_status(&mut self, _: &ParameterStatus<'_>) {
        self.0 = Some("on_connection_parameter_status");
    }
    fn on_connection_parse_complete(&mut self, _: &ParseComplete) {
        self.0 = Some("on_connection_parse_complete");
    }
    fn on_connection_portal_suspended(&mut self, _: &PortalSuspended) {
        self.0 = Some("on_connection_portal_suspended");
    }
    fn on_connection_ready_for_query(&mut self, _: &ReadyForQuery) {
        self.0 = Some("on_connection_ready_for_query");
    }
    fn on_connection_row_description(&mut self, _: &RowDescription<'_>) {
        self.0 = Some("on_connection_row_description");
    }
    fn on_connection_copy_data(&mut self, _: &CopyData<'_>) {
        self.0 = Some("on_connection_copy_data");
    }
    fn on_connection_copy_done(&mut self, _: &CopyDone) {
        self.0 = Some("on_connection_copy_done");
    }
}
impl machines::ConnectionServerHandlers for Recorder {
    fn on_connection_startup_message(&mut self, _: &StartupMessage<'_>) {
        self.0 = Some("on_connection_startup_message");
    }
    fn on_connection_ssl_request(&mut self, _: &SslRequest) {
        self.0 = Some("on_connection_ssl_request");
    }
    fn on_connection_gssenc_request(&mut self, _: &GssencRequest) {
        self.0 = Some("on_connection_gssenc_request");
    }
    fn on_connection_cancel_request(&mut self, _: &CancelRequest) {
        self.0 = Some("on_connection_cancel_request");
    }
    fn on_connection_copy_data(&mut self, _: &CopyData<'_>) {
        self.0 = Some("on_connection_copy_data");
    }
    fn on_connection_copy_done(&mut self, _: &CopyDone) {
        self.0 = Some("on_connection_copy_done");
    }
    fn on_connection_bind(&mut self, _: &Bind<'_>) {
        self.0 = Some("on_connection_bind");
    }
    fn on_connection_close(&mut self, _: &Close<'_>) {
        self.0 = Some("on_connection_close");
    }
    fn on_connection_copy_fail(&mut self, _: &CopyFail<'_>) {
        self.0 = Some("on_connection_copy_fail");
    }
    fn on_connection_describe(&mut self, _: &Describe<'_>) {
        self.0 = Some("on_connection_describe");
    }
    fn on_connection_execute(&mut self, _: &Execute<'_>) {
        self.0 = Some("on_connection_execute");
    }
    fn on_connection_flush(&mut self, _: &Flush) {
        self.0 = Some("on_connection_flush");
    }
    fn on_connection_function_call(&mut self, _: &FunctionCall<'_>) {
        self.0 = Some("on_connection_function_call");
    }
    fn on_connection_parse(&mut self, _: &Parse<'_>) {
        self.0 = Some("on_connection_parse");
    }
    fn on_connection_password(&mut self, _: &Password<'_>) {
        self.0 = Some("on_connection_password");
    }
    fn on_connection_query(&mut self, _: &Query<'_>) {
        self.0 = Some("on_connection_query");
    }
    fn on_connection_sync(&mut self, _: &Sync) {
        self.0 = Some("on_connection_sync");
    }
    fn on_connection_terminate(&mut self, _: &Terminate) {
        self.0 = Some("on_connection_terminate");
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
    let frame = wirestream_postgresql_v3::decode_with(data, ctx.as_ref(), sender)
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
        _ => Err(format!("no machine {class}")),
    }
}
