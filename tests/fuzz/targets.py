"""The fuzz targets, by name: each is a function of the fuzzer's bytes that returns or
raises.  A ``ProtocolError`` never escapes a target (the harness catches it where the
protocol says the connection or frame ends); anything that escapes is a finding.

``codec.<protocol>.<version>``: the generated codec (tests/fuzz/codecs.py);
``engine.<protocol>``: the sans-I/O engine after a valid opening
(tests/fuzz/engines.py).  ``MAX_LEN`` bounds an input (libFuzzer's ``-max_len``; the
corpus replay holds the committed inputs to it as well).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

from tests.support.protocols import VERSIONS

__all__ = ["CORPUS", "MAX_LEN", "NAMES", "target", "version_of"]

CORPUS = Path(__file__).resolve().parent / "corpus"

CODECS = tuple(version.id for version in VERSIONS)  # every idl/<protocol>/<version>.yaml
ENGINES = ("bpmux", "rabbitmq_stream", "rsio", "rsocket.v0_2", "rsocket.v1_0")
NAMES = tuple(f"codec.{c}" for c in CODECS) + tuple(f"engine.{e}" for e in ENGINES)

MAX_LEN = {"codec": 4096, "engine": 4096}


def version_of(name: str) -> str:
    """The protocol version a target exercises (``engine.rsio`` -> ``rsio.v0``)."""
    kind, _, rest = name.partition(".")
    if kind == "codec" or "." in rest:
        return rest
    return {"bpmux": "bpmux.rel", "rabbitmq_stream": "rabbitmq_stream.v1", "rsio": "rsio.v0"}[rest]


@cache
def target(name: str) -> Callable[[bytes], None]:
    """The harness function of target ``name`` (imports what it needs on first use)."""
    kind, _, rest = name.partition(".")
    if kind == "codec" and rest in CODECS:
        from tests.fuzz.codecs import codec_target

        return codec_target(importlib.import_module(f"wirestream.generated.{rest}"))
    if kind == "engine" and rest in ENGINES:
        from tests.fuzz.engines import engine_target

        return engine_target(rest)
    raise KeyError(f"no fuzz target {name!r}; the targets are {', '.join(NAMES)}")
