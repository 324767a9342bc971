"""Generated TypeScript within a line width, without Node (``make generate`` runs no formatter).

The templates emit one statement per line; what is still longer than :data:`WIDTH` is broken
here in prettier's shapes: a one-line ``if (c) statement;`` becomes a block; an assignment
breaks after its ``=``; a bracket group gets one item a line (a trailing comma where
TypeScript allows one; a sole object or array argument is hugged), but not an operand in the
middle of a binary chain; an expression breaks after each of its lowest-precedence operators
(a trailing ``| 0``/``>>> 0`` coercion stays with its operand); a string literal splits into a
concatenation at spaces only when nothing else fits; comment lines wrap at words. Each
candidate layout is fitted again, recursively: of those that fit, the one with the fewest
lines (the earlier on a tie); else the one overflowing least. The pass is deterministic and
idempotent, and changes only whitespace, commas after a last item, braces around a single
statement, parentheses around an assignment's whole right side and the splitting of string
literals: what the code does stays as it was.
"""

from __future__ import annotations

import re
from functools import lru_cache

WIDTH = 100

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<comment>//.*|/\*.*?\*/)
    |(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    |(?P<num>0[xXbBoO][0-9a-fA-F_]+n?|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?n?)
    |(?P<id>[A-Za-z_$][\w$]*)
    |(?P<op>>>>=|===|!==|>>>|\.\.\.|\*\*|<<=|>>=|=>|==|!=|<=|>=|&&|\|\||\?\?|\?\.|<<|>>|\+\+|--
        |[-+*/%&|^!~?:;,.<>=(){}\[\]@\#])""",
    re.VERBOSE,
)
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
# Words after which "(" opens a parenthesised expression, not an argument list.
_KEYWORDS = {"if", "while", "for", "switch", "catch", "return", "typeof", "throw", "await", "in",
             "of", "instanceof", "case", "else", "do", "void", "delete", "yield"}  # fmt: skip
# Binary operators by precedence, lowest first (a break goes after the lowest one present).
_TIERS = (("??",), ("||",), ("&&",), ("|",), ("^",), ("&",), ("===", "!==", "==", "!="),
          (">>>", ">>", "<<"), ("+", "-"))  # fmt: skip
_OPERAND_END = {"id", "num", "str", "tpl"}

Token = tuple[str, str]  # (kind, text)
Piece = tuple[int, str, str]  # (indent, text, context)


class _Unlexable(Exception):
    pass


def _template(text: str, start: int) -> int:
    """The end of the template literal opening at ``text[start]`` (a backtick)."""
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "`":
            return i + 1
        if text.startswith("${", i):
            i = _code_end(text, i + 2)
            continue
        i += 1
    raise _Unlexable(text)


def _code_end(text: str, i: int) -> int:
    """The index after the ``}`` closing a ``${`` substitution whose code starts at ``i``."""
    depth = 0
    while i < len(text):
        char = text[i]
        if char == "`":
            i = _template(text, i)
            continue
        if char in "\"'":
            found = _TOKEN.match(text, i)
            if found is None or found.lastgroup != "str":
                raise _Unlexable(text)
            i = found.end()
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return i + 1
            depth -= 1
        i += 1
    raise _Unlexable(text)


@lru_cache(maxsize=None)
def _lex(text: str) -> tuple[Token, ...]:
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        if text[i] == "`":
            end = _template(text, i)
            tokens.append(("tpl", text[i:end]))
            i = end
            continue
        found = _TOKEN.match(text, i)
        if found is None or found.lastgroup is None:
            raise _Unlexable(text)
        tokens.append((found.lastgroup, found.group()))
        i = found.end()
    return tuple(tokens)


def _join(tokens: tuple[Token, ...] | list[Token]) -> str:
    return "".join(text for _, text in tokens).strip()


def _pairs(tokens: tuple[Token, ...]) -> dict[int, int]:
    """Matched bracket pairs: opening index -> closing index (unmatched ones are left out)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for index, (kind, text) in enumerate(tokens):
        if kind != "op":
            continue
        if text in _OPEN:
            stack.append(index)
        elif text in _CLOSE and stack and _OPEN[tokens[stack[-1]][1]] == text:
            pairs[stack.pop()] = index
        elif text in _CLOSE:
            stack.clear()
    return pairs


def _top(tokens: tuple[Token, ...]) -> list[int]:
    """The indexes of the tokens outside every matched bracket pair."""
    pairs = _pairs(tokens)
    out = []
    index = 0
    while index < len(tokens):
        out.append(index)
        index = pairs[index] + 1 if index in pairs else index + 1
    return out


def _previous(tokens: tuple[Token, ...], index: int) -> Token | None:
    for kind, text in reversed(tokens[:index]):
        if kind != "ws":
            return kind, text
    return None


def _is_call(tokens: tuple[Token, ...], index: int) -> bool:
    """Whether the "(" at ``index`` opens an argument or parameter list."""
    before = _previous(tokens, index)
    if before is None:
        return False
    kind, text = before
    if kind == "id":
        return text not in _KEYWORDS
    return text in (")", "]", "!", ">")


def _split_top(tokens: tuple[Token, ...], separator: str) -> list[tuple[Token, ...]]:
    items: list[tuple[Token, ...]] = []
    start = 0
    for index in _top(tokens):
        if tokens[index] == ("op", separator):
            items.append(tokens[start : index + (separator == ";")])
            start = index + 1
    items.append(tokens[start:])
    return [item for item in items if _join(item)]


def _group(tokens: tuple[Token, ...], open_at: int, close_at: int, indent: int) -> list[Piece]:
    """One item a line for the bracket pair at ``open_at``..``close_at``."""
    bracket = tokens[open_at][1]
    inner = tokens[open_at + 1 : close_at]
    head = tokens[: open_at + 1]
    tail = tokens[close_at:]
    # A sole object or array argument is hugged: `f({` ... `})`.
    pairs = _pairs(inner)
    solid = [i for i, (kind, _) in enumerate(inner) if kind != "ws"]
    if (bracket == "(" and solid and inner[solid[0]][1] in "{["
            and pairs.get(solid[0]) == solid[-1] and solid[-1] > solid[0] + 1):  # fmt: skip
        first, last = solid[0], solid[-1]
        return _group(
            head + inner[: first + 1] + inner[first + 1 : last] + inner[last:] + tail,
            open_at + 1 + first,
            open_at + 1 + last,
            indent,
        )
    statements = _split_top(inner, ";") if bracket == "{" else []
    if len(statements) > 1:
        body = [(indent + 2, _join(item), "stmt") for item in statements]
        return [(indent, _join(head), "stmt"), *body, (indent, _join(tail), "stmt")]
    items = _split_top(inner, ",")
    if not items:
        return []
    listed = bracket != "(" or _is_call(tokens, open_at) or len(items) > 1
    texts = [_join(item) for item in items]
    if listed and not texts[-1].startswith("..."):
        texts[-1] += ","
    texts[:-1] = [text + "," for text in texts[:-1]]
    context = "item" if listed else "cond"
    body = [(indent + 2, text, context) for text in texts]
    return [(indent, _join(head), "stmt"), *body, (indent, _join(tail), "stmt")]


_BINARY = {op for tier in _TIERS for op in tier}


def _operand(tokens: tuple[Token, ...], open_at: int, close_at: int) -> bool:
    """Whether the bracket pair is an operand inside a binary chain (`a | (b) | c`): such a
    chain breaks at its operators, not inside an operand. The first of two operands
    (`(x) >>> 0`, `(a || b) !== c`) may break."""
    before = _previous(tokens, open_at)
    if before is not None and before[0] == "op" and before[1] in _BINARY | {"?"}:
        return True
    after = [i for i in _top(tokens) if i > close_at and tokens[i][0] == "op"]
    return len([i for i in after if tokens[i][1] in _BINARY]) > 1


def _binary(tokens: tuple[Token, ...], indent: int, context: str) -> list[Piece]:
    """A break after each of the lowest-precedence binary operators outside brackets."""
    top = _top(tokens)
    question = [i for i in top if tokens[i] == ("op", "?")]
    if question:  # a conditional: `a` / `? b` / `: c`
        colon = [i for i in top if tokens[i] == ("op", ":") and i > question[0]]
        if not colon:
            return []
        deeper = indent if context in ("cond", "rhs") else indent + 2
        return [
            (indent, _join(tokens[: question[0]]), "stmt"),
            (deeper, _join(tokens[question[0] : colon[0]]), "item"),
            (deeper, _join(tokens[colon[0] :]), "item"),
        ]
    for tier in _TIERS:
        cuts = []
        for index in top:
            kind, text = tokens[index]
            if kind == "op" and text in tier:
                before = _previous(tokens, index)
                if before is not None and (before[0] in _OPERAND_END or before[1] in ")]!"):
                    cuts.append(index)
        if cuts:
            lines = []
            start = 0
            for cut in cuts:
                lines.append(_join(tokens[start : cut + 1]))
                start = cut + 1
            lines.append(_join(tokens[start:]))
            if re.fullmatch(r"\d+n?[;,)]*", lines[-1]):  # a coercion (`>>> 0`, `| 0`)
                if len(lines) == 2:
                    return []  # stays with its operand
                lines[-2:] = [lines[-2] + " " + lines[-1]]
            deeper = indent if context in ("cond", "rhs") else indent + 2
            return [(indent, lines[0], "stmt"), *((deeper, line, "item") for line in lines[1:])]
    return []


def _assignment(tokens: tuple[Token, ...], indent: int) -> list[Piece]:
    """``lhs =`` / ``rhs`` (one level deeper), for the first ``=`` outside brackets."""
    for index in _top(tokens):
        if tokens[index] in (("op", "="), ("op", "|="), ("op", "+=")):
            return [(indent, _join(tokens[: index + 1]), "stmt"),
                    (indent + 2, _unparenthesised(tokens[index + 1 :]), "rhs")]  # fmt: skip
    return []


def _unparenthesised(tokens: tuple[Token, ...]) -> str:
    """``(e);`` as ``e;`` (the right side of an assignment needs no parentheses of its own
    unless it is a comma expression)."""
    solid = [i for i, (kind, _) in enumerate(tokens) if kind != "ws"]
    if (len(solid) >= 3 and tokens[solid[0]] == ("op", "(") and tokens[solid[-1]] == ("op", ";")
            and _pairs(tokens).get(solid[0]) == solid[-2]):  # fmt: skip
        inner = tokens[solid[0] + 1 : solid[-2]]
        if len(_split_top(inner, ",")) == 1:
            return _join(inner) + ";"
    return _join(tokens)


def _string_chunks(token: str, room: int) -> list[str]:
    """The literal ``token`` cut at spaces into literals of at most about ``room`` characters."""
    quote = token[0]
    body = token[1:-1]
    cuts = [0]
    depth = 0
    i = 0
    last_space = -1
    while i < len(body):
        if body[i] == "\\":
            i += 2
            continue
        if quote == "`" and body.startswith("${", i):
            depth += 1
        elif quote == "`" and body[i] == "}" and depth:
            depth -= 1
        elif body[i] == " " and not depth:
            last_space = i + 1
        if i - cuts[-1] >= room and last_space > cuts[-1]:
            cuts.append(last_space)
        i += 1
    cuts.append(len(body))
    return [quote + body[a:b] + quote for a, b in zip(cuts, cuts[1:]) if b > a]


def _strings(tokens: tuple[Token, ...], indent: int, width: int) -> list[Piece]:
    """The longest string literal outside brackets as a concatenation of shorter ones."""
    top = [i for i in _top(tokens) if tokens[i][0] in ("str", "tpl")]
    if not top:
        return []
    longest = max(top, key=lambda i: len(tokens[i][1]))
    head = _join(tokens[:longest])
    tail = _join(tokens[longest + 1 :])
    room = max(width - indent - 4 - max(len(head), len(tail)), 20)
    # a narrower cut when the last piece would be a stub (`${n}`)
    tries = (_string_chunks(tokens[longest][1], r) for r in range(room, max(room - 40, 19), -5))
    chunks = next((c for c in tries if len(c[-1]) >= 20), _string_chunks(tokens[longest][1], room))
    if len(chunks) < 2:
        return []
    first = (head + " " if head and not head.endswith(("(", "[")) else head) + chunks[0] + " +"
    lines = [(indent, first, "stmt")]
    lines += [(indent + 2, chunk + " +", "item") for chunk in chunks[1:-1]]
    lines.append((indent + 2, chunks[-1] + tail, "item"))
    return lines


def _if_block(tokens: tuple[Token, ...], indent: int) -> list[Piece]:
    """``if (c) statement;`` as ``if (c) {`` / ``statement;`` / ``}``."""
    solid = [i for i, (kind, _) in enumerate(tokens) if kind != "ws"]
    if len(solid) < 3 or tokens[solid[0]] != ("id", "if") or tokens[solid[1]] != ("op", "("):
        return []
    close = _pairs(tokens).get(solid[1])
    if close is None or close == solid[-1]:
        return []
    rest = tokens[close + 1 :]
    text = _join(rest)
    if text.startswith("{") or not text.endswith(";"):
        return []
    return [(indent, _join(tokens[: close + 1]) + " {", "stmt"),
            (indent + 2, text, "stmt"), (indent, "}", "stmt")]  # fmt: skip


def _overflow(lines: tuple[tuple[int, str], ...], width: int) -> int:
    return sum(max(0, indent + len(text) - width) for indent, text in lines)


@lru_cache(maxsize=None)
def _fit(
    text: str, indent: int, context: str, width: int, depth: int
) -> tuple[tuple[int, str], ...]:
    if indent + len(text) <= width or depth > 12:
        return ((indent, text),)
    try:
        tokens = _lex(text)
    except _Unlexable:
        return ((indent, text),)
    block = _if_block(tokens, indent)
    if block:
        return _fit_pieces(block, width, depth)
    layouts: list[list[Piece]] = []
    assignment = _assignment(tokens, indent) if context == "stmt" else []
    # an assignment's right side breaks below its `=`, not after its first operand
    layouts.append(assignment or _binary(tokens, indent, context))
    pairs = _pairs(tokens)
    for open_at in sorted((i for i in _top(tokens) if i in pairs), reverse=True):
        if pairs[open_at] > open_at + 1 and not _operand(tokens, open_at, pairs[open_at]):
            layouts.append(_group(tokens, open_at, pairs[open_at], indent))
    best: tuple[tuple[int, str], ...] = ((indent, text),)
    # The fewest lines that fit (the earlier layout on a tie); a string is split only when
    # nothing else fits; else the least overflow.
    for candidates in (layouts, [_strings(tokens, indent, width)]):
        fitting: list[tuple[tuple[int, str], ...]] = []
        for pieces in candidates:
            if not pieces or any(len(piece) >= len(text) for _, piece, _ in pieces):
                continue
            lines = _fit_pieces(pieces, width, depth)
            if _overflow(lines, width) == 0:
                fitting.append(lines)
            elif _overflow(lines, width) < _overflow(best, width):
                best = lines
        if fitting:
            return min(fitting, key=len)
    return best


def _fit_pieces(pieces: list[Piece], width: int, depth: int) -> tuple[tuple[int, str], ...]:
    out: list[tuple[int, str]] = []
    for indent, text, context in pieces:
        if text:
            out.extend(_fit(text, indent, context, width, depth + 1))
    return tuple(out)


def _wrap(prefix: str, text: str, width: int) -> list[str]:
    """``text`` after ``prefix`` in lines of at most ``width``, cut at spaces."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(prefix) + len(line) + 1 + len(word) > width:
            lines.append(prefix + line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(prefix + line)
    return lines


def _comment(line: str, width: int) -> list[str] | None:
    """A long comment line wrapped at words (``None`` when ``line`` is not a comment)."""
    indent = line[: len(line) - len(line.lstrip(" "))]
    body = line.strip()
    single = re.fullmatch(r"/\*\*\s*(.*?)\s*\*/", body)
    if single:
        return [indent + "/**", *_wrap(indent + " * ", single.group(1), width), indent + " */"]
    found = re.fullmatch(r"(\*|//)( +)(.*)", body)
    if found is None:
        return None
    marker, space, text = found.groups()
    hang = " " * (len(space) - 1)
    listed = re.match(r"(?:[-*] |\d+\. )", text)
    lines = _wrap(indent + marker + space, text, width)
    if listed:  # a list item's continuation lines align with its text
        hang += " " * listed.end()
    return lines[:1] + [
        indent + marker + " " + hang + x[len(indent + marker + space) :] for x in lines[1:]
    ]


def fit_lines(source: str, width: int = WIDTH) -> str:
    """``source`` with each line longer than ``width`` broken (see the module's docstring)."""
    out: list[str] = []
    for line in source.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        wrapped = _comment(line, width)
        if wrapped is not None:
            out.extend(wrapped)
            continue
        indent = len(line) - len(line.lstrip(" "))
        for deeper, text in _fit(line.strip(), indent, "stmt", width, 0):
            out.append(" " * deeper + text)
    return "\n".join(out)
