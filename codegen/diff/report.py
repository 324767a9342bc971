"""How ``wirestream diff`` shows its findings: a table for people, JSON for scripts, and
the Markdown section of the generated ``PROTOCOL.md`` (all from the same ``Change``s)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from typing import Any

from wirestream.codegen.diff.changes import Change, Where

WIDTH = 100


@dataclass
class Report:
    """The changes between one pair of IDL files."""

    old: str  # the old file as shown (a path, or REF:path)
    new: str
    changes: list[Change]

    def summary(self) -> dict[str, int]:
        return {
            "changes": len(self.changes),
            "breaks_old_readers": sum(c.breaks_old_readers for c in self.changes),
            "breaks_new_readers": sum(c.breaks_new_readers for c in self.changes),
            "compatible": sum(not c.breaking for c in self.changes),
        }

    def headline(self) -> str:
        s = self.summary()
        if not s["changes"]:
            return f"{self.old} -> {self.new}: no changes"
        return (f"{self.old} -> {self.new}: {s['changes']} changes ({s['breaks_old_readers']} "
                f"break old readers, {s['breaks_new_readers']} break new readers, "
                f"{s['compatible']} compatible)")  # fmt: skip


@dataclass
class Run:
    """Every pair one ``wirestream diff`` compared, and the files it could not pair."""

    reports: list[Report]
    old_only: list[str] = field(default_factory=list)
    new_only: list[str] = field(default_factory=list)


def where(place: Where | None) -> str:
    return str(place) if place is not None else "(none)"


def text(run: Run, failing: list[Change]) -> str:
    """The readable table: one row per change, its reason and places under it."""
    lines: list[str] = []
    for report in run.reports:
        lines.append(report.headline())
        if report.changes:
            readers_width = max(7, *(len(c.readers_text) for c in report.changes))
            rule_width = max(4, *(len(c.rule) for c in report.changes))
            lines.append("")
            lines.append(f"{'old readers':<12} {'new readers':<12} {'readers':<{readers_width}} "
                         f"{'rule':<{rule_width}} subject")  # fmt: skip
            for change in report.changes:
                old = "BREAKS" if change.breaks_old_readers else "ok"
                new = "BREAKS" if change.breaks_new_readers else "ok"
                lines.append(f"{old:<12} {new:<12} {change.readers_text:<{readers_width}} "
                             f"{change.rule:<{rule_width}} {change.subject}")  # fmt: skip
                lines += textwrap.wrap(change.reason, WIDTH, initial_indent="    why:   ",
                                       subsequent_indent="           ")  # fmt: skip
                lines.append(f"    where: {where(change.old)} -> {where(change.new)}")
            lines.append("")
    if run.reports and not run.reports[-1].changes:
        lines.append("")
    for path in run.old_only:
        lines.append(f"only in the old tree (not compared): {path}")
    for path in run.new_only:
        lines.append(f"only in the new tree (not compared): {path}")
    if run.old_only or run.new_only:
        lines.append("")
    lines.append(f"{len(failing)} breaking change{'s' if len(failing) != 1 else ''} counted"
                 if failing else "no breaking changes counted")  # fmt: skip
    return "\n".join(lines) + "\n"


def to_json(run: Run, fail_on: str, failing: list[Change]) -> str:
    data: dict[str, Any] = {
        "comparisons": [
            {
                "old": report.old,
                "new": report.new,
                "summary": report.summary(),
                "changes": [change.to_json() for change in report.changes],
            }
            for report in run.reports
        ],
        "old_only": run.old_only,
        "new_only": run.new_only,
        "fail_on": fail_on,
        "failing": len(failing),
    }
    return json.dumps(data, indent=2) + "\n"


def markdown_cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown_rows(changes: list[Change]) -> list[tuple[str, str, str, str, str, str]]:
    """(old readers, new readers, readers, change, why, where) per change, for the
    generated docs: places as ``old-line -> new-line`` of the two files."""
    rows = []
    for change in changes:
        old = change.old.line if change.old else "-"
        new = change.new.line if change.new else "-"
        rows.append((
            "**breaks**" if change.breaks_old_readers else "ok",
            "**breaks**" if change.breaks_new_readers else "ok",
            markdown_cell(change.readers_text or "-"),
            markdown_cell(f"`{change.rule}` {change.subject}"),
            markdown_cell(change.reason),
            f"{old} -> {new}",
        ))  # fmt: skip
    return rows
