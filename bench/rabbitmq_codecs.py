"""RabbitMQ streams with sub-entry compression: publish (confirmed) and consume, each
codec, wirestream's asyncio client against RabbitMQ's Java stream client in the same
run, on the same broker (issue 19, "Done when").

Run: ``python -m bench.rabbitmq_codecs [N]`` (part of ``make bench``; needs the broker of
``make broker`` and the Java peer of ``make java-peers``, and says so plainly when one
is missing).

The Java side is tests/support/java/rabbitmq CodecPerf: a PerfTest-style program on the Java
client's public API (stream-client 1.11.0). It is not stream-perf-test itself, which is
not on Maven Central (only a GitHub-release jar), but measures what that tool's
confirmed-publish and consume rates measure: one producer with ``subEntrySize`` +
``compression``, the clock from the first send to the last confirm; one consumer from
offset first until ``N`` messages reached the handler, every body read. It warms its JIT
with a round of N/10 per codec first.

Ours, with the same message size, sub-entry size, count and codec: a producer with
``sub_entry_size`` + ``compression``, ``send_many`` of 1,000 (our batch API), confirmed
per message; a consumer ``async for message in consumer`` reading ``message.body``; and
a consumer ``async for batch in consumer.batches()`` reading ``batch.bodies`` (issue 28:
the batch API, target >= 1.0x Java's consume rate on every codec).
Both sides wrap bodies in an AMQP 1.0 Data section. Bodies are ``BODY_SIZE`` bytes: the
message's index (8 bytes), then a stretch of one word text that moves with the index,
cut the same way on both sides (a batch of 100 compresses 5:1 with gzip and zstd,
3:1 with snappy and lz4; PerfTest's zero-filled bodies would flatter every codec).

Figures: messages/s, best of ``REPEATS``, each on a fresh stream; ours and Java's runs
alternate so both see the same machine load.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.broker import broker_up
from bench.rabbitmq_runtime import batch_read_rate, read_rate
from bench.rstream_baseline import HOST, PORT
from wirestream.runtime.rabbitmq_stream.aio import connect

N_MESSAGES = 100_000
BODY_SIZE = 100
SUB_ENTRY_SIZE = 100
REPEATS = 3
SEND_MANY = 1_000
TIMEOUT = 180.0
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
URI = f"rabbitmq-stream://guest:guest@{HOST}:{PORT}/%2f"
PEER = Path(__file__).resolve().parent.parent / "tests" / "support" / "java" / "rabbitmq"


def text(length: int = 16_384) -> bytes:
    """Words drawn from a small vocabulary: what the bodies are cut from."""
    rng = random.Random(19)
    words = ["sensor", "value", "unit", "celsius", "ok", "true", "false", "id", "ts", "zone",
             "north", "south", "reading", "status", "42", "17.5", "device", "batch"]  # fmt: skip
    out = " ".join(rng.choice(words) for _ in range(length)).encode()
    return out[:length]


def body(index: int, source: bytes, size: int = BODY_SIZE) -> bytes:
    """Message ``index``: the index (8 bytes, big-endian), then ``size - 8`` bytes of
    ``source`` from a place that moves with the index (CodecPerf cuts the same)."""
    start = (index * 61) % (len(source) - size + 8)
    return index.to_bytes(8, "big") + source[start : start + size - 8]


async def ours(codec: str, n: int) -> tuple[float, float, float]:
    """(publish, consume, consume with batches()) messages/s on a fresh stream."""
    source = text()
    bodies = [body(i, source) for i in range(n)]
    async with await connect(URI, connection_name="bench-wirestream-codecs") as client:
        stream = f"bench-wirestream-{codec}-{uuid.uuid4()}"
        await client.create_stream(stream)
        try:
            producer = await client.producer(
                stream, sub_entry_size=SUB_ENTRY_SIZE, compression=codec
            )
            started = time.perf_counter()
            async with asyncio.timeout(TIMEOUT):
                confirmations = [
                    await producer.send_many(bodies[i : i + SEND_MANY])
                    for i in range(0, n, SEND_MANY)
                ]
                for confirmation in confirmations:
                    await confirmation
            publish = n / (time.perf_counter() - started)
            if sum(c.confirmed for c in confirmations) != n:
                raise RuntimeError(f"{codec}: not every message confirmed")
            await producer.close()
            consume = await read_rate(client, stream, n, BODY_SIZE, f"{codec}: ")
            batches = await batch_read_rate(client, stream, n, BODY_SIZE, f"{codec}: ")
        finally:
            await client.delete_stream(stream, missing_ok=True)
    return publish, consume, batches


def java(n: int) -> dict[str, tuple[float, float]]:
    """codec -> (publish, consume) messages/s from one CodecPerf run (every codec)."""
    classpath = f"{PEER / 'target' / 'classes'}:{PEER / 'target' / 'lib' / '*'}"
    command = ["java", "-cp", classpath, "wirestream.rabbitmq.CodecPerf", URI, str(n),
               str(BODY_SIZE), str(SUB_ENTRY_SIZE), base64.b64encode(text()).decode(),
               *CODECS]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT * 4)
    if done.returncode != 0:
        raise RuntimeError(f"CodecPerf exited with {done.returncode}:\n{done.stderr}")
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {a["codec"]: (a["publish_rate"], a["consume_rate"]) for a in answers}


def run_all(n: int) -> dict[str, dict[str, float]]:
    runs: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(REPEATS):  # alternate, so both sides share the machine's moods
        for codec in CODECS:
            publish, consume, batches = asyncio.run(ours(codec, n))
            runs.setdefault(("ours", codec, "publish"), []).append(publish)
            runs.setdefault(("ours", codec, "consume"), []).append(consume)
            runs.setdefault(("ours", codec, "batches"), []).append(batches)
        for codec, (publish, consume) in java(n).items():
            runs.setdefault(("java", codec, "publish"), []).append(publish)
            runs.setdefault(("java", codec, "consume"), []).append(consume)
    best = {key: max(values) for key, values in runs.items()}
    print(f"  {'codec':<7} {'publish: ours':>14} {'Java':>10} {'ours/Java':>10}"
          f"   {'consume: ours':>14} {'Java':>10} {'ours/Java':>10}"
          f"   {'batches()':>10} {'/Java':>6}")  # fmt: skip
    ratios: dict[str, dict[str, float]] = {}
    for codec in CODECS:
        row = [codec]
        ratios[codec] = {}
        for kind in ("publish", "consume"):
            mine, theirs = best[("ours", codec, kind)], best[("java", codec, kind)]
            ratios[codec][kind] = mine / theirs
            row += [f"{mine:>14,.0f}", f"{theirs:>10,.0f}", f"{mine / theirs:>9.2f}x"]
        batches, theirs = best[("ours", codec, "batches")], best[("java", codec, "consume")]
        ratios[codec]["batches"] = batches / theirs
        row += [f"{batches:>10,.0f}", f"{batches / theirs:>5.2f}x"]
        print(f"  {row[0]:<7} {row[1]} {row[2]} {row[3]}   {row[4]} {row[5]} {row[6]}"
              f"   {row[7]} {row[8]}")  # fmt: skip
    return ratios


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else N_MESSAGES
    if not broker_up():
        print(f"rabbitmq codecs bench: no broker on {HOST}:{PORT}; start one with `make broker`")
        return 1
    if not (PEER / "target" / ".built").exists():
        print("rabbitmq codecs bench: the Java peer is not built; run `make java-peers`")
        return 1
    print(
        f"RabbitMQ sub-entry compression, wirestream vs the Java stream client 1.11.0 "
        f"(a PerfTest-style program on its API, not stream-perf-test) -- Python "
        f"{sys.version.split()[0]}, broker {HOST}:{PORT}, {n:,} x {BODY_SIZE} B, "
        f"sub-entry size {SUB_ENTRY_SIZE}, best of {REPEATS}, messages/s, higher is better"
    )
    started = time.perf_counter()
    run_all(n)
    print(f"  total time {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
