#!/usr/bin/env bash
# mypy --strict over the package `wirestream` as it is imported.
#
# The import names wirestream.codegen, wirestream.generated and wirestream.runtime are the
# top-level folders codegen/, generated/ and runtime/ (setup.py's package map; the editable
# install resolves them with setuptools' import hook). mypy does not run import hooks, so it
# checks a tree that spells the same map: .venv/typecheck/wirestream holds links to
# wirestream/'s own entries and to the three folders. The tree lives in the venv (made,
# never committed, nothing in the checkout links anywhere); its path stays the same from
# run to run so mypy's cache holds; the report names the files by their real paths.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
TREE="$VENV/typecheck"
PKG="$TREE/wirestream"

rm -rf "$TREE"
mkdir -p "$PKG"
for entry in "$ROOT"/wirestream/*; do
    case "$(basename "$entry")" in __pycache__) continue ;; esac
    ln -s "$entry" "$PKG/$(basename "$entry")"
done
for part in codegen generated runtime; do
    ln -s "$ROOT/$part" "$PKG/$part"
done

cd "$ROOT"
set +e
MYPYPATH="$TREE" "$VENV/bin/mypy" --strict -p wirestream "$@" 2>&1 |
    sed -E "s#^($TREE|${TREE#"$ROOT"/})/wirestream/(codegen|generated|runtime)/#\2/#; s#^($TREE|${TREE#"$ROOT"/})/wirestream/#wirestream/#"
status=${PIPESTATUS[0]}
exit "$status"
