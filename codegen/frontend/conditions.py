"""Reading ``if:`` and ``rules:`` conditions into ``model.Cond`` trees.

The language is small on purpose (each target spells it with its own operators):

    cond    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?
    sum     := product (("+" | "-" | "|") product)*
    product := atom (("*" | "/" | "&") atom)*
    atom    := INTEGER | NAME | "ctx." NAME | "more" | "remaining" | "(" cond ")"

A NAME is an earlier integer or bool field of the record (header fields included), or a
flag of the frame; ``more`` holds while bytes remain in the enclosing frame (or length),
``remaining`` is how many; ``/`` divides rounding down.
A name on its own, or ``not`` of one, is a truth test (non-zero / set).
"""

from __future__ import annotations

import re
from typing import Callable, NoReturn

from wirestream.codegen.frontend.model import Cond

_TOKEN = re.compile(
    r"\s*(?:(0x[0-9a-fA-F]+|0b[01]+|\d+)|(ctx\.[a-z][a-z0-9_]*|[a-z][a-z0-9_]*)"
    r"|(==|!=|<=|>=|<|>|\+|-|\*|/|&|\||\(|\)))"
)
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
KEYWORDS = ("and", "or", "not", "more", "remaining")

# name -> "field" | "flag" | "ctx", or None when the name is unknown here
Resolver = Callable[[str], "str | None"]


class CondSyntaxError(Exception):
    """The text is not a condition; the builder reports it with the file, line and key."""


class _Parser:
    def __init__(self, text: str, resolve: Resolver) -> None:
        self.text = text
        self.resolve = resolve
        self.tokens: list[str] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            match = _TOKEN.match(stripped, pos)
            if not match:
                self.fail(f"cannot read '{stripped[pos:].strip()}'")
            self.tokens.append(match.group(match.lastindex or 0))
            pos = match.end()
        self.index = 0

    def fail(self, message: str) -> NoReturn:
        raise CondSyntaxError(f"{message} in condition '{self.text}'")

    def peek(self) -> str | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            self.fail("unexpected end")
        self.index += 1
        return token

    def parse(self) -> Cond:
        if not self.tokens:
            self.fail("empty")
        result = self.disjunction()
        if self.peek() is not None:
            self.fail(f"unexpected '{self.peek()}'")
        return result

    def disjunction(self) -> Cond:
        left = self.conjunction()
        while self.peek() == "or":
            self.take()
            left = Cond("or", (left, self.conjunction()))
        return left

    def conjunction(self) -> Cond:
        left = self.negation()
        while self.peek() == "and":
            self.take()
            left = Cond("and", (left, self.negation()))
        return left

    def negation(self) -> Cond:
        if self.peek() == "not":
            self.take()
            return Cond("not", (self.negation(),))
        return self.comparison()

    def comparison(self) -> Cond:
        left = self.sum()
        if self.peek() in COMPARISONS:
            op = self.take()
            return Cond(op, (left, self.sum()))
        return left

    def sum(self) -> Cond:
        left = self.product()
        while self.peek() in ("+", "-", "|"):
            op = self.take()
            left = Cond(op, (left, self.product()))
        return left

    def product(self) -> Cond:
        left = self.atom()
        while self.peek() in ("*", "/", "&"):
            op = self.take()
            left = Cond(op, (left, self.atom()))
        return left

    def atom(self) -> Cond:
        token = self.take()
        if token == "(":
            inner = self.disjunction()
            if self.take() != ")":
                self.fail("missing ')'")
            return inner
        if token[0].isdigit():
            return Cond("lit", value=int(token, 0))
        if token in ("more", "remaining"):
            return Cond(token)
        if token in KEYWORDS or not (token[0].isalpha()):
            self.fail(f"misplaced '{token}'")
        if token.startswith("ctx."):
            if self.resolve(token) != "ctx":
                self.fail(f"unknown context value '{token[4:]}'")
            return Cond("ctx", name=token[4:])
        kind = self.resolve(token)
        if kind is None:
            self.fail(f"unknown flag or field '{token}' (not a flag, nor an earlier integer field)")
        return Cond(kind, name=token)


def parse_condition(text: object, resolve: Resolver) -> Cond:
    """The tree of ``text``; ``CondSyntaxError`` says why it is not a condition."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise CondSyntaxError(f"expected a condition, got {text!r}")
    return _Parser(str(text), resolve).parse()


def is_truth_test(cond: Cond) -> bool:
    """Whether a tree yields a truth value without a comparison (a name, ``not``...)."""
    return cond.op not in COMPARISONS and cond.op not in ("and", "or", "not", "more")


def mentions_more_alone(cond: Cond) -> bool:
    """``more`` may only be a whole condition: a field after the last one that is there."""
    return cond.op == "more"
