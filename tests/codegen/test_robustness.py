"""Bad bytes get a precise ProtocolError: never IndexError, struct.error, a hang or an
allocation sized by the peer.

Random bytes and mutations of valid frames go into every `decode` and `StreamDecoder`
(CI: 10,000 examples per protocol version and kind of input).
"""

from __future__ import annotations

import os
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.runtime.errors import FrameTooLarge, ProtocolError, Truncated
from tests.support.protocols import VERSIONS

EXAMPLES = 10_000 if os.environ.get("CI") or os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 300


def _decode_quietly(codec: Any, data: bytes, ctx: Any = None) -> None:
    for sender in (None, "client", "server"):
        try:
            codec.decode(data, ctx, sender)
        except ProtocolError:
            pass
    if hasattr(codec, "decode_msgpack"):  # the second wire encoding gets the same bytes
        try:
            codec.decode_msgpack(data, ctx)
        except ProtocolError:
            pass
        try:
            codec.MsgpackStreamDecoder(max_frame_size=4096, ctx=ctx).feed(data)
        except ProtocolError:
            pass


def _feed_quietly(codec: Any, chunks: list[bytes], ctx: Any = None) -> None:
    decoder = codec.StreamDecoder(max_frame_size=4096, ctx=ctx)
    try:
        for chunk in chunks:
            decoder.feed(chunk)
    except ProtocolError:
        pass


@st.composite
def mutated(draw: st.DrawFn, frames: st.SearchStrategy[Any], codec: Any) -> tuple[bytes, Any]:
    """A valid frame's bytes with bytes flipped, dropped, inserted or cut."""
    frame, ctx = draw(frames)
    if hasattr(codec, "encode_msgpack") and draw(st.booleans()):
        data = bytearray(codec.encode_msgpack(frame))
    else:
        data = bytearray(codec.encode(frame, ctx))
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "drop", "insert", "cut"]))
        if action == "flip" and data:
            index = draw(st.integers(0, len(data) - 1))
            data[index] = draw(st.integers(0, 255))
        elif action == "drop" and data:
            del data[draw(st.integers(0, len(data) - 1))]
        elif action == "insert":
            data.insert(draw(st.integers(0, len(data))), draw(st.integers(0, 255)))
        elif action == "cut":
            del data[draw(st.integers(0, len(data))) :]
    return bytes(data), ctx


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
def test_random_bytes_raise_only_protocol_errors(version: Any) -> None:
    codec = version.codec()

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(st.binary(max_size=64), st.lists(st.binary(max_size=32), max_size=4))
    def check(data: bytes, chunks: list[bytes]) -> None:
        _decode_quietly(codec, data)
        _feed_quietly(codec, [data, *chunks])

    check()


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
def test_mutated_frames_raise_only_protocol_errors(version: Any) -> None:
    codec = version.codec()

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(mutated(version.strategies().frames(), codec), st.integers(1, 8))
    def check(sample: tuple[bytes, Any], step: int) -> None:
        data, ctx = sample
        _decode_quietly(codec, data, ctx)
        prefixed = _prefixed(codec, data)
        _feed_quietly(codec, [prefixed[i : i + step] for i in range(0, len(prefixed), step)], ctx)

    check()


def _prefixed(codec: Any, body: bytes) -> bytes:
    size = getattr(codec.StreamDecoder(), "_prefix_size", 0)
    return len(body).to_bytes(size, "big") + body if size else body


# --- declared lengths the peer controls ---------------------------------------------

HUGE = 16 * 1024 * 1024


def _peak_allocation(action: Any) -> int:
    tracemalloc.start()
    try:
        action()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def test_16mb_metadata_length_in_20_bytes_fails_fast_rsocket() -> None:
    from wirestream.generated.rsocket import v1_0

    # PAYLOAD, stream 1, M flag, metadata length 0xFFFFFF (16 MB) but 11 bytes follow.
    frame = bytes.fromhex("00000001 2920 ffffff") + b"x" * 11
    assert len(frame) == 20

    def action() -> None:
        with pytest.raises(Truncated):
            v1_0.decode(frame)

    assert _peak_allocation(action) < 64 * 1024


def test_16mb_frame_length_is_refused_before_buffering_rsocket() -> None:
    from wirestream.generated.rsocket import v1_0

    decoder = v1_0.StreamDecoder(max_frame_size=1024 * 1024)
    data = (HUGE - 1).to_bytes(3, "big") + bytes(17)

    def action() -> None:
        with pytest.raises(FrameTooLarge):
            decoder.feed(data)

    assert _peak_allocation(action) < 64 * 1024


def test_16mb_size_prefix_is_refused_before_buffering_rabbitmq() -> None:
    from wirestream.generated.rabbitmq_stream import v1

    decoder = v1.StreamDecoder(max_frame_size=1024 * 1024)  # RabbitMQ's default frame_max
    data = HUGE.to_bytes(4, "big") + bytes(16)

    def action() -> None:
        with pytest.raises(FrameTooLarge):
            decoder.feed(data)

    assert _peak_allocation(action) < 64 * 1024


def test_16mb_array_count_in_20_bytes_fails_fast_rabbitmq() -> None:
    from wirestream.generated.rabbitmq_stream import v1

    # PublishConfirm (key 3, v1): publisher id, then an int32 count of 16M ids.
    frame = bytes.fromhex("0003 0001 07") + HUGE.to_bytes(4, "big") + bytes(11)
    assert len(frame) == 20

    def action() -> None:
        with pytest.raises(Truncated):
            v1.decode(frame)

    assert _peak_allocation(action) < 64 * 1024


def test_16mb_varu64_length_fails_fast_in_a_self_delimiting_stream_bpmux() -> None:
    from wirestream.generated.bpmux import rel

    # Message (type 4) declaring a 16 MB payload as VarU64 (0xFB + 4 bytes).
    decoder = rel.StreamDecoder(max_frame_size=1024 * 1024)
    data = bytes([4, 0xFB]) + HUGE.to_bytes(4, "big") + bytes(14)

    def action() -> None:
        with pytest.raises(FrameTooLarge):
            decoder.feed(data)

    assert _peak_allocation(action) < 64 * 1024


def test_stream_decoder_keeps_frames_decoded_before_an_error() -> None:
    """Nothing is lost: frames before a malformed one reach the caller with the error."""
    from wirestream.generated.rsocket import v1_0

    good = v1_0.frame_bytes(v1_0.RequestN(stream_id=1, request_n=5))
    bad = bytes.fromhex("000006 00000001 8000")  # unknown type 0x20, I flag clear
    decoder = v1_0.StreamDecoder()
    with pytest.raises(ProtocolError) as caught:
        decoder.feed(good + bad + good)
    assert getattr(caught.value, "frames") == [v1_0.RequestN(stream_id=1, request_n=5)]
    # The bad frame was length-delimited, so the stream goes on after it.
    assert decoder.feed(b"") == [v1_0.RequestN(stream_id=1, request_n=5)]
