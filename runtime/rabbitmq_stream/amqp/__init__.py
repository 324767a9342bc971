"""AMQP 1.0 messages: the format RabbitMQ streams store each message in.

A stream message is an AMQP 1.0 message (OASIS AMQP 1.0 part 3 §3.2): a sequence of
described sections, each encoded with the type system of part 1 §1.6. This module has

- the type system (§1.6): ``encode_value`` / ``decode_value`` between one encoded
  value and Python (mapping below);
- the message (§3.2): ``AmqpMessage`` and ``encode_message`` / ``decode_message``;
- the hot path: ``encode_body`` (a message that is one Data section) and
  ``decode_body`` (the Data payload of a message, sliced without a full decode when
  the message is one Data section).

Python mapping (decoding gives the left column; encoding also accepts the right one):

    null                 None
    boolean              bool
    ubyte/ushort/uint/ulong, byte/short/int/long
                         UByte/UShort/UInt/ULong, Byte/Short/Int/Long (int subclasses);
                         a plain ``int`` encodes as long
    float / double       Float (a float subclass) / float
    decimal32/64/128     Decimal32/Decimal64/Decimal128 (bytes subclasses, raw IEEE 754)
    char                 Char (a one-character str subclass)
    timestamp            Timestamp (an int subclass: ms since the epoch); aware datetime
    uuid                 uuid.UUID
    binary               bytes; bytearray, memoryview
    string               str
    symbol               Symbol (a str subclass, ASCII)
    list                 list; tuple
    map                  dict
    array                Array(element_type, items[, descriptor])
    described            Described(descriptor, value)

Errors: malformed bytes raise ``AmqpDecodeError`` (a ``wirestream.runtime.errors.DecodeError``)
naming what is wrong and at which byte offset; values that cannot be encoded raise
``AmqpEncodeError`` (a ``wirestream.runtime.errors.EncodeError``). Nothing is allocated from a
length or count before the input has been checked to hold that many bytes.

The package's modules: ``types`` (the Python classes of AMQP types, errors), ``codec``
(one value), ``sections`` (a message's section layout), ``properties`` (header,
properties, annotations, application properties), ``message`` (the whole message).
"""

from wirestream.runtime.rabbitmq_stream.amqp.codec import decode_value, encode_value
from wirestream.runtime.rabbitmq_stream.amqp.message import (
    AmqpMessage,
    AmqpSequence,
    AmqpValue,
    Body,
    Data,
    data_bodies,
    python_data_bodies,
    decode_body,
    decode_message,
    encode_body,
    encode_message,
)
from wirestream.runtime.rabbitmq_stream.amqp.properties import (
    Annotations,
    Header,
    MessageId,
    Properties,
)
from wirestream.runtime.rabbitmq_stream.amqp.types import (
    AmqpDecodeError,
    AmqpEncodeError,
    Array,
    ArrayElementType,
    Byte,
    Char,
    Decimal128,
    Decimal32,
    Decimal64,
    Described,
    Float,
    Int,
    Long,
    MAX_NESTING,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = [
    "AmqpDecodeError",
    "AmqpEncodeError",
    "MAX_NESTING",
    "UByte",
    "UShort",
    "UInt",
    "ULong",
    "Byte",
    "Short",
    "Int",
    "Long",
    "Float",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Char",
    "Timestamp",
    "Symbol",
    "Described",
    "Array",
    "ArrayElementType",
    "Header",
    "Properties",
    "MessageId",
    "Annotations",
    "Data",
    "AmqpSequence",
    "AmqpValue",
    "Body",
    "AmqpMessage",
    "encode_value",
    "decode_value",
    "encode_message",
    "decode_message",
    "encode_body",
    "data_bodies",
    "python_data_bodies",
    "decode_body",
]
