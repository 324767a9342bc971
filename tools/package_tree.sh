#!/usr/bin/env bash
# Print the path of a folder whose wirestream/ spells the package as it is imported, for the
# tools that read packages from the file system and run no import hooks (mypy, mkdocstrings'
# griffe). The import names wirestream.codegen, wirestream.generated and wirestream.runtime
# are the top-level folders codegen/, generated/ and runtime/ (setup.py's package map); the
# tree holds links to wirestream/'s own entries and to those three folders. It lives outside
# the checkout (made on demand, never committed: nothing in the checkout links anywhere, so
# grep and tools that follow links see each file once), one per checkout, at a path that
# stays the same from run to run so mypy's cache holds.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TREE="${XDG_CACHE_HOME:-$HOME/.cache}/wirestream/package-tree/$(printf %s "$ROOT" | cksum | cut -d" " -f1)"
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
echo "$TREE"
