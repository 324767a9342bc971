"""Golden vectors: frames derived by hand from each spec's text (tests/vectors/*.yaml).

Each vector names the spec passage it follows. A valid vector must decode to exactly
its fields and, being canonical, encode back to exactly its bytes; an error vector
must raise exactly the named ProtocolError subclass. A vector may carry a ``ctx`` (the
Context it is decoded in), a ``sender`` (for codes both sides use) and ``startup: true``
(a frame that opens a connection, read with ``decode_startup``).
"""

from __future__ import annotations

from typing import Any

import pytest

from wirestream.runtime import errors
from tests.support.protocols import VERSIONS, context, decode_vector, plain

VALID = [
    pytest.param(version, vector, id=f"{version.id}:{vector['name']}")
    for version in VERSIONS
    for vector in version.vectors()
]
INVALID = [
    pytest.param(version, vector, id=f"{version.id}:{vector['name']}")
    for version in VERSIONS
    for vector in version.vectors("_errors")
]


def test_every_protocol_version_has_golden_vectors() -> None:
    missing = [v.id for v in VERSIONS if not v.vectors()]
    assert not missing, f"no golden vectors for {missing}"


@pytest.mark.parametrize(("version", "vector"), VALID)
def test_golden_vector_decodes_to_its_fields(version: Any, vector: dict[str, Any]) -> None:
    codec = version.codec()
    ctx = context(codec, vector.get("ctx"))
    frame = decode_vector(codec, vector, ctx)
    assert type(frame).__name__ == vector["frame"]
    assert plain(frame) == vector["fields"]


@pytest.mark.parametrize(("version", "vector"), VALID)
def test_golden_vector_encodes_to_its_bytes(version: Any, vector: dict[str, Any]) -> None:
    codec = version.codec()
    ctx = context(codec, vector.get("ctx"))
    frame = decode_vector(codec, vector, ctx)
    # A frame received under one of its also_codes re-encodes with its primary code.
    assert codec.encode(frame, ctx).hex() == vector.get("encode_hex", vector["hex"])


@pytest.mark.parametrize(("version", "vector"), [p for p in VALID if "msgpack_hex" in p.values[1]])
def test_golden_vector_msgpack_encoding(version: Any, vector: dict[str, Any]) -> None:
    codec = version.codec()
    ctx = context(codec, vector.get("ctx"))
    frame = codec.decode(bytes.fromhex(vector["hex"]), ctx)
    assert codec.encode_msgpack(frame).hex() == vector["msgpack_hex"]
    assert codec.decode_msgpack(bytes.fromhex(vector["msgpack_hex"]), ctx) == frame


@pytest.mark.parametrize(("version", "vector"), INVALID)
def test_malformed_vector_raises_its_error(version: Any, vector: dict[str, Any]) -> None:
    codec = version.codec()
    ctx = context(codec, vector.get("ctx"))
    expected = getattr(errors, vector["error"])
    with pytest.raises(expected):
        decode_vector(codec, vector, ctx)
