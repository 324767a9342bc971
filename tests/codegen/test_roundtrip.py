"""Round trips for every frame of every protocol version, from generated strategies.

The strategies are emitted by the generator from the IDL (generated/*/*/strategies.py),
so a frame added to a YAML file is covered here without writing a test.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.protocols import VERSIONS


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
def test_every_frame_round_trips_through_bytes(version: Any) -> None:
    codec = version.codec()

    @given(version.strategies().frames())
    def check(pair: tuple[Any, Any]) -> None:
        frame, ctx = pair
        data = codec.encode(frame, ctx)
        sender = _sender_of(codec, frame)
        if getattr(frame, "STARTUP", False):  # framed by the startup header (PostgreSQL)
            assert codec.decode_startup(data, ctx) == frame
        else:
            assert codec.decode(data, ctx, sender) == frame

    check()


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v.id)
def test_stream_decoder_splits_any_chunking(version: Any) -> None:
    """Frames cut at arbitrary points come out whole, in order (transport framing)."""
    codec = version.codec()
    strategies = version.strategies()

    @given(st.lists(strategies.frames(), min_size=1, max_size=5), st.data())
    def check(pairs: list[tuple[Any, Any]], data: st.DataObject) -> None:
        # One context for the whole stream: frames drawn separately may disagree on a
        # keyed value, so each frame keeps its own context's entries when they agree.
        ctx = None
        frames = []
        for frame, frame_ctx in pairs:
            if ctx is None:
                ctx = frame_ctx
            elif not _merge_context(ctx, frame_ctx):
                continue
            frames.append(frame)
        senders = {_sender_of(codec, f) for f in frames}
        if len(senders) > 1:
            frames = [f for f in frames if _sender_of(codec, f) == next(iter(senders))]
        # A startup frame (PostgreSQL's) can only come first: the decoder is told so.
        startup = getattr(frames[0], "STARTUP", False)
        frames = frames[:1] + [f for f in frames[1:] if not getattr(f, "STARTUP", False)]
        sender = _sender_of(codec, frames[0])
        stream = b"".join(codec.frame_bytes(f, ctx) for f in frames)
        cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
        decoder = codec.StreamDecoder(ctx=ctx, sender=sender)
        if startup:
            decoder.expect_startup()
        out = []
        start = 0
        for cut in [*cuts, len(stream)]:
            out += decoder.feed(stream[start:cut])
            start = cut
        assert out == frames
        assert decoder.buffered == 0

    check()


def _sender_of(codec: Any, frame: Any) -> str | None:
    """The sender to decode with, when the frame's code is shared by both sides."""
    sender = getattr(type(frame), "SENDER", "any")
    return None if sender == "any" else str(sender)


def _merge_context(into: Any, other: Any) -> bool:
    for name in getattr(type(into), "__slots__", ()):
        mine, theirs = getattr(into, name), getattr(other, name)
        if isinstance(mine, dict):
            for key, value in theirs.items():
                if mine.setdefault(key, value) != value:
                    return False
        elif mine != theirs:
            return False
    return True
