"""Fuzz targets for every generated codec: ``decode``, ``StreamDecoder`` and, for the
Reactive Streams protocol, ``decode_msgpack`` and ``MsgpackStreamDecoder``.

An input is ``[mode][a][b]`` then the body:

- ``mode`` bits 0-3: the stream decoders get the body in chunks of (bits + 1) bytes;
  bits 4-5: their ``max_frame_size`` (64, 4096, 65536 or the codec's maximum);
  bit 6: codecs with a context (rsio's ``element_size``) decode with subscriber ``a``
  declared to carry fixed elements of ``b`` bytes.

What must hold for any body (a failure is an ``AssertionError`` or whatever escaped):

1. every failure is a ``ProtocolError`` (runtime/errors.py): no IndexError,
   struct.error, KeyError, UnicodeDecodeError, RecursionError ...;
2. what ``decode`` accepts, ``encode`` writes again and ``decode`` reads back equal:
   the codec never hands the application a frame it could not have been sent;
3. a stream decoder gives the same frames (and fails or not, ``_same``) whether the
   bytes come at once or in chunks, never holds more than one frame's limit of bytes, and
   decodes a cut frame again only a bounded number of times (``RETRIES_PER_FRAME``,
   plus ``RETRIES_PER_DOUBLING`` per doubling of the input): a peer that trickles a
   frame byte by byte costs linear, not quadratic, work.

Work per input is bounded by its length (the runner's ``-max_len``): decoders read
each byte a bounded number of times and allocate no more than the input declares and
carries (a declared length beyond the input fails as ``Truncated``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from wirestream.runtime.errors import ProtocolError, Truncated

__all__ = ["HEADER", "codec_target", "header"]

HEADER = 3
_LIMITS = (64, 4096, 65536, None)  # None: the codec's own MAX_FRAME_SIZE
_SENDERS = (None, "client", "server")


def header(chunk: int = 1, limit: int = 3, ctx: tuple[int, int] | None = None) -> bytes:
    """The three leading bytes of a codec input (for seeds and regression tests)."""
    mode = ((chunk - 1) & 0x0F) | (limit & 3) << 4 | (0x40 if ctx else 0)
    a, b = ctx or (0, 0)
    return bytes((mode, a & 0xFF, b & 0xFF))


def codec_target(codec: ModuleType) -> Callable[[bytes], None]:
    """The harness of one protocol version's codec (module ``wirestream.generated.<p>.<v>``)."""
    senders = _SENDERS if codec.NEEDS_SENDER else (None,)
    msgpack = hasattr(codec, "decode_msgpack")

    def make_ctx(mode: int, a: int, b: int) -> Any:
        if not codec.NEEDS_CONTEXT:
            return None
        ctx = codec.Context()
        if mode & 0x40 and b:
            ctx.element_size[a] = b
        return ctx

    def run(data: bytes) -> None:
        mode, a, b = (data + bytes(HEADER))[:HEADER]
        body = data[HEADER:]
        chunk = (mode & 0x0F) + 1
        limit = _LIMITS[(mode >> 4) & 3] or codec.MAX_FRAME_SIZE
        for sender in senders:
            _round_trip(codec, body, make_ctx(mode, a, b), sender)
        _stream(codec, body, chunk, limit, lambda: make_ctx(mode, a, b))
        if msgpack:
            _msgpack_round_trip(codec, body, make_ctx(mode, a, b))
            _msgpack_stream(codec, body, chunk, limit, lambda: make_ctx(mode, a, b))

    return run


def _round_trip(codec: ModuleType, body: bytes, ctx: Any, sender: str | None) -> None:
    try:
        frame = codec.decode(body, ctx, sender)
    except ProtocolError:
        return
    wire = codec.encode(frame, ctx)  # anything raised here is a finding
    again = codec.decode(wire, ctx, sender)
    assert again == frame, f"decode(encode(f)) != f: {frame!r} -> {wire.hex()} -> {again!r}"


def _msgpack_round_trip(codec: ModuleType, body: bytes, ctx: Any) -> None:
    try:
        frame = codec.decode_msgpack(body, ctx)
    except ProtocolError:
        return
    wire = codec.encode_msgpack(frame)
    again = codec.decode_msgpack(wire, ctx)
    assert again == frame, f"msgpack: {frame!r} -> {wire.hex()} -> {again!r}"


def _split(decoder: Any, chunks: list[bytes], limit: int) -> tuple[list[Any], str]:
    """Feed ``chunks``; the frames up to the first error, and how the bytes ended:
    ``"error"``, ``"waiting"`` (inside a frame) or ``"done"``."""
    frames: list[Any] = []
    prefix = getattr(decoder, "_prefix_size", 0)
    for piece in chunks:
        try:
            frames.extend(decoder.feed(piece))
        except ProtocolError as error:
            frames.extend(getattr(error, "frames", ()))
            return frames, "error"
        held = getattr(decoder, "buffered", 0)
        assert held <= limit + prefix, f"decoder holds {held} bytes; the limit is {limit}"
    return frames, "waiting" if getattr(decoder, "buffered", 0) else "done"


def _same(whole: tuple[list[Any], str], cut: tuple[list[Any], str]) -> bool:
    """The same frames, and the same end -- except that bytes cut into pieces may leave
    a decoder waiting for the rest of a frame where all of them at once showed it
    malformed: what a cut frame declares (lengths, counts) says how much more to wait
    for, so a malformed byte beyond the cut is seen once that much has arrived."""
    if whole[0] != cut[0]:
        return False
    return whole[1] == cut[1] or {whole[1], cut[1]} == {"error", "waiting"}


def _pieces(body: bytes, chunk: int) -> list[bytes]:
    return [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]


def _stream(codec: ModuleType, body: bytes, chunk: int, limit: int, ctx: Callable[[], Any]) -> None:
    outcomes = []
    retries = [0]
    for pieces in ([body], _pieces(body, chunk)):
        context = ctx()
        decoder = codec.StreamDecoder(max_frame_size=limit, ctx=context)
        if context is not None:  # layouts that depend on earlier frames (rsio elementSize)
            decoder.after_frame = lambda frame, size, c=context: codec.track_context(frame, c)
        if len(pieces) > 1:
            decoder._decode_at = _counting(decoder._decode_at, retries)
        outcomes.append(_split(decoder, pieces, limit))
    assert _same(*outcomes), f"chunks of {chunk} change the result: {outcomes}"
    frames = len(outcomes[1][0])
    bound = RETRIES_PER_FRAME * (frames + 1) + RETRIES_PER_DOUBLING * len(body).bit_length()
    assert retries[0] <= bound, f"{retries[0]} decodes of a cut frame for {frames} frames"


# A stream decoder decodes a frame again when more of it arrives.  The frame's fields
# bound how often it finds one cut (each says where it ends, or how much at least its
# remaining elements need); what a peer sizes -- how many elements, how long a run of
# varints -- may only add a logarithmic number of retries.  One retry per byte is
# quadratic work for a peer that trickles a large frame.
RETRIES_PER_FRAME = 32
RETRIES_PER_DOUBLING = 32


def _counting(decode_at: Callable[..., Any], retries: list[int]) -> Callable[..., Any]:
    def counted(*args: Any) -> Any:
        try:
            return decode_at(*args)
        except Truncated:
            retries[0] += 1
            raise

    return counted


def _msgpack_stream(codec: ModuleType, body: bytes, chunk: int, limit: int,
                    ctx: Callable[[], Any]) -> None:  # fmt: skip
    outcomes = []
    for pieces in ([body], _pieces(body, chunk)):
        decoder = codec.MsgpackStreamDecoder(max_frame_size=limit, ctx=ctx())
        outcomes.append(_split(decoder, pieces, limit))
    assert outcomes[0] == outcomes[1], f"msgpack chunks of {chunk}: {outcomes}"
