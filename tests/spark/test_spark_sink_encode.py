"""The ``rabbitmq_stream`` sink's column-wise message encoding (runtime/spark/rabbitmq_sink.py
``encode_column``, ``first_null``): byte for byte what the client's per-message encoder
gives, for every Arrow type Spark hands the sink a payload column in. No Spark needed."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wirestream.runtime.rabbitmq_stream.amqp import decode_body, encode_body
from wirestream.runtime.spark.rabbitmq_sink import encode_column, first_null

EDGES = [b"", b"a", b"x" * 255, b"y" * 256, b"z" * 70_000, b"q" * 100, bytes(range(256))]


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()])
def test_binary_columns_encode_as_encode_body_does_at_every_length_edge(kind: pa.DataType) -> None:
    column = pa.array(EDGES, kind)
    assert encode_column(column, amqp=True) == [encode_body(value) for value in EDGES]
    assert encode_column(column, amqp=False) == EDGES
    for start, stop in [(1, 3), (3, 5), (4, 7), (0, 0)]:  # slices: offsets not at 0
        part = column.slice(start, stop - start)
        assert encode_column(part, amqp=True) == [encode_body(v) for v in EDGES[start:stop]]


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_string_columns_publish_their_utf8_bytes(kind: pa.DataType) -> None:
    texts = ["", "ÜBER", "x" * 300, "€" * 90]  # 270 UTF-8 bytes: Data32 from 90 characters
    column = pa.array(texts, kind)
    assert encode_column(column, amqp=True) == [encode_body(t.encode()) for t in texts]
    assert encode_column(column, amqp=False) == [t.encode() for t in texts]


@given(st.lists(st.binary(max_size=600), max_size=40))
def test_any_values_round_trip_through_the_amqp_decoder(values: list[bytes]) -> None:
    encoded = encode_column(pa.array(values, pa.binary()), amqp=True)
    assert encoded == [encode_body(value) for value in values]
    assert [decode_body(message) for message in encoded] == values


def test_first_null_finds_the_first_null_or_none() -> None:
    assert first_null(pa.array([b"a", b"b"])) is None
    assert first_null(pa.array([b"a", None, b"c", None])) == 1
    assert first_null(pa.array([b"a", None, b"c", None]).slice(2)) == 1
    assert first_null(pa.array([None], pa.string())) == 0
