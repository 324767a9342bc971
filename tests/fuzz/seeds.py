"""Write the seed inputs of the committed corpus (``python -m tests.fuzz.seeds``).

tests/fuzz/corpus/<target>/seed-* are made here, from sources that are themselves
committed, so they can be made again: for a codec, every golden vector of its version
(tests/vectors, the malformed ones too; rsio's MessagePack forms as well) behind a
header that sets its ``ctx``, all of its valid vectors read without a context as one
byte stream -- after a startup frame, too, where the protocol has them -- and, for a
context of plain values (MySQL's phase ...), the valid vectors of each context as one
stream; for an engine, each scenario's opening alone, then
followed by every palette frame, by every command of either side, and by time passing.
The other files of the corpus are inputs the fuzzer found (``python -m tests.fuzz
--merge``) and regressions (``crash-*``); this script leaves them alone.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.fuzz.codecs import HEADER, context, context_headers, header
from tests.fuzz.engines import MAX_STEPS, Op, scenarios
from tests.fuzz.targets import CODECS, CORPUS, ENGINES
from tests.support.protocols import VECTORS, Version, decode_vector, is_startup
from tests.support.protocols import context as vector_context
from wirestream.runtime.errors import ProtocolError

__all__ = ["codec_seeds", "engine_seeds", "main"]


def codec_seeds(name: str) -> dict[str, bytes]:
    protocol, version = name.split(".")
    codec = importlib.import_module(f"wirestream.generated.{name}")
    entry = Version(protocol, version)
    seeds: dict[str, bytes] = {}
    stream = b""
    opening = b""  # the first valid startup frame (PostgreSQL's StartupMessage ...)
    streams: dict[bytes, list[bytes]] = {}  # per context header, for plain context values
    for suffix in ("", "_errors"):
        for vector in entry.vectors(suffix):
            ctx = vector.get("ctx") or {}
            head = _header(codec, vector)
            body = bytes.fromhex(vector["hex"])
            seeds[vector["name"]] = head + body
            if "msgpack_hex" in vector:
                seeds[vector["name"] + "-msgpack"] = head + bytes.fromhex(vector["msgpack_hex"])
            if suffix:
                continue
            if is_startup(codec, vector):
                opening = opening or body
            elif not ctx.get("element_size") and (not ctx or _keyed(codec)):
                frame = codec.decode(body, None, vector.get("sender"))
                stream += codec.frame_bytes(frame)
            elif ctx and not _keyed(codec):
                streams.setdefault(head, []).append(body)
    seeds["all-valid-vectors-as-a-stream"] = header(chunk=7) + stream
    if opening:
        seeds["startup-frame-then-all-valid-vectors-as-a-stream"] = (
            header(chunk=7) + opening + stream
        )
    for (mode, a, b), bodies in streams.items():
        if len(bodies) > 1:  # in chunks of 7 bytes
            name = f"valid-vectors-of-context-{a}-{b << 8 if mode & 0x80 else b}-as-a-stream"
            seeds[name] = bytes((mode | 6, a, b)) + b"".join(bodies)
    return seeds


def _keyed(codec: ModuleType) -> bool:
    """Whether the codec's context is keyed by a frame field (rsio) -- or absent."""
    if not codec.NEEDS_CONTEXT:
        return True
    return isinstance(getattr(codec.Context(), codec.Context.__slots__[0]), dict)


def _header(codec: ModuleType, vector: dict[str, Any]) -> bytes:
    """The header that makes the harness read the vector as its ``ctx`` says: for plain
    context values, the first of ``context_headers`` whose context decodes it alike."""
    values = vector.get("ctx") or {}
    heads = context_headers(codec, values)
    if _keyed(codec) or not values:
        return heads[0]
    expected = _outcome(codec, vector, vector_context(codec, values))
    for head in heads:
        if _outcome(codec, vector, context(codec, *head[:HEADER])) == expected:
            return head
    raise ValueError(f"{vector['name']}: no header sets a context that decodes it alike")


def _outcome(codec: ModuleType, vector: dict[str, Any], ctx: Any) -> Any:
    try:
        return decode_vector(codec, vector, ctx)
    except ProtocolError as error:
        return type(error).__name__


def engine_seeds(name: str) -> dict[str, bytes]:
    seeds: dict[str, bytes] = {}
    for index, build in enumerate(scenarios(name)):
        run = build()
        first = bytes((index,))
        seeds[f"scenario-{index}"] = first
        # Every palette frame once, as it is (no patch, one piece), the peer's output
        # delivered between them.
        steps = [
            bytes((Op.FRAME[0], i, 0, 0, Op.DELIVER[0], 0, 0)) for i in range(len(run.palette))
        ]
        for part, start in enumerate(range(0, len(steps), MAX_STEPS // 2)):
            seeds[f"scenario-{index}-palette-{part}"] = first + b"".join(
                steps[start : start + MAX_STEPS // 2]
            )
        # Every command of each side, then a delivery (argument bytes are zeros).
        for side, op in (("local", Op.LOCAL[0]), ("peer", Op.PEER[0])):
            commands = run.engine.commands if side == "local" else run.peer.commands
            script = b"".join(
                bytes((op, i)) + bytes(6) + bytes((Op.DELIVER[0], 0, 0))
                for i in range(len(commands))
            )
            seeds[f"scenario-{index}-{side}-commands"] = first + script
        seeds[f"scenario-{index}-time"] = first + bytes(
            (Op.TIME[0], 3, Op.DELIVER[0], 0, 0, Op.TIME[0], 4, Op.DELIVER[0], 0, 0, Op.TIME[0], 5)
        )
    return seeds


def write(target: str, seeds: dict[str, bytes]) -> None:
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("seed-*"):
        old.unlink()
    for name, data in seeds.items():
        (folder / f"seed-{name}").write_bytes(data)


def main() -> None:
    for codec in CODECS:
        write(f"codec.{codec}", codec_seeds(codec))
    for engine in ENGINES:
        write(f"engine.{engine}", engine_seeds(engine))
    total = sum(1 for _ in CORPUS.rglob("seed-*"))
    print(f"{total} seed inputs under {Path(CORPUS).relative_to(Path.cwd())}")


if __name__ == "__main__":
    main()
