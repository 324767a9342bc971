"""Bytes <-> frames for the engine, in either encoding, with the per-stream context.

The layout of onNext/onNextPacked depends on the elementSize that the publisher's
``subscribed`` announced for that subscriber Id (seeds 000/001: "In fixed-size mode,
the onNext.element field is not length-prefixed").  The generated stream decoders read
``ctx`` for every frame but decode a whole ``feed`` at once, before the engine sees any
of it; a ``subscribed`` followed by fixed-size elements in the same chunk would be
decoded with the old size.  So the decoders here are the generated ones with their
``after_frame`` hook set: the context follows the publisher's messages *in stream
order* (``track_context``, generated from the ``set_by``/``cleared_by`` rules of
``idl/rsio/v0.yaml``'s ``context``):

- ``subscribed``: the Id's elementSize becomes the announced one;
- ``onComplete`` / ``onError``: the Id is released, its size forgotten.

After a ``cancel`` the size is kept: the publisher may still send elements for the
cancelled subscription (RS §2.8) until it sees the cancel, and they must still decode.
When the Id is reused, the new ``subscribed`` replaces it, and it is ordered after
every stale message.
"""

from __future__ import annotations

from typing import Literal, Protocol

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0 import track_context

__all__ = ["Encoding", "FrameDecoder", "make_decoder", "encode_frame", "track_context"]

Encoding = Literal["binary", "msgpack"]


class FrameDecoder(Protocol):
    def feed(self, data: bytes | bytearray | memoryview) -> list[rsio.Frame]: ...

    @property
    def buffered(self) -> int: ...


def make_decoder(encoding: Encoding, ctx: rsio.Context, max_frame_size: int) -> FrameDecoder:
    """A stream decoder for ``encoding`` that keeps ``ctx`` in step frame by frame."""
    decoder: rsio.StreamDecoder | rsio.MsgpackStreamDecoder
    if encoding == "binary":
        decoder = rsio.StreamDecoder(max_frame_size, ctx)
    elif encoding == "msgpack":
        decoder = rsio.MsgpackStreamDecoder(max_frame_size, ctx)
    else:
        raise ValueError(f"unknown encoding {encoding!r} (binary or msgpack)")
    decoder.after_frame = lambda frame, size: track_context(frame, ctx)
    return decoder


def encode_frame(encoding: Encoding, frame: rsio.Frame, ctx: rsio.Context) -> bytes:
    """The bytes of ``frame`` on the wire (``ctx``: the sizes of the streams we publish)."""
    if encoding == "binary":
        return rsio.encode(frame, ctx)
    return rsio.encode_msgpack(frame)
