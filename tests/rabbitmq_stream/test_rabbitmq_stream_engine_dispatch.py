"""The generated dispatch is what runs the RabbitMQ stream engine (issue 15).

A received frame reaches its handler only because a receive row of
idl/rabbitmq_stream/v1.yaml lets it through: the machine first, then the handler the
generated ``HANDLERS`` table names. Here a copy of the IDL loses one receive row, is
regenerated into a package of its own (the edit workflow, ``generate_into``), and the
engine is built on those tables: the frame is then refused, as the tables now say, and
its handler never runs. With the committed IDL the same frame is handled. And a frame
the machine accepts goes where ``HANDLERS`` says, not where the engine would like: a
frame the connection machine only ``observes`` reaches no handler of the engine's.
"""

from __future__ import annotations

import copy
from types import ModuleType
from typing import Any

import pytest
import yaml

from wirestream.generated.rabbitmq_stream import v1
from wirestream.generated.rabbitmq_stream.v1 import (
    PartitionsResponse,
    PublishConfirm,
    RouteResponse,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import (
    ConnectionMachine,
    PublisherMachine,
    SubscriptionMachine,
)
from wirestream.runtime.errors import UnexpectedFrame
from wirestream.runtime.machine import StateMachine
from wirestream.runtime.rabbitmq_stream import (
    ClientConnection,
    BrokerConnectionClosed,
    PartitionsReceived,
    PublishConfirmed,
    RouteReceived,
)
from tests.support.engine_pair import shuttle
from tests.support.protocols import IDL, generate_into, tables_over
from tests.support.rabbitmq_stream_test_broker import TestBroker

COMMITTED = {"connection": ConnectionMachine, "publisher": PublisherMachine,
             "subscription": SubscriptionMachine}  # fmt: skip


def _remove_receive_row(spec: dict[str, Any], machine: str, state: str, frame: str) -> None:
    """Remove the client's row receiving ``frame`` in ``state`` of ``machine`` (the
    frame leaves the row's list; a row left with no frame goes)."""
    rows = spec["machines"][machine]["transitions"]
    for row in list(rows):
        roles = row["role"] if isinstance(row["role"], list) else [row["role"]]
        states = row["from"] if isinstance(row["from"], list) else [row["from"]]
        frames = row.get("receive", [])
        frames = frames if isinstance(frames, list) else [frames]
        if "client" in roles and state in states and frame in frames and "to" in row:
            assert roles == ["client"] and states == [state], "edit a row of its own"
            if frames == [frame]:
                rows.remove(row)
            else:
                row["receive"] = [f for f in frames if f != frame]
            return
    raise AssertionError(f"no client row receives {frame} in {machine}.{state}")


def _over_committed(regenerated: type[StateMachine[Any]]) -> type[StateMachine[Any]]:
    return tables_over(regenerated, COMMITTED[regenerated.SCOPE], v1)


def _engine_class(machines: ModuleType | None) -> type[ClientConnection]:
    """A ClientConnection that records the handlers that ran, on ``machines`` (a
    regenerated package's machines module) or on the committed tables (None)."""

    class Recording(ClientConnection):
        ran: list[str]

        def on_connection_route_response(self, frame: Any, events: list[Any]) -> None:
            self.ran.append("on_connection_route_response")
            super().on_connection_route_response(frame, events)

        def on_connection_partitions_response(self, frame: Any, events: list[Any]) -> None:
            self.ran.append("on_connection_partitions_response")
            super().on_connection_partitions_response(frame, events)

        def on_publisher_publish_confirm(self, frame: Any, *context: Any) -> None:
            self.ran.append("on_publisher_publish_confirm")
            super().on_publisher_publish_confirm(frame, *context)

    if machines is not None:
        Recording.CONNECTION_MACHINE = _over_committed(machines.ConnectionMachine)
        Recording.PUBLISHER_MACHINE = _over_committed(machines.PublisherMachine)
        Recording.SUBSCRIPTION_MACHINE = _over_committed(machines.SubscriptionMachine)
    return Recording


def _open(engine_class: type[ClientConnection]) -> tuple[Any, TestBroker]:
    client: Any = engine_class()
    client.ran = []
    broker = TestBroker()
    broker.add_stream("s")
    client.initiate_connection()
    shuttle(client, broker)
    assert client.is_open
    return client, broker


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The machines of idl/rabbitmq_stream/v1.yaml regenerated without two client
    rows (connection 'open, receive RouteResponse', publisher 'declared, receive
    PublishConfirm'), and with the connection machine observing PartitionsResponse."""
    spec = copy.deepcopy(yaml.safe_load((IDL / "rabbitmq_stream" / "v1.yaml").read_text()))
    _remove_receive_row(spec, "connection", "open", "RouteResponse")
    _remove_receive_row(spec, "publisher", "declared", "PublishConfirm")
    spec["machines"]["connection"]["observes"] = ["PartitionsResponse"]
    _, machines = generate_into(tmp_path_factory.mktemp("idl"), spec, "ws_rows_removed", "machines")
    return machines


def _route_response(client: Any) -> tuple[int, bytes]:
    cid: int = client.route("key", "super")
    client.data_to_send()  # the broker's answer is written by hand
    return cid, frame_bytes(RouteResponse(cid, 1, ["s-0"]))


def test_a_connection_row_is_what_lets_route_response_reach_its_handler(edited: ModuleType) -> None:
    """Commands: 'Route' (Expects response? 'Yes'): the client's 'open, receive
    RouteResponse -> open' row hands the response to on_connection_route_response."""
    client, _ = _open(_engine_class(None))
    cid, response = _route_response(client)
    assert client.receive_data(response) == [RouteReceived(cid, ("s-0",))]
    assert client.ran == ["on_connection_route_response"]

    assert "RouteResponse" not in {f.__name__ for f in edited.ConnectionMachine.HANDLERS["client"]}
    client, _ = _open(_engine_class(edited))
    _, response = _route_response(client)
    with pytest.raises(UnexpectedFrame, match="can't receive RouteResponse") as refused:
        client.receive_data(response)
    assert client.ran == []
    assert isinstance(refused.value.events[-1], BrokerConnectionClosed)  # CloseRequest 13 queued
    assert client.closed


def test_a_publisher_row_is_what_lets_publish_confirm_reach_its_handler(edited: ModuleType) -> None:
    """PublishConfirm: 'PublishingIds => [uint64] // to correlate with the messages
    sent': the publisher's 'declared, receive PublishConfirm -> declared' row hands the
    confirm, routed by its publisher id, to on_publisher_publish_confirm."""

    def confirm(client: Any, broker: TestBroker) -> list[Any]:
        client.declare_publisher(0, "s")
        shuttle(client, broker)
        client.publish(0, [b"m"])
        client.data_to_send()  # the broker's confirm is written by hand below
        events: list[Any] = client.receive_data(frame_bytes(PublishConfirm(0, [1])))
        return events

    client, broker = _open(_engine_class(None))
    assert confirm(client, broker) == [PublishConfirmed(0, (1,))]
    assert client.ran == ["on_publisher_publish_confirm"] and client.unconfirmed(0) == 0

    # (PublishConfirm keeps its handler: the 'deleting' row still takes it.)
    client, broker = _open(_engine_class(edited))
    with pytest.raises(UnexpectedFrame, match="can't receive PublishConfirm"):
        confirm(client, broker)
    assert client.ran == []


def test_an_accepted_frame_goes_where_the_generated_handlers_table_says(
    edited: ModuleType,
) -> None:
    """The open connection accepts PartitionsResponse either way; whether a handler
    takes it is the generated table's say: observed only, it reaches none (the request
    stays outstanding), where a hand-made dispatch would still have called one."""

    def partitions(client: Any) -> tuple[int, list[Any]]:
        cid: int = client.partitions("super")
        client.data_to_send()
        events: list[Any] = client.receive_data(frame_bytes(PartitionsResponse(cid, 1, ["p"])))
        return cid, events

    client, _ = _open(_engine_class(None))
    cid, events = partitions(client)
    assert events == [PartitionsReceived(cid, ("p",))]
    assert client.ran == ["on_connection_partitions_response"]

    client, _ = _open(_engine_class(edited))
    cid, events = partitions(client)
    assert events == [] and client.ran == [] and client.ignored_frames == 0
    assert client.outstanding_requests == {cid: "PartitionsRequest"} and client.is_open
