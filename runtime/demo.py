"""`make demo` (until the data-pipeline demo replaces it): sample frames of every
protocol version, decoded from bytes by the generated codecs and printed as a table.

The samples are the golden vectors in tests/vectors/ (hand-derived from the specs).
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _fields(frame: Any) -> str:
    names = getattr(type(frame), "__match_args__", ())
    parts = []
    for name in names:
        value = getattr(frame, name)
        if value is None or value is False or value == b"" or value == []:
            continue
        if isinstance(value, bytes) and len(value) > 12:
            value = value[:12] + b"..."
        parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def main() -> int:
    width = max(100, shutil.get_terminal_size((140, 20)).columns)
    versions = sorted(p for p in (ROOT / "idl").glob("*/*.yaml"))
    total = 0
    for idl in versions:
        protocol, version = idl.parent.name, idl.stem
        codec = importlib.import_module(f"generated.{protocol}.{version}")
        title = (codec.__doc__ or "").splitlines()[0]
        vectors_file = ROOT / "tests" / "vectors" / f"{protocol}_{version}.yaml"
        vectors = (
            yaml.safe_load(vectors_file.read_text(encoding="utf-8"))
            if vectors_file.exists()
            else []
        )
        print(f"\n== generated.{protocol}.{version} -- {title}")
        print(f"   {'bytes (hex)':<34} {'frame':<26} fields")
        for vector in vectors[:8]:
            data = bytes.fromhex(vector["hex"])
            ctx = codec.Context(**vector["ctx"]) if vector.get("ctx") else None
            frame = codec.decode(data, ctx, vector.get("sender"))
            hex_text = _clip(data.hex(), 34)
            line = f"   {hex_text:<34} {type(frame).__name__:<26} {_fields(frame)}"
            print(_clip(line, width))
            total += 1
        if len(vectors) > 8:
            print(f"   ... and {len(vectors) - 8} more in {vectors_file.relative_to(ROOT)}")
    print(f"\n{total} frames of {len(versions)} protocol versions decoded from bytes.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
