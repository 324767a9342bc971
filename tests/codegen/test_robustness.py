"""Bad bytes get a precise ProtocolError: never IndexError, struct.error, a hang or an
allocation sized by the peer.

Random bytes and mutations of valid frames go into every `decode` and `StreamDecoder`
(CI: 10,000 inputs per protocol version and kind of input). Hypothesis draws the examples
(a valid frame from the generated strategies, a seeded `random.Random`); each example
makes INPUTS_PER_EXAMPLE inputs from them with that generator. Hypothesis' own work per
example (drawing, bookkeeping) cost ~2.5 ms, several times the decoding of one input
(~0.4 ms, every sender and the stream decoder): one input an example made these runs
30 s per version and kind in CI, ~8 minutes of `make test`'s test time in all, for the
same number of inputs (now ~1 minute). A failing input is printed in hex with the
exception it raised, and Hypothesis reports (and replays) the example that made it.
"""

from __future__ import annotations

import os
import random
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.runtime.errors import FrameTooLarge, ProtocolError, Truncated
from tests.support.protocols import VERSIONS

INPUTS = 10_000 if os.environ.get("CI") or os.environ.get("HYPOTHESIS_PROFILE") == "ci" else 300
INPUTS_PER_EXAMPLE = 25
EXAMPLES = max(1, INPUTS // INPUTS_PER_EXAMPLE)


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


def mutate(valid: bytes, rng: random.Random) -> bytes:
    """``valid`` with 1-4 bytes flipped, dropped, inserted, or the rest cut."""
    data = bytearray(valid)
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(("flip", "drop", "insert", "cut"))
        if action == "flip" and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif action == "drop" and data:
            del data[rng.randrange(len(data))]
        elif action == "insert":
            data.insert(rng.randint(0, len(data)), rng.randrange(256))
        elif action == "cut":
            del data[rng.randint(0, len(data)) :]
    return bytes(data)


def random_bytes(rng: random.Random, most: int) -> bytes:
    return rng.randbytes(rng.randint(0, most))


def _check(what: str, data: bytes, check: Any) -> None:
    """``check()``, which lets only ``ProtocolError``s pass: anything else names the input."""
    try:
        check()
    except Exception as error:
        raise AssertionError(f"{what} of {data.hex()} raised {error!r}") from error


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
def test_random_bytes_raise_only_protocol_errors(version: Any) -> None:
    codec = version.codec()

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(st.randoms(use_true_random=False))
    def check(rng: random.Random) -> None:
        for _ in range(INPUTS_PER_EXAMPLE):
            data = random_bytes(rng, 64)
            chunks = [random_bytes(rng, 32) for _ in range(rng.randint(0, 4))]
            _check("decode", data, lambda: _decode_quietly(codec, data))
            _check("feed", data, lambda: _feed_quietly(codec, [data, *chunks]))

    check()


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
def test_mutated_frames_raise_only_protocol_errors(version: Any) -> None:
    codec = version.codec()

    @settings(max_examples=EXAMPLES, deadline=None)
    @given(version.strategies().frames(), st.booleans(), st.randoms(use_true_random=False))
    def check(sample: tuple[Any, Any], msgpack: bool, rng: random.Random) -> None:
        frame, ctx = sample
        if msgpack and hasattr(codec, "encode_msgpack"):
            valid = codec.encode_msgpack(frame)
        else:
            valid = codec.encode(frame, ctx)
        for _ in range(INPUTS_PER_EXAMPLE):
            data = mutate(valid, rng)
            step = rng.randint(1, 8)
            _check("decode", data, lambda: _decode_quietly(codec, data, ctx))
            prefixed = _prefixed(codec, data)
            pieces = [prefixed[i : i + step] for i in range(0, len(prefixed), step)]
            _check("feed", data, lambda: _feed_quietly(codec, pieces, ctx))

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
