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

# Brought up to date in place, one process at a time (pytest-xdist's workers make it at
# once, and one may read it while another checks it): a link already right is left alone.
mkdir -p "$PKG"
exec 9>"$TREE.lock"
flock 9
link() {
    if [ "$(readlink "$2" 2>/dev/null)" != "$1" ]; then
        rm -rf "$2"
        ln -s "$1" "$2"
    fi
}
for existing in "$PKG"/* "$PKG"/.[!.]*; do
    [ -L "$existing" ] || [ -e "$existing" ] || continue
    name="$(basename "$existing")"
    case "$name" in codegen | generated | runtime) continue ;; esac
    [ -e "$ROOT/wirestream/$name" ] && [ "$name" != __pycache__ ] || rm -rf "$existing"
done
for entry in "$ROOT"/wirestream/*; do
    case "$(basename "$entry")" in __pycache__) continue ;; esac
    link "$entry" "$PKG/$(basename "$entry")"
done
for part in codegen generated runtime; do
    link "$ROOT/$part" "$PKG/$part"
done
echo "$TREE"
