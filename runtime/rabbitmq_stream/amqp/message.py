"""An AMQP 1.0 message (part 3 §3.2) as RabbitMQ streams store it: ``AmqpMessage``,
``encode_message`` / ``decode_message``, and the hot path, ``encode_body`` (a message
that is one Data section) and ``decode_body`` (the Data payload of a message, sliced
without a full decode when the message is one Data section).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from wirestream.runtime._support import native_module
from wirestream.runtime.rabbitmq_stream.amqp.codec import encode_value
from wirestream.runtime.rabbitmq_stream.amqp.properties import (
    Annotations,
    Header,
    Properties,
    check_annotations,
    check_application_properties,
    decode_header,
    decode_properties,
    encode_annotations,
    header_fields,
    properties_fields,
)
from wirestream.runtime.rabbitmq_stream.amqp.sections import (
    APP_PROPS,
    DATA,
    DELIVERY_ANN,
    FOOTER,
    HEADER,
    MESSAGE_ANN,
    PROPERTIES,
    SECTION_NAMES,
    SECTION_PREFIX,
    SEQUENCE,
    VALUE,
    composite_section,
    iter_sections,
)
from wirestream.runtime.rabbitmq_stream.amqp.types import AmqpEncodeError, Array, fail, type_name

__all__ = [
    "Data",
    "AmqpSequence",
    "AmqpValue",
    "Body",
    "AmqpMessage",
    "encode_message",
    "decode_message",
    "encode_body",
    "decode_body",
]


@dataclass(frozen=True, slots=True)
class Data:
    """A body of several Data sections (§3.2.6), in order. One Data section is plain
    ``bytes`` in ``AmqpMessage.body``."""

    sections: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class AmqpSequence:
    """A body of one or more amqp-sequence sections (§3.2.7), each a list."""

    sections: tuple[list[object], ...]


@dataclass(frozen=True, slots=True)
class AmqpValue:
    """A body of one amqp-value section (§3.2.8): 'a single AMQP value'."""

    value: object


Body: TypeAlias = bytes | Data | AmqpSequence | AmqpValue | None


@dataclass(slots=True)
class AmqpMessage:
    """An AMQP 1.0 message (§3.2): 'header? delivery-annotations?
    message-annotations? properties? application-properties? body footer?'.

    ``body`` is ``bytes`` for one Data section (what this client publishes), ``Data``
    for several, ``AmqpSequence``, ``AmqpValue``, or None for no body section (the
    spec requires one; decision: accepted on decode, as Qpid Proton writes none for a
    null body). ``application_properties`` keys are strings and values 'simple types
    only, that is, excluding map, list, and array types' (§3.2.5).
    """

    body: Body = None
    header: Header | None = None
    delivery_annotations: Annotations | None = None
    message_annotations: Annotations | None = None
    properties: Properties | None = None
    application_properties: dict[str, object] | None = None
    footer: Annotations | None = None


def decode_message(data: bytes) -> AmqpMessage:
    """The message ``data`` holds: every section decoded and checked (§3.2)."""
    message = AmqpMessage()
    data_sections: list[bytes] = []
    sequences: list[list[object]] = []
    for code, value, at in iter_sections(data):
        if code == DATA:
            data_sections.append(value)  # type: ignore[arg-type]
        elif code == SEQUENCE:
            sequences.append(value)  # type: ignore[arg-type]
        elif code == VALUE:
            message.body = AmqpValue(value)
        elif code == HEADER:
            message.header = decode_header(value, at)  # type: ignore[arg-type]
        elif code == PROPERTIES:
            message.properties = decode_properties(value, at)  # type: ignore[arg-type]
        elif code == APP_PROPS:
            message.application_properties = check_application_properties(
                value, at  # type: ignore[arg-type]
            )
        else:
            annotations = check_annotations(SECTION_NAMES[code], value, at)  # type: ignore[arg-type]
            if code == DELIVERY_ANN:
                message.delivery_annotations = annotations
            elif code == MESSAGE_ANN:
                message.message_annotations = annotations
            else:
                message.footer = annotations
    if len(data_sections) == 1:
        message.body = data_sections[0]
    elif data_sections:
        message.body = Data(tuple(data_sections))
    elif sequences:
        message.body = AmqpSequence(tuple(sequences))
    return message


# --- encoding a message ---------------------------------------------------------------


def encode_message(message: AmqpMessage) -> bytes:
    """The sections of ``message`` in the order of §3.2 (absent ones omitted)."""
    out = bytearray()
    if message.header is not None:
        composite_section(out, HEADER, header_fields(message.header))
    for code, annotations in (
        (DELIVERY_ANN, message.delivery_annotations),
        (MESSAGE_ANN, message.message_annotations),
    ):
        if annotations is not None:
            out += SECTION_PREFIX[code]
            out += encode_annotations(annotations, SECTION_NAMES[code])
    if message.properties is not None:
        composite_section(out, PROPERTIES, properties_fields(message.properties))
    if message.application_properties is not None:
        for key, item in message.application_properties.items():
            if type(key) is not str:
                raise AmqpEncodeError(f"application-properties key {key!r} is not a string")
            if isinstance(item, (list, tuple, dict, Array)):
                raise AmqpEncodeError(
                    f"application-properties value of {key!r} is a "
                    f"{type(item).__name__}: simple types only"
                )
        out += SECTION_PREFIX[APP_PROPS]
        out += encode_value(message.application_properties)
    out += _encode_body_sections(message.body)
    if message.footer is not None:
        out += SECTION_PREFIX[FOOTER]
        out += encode_annotations(message.footer, "footer")
    return bytes(out)


def _encode_body_sections(body: Body) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return encode_body(body)
    if isinstance(body, Data):
        if not body.sections:
            raise AmqpEncodeError("a Data body has one or more sections, got none")
        return b"".join(encode_body(section) for section in body.sections)
    if isinstance(body, AmqpSequence):
        if not body.sections:
            raise AmqpEncodeError("an AmqpSequence body has one or more sections, got none")
        parts = bytearray()
        for section in body.sections:
            if not isinstance(section, (list, tuple)):
                raise AmqpEncodeError("an amqp-sequence section is a list")
            parts += SECTION_PREFIX[SEQUENCE]
            parts += encode_value(section)
        return bytes(parts)
    if isinstance(body, AmqpValue):
        return SECTION_PREFIX[VALUE] + encode_value(body.value)
    raise AmqpEncodeError(f"no AMQP message body for a {type(body).__name__}")


# --- the hot path: one Data section ---------------------------------------------------

# 0x00 (described) 0x53 (smallulong) 0x75 (amqp:data:binary), then vbin8 or vbin32.
_DATA8 = b"\x00\x53\x75\xa0"
_DATA32 = b"\x00\x53\x75\xb0"
_DATA8_PREFIXES = tuple(_DATA8 + bytes((length,)) for length in range(256))
_DATA32_HEAD = struct.Struct(">II")  # the 4 bytes above as one int, then the length
_DATA32_AS_INT = int.from_bytes(_DATA32, "big")

_native_data_bodies: Callable[[list[bytes]], "list[bytes | None] | None"] | None = getattr(
    native_module(), "amqp_data_bodies", None
)


def encode_body(body: bytes | bytearray | memoryview) -> bytes:
    """A message that is one Data section holding ``body`` (§3.2.6)."""
    length = len(body)
    if length < 256:
        return _DATA8_PREFIXES[length] + body
    if length >= 1 << 32:
        raise AmqpEncodeError(f"a Data section of {length} bytes exceeds 2**32-1")
    return b"".join((_DATA32, length.to_bytes(4, "big"), body))


def decode_body(data: bytes) -> bytes:
    """The application data of a message: its Data sections' bytes concatenated.

    A message that is exactly one Data section is sliced without decoding anything
    else; any other message is walked section by section (every section's encoding
    and the layout are checked; header and properties fields are not interpreted).
    No body section gives b""; an amqp-value body holding binary gives that binary.
    An amqp-sequence body, or an amqp-value of another type, is not bytes: that raises
    ``AmqpDecodeError`` (use ``decode_message``).
    """
    size = len(data)
    if size > 4 and data[4] == size - 5 and data.startswith(_DATA8):
        return data[5:]
    if size > 7:
        head, length = _DATA32_HEAD.unpack_from(data)
        if head == _DATA32_AS_INT and length == size - 8:
            return data[8:]
    return _decode_body_sections(data)


def data_bodies(records: list[bytes]) -> list[bytes | None]:
    """``decode_body`` of each record at once where the record is exactly one Data
    section of up to 255 bytes (the common case: what ``encode_body`` makes), else None:
    a consumer decodes a chunk's bodies in one pass and leaves the others to
    ``decode_body`` when ``body`` is read (which checks them, and raises there).
    Natively where the extension is built (``amqp_data_bodies``: the same list,
    tests/native/test_native_rabbitmq.py): 33 ns a record of 100 bytes against 189."""
    if _native_data_bodies is not None:
        found = _native_data_bodies(records)
        if found is not None:
            return found
    return python_data_bodies(records)


def python_data_bodies(records: list[bytes]) -> list[bytes | None]:
    """``data_bodies`` in Python only: the reference the native pass is held to."""
    return [
        data[5:] if data[:4] == _DATA8 and len(data) > 4 and data[4] == len(data) - 5 else None
        for data in records
    ]


def _decode_body_sections(data: bytes) -> bytes:
    parts: list[bytes] = []
    for code, value, at in iter_sections(data):
        if code == DATA:
            parts.append(value)  # type: ignore[arg-type]
        elif code == VALUE and isinstance(value, bytes):
            parts.append(value)
        elif code in (SEQUENCE, VALUE):
            fail(
                f"the body is an {SECTION_NAMES[code]} section holding a "
                f"{type_name(value)}, not binary data",
                at,
            )
    return parts[0] if len(parts) == 1 else b"".join(parts)
