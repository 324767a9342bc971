"""What coverage-guided fuzzing found (tests/fuzz/, ``make fuzz``), one test per finding.

Each names the target that found it; the fix is in the generator or the runtime, not
in the harness.
"""

from __future__ import annotations

import importlib
import tracemalloc

import pytest

from wirestream.runtime.errors import EncodeError


@pytest.mark.parametrize(
    ("version", "wire", "flags"),
    [
        ("v1_0", "00000001fa80" + "78", 0x400),  # type 0x3E, I flag (0x200) and 0x80
        ("v0_2", "000000013e80" + "78", 0x100),  # type 0x3E, I flag (0x80)
    ],
)
def test_unknown_frame_flags_beyond_the_flag_bits_are_an_encode_error(
    version: str, wire: str, flags: int
) -> None:
    """engine.rsocket.*: an UnknownFrame (an ignorable frame of an unknown type, kept)
    whose flags were set wider than the header's flag bits raised struct.error -- or,
    below 0x10000, spilled into the frame type bits: another frame type on the wire."""
    codec = importlib.import_module(f"wirestream.generated.rsocket.{version}")
    frame = codec.decode(bytes.fromhex(wire))
    assert type(frame).__name__ == "UnknownFrame"
    assert codec.encode(frame).hex() == wire
    for wrong in (flags, 0xFFFFF):
        frame.flags = wrong
        with pytest.raises(EncodeError):
            codec.encode(frame)


def test_msgpack_encoding_checks_integer_ranges_as_the_binary_one_does() -> None:
    """engine.rsio: ``encode_msgpack`` wrote out-of-range integers unchecked -- a demand
    above 2^63-1 left as a frame every peer must refuse; above 2^64-1 msgpack raised
    OverflowError instead of EncodeError."""
    from wirestream.generated.rsio import v0

    for frame in (v0.Request(1, 1 << 63), v0.Request(1 << 64, 1), v0.Subscribe("p", 1, -1),
                  v0.ClientHello(0, [1 << 64])):  # fmt: skip
        with pytest.raises(EncodeError):
            v0.encode(frame)
        with pytest.raises(EncodeError):
            v0.encode_msgpack(frame)


def test_a_messagepack_stream_decoder_does_not_reserve_a_megabyte_up_front() -> None:
    """engine.rsio (the replay's allocation bound): each MessagePack stream decoder --
    one per rsio connection -- allocated msgpack's default buffer of 1 MiB before a byte
    arrived; it starts small and grows only as frames need."""
    from wirestream.generated.rsio import v0

    tracemalloc.start()
    try:
        decoder = v0.MsgpackStreamDecoder()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 128 * 1024
    element = bytes(range(256)) * 1024  # a 256 KiB element still arrives whole
    wire = v0.encode_msgpack(v0.OnNext(1, element))
    frames = [f for i in range(0, len(wire), 1000) for f in decoder.feed(wire[i : i + 1000])]
    assert frames == [v0.OnNext(1, element)]


@pytest.mark.parametrize("hello", ["ClientHello", "ServerHello"])
def test_a_hello_trickled_byte_by_byte_is_decoded_in_few_attempts(hello: str) -> None:
    """codec.rsio.v0 (found while profiling the codec targets, which feed each input in
    chunks down to one byte): a count-prefixed array of varints gave a self-delimiting
    stream decoder no better bound than "one more byte", so it decoded the frame again
    from its start at every byte -- quadratic: 12 KB of extension ids took 7 s, a 16 MiB
    hello days.  A cut array now says how many bytes its remaining elements need at
    least."""
    from wirestream.generated.rsio import v0

    frame = getattr(v0, hello)(0, list(range(100_000, 104_000)))  # 12 KB of 3-byte ids
    wire = v0.encode(frame)
    decoder = v0.StreamDecoder()
    attempts = 0
    decode_at = decoder._decode_at

    def counted(*args: object) -> object:
        nonlocal attempts
        attempts += 1
        return decode_at(*args)  # type: ignore[arg-type]

    decoder._decode_at = counted  # type: ignore[assignment]
    frames = [f for i in range(len(wire)) for f in decoder.feed(wire[i : i + 1])]
    assert frames == [frame]
    assert attempts <= 64  # was one per byte from the 4,000th on: 8,000


def test_a_messagepack_frame_fed_in_pieces_is_held_to_the_frame_limit() -> None:
    """codec.rsio.v0 (a stream decoder failed on the whole input and not on the same
    bytes in 6-byte pieces): msgpack's Unpacker parses an unfinished object as its bytes
    arrive, so its buffer limit bounded nothing -- nested arrays of small items fed in
    pieces grew past ``max_frame_size`` without end (a 780 KB frame through a 4 KiB
    limit, 2.3 MB of objects held).  The bytes of an unfinished frame are counted now."""
    from wirestream.generated.rsio import v0
    from wirestream.runtime.errors import FrameTooLarge

    inner = b"\xdc\x00\x40" + b"\xc4\x01x" * 64  # array of 64 one-byte bins
    wire = b"\x93\x0b\x01\xdc" + (4000).to_bytes(2, "big") + inner * 4000  # OnNextPacked
    for piece in (100, 6, len(wire)):
        decoder = v0.MsgpackStreamDecoder(max_frame_size=4096)
        tracemalloc.start()
        try:
            with pytest.raises(FrameTooLarge):
                for i in range(0, len(wire), piece):
                    decoder.feed(wire[i : i + piece])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 512 * 1024
    # A frame at the limit still passes, whole or in pieces; one byte more does not.
    ctx = v0.Context()
    ctx.element_size[1] = 1
    fits = v0.encode_msgpack(v0.OnNextPacked(1, [b"x"] * 1300))
    for limit, ok in ((len(fits), True), (len(fits) - 1, False)):
        for piece in (7, len(fits)):
            decoder = v0.MsgpackStreamDecoder(max_frame_size=limit, ctx=ctx)
            feed = [fits[i : i + piece] for i in range(0, len(fits), piece)]
            if ok:
                assert [f for p in feed for f in decoder.feed(p)] == [
                    v0.OnNextPacked(1, [b"x"] * 1300)
                ]
            else:
                with pytest.raises(FrameTooLarge):
                    for p in feed:
                        decoder.feed(p)
