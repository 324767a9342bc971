#!/usr/bin/env bash
# mypy --strict over the package `wirestream` as it is imported: over the tree of
# tools/package_tree.sh (mypy runs no import hooks, so it cannot see setup.py's package
# map); the report names each file by its real path in the checkout.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
TREE="$("$ROOT/tools/package_tree.sh")"

cd "$ROOT"
set +e
MYPYPATH="$TREE" "$VENV/bin/mypy" --strict -p wirestream "$@" 2>&1 |
    sed -E "s#^($TREE|${TREE#"$ROOT"/})/wirestream/(codegen|generated|runtime)/#\2/#; s#^($TREE|${TREE#"$ROOT"/})/wirestream/#wirestream/#"
exit "${PIPESTATUS[0]}"
