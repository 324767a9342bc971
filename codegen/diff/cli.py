"""``wirestream diff``: what a change to the IDL breaks, for whom (see ``diff.py``).

Registered by ``wirestream.codegen.cli.add_commands``, so it is both ``wirestream diff``
and ``python -m wirestream.codegen diff``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Final

from wirestream.codegen.frontend.build import load_protocol, load_protocol_text
from wirestream.codegen.diff.compare import Change, breaking, diff_protocols
from wirestream.codegen.diff.report import Report, Run, text, to_json
from wirestream.codegen.frontend.errors import IdlError

FAIL_ON: Final = ("any", "old-readers", "new-readers", "none")
GIT_TIMEOUT: Final = 60.0  # seconds for one git command (a large repository's ls-tree)
EXIT_OK, EXIT_BREAKING, EXIT_ERROR = 0, 1, 2

DESCRIPTION: Final = """\
Compare two versions of protocol IDL files and judge every change for both directions
of a mixed deployment: does it break OLD readers (a peer built from the new file
writes, one built from the old file reads) or NEW readers (old writer, new reader)?
Frames, fields, bits, flags, presence, enums, framing, the discriminator, the
unknown-frame policy and the state machines are compared; each change names its rule,
whose readers it concerns (a frame only the server sends is read by clients) and the
file:line of both sides.

OLD and NEW are two IDL files, or two folders whose protocol/version.yaml files are
paired by path. With --against REF the working tree's IDL under each PATH (default:
idl) is compared with the same files at the git revision REF, like `buf breaking
--against`."""

EPILOG: Final = """\
examples:
  wirestream diff idl/rsocket/v0_2.yaml idl/rsocket/v1_0.yaml
  wirestream diff old-idl/ idl/ --format json
  wirestream diff --against origin/main                 # in CI: fails on breaking changes
  wirestream diff --against HEAD~1 idl/rsocket --fail-on new-readers
  python -m wirestream.codegen diff --against main idl --fail-on none   # report only

exit status: 0 no breaking change counted (see --fail-on), 1 breaking changes, 2 usage,
IDL or git error."""


class DiffError(Exception):
    """A diff that cannot run: bad arguments or a git failure."""


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    parser = sub.add_parser("diff", help="what an IDL change breaks: old readers, new readers",
                            description=DESCRIPTION, epilog=EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="OLD NEW (files or folders); with --against: the IDL files or "
                             "folders to check (default: idl)")  # fmt: skip
    parser.add_argument("--against", metavar="REF", default=None,
                        help="compare the working tree with the same paths at git revision REF")  # fmt: skip
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="a readable table (default) or JSON")  # fmt: skip
    parser.add_argument("--fail-on", choices=FAIL_ON, default="any",
                        help="which breaking changes make the exit status 1: any (default), "
                             "old-readers, new-readers, or none (report only)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    try:
        result = compare(args.paths, args.against)
    except (DiffError, IdlError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    failing: list[Change] = [c for r in result.reports for c in breaking(r.changes, args.fail_on)]
    if args.format == "json":
        sys.stdout.write(to_json(result, args.fail_on, failing))
    else:
        sys.stdout.write(text(result, failing))
    return EXIT_BREAKING if failing else EXIT_OK


def compare(paths: list[str], against: str | None) -> Run:
    if against is not None:
        return compare_git(against, [Path(p) for p in paths] or [Path("idl")])
    if len(paths) != 2:
        raise DiffError("give OLD and NEW (two files or two folders), or --against REF")
    old, new = Path(paths[0]), Path(paths[1])
    for path in (old, new):
        if not path.exists():
            raise DiffError(f"{path}: no such file or folder")
    if old.is_file() and new.is_file():
        return Run([diff_files(old, new)])
    if old.is_dir() and new.is_dir():
        return compare_folders(old, new)
    raise DiffError("OLD and NEW must both be files or both be folders")


def display(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def diff_files(old: Path, new: Path) -> Report:
    old_model = load_protocol(old, display(old))
    new_model = load_protocol(new, display(new))
    return Report(old_model.source, new_model.source, diff_protocols(old_model, new_model))


def yaml_files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*.yaml"))
            if p.is_file()}  # fmt: skip


def compare_folders(old: Path, new: Path) -> Run:
    old_files, new_files = yaml_files(old), yaml_files(new)
    reports = [diff_files(old_files[rel], new_files[rel]) for rel in sorted(old_files)
               if rel in new_files]  # fmt: skip
    return Run(reports, [display(old_files[rel]) for rel in sorted(old_files) if rel not in new_files],
               [display(new_files[rel]) for rel in sorted(new_files) if rel not in old_files])  # fmt: skip


# --- git ---------------------------------------------------------------------------------


def git(*argv: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(["git", *argv], capture_output=True, text=True, cwd=cwd,
                              timeout=GIT_TIMEOUT, check=False)  # fmt: skip
    except FileNotFoundError:
        raise DiffError("--against needs git on the PATH") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {' '.join(argv)}: no answer in {GIT_TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        raise DiffError(f"git {' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout


def compare_git(ref: str, paths: list[Path]) -> Run:
    """The working tree's ``*.yaml`` under ``paths`` against the same files at ``ref``."""
    top = Path(git("rev-parse", "--show-toplevel").strip())
    try:
        git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=top)
    except DiffError:
        raise DiffError(f"{ref!r} is not a git revision here") from None
    reports: list[Report] = []
    old_only: list[str] = []
    new_only: list[str] = []
    seen: set[str] = set()
    for path in paths:
        try:
            rel = path.resolve().relative_to(top.resolve()).as_posix()
        except ValueError:
            raise DiffError(f"{path} is not inside the git work tree {top}") from None
        listed = git("ls-tree", "-r", "--name-only", ref, "--", rel, cwd=top).splitlines()
        at_ref = sorted(name for name in listed if name.endswith(".yaml"))
        if path.is_file():
            here = {rel: path} if rel.endswith(".yaml") else {}
        elif path.is_dir():
            here = {f"{rel}/{k}" if rel != "." else k: v for k, v in yaml_files(path).items()}
        elif not at_ref:
            raise DiffError(f"{path}: no such file or folder here or at {ref}")
        else:
            here = {}
        for name in at_ref:
            if name in seen:
                continue
            seen.add(name)
            if name not in here:
                old_only.append(f"{ref}:{name}")
                continue
            old_text = git("show", f"{ref}:{name}", cwd=top)
            old_model = load_protocol_text(old_text, f"{ref}:{name}")
            new_model = load_protocol(here[name], display(here[name]))
            reports.append(Report(old_model.source, new_model.source,
                                  diff_protocols(old_model, new_model)))  # fmt: skip
        for name in sorted(here):
            if name not in at_ref and name not in seen:
                seen.add(name)
                new_only.append(display(here[name]))
    return Run(reports, old_only, new_only)
