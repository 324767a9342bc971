"""Codec throughput: wirestream's generated codecs against real peers, side by side.

Run: ``python -m bench.codec`` (``make bench``). One run measures:

1. RSocket 1.0 PAYLOAD frames (16 B metadata + 100 B data, 125 bytes without the TCP
   length prefix), decode and encode:
   * ours: ``wirestream.generated.rsocket.v1_0.decode(data)`` / ``encode(frame)``;
   * rsocket-py 0.4.20: ``parse_or_ignore(data)`` / ``frame.serialize()``;
   * a hand-written ``struct`` floor: header unpack + metadata length + slices (no
     object); ``struct.pack`` + concatenation. Nothing in Python can be much faster.
   Targets: ours/rsocket-py >= 4x for decode and >= 3x for encode (PASS/MISS).
2. RabbitMQ stream Publish (key 2, version 1; one publisher; 1 message of 100 bytes and a
   batch of 100 such messages):
   * encode: ours ``frame_bytes(frame)`` (with the u32 size prefix, because rstream's
     encoders include it) vs rstream 1.1.1 ``encode_publish`` and ``encode_frame``;
   * decode: ours ``decode(body)`` vs rstream ``decode_frame(body)`` (both without the
     size prefix).

Before timing, each pair is checked to produce identical bytes / equal fields; any
difference is printed as a WARNING and listed in the summary.

Timing: ``time.perf_counter`` around a plain loop calling ``fn(arg)``, garbage collector
off, best of 5 repeats (200k iterations per single frame, fewer for batches).
"""

from __future__ import annotations

import gc
import itertools
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import wirestream.generated.rabbitmq_stream.v1 as rmq
import wirestream.generated.rsocket.v1_0 as rs

REPEATS = 5
N_SINGLE = 200_000
N_BATCH = 2_000

DECODE_TARGET = 4.0
ENCODE_TARGET = 3.0


def frames_per_second(fn: Callable[[Any], object], arg: Any, n: int) -> float:
    """Best-of-REPEATS rate of ``fn(arg)`` over ``n`` calls."""
    best = float("inf")
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(REPEATS):
            loop = itertools.repeat(None, n)
            start = time.perf_counter()
            for _ in loop:
                fn(arg)
            best = min(best, time.perf_counter() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    return n / best


@dataclass
class Row:
    operation: str
    name: str
    rate: float
    baseline: float | None = None  # rate of the peer this row is compared with

    @property
    def ratio(self) -> float | None:
        return None if self.baseline is None else self.rate / self.baseline


def print_table(title: str, rows: list[Row], baseline_name: str) -> None:
    print()
    print(title)
    header = f"  {'operation':<9} {'implementation':<44} {'frames/s':>12} {'us/frame':>9}"
    header += f"  {'vs ' + baseline_name:>15}"
    print(header)
    print("  " + "-" * (len(header) - 2))
    for row in rows:
        ratio = "" if row.ratio is None else f"{row.ratio:.2f}x"
        print(
            f"  {row.operation:<9} {row.name:<44} {row.rate:>12,.0f} "
            f"{1e6 / row.rate:>9.3f}  {ratio:>15}"
        )


warnings: list[str] = []


def warn(message: str) -> None:
    warnings.append(message)
    print(f"WARNING: {message}", file=sys.stderr)


# --------------------------------------------------------------------------------------
# RSocket 1.0 PAYLOAD
# --------------------------------------------------------------------------------------

_HDR = struct.Struct(">IH")
_U24 = struct.Struct(">BH")
_PAYLOAD_PREFIX = struct.Struct(">IHBH")


def floor_decode(buf: bytes) -> tuple[int, int, bytes | None, bytes]:
    """The least a PAYLOAD decoder must do: header, metadata length, two slices."""
    stream_id, type_flags = _HDR.unpack_from(buf, 0)
    if type_flags & 0x100:
        hi, lo = _U24.unpack_from(buf, 6)
        end = 9 + ((hi << 16) | lo)
        return stream_id & 0x7FFFFFFF, type_flags, buf[9:end], buf[end:]
    return stream_id & 0x7FFFFFFF, type_flags, None, buf[6:]


def floor_encode(fields: tuple[int, int, bytes, bytes]) -> bytes:
    """The least a PAYLOAD encoder must do: one struct.pack and a concatenation."""
    stream_id, flags, metadata, data = fields
    n = len(metadata)
    return _PAYLOAD_PREFIX.pack(stream_id, (0x0A << 10) | 0x100 | flags, n >> 16, n & 0xFFFF) + (
        metadata + data
    )


def bench_rsocket() -> list[tuple[str, float, float]]:
    """Returns (label, ratio, target) for the summary."""
    from rsocket.frame import PayloadFrame, parse_or_ignore

    metadata, data = b"M" * 16, b"D" * 100
    ours = rs.Payload(stream_id=1, next=True, metadata=metadata, data=data)
    peer = PayloadFrame()
    peer.stream_id = 1
    peer.flags_next = True
    peer.metadata = metadata
    peer.data = data
    floor_fields = (1, 0x20, metadata, data)

    wire = rs.encode(ours)
    if wire != peer.serialize():
        warn(f"RSocket PAYLOAD: ours {wire.hex()} != rsocket-py {peer.serialize().hex()}")
    if floor_encode(floor_fields) != wire:
        warn("RSocket PAYLOAD: struct floor encoder does not produce the frame's bytes")
    parsed = parse_or_ignore(wire)
    if rs.decode(wire) != ours or (parsed.metadata, parsed.data) != (metadata, data):
        warn("RSocket PAYLOAD: decoders disagree on the frame's fields")
    if floor_decode(wire)[2:] != (metadata, data):
        warn("RSocket PAYLOAD: struct floor decoder does not read the frame's fields")

    n = N_SINGLE
    dec_ours = frames_per_second(rs.decode, wire, n)
    dec_peer = frames_per_second(parse_or_ignore, wire, n)
    dec_floor = frames_per_second(floor_decode, wire, n)
    enc_ours = frames_per_second(rs.encode, ours, n)
    enc_peer = frames_per_second(PayloadFrame.serialize, peer, n)
    enc_floor = frames_per_second(floor_encode, floor_fields, n)

    rows = [
        Row("decode", "ours        decode(data)", dec_ours, dec_peer),
        Row("decode", "rsocket-py  parse_or_ignore(data)", dec_peer, dec_peer),
        Row("decode", "floor       struct unpack + slices", dec_floor, dec_peer),
        Row("encode", "ours        encode(frame)", enc_ours, enc_peer),
        Row("encode", "rsocket-py  frame.serialize()", enc_peer, enc_peer),
        Row("encode", "floor       struct.pack + concatenation", enc_floor, enc_peer),
    ]
    print_table(
        f"RSocket 1.0 PAYLOAD, 16 B metadata + 100 B data ({len(wire)}-byte frame), "
        f"{n:,} iterations, best of {REPEATS}",
        rows,
        "rsocket-py",
    )
    results = [
        ("RSocket PAYLOAD: decode ours/rsocket-py", dec_ours / dec_peer, DECODE_TARGET),
        ("RSocket PAYLOAD: encode ours/rsocket-py", enc_ours / enc_peer, ENCODE_TARGET),
    ]
    print()
    for label, ratio, target in results:
        verdict = "PASS" if ratio >= target else "MISS"
        print(f"  {label}: {ratio:.2f}x (target >= {target:g}x)  {verdict}")
    print(
        f"  ours vs struct floor: decode at {dec_ours / dec_floor:.0%} of the floor, "
        f"encode at {enc_ours / enc_floor:.0%}"
    )
    return results


# --------------------------------------------------------------------------------------
# RabbitMQ stream Publish (key 2, version 1)
# --------------------------------------------------------------------------------------


def bench_rabbitmq() -> list[tuple[str, float]]:
    """Returns (label, ratio) for the summary."""
    from rstream.encoding import decode_frame, encode_frame, encode_publish
    from rstream.schema import Message, Publish

    payload = b"x" * 100
    summary: list[tuple[str, float]] = []
    for count, n in ((1, N_SINGLE), (100, N_BATCH)):
        ours = rmq.Publish(
            publisher_id=7,
            published_messages=[
                rmq.PublishedMessage(publishing_id=i, entry=rmq.SimpleEntry(payload))
                for i in range(count)
            ],
        )
        peer = Publish(
            publisher_id=7,
            messages=[
                Message(publishing_id=i, filter_value=None, data=payload) for i in range(count)
            ],
        )
        label = f"{count} message{'s' if count > 1 else ''} x 100 B"

        prefixed = rmq.frame_bytes(ours)
        body = rmq.encode(ours)
        for name, theirs in (
            ("encode_publish", encode_publish(peer)),
            ("encode_frame", encode_frame(peer)),
        ):
            if theirs != prefixed:
                warn(f"Publish {label}: ours frame_bytes != rstream {name} ({len(theirs)} bytes)")
        decoded_peer: Any = decode_frame(body)
        decoded_ours = rmq.decode(body)
        ours_fields = (
            [
                (m.publishing_id, getattr(m.entry, "data", None))
                for m in decoded_ours.published_messages
            ]
            if isinstance(decoded_ours, rmq.Publish)
            else []
        )
        peer_fields = [(m.publishing_id, m.data) for m in decoded_peer.messages]
        if decoded_ours != ours or ours_fields != peer_fields:
            warn(f"Publish {label}: our decode and rstream decode_frame disagree")

        enc_ours = frames_per_second(rmq.frame_bytes, ours, n)
        enc_publish = frames_per_second(encode_publish, peer, n)
        enc_frame = frames_per_second(encode_frame, peer, n)
        dec_ours = frames_per_second(rmq.decode, body, n)
        dec_peer = frames_per_second(decode_frame, body, n)
        rows = [
            Row("encode", "ours     frame_bytes(frame)", enc_ours, enc_publish),
            Row("encode", "rstream  encode_publish(frame)", enc_publish, enc_publish),
            Row("encode", "rstream  encode_frame(frame)", enc_frame, enc_publish),
            Row("decode", "ours     decode(body)", dec_ours, dec_peer),
            Row("decode", "rstream  decode_frame(body)", dec_peer, dec_peer),
        ]
        print_table(
            f"RabbitMQ stream Publish v1, {label} ({len(prefixed)} bytes with size prefix), "
            f"{n:,} iterations, best of {REPEATS}",
            rows,
            "rstream",
        )
        print("  (encode ratios are against encode_publish, rstream's hand-written fast path)")
        if count > 1:
            print(
                f"  messages/s: ours encode {enc_ours * count:,.0f}, "
                f"rstream encode_publish {enc_publish * count:,.0f}; "
                f"ours decode {dec_ours * count:,.0f}, rstream {dec_peer * count:,.0f}"
            )
        summary += [
            (f"Publish {label}: encode ours/rstream encode_publish", enc_ours / enc_publish),
            (f"Publish {label}: encode ours/rstream encode_frame", enc_ours / enc_frame),
            (f"Publish {label}: decode ours/rstream decode_frame", dec_ours / dec_peer),
        ]
    return summary


def main() -> int:
    started = time.perf_counter()
    print(
        f"wirestream codec benchmark -- Python {sys.version.split()[0]}, "
        f"best of {REPEATS}, frames/s (higher is better)"
    )
    targets = bench_rsocket()
    ratios = bench_rabbitmq()

    print()
    print("Summary")
    print("-------")
    for label, ratio, target in targets:
        verdict = "PASS" if ratio >= target else "MISS"
        print(f"  {label:<66} {ratio:>6.2f}x  target >= {target:g}x  {verdict}")
    for label, ratio in ratios:
        print(f"  {label:<66} {ratio:>6.2f}x")
    if warnings:
        print(f"  {len(warnings)} WARNING(s):")
        for message in warnings:
            print(f"    - {message}")
    else:
        print("  byte-identical output and equal decoded fields for every pair checked")
    print(f"  total time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
