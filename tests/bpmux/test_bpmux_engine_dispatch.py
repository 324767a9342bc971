"""The BPMUX engine runs the generated dispatch: remove a receive row from a copy of
idl/bpmux/rel.yaml, regenerate, and the packet that row let in is refused by the machine
and its handler never runs; with the committed IDL the same packet is handled.

The edited copy changes only machine rows, so its generated ``machines.py`` is loaded
over the committed codec (its ``from . import <packets>`` resolves to
``wirestream.generated.bpmux.rel``) and run by a ``BpmuxConnection`` subclass naming the
edited machine classes (the engine's ``*_MACHINE`` seam).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import wirestream.generated.bpmux.rel as codec
from wirestream.generated.bpmux.rel import Frame, InnerItem, MainCredit, Request
from wirestream.runtime.bpmux import BpmuxConnection, ItemReceived, BpmuxRequestReceived
from wirestream.runtime.errors import UnexpectedFrame
from tests.support.protocols import IDL, generate_into

PACKAGE = "wsbpmux_dispatch"

# (machine, role, from, receive) of the rows the edited copy drops.
REMOVED = [
    ("request", "responder", "idle", "Request"),
    ("flow", "item_receiver", "open", ["InnerItem", "InnerItems"]),
]


def _drop_rows(spec: dict[str, Any]) -> None:
    for machine, role, state, frames in REMOVED:
        rows = spec["machines"][machine]["transitions"]
        kept = [row for row in rows if not (row.get("role") == role and row.get("from") == state
                                            and row.get("receive") == frames and "to" in row)]  # fmt: skip
        assert len(kept) == len(rows) - 1, f"no single {machine} row {role} {state} {frames}"
        spec["machines"][machine]["transitions"] = kept


def _machines_over_committed_codec(tmp_path: Path, spec: dict[str, Any]) -> ModuleType:
    """Generate ``spec`` and load its machines with the committed packet classes."""
    package = f"{PACKAGE}_{tmp_path.name}"
    generate_into(tmp_path, spec, package)
    base = f"{package}.bpmux.rel"
    path = tmp_path / package / "bpmux" / "rel" / "machines.py"
    loader_spec = importlib.util.spec_from_file_location(f"{base}.machines", path)
    assert loader_spec is not None and loader_spec.loader is not None
    machines = importlib.util.module_from_spec(loader_spec)
    saved = sys.modules.get(base)
    sys.modules[base] = codec  # `from . import Request, ...` -> the committed classes
    try:
        loader_spec.loader.exec_module(machines)
    finally:
        if saved is None:
            del sys.modules[base]
        else:
            sys.modules[base] = saved
    return machines


def _committed_spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((IDL / "bpmux" / "rel.yaml").read_text(encoding="utf-8"))
    return spec


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The machines of a copy of the IDL without the ``REMOVED`` rows."""
    spec = _committed_spec()
    _drop_rows(spec)
    return _machines_over_committed_codec(tmp_path_factory.mktemp("removed"), spec)


class Spied(BpmuxConnection):
    """Records the handlers the dispatch calls."""

    calls: list[str]

    def __init__(self, **options: Any) -> None:
        self.calls = []
        super().__init__(**options)

    def on_request_request(self, *args: Any) -> None:
        self.calls.append("on_request_request")
        super().on_request_request(*args)

    def on_inner_flow_inner_item(self, *args: Any) -> None:
        self.calls.append("on_inner_flow_inner_item")
        super().on_inner_flow_inner_item(*args)


def engine_on(machines: ModuleType | None) -> Spied:
    cls = Spied
    if machines is not None:
        cls = type("EditedSpied", (Spied,), {
            "CONNECTION_MACHINE": machines.ConnectionMachine,
            "REQUEST_MACHINE": machines.RequestMachine,
            "FLOW_MACHINE": machines.FlowMachine,
        })  # fmt: skip
    conn = cls(initiator=True)
    conn.data_to_send()
    conn.receive_data(MainCredit(1000).to_bytes())
    return conn


def _request(conn: BpmuxConnection) -> tuple[Frame, object]:
    return Request(0, b"q"), BpmuxRequestReceived(0, b"q")


def _item(conn: BpmuxConnection) -> tuple[Frame, object]:
    stream = conn.open_stream(b"s", credit=100)
    return InnerItem(stream, b"x"), ItemReceived(stream, b"x")


CASES = [
    pytest.param(_request, "on_request_request", "request", id="request-responder-idle"),
    pytest.param(_item, "on_inner_flow_inner_item", "flow", id="flow-item_receiver-open"),
]


@pytest.mark.parametrize("setup, handler, machine", CASES)
def test_committed_idl_handles_the_packet(setup: Any, handler: str, machine: str) -> None:
    conn = engine_on(None)
    frame, event = setup(conn)
    assert conn.receive_data(frame.to_bytes()) == [event]
    assert conn.calls == [handler]


@pytest.mark.parametrize("setup, handler, machine", CASES)
def test_without_its_row_the_packet_is_refused_and_not_handled(
    edited: ModuleType, setup: Any, handler: str, machine: str
) -> None:
    conn = engine_on(edited)
    frame, _ = setup(conn)
    # The generated dispatch table no longer sends the packet anywhere ...
    scope = {"request": edited.RequestMachine, "flow": edited.FlowMachine}[machine]
    assert all(type(frame) not in table for table in scope.HANDLERS.values())
    # ... and the machine refuses it before any handler could run.
    with pytest.raises(UnexpectedFrame) as caught:
        conn.receive_data(frame.to_bytes())
    assert caught.value.machine == machine
    assert conn.calls == []
    assert conn.closed


def test_the_generated_table_picks_the_handler(tmp_path: Path) -> None:
    """The machine takes the packet but the table names no handler for it (the flow
    only `observes` InnerItem in this copy): nothing handles it -- no event, no credit
    charged.  The engine has no list of its own that would call the handler anyway."""
    spec = _committed_spec()
    spec["machines"]["flow"]["observes"].append("InnerItem")
    conn = engine_on(_machines_over_committed_codec(tmp_path, spec))
    frame, _ = _item(conn)
    assert conn.receive_data(frame.to_bytes()) == []
    assert conn.calls == [] and conn.peer_inner_credit(frame.inner_id) == 100
    assert conn.open_inner_ids() == [frame.inner_id]  # the flow is open: the row moved it


def test_a_handler_missing_for_a_dispatched_packet_fails_at_construction() -> None:
    """Dispatch binds every handler the tables name when the engine is built."""

    class Incomplete(BpmuxConnection):
        on_connection_message = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="on_connection_message"):
        Incomplete(initiator=True)


def test_edited_machines_use_the_committed_packets(edited: ModuleType) -> None:
    """The seam's premise: only rows differ, the packet classes are the committed ones."""
    assert edited.RequestMachine.HANDLERS["requester"] == {
        codec.Response: "on_request_response",
        codec.ResponseError: "on_request_response_error",
    }
    assert Path(edited.__file__).name == "machines.py"
