"""The sections of an AMQP 1.0 message (part 3 §3.2): their descriptors, the layout
'header? delivery-annotations? message-annotations? properties? application-properties?
body footer?', and ``iter_sections``, which walks and checks it.
"""

from __future__ import annotations

from collections.abc import Iterator

from wirestream.runtime.rabbitmq_stream.amqp.codec import (
    DESCRIBED,
    LIST0,
    LIST8,
    LIST32,
    SMALLULONG,
    Reader,
    compound,
)
from wirestream.runtime.rabbitmq_stream.amqp.types import (
    TYPE_NAMES,
    Symbol,
    ULong,
    fail,
    short_repr,
    type_name,
)

# Section descriptors: 'amqp:...' symbol and 0x00000000:0x000000NN ulong (§3.2).
HEADER, DELIVERY_ANN, MESSAGE_ANN, PROPERTIES, APP_PROPS = 0x70, 0x71, 0x72, 0x73, 0x74
DATA, SEQUENCE, VALUE, FOOTER = 0x75, 0x76, 0x77, 0x78

SECTION_NAMES = {
    HEADER: "header",
    DELIVERY_ANN: "delivery-annotations",
    MESSAGE_ANN: "message-annotations",
    PROPERTIES: "properties",
    APP_PROPS: "application-properties",
    DATA: "data",
    SEQUENCE: "amqp-sequence",
    VALUE: "amqp-value",
    FOOTER: "footer",
}
_SECTION_SYMBOLS = {
    "amqp:header:list": HEADER,
    "amqp:delivery-annotations:map": DELIVERY_ANN,
    "amqp:message-annotations:map": MESSAGE_ANN,
    "amqp:properties:list": PROPERTIES,
    "amqp:application-properties:map": APP_PROPS,
    "amqp:data:binary": DATA,
    "amqp:amqp-sequence:list": SEQUENCE,
    "amqp:amqp-value:*": VALUE,
    "amqp:footer:map": FOOTER,
}
# Position in the message layout; the three body sections share one.
_SECTION_RANK = {
    HEADER: 0,
    DELIVERY_ANN: 1,
    MESSAGE_ANN: 2,
    PROPERTIES: 3,
    APP_PROPS: 4,
    DATA: 5,
    SEQUENCE: 5,
    VALUE: 5,
    FOOTER: 6,
}
_SECTION_VALUE_TYPE: dict[int, type] = {
    HEADER: list,
    DELIVERY_ANN: dict,
    MESSAGE_ANN: dict,
    PROPERTIES: list,
    APP_PROPS: dict,
    DATA: bytes,
    SEQUENCE: list,
    VALUE: object,
    FOOTER: dict,
}
_LAYOUT = (
    "header, delivery-annotations, message-annotations, properties, "
    "application-properties, body, footer"
)


def iter_sections(data: bytes) -> Iterator[tuple[int, object, int]]:
    """(section code, section value, offset) of each section, in order, after checking
    the layout of §3.2 (order; data and amqp-sequence may repeat, nothing else may)."""
    reader = Reader(data)
    end = len(data)
    pos = 0
    previous = -1
    while pos < end:
        at = pos
        if data[pos] != DESCRIBED:
            fail(f"a section starts with 0x{data[pos]:02x}, not a descriptor (0x00)", at)
        descriptor, pos = reader.value(pos + 1, end, 1)
        if isinstance(descriptor, ULong) and descriptor in SECTION_NAMES:
            code = int(descriptor)
        elif isinstance(descriptor, Symbol) and descriptor in _SECTION_SYMBOLS:
            code = _SECTION_SYMBOLS[descriptor]
        else:
            fail(f"{short_repr(descriptor)} is not a message section descriptor", at)
        value, pos = reader.value(pos, end, 1)
        if previous >= 0:
            rank, previous_rank = _SECTION_RANK[code], _SECTION_RANK[previous]
            repeatable = code == previous and code in (DATA, SEQUENCE)
            if rank < previous_rank or (rank == previous_rank and not repeatable):
                fail(
                    f"{SECTION_NAMES[code]} section after {SECTION_NAMES[previous]}: "
                    f"sections go in the order {_LAYOUT}, only data or amqp-sequence "
                    "may repeat, and a body is of one kind",
                    at,
                )
        expected = _SECTION_VALUE_TYPE[code]
        if not isinstance(value, expected):
            fail(
                f"{SECTION_NAMES[code]} section holds a {type_name(value)}, not a "
                f"{TYPE_NAMES[expected]}",
                at,
            )
        previous = code
        yield code, value, at


SECTION_PREFIX = {code: bytes((DESCRIBED, SMALLULONG, code)) for code in SECTION_NAMES}


def composite_section(out: bytearray, code: int, fields: list[bytes]) -> None:
    # §1.4 composite types: 'trailing ... null values MAY be omitted'.
    while fields and fields[-1] == b"\x40":
        fields.pop()
    out += SECTION_PREFIX[code]
    if fields:
        compound(out, LIST8, LIST32, len(fields), b"".join(fields))
    else:
        out.append(LIST0)
