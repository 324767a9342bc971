"""RSocket metadata extensions, sans-I/O: bytes in, values out (and back).

The RSocket core passes metadata through uninterpreted; these extensions of the
rsocket/rsocket repository give it a shape (``Extensions/*.md``, all "incubating,
version 0"):

- Well-known MIME types (``WellKnownMimeTypes.md``): a 7-bit id for common types.
- Composite metadata (``CompositeMetadata.md``): several typed entries in one metadata
  field, ``message/x.rsocket.composite-metadata.v0``.
- Routing (``Routing.md``): a list of tags, ``message/x.rsocket.routing.v0``.
- Authentication (``Security/Authentication.md``, ``Simple.md``, ``Bearer.md``,
  ``WellKnownAuthTypes.md``): ``message/x.rsocket.authentication.v0``.
- Per-stream data MIME types (``PerStreamDataMimeTypesDefinition.md``):
  ``message/x.rsocket.mime-type.v0`` and ``message/x.rsocket.accept-mime-types.v0``.

A client that wants a server's router to find ``"orders.get"`` sends
``metadata=route("orders.get")``; a server reads it back with
``find_route(metadata)``.  Several entries go in one ``encode_composite`` call::

    encode_composite([(ROUTING, encode_route("orders.get")),
                      (AUTHENTICATION, encode_bearer_auth(token))])

Every decoder raises a ``wirestream.runtime.rsocket.errors.MalformedMetadata`` leaf (a
``wirestream.runtime.errors.DecodeError``) on bad bytes, never ``IndexError`` or
``UnicodeDecodeError``; every encoder raises ``wirestream.runtime.errors.EncodeError`` on a value
the extension cannot carry.

Two points where the prose of the specs and every implementation (rsocket-java,
rsocket-js, rsocket-py) read differently are settled in favour of the implementations,
so that bytes interoperate:

- A MIME (or authentication) type *name* is written with its length minus one in the
  7-bit "MIME ID/Len" field: names are 1..128 bytes ("7 bits = max value 2^7 = 128"),
  a length byte of 0 means a one-byte name, and an empty name cannot be written.
- A well-known id that this table does not define is *kept* (as an entry whose
  ``reserved_id`` is set), not refused: composite metadata "is designed such that if a
  consumer of the metadata is unaware of a particular type, it can be safely skipped and
  the next one read", and rsocket-java/js likewise yield a ``ReservedMimeTypeEntry``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Union

from wirestream.runtime.errors import EncodeError
from wirestream.runtime.rsocket.errors import (
    InvalidMetadataText,
    InvalidMimeTypeName,
    MetadataTrailingBytes,
    MetadataTruncated,
)

__all__ = [
    "WELL_KNOWN_MIME_TYPES",
    "WELL_KNOWN_MIME_IDS",
    "WELL_KNOWN_AUTH_TYPES",
    "WELL_KNOWN_AUTH_IDS",
    "APPLICATION_CBOR",
    "APPLICATION_JSON",
    "APPLICATION_OCTET_STREAM",
    "APPLICATION_PROTOBUF",
    "TEXT_PLAIN",
    "DATA_MIME_TYPE",
    "ACCEPT_MIME_TYPES",
    "AUTHENTICATION",
    "TRACING_ZIPKIN",
    "ROUTING",
    "COMPOSITE_METADATA",
    "AUTH_SIMPLE",
    "AUTH_BEARER",
    "MAX_TYPE_NAME_LENGTH",
    "MAX_ENTRY_LENGTH",
    "MAX_TAG_LENGTH",
    "MAX_USERNAME_LENGTH",
    "reserved_type_name",
    "BytesLike",
    "MetadataEntry",
    "encode_composite",
    "decode_composite",
    "encode_route",
    "decode_route",
    "route",
    "find_route",
    "routes_of",
    "SimpleAuth",
    "BearerAuth",
    "UnknownAuth",
    "Authentication",
    "encode_auth",
    "encode_simple_auth",
    "encode_bearer_auth",
    "decode_auth",
    "encode_data_mime_type",
    "decode_data_mime_type",
    "encode_accept_mime_types",
    "decode_accept_mime_types",
]

# --- well-known types -----------------------------------------------------------------

#: WellKnownMimeTypes.md "Mappings": id -> MIME type.  Ids 0x29..0x79 are reserved.
WELL_KNOWN_MIME_TYPES: Mapping[int, str] = MappingProxyType(
    {
        0x00: "application/avro",
        0x01: "application/cbor",
        0x02: "application/graphql",
        0x03: "application/gzip",
        0x04: "application/javascript",
        0x05: "application/json",
        0x06: "application/octet-stream",
        0x07: "application/pdf",
        0x08: "application/vnd.apache.thrift.binary",
        0x09: "application/vnd.google.protobuf",
        0x0A: "application/xml",
        0x0B: "application/zip",
        0x0C: "audio/aac",
        0x0D: "audio/mp3",
        0x0E: "audio/mp4",
        0x0F: "audio/mpeg3",
        0x10: "audio/mpeg",
        0x11: "audio/ogg",
        0x12: "audio/opus",
        0x13: "audio/vorbis",
        0x14: "image/bmp",
        0x15: "image/gif",
        0x16: "image/heic-sequence",
        0x17: "image/heic",
        0x18: "image/heif-sequence",
        0x19: "image/heif",
        0x1A: "image/jpeg",
        0x1B: "image/png",
        0x1C: "image/tiff",
        0x1D: "multipart/mixed",
        0x1E: "text/css",
        0x1F: "text/csv",
        0x20: "text/html",
        0x21: "text/plain",
        0x22: "text/xml",
        0x23: "video/H264",
        0x24: "video/H265",
        0x25: "video/VP8",
        0x26: "application/x-hessian",
        0x27: "application/x-java-object",
        0x28: "application/cloudevents+json",
        0x7A: "message/x.rsocket.mime-type.v0",
        0x7B: "message/x.rsocket.accept-mime-types.v0",
        0x7C: "message/x.rsocket.authentication.v0",
        0x7D: "message/x.rsocket.tracing-zipkin.v0",
        0x7E: "message/x.rsocket.routing.v0",
        0x7F: "message/x.rsocket.composite-metadata.v0",
    }
)
#: MIME type -> id (exact, case-sensitive match, as rsocket-java's ``fromString``).
WELL_KNOWN_MIME_IDS: Mapping[str, int] = MappingProxyType(
    {name: mime_id for mime_id, name in WELL_KNOWN_MIME_TYPES.items()}
)

APPLICATION_CBOR = "application/cbor"
APPLICATION_JSON = "application/json"
APPLICATION_OCTET_STREAM = "application/octet-stream"
APPLICATION_PROTOBUF = "application/vnd.google.protobuf"
TEXT_PLAIN = "text/plain"
DATA_MIME_TYPE = "message/x.rsocket.mime-type.v0"
ACCEPT_MIME_TYPES = "message/x.rsocket.accept-mime-types.v0"
AUTHENTICATION = "message/x.rsocket.authentication.v0"
TRACING_ZIPKIN = "message/x.rsocket.tracing-zipkin.v0"
ROUTING = "message/x.rsocket.routing.v0"
COMPOSITE_METADATA = "message/x.rsocket.composite-metadata.v0"

#: Security/WellKnownAuthTypes.md "Mappings" (``simple`` replaced the earlier ``basic``).
WELL_KNOWN_AUTH_TYPES: Mapping[int, str] = MappingProxyType({0x00: "simple", 0x01: "bearer"})
WELL_KNOWN_AUTH_IDS: Mapping[str, int] = MappingProxyType(
    {name: auth_id for auth_id, name in WELL_KNOWN_AUTH_TYPES.items()}
)
AUTH_SIMPLE = "simple"
AUTH_BEARER = "bearer"

#: "MIME ID/Length: (7 bits = max value 2^7 = 128)", written as length - 1.
MAX_TYPE_NAME_LENGTH = 128
#: "Metadata Length: (24 bits = max value 16,777,215)".
MAX_ENTRY_LENGTH = 0xFFFFFF
#: "Tag Length: (8 bits = max value 2^8-1 = 255)".
MAX_TAG_LENGTH = 0xFF
#: Simple.md "Username Length: (16 bits = max value 2^16-1 = 65535)" (rsocket/rsocket#292
#: widened it from 8 bits; rsocket-java#938 and rsocket-py follow).
MAX_USERNAME_LENGTH = 0xFFFF

#: What the decoders (and the content of entries, payloads) accept.
BytesLike = Union[bytes, bytearray, memoryview]

_WELL_KNOWN_FLAG = 0x80  # the M (or A) flag: "a well known value represented by a unique integer"
_ID_OR_LENGTH_MASK = 0x7F


def reserved_type_name(type_id: int) -> str:
    """The ``mime_type`` (or ``auth_type``) given to a well-known id that no table here
    defines: ``"unknown/<id>"``.  The id itself is kept in ``reserved_id``."""
    return f"unknown/{type_id}"


# --- the "M/A | ID/Len | name" header shared by composite, auth and data MIME types -----


def _encode_type(type_: str | int, ids: Mapping[str, int], what: str) -> bytes:
    """One byte for a well-known type (flag set), else length - 1 and the US-ASCII name."""
    if isinstance(type_, int):
        if not 0 <= type_ <= _ID_OR_LENGTH_MASK:
            raise EncodeError(f"{what} id {type_} is not a 7-bit well-known id (0..127)")
        return bytes((_WELL_KNOWN_FLAG | type_,))
    known = ids.get(type_)
    if known is not None:
        return bytes((_WELL_KNOWN_FLAG | known,))
    try:
        name = type_.encode("ascii")
    except UnicodeEncodeError:
        raise EncodeError(f"{what} {type_!r} is not US-ASCII") from None
    if not 1 <= len(name) <= MAX_TYPE_NAME_LENGTH:
        raise EncodeError(
            f"{what} {type_!r} is {len(name)} bytes; a name is 1..{MAX_TYPE_NAME_LENGTH} bytes"
        )
    if name.endswith(b"\x00"):
        raise EncodeError(f"{what} {type_!r} is null terminated (the spec says MUST NOT)")
    return bytes((len(name) - 1,)) + name


def _decode_type(
    data: bytes, offset: int, names: Mapping[int, str], what: str
) -> tuple[str, int | None, int]:
    """Read the header at ``offset``: (name, reserved id or None, offset after it)."""
    if offset >= len(data):
        raise MetadataTruncated(f"{what}: no ID/Len byte at offset {offset}", needed=offset + 1)
    first = data[offset]
    if first & _WELL_KNOWN_FLAG:
        type_id = first & _ID_OR_LENGTH_MASK
        name = names.get(type_id)
        if name is None:
            return reserved_type_name(type_id), type_id, offset + 1
        return name, None, offset + 1
    start = offset + 1
    end = start + (first & _ID_OR_LENGTH_MASK) + 1  # length - 1 on the wire
    if end > len(data):
        raise MetadataTruncated(
            f"{what}: name of {end - start} bytes at offset {start} runs past the end "
            f"({len(data)} bytes)",
            needed=end,
        )
    raw = data[start:end]
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidMimeTypeName(f"{what} {raw!r} at offset {start} is not US-ASCII") from None
    if text.endswith("\x00"):
        raise InvalidMimeTypeName(f"{what} {raw!r} at offset {start} is null terminated")
    return text, None, end


def _encode_text(value: str, what: str) -> bytes:
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        raise EncodeError(f"{what} {value!r} cannot be encoded as UTF-8") from None
    if raw.endswith(b"\x00"):
        raise EncodeError(f"{what} {value!r} is null terminated (the spec says MUST NOT)")
    return raw


def _decode_text(raw: bytes, what: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidMetadataText(
            f"{what} is not UTF-8: {exc.reason} at byte {exc.start}"
        ) from None
    if text.endswith("\x00"):
        raise InvalidMetadataText(f"{what} {text!r} is null terminated")
    return text


# --- composite metadata ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetadataEntry:
    """One entry of composite metadata.

    ``mime_type`` is the entry's MIME type, whether it came as a well-known id or as a
    name.  A well-known id that the table does not define is kept: ``mime_type`` is
    ``reserved_type_name(id)`` and ``reserved_id`` the id, so the entry can be skipped or
    forwarded unchanged (``encode_composite`` accepts entries back).
    """

    mime_type: str
    content: bytes
    reserved_id: int | None = None


def encode_composite(entries: Iterable[tuple[str | int, BytesLike] | MetadataEntry]) -> bytes:
    """Composite metadata holding ``entries`` in order.

    Each entry is ``(mime_type, content)`` or a decoded ``MetadataEntry``.  A well-known
    MIME type (by name or by int id, 0..127) goes as one byte with the M flag set, any
    other as its length-prefixed US-ASCII name; then a 24-bit content length.
    """
    parts: list[bytes] = []
    for entry in entries:
        if isinstance(entry, MetadataEntry):
            mime: str | int = entry.mime_type if entry.reserved_id is None else entry.reserved_id
            content = entry.content
        else:
            mime, content = entry[0], bytes(entry[1])
        if len(content) > MAX_ENTRY_LENGTH:
            raise EncodeError(
                f"composite metadata entry {mime!r} holds {len(content)} bytes; "
                f"the 24-bit Metadata Length allows {MAX_ENTRY_LENGTH}"
            )
        parts.append(_encode_type(mime, WELL_KNOWN_MIME_IDS, "MIME type"))
        parts.append(len(content).to_bytes(3, "big"))
        parts.append(content)
    return b"".join(parts)


def decode_composite(data: BytesLike) -> list[MetadataEntry]:
    """The entries of composite metadata, in order ("The order of metadata payloads MUST
    be preserved").  Empty metadata is no entries."""
    data = bytes(data)  # one copy; slices of bytes are bytes
    entries: list[MetadataEntry] = []
    offset = 0
    while offset < len(data):
        mime_type, reserved_id, offset = _decode_type(
            data, offset, WELL_KNOWN_MIME_TYPES, "composite metadata MIME type"
        )
        if offset + 3 > len(data):
            raise MetadataTruncated(
                f"composite metadata entry {mime_type!r}: the 24-bit Metadata Length at "
                f"offset {offset} is cut off ({len(data) - offset} of 3 bytes)",
                needed=offset + 3,
            )
        length = int.from_bytes(data[offset : offset + 3], "big")
        offset += 3
        end = offset + length
        if end > len(data):
            raise MetadataTruncated(
                f"composite metadata entry {mime_type!r}: {length} content bytes at offset "
                f"{offset} run past the end ({len(data)} bytes)",
                needed=end,
            )
        entries.append(MetadataEntry(mime_type, data[offset:end], reserved_id))
        offset = end
    return entries


# --- routing --------------------------------------------------------------------------


def encode_route(*tags: str) -> bytes:
    """Routing metadata (the content of a ``ROUTING`` entry): each tag as a 1-byte length
    and its UTF-8 bytes.  A tag is 1..255 bytes (an empty tag routes nowhere)."""
    parts: list[bytes] = []
    for tag in tags:
        raw = _encode_text(tag, "routing tag")
        if not 1 <= len(raw) <= MAX_TAG_LENGTH:
            raise EncodeError(
                f"routing tag {tag!r} is {len(raw)} bytes in UTF-8; a tag is 1..{MAX_TAG_LENGTH}"
            )
        parts.append(bytes((len(raw),)))
        parts.append(raw)
    return b"".join(parts)


def decode_route(data: BytesLike) -> list[str]:
    """The tags of routing metadata ("Any number of complete tag payloads").

    An empty tag (length 0) is accepted: the spec does not forbid it and rsocket-java
    can send one.
    """
    data = bytes(data)
    tags: list[str] = []
    offset = 0
    while offset < len(data):
        start = offset + 1
        end = start + data[offset]
        if end > len(data):
            raise MetadataTruncated(
                f"routing tag of {data[offset]} bytes at offset {start} runs past the end "
                f"({len(data)} bytes)",
                needed=end,
            )
        tags.append(_decode_text(data[start:end], f"routing tag at offset {start}"))
        offset = end
    return tags


def route(*tags: str) -> bytes:
    """Composite metadata with one routing entry: what a requester passes as
    ``metadata=`` (with the connection's metadata MIME type ``COMPOSITE_METADATA``) so
    that the responder's router finds ``tags[0]``."""
    if not tags:
        raise EncodeError("route() needs at least one tag")
    return encode_composite([(ROUTING, encode_route(*tags))])


def _entries(metadata: BytesLike | Iterable[MetadataEntry]) -> Iterable[MetadataEntry]:
    if isinstance(metadata, (bytes, bytearray, memoryview)):
        return decode_composite(bytes(metadata))
    return metadata


def routes_of(metadata: BytesLike | Iterable[MetadataEntry]) -> list[str]:
    """Every tag of every routing entry of composite metadata (bytes or decoded entries),
    in order."""
    return [
        tag
        for entry in _entries(metadata)
        if entry.mime_type == ROUTING and entry.reserved_id is None
        for tag in decode_route(entry.content)
    ]


def find_route(metadata: BytesLike | Iterable[MetadataEntry]) -> str | None:
    """The route of a request: the first tag of the first routing entry of composite
    metadata, or None when it has none."""
    routes = routes_of(metadata)
    return routes[0] if routes else None


# --- authentication -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SimpleAuth:
    """``simple`` authentication (Security/Simple.md): username and password."""

    username: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class BearerAuth:
    """``bearer`` authentication (Security/Bearer.md): one token."""

    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class UnknownAuth:
    """An authentication type this module does not decode: a custom type name, or a
    well-known id the table does not define (``reserved_id`` set, ``auth_type`` then
    ``reserved_type_name(id)``).  ``payload`` is left undecoded."""

    auth_type: str
    payload: bytes = field(repr=False)
    reserved_id: int | None = None


Authentication = Union[SimpleAuth, BearerAuth, UnknownAuth]


def encode_auth(auth_type: str | int, payload: BytesLike) -> bytes:
    """Authentication metadata (the content of an ``AUTHENTICATION`` entry) of any type:
    a well-known type (name or id) as one byte with the A flag set, another as its
    length-prefixed US-ASCII name, then the payload."""
    return _encode_type(auth_type, WELL_KNOWN_AUTH_IDS, "authentication type") + bytes(payload)


def encode_simple_auth(username: str, password: str) -> bytes:
    """``simple`` authentication metadata: 16-bit username length, username, password."""
    user = _encode_text(username, "username")
    if len(user) > MAX_USERNAME_LENGTH:
        raise EncodeError(
            f"username is {len(user)} bytes in UTF-8; Username Length allows "
            f"{MAX_USERNAME_LENGTH}"
        )
    secret = _encode_text(password, "password")
    return encode_auth(AUTH_SIMPLE, len(user).to_bytes(2, "big") + user + secret)


def encode_bearer_auth(token: str) -> bytes:
    """``bearer`` authentication metadata: the UTF-8 token."""
    return encode_auth(AUTH_BEARER, _encode_text(token, "bearer token"))


def decode_auth(data: BytesLike) -> Authentication:
    """Authentication metadata: ``SimpleAuth``, ``BearerAuth`` or ``UnknownAuth``.  A
    well-known type spelled as its name (``"simple"``) decodes like its id."""
    data = bytes(data)
    auth_type, reserved_id, offset = _decode_type(
        data, 0, WELL_KNOWN_AUTH_TYPES, "authentication type"
    )
    payload = data[offset:]
    if reserved_id is None and auth_type == AUTH_SIMPLE:
        if len(payload) < 2:
            raise MetadataTruncated(
                f"simple authentication: the 16-bit Username Length is cut off "
                f"({len(payload)} of 2 bytes)",
                needed=offset + 2,
            )
        end = 2 + int.from_bytes(payload[:2], "big")
        if end > len(payload):
            raise MetadataTruncated(
                f"simple authentication: a username of {end - 2} bytes runs past the end "
                f"({len(payload) - 2} bytes follow the length)",
                needed=offset + end,
            )
        return SimpleAuth(
            _decode_text(payload[2:end], "username"), _decode_text(payload[end:], "password")
        )
    if reserved_id is None and auth_type == AUTH_BEARER:
        return BearerAuth(_decode_text(payload, "bearer token"))
    return UnknownAuth(auth_type, payload, reserved_id)


# --- per-stream data MIME types -------------------------------------------------------


def encode_data_mime_type(mime_type: str | int) -> bytes:
    """``message/x.rsocket.mime-type.v0`` content: the one data MIME type of this stream
    (well-known by name or id as one byte, others as a length-prefixed name)."""
    return _encode_type(mime_type, WELL_KNOWN_MIME_IDS, "data MIME type")


def decode_data_mime_type(data: BytesLike) -> str:
    """The data MIME type declared by ``message/x.rsocket.mime-type.v0`` content (a
    reserved well-known id gives ``reserved_type_name(id)``)."""
    data = bytes(data)
    mime_type, _, end = _decode_type(data, 0, WELL_KNOWN_MIME_TYPES, "data MIME type")
    if end != len(data):
        raise MetadataTrailingBytes(
            f"data MIME type {mime_type!r} is followed by {len(data) - end} more bytes; "
            f"message/x.rsocket.mime-type.v0 holds exactly one MIME type"
        )
    return mime_type


def encode_accept_mime_types(mime_types: Iterable[str | int]) -> bytes:
    """``message/x.rsocket.accept-mime-types.v0`` content: the data MIME types the
    requester accepts, in order."""
    return b"".join(_encode_type(m, WELL_KNOWN_MIME_IDS, "accepted MIME type") for m in mime_types)


def decode_accept_mime_types(data: BytesLike) -> list[str]:
    """The accepted data MIME types of ``message/x.rsocket.accept-mime-types.v0``."""
    data = bytes(data)
    mime_types: list[str] = []
    offset = 0
    while offset < len(data):
        mime_type, _, offset = _decode_type(
            data, offset, WELL_KNOWN_MIME_TYPES, "accepted MIME type"
        )
        mime_types.append(mime_type)
    return mime_types
