"""``python -m wirestream.codegen`` (and ``wirestream generate|check|validate``).

python -m wirestream.codegen generate [--idl idl] [--out generated] [--package NAME] [--target T] [--only P[/V]]
python -m wirestream.codegen check    [--idl idl] [--out generated] [--package NAME] [--target T] [--only P[/V]]
python -m wirestream.codegen validate FILE...
python -m wirestream.codegen diff     OLD NEW | --against REF [PATH...]   (see diff/cli.py)

The defaults are what ``make generate`` runs in a checkout: every target of ``idl/`` into
``generated/`` as the package ``wirestream.generated``.  ``--package`` is the import name
of ``--out`` (default: ``wirestream.generated`` for a checkout's ``generated/``, else
``--out``'s folder name); the code it writes imports only ``wirestream.runtime``, so it
works in any project that installs wirestream. ``--target`` picks the languages:
``python`` (modules under ``--out``), ``typescript`` (the npm package
``@wirestream/generated`` under ``--out/typescript``; for an IDL folder other than this
checkout's ``idl/`` it is standalone: it carries the runtime's sources in ``runtime/`` and
builds with ``npm install && npm run build``), ``wireshark`` (a Lua dissector per protocol
version, ``--out/wireshark/<protocol>_<version>.lua``) or ``all`` (the default).

``generate`` renders only what changed since it last ran (``incremental.py``: a manifest
in ``--out/.wirestream-cache.json``; ``--no-cache`` renders everything); ``check``
always renders and compares.  ``--only`` narrows either to one protocol or version: its
own files, nothing of another protocol, and not the files that list every protocol (the
Python package ``__init__`` files, the TypeScript ``package.json``, ``tsconfig.json`` and
``README.md``), which a full ``generate`` keeps in step with the whole tree.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Final

from wirestream.codegen import incremental
from wirestream.codegen.diff import cli as diff_cli
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.tree import (
    EXTRA_TARGETS,
    TARGETS,
    Options,
    default_package,
    display_path,
    owned_by,
    owned_files,
    render_tree,
    units,
    workspace_idl,
)


def generate_tree(
    idl_dir: Path,
    package: str = "wirestream.generated",
    only: str | None = None,
    targets: tuple[str, ...] = ("python",),
    standalone_ts: bool | None = None,
) -> dict[str, str]:
    """Every generated file for the IDL tree (or for one protocol): relative path -> text.
    ``standalone_ts``: whether the TypeScript package builds on its own (default: unless
    ``idl_dir`` is this checkout's, ``workspace_idl``)."""
    if standalone_ts is None:
        standalone_ts = not workspace_idl(idl_dir)
    return render_tree(idl_dir, targets, Options(package, standalone_ts), only)


def check_tree(
    files: dict[str, str],
    out: Path,
    targets: tuple[str, ...],
    idl_dir: Path,
    only: str | None = None,
) -> list[str]:
    """What differs between ``out`` and ``files`` (under ``only``: in that protocol's files)."""
    problems: list[str] = []
    for rel, text in sorted(files.items()):
        target = out / rel
        if not target.exists():
            problems.append(f"missing: {out / rel}")
            continue
        current = target.read_text(encoding="utf-8")
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), str(target), "regenerated", lineterm=""
            )
            problems.append("\n".join(list(diff)[:40]))
    protocols = {u.protocol for u in units(idl_dir)}
    for rel in owned_files(out, targets):
        if rel not in files and (only is None or owned_by(rel, only, protocols)):
            problems.append(f"not generated from any IDL: {out / rel}")
    return problems


COMMANDS: Final = ("generate", "check", "validate", "diff")


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``generate``, ``check``, ``validate`` and ``diff`` to a parser's sub-commands
    (this module's own parser, and the ``wirestream`` command's)."""
    gen = sub.add_parser(
        "generate", help="IDL files -> typed code (idl/**/*.yaml -> generated/**)",
        epilog="examples:\n"
        "  wirestream generate                              # what make generate runs\n"
        "  wirestream generate --only rsocket               # one protocol, nothing else\n"
        "  wirestream generate --only rsocket/v1_0          # one version, nothing else\n"
        "  wirestream generate --idl my-idl --out my_gen --target python",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    gen.add_argument("--no-cache", action="store_true",
                     help="render everything (default: only what changed since the last run)")  # fmt: skip
    chk = sub.add_parser(
        "check", help="fail if --out is not what the IDL generates",
        epilog="examples:\n"
        "  wirestream check                                 # exit 1 and a diff when stale\n"
        "  wirestream check --only rsocket                  # rsocket's own files only",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    for p in (gen, chk):
        p.add_argument("--idl", type=Path, default=Path("idl"))
        p.add_argument("--out", type=Path, default=Path("generated"))
        p.add_argument("--package", default=None,
                       help="import name of --out (default: wirestream.generated for a "
                            "checkout's generated/, else --out's folder name)")  # fmt: skip
        p.add_argument("--target", choices=[*TARGETS, *EXTRA_TARGETS, "all"], default="all",
                       help="the language(s) to write (default: all; typescript goes to "
                            "--out/typescript, wireshark to --out/wireshark)")  # fmt: skip
        p.add_argument("--only", default=None, metavar="PROTOCOL[/VERSION]",
                       help="one protocol (idl/PROTOCOL/*.yaml) or version: its own files "
                            "only, not another protocol's nor the files listing every protocol")  # fmt: skip
    val = sub.add_parser(
        "validate", help="validate IDL files",
        epilog="examples:\n"
        "  wirestream validate idl/rsocket/v1_0.yaml        # errors name file:line and key",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    val.add_argument("files", nargs="+", type=Path)
    diff_cli.add_parser(sub)


def run(args: argparse.Namespace, command: str) -> int:
    """Run one of ``COMMANDS`` with its parsed arguments; the exit code."""
    if command == "diff":
        return diff_cli.run(args)
    try:
        if command == "validate":
            for path in args.files:
                load_protocol(path, display_path(path))
                print(f"{display_path(path)}: ok")
            return 0
        options = Options(args.package or default_package(args.out), not workspace_idl(args.idl))
        targets = TARGETS if args.target == "all" else (args.target,)
        if command == "generate" and set(targets) & set(EXTRA_TARGETS):
            # not incremental: rendered whole, written, and what it no longer makes removed
            files = render_tree(args.idl, targets, options, args.only)
            incremental.write_changed(args.out, files)
            protocols = {unit.protocol for unit in units(args.idl)}
            incremental.remove_stale(args.out, targets, files.keys(), args.only, protocols)
            print(f"{args.out}: {len(files)} files")
            return 0
        if command == "generate":
            report = incremental.generate(args.idl, args.out, targets, options, args.only,
                                          use_cache=not args.no_cache)  # fmt: skip
            print(f"{args.out}: {report.files} files, {len(report.rendered)} parts rendered, "
                  f"{len(report.written)} written, {len(report.removed)} removed")  # fmt: skip
            return 0
        files = render_tree(args.idl, targets, options, args.only)
        problems = check_tree(files, args.out, targets, args.idl, args.only)
        if problems:
            print(f"{args.out} is stale; run `make generate`:", file=sys.stderr)
            for problem in problems:
                print(problem, file=sys.stderr)
            return 1
        print(f"{args.out} is fresh ({len(files)} files)")
        return 0
    except IdlError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wirestream.codegen", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return run(args, args.command)


if __name__ == "__main__":
    raise SystemExit(main())
