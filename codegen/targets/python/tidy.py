"""What black leaves to the generator: unused imports, long strings and long docstrings.

The templates import every name a module of their kind may use (the codec's error
classes, the machines' runtime names, the codec names a strategy may draw); a module
keeps the ones its code reads (``drop_unused_imports``).  Black splits code, but not a
string literal nor a docstring's prose, so a frame's long spec quotation or error message
would run past the line limit; ``fit_long_lines`` splits such a string into implicitly
concatenated pieces and wraps such a docstring line at spaces.  Both work on the parsed
module (``ast``), so they see code exactly as Python does, and both are deterministic.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable

__all__ = ["LINE_LENGTH", "drop_unused_imports", "fit_long_lines"]

LINE_LENGTH = 100  # keep in step with [tool.black] in pyproject.toml


# --- imports -----------------------------------------------------------------------


def _read_names(tree: ast.Module) -> set[str]:
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    for node in tree.body:  # names listed in __all__ are re-exports: used
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            used.update(ast.literal_eval(node.value))
    return used


def _bound(alias: ast.alias, plain_import: bool) -> str:
    name = alias.asname or alias.name
    return name.partition(".")[0] if plain_import else name


def _spelled(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def drop_unused_imports(source: str) -> str:
    """``source`` without the module-level imported names its code never reads."""
    tree = ast.parse(source)
    used = _read_names(tree)
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        plain = isinstance(node, ast.Import)
        kept = [alias for alias in node.names if _bound(alias, plain) in used]
        if len(kept) == len(node.names):
            continue
        assert node.end_lineno is not None
        replacement: list[str] = []
        if kept:
            names = ", ".join(_spelled(alias) for alias in kept)
            if isinstance(node, ast.Import):
                replacement = [f"import {names}\n"]
            else:
                module = "." * node.level + (node.module or "")
                replacement = [f"from {module} import {names}\n"]
        lines[node.lineno - 1 : node.end_lineno] = replacement
    return "".join(lines)


# --- long lines ----------------------------------------------------------------------

_STRING = re.compile(r"(?P<prefix>[A-Za-z]*)(?P<quote>\"|')(?P<body>.*)(?P=quote)", re.S)
_FIELD = re.compile(r"[{}]")
_BULLET = re.compile(r"(?:[-*] |[A-Za-z_][A-Za-z0-9_.]*: )")


def _docstring_nodes(tree: ast.Module) -> list[ast.Constant]:
    """String statements: docstrings, and the attribute docstrings after assignments."""
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]


def _wrap(text: str, width: int, indent: str, hang: str) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=hang,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _wrap_docstring(lines: list[str], node: ast.Constant, width: int) -> bool:
    """Wrap each over-long line of the docstring ``node`` at spaces (in place); False if
    none could be.

    A continuation line keeps the line's indentation; a list item (``- ``) or an entry
    (``name: text``, as in an Attributes section) hangs under its text."""
    assert node.end_lineno is not None
    start = node.lineno - 1
    changed = False
    for index in range(node.end_lineno - 1, start - 1, -1):
        line = lines[index]
        if len(line) <= width:
            continue
        text = line.lstrip(" ")
        indent = " " * (len(line) - len(text))
        if index == start:
            hang = indent
        else:
            match = _BULLET.match(text)
            hang = indent + (" " * (2 if match.group(0)[0] in "-*" else 4) if match else "")
        wrapped = _wrap(text, width, indent, hang)
        if hang != indent and any(len(part) > width for part in wrapped):
            wrapped = _wrap(text, width, indent, indent)  # a long word fits only unhung
        if wrapped != [line]:
            lines[index : index + 1] = wrapped
            changed = True
    return changed


def _pieces(body: str, room: int, formatted: bool) -> list[str]:
    """``body`` (a string literal's source between its quotes) cut after spaces into
    pieces of at most ``room`` characters where possible; never inside an escape or, in
    an f-string, inside a replacement field."""
    cuts: list[int] = []  # positions after which a piece may end
    depth = 0
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\":
            index += 2
            continue
        if formatted and char in "{}":
            if depth == 0 and body[index : index + 2] in ("{{", "}}"):
                index += 2
                continue
            depth += 1 if char == "{" else -1
        elif char == " " and depth == 0:
            cuts.append(index + 1)
        index += 1
    pieces: list[str] = []
    start = 0
    last = 0
    for cut in cuts:
        if cut - start > room and last > start:
            pieces.append(body[start:last])
            start = last
        last = cut
    if len(body) - start > room and last > start:
        pieces.append(body[start:last])
        start = last
    pieces.append(body[start:])
    return [piece for piece in pieces if piece]


def _literal(prefix: str, quote: str, body: str) -> str:
    """A piece of a split literal; a piece of an f-string without a replacement field is
    a plain string (an f-string without one is a linter's complaint)."""
    if "f" in prefix.lower() and not _FIELD.search(body.replace("{{", "").replace("}}", "")):
        prefix = prefix.replace("f", "").replace("F", "")
        body = body.replace("{{", "{").replace("}}", "}")
    return f"{prefix}{quote}{body}{quote}"


def _split_string(lines: list[str], node: ast.expr, bracketed: bool, width: int) -> bool:
    """Replace the one-line string literal ``node`` by implicitly concatenated pieces
    that fit ``width`` once black lays them out; False if it cannot be split."""
    assert node.end_col_offset is not None
    row = node.lineno - 1
    raw = lines[row].encode("utf-8")
    before = raw[: node.col_offset].decode("utf-8")
    segment = raw[node.col_offset : node.end_col_offset].decode("utf-8")
    after = raw[node.end_col_offset :].decode("utf-8")
    match = _STRING.fullmatch(segment)
    if match is None or match["quote"] in match["body"].replace("\\" + match["quote"], ""):
        return False  # not a single plain literal (already concatenated, or triple-quoted)
    prefix, quote, body = match["prefix"], match["quote"], match["body"]
    alone = not before.strip()
    # Black puts the pieces where the literal starts when it already has a line of its
    # own inside brackets; otherwise in new parentheses, one level in.
    column = len(before) if alone and bracketed else len(before) - len(before.lstrip()) + 4
    room = width - column - len(prefix) - 2 - 2  # quotes, then a closing bracket and a comma
    pieces = _pieces(body, room, "f" in prefix.lower())
    if len(pieces) < 2:
        return False
    joined = " ".join(_literal(prefix, quote, piece) for piece in pieces)
    if not bracketed:
        joined = f"({joined})"
    lines[row] = before + joined + after
    return True


def _strings(tree: ast.Module) -> list[tuple[ast.expr, bool]]:
    """Every string literal outside docstrings, and whether it sits directly in brackets
    (a call's argument, an element of a tuple, list, set or dict)."""
    docstrings = {id(node) for node in _docstring_nodes(tree)}
    found: list[tuple[ast.expr, bool]] = []

    def visit(node: ast.AST, bracketed: bool) -> None:
        if isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str)
        ):
            if id(node) not in docstrings:
                found.append((node, bracketed))
            return  # an f-string's parts are not literals of their own
        for child in ast.iter_child_nodes(node):
            inside = isinstance(node, (ast.Call, ast.Tuple, ast.List, ast.Set, ast.Dict))
            if isinstance(node, ast.Call) and child is node.func:
                inside = False
            visit(child, inside)

    visit(tree, False)
    return found


def fit_long_lines(source: str, width: int, reformat: Callable[[str], str]) -> str:
    """``source`` with its long string literals split and its long docstring lines wrapped,
    re-formatted by ``reformat`` (black) until nothing more can be fitted."""
    for _ in range(8):  # each round fixes every long line it can; nested cases need another
        lines = source.splitlines()
        if all(len(line) <= width for line in lines):
            return source
        tree = ast.parse(source)
        # (line, column, docstring or literal, in brackets), edited bottom-up so that the
        # lines a wrapped docstring adds do not move the places still to be edited
        edits: list[tuple[int, int, ast.expr, bool | None]] = []
        for doc in _docstring_nodes(tree):
            assert doc.end_lineno is not None
            if any(len(line) > width for line in lines[doc.lineno - 1 : doc.end_lineno]):
                edits.append((doc.lineno, doc.col_offset, doc, None))
        for node, bracketed in _strings(tree):
            if node.lineno == node.end_lineno and len(lines[node.lineno - 1]) > width:
                edits.append((node.lineno, node.col_offset, node, bracketed))
        changed = False
        for _row, _col, target, in_brackets in sorted(edits, key=lambda e: e[:2], reverse=True):
            if in_brackets is None:
                assert isinstance(target, ast.Constant)
                changed = _wrap_docstring(lines, target, width) or changed
            else:
                changed = _split_string(lines, target, in_brackets, width) or changed
        if not changed:
            return source
        source = reformat("\n".join(lines) + "\n")
    return source
