"""The RSocket metadata extensions (runtime.rsocket.metadata).

Three kinds of tests:

- round trips (hypothesis): decode(encode(x)) == x for composite metadata, routing,
  authentication and per-stream data MIME types, and decoders given arbitrary bytes
  raise only ``MalformedMetadata``;
- one test per wire rule, malformed input included, named after the rule;
- interop with rsocket-py 0.4.20 (``@pytest.mark.peer``) in both directions: our bytes
  are rsocket-py's bytes and parse to the same values there, and rsocket-py's bytes
  decode to the same values here.  Where rsocket-py departs from the specs a
  ``test_peer_deviation_*`` test pins it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rsocket.exceptions import RSocketUnknownMimetype
from rsocket.extensions import helpers as peer
from rsocket.extensions.authentication import AuthenticationBearer, AuthenticationSimple
from rsocket.extensions.composite_metadata import CompositeMetadata
from rsocket.extensions.routing import RoutingMetadata

from wirestream.runtime.errors import (
    DecodeError,
    EncodeError,
    InvalidString,
    RemoteProtocolError,
    Truncated,
)
from wirestream.runtime.rsocket.errors import (
    InvalidMetadataText,
    InvalidMimeTypeName,
    MalformedMetadata,
    MetadataTrailingBytes,
    MetadataTruncated,
)
from wirestream.runtime.rsocket.metadata import (
    ACCEPT_MIME_TYPES,
    APPLICATION_JSON,
    AUTHENTICATION,
    COMPOSITE_METADATA,
    DATA_MIME_TYPE,
    ROUTING,
    TEXT_PLAIN,
    WELL_KNOWN_AUTH_IDS,
    WELL_KNOWN_AUTH_TYPES,
    WELL_KNOWN_MIME_IDS,
    WELL_KNOWN_MIME_TYPES,
    BearerAuth,
    MetadataEntry,
    SimpleAuth,
    UnknownAuth,
    decode_accept_mime_types,
    decode_auth,
    decode_composite,
    decode_data_mime_type,
    decode_route,
    encode_accept_mime_types,
    encode_auth,
    encode_bearer_auth,
    encode_composite,
    encode_data_mime_type,
    encode_route,
    encode_simple_auth,
    find_route,
    reserved_type_name,
    route,
    routes_of,
)

# --- strategies -----------------------------------------------------------------------

# Type names: printable US-ASCII, 1..128 bytes (never null terminated), or a well-known one.
custom_names = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=128
)
well_known_names = st.sampled_from(sorted(WELL_KNOWN_MIME_IDS))
mime_names = st.one_of(well_known_names, custom_names)
reserved_ids = st.integers(0, 127).filter(lambda i: i not in WELL_KNOWN_MIME_TYPES)


def _not_nul_terminated(text: str) -> bool:
    return not text.endswith("\x00")


texts = st.text(max_size=40).filter(_not_nul_terminated)  # UTF-8 strings: tags, credentials
tags = st.text(min_size=1, max_size=60).filter(
    lambda t: _not_nul_terminated(t) and len(t.encode()) <= 255
)


def expected_entry(mime: str | int, content: bytes) -> MetadataEntry:
    """What decoding (mime, content) gives back."""
    if isinstance(mime, int):
        if mime in WELL_KNOWN_MIME_TYPES:
            return MetadataEntry(WELL_KNOWN_MIME_TYPES[mime], content)
        return MetadataEntry(reserved_type_name(mime), content, mime)
    return MetadataEntry(mime, content)


entries = st.lists(
    st.tuples(st.one_of(mime_names, st.integers(0, 127)), st.binary(max_size=300)), max_size=8
)


# --- well-known MIME types ------------------------------------------------------------


def test_well_known_mime_table_matches_the_spec_mappings() -> None:
    # WellKnownMimeTypes.md: 0x00..0x28 then 0x7A..0x7F; the rest is reserved.
    assert sorted(WELL_KNOWN_MIME_TYPES) == [*range(0x00, 0x29), *range(0x7A, 0x80)]
    assert WELL_KNOWN_MIME_TYPES[0x05] == APPLICATION_JSON
    assert WELL_KNOWN_MIME_TYPES[0x21] == TEXT_PLAIN
    assert WELL_KNOWN_MIME_TYPES[0x28] == "application/cloudevents+json"
    assert WELL_KNOWN_MIME_TYPES[0x7A] == DATA_MIME_TYPE
    assert WELL_KNOWN_MIME_TYPES[0x7B] == ACCEPT_MIME_TYPES
    assert WELL_KNOWN_MIME_TYPES[0x7C] == AUTHENTICATION
    assert WELL_KNOWN_MIME_TYPES[0x7E] == ROUTING
    assert WELL_KNOWN_MIME_TYPES[0x7F] == COMPOSITE_METADATA
    assert {v: k for k, v in WELL_KNOWN_MIME_TYPES.items()} == dict(WELL_KNOWN_MIME_IDS)


def test_well_known_auth_table_is_simple_0_bearer_1() -> None:
    assert dict(WELL_KNOWN_AUTH_TYPES) == {0: "simple", 1: "bearer"}
    assert dict(WELL_KNOWN_AUTH_IDS) == {"simple": 0, "bearer": 1}


def test_well_known_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        WELL_KNOWN_MIME_TYPES[0x50] = "x/y"  # type: ignore[index]


# --- composite metadata: round trips and layout ---------------------------------------


@given(entries)
def test_composite_round_trip(items: list[tuple[str | int, bytes]]) -> None:
    assert decode_composite(encode_composite(items)) == [expected_entry(*i) for i in items]


@given(entries)
def test_composite_decoded_entries_re_encode_to_the_same_bytes(
    items: list[tuple[str | int, bytes]],
) -> None:
    wire = encode_composite(items)
    assert encode_composite(decode_composite(wire)) == wire


def test_composite_well_known_type_is_one_byte_with_m_flag_and_24_bit_length() -> None:
    assert encode_composite([(APPLICATION_JSON, b"{}")]) == b"\x85\x00\x00\x02{}"
    assert encode_composite([(5, b"{}")]) == b"\x85\x00\x00\x02{}"


def test_composite_custom_type_is_length_minus_one_then_ascii_name() -> None:
    # rsocket-java/js/py write "MIME ID/Len" as length - 1 (names are 1..128 bytes).
    assert encode_composite([("a/b", b"x")]) == b"\x02a/b\x00\x00\x01x"


def test_composite_length_byte_zero_means_a_one_byte_name() -> None:
    assert decode_composite(b"\x00z\x00\x00\x00") == [MetadataEntry("z", b"")]


def test_composite_name_of_128_bytes_uses_length_byte_127() -> None:
    name = "x" * 128
    wire = encode_composite([(name, b"")])
    assert wire[0] == 0x7F and decode_composite(wire) == [MetadataEntry(name, b"")]


def test_composite_24_bit_length_is_big_endian() -> None:
    content = bytes(0x010203)
    wire = encode_composite([(TEXT_PLAIN, content)])
    assert wire[:4] == b"\xa1\x01\x02\x03"
    assert decode_composite(wire)[0].content == content


def test_composite_of_no_entries_is_empty_metadata() -> None:
    assert encode_composite([]) == b""
    assert decode_composite(b"") == []


def test_composite_preserves_order_and_repeated_types() -> None:
    # "Multiple metadata payloads with the same MIME type are allowed.  The order of
    # metadata payloads MUST be preserved."
    items = [(ROUTING, b"\x01a"), ("x/y", b"1"), (ROUTING, b"\x01b")]
    assert decode_composite(encode_composite(items)) == [MetadataEntry(*i) for i in items]


def test_composite_decode_accepts_bytearray_and_memoryview() -> None:
    wire = encode_composite([(APPLICATION_JSON, b"{}")])
    assert decode_composite(bytearray(wire)) == decode_composite(memoryview(wire))
    assert isinstance(decode_composite(memoryview(wire))[0].content, bytes)


def test_composite_encode_accepts_bytearray_and_memoryview_content() -> None:
    expected = encode_composite([(APPLICATION_JSON, b"{}")])
    assert encode_composite([(APPLICATION_JSON, bytearray(b"{}"))]) == expected
    assert encode_composite([(APPLICATION_JSON, memoryview(b"{}"))]) == expected


def test_composite_reserved_well_known_id_is_kept_not_refused() -> None:
    # "if a consumer of the metadata is unaware of a particular type, it can be safely
    # skipped and the next one read" (rsocket-java/js: ReservedMimeTypeEntry).
    wire = b"\xd0\x00\x00\x02hi" + encode_composite([(APPLICATION_JSON, b"{}")])
    assert decode_composite(wire) == [
        MetadataEntry("unknown/80", b"hi", 0x50),
        MetadataEntry(APPLICATION_JSON, b"{}"),
    ]


def test_composite_reserved_entry_is_forwarded_as_its_id() -> None:
    wire = b"\xd0\x00\x00\x02hi"
    assert encode_composite(decode_composite(wire)) == wire
    assert MetadataEntry("unknown/80", b"hi", 0x50) != MetadataEntry("unknown/80", b"hi")


# --- composite metadata: malformed input, one rule each -------------------------------


def test_malformed_composite_24_bit_length_cut_off_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="24-bit Metadata Length") as info:
        decode_composite(b"\x85\x00\x00")
    assert info.value.needed == 4


def test_malformed_composite_missing_length_after_custom_name_is_truncated() -> None:
    with pytest.raises(MetadataTruncated):
        decode_composite(b"\x02a/b")


def test_malformed_composite_name_shorter_than_its_length_byte_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="name of 10 bytes") as info:
        decode_composite(b"\x09app")
    assert info.value.needed == 11


def test_malformed_composite_content_past_the_end_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="5 content bytes"):
        decode_composite(b"\x85\x00\x00\x05abc")


def test_malformed_composite_second_entry_truncated_is_reported() -> None:
    with pytest.raises(MetadataTruncated):
        decode_composite(b"\x85\x00\x00\x02{}\x85")


def test_malformed_composite_non_ascii_mime_name_is_invalid() -> None:
    # "This SHOULD be a US-ASCII string"; a str MIME type is only well defined for ASCII.
    with pytest.raises(InvalidMimeTypeName, match="not US-ASCII"):
        decode_composite(b"\x01\xc3\xa9\x00\x00\x00")


def test_malformed_composite_null_terminated_mime_name_is_invalid() -> None:
    # "The string MUST NOT be null terminated."
    with pytest.raises(InvalidMimeTypeName, match="null terminated"):
        decode_composite(b"\x03a/b\x00\x00\x00\x00")


def test_malformed_metadata_errors_are_decode_errors_of_the_one_tree() -> None:
    assert issubclass(MalformedMetadata, DecodeError)
    assert issubclass(MalformedMetadata, RemoteProtocolError)
    assert issubclass(MetadataTruncated, Truncated)
    assert issubclass(InvalidMimeTypeName, InvalidString)
    assert issubclass(InvalidMetadataText, InvalidString)


@given(st.binary(max_size=64))
def test_composite_decoder_raises_only_malformed_metadata_on_any_bytes(data: bytes) -> None:
    try:
        decode_composite(data)
    except MalformedMetadata:
        pass


@given(entries.filter(bool), st.data())
def test_every_cut_inside_an_entry_is_truncated(
    items: list[tuple[str | int, bytes]], data: st.DataObject
) -> None:
    wire = encode_composite(items)
    boundaries = {len(encode_composite(items[:k])) for k in range(len(items) + 1)}
    cut = data.draw(st.integers(0, len(wire) - 1).filter(lambda c: c not in boundaries))
    with pytest.raises(MetadataTruncated):
        decode_composite(wire[:cut])


# --- composite metadata: what cannot be encoded ----------------------------------------


@pytest.mark.parametrize(
    ("mime", "rule"),
    [
        ("", "1..128 bytes"),
        ("x" * 129, "1..128 bytes"),
        ("text/é", "not US-ASCII"),
        ("a/b\x00", "null terminated"),
        (-1, "0..127"),
        (128, "0..127"),
    ],
)
def test_encode_composite_refuses_a_type_the_header_cannot_carry(
    mime: str | int, rule: str
) -> None:
    with pytest.raises(EncodeError, match=rule.replace(".", r"\.")):
        encode_composite([(mime, b"")])


def test_encode_composite_refuses_content_over_24_bits() -> None:
    with pytest.raises(EncodeError, match="24-bit"):
        encode_composite([(APPLICATION_JSON, bytes(0x1000000))])


def test_encode_composite_accepts_content_of_exactly_24_bits() -> None:
    wire = encode_composite([(APPLICATION_JSON, bytes(0xFFFFFF))])
    assert wire[:4] == b"\x85\xff\xff\xff"


# --- routing --------------------------------------------------------------------------


@given(st.lists(tags, max_size=6))
def test_route_tags_round_trip(route_tags: list[str]) -> None:
    assert decode_route(encode_route(*route_tags)) == route_tags


def test_route_tag_is_length_byte_and_utf8() -> None:
    assert encode_route("/a", "é") == b"\x02/a\x02\xc3\xa9"


def test_route_tag_of_255_bytes_is_the_longest() -> None:
    tag = "t" * 255
    assert decode_route(encode_route(tag)) == [tag]
    with pytest.raises(EncodeError, match="1..255"):
        encode_route(tag + "t")


def test_route_tag_limit_counts_utf8_bytes_not_characters() -> None:
    with pytest.raises(EncodeError, match="256 bytes"):
        encode_route("é" * 128)


def test_encode_route_refuses_an_empty_tag() -> None:
    with pytest.raises(EncodeError, match="1..255"):
        encode_route("")


def test_decode_route_accepts_an_empty_tag() -> None:
    # The spec does not forbid a zero Tag Length; rsocket-java can send one.
    assert decode_route(b"\x00\x01a") == ["", "a"]


def test_malformed_route_tag_past_the_end_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="routing tag of 5 bytes"):
        decode_route(b"\x05abc")


def test_malformed_route_tag_not_utf8_is_invalid_text() -> None:
    with pytest.raises(InvalidMetadataText, match="not UTF-8"):
        decode_route(b"\x02\xc3\x28")


def test_malformed_route_tag_null_terminated_is_invalid_text() -> None:
    with pytest.raises(InvalidMetadataText, match="null terminated"):
        decode_route(b"\x02a\x00")


@given(st.binary(max_size=64))
def test_route_decoder_raises_only_malformed_metadata_on_any_bytes(data: bytes) -> None:
    try:
        decode_route(data)
    except MalformedMetadata:
        pass


def test_route_helper_is_composite_with_one_routing_entry() -> None:
    assert route("orders.get") == b"\xfe\x00\x00\x0b\x0aorders.get"
    assert decode_composite(route("a", "b")) == [MetadataEntry(ROUTING, b"\x01a\x01b")]


def test_route_helper_needs_a_tag() -> None:
    with pytest.raises(EncodeError):
        route()


def test_find_route_is_the_first_tag_of_the_first_routing_entry() -> None:
    metadata = encode_composite(
        [(APPLICATION_JSON, b"{}"), (ROUTING, encode_route("a", "b")), (ROUTING, b"\x01c")]
    )
    assert find_route(metadata) == "a"
    assert routes_of(metadata) == ["a", "b", "c"]
    assert find_route(decode_composite(metadata)) == "a"


def test_find_route_without_a_routing_entry_is_none() -> None:
    assert find_route(encode_composite([(APPLICATION_JSON, b"{}")])) is None
    assert find_route(b"") is None
    assert routes_of(b"") == []


def test_find_route_raises_on_a_malformed_routing_entry() -> None:
    with pytest.raises(MetadataTruncated):
        find_route(encode_composite([(ROUTING, b"\x09ab")]))


# --- authentication -------------------------------------------------------------------


@given(texts, texts)
def test_simple_auth_round_trip(username: str, password: str) -> None:
    assert decode_auth(encode_simple_auth(username, password)) == SimpleAuth(username, password)


@given(texts)
def test_bearer_auth_round_trip(token: str) -> None:
    assert decode_auth(encode_bearer_auth(token)) == BearerAuth(token)


@given(custom_names.filter(lambda n: n not in WELL_KNOWN_AUTH_IDS), st.binary(max_size=40))
def test_custom_auth_type_round_trip(auth_type: str, payload: bytes) -> None:
    assert decode_auth(encode_auth(auth_type, payload)) == UnknownAuth(auth_type, payload)


def test_simple_auth_is_a_flag_id_0_then_16_bit_username_length() -> None:
    # Simple.md: "Username Length: (16 bits ...)" (rsocket/rsocket#292).
    assert encode_simple_auth("user", "pw") == b"\x80\x00\x04userpw"


def test_bearer_auth_is_a_flag_id_1_then_token() -> None:
    assert encode_bearer_auth("tok") == b"\x81tok"


def test_well_known_auth_type_spelled_as_a_name_decodes_like_its_id() -> None:
    assert decode_auth(b"\x05simple\x00\x01up") == SimpleAuth("u", "p")
    assert decode_auth(b"\x05bearer" + b"t") == BearerAuth("t")


def test_auth_reserved_well_known_id_is_kept_as_unknown_auth() -> None:
    assert decode_auth(b"\x85xyz") == UnknownAuth("unknown/5", b"xyz", 5)


def test_simple_auth_username_of_65535_bytes_is_the_longest() -> None:
    user = "u" * 0xFFFF
    assert decode_auth(encode_simple_auth(user, "p")) == SimpleAuth(user, "p")
    with pytest.raises(EncodeError, match="65535"):
        encode_simple_auth(user + "u", "p")


def test_auth_values_keep_secrets_out_of_repr() -> None:
    assert "hunter2" not in repr(SimpleAuth("bob", "hunter2"))
    assert "s3cret" not in repr(BearerAuth("s3cret"))


def test_encode_auth_refuses_a_null_terminated_password() -> None:
    with pytest.raises(EncodeError, match="null terminated"):
        encode_simple_auth("u", "p\x00")


def test_encode_auth_refuses_a_string_with_a_lone_surrogate() -> None:
    with pytest.raises(EncodeError, match="UTF-8"):
        encode_bearer_auth("\ud800")


def test_malformed_auth_empty_metadata_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="no ID/Len byte"):
        decode_auth(b"")


def test_malformed_auth_custom_type_name_past_the_end_is_truncated() -> None:
    with pytest.raises(MetadataTruncated):
        decode_auth(b"\x07abc")


def test_malformed_auth_type_name_not_ascii_is_invalid() -> None:
    with pytest.raises(InvalidMimeTypeName):
        decode_auth(b"\x00\xff")


def test_malformed_simple_auth_username_length_cut_off_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="16-bit Username Length"):
        decode_auth(b"\x80\x00")


def test_malformed_simple_auth_username_past_the_end_is_truncated() -> None:
    with pytest.raises(MetadataTruncated, match="username of 5 bytes"):
        decode_auth(b"\x80\x00\x05abc")


def test_malformed_simple_auth_username_not_utf8_is_invalid_text() -> None:
    with pytest.raises(InvalidMetadataText, match="username"):
        decode_auth(b"\x80\x00\x01\xffpw")


def test_malformed_simple_auth_password_not_utf8_is_invalid_text() -> None:
    with pytest.raises(InvalidMetadataText, match="password"):
        decode_auth(b"\x80\x00\x01u\xff")


def test_malformed_bearer_token_not_utf8_is_invalid_text() -> None:
    with pytest.raises(InvalidMetadataText, match="bearer token"):
        decode_auth(b"\x81\xc3")


@given(st.binary(max_size=64))
def test_auth_decoder_raises_only_malformed_metadata_on_any_bytes(data: bytes) -> None:
    try:
        decode_auth(data)
    except MalformedMetadata:
        pass


# --- per-stream data MIME types -------------------------------------------------------


@given(mime_names)
def test_data_mime_type_round_trip(mime: str) -> None:
    assert decode_data_mime_type(encode_data_mime_type(mime)) == mime


@given(st.lists(mime_names, max_size=6))
def test_accept_mime_types_round_trip(mimes: list[str]) -> None:
    assert decode_accept_mime_types(encode_accept_mime_types(mimes)) == mimes


def test_data_mime_type_well_known_is_one_flagged_byte() -> None:
    assert encode_data_mime_type(APPLICATION_JSON) == b"\x85"
    assert encode_accept_mime_types([TEXT_PLAIN, "x/y"]) == b"\xa1\x02x/y"


def test_data_mime_type_reserved_id_decodes_to_its_placeholder() -> None:
    assert decode_data_mime_type(b"\xd0") == "unknown/80"
    assert decode_accept_mime_types(b"\xd0\x85") == ["unknown/80", APPLICATION_JSON]


def test_malformed_data_mime_type_empty_is_truncated() -> None:
    with pytest.raises(MetadataTruncated):
        decode_data_mime_type(b"")


def test_malformed_data_mime_type_with_trailing_bytes_is_refused() -> None:
    # message/x.rsocket.mime-type.v0 holds one "MIME ID/Len | Data Encoding MIME Type".
    with pytest.raises(MetadataTrailingBytes):
        decode_data_mime_type(b"\x85\x85")


def test_malformed_accept_mime_type_name_past_the_end_is_truncated() -> None:
    with pytest.raises(MetadataTruncated):
        decode_accept_mime_types(b"\x85\x09ab")


@given(st.binary(max_size=64))
def test_data_mime_decoders_raise_only_malformed_metadata_on_any_bytes(data: bytes) -> None:
    for decoder in (decode_data_mime_type, decode_accept_mime_types):
        try:
            decoder(data)
        except MalformedMetadata:
            pass


# --- interop with rsocket-py 0.4.20 ---------------------------------------------------
# rsocket-py names: rsocket.extensions.helpers (composite, route, authenticate_simple,
# authenticate_bearer, data_mime_type, data_mime_types, metadata_item),
# rsocket.extensions.composite_metadata.CompositeMetadata (parse/serialize).


# rsocket-py refuses well-known ids it does not know (pinned below), so peer tests use
# names and known ids only.
peer_entries = st.lists(st.tuples(mime_names, st.binary(max_size=100)), max_size=6)


def peer_view(item: Any) -> tuple[str, Any]:
    """One rsocket-py composite item as (MIME type, decoded value) in our vocabulary."""
    mime = bytes(item.encoding).decode("ascii")
    if mime == ROUTING:
        return mime, [bytes(t).decode() for t in item.tags]
    if mime == AUTHENTICATION:
        auth = item.authentication
        if isinstance(auth, AuthenticationSimple):
            return mime, SimpleAuth(auth.username.decode(), auth.password.decode())
        assert isinstance(auth, AuthenticationBearer)
        return mime, BearerAuth(auth.token.decode())
    if mime == DATA_MIME_TYPE:
        return mime, bytes(item.data_encoding).decode("ascii")
    if mime == ACCEPT_MIME_TYPES:
        return mime, [bytes(e).decode("ascii") for e in item.data_encodings]
    return mime, bytes(item.content)


def our_view(entry: MetadataEntry) -> tuple[str, Any]:
    """One of our decoded entries in the same vocabulary."""
    decoders: dict[str, Any] = {
        ROUTING: decode_route,
        AUTHENTICATION: decode_auth,
        DATA_MIME_TYPE: decode_data_mime_type,
        ACCEPT_MIME_TYPES: decode_accept_mime_types,
    }
    decode = decoders.get(entry.mime_type)
    return entry.mime_type, decode(entry.content) if decode else entry.content


def peer_parse(wire: bytes) -> list[tuple[str, Any]]:
    return [peer_view(item) for item in CompositeMetadata().parse(wire).items]


# A composite of typed entries: (our (mime, content) pair, the equal rsocket-py item).
def _typed_entry(kind: str, draw: st.DrawFn) -> tuple[tuple[str, bytes], Any]:
    if kind == "route":
        ts = draw(st.lists(tags, min_size=1, max_size=4))
        return (ROUTING, encode_route(*ts)), peer.route(*ts)
    if kind == "simple":
        u, p = draw(texts), draw(texts)
        return (AUTHENTICATION, encode_simple_auth(u, p)), peer.authenticate_simple(u, p)
    if kind == "bearer":
        t = draw(texts)
        return (AUTHENTICATION, encode_bearer_auth(t)), peer.authenticate_bearer(t)
    if kind == "data_mime":
        m = draw(mime_names)
        return (DATA_MIME_TYPE, encode_data_mime_type(m)), peer.data_mime_type(m.encode())
    if kind == "accept":
        ms = draw(st.lists(mime_names, max_size=4))
        return (ACCEPT_MIME_TYPES, encode_accept_mime_types(ms)), peer.data_mime_types(
            *(m.encode() for m in ms)
        )
    m = draw(mime_names.filter(lambda n: n not in (ROUTING, AUTHENTICATION)))
    m = m if m not in (DATA_MIME_TYPE, ACCEPT_MIME_TYPES) else TEXT_PLAIN
    content = draw(st.binary(max_size=100))
    return (m, content), peer.metadata_item(content, m.encode())


@st.composite
def typed_composites(draw: st.DrawFn) -> tuple[list[tuple[str, bytes]], list[Any]]:
    kinds = draw(
        st.lists(
            st.sampled_from(["route", "simple", "bearer", "data_mime", "accept", "raw"]),
            max_size=6,
        )
    )
    pairs = [_typed_entry(kind, draw) for kind in kinds]
    return [ours for ours, _ in pairs], [theirs for _, theirs in pairs]


@pytest.mark.peer
@given(peer_entries)
def test_peer_our_composite_bytes_are_rsocket_py_bytes(items: list[tuple[str, bytes]]) -> None:
    peer_items = [peer.metadata_item(content, mime.encode()) for mime, content in items]
    assert encode_composite(items) == peer.composite(*peer_items)


@pytest.mark.peer
@given(typed_composites())
def test_peer_typed_composite_bytes_are_rsocket_py_bytes(
    composite: tuple[list[tuple[str, bytes]], list[Any]],
) -> None:
    ours, theirs = composite
    assert encode_composite(ours) == peer.composite(*theirs)


@pytest.mark.peer
@given(typed_composites())
def test_peer_rsocket_py_parses_our_composite_to_the_same_values(
    composite: tuple[list[tuple[str, bytes]], list[Any]],
) -> None:
    ours, _ = composite
    wire = encode_composite(ours)
    assert peer_parse(wire) == [our_view(e) for e in decode_composite(wire)]


@pytest.mark.peer
@given(typed_composites())
def test_peer_we_decode_rsocket_py_composite_to_the_same_values(
    composite: tuple[list[tuple[str, bytes]], list[Any]],
) -> None:
    _, theirs = composite
    wire = peer.composite(*theirs)
    assert [our_view(e) for e in decode_composite(wire)] == peer_parse(wire)


@pytest.mark.peer
@given(st.lists(tags, min_size=1, max_size=5))
def test_peer_route_helper_matches_rsocket_py_route(route_tags: list[str]) -> None:
    wire = peer.composite(peer.route(*route_tags))
    assert route(*route_tags) == wire
    assert find_route(wire) == route_tags[0]
    assert peer.require_route(CompositeMetadata().parse(route(*route_tags))) == route_tags[0]


@pytest.mark.peer
@given(st.lists(tags, max_size=5))
def test_peer_routing_content_matches_rsocket_py_routing_metadata(route_tags: list[str]) -> None:
    theirs = RoutingMetadata(list(route_tags)).serialize()
    assert encode_route(*route_tags) == theirs
    assert decode_route(theirs) == route_tags
    parsed = RoutingMetadata()
    parsed.parse(encode_route(*route_tags))
    assert [bytes(t).decode() for t in parsed.tags] == route_tags


@pytest.mark.peer
@given(texts, texts)
def test_peer_simple_auth_matches_rsocket_py(username: str, password: str) -> None:
    theirs = bytes(peer.authenticate_simple(username, password).serialize())
    assert encode_simple_auth(username, password) == theirs
    assert decode_auth(theirs) == SimpleAuth(username, password)


@pytest.mark.peer
@given(texts)
def test_peer_bearer_auth_matches_rsocket_py(token: str) -> None:
    theirs = bytes(peer.authenticate_bearer(token).serialize())
    assert encode_bearer_auth(token) == theirs
    assert decode_auth(theirs) == BearerAuth(token)


@pytest.mark.peer
def test_peer_deviation_rsocket_py_refuses_a_reserved_mime_id() -> None:
    # The composite spec says an unknown type "can be safely skipped and the next one
    # read"; rsocket-py raises instead.  We keep the entry (see the test above).
    wire = b"\xd0\x00\x00\x02hi" + encode_composite([(APPLICATION_JSON, b"{}")])
    with pytest.raises(RSocketUnknownMimetype):
        CompositeMetadata().parse(wire)
    assert decode_composite(wire)[1] == MetadataEntry(APPLICATION_JSON, b"{}")
