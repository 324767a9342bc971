"""The demo's page scripts: TypeScript sources (``chart.ts``, the one chart drawing code;
``static.ts``, the static chart's; ``live.ts``, the live page's) and their browser bundles
(``static.js``, ``live.js``), which are committed.

Why committed: ``make demo`` runs on a fresh clone with Python alone (Node is a test
and development tool here, not a demo requirement), and both pages need their script, so
the bundles ship as package data like any other file. Like generated code they are
product, never edited by hand: ``make demo-web`` (``python -m wirestream.apps.demo_web``)
rebuilds them with the pinned esbuild after ``tsc -b``, and
tests/project/test_demo_live.py fails when they differ from what their sources build.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["BUNDLES", "FOLDER", "bundle", "esbuild_args", "main", "script"]

FOLDER = Path(__file__).resolve().parent
ROOT = FOLDER.parent.parent.parent
"""The checkout: esbuild runs there (its bundles name their sources by paths from it)."""
BUNDLES = {"static.js": "static.ts", "live.js": "live.ts"}
"""Each bundle and its entry point (in this folder)."""


def esbuild_args(esbuild: Path, entry: str, outfile: Path) -> list[str]:
    """The esbuild command that builds ``entry`` into ``outfile``: one classic script
    (an IIFE: it is inlined into the page, which must open from disk, where module
    scripts are refused), readable (not minified: committed code is read), no source map
    or legal comments (nothing that changes with the path it was built in)."""
    banner = f"// Built by esbuild from wirestream/apps/demo_web/{entry} (make demo-web). DO NOT EDIT."  # fmt: skip
    return [str(esbuild), str(FOLDER / entry), "--bundle", "--format=iife",
            "--platform=browser", "--target=es2022", "--charset=utf8", "--legal-comments=none",
            "--log-level=warning", f"--banner:js={banner}", f"--outfile={outfile}"]  # fmt: skip


def bundle(esbuild: Path, out: Path) -> list[Path]:
    """Build every bundle into the folder ``out``; their paths."""
    built = []
    for name, entry in BUNDLES.items():
        subprocess.run(esbuild_args(esbuild, entry, out / name), check=True, cwd=ROOT)
        built.append(out / name)
    return built


def script(name: str) -> str:
    """A committed bundle's text, ready to inline in a ``<script>`` element: ``</script``
    in it would end the element early, so it is refused (no bundle has it)."""
    text = (FOLDER / name).read_text(encoding="utf-8")
    if "</script" in text.lower():
        raise ValueError(f"{name} contains '</script' and cannot be inlined")
    return text


def main() -> int:
    """``make demo-web``: rebuild the committed bundles (after ``tsc -b``)."""
    esbuild = ROOT / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        print(f"{esbuild} is missing: run npm ci first (make node-deps)", file=sys.stderr)
        return 1
    for path in bundle(esbuild, FOLDER):
        print(f"built {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0
