"""``python -m wirestream.codegen`` (and ``wirestream generate|check|validate``).

python -m wirestream.codegen generate [--idl idl] [--out generated] [--package NAME] [--target T]
python -m wirestream.codegen check    [--idl idl] [--out generated] [--package NAME] [--target T]
python -m wirestream.codegen validate FILE...
python -m wirestream.codegen diff     OLD NEW | --against REF [PATH...]   (see diff_cli.py)

``--package`` is the import name of ``--out`` (default: its folder name); the code it
writes imports only ``wirestream.runtime``, so it works in any project that installs
wirestream. ``--target`` picks the languages: ``python`` (the default: modules under
``--out``), ``typescript`` (the npm package ``@wirestream/generated`` under
``--out/typescript``, importing ``@wirestream/runtime``; for an IDL folder other than this
checkout's ``idl/`` it builds standalone: ``npm run build``), ``wireshark`` (a Lua
dissector per protocol version, ``--out/wireshark/<protocol>_<version>.lua``) or ``all``.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path
from typing import Final

from wirestream.codegen.diff import cli as diff_cli
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.frontend.model import Protocol
from wirestream.codegen.targets.python.render import render_package_init, render_protocol
from wirestream.codegen.targets.rust.render import DIR as RUST_DIR
from wirestream.codegen.targets.rust.render import render_rust, rust_owned
from wirestream.codegen.targets.typescript.codec import render_typescript
from wirestream.codegen.targets.wireshark.dissector import DIR as WIRESHARK_DIR
from wirestream.codegen.targets.wireshark.dissector import render_wireshark

TARGETS: Final = ("python", "typescript", "wireshark")
# Not yet in ``all``: the Rust target spells only some versions (the others are refused).
EXTRA_TARGETS: Final = ("rust",)
TS_DIR: Final = "typescript"  # the npm package's folder under --out
CHECKOUT: Final = Path(__file__).resolve().parent.parent  # a wirestream checkout, when run from one


def idl_files(idl_dir: Path) -> list[Path]:
    return sorted(p for p in idl_dir.rglob("*.yaml") if p.is_file())


def display_path(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


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
    protos = load_tree(idl_dir, only)
    files: dict[str, str] = {}
    if "typescript" in targets:
        if standalone_ts is None:
            standalone_ts = not workspace_idl(idl_dir)
        ts_files = render_typescript(protos, standalone=standalone_ts)
        files.update({f"{TS_DIR}/{rel}": text for rel, text in ts_files.items()})
    if "wireshark" in targets:
        files.update(
            {f"{WIRESHARK_DIR}/{rel}": text for rel, text in render_wireshark(protos).items()}
        )
    if "python" in targets:
        files.update(python_tree(protos, package, only))
    if "rust" in targets:
        files.update({f"{RUST_DIR}/{rel}": text for rel, text in render_rust(protos).items()})
    return files


def workspace_idl(idl_dir: Path) -> bool:
    """Whether ``idl_dir`` is the ``idl/`` of the wirestream checkout this runs from: its
    TypeScript package is then the npm workspace member ``generated/typescript`` (built
    against ``runtime/typescript`` by a project reference, wherever ``--out`` is, so that
    ``make check-generated`` compares like with like); any other IDL gets a standalone
    package that depends on ``@wirestream/runtime`` and builds in its own folder."""
    own = CHECKOUT / "runtime" / "typescript" / "tsconfig.json"
    return own.is_file() and idl_dir.resolve() == (CHECKOUT / "idl").resolve()


def load_tree(idl_dir: Path, only: str | None = None) -> list[Protocol]:
    """The models of the IDL tree (or of one protocol), each file checked to sit at
    ``idl/<protocol>/<version>.yaml``."""
    protos: list[Protocol] = []
    for path in idl_files(idl_dir):
        if only is not None and path.parent.name != only:
            continue
        proto = load_protocol(path, display_path(path))
        expected = (path.parent.name, path.stem)
        if (proto.protocol, proto.version) != expected:
            raise IdlError(proto.source, 1, "protocol/version",
                           f"the file must be idl/{proto.protocol}/{proto.version}.yaml "
                           f"to declare protocol {proto.protocol!r}, version {proto.version!r}")  # fmt: skip
        protos.append(proto)
    return protos


def predecessor_of(proto: Protocol, protos: list[Protocol]) -> Protocol | None:
    """The model of ``proto``'s predecessor when the tree has it.  It may not: one file
    generated alone (the edit workflow) is fine, and its docs say the notes are missing."""
    return next((p for p in protos if (p.protocol, p.version) == (proto.protocol,
                                                                  proto.predecessor)), None)  # fmt: skip


def python_tree(protos: list[Protocol], package: str, only: str | None) -> dict[str, str]:
    files: dict[str, str] = {}
    protocols: dict[str, list[Protocol]] = {}
    for proto in protos:
        files.update(render_protocol(proto, package, predecessor_of(proto, protos)))
        protocols.setdefault(proto.protocol, []).append(proto)
    if only is not None:
        return files  # the package __init__ files list every protocol: left as they are
    for name, versions in sorted(protocols.items()):
        members = [(p.version, f"{p.title} (from {p.source})") for p in versions]
        files[f"{name}/__init__.py"] = render_package_init(f"Generated codecs of {name}.", members)
    members = [
        (name, ", ".join(p.version for p in versions))
        for name, versions in sorted(protocols.items())
    ]
    files["__init__.py"] = render_package_init("Generated protocol codecs (see idl/).", members)
    return files


def generated_files(out: Path, targets: tuple[str, ...] = ("python",)) -> list[Path]:
    """What the generator owns under ``out``: Python modules and the Markdown docs; the
    npm package's sources and manifests (not its build output, ``dist/``)."""
    owned: list[Path] = []
    ts = out / TS_DIR
    if "python" in targets:
        owned += [p for p in [*out.rglob("*.py"), *out.rglob("*.md")] if ts not in p.parents]
    if "typescript" in targets and ts.is_dir():
        owned += [*(ts / "src").rglob("*.ts")]
        owned += [ts / name for name in ("package.json", "tsconfig.json", "README.md")
                  if (ts / name).exists()]  # fmt: skip
    if "wireshark" in targets:
        owned += [*(out / WIRESHARK_DIR).glob("*.lua")]
    if "rust" in targets:
        owned += rust_owned(out / RUST_DIR)
    return sorted(owned)


def write_tree(
    files: dict[str, str],
    out: Path,
    only: str | None = None,
    targets: tuple[str, ...] = ("python",),
) -> None:
    for rel, text in files.items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    # Remove generated modules whose IDL is gone, so the tree mirrors idl/ exactly.
    if only is not None:
        owned = [
            p
            for p in generated_files(out, targets)
            if f"/{only}/" in f"/{p.relative_to(out).as_posix()}"
        ]
    else:
        owned = generated_files(out, targets)
    for path in owned:
        rel = path.relative_to(out).as_posix()
        if rel not in files and rel != f"{only}/__init__.py":
            path.unlink()


def check_tree(
    files: dict[str, str], out: Path, targets: tuple[str, ...] = ("python",)
) -> list[str]:
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
    for path in generated_files(out, targets):
        if path.relative_to(out).as_posix() not in files:
            problems.append(f"not generated from any IDL: {path}")
    return problems


COMMANDS: Final = ("generate", "check", "validate", "diff")


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``generate``, ``check``, ``validate`` and ``diff`` to a parser's sub-commands
    (this module's own parser, and the ``wirestream`` command's)."""
    gen = sub.add_parser(
        "generate", help="IDL files -> typed code (idl/**/*.yaml -> generated/**)",
        epilog="examples:\n"
        "  wirestream generate --target all                 # what make generate runs\n"
        "  wirestream generate --only rsocket               # one protocol, nothing else\n"
        "  wirestream generate --idl my-idl --out my_gen --package my_gen --target python",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    gen.add_argument("--only", default=None, metavar="PROTOCOL",
                     help="regenerate one protocol (idl/PROTOCOL/*.yaml) and touch nothing else")  # fmt: skip
    chk = sub.add_parser(
        "check", help="fail if --out is not what the IDL generates",
        epilog="examples:\n"
        "  wirestream check --target all                    # exit 1 and a diff when stale",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    for p in (gen, chk):
        p.add_argument("--idl", type=Path, default=Path("idl"))
        p.add_argument("--out", type=Path, default=Path("generated"))
        p.add_argument(
            "--package", default=None, help="import name of --out (default: its folder name)"
        )
        p.add_argument("--target", choices=[*TARGETS, *EXTRA_TARGETS, "all"], default="python",
                       help="the language(s) to write (default: python; typescript goes to "
                            "--out/typescript)")  # fmt: skip
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
        package = args.package or args.out.resolve().name
        only = getattr(args, "only", None)
        targets = TARGETS if args.target == "all" else (args.target,)
        files = generate_tree(args.idl, package, only, targets)
        if command == "generate":
            write_tree(files, args.out, only, targets)
            print(f"generated {len(files)} files into {args.out}")
            return 0
        problems = check_tree(files, args.out, targets)
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
