#!/usr/bin/env bash
# `make native`: build wirestream.runtime._native (runtime/rust/wirestream-native) with maturin as one
# abi3 wheel and put its module into runtime/ of this checkout, where `import
# wirestream.runtime._native` finds it (git-ignored: built, never committed). Without cargo it says
# so and stops: wirestream.runtime.capture.native then takes the pure-Python path.
# Usage: tools/native.sh [PYTHON]   (default: .venv/bin/python, which has maturin: the
# `native` extra of pyproject.toml)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
CRATE="$ROOT/runtime/rust/wirestream-native"

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo missing: wirestream.runtime._native not built; the pure-Python path is used (docs/rust.md)"
    exit 0
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
if ! "$PY" -m maturin build --release --locked -i "$PY" \
    -m "$CRATE/Cargo.toml" --out "$out" >"$out/build.log" 2>&1; then
    cat "$out/build.log" >&2
    exit 1
fi
# The wheel holds the module as _native/_native.abi3.so; the checkout imports it as
# runtime/_native.abi3.so (written whole, then renamed: a running import never sees half).
"$PY" - "$out" "$ROOT/runtime" <<'PY'
import sys, zipfile
from pathlib import Path

out, package = Path(sys.argv[1]), Path(sys.argv[2])
(wheel,) = out.glob("*.whl")
with zipfile.ZipFile(wheel) as archive:
    (member,) = [n for n in archive.namelist() if n.endswith(".abi3.so")]
    data = archive.read(member)
target = package / "_native.abi3.so"
partial = target.with_suffix(".partial")
partial.write_bytes(data)
partial.replace(target)
print(f"built {target.relative_to(package.parent)} ({len(data) // 1024} KiB)")
PY
