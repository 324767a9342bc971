"""Generated TypeScript reads as a reviewer would accept it (issue 27, item 6).

Every ``.ts`` file under ``generated/typescript/src`` and the TypeScript the generator
writes for every valid IDL of the tests' trees (``tests/idl_*``, as in
tests/codegen/test_all_targets.py, plus the two IDLs tests/typescript/test_constructs_typescript.py spells
inline) is held to:

- no line over 100 columns (the generator fits them, codegen/targets/typescript/fit.py: no
  Node formatter runs at ``make generate``); the one exception is a comment line that is a
  single URL, which no formatter can break;
- shift counts in decimal (``x << 10``; masks may stay hex);
- error messages naming the TypeScript properties (``Setup.streamId``), never the IDL's
  snake_case names;
- union aliases naming each member once.

The checks are this file's own scanning (not the generator's lexer), and each is shown to
catch what it guards on a planted sample.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.typescript.test_constructs_typescript import CHOOSING, SPELLING
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.frontend.errors import IdlError
from wirestream.codegen.targets.typescript.codec import render_typescript

ROOT = Path(__file__).resolve().parent.parent.parent
WIDTH = 100
GENERATED = ROOT / "generated" / "typescript" / "src"
IDL_FILES = sorted(
    (p for p in ROOT.glob("tests/idl_*/**/*.yaml") if p.name != "expect.yaml"),
    key=lambda p: p.as_posix(),
)

# --- the checks: each returns its findings as "line N: ..." texts ---

_URL_COMMENT = re.compile(r"\s*(?:\*|//)\s*https?://\S+")
_HEX_SHIFT = re.compile(r"(?:<<|>>>?)=?\s*-?0[xX][0-9a-fA-F]+")
# The runtime's error classes a generated codec or machine throws. Not a machine table's
# `new Illegal(message, spec)`: that message is the IDL's own prose (its `error:`), which
# Python and TypeScript report verbatim (tests/typescript/machines.test.ts holds them equal).
_ERROR = re.compile(
    r"\bnew\s+(?:\w*Error|Truncated|Invalid\w*|RuleViolation|Malformed\w*|Illegal\w+|"
    r"Ambiguous\w*|Unknown\w*)\s*\("
)
_LITERAL = re.compile(r"\s*(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)")
_CONCAT = re.compile(r"\s*\+")
_SUBSTITUTION = re.compile(r"\$\{[^}]*\}")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_ALIAS = re.compile(r"^export type (\w+)\s*=(.*?);", re.MULTILINE | re.DOTALL)


def long_lines(text: str) -> list[str]:
    return [
        f"line {number}: {len(line)} columns: {line.strip()[:80]}"
        for number, line in enumerate(text.splitlines(), 1)
        if len(line) > WIDTH and not _URL_COMMENT.fullmatch(line)
    ]


def hex_shifts(text: str) -> list[str]:
    return [
        f"line {number}: {found.group()!r}"
        for number, line in enumerate(text.splitlines(), 1)
        for found in _HEX_SHIFT.finditer(line)
    ]


def error_messages(text: str) -> Iterator[tuple[int, str]]:
    """(line, message) for each error constructed: its first argument's string literals,
    joined when the message is a concatenation (a long one is split over lines)."""
    for found in _ERROR.finditer(text):
        pos = found.end()
        parts = []
        while literal := _LITERAL.match(text, pos):
            parts.append(literal.group(1)[1:-1])
            pos = literal.end()
            concat = _CONCAT.match(text, pos)
            if concat is None:
                break
            pos = concat.end()
        if parts:
            yield text.count("\n", 0, found.start()) + 1, "".join(parts)


def snake_messages(text: str) -> list[str]:
    return [
        f"line {number}: {name!r} in {message!r}"
        for number, message in error_messages(text)
        for name in _SNAKE.findall(_SUBSTITUTION.sub("", message))
    ]


def repeated_members(text: str) -> list[str]:
    out = []
    for found in _ALIAS.finditer(text):
        members = [m.strip() for m in found.group(2).split("|") if m.strip()]
        twice = sorted(name for name, count in Counter(members).items() if count > 1)
        if twice:
            line = text.count("\n", 0, found.start()) + 1
            out.append(f"line {line}: type {found.group(1)} repeats {', '.join(twice)}")
    return out


CHECKS = {
    "long_lines": long_lines,
    "hex_shifts": hex_shifts,
    "snake_messages": snake_messages,
    "repeated_members": repeated_members,
}

# --- the TypeScript held to them ---


def generated_sources() -> dict[str, str]:
    return {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(GENERATED.rglob("*.ts"))
    }


def shared_member_idl() -> str:
    """RabbitMQ Stream v1 with two more tags of OffsetSpecification naming a class it has
    (a union may map many tags onto one class: its alias names the class once)."""
    text = (ROOT / "idl" / "rabbitmq_stream" / "v1.yaml").read_text(encoding="utf-8")
    last = "      5: OffsetSpecTimestamp\n\n  ConsumerUpdateOffsetSpecification:"
    assert last in text
    more = "      6: OffsetSpecFirst\n      7: OffsetSpecFirst\n"
    return text.replace(last, last.replace("\n\n", "\n" + more + "\n"))


def rendered_sources(tmp: Path) -> dict[str, str]:
    inline = []
    for name, text in (
        ("spelling", SPELLING),
        ("choosing", CHOOSING),
        ("shared_member", shared_member_idl()),
    ):
        path = tmp / name / "v1.yaml"
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
        inline.append(path)
    out = {}
    for path in [*IDL_FILES, *inline]:
        display = path.relative_to(tmp if path.is_relative_to(tmp) else ROOT).as_posix()
        try:
            proto = load_protocol(path, display)
        except IdlError:
            continue  # refused at validation (tests/codegen/test_all_targets.py checks how)
        for rel, text in render_typescript([proto], standalone=True).items():
            # (a standalone package carries a copy of the hand-written runtime, runtime/src)
            if rel.endswith(".ts") and not rel.startswith("runtime/"):
                out[f"{display} -> {rel}"] = text
    return out


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    files = generated_sources()
    assert len(files) >= 18, sorted(files)  # 9 protocol versions, index.ts + machines.ts
    rendered = rendered_sources(tmp_path_factory.mktemp("ts_style_idl"))
    assert any(name.startswith("tests/idl_constructs/") for name in rendered)
    assert any(name.startswith("spelling/") for name in rendered)
    assert any(name.startswith("choosing/") for name in rendered)
    assert any(name.startswith("shared_member/") for name in rendered)
    return {**files, **rendered}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_generated_typescript(check: str, sources: dict[str, str]) -> None:
    findings = [
        f"{name}: {finding}" for name, text in sources.items() for finding in CHECKS[check](text)
    ]
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings[:20])


def test_the_sources_hold_what_the_checks_read(sources: dict[str, str]) -> None:
    """The checks see what they are about: error messages (some split over lines), shifts,
    union aliases (some repeating a tag's class in the IDL), long URL comments."""
    texts = "\n".join(sources.values())
    messages = [message for text in sources.values() for _, message in error_messages(text)]
    assert len(messages) > 1000
    assert any(re.search(r"\b[A-Z]\w*\.[a-z]+[A-Z]\w*:", m) for m in messages)  # a.camelCase
    assert re.search(r"new \w+\(\s*\n\s*[`\"].*[`\"] \+\n", texts)  # a split message
    assert re.search(r"<< (?:[1-9]\d+)\b", texts)  # a decimal shift count of 10 or more
    assert len(_ALIAS.findall(texts)) > 20
    shared = next(t for n, t in sources.items() if n.startswith("shared_member/"))
    assert re.search(r"^      6: OffsetSpecFirst$", shared_member_idl(), re.MULTILINE)
    assert "export type OffsetSpecification =" in shared


# --- each check catches what it guards ---


def test_the_checks_catch_what_they_guard() -> None:
    assert long_lines("x" * 101) and not long_lines("x" * 100)
    assert not long_lines("   * https://example.org/" + "a" * 100)
    assert long_lines("   * see https://example.org/" + "a" * 100)
    assert hex_shifts("buf[at] = (1 << 0xa) | flags;") and hex_shifts("x >>> 0x18")
    assert not hex_shifts("buf[at] = (1 << 10) & 0xff;")
    bad = "throw new EncodeError(`Setup.stream_id: ${b0_0} is outside 0..0x7fffffff`);"
    assert snake_messages(bad)
    assert snake_messages('throw new Truncated(\n  "Setup.data_" +\n    "mime_type: ends",\n);')
    assert not snake_messages("throw new InvalidValue(`Setup.streamId: ${v_stream_id} bad`);")
    assert repeated_members("export type U =\n  | A\n  | B\n  | A;\n")
    assert not repeated_members("export type U = A | B;\n")
