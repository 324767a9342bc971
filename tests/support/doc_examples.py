"""The code examples of the documentation, read out of the Markdown (README.md,
docs/**/*.md, idl/README.md) so that tests/project/test_docs_examples.py can run every one.

A fenced block is an example when it has a language (python, sh, yaml, ts; csv, text or
json titled with a file name are files the blocks after them read). Its fence may
carry a `title="..."` (shown as the block's caption on the site, ignored by GitHub) that
tells the test what the block runs against; the titles the test knows are those of
``PEERS`` below (joined by ", "), `idl/...`, `in idl/...`, `added to ...` and a file
name; any other title is an error, so a block cannot opt out by accident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<lang>[\w+-]*)(?P<info>[^`\n]*)\n"
    r"(?P<body>.*?)^(?P=indent)(?P=ticks)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
TITLE = re.compile(r'title="(?P<title>[^"]*)"')

# What a block's title asks the test to provide (tests/project/test_docs_examples.py).
RSOCKET_SERVER = "against wirestream rsocket serve"
BROKER = "against a RabbitMQ stream broker (make broker)"
SUPER_STREAM = "against a RabbitMQ broker with the super stream invoices"
SPARK = "on a SparkSession"
TICKER = "against a msgpack ticker on 127.0.0.1:7878"
GIT_CLONE = "in a shallow clone of this checkout (origin: main)"
PCAP = "with prod.pcap of a broker session (tcpdump needs capture rights)"
PEERS = (RSOCKET_SERVER, BROKER, SUPER_STREAM, SPARK, TICKER, GIT_CLONE, PCAP)


@dataclass(frozen=True)
class Example:
    path: Path  # the Markdown file
    line: int  # of the opening fence
    lang: str
    title: str
    code: str  # dedented to the fence's indent

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line}"


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "idl" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(path: Path) -> list[Example]:
    text = path.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        indent = len(m["indent"])
        body = "".join(line[indent:] for line in m["body"].splitlines(keepends=True))
        title = TITLE.search(m["info"])
        found.append(
            Example(
                path=path,
                line=text.count("\n", 0, m.start()) + 1,
                lang=m["lang"],
                title=title["title"] if title else "",
                code=body,
            )
        )
    return found


def all_examples() -> list[Example]:
    return [example for path in markdown_files() for example in examples(path)]


def block_after(path: Path, heading: str, lang: str, nth: int = 0) -> str:
    """The code of the ``nth`` ``lang`` block after the line ``heading`` of ``path`` (how a
    test that runs a documented workflow reads its steps out of the documentation)."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    blocks = [e for e in examples(path) if e.lang == lang and e.line > text.count("\n", 0, start)]
    return blocks[nth].code
