"""``PROTOCOL.md``: one protocol version described for people (frames, layouts, machines
as Mermaid diagrams, and what changed from its predecessor), rendered from the same plan
as the code of every language."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wirestream.codegen.diff.compare import diff_protocols
from wirestream.codegen.diff.report import Report, markdown_rows
from wirestream.codegen.frontend.model import Protocol
from wirestream.codegen.plan.machines import MachinesPlan
from wirestream.codegen.targets.jinja import environment

_ENV = environment(Path(__file__).parent / "templates")


def render_protocol_md(proto: Protocol, machines: MachinesPlan, package: str,
                       predecessor: Protocol | None, dissector: str) -> str:  # fmt: skip
    """The page of ``proto``; with its ``predecessor``'s model it says what changed."""
    compat = compatibility(predecessor, proto) if predecessor is not None else None
    return _ENV.get_template("protocol.md.j2").render(
        m=machines, package=package, compat=compat, predecessor=proto.predecessor,
        dissector=dissector,
    )  # fmt: skip


@dataclass
class Compatibility:
    """What the docs say about a version's changes from its predecessor."""

    title: str  # the predecessor's
    version: str
    old: str  # the two files, as given to the generator
    new: str
    summary: dict[str, int]
    rows: list[tuple[str, str, str, str, str, str]]


def compatibility(old: Protocol, new: Protocol) -> Compatibility:
    """``wirestream diff`` of a version against its predecessor, for ``PROTOCOL.md``."""
    report = Report(old.source, new.source, diff_protocols(old, new))
    return Compatibility(old.title, old.version, old.source, new.source, report.summary(),
                         markdown_rows(report.changes))  # fmt: skip
