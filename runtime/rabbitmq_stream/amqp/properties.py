"""The header and properties sections of an AMQP 1.0 message (part 3 §3.2.1, §3.2.4),
annotations (§3.2.10) and application properties (§3.2.5): their Python classes, and
the checks and field encodings that the message codec (``message``) applies to them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TypeAlias

from wirestream.runtime.rabbitmq_stream.amqp.codec import encode_value
from wirestream.runtime.rabbitmq_stream.amqp.types import (
    TYPE_NAMES,
    AmqpEncodeError,
    Array,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    fail,
    short_repr,
    type_name,
)

__all__ = ["Header", "Properties", "MessageId", "Annotations"]

MessageId: TypeAlias = int | uuid.UUID | bytes | str
"""§3.2.11 message-id-ulong / -uuid / -binary / -string (an int encodes as a ulong)."""

Annotations: TypeAlias = dict[str | int, object]
"""§3.2.10 annotations: 'keys are restricted to be of type symbol or of type ulong' (a
str key encodes as a symbol, an int key as a ulong)."""


@dataclass(slots=True)
class Header:
    """§3.2.1 header: 'transport headers for a message'. None: absent, the spec's
    default applies (durable false, priority 4, ttl none, first-acquirer false,
    delivery-count 0)."""

    durable: bool | None = None
    priority: int | None = None
    ttl: int | None = None
    first_acquirer: bool | None = None
    delivery_count: int | None = None


@dataclass(slots=True)
class Properties:
    """§3.2.4 properties: 'immutable properties of the message'. Timestamps are ms
    since the epoch (decoded as ``Timestamp``); content type and encoding are symbols
    on the wire (decoded as ``Symbol``)."""

    message_id: MessageId | None = None
    user_id: bytes | None = None
    to: str | None = None
    subject: str | None = None
    reply_to: str | None = None
    correlation_id: MessageId | None = None
    content_type: str | None = None
    content_encoding: str | None = None
    absolute_expiry_time: int | None = None
    creation_time: int | None = None
    group_id: str | None = None
    group_sequence: int | None = None
    reply_to_group_id: str | None = None


# --- decoding (checks) ----------------------------------------------------------------


def _field(
    section: str, fields: list[object], index: int, name: str, kinds: tuple[type, ...], at: int
) -> object:
    """Field ``index`` of a composite section, None when absent, checked against kinds."""
    if index >= len(fields):
        return None
    value = fields[index]
    if value is None or type(value) in kinds:
        return value
    wanted = " or ".join(TYPE_NAMES[kind] for kind in kinds)
    fail(f"{section} field {name!r} (field {index}) is a {type_name(value)}, not {wanted}", at)


_ID_KINDS: tuple[type, ...] = (ULong, uuid.UUID, bytes, str)


_HEADER_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("durable", (bool,)),
    ("priority", (UByte,)),
    ("ttl", (UInt,)),
    ("first-acquirer", (bool,)),
    ("delivery-count", (UInt,)),
)


def decode_header(fields: list[object], at: int) -> Header:
    if len(fields) > 5:
        fail(f"header list has {len(fields)} fields, the spec defines 5", at)
    values = [
        _field("header", fields, index, name, kinds, at)
        for index, (name, kinds) in enumerate(_HEADER_FIELDS)
    ]
    return Header(*values)  # type: ignore[arg-type]  # checked by _field


_PROPERTY_FIELDS: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("message-id", _ID_KINDS),
    ("user-id", (bytes,)),
    ("to", (str,)),
    ("subject", (str,)),
    ("reply-to", (str,)),
    ("correlation-id", _ID_KINDS),
    ("content-type", (Symbol,)),
    ("content-encoding", (Symbol,)),
    ("absolute-expiry-time", (Timestamp,)),
    ("creation-time", (Timestamp,)),
    ("group-id", (str,)),
    ("group-sequence", (UInt,)),
    ("reply-to-group-id", (str,)),
)


def decode_properties(fields: list[object], at: int) -> Properties:
    if len(fields) > 13:
        fail(f"properties list has {len(fields)} fields, the spec defines 13", at)
    values = [
        _field("properties", fields, index, name, kinds, at)
        for index, (name, kinds) in enumerate(_PROPERTY_FIELDS)
    ]
    return Properties(*values)  # type: ignore[arg-type]  # checked by _field


def check_annotations(section: str, entries: dict[object, object], at: int) -> Annotations:
    for key in entries:
        if type(key) not in (Symbol, ULong):
            fail(
                f"{section} key {short_repr(key)} is a {type_name(key)}: annotation keys are "
                "symbols or ulongs",
                at,
            )
    return entries  # type: ignore[return-value]


def check_application_properties(entries: dict[object, object], at: int) -> dict[str, object]:
    for key, value in entries.items():
        if type(key) is not str:
            fail(
                f"application-properties key {short_repr(key)} is a {type_name(key)}, not a "
                "string",
                at,
            )
        if isinstance(value, (list, dict, Array)):
            fail(
                f"application-properties value of {short_repr(key)} is a {type_name(value)}: "
                "values are simple types only",
                at,
            )
    return entries  # type: ignore[return-value]


# --- encoding ---------------------------------------------------------------------------


def _typed_field(value: object, kind: type, name: str) -> bytes:
    """A field encoded as the AMQP type its definition names, whatever Python type."""
    if value is None:
        return b"\x40"
    if kind is bool:
        if not isinstance(value, bool):
            raise AmqpEncodeError(f"{name} is a boolean, got {type(value).__name__}")
        return encode_value(value)
    if kind in (str, Symbol):
        if not isinstance(value, str):
            raise AmqpEncodeError(f"{name} is a {TYPE_NAMES[kind]}, got {type(value).__name__}")
        return encode_value(kind(value))
    if kind is bytes:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise AmqpEncodeError(f"{name} is a binary, got {type(value).__name__}")
        return encode_value(bytes(value))
    if kind is Timestamp and isinstance(value, datetime):
        return encode_value(Timestamp.from_datetime(value))
    if not isinstance(value, int) or isinstance(value, bool):
        raise AmqpEncodeError(f"{name} is an integer, got {type(value).__name__}")
    return encode_value(kind(value))


def _message_id(value: object, name: str) -> bytes:
    if isinstance(value, int) and not isinstance(value, bool):
        return _typed_field(value, ULong, name)
    if isinstance(value, str):
        return _typed_field(value, str, name)
    if value is None or isinstance(value, (uuid.UUID, bytes)):
        return encode_value(value)
    raise AmqpEncodeError(f"{name} is a ulong, uuid, binary or string, got {type(value).__name__}")


def encode_annotations(value: Annotations, section: str) -> bytes:
    entries: dict[object, object] = {}
    for key, item in value.items():
        if isinstance(key, str):
            entries[Symbol(key)] = item
        elif isinstance(key, int) and not isinstance(key, bool):
            entries[ULong(key)] = item
        else:
            raise AmqpEncodeError(f"{section} key {key!r}: keys are symbols or ulongs")
    return encode_value(entries)


def header_fields(header: Header) -> list[bytes]:
    """The header's fields, each encoded as the type §3.2.1 gives it."""
    return [
        _typed_field(header.durable, bool, "durable"),
        _typed_field(header.priority, UByte, "priority"),
        _typed_field(header.ttl, UInt, "ttl"),
        _typed_field(header.first_acquirer, bool, "first-acquirer"),
        _typed_field(header.delivery_count, UInt, "delivery-count"),
    ]


def properties_fields(props: Properties) -> list[bytes]:
    """The properties' fields, each encoded as the type §3.2.4 gives it."""
    return [
        _message_id(props.message_id, "message-id"),
        _typed_field(props.user_id, bytes, "user-id"),
        _typed_field(props.to, str, "to"),
        _typed_field(props.subject, str, "subject"),
        _typed_field(props.reply_to, str, "reply-to"),
        _message_id(props.correlation_id, "correlation-id"),
        _typed_field(props.content_type, Symbol, "content-type"),
        _typed_field(props.content_encoding, Symbol, "content-encoding"),
        _typed_field(props.absolute_expiry_time, Timestamp, "absolute-expiry-time"),
        _typed_field(props.creation_time, Timestamp, "creation-time"),
        _typed_field(props.group_id, str, "group-id"),
        _typed_field(props.group_sequence, UInt, "group-sequence"),
        _typed_field(props.reply_to_group_id, str, "reply-to-group-id"),
    ]
