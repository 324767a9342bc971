"""MkDocs hook: the pages that live elsewhere in the repository enter the site at build
time, read from where they are, so they can never go stale as copies would.

- ``generated/<protocol>/<version>/PROTOCOL.md`` (and the Wireshark dissectors they link
  to) keep their repository paths, so their relative links stay right;
- ``idl.md`` is ``idl/README.md`` (the IDL reference stays next to the IDL files; the
  ``docs/idl.md`` stub only points GitHub readers there);
- ``typescript-api.md`` gains the export lists of ``@wirestream/runtime`` and of one
  generated protocol module, read from their sources.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
TS_RUNTIME = ROOT / "runtime" / "typescript" / "src"
TS_GENERATED = GENERATED / "typescript" / "src"
# The protocol module whose generated TypeScript API the page lists (as the Python
# reference shows one protocol's generated module).
TS_EXAMPLE = "rsocket/v1_0"

EXPORT = re.compile(
    r"(?:/\*\*(?P<doc>(?:(?!\*/).)*)\*/\s*)?"
    r"^export\s+(?:declare\s+)?(?:abstract\s+)?"
    r"(?P<kind>class|interface|type|enum|const|function|async function)\s+(?P<name>[A-Za-z_$][\w$]*)",
    re.MULTILINE | re.DOTALL,
)
STAR = re.compile(r'^export \* from "\./(?P<module>[\w.]+)\.js";', re.MULTILINE)
LISTED = re.compile(r'^export \{(?P<names>[^}]*)\} from "\./(?P<module>[\w.]+)\.js";', re.MULTILINE)


def protocol_pages() -> list[Path]:
    """Every generated PROTOCOL.md, in a stable order."""
    return sorted(GENERATED.glob("*/*/PROTOCOL.md"))


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in protocol_pages() + sorted((GENERATED / "wireshark").glob("*.lua")):
        uri = path.relative_to(ROOT).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """The nav's "Protocols" section lists every PROTOCOL.md there is."""
    for section in config.nav or []:
        if isinstance(section, dict) and "Protocols" in section:
            pages = [
                {f"{p.parent.parent.name} {p.parent.name}": p.relative_to(ROOT).as_posix()}
                for p in protocol_pages()
            ]
            section["Protocols"] = pages
    return config


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: Any) -> str:
    if page.file.src_uri == "idl.md":
        return (ROOT / "idl" / "README.md").read_text(encoding="utf-8")
    if page.file.src_uri == "typescript-api.md":
        return markdown + typescript_exports()
    return markdown


def summary(doc: str | None) -> str:
    """The first sentence of a JSDoc comment, on one line, safe inside a table cell."""
    if not doc:
        return ""
    text = " ".join(line.strip().lstrip("*").strip() for line in doc.splitlines()).strip()
    first = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
    return first.replace("|", "\\|")


def declarations(source: Path) -> dict[str, tuple[str, str]]:
    """name -> (kind, summary) of what a TypeScript module declares with `export`."""
    text = source.read_text(encoding="utf-8")
    return {m["name"]: (m["kind"], summary(m["doc"])) for m in EXPORT.finditer(text) if m["name"]}


def runtime_exports() -> dict[str, dict[str, tuple[str, str]]]:
    """What `@wirestream/runtime`'s index.ts exports, per module it re-exports from."""
    index = (TS_RUNTIME / "index.ts").read_text(encoding="utf-8")
    modules: dict[str, dict[str, tuple[str, str]]] = {}
    for m in STAR.finditer(index):
        modules[m["module"]] = declarations(TS_RUNTIME / f"{m['module']}.ts")
    for m in LISTED.finditer(index):
        declared = declarations(TS_RUNTIME / f"{m['module']}.ts")
        names = [n.strip() for n in m["names"].split(",") if n.strip()]
        modules[m["module"]] = {n: declared.get(n, ("", "")) for n in names}
    return modules


def export_table(title: str, where: str, names: dict[str, tuple[str, str]]) -> str:
    rows = "\n".join(f"| `{name}` | {kind} | {doc} |" for name, (kind, doc) in names.items())
    return (
        f"\n### {title}\n\nFrom `{where}`.\n\n| export | kind | summary |\n|---|---|---|\n"
        f"{rows}\n"
    )


def typescript_exports() -> str:
    parts = ["\n## Exports\n\nListed at build time from the TypeScript sources.\n"]
    for module, names in runtime_exports().items():
        where = f"runtime/typescript/src/{module}.ts"
        parts.append(export_table(f"`@wirestream/runtime`: {module}", where, names))
    for suffix, file in (("", "index.ts"), ("/machines", "machines.ts")):
        source = TS_GENERATED / TS_EXAMPLE / file
        title = f"`@wirestream/generated/{TS_EXAMPLE}{suffix}`"
        where = source.relative_to(ROOT).as_posix()
        parts.append(export_table(title, where, declarations(source)))
    return "".join(parts)
