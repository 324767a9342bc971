"""The generated dispatch is what runs in the RSocket engine: remove a receive row from
the IDL, regenerate, build the engine on the generated package, and the frame is then
dropped by the machine before any handler sees it; the committed IDL handles it.  And an
engine missing a handler the generated ``HANDLERS`` names is refused at construction."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from wirestream.runtime.rsocket import (
    MetadataPushReceived,
    PayloadReceived,
    RequestReceived,
    RSocketConnection,
    StreamCompleted,
    Version,
)
from wirestream.runtime.rsocket.versions import V1_0, rsocket_1_0
from tests.support.engine_pair import shuttle
from tests.support.protocols import IDL, generate_into
from tests.rsocket.test_rsocket_engine_helpers import of_type, setup_frame, wire

SPEC = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))


def _rows(spec: dict[str, Any], machine: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = spec["machines"][machine]["transitions"]
    return rows


def _without_rows(spec: dict[str, Any]) -> dict[str, Any]:
    """The 1.0 IDL less two receive rows: the server's METADATA_PUSH once established,
    and a request-stream requester's PAYLOAD carrying an item (N without C)."""
    spec = copy.deepcopy(spec)
    rows = _rows(spec, "connection")
    [shared] = [row for row in rows if row.get("from") == "established"
                and row.get("receive") == ["Keepalive", "MetadataPush", "Lease"]]  # fmt: skip
    shared["role"] = "client"
    server = dict(shared, role="server", receive=["Keepalive", "Lease"])
    rows.insert(rows.index(shared) + 1, server)
    stream_rows = _rows(spec, "request_stream")
    [item] = [row for row in stream_rows if row.get("role") == "requester"
              and row.get("receive") == "Payload"
              and row.get("when") == {"complete": False, "next": True}]  # fmt: skip
    stream_rows.remove(item)
    return spec


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Version:
    codec, machines = generate_into(tmp_path_factory.mktemp("idl"), _without_rows(SPEC),
                                    "wsdispatch", "machines")  # fmt: skip
    return rsocket_1_0(codec, machines)


class Recording(RSocketConnection):
    """An engine that records which handlers the dispatch called."""

    def __init__(self, *args: Any, **options: Any) -> None:
        self.handled: list[str] = []
        super().__init__(*args, **options)

    def on_connection_metadata_push(self, frame: Any, before: Any, events: list[Any]) -> None:
        self.handled.append("on_connection_metadata_push")
        super().on_connection_metadata_push(frame, before, events)

    def on_stream_payload(self, frame: Any, stream: Any, events: list[Any]) -> None:
        self.handled.append("on_stream_payload")
        super().on_stream_payload(frame, stream, events)


def _established_server(version: Version) -> Recording:
    server = Recording("server", version)
    server.receive_data(wire("1.0", setup_frame("1.0")))  # the same bytes in either codec
    server.data_to_send()
    return server


@pytest.mark.parametrize("which", ["committed", "edited"])
def test_a_removed_connection_row_stops_the_handler(which: str, edited: Version) -> None:
    """METADATA_PUSH on an established server: handled with the committed table; with
    its row removed the `*` row ignores it and on_connection_metadata_push never runs."""
    version = V1_0 if which == "committed" else edited
    server = _established_server(version)
    push = version.codec.frame_bytes(version.codec.MetadataPush(metadata=b"routing"))
    events = server.receive_data(push)
    if which == "committed":
        assert of_type(events, MetadataPushReceived) == [MetadataPushReceived(b"routing")]
        assert server.handled == ["on_connection_metadata_push"]
    else:
        assert events == [] and server.handled == [] and server.ignored_frames == 1
        # the row went, the handler stays bound (awaiting_lease still receives it)
        assert version.machines.ConnectionMachine.HANDLERS["server"][
            version.codec.MetadataPush
        ] == "on_connection_metadata_push"  # fmt: skip


@pytest.mark.parametrize("which", ["committed", "edited"])
def test_a_removed_stream_row_stops_the_handler(which: str, edited: Version) -> None:
    """A request-stream requester's PAYLOAD(N): an item with the committed table; with
    its row removed the stream machine ignores it (the `*` row) and on_stream_payload
    never runs, while the completing PAYLOAD(C) still does."""
    version = V1_0 if which == "committed" else edited
    client, server = Recording("client", version), Recording("server", version)
    client.connect()
    shuttle(client, server)
    stream_id = client.request_stream(b"n", initial_n=8)
    _, requests = shuttle(client, server)
    assert of_type(requests, RequestReceived)
    server.send_next(stream_id, b"item")
    server.send_complete(stream_id)
    events, _ = shuttle(client, server)
    if which == "committed":
        assert [e.data for e in of_type(events, PayloadReceived)] == [b"item"]
        assert client.handled == ["on_stream_payload", "on_stream_payload"]
    else:
        assert of_type(events, PayloadReceived) == []
        assert client.handled == ["on_stream_payload"]  # only the PAYLOAD(C)
        assert client.ignored_frames == 1
    assert of_type(events, StreamCompleted) == [StreamCompleted(stream_id)]
    assert stream_id not in client.open_streams


def test_dispatch_refuses_an_engine_without_a_named_handler() -> None:
    """Every method HANDLERS names must exist when the engine is built, not when the
    frame first arrives: the typed binder reads each one (mypy checks them statically,
    tests/codegen/test_typed_dispatch.py), and ``Dispatch`` refuses one that is not callable."""

    class Deaf(RSocketConnection):
        on_connection_metadata_push = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="on_connection_metadata_push"):
        Deaf("server", "1.0")
    machines = V1_0.machines
    with pytest.raises(AttributeError, match="on_stream_request_stream"):
        machines.RequestStreamMachine.bind_responder(object())


def test_observes_keeps_stream_frames_out_of_the_connection_handlers(tmp_path: Path) -> None:
    """Without the connection machine's ``observes:``, its table would send the stream
    frames it only follows (PAYLOAD, REQUEST_N ...) to on_connection_* methods, which the
    engine does not have: building it fails, naming one."""
    spec = copy.deepcopy(SPEC)
    del spec["machines"]["connection"]["observes"]
    codec, machines = generate_into(tmp_path, spec, "wsobserves", "machines")
    assert machines.ConnectionMachine.HANDLERS["client"][codec.Payload] == "on_connection_payload"
    with pytest.raises(AttributeError, match=r"on_connection_\w+"):
        RSocketConnection("client", rsocket_1_0(codec, machines))
