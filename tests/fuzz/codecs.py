"""Fuzz targets for every generated codec: ``decode`` and ``StreamDecoder`` (each with
every ``sender`` where codes mean different frames from each side) and, for the
Reactive Streams protocol, ``decode_msgpack`` and ``MsgpackStreamDecoder``; for a
protocol with startup frames (PostgreSQL), ``decode_startup`` and
``StreamDecoder(startup=True)`` as well.

An input is ``[mode][a][b]`` then the body:

- ``mode`` bits 0-3: the stream decoders get the body in chunks of (bits + 1) bytes;
  bits 4-5: their ``max_frame_size`` (64, 4096, 65536 or the codec's maximum);
  bit 6: codecs with a context decode in one the header sets (``context``): a keyed
  value (rsio's ``element_size``) gets key ``a`` set to ``b``; plain integer values
  (MySQL's phase, capabilities, column_count and param_count, PostgreSQL's
  auth_request) take ``a`` for the first, in the Context's ``__slots__`` order, and
  ``b`` for each of the others -- shifted left by 8 bits when bit 7 is set (MySQL's
  CLIENT_PROTOCOL_41 is 0x200).

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

__all__ = ["HEADER", "codec_target", "context", "context_headers", "header"]

HEADER = 3
_LIMITS = (64, 4096, 65536, None)  # None: the codec's own MAX_FRAME_SIZE
_SENDERS = (None, "client", "server")


def header(chunk: int = 1, limit: int = 3, ctx: tuple[int, int] | None = None,
           shift: bool = False) -> bytes:  # fmt: skip
    """The three leading bytes of a codec input (for seeds and regression tests)."""
    mode = ((chunk - 1) & 0x0F) | (limit & 3) << 4 | (0x40 if ctx else 0) | (0x80 if shift else 0)
    a, b = ctx or (0, 0)
    return bytes((mode, a & 0xFF, b & 0xFF))


def context(codec: ModuleType, mode: int, a: int, b: int) -> Any:
    """The Context an input's header bytes set (module docstring); None for a codec
    without one."""
    if not codec.NEEDS_CONTEXT:
        return None
    ctx = codec.Context()
    if not mode & 0x40:
        return ctx
    slots = codec.Context.__slots__
    first = getattr(ctx, slots[0])
    if isinstance(first, dict):  # keyed by a frame field (rsio: subscriber -> element size)
        if b:
            first[a] = b
        return ctx
    setattr(ctx, slots[0], a)
    for slot in slots[1:]:
        setattr(ctx, slot, b << 8 if mode & 0x80 else b)
    return ctx


def context_headers(codec: ModuleType, values: dict[str, Any], chunk: int = 1) -> list[bytes]:
    """Headers whose context holds ``values`` (a vector's ``ctx``), for seeds: for a keyed
    value the one key the header can set; for plain values, one per value the header's
    ``b`` can take (the slots after the first share it), the most common first, then
    headers that hold only a byte of a wider value (the caller checks which will do)."""
    if not values:
        return [header(chunk=chunk)]
    slots = codec.Context.__slots__
    if isinstance(getattr(codec.Context(), slots[0]), dict):
        keyed = sorted(values.get(slots[0], {}).items())
        return [header(chunk=chunk, ctx=keyed[0] if keyed else None)]
    a = values.get(slots[0], getattr(codec.Context(), slots[0]))
    if not 0 <= a <= 0xFF:
        return []
    rest = [values.get(slot, 0) for slot in slots[1:]] or [0]
    heads = []
    for b in sorted(set(rest), key=lambda v: (-rest.count(v), v)):
        if 0 <= b <= 0xFF:
            heads.append(header(chunk=chunk, ctx=(a, b)))
        elif not b & 0xFF and b >> 8 <= 0xFF:
            heads.append(header(chunk=chunk, ctx=(a, b >> 8), shift=True))
    # then the values' low bytes, and their second bytes shifted: near, not equal
    for b in sorted(set(rest)):
        for near in (header(chunk=chunk, ctx=(a, b & 0xFF)),
                     header(chunk=chunk, ctx=(a, (b >> 8) & 0xFF), shift=True)):  # fmt: skip
            if near not in heads:
                heads.append(near)
    return heads


def codec_target(codec: ModuleType) -> Callable[[bytes], None]:
    """The harness of one protocol version's codec (module ``wirestream.generated.<p>.<v>``)."""
    senders = _SENDERS if codec.NEEDS_SENDER else (None,)
    msgpack = hasattr(codec, "decode_msgpack")
    startup = hasattr(codec, "decode_startup")
    # a stream that opens with a startup frame comes from the side that sends those
    openers = {c.SENDER for c in vars(codec).values() if getattr(c, "STARTUP", False) is True}
    startup_senders = [s for s in senders if s is None or s in openers or "any" in openers]

    def decode_startup(data: bytes, ctx: Any, sender: str | None) -> Any:
        return codec.decode_startup(data, ctx)

    def run(data: bytes) -> None:
        mode, a, b = (data + bytes(HEADER))[:HEADER]
        body = data[HEADER:]
        chunk = (mode & 0x0F) + 1
        limit = _LIMITS[(mode >> 4) & 3] or codec.MAX_FRAME_SIZE

        def make_ctx() -> Any:
            return context(codec, mode, a, b)

        for sender in senders:
            _round_trip(codec, body, make_ctx(), sender)
        for sender in senders:
            _stream(codec, body, chunk, limit, make_ctx, sender)
        if startup:  # the first frame of a connection, alone and at the start of a stream
            _round_trip(codec, body, make_ctx(), None, decode_startup)
            for sender in startup_senders:
                _stream(codec, body, chunk, limit, make_ctx, sender, startup=True)
        if msgpack:
            _msgpack_round_trip(codec, body, make_ctx())
            _msgpack_stream(codec, body, chunk, limit, make_ctx)

    return run


def _round_trip(codec: ModuleType, body: bytes, ctx: Any, sender: str | None,
                decode: Callable[[bytes, Any, str | None], Any] | None = None) -> None:  # fmt: skip
    decode = decode or codec.decode
    try:
        frame = decode(body, ctx, sender)
    except ProtocolError:
        return
    wire = codec.encode(frame, ctx)  # anything raised here is a finding
    again = decode(wire, ctx, sender)
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


def _stream(codec: ModuleType, body: bytes, chunk: int, limit: int, ctx: Callable[[], Any],
            sender: str | None = None, startup: bool = False) -> None:  # fmt: skip
    outcomes = []
    retries = [0]
    for pieces in ([body], _pieces(body, chunk)):
        made = ctx()
        extra: dict[str, Any] = {"sender": sender} if sender else {}
        if startup:
            extra["startup"] = True
        decoder = codec.StreamDecoder(max_frame_size=limit, ctx=made, **extra)
        if made is not None:  # layouts that depend on earlier frames (rsio elementSize)
            decoder.after_frame = lambda frame, size, c=made: codec.track_context(frame, c)
        if len(pieces) > 1:
            decoder._decode_at = _counting(decoder._decode_at, retries)
            if startup:
                decoder.startup_decode_at = _counting(decoder.startup_decode_at, retries)
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
