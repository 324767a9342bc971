#!/bin/sh
# make mutate: mutation testing (mutmut) of the rule-bearing modules listed in
# pyproject.toml's [tool.mutmut], against the fast tests listed there; docs/mutation.md has
# the figures and the triage of the survivors.
#
# mutmut activates a mutant when the running module's __name__ matches the name it gave
# the mutant from the file's path, so the checkout's layout (runtime/flow.py imported as
# wirestream.runtime.flow) would switch no mutant on: the run happens in a copy laid out
# as the wheel is (wirestream/{runtime,codegen,generated}), under build/mutate/.
# Usage: tools/mutate.sh [PYTHON] [mutmut run arguments, e.g. a mutant name glob]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-python3}
[ $# -gt 0 ] && shift
stage="$root/build/mutate"
rm -rf "$stage"
mkdir -p "$stage/wirestream"
cd "$root"
cp wirestream/*.py wirestream/py.typed "$stage/wirestream/"
cp -r wirestream/apps runtime codegen generated "$stage/wirestream/"
cp -r tests pyproject.toml "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cd "$stage"
"$python" -m mutmut run --max-children "${MUTATE_JOBS:-2}" "$@"
"$python" -m mutmut results --all true >results.txt || true
"$python" - <<'PY'
# kill rate per module from mutmut's per-file results (mutants/**/*.py.meta), read with
# mutmut's own status names: "killed" and "timeout" count as killed; "survived" and
# "no tests" (a mutant no selected test reaches) do not.
import json
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

rows = []
for meta in sorted(Path("mutants").rglob("*.py.meta")):
    codes = list(json.loads(meta.read_text())["exit_code_by_key"].values())
    statuses = Counter(status_by_exit_code[code] for code in codes)
    if codes:
        name = str(meta.relative_to("mutants")).removesuffix(".meta")
        rows.append((name, len(codes), statuses["killed"] + statuses["timeout"], statuses))
print(f"{'module':48} mutants killed  rate  other")
for name, total, killed, statuses in rows:
    other = ", ".join(f"{k} {n}" for k, n in sorted(statuses.items()) if k not in ("killed", "timeout"))
    print(f"{name:48} {total:7} {killed:6} {100 * killed / total:5.1f}%  {other}")
total, killed = sum(r[1] for r in rows), sum(r[2] for r in rows)
print(f"{'all':48} {total:7} {killed:6} {100 * killed / max(total, 1):5.1f}%")
PY
echo "survivors: build/mutate/results.txt; one mutant's diff: cd build/mutate && $python -m mutmut show NAME"
