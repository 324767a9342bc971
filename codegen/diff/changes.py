"""The record of one ``wirestream diff`` finding (``Change``), where it points
(``Where``), the state of one comparison (``Comparison``) and who reads what: shared by
the rule modules (``diff_frames``, ``diff_layout``, ``diff_machines``) and the reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from wirestream.codegen.frontend.model import Frame, Protocol

SIDES: Final = ("client", "server")


@dataclass(frozen=True)
class Where:
    """A place in an IDL file."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line}


@dataclass
class Change:
    """One difference between two versions, judged for both directions."""

    rule: str  # what kind of change (see the module docstring)
    subject: str  # what changed: "frame Setup: field resume_token"
    breaks_old_readers: bool  # a new writer -> an old reader goes wrong
    breaks_new_readers: bool  # an old writer -> a new reader goes wrong
    readers: tuple[str, ...]  # whose reading it is about: client/server, or machine roles
    reason: str
    old: Where | None
    new: Where | None

    @property
    def breaking(self) -> bool:
        return self.breaks_old_readers or self.breaks_new_readers

    @property
    def verdict(self) -> str:
        if self.breaks_old_readers and self.breaks_new_readers:
            return "breaks old and new readers"
        if self.breaks_old_readers:
            return "breaks old readers"
        if self.breaks_new_readers:
            return "breaks new readers"
        return "compatible"

    @property
    def readers_text(self) -> str:
        if set(self.readers) == set(SIDES):
            return "both"
        return ", ".join(self.readers)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "subject": self.subject,
            "breaks_old_readers": self.breaks_old_readers,
            "breaks_new_readers": self.breaks_new_readers,
            "verdict": self.verdict,
            "readers": list(self.readers),
            "reason": self.reason,
            "old": self.old.to_json() if self.old else None,
            "new": self.new.to_json() if self.new else None,
        }


def readers_of(sender: str) -> frozenset[str]:
    """The sides that read a frame ``sender`` writes."""
    if sender == "client":
        return frozenset({"server"})
    if sender == "server":
        return frozenset({"client"})
    return frozenset(SIDES)


def senders(frame: Frame) -> frozenset[str]:
    return frozenset(SIDES) if frame.sender == "any" else frozenset({frame.sender})


def code_text(code: tuple[int, ...]) -> str:
    """A frame code as the generated docs write it: ``0x0A``, ``0x0002/0x01``."""
    return "/".join(f"0x{c:02X}" for c in code)


def plural(side: str) -> str:
    return side if side.endswith("s") else f"{side}s"


def side_text(sides: frozenset[str] | set[str]) -> str:
    """``servers``, ``clients`` or ``peers``."""
    if set(sides) == set(SIDES) or not sides:
        return "peers"
    return " and ".join(plural(s) for s in sorted(sides))


@dataclass
class Comparison:
    """The state of one comparison: both models and the changes found so far."""

    old: Protocol
    new: Protocol
    changes: list[Change] = field(default_factory=list)

    def where(self, proto: Protocol, line: int | None) -> Where | None:
        return None if line is None else Where(proto.source, line)

    def add(self, rule: str, subject: str, *, old_breaks: bool, new_breaks: bool,
            readers: frozenset[str] | set[str] | tuple[str, ...], reason: str,
            old_line: int | None, new_line: int | None) -> None:  # fmt: skip
        order = {name: index for index, name in enumerate(SIDES)}
        ordered = tuple(sorted(set(readers), key=lambda r: (order.get(r, len(SIDES)), r)))
        self.changes.append(Change(rule, subject, old_breaks, new_breaks, ordered, reason,
                                   self.where(self.old, old_line),
                                   self.where(self.new, new_line)))  # fmt: skip
