"""The TypeScript line fitter (codegen/targets/typescript/fit.py) on the shapes it breaks.

What it does to the generated code is compiled (``npx tsc -b``) and run by the node suites;
these pin the layouts, and the places where a formatter's choice would change the code:
no trailing comma after a rest parameter, parentheses kept around a comma expression, a
split string that concatenates back to the same text.
"""

from __future__ import annotations

import re
from pathlib import Path

from wirestream.codegen.targets.typescript.fit import WIDTH, fit_lines

ROOT = Path(__file__).resolve().parent.parent.parent


def fitted(line: str) -> list[str]:
    lines = fit_lines(line).split("\n")
    assert all(len(x) <= WIDTH for x in lines), lines
    return lines


def test_short_lines_stay() -> None:
    line = "    if (n > end - pos) throw new Truncated(`X.y: ${n} bytes`, pos + n);"
    assert fit_lines(line) == line


def test_a_one_line_if_becomes_a_block() -> None:
    cond = "!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 0x7fffffff"
    line = (
        f"      if ({cond}) throw new EncodeError(`Setup.streamId: "
        f"${{b0_0}} is outside 0..0x7fffffff`);"
    )
    assert fitted(line) == [
        f"      if ({cond}) {{",
        "        throw new EncodeError(`Setup.streamId: ${b0_0} is outside 0..0x7fffffff`);",
        "      }",
    ]


def test_arguments_one_a_line_with_a_trailing_comma() -> None:
    line = (
        "function _decodeSetup(r: Reader, end: number, ctx: Context "
        "| undefined, v_streamId: number, flags: number): Setup {"
    )
    assert fitted(line) == [
        "function _decodeSetup(",
        "  r: Reader,",
        "  end: number,",
        "  ctx: Context | undefined,",
        "  v_streamId: number,",
        "  flags: number,",
        "): Setup {",
    ]


def test_no_trailing_comma_after_a_rest_parameter() -> None:
    line = (
        "  function handler(first: FrameOfSomeKindWithALongName, "
        "second: AnotherLongTypeName, ...rest: unknown[]): void {"
    )
    lines = fitted(line)
    assert lines[-2] == "    ...rest: unknown[]" and lines[-1] == "  ): void {"


def test_a_sole_object_argument_is_hugged() -> None:
    line = (
        "  return new Response({ streamId: v_streamId, ignore: "
        "(flags & 0x80) !== 0, follows: (flags & 0x20) !== 0, data: v_data });"
    )
    assert fitted(line) == [
        "  return new Response({",
        "    streamId: v_streamId,",
        "    ignore: (flags & 0x80) !== 0,",
        "    follows: (flags & 0x20) !== 0,",
        "    data: v_data,",
        "  });",
    ]


def test_an_assignment_breaks_after_its_operator() -> None:
    line = (
        "    let flags = (this.ignore ? 0x200 : 0) | (this.follows ? "
        "0x80 : 0) | (this.complete ? 0x40 : 0) | (this.next ? 0x20 : 0);"
    )
    assert fitted(line) == [
        "    let flags =",
        "      (this.ignore ? 0x200 : 0) |",
        "      (this.follows ? 0x80 : 0) |",
        "      (this.complete ? 0x40 : 0) |",
        "      (this.next ? 0x20 : 0);",
    ]


def test_parentheses_around_a_comma_expression_stay() -> None:
    line = (
        "  const somewhatLongVariableName = "
        "(firstSideEffectCall(argumentNumberOne), secondValueComputation(argumentTwo));"
    )
    assert "(" in "".join(fitted(line)).split("=", 1)[1].lstrip()[:1]


def test_a_split_string_concatenates_to_the_same_text() -> None:
    text = (
        "Connection Establishment: 'MUST wait for the server-side "
        "Responder to send a LEASE frame before it can send Requests.'"
    )
    lines = fitted(f'          "{text}",')
    assert len(lines) > 1
    pieces = [re.fullmatch(r'\s*"(.*)"(?: \+|,)', x) for x in lines]
    assert all(pieces), lines
    assert "".join(p.group(1) for p in pieces if p) == text
    assert all(p.group(1).endswith(" ") for p in pieces[:-1] if p)  # cut at spaces


def test_a_doc_comment_wraps_at_words() -> None:
    words = (
        "Bytes of the big-endian length prefix before each frame on "
        "a byte stream; 0: frames delimit themselves."
    )
    assert fitted(f"  /** {words} */") == [
        "  /**",
        "   * Bytes of the big-endian length prefix before each frame on a byte stream; 0: frames delimit",
        "   * themselves.",
        "   */",
    ]


def test_fitted_code_is_left_as_it_is() -> None:
    """Every committed generated file is a fixed point (the pass is idempotent)."""
    files = sorted((ROOT / "generated" / "typescript" / "src").rglob("*.ts"))
    assert len(files) >= 18
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert fit_lines(text) == text, path
