"""AMQP 1.0 type system and message format (runtime.rabbitmq_stream.amqp).

Vectors are written from OASIS AMQP 1.0 part 1 §1.6 (format codes) and part 3 §3.2
(sections); rstream (the Python stream client) is the interop peer.
"""

from __future__ import annotations

import random
import re
import tracemalloc
import uuid
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from wirestream.runtime.errors import DecodeError, EncodeError
from wirestream.runtime.rabbitmq_stream.amqp import (
    MAX_NESTING,
    AmqpDecodeError,
    AmqpEncodeError,
    AmqpMessage,
    AmqpSequence,
    AmqpValue,
    Array,
    Byte,
    Char,
    Data,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Header,
    Int,
    Long,
    Properties,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
    data_bodies,
    decode_body,
    decode_message,
    decode_value,
    encode_body,
    encode_message,
    encode_value,
)

H = bytes.fromhex

# --- fixed vectors: value <-> the smallest encoding of its type ---------------------------

CANONICAL = [
    (None, "40"),
    (True, "41"),
    (False, "42"),
    (UByte(7), "5007"),
    (UByte(255), "50ff"),
    (UShort(0x1234), "601234"),
    (UInt(0), "43"),
    (UInt(5), "5205"),
    (UInt(255), "52ff"),
    (UInt(256), "7000000100"),
    (UInt(0xFFFFFFFF), "70ffffffff"),
    (ULong(0), "44"),
    (ULong(0x75), "5375"),
    (ULong(2**40), "800000010000000000"),
    (ULong(2**64 - 1), "80ffffffffffffffff"),
    (Byte(-2), "51fe"),
    (Short(-2), "61fffe"),
    (Int(-2), "54fe"),
    (Int(127), "547f"),
    (Int(128), "7100000080"),
    (Int(-(2**31)), "7180000000"),
    (Long(-2), "55fe"),
    (Long(2**40), "810000010000000000"),
    (Long(-(2**63)), "818000000000000000"),
    (Float(1.5), "723fc00000"),
    (1.5, "823ff8000000000000"),
    (Decimal32(H("22500001")), "7422500001"),
    (Decimal64(H("2238000000000001")), "842238000000000001"),
    (Decimal128(H("22080000000000000000000000000001")), "9422080000000000000000000000000001"),
    (Char("A"), "7300000041"),
    (Char("€"), "73000020ac"),
    (Char("😀"), "730001f600"),
    (Timestamp(1), "830000000000000001"),
    (Timestamp(-1), "83ffffffffffffffff"),
    (uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10), "980102030405060708090a0b0c0d0e0f10"),
    (b"", "a000"),
    (b"ab", "a0026162"),
    (b"x" * 255, "a0ff" + "78" * 255),
    (b"x" * 256, "b000000100" + "78" * 256),
    ("ab", "a1026162"),
    ("é", "a102c3a9"),
    ("x" * 256, "b100000100" + "78" * 256),
    (Symbol("ab"), "a3026162"),
    (Symbol("x" * 256), "b300000100" + "78" * 256),
    ([], "45"),
    ([True, UInt(1)], "c004024152" + "01"),
    ([None] * 300, "d0" + "00000130" + "0000012c" + "40" * 300),
    ({}, "c10100"),
    ({Symbol("a"): None}, "c10502a3016140"),
    (Array("uint", (UInt(1), UInt(2))), "e00a02700000000100000002"),
    (Array("boolean", (True, False)), "e004025601" + "00"),
    (Array("symbol", (Symbol("a"), Symbol("bc"))), "e00702a3016102" + "6263"),
    (Array("null", (None, None, None)), "e0020340"),
    (Array("long", ()), "e0020081"),
    (Described(ULong(0x75), b""), "005375a000"),
    (Described(Symbol("x"), [1]), "00a30178c00301" + "5501"),
]


@pytest.mark.parametrize(("value", "encoding"), CANONICAL, ids=[e for _, e in CANONICAL])
def test_each_type_encodes_to_the_spec_bytes_and_decodes_back_with_its_type(
    value: object, encoding: str
) -> None:
    """§1.6: e.g. 'smalluint 0x52 ... 8-bit unsigned integer', 'vbin8 0xa0', 'str8-utf8
    0xa1', 'sym8 0xa3', 'list0 0x45', 'map8 0xc1', and 0x00 for a described type."""
    assert encode_value(value) == H(encoding)
    decoded = decode_value(H(encoding))
    assert decoded == value
    assert type(decoded) is type(value)


NON_CANONICAL = [
    ("5601", True),
    ("5600", False),
    ("7000000005", UInt(5)),
    ("800000000000000005", ULong(5)),
    ("7100000005", Int(5)),
    ("810000000000000005", Long(5)),
    ("b0000000026162", b"ab"),
    ("b1000000026162", "ab"),
    ("b3000000026162", Symbol("ab")),
    ("c00100", []),
    ("d0000000070000000241" + "5201", [True, UInt(1)]),
    ("d100000004" + "00000000", {}),
    ("f0" + "00000007" + "00000002" + "52" + "0102", Array("uint", (UInt(1), UInt(2)))),
    (
        "e009" "02" "005373a3" "0161" "0162",
        Array("symbol", (Symbol("a"), Symbol("b")), ULong(0x73)),
    ),
]


@pytest.mark.parametrize(("encoding", "value"), NON_CANONICAL, ids=[e for e, _ in NON_CANONICAL])
def test_every_encoding_of_a_type_decodes_not_only_the_smallest(
    encoding: str, value: object
) -> None:
    """§1.6: a type may have several encodings (boolean 0x56, uint 0x70, vbin32 0xb0,
    list32 0xd0, ...); a decoder accepts each of them."""
    decoded = decode_value(H(encoding))
    assert decoded == value
    assert type(decoded) is type(value)


def test_plain_int_encodes_as_long_aware_datetime_as_timestamp_naive_refused() -> None:
    assert encode_value(5) == H("5505")
    assert encode_value(-(2**40)) == H("81ffffff0000000000")
    moment = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    assert encode_value(moment) == encode_value(Timestamp.from_datetime(moment))
    assert Timestamp.from_datetime(moment).to_datetime() == moment
    assert Timestamp.from_datetime(moment) == 1704164645678
    with pytest.raises(AmqpEncodeError, match="naive"):
        encode_value(datetime(2024, 1, 1))


@pytest.mark.parametrize(
    "value",
    [
        UByte(256),
        UShort(-1),
        UInt(2**32),
        ULong(-1),
        Byte(128),
        Short(2**15),
        Int(2**31),
        Long(2**63),
        2**64,
        Timestamp(2**63),
        Float(1e39),
        Char("ab"),
        Char("\ud800"),
        Symbol("é"),
        "\ud800",
        Decimal32(b"123"),
        object(),
        {1, 2},
        Array("uint", (UInt(1), "x")),
        Array("boolean", (1,)),
        Array("ubyte", (True,)),
        Array("nothing", ()),  # type: ignore[arg-type]
        Array("symbol", (Symbol("a"),), descriptor=1.5),  # type: ignore[arg-type]
    ],
    # the same ids in every process (pytest-xdist compares them): not object()'s address
    ids=lambda value: "object()" if type(value) is object else repr(value),
)
def test_values_outside_the_type_system_raise_amqp_encode_error(value: object) -> None:
    with pytest.raises(AmqpEncodeError):
        encode_value(value)
    assert issubclass(AmqpEncodeError, EncodeError)


def _nested_lists(depth: int) -> tuple[list[object], bytes]:
    value: list[object] = [None]
    raw = b"\xc0\x02\x01\x40"
    for _ in range(depth - 1):
        value = [value]
        raw = b"\xd0" + (len(raw) + 4).to_bytes(4, "big") + (1).to_bytes(4, "big") + raw
    return value, raw


def test_nesting_up_to_the_cap_works_and_one_more_level_is_refused_both_ways() -> None:
    value, raw = _nested_lists(MAX_NESTING)
    assert decode_value(raw) == value
    assert decode_value(encode_value(value)) == value
    deeper, deeper_raw = _nested_lists(MAX_NESTING + 1)
    with pytest.raises(AmqpDecodeError, match="nest deeper"):
        decode_value(deeper_raw)
    with pytest.raises(AmqpEncodeError, match="nest deeper"):
        encode_value(deeper)


def test_deeply_nested_descriptors_raise_amqp_decode_error_not_recursion_error() -> None:
    with pytest.raises(AmqpDecodeError, match="nest deeper"):
        decode_value(b"\x00" * 100_000 + b"\x40")
    with pytest.raises(AmqpDecodeError, match="nest deeper"):
        decode_message(b"\x00\x53\x77" + _nested_lists(10_000)[1])


# --- malformed input: one precise error, with its offset -----------------------------------

MALFORMED = [
    ("", "constructor is missing", 0),
    ("ff", "unknown format code 0xff", 0),
    ("70000000", "needs 4 bytes, 3 remain", 0),
    ("a005616263", "length 5 exceeds the 3 bytes", 0),
    ("b0ffffffff0000", "length 4294967295 exceeds", 0),
    ("a102c328", "not valid UTF-8", 0),
    ("a30180", "not valid ASCII", 0),
    ("5602", "boolean octet 0x02", 0),
    ("730000d800", "not a Unicode scalar value", 0),
    ("7300110000", "not a Unicode scalar value", 0),
    ("c0", "the size of a list needs 1 bytes, 0 remain", 1),
    ("c0ff02", "size 255 exceeds", 0),
    ("c00005", "list size 0 is below the 1 bytes of its count", 0),
    ("c00209" + "40", "count 9 exceeds the 1 bytes", 0),
    ("c003014040", "ends 1 bytes before its size says", 0),
    ("c10201" + "40", "map count 1 is odd", 0),
    ("c10302" "4540", "map key of type list is not hashable", 3),
    ("c10704" "550140" "550140", "map key Long(1) appears twice", 6),
    ("e002ff40", "array count 255 exceeds", 0),
    ("f000000005ffffffff40", "array count 4294967295 exceeds", 0),
    ("f000000005ffffffff70", "array count 4294967295 exceeds", 0),
    ("e00202ff", "unknown array element format code 0xff", 3),
    ("f0" "0000000d" "00000002" "52" "0102", "size 13 exceeds the 7 bytes", 0),
    ("e005010040" + "4040", "descriptor is not a symbol or ulong", 3),
    ("4040", "1 bytes follow the value", 1),
]


@pytest.mark.parametrize(
    ("encoding", "complaint", "offset"), MALFORMED, ids=[m[0] for m in MALFORMED]
)
def test_malformed_values_raise_amqp_decode_error_saying_what_and_where(
    encoding: str, complaint: str, offset: int
) -> None:
    with pytest.raises(AmqpDecodeError, match=re.escape(complaint)) as caught:
        decode_value(H(encoding))
    assert caught.value.offset == offset
    assert f"at byte offset {offset}" in str(caught.value)
    assert isinstance(caught.value, DecodeError)


def test_a_length_of_2_32_minus_1_on_10_bytes_is_refused_without_allocating() -> None:
    """A length field is checked against the bytes that remain before anything is
    allocated from it."""
    inputs = [
        H("b0ffffffff") + b"12345",  # vbin32
        H("b1ffffffff") + b"12345",  # str32
        H("d0ffffffffffffffff40"),  # list32 size
        H("d000000009ffffffff40"),  # list32 count
        H("d100000009ffffffff40"),  # map32 count
        H("f000000009ffffffff40"),  # array32 of nulls (zero-width elements)
        H("005375b0ffffffff41"),  # a Data section
    ]
    tracemalloc.start()
    try:
        for raw in inputs:
            assert len(raw) <= 10
            for decode in (decode_value, decode_message, decode_body):
                with pytest.raises(AmqpDecodeError):
                    decode(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000


# --- the message (part 3 §3.2) ---------------------------------------------------------

EVERY_SECTION = AmqpMessage(
    header=Header(durable=True, priority=9, ttl=60_000, first_acquirer=False, delivery_count=3),
    delivery_annotations={"x-opt-delivery": "d", 77: None},
    message_annotations={"x-stream-filter-value": "emea", "x-opt-int": Int(-5)},
    properties=Properties(
        message_id=12345,
        user_id=b"guest",
        to="/queues/q",
        subject="subject",
        reply_to="/queues/reply",
        correlation_id=uuid.UUID(int=42),
        content_type="application/json",
        content_encoding="gzip",
        absolute_expiry_time=1_700_000_060_000,
        creation_time=1_700_000_000_000,
        group_id="group",
        group_sequence=2**32 - 1,
        reply_to_group_id="reply-group",
    ),
    application_properties={"s": "é", "i": 1, "b": False, "f": 0.5, "bin": b"\x00", "u": UInt(3)},
    body=b'{"hello": "world"}',
    footer={"x-opt-hash": b"\x01\x02"},
)


def test_a_message_with_every_section_round_trips() -> None:
    raw = encode_message(EVERY_SECTION)
    decoded = decode_message(raw)
    assert decoded == EVERY_SECTION
    assert encode_message(decoded) == raw
    assert decode_body(raw) == b'{"hello": "world"}'
    assert decoded.properties is not None
    assert type(decoded.properties.content_type) is Symbol
    assert type(decoded.properties.creation_time) is Timestamp
    assert decoded.properties.message_id == ULong(12345)


def test_sections_are_described_lists_and_maps_with_smallulong_descriptors() -> None:
    """§3.2: header is 'amqp:header:list' 0x00000000:0x00000070 and data is
    'amqp:data:binary' 0x00000000:0x00000075; §1.4: trailing null fields are omitted."""
    raw = encode_message(AmqpMessage(header=Header(durable=True), body=b"hi"))
    assert raw == H("005370" "c0020141" "005375" "a0026869")
    raw = encode_message(AmqpMessage(header=Header(), properties=Properties(), body=b""))
    assert raw == H("00537045" "00537345" "005375a000")


def test_symbolic_section_descriptors_decode_like_numeric_ones() -> None:
    """§3.2: each section has a symbolic descriptor too ('amqp:data:binary', ...)."""

    def sym(name: str) -> bytes:
        return b"\x00\xa3" + bytes((len(name),)) + name.encode()

    raw = sym("amqp:properties:list") + H("c00401a10169")
    raw += sym("amqp:application-properties:map") + H("c10702a1016ba10176")
    raw += sym("amqp:data:binary") + H("a0026869")
    decoded = decode_message(raw)
    assert decoded.properties == Properties(message_id="i")
    assert decoded.application_properties == {"k": "v"}
    assert decoded.body == b"hi"
    assert decode_body(raw) == b"hi"


@pytest.mark.parametrize(
    "body",
    [
        None,
        b"",
        b"one",
        Data((b"one", b"", b"three")),
        AmqpSequence(([1, "two"], [])),
        AmqpValue("a string"),
        AmqpValue({Symbol("k"): [Long(1)]}),
        AmqpValue(None),
    ],
    ids=repr,
)
def test_each_body_kind_round_trips(body: object) -> None:
    """§3.2: 'The body consists of one of the following three choices: one or more
    data sections, one or more amqp-sequence sections, or a single amqp-value section.'"""
    message = AmqpMessage(body=body, application_properties={"k": "v"})  # type: ignore[arg-type]
    assert decode_message(encode_message(message)) == message


def test_decode_body_concatenates_data_sections_and_accepts_binary_amqp_value() -> None:
    assert decode_body(encode_message(AmqpMessage(body=Data((b"ab", b"", b"cd"))))) == b"abcd"
    assert decode_body(encode_message(AmqpMessage(body=AmqpValue(b"bin")))) == b"bin"
    assert decode_body(encode_message(AmqpMessage(properties=Properties(to="x")))) == b""
    assert decode_body(b"") == b""
    with pytest.raises(AmqpDecodeError, match="amqp-value section holding a string"):
        decode_body(encode_message(AmqpMessage(body=AmqpValue("text"))))
    with pytest.raises(AmqpDecodeError, match="amqp-sequence section holding a list"):
        decode_body(encode_message(AmqpMessage(body=AmqpSequence(([1],)))))


def test_encode_body_is_one_data_section_vbin8_or_vbin32() -> None:
    """§3.2.6 data: 'amqp:data:binary' 0x00000000:0x00000075, a binary value."""
    assert encode_body(b"hi") == H("005375a0026869")
    assert encode_body(b"") == H("005375a000")
    assert encode_body(bytearray(b"hi")) == H("005375a0026869")
    big = bytes(range(256)) * 3
    assert encode_body(big) == H("005375b000000300") + big
    assert encode_body(big) == encode_message(AmqpMessage(body=big))
    for raw in (encode_body(b"hi"), encode_body(big), H("005375b0000000026869")):
        assert decode_body(raw) == decode_message(raw).body


LAYOUT_ERRORS = [
    ("005375a000" "00537045", "header section after data", 5),
    ("00537045" "00537045", "header section after header", 4),
    ("005374c10100" "005373" "45", "properties section after application-properties", 6),
    ("005377a000" "005377a000", "amqp-value section after amqp-value", 5),
    ("005375a000" "005376" "45", "amqp-sequence section after data", 5),
    ("005378c10100" "005375a000", "data section after footer", 6),
    ("005375a000" "005371c10100", "delivery-annotations section after data", 5),
    ("40", "starts with 0x40, not a descriptor", 0),
    ("005379" "40", "ULong(121) is not a message section descriptor", 0),
    ("00a303666f6f" "40", "Symbol('foo') is not a message section descriptor", 0),
    ("005375" "a1026869", "data section holds a string, not a binary", 0),
    ("005374" "45", "application-properties section holds a list, not a map", 0),
    ("005370" "40", "header section holds a null, not a list", 0),
]


@pytest.mark.parametrize(
    ("encoding", "complaint", "offset"), LAYOUT_ERRORS, ids=[e[1] for e in LAYOUT_ERRORS]
)
def test_sections_out_of_order_repeated_or_of_the_wrong_type_are_refused(
    encoding: str, complaint: str, offset: int
) -> None:
    """§3.2: 'header? delivery-annotations? message-annotations? properties?
    application-properties? body footer?' where the body is 'data+ / amqp-sequence+ /
    amqp-value'."""
    for decode in (decode_message, decode_body):
        with pytest.raises(AmqpDecodeError, match=re.escape(complaint)) as caught:
            decode(H(encoding))
        assert caught.value.offset == offset


FIELD_ERRORS = [
    ("005370c0020141" "ff", "a section starts with 0xff, not a descriptor", 7),
    ("005370c003015201", "header field 'durable' (field 0) is a uint, not boolean", 0),
    ("005370c00402405205", "header field 'priority' (field 1) is a uint, not ubyte", 0),
    ("005370c0" "0706" + "40" * 6, "header list has 6 fields, the spec defines 5", 0),
    ("005373c0030240a3", "the length of a symbol needs 1 bytes, 0 remain", 8),
    ("005373c0040240a100", "properties field 'user-id' (field 1) is a string, not binary", 0),
    ("005373c00201a300", "the length of a symbol needs 1 bytes, 0 remain", 7),
    ("005373c00301a300", "'message-id' (field 0) is a symbol, not ulong or uuid or binary", 0),
    ("005373c005034040" "5505", "properties field 'to' (field 2) is a long, not string", 0),
    ("005373c00907" + "40" * 6 + "a100", "'content-type' (field 6) is a string, not symbol", 0),
    ("005373c00c0a" + "40" * 9 + "5505", "'creation-time' (field 9) is a long, not timestamp", 0),
    ("005373c0" "0f0e" + "40" * 14, "properties list has 14 fields", 0),
    ("005372c104025501" "40", "message-annotations key Long(1) is a long", 0),
    ("005374c10502a3016b" "40", "application-properties key Symbol('k') is a symbol", 0),
    ("005374c10502a1016b" "45", "value of 'k' is a list: values are simple types only", 0),
    ("005378c1030241" "40", "footer key True is a boolean", 0),
]


@pytest.mark.parametrize(
    ("encoding", "complaint", "offset"), FIELD_ERRORS, ids=[e[1] for e in FIELD_ERRORS]
)
def test_section_fields_of_the_wrong_type_are_refused_by_decode_message(
    encoding: str, complaint: str, offset: int
) -> None:
    """§3.2.1 header fields (durable: boolean, priority: ubyte, ...), §3.2.4
    properties (message-id: message-id-ulong/-uuid/-binary/-string, user-id: binary,
    to: address-string, content-type: symbol, creation-time: timestamp, ...), §3.2.10
    annotations 'keys are restricted to be of type symbol or of type ulong', §3.2.5
    application-properties 'keys ... string ... values ... simple types only'."""
    with pytest.raises(AmqpDecodeError, match=re.escape(complaint)) as caught:
        decode_message(H(encoding))
    assert caught.value.offset == offset


@pytest.mark.parametrize(
    ("message", "complaint"),
    [
        (AmqpMessage(application_properties={"k": [1]}), "simple types only"),
        (AmqpMessage(application_properties={Symbol("k"): 1}), "is not a string"),
        (AmqpMessage(message_annotations={1.5: 1}), "keys are symbols or ulongs"),  # type: ignore[dict-item]
        (AmqpMessage(footer={True: 1}), "keys are symbols or ulongs"),
        (AmqpMessage(header=Header(priority=256)), "out of range for ubyte"),
        (AmqpMessage(header=Header(durable=1)), "durable is a boolean"),  # type: ignore[arg-type]
        (AmqpMessage(properties=Properties(to=b"x")), "to is a string"),  # type: ignore[arg-type]
        (AmqpMessage(properties=Properties(message_id=1.5)), "message-id is a ulong"),  # type: ignore[arg-type]
        (AmqpMessage(properties=Properties(content_type="é")), "not seven-bit ASCII"),
        (AmqpMessage(properties=Properties(group_sequence=-1)), "out of range for uint"),
        (AmqpMessage(properties=Properties(creation_time="now")), "is an integer"),  # type: ignore[arg-type]
        (AmqpMessage(body=Data(())), "one or more sections"),
        (AmqpMessage(body=AmqpSequence(())), "one or more sections"),
        (AmqpMessage(body="text"), "no AMQP message body"),  # type: ignore[arg-type]
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_messages_the_spec_cannot_carry_raise_amqp_encode_error(
    message: AmqpMessage, complaint: str
) -> None:
    with pytest.raises(AmqpEncodeError, match=complaint):
        encode_message(message)


# --- hypothesis: arbitrary values and messages round trip --------------------------------

ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=20)
int64 = st.integers(-(2**63), 2**63 - 1)
binary = st.one_of(st.binary(max_size=20), st.binary(min_size=250, max_size=300))

scalar_strategies: dict[str, st.SearchStrategy[object]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "ubyte": st.integers(0, 2**8 - 1).map(UByte),
    "ushort": st.integers(0, 2**16 - 1).map(UShort),
    "uint": st.integers(0, 2**32 - 1).map(UInt),
    "ulong": st.integers(0, 2**64 - 1).map(ULong),
    "byte": st.integers(-(2**7), 2**7 - 1).map(Byte),
    "short": st.integers(-(2**15), 2**15 - 1).map(Short),
    "int": st.integers(-(2**31), 2**31 - 1).map(Int),
    "long": int64.map(Long),
    "float": st.floats(width=32, allow_nan=False).map(Float),
    "double": st.floats(allow_nan=False),
    "decimal32": st.binary(min_size=4, max_size=4).map(Decimal32),
    "decimal64": st.binary(min_size=8, max_size=8).map(Decimal64),
    "decimal128": st.binary(min_size=16, max_size=16).map(Decimal128),
    "char": st.characters(codec="utf-8").map(Char),
    "timestamp": int64.map(Timestamp),
    "uuid": st.uuids(),
    "binary": binary,
    "string": st.text(max_size=20),
    "symbol": ascii_text.map(Symbol),
}
scalars = st.one_of(*scalar_strategies.values(), int64)
keys = st.one_of(
    st.text(max_size=8), ascii_text.map(Symbol), st.integers(0, 2**64 - 1).map(ULong), int64
)
descriptors = st.one_of(ascii_text.map(Symbol), st.integers(0, 2**64 - 1).map(ULong))


def _scalar_arrays() -> st.SearchStrategy[Array]:
    return st.sampled_from(sorted(scalar_strategies)).flatmap(
        lambda name: st.builds(
            Array,
            st.just(name),
            st.lists(scalar_strategies[name], max_size=5).map(tuple),
            st.one_of(st.none(), descriptors),
        )
    )


def _compounds(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    lists = st.lists(children, max_size=4)
    maps = st.dictionaries(keys, children, max_size=4)
    return st.one_of(
        lists,
        maps,
        st.builds(Described, descriptors, children),
        st.builds(Array, st.just("list"), st.lists(lists, max_size=3).map(tuple)),
        st.builds(Array, st.just("map"), st.lists(maps, max_size=3).map(tuple)),
        st.builds(Array, st.just("array"), st.lists(_scalar_arrays(), max_size=3).map(tuple)),
    )


values = st.recursive(st.one_of(scalars, _scalar_arrays()), _compounds, max_leaves=20)


@given(values)
def test_any_value_round_trips_with_its_type(value: object) -> None:
    encoded = encode_value(value)
    decoded = decode_value(encoded)
    assert decoded == value
    assert encode_value(decoded) == encoded  # same AMQP types all the way down


@given(st.floats(width=32).map(Float) | st.floats())
def test_floats_round_trip_bit_for_bit_including_nan(value: float) -> None:
    encoded = encode_value(value)
    assert encode_value(decode_value(encoded)) == encoded


message_ids = st.one_of(
    st.integers(0, 2**64 - 1), st.uuids(), st.binary(max_size=16), st.text(max_size=16)
)
simple_values = st.one_of(scalars, st.builds(Described, descriptors, scalars))
annotation_maps = st.dictionaries(
    st.one_of(ascii_text, st.integers(0, 2**64 - 1)), values, max_size=3
)
headers = st.builds(
    Header,
    st.none() | st.booleans(),
    st.none() | st.integers(0, 255),
    st.none() | st.integers(0, 2**32 - 1),
    st.none() | st.booleans(),
    st.none() | st.integers(0, 2**32 - 1),
)
properties = st.builds(
    Properties,
    st.none() | message_ids,
    st.none() | st.binary(max_size=8),
    st.none() | st.text(max_size=8),
    st.none() | st.text(max_size=8),
    st.none() | st.text(max_size=8),
    st.none() | message_ids,
    st.none() | ascii_text,
    st.none() | ascii_text,
    st.none() | int64,
    st.none() | int64,
    st.none() | st.text(max_size=8),
    st.none() | st.integers(0, 2**32 - 1),
    st.none() | st.text(max_size=8),
)
bodies = st.one_of(
    st.none(),
    binary,
    st.lists(binary, min_size=2, max_size=3).map(lambda sections: Data(tuple(sections))),
    st.lists(st.lists(values, max_size=3), min_size=1, max_size=3).map(
        lambda sections: AmqpSequence(tuple(sections))
    ),
    values.map(AmqpValue),
)
messages = st.builds(
    AmqpMessage,
    bodies,
    st.none() | headers,
    st.none() | annotation_maps,
    st.none() | annotation_maps,
    st.none() | properties,
    st.none() | st.dictionaries(st.text(max_size=8), simple_values, max_size=4),
    st.none() | annotation_maps,
)


@given(messages)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_any_message_round_trips(message: AmqpMessage) -> None:
    encoded = encode_message(message)
    decoded = decode_message(encoded)
    assert decoded == message
    assert encode_message(decoded) == encoded


@given(messages)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_decode_body_agrees_with_decode_message(message: AmqpMessage) -> None:
    encoded = encode_message(message)
    body = message.body
    if body is None:
        assert decode_body(encoded) == b""
    elif isinstance(body, bytes):
        assert decode_body(encoded) == body
    elif isinstance(body, Data):
        assert decode_body(encoded) == b"".join(body.sections)
    elif isinstance(body, AmqpValue) and isinstance(body.value, bytes):
        assert decode_body(encoded) == body.value
    else:
        with pytest.raises(AmqpDecodeError, match="not binary data"):
            decode_body(encoded)


@given(st.binary(max_size=70_000))
def test_encode_body_and_decode_body_round_trip_any_bytes(body: bytes) -> None:
    assert decode_body(encode_body(body)) == body
    assert decode_message(encode_body(body)).body == body


@given(st.lists(st.one_of(st.binary(max_size=300).map(encode_body), st.binary(max_size=12))))
def test_data_bodies_gives_decode_body_or_leaves_the_record_to_it(records: list[bytes]) -> None:
    """A consumer decodes a chunk's bodies at once (issue 30): every body it gives is
    the one ``decode_body`` gives, and a record it does not give (None) is left to
    ``decode_body``, which answers or refuses it when ``body`` is read; a plain Data
    section of up to 255 bytes is always given."""
    bodies = data_bodies(records)
    assert len(bodies) == len(records)
    for record, body in zip(records, bodies):
        if body is not None:
            assert body == decode_body(record)
        elif len(record) - 5 < 256 and record[:5] == encode_body(record[5:])[:5]:
            raise AssertionError(f"{record!r}: a one-section body left undecoded")
    short = [encode_body(b""), encode_body(b"hi"), H("005375a0"), H("005375a00268")]
    assert data_bodies(short) == [b"", b"hi", None, None]


# --- robustness: arbitrary and mutated bytes give AmqpDecodeError only --------------------


def _decodes_or_raises_amqp_decode_error(raw: bytes) -> None:
    for decode in (decode_value, decode_message, decode_body):
        try:
            decode(raw)
        except AmqpDecodeError:
            pass


@given(st.binary(max_size=200))
def test_random_bytes_decode_or_raise_amqp_decode_error(raw: bytes) -> None:
    _decodes_or_raises_amqp_decode_error(raw)


@given(st.lists(st.sampled_from([0x00, 0x40, 0x45, 0x53, 0x75, 0xA0, 0xA1, 0xA3, 0xC0,
                                 0xC1, 0xD0, 0xE0, 0xF0, 0x56, 0x73, 0x01, 0xFF]),
                max_size=60).map(bytes))  # fmt: skip
def test_random_constructor_soup_decodes_or_raises_amqp_decode_error(raw: bytes) -> None:
    _decodes_or_raises_amqp_decode_error(raw)


@given(messages, st.randoms(use_true_random=False))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_mutated_valid_messages_decode_or_raise_amqp_decode_error(
    message: AmqpMessage, rng: random.Random
) -> None:
    encoded = bytearray(encode_message(message))
    assume(encoded)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(4)
        at = rng.randrange(len(encoded)) if encoded else 0
        if kind == 0 and encoded:
            encoded[at] = rng.randrange(256)
        elif kind == 1:
            encoded.insert(at, rng.choice([0x00, 0xFF, 0x40, 0xB0, 0xD0, rng.randrange(256)]))
        elif kind == 2 and encoded:
            del encoded[at]
        else:
            del encoded[at:]
    _decodes_or_raises_amqp_decode_error(bytes(encoded))


def test_a_full_message_cut_anywhere_but_between_sections_raises_amqp_decode_error() -> None:
    """Cut between two sections, the rest is a valid (shorter) message; cut anywhere
    else, it is malformed."""
    m = EVERY_SECTION
    sections = [
        AmqpMessage(header=m.header),
        AmqpMessage(delivery_annotations=m.delivery_annotations),
        AmqpMessage(message_annotations=m.message_annotations),
        AmqpMessage(properties=m.properties),
        AmqpMessage(application_properties=m.application_properties),
        AmqpMessage(body=m.body),
        AmqpMessage(footer=m.footer),
    ]
    boundaries = {0}
    for section in sections:
        boundaries.add(max(boundaries) + len(encode_message(section)))
    encoded = encode_message(m)
    assert max(boundaries) == len(encoded)
    for end in range(len(encoded) + 1):
        if end in boundaries:
            decode_message(encoded[:end])
            decode_body(encoded[:end])
        else:
            with pytest.raises(AmqpDecodeError):
                decode_message(encoded[:end])
            with pytest.raises(AmqpDecodeError):
                decode_body(encoded[:end])


# --- interop with rstream (its _pyamqp encoder and decoder) --------------------------------


@pytest.mark.peer
def test_rstream_messages_decode_with_ours_to_the_same_fields() -> None:
    from rstream._pyamqp.message import Header as RHeader  # type: ignore[attr-defined]
    from rstream._pyamqp.message import Properties as RProperties  # type: ignore[attr-defined]
    from rstream.amqp import AMQPMessage

    theirs = AMQPMessage(
        body=b"payload",
        header=RHeader(durable=True, priority=5, ttl=1000, first_acquirer=False, delivery_count=2),
        message_annotations={"x-opt-a": "z"},
        properties=RProperties(
            message_id="id-1",
            user_id=b"guest",
            to="q",
            subject="s",
            reply_to="r",
            correlation_id=uuid.UUID(int=5),
            content_type="application/json",
            content_encoding="gzip",
            absolute_expiry_time=1_700_000_000_000,
            creation_time=1_600_000_000_000,
            group_id="g",
            group_sequence=9,
            reply_to_group_id="rg",
        ),
        application_properties={"k": "v", "n": 42, "big": 2**40, "b": True, "f": 1.25},
        footer={"x-foot": 1},
    )
    ours = decode_message(bytes(theirs))
    assert ours == AmqpMessage(
        body=b"payload",
        header=Header(durable=True, priority=5, ttl=1000, first_acquirer=False, delivery_count=2),
        message_annotations={"x-opt-a": "z"},
        properties=Properties(
            message_id="id-1",
            user_id=b"guest",
            to="q",
            subject="s",
            reply_to="r",
            correlation_id=uuid.UUID(int=5),
            content_type="application/json",
            content_encoding="gzip",
            absolute_expiry_time=1_700_000_000_000,
            creation_time=1_600_000_000_000,
            group_id="g",
            group_sequence=9,
            reply_to_group_id="rg",
        ),
        application_properties={"k": "v", "n": 42, "big": 2**40, "b": True, "f": 1.25},
        footer={"x-foot": 1},
    )
    assert decode_body(bytes(theirs)) == b"payload"


@pytest.mark.peer
@given(
    st.binary(max_size=600),
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        st.one_of(st.text(max_size=8), int64, st.booleans(), st.binary(max_size=8)),
        max_size=4,
    ),
    st.none() | st.text(max_size=8),
    st.none() | st.integers(0, 2**63 - 1),
)
def test_rstream_encoded_body_and_properties_decode_with_ours(
    body: bytes, app_properties: dict[str, object], subject: str | None, created: int | None
) -> None:
    from rstream._pyamqp.message import Properties as RProperties  # type: ignore[attr-defined]
    from rstream.amqp import AMQPMessage

    theirs = AMQPMessage(
        body=body,
        application_properties=app_properties or None,
        properties=RProperties(subject=subject, creation_time=created),
    )
    raw = bytes(theirs)
    assert decode_body(raw) == body
    ours = decode_message(raw)
    assert ours.body == (body or None)  # rstream leaves out an empty body altogether
    assert ours.application_properties == (app_properties or None)
    assert ours.properties == Properties(subject=subject, creation_time=created)


# What rstream's decoder reads: no char, decimal or array; it returns strings and
# symbols as bytes and every integer as int.
rstream_scalars = st.one_of(
    *(scalar_strategies[name] for name in scalar_strategies if name not in
      ("char", "decimal32", "decimal64", "decimal128")),
    int64,
)  # fmt: skip
rstream_maps = st.dictionaries(ascii_text, rstream_scalars, max_size=3)
rstream_messages = st.builds(
    AmqpMessage,
    st.binary(min_size=1, max_size=300),
    st.none() | headers,
    st.none() | rstream_maps,
    st.none() | rstream_maps,
    st.none() | properties,
    st.none() | st.dictionaries(st.text(max_size=8), rstream_scalars, max_size=4),
    st.none() | rstream_maps,
)


def _as_rstream(value: object) -> object:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict):
        return {_as_rstream(k): _as_rstream(v) for k, v in value.items()}
    return value


@pytest.mark.peer
@given(rstream_messages)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_our_messages_decode_with_rstreams_decoder_to_the_same_fields(
    message: AmqpMessage,
) -> None:
    from rstream.amqp import amqp_decoder

    theirs = amqp_decoder(encode_message(message))
    assert theirs.body == message.body
    assert theirs.application_properties == _as_rstream(message.application_properties)
    assert theirs.delivery_annotations == _as_rstream(message.delivery_annotations)
    assert theirs.message_annotations == _as_rstream(message.message_annotations)
    assert theirs.footer == _as_rstream(message.footer)
    if message.header is None:
        assert theirs.header is None
    else:
        h = message.header
        fields = (h.durable, h.priority, h.ttl, h.first_acquirer, h.delivery_count)
        assert tuple(theirs.header) == fields
    if message.properties is None:
        assert theirs.properties is None
    else:
        p = message.properties
        expected = tuple(
            _as_rstream(getattr(p, name))
            for name in (
                "message_id", "user_id", "to", "subject", "reply_to", "correlation_id",
                "content_type", "content_encoding", "absolute_expiry_time", "creation_time",
                "group_id", "group_sequence", "reply_to_group_id",
            )
        )  # fmt: skip
        assert tuple(theirs.properties) == expected


@pytest.mark.peer
def test_rstream_delivery_annotations_come_after_the_body_and_are_refused() -> None:
    """rstream 1.1.1 writes delivery-annotations last (its comment: for Event Hubs);
    §3.2 puts them right after the header, so our decoder names the misplaced section."""
    from rstream.amqp import AMQPMessage

    raw = bytes(AMQPMessage(body=b"x", delivery_annotations={"x-d": 1}))
    with pytest.raises(AmqpDecodeError, match="delivery-annotations section after data"):
        decode_message(raw)
