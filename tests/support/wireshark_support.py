"""Running the generated Wireshark dissectors (generated/wireshark/*.lua) in tshark and
reading back what they show, in the shape ``tests.support.protocols.plain`` gives a Python frame.

tshark (Debian's package, installed by ``make tshark``) prints each packet as JSON
(``-T json``) with every field under its filter name; keys repeat (one per array
element, one per frame of a packet), so the JSON is read as lists of pairs.  A field
tree becomes ``Node``s; a frame's plain value is read from them by name, following the
dissectors' naming rule (``wirestream.codegen.targets.wireshark.dissector``):

- the frame's attribute ``a`` is the field ``<proto>.<frame>.<a>`` under the frame's
  item, a header value ``<proto>.<a>``, a flag ``<proto>[.<frame>].flags.<a>`` (a bool
  that is no flag is a bool bit of the frame; an integer found nowhere else is a
  value of several flag bits, ``<proto>.<frame>.flags.<a>``);
- a struct or union value is the item ``<proto>.<record>.<a>`` whose children are the
  struct's fields ``<proto>.<struct>.<name>``; an array's elements are repeated
  fields of the array's name;
- values are normalised as the vector files write them: integers and booleans as
  numbers, bytes as ``{"hex": ...}``, strings as they are, absent fields as None.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.protocols import ROOT, VERSIONS, Version

DISSECTORS = ROOT / "generated" / "wireshark"
TSHARK_TIMEOUT = 120.0


def tshark() -> str:
    """The tshark executable; a missing one fails the test (``make test`` installs it:
    ``make tshark``), in CI and locally alike, so a missing install step never hides."""
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark is not installed: run `make tshark` (Debian's tshark package)",
                    pytrace=False)  # fmt: skip
    return path


def proto_name(version: Version) -> str:
    return f"ws_{version.protocol}_{version.version}"


def snake(name: str) -> str:
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and (not name[index - 1].isupper()):
            out.append("_")
        out.append(char.lower())
    return "".join(out)


@dataclass
class Node:
    name: str
    value: str
    children: list[Node] = field(default_factory=list)


def nodes(pairs: list[tuple[str, Any]]) -> list[Node]:
    out: list[Node] = []
    for key, value in pairs:
        if key.endswith("_tree") and out and out[-1].name == key[: -len("_tree")]:
            out[-1].children = nodes(value)
        elif isinstance(value, list):
            out.append(Node(key, "", nodes(value)))
        else:
            out.append(Node(key, str(value)))
    return out


@dataclass
class Pdu:
    """One frame as a dissector showed it: the packet, TCP stream, sender, its tree."""

    packet: int
    stream: int
    sender: str
    tree: list[Node]

    def experts(self) -> list[str]:
        found: list[str] = []

        def walk(items: list[Node]) -> None:
            for node in items:
                if node.name == "_ws.expert" and node.children:
                    found.append(node.children[0].name)
                walk(node.children)

        walk(self.tree)
        return found

    def errors(self) -> list[str]:
        """The experts but the note on an unknown frame the receiver ignores or skips."""
        return [e for e in self.experts() if not e.endswith(".unknown_frame")]


def run_tshark(pcap: Path, proto: str, server_port: int, *, desegment: bool = True,
               prefs: dict[str, str] | None = None,
               scripts: list[Path] | None = None) -> list[Pdu]:  # fmt: skip
    """Every frame the dissector ``proto`` shows in ``pcap`` (all six dissectors loaded,
    as a user would load them, unless ``scripts`` names the dissectors to load), in
    packet order; ``server_port`` tells the sender."""
    command = [tshark(), "-n", "-r", str(pcap), "-T", "json", "-J", f"tcp {proto}",
               "-o", f"tcp.desegment_tcp_streams:{'TRUE' if desegment else 'FALSE'}"]  # fmt: skip
    if scripts is None:
        scripts = [DISSECTORS / f"{v.protocol}_{v.version}.lua" for v in VERSIONS]
    for script in scripts:
        command += ["-X", f"lua_script:{script}"]
    for key, value in (prefs or {}).items():
        command += ["-o", f"{key}:{value}"]
    done = subprocess.run(command, capture_output=True, timeout=TSHARK_TIMEOUT,
                          env={**os.environ, "LC_ALL": "C.UTF-8"})  # fmt: skip
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 0, f"tshark failed ({done.returncode}): {stderr}"
    lua_errors = [line for line in stderr.splitlines() if "Lua" in line or "lua" in line]
    assert not lua_errors, f"tshark reported Lua errors: {lua_errors}"
    packets = json.loads(done.stdout, object_pairs_hook=list)
    pdus: list[Pdu] = []
    for number, packet in enumerate(packets, 1):
        layers = dict(dict(packet)["_source"])["layers"]
        tcp = dict(next((value for key, value in layers if key == "tcp"), []))
        for key, value in layers:
            if key == proto:
                sender = "server" if int(tcp["tcp.srcport"]) == server_port else "client"
                pdus.append(Pdu(number, int(tcp["tcp.stream"]), sender, nodes(value)))
    return pdus


# --- a dissected frame as plain values ------------------------------------------------


def flat(items: list[Node], proto: str) -> list[Node]:
    """The fields of ``items``, text-only containers (array subtrees) opened, expert
    infos left out."""
    out: list[Node] = []
    for node in items:
        if node.name.startswith(proto + "."):
            out.append(node)
        elif node.name not in ("_ws.expert", "_ws.malformed"):
            out.extend(flat(node.children, proto))
    return out


NULL = Node("", "\0null")  # a NULL value: its length field shows -1, no value field


def record_field(items: list[Node], proto: str, attr: str) -> list[Node]:
    """The fields ``<proto>.<record>.<attr>`` directly in ``items``; a NULL one (its
    ``<attr>.length`` is -1, and no value follows) as ``NULL``, so that the elements of an
    array of nullable values keep their places."""
    found = []
    for node in flat(items, proto):
        parts = node.name.split(".")
        if len(parts) == 3 and parts[0] == proto and parts[2] == attr:
            found.append(node)
        elif parts[2:] == [attr, "length"] and parts[0] == proto and node.value == "-1":
            found.append(NULL)
    return found


def shaped(expected: Any, found: list[Node], proto: str) -> Any:
    """The dissected fields ``found`` in the shape of the Python value ``expected``."""
    if isinstance(expected, list):  # element by element (a union's variants differ)
        last = expected[-1] if expected else None
        return [shaped(expected[i] if i < len(expected) else last, [node], proto)
                for i, node in enumerate(found)]  # fmt: skip
    if not found or found == [NULL]:
        return None
    if len(found) > 1:
        return [node.value for node in found]  # a scalar shown twice: a mismatch
    node = found[0]
    if isinstance(expected, bool):
        return {"1": True, "0": False}.get(node.value, node.value)
    if isinstance(expected, int):
        return int(node.value, 0)
    if isinstance(expected, dict) and set(expected) == {"hex"}:
        return {"hex": node.value.replace(":", "")}
    if isinstance(expected, dict):
        return record(expected, node.children, proto)
    return node.value


def record(expected: dict[str, Any], children: list[Node], proto: str) -> dict[str, Any]:
    return {a: shaped(v, record_field(children, proto, a), proto) for a, v in expected.items()}


def as_shown(value: Any) -> Any:
    """A plain value as Wireshark can show it: its strings end at a NUL, so the
    dissectors show a NUL inside a string as U+2400 (the symbol for NUL)."""
    if isinstance(value, str):
        return value.replace("\x00", "\u2400")
    if isinstance(value, list):
        return [as_shown(item) for item in value]
    if isinstance(value, dict):
        return {key: as_shown(item) for key, item in value.items()}
    return value


def frame_plain(pdu: Pdu, proto: str, frame: str, expected: dict[str, Any]) -> dict[str, Any]:
    """The dissected frame ``frame`` of ``pdu`` in the shape of ``expected``: each
    attribute from the frame's item, else the header, else the flags."""
    top = flat(pdu.tree, proto)
    key = f"{proto}.{snake(frame)}"
    items = [node for node in top if node.name == key]
    assert len(items) == 1, (
        f"packet {pdu.packet}: expected one {key}, the tree has "
        f"{[n.name for n in top]}, experts {pdu.experts()}"
    )
    flags = [n for n in top if n.name == f"{proto}.flags"]
    flag_fields = flat(flags[0].children, proto) if flags else []
    out: dict[str, Any] = {}
    for attr, value in expected.items():
        in_flags = [n for n in flag_fields if n.name in (f"{proto}.flags.{attr}",
                                                         f"{key}.flags.{attr}")]  # fmt: skip
        if isinstance(value, bool):  # boolean attributes are the flags, or bool bits
            found = in_flags or record_field(items[0].children, proto, attr)
        else:
            found = record_field(items[0].children, proto, attr)
            if not found:  # a header value (not the frame's own item)
                found = [n for n in top if n.name == f"{proto}.{attr}" and n is not items[0]]
            if not found and isinstance(value, int):  # a value of several flag bits (QoS)
                found = in_flags
        out[attr] = shaped(value, found, proto)
    return out
