"""The seeds' normative statements and the spec-rules rows that quote them.

Every sentence of a seed with an RFC 2119 keyword (MUST, MUST NOT, SHOULD, SHOULD NOT, MAY,
REQUIRED, SHALL, RECOMMENDED, OPTIONAL; in capitals, or "must"/"should"/"shall" in lower
case, which seed 003 also uses for rules: "must NOT send", "should not accept a SETUP")
is a statement that needs a row in its table (tests/spec_rules/<table>.md) quoting the
seed's own words, with a test or a stated reason.

The seeds are not in the repository (/work/shared/seeds/ on the project's machines), so
the statements are extracted once into ``seed_statements.json`` beside this module:

    python -m tests.spec_rules.audit /work/shared/seeds --write   # extract (seeds changed)
    python -m tests.spec_rules.audit                              # list statements without a row

and tests/project/test_spec_tables.py checks the committed list against the tables.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
STATEMENTS = HERE / "seed_statements.json"

# seed file prefix -> the table that holds its rules
TABLE_OF_SEED = {
    "000": "rsio",
    "001": "rsio",
    "002": "bpmux",
    "003": "rsocket",
    "004": "rabbitmq_stream",
}

KEYWORD = re.compile(
    r"\b(?:MUST|SHOULD|MAY|REQUIRED|SHALL|RECOMMENDED|OPTIONAL)\b|\b(?:must|should|shall)\b"
)
# a sentence ends at . ! ? before a capital, or at an inline bullet (" - Setup Data:"); "e.g." and "i.e."
# do not end one
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=[A-Z(`\"])|\s+-\s+(?=[A-Z])")
_QUOTE = re.compile(r"[\"“]([^\"”]+)[\"”]|'([^']{12,})'")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s*")


@dataclass(frozen=True)
class Statement:
    seed: str  # the seed file's 3-digit prefix
    line: int
    text: str

    @property
    def table(self) -> str:
        return TABLE_OF_SEED[self.seed]


def normalize(text: str) -> str:
    """Whitespace collapsed, markdown code marks and quote styles dropped, so a row that
    quotes a sentence matches it."""
    text = text.replace("`", "").replace("’", "'").replace("\\|", "|")
    text = re.sub(r"\s+", " ", text)
    return text.strip().rstrip(".").strip()


def extract(seed_dir: Path) -> list[Statement]:
    """Every normative sentence of every seed, with its line."""
    found = []
    for path in sorted(seed_dir.glob("*.txt")):
        seed = path.name[:3]
        if seed not in TABLE_OF_SEED:
            continue
        # (line, sentence, the sentence before it in its cell)
        candidates: list[tuple[int, str, str]] = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for cell in re.split(r"\s*\|\s*", line):  # table rows: one statement per cell
                cell = cell.strip().lstrip("-*0123456789. ").strip()
                previous = ""
                for sentence in _SENTENCE_END.split(cell):
                    if KEYWORD.search(sentence):
                        candidates.append((number, normalize(sentence), previous))
                    previous = normalize(sentence)
        # A sentence said in several places ("The string MUST NOT be null terminated." of
        # SETUP and of ERROR; "Stream ID MUST be 0." of each error code) is one rule per
        # place: it is named with the sentence before it, so each place needs its own row.
        seen: dict[str, int] = {}
        for _, text, _ in candidates:
            seen[text] = seen.get(text, 0) + 1
        for number, text, previous in candidates:
            if seen[text] > 1 and previous:
                text = f"{previous}. {text}"
            found.append(Statement(seed, number, text))
    return found


def load() -> list[Statement]:
    return [Statement(**entry) for entry in json.loads(STATEMENTS.read_text(encoding="utf-8"))]


def quotes(table: str) -> list[str]:
    """The quoted passages of a table's rows (the Passage column, and any other)."""
    text = (HERE / f"{table}.md").read_text(encoding="utf-8")
    found = []
    for row in text.splitlines():
        if not row.startswith("|"):
            continue
        for match in _QUOTE.finditer(row.replace("\\|", "|")):
            found.append(normalize(match.group(1) or match.group(2)))
    return found


def quoted_by(statement: Statement, passages: list[str]) -> bool:
    """A passage quotes the statement when the statement is in it, or when every piece of
    the passage (split at ellipses) is in the statement in order and one piece holds the
    statement's keyword."""
    text = statement.text
    for passage in passages:
        if text in passage:
            return True
        pieces = [p for p in _ELLIPSIS.split(passage) if p]
        at = 0
        for piece in pieces:
            at = text.find(piece, at)
            if at < 0:
                break
            at += len(piece)
        else:
            if pieces and any(KEYWORD.search(p) for p in pieces) and len("".join(pieces)) >= 12:
                return True
    return False


def missing(statements: list[Statement]) -> list[Statement]:
    cache: dict[str, list[str]] = {}
    result = []
    for statement in statements:
        if statement.table not in cache:
            cache[statement.table] = quotes(statement.table)
        if not quoted_by(statement, cache[statement.table]):
            result.append(statement)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seeds", nargs="?", type=Path, help="the seed folder (extract from it)")
    parser.add_argument("--write", action="store_true", help=f"write {STATEMENTS.name}")
    args = parser.parse_args(argv)
    statements = extract(args.seeds) if args.seeds else load()
    if args.write:
        STATEMENTS.write_text(
            json.dumps([s.__dict__ for s in statements], indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    per_seed: dict[str, int] = {}
    for statement in statements:
        per_seed[statement.seed] = per_seed.get(statement.seed, 0) + 1
    unquoted = missing(statements)
    for seed, count in sorted(per_seed.items()):
        without = sum(1 for s in unquoted if s.seed == seed)
        print(
            f"seed {seed} ({TABLE_OF_SEED[seed]}.md): {count} statements, {without} without a row"
        )
    for statement in unquoted:
        print(f"  {statement.seed} L{statement.line}: {statement.text}")
    return 1 if unquoted else 0


if __name__ == "__main__":
    sys.exit(main())
