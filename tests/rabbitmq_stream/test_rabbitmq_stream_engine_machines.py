"""The client engine obeys the generated tables (idl/rabbitmq_stream/v1.yaml machines).

Changing a transition in the YAML changes the engine after regeneration: here the
generated tables are patched in place, as regeneration would change them, and the
engine follows without any change of its own code.
"""

from __future__ import annotations

import pytest

from wirestream.generated.rabbitmq_stream.v1 import Heartbeat, Publish, frame_bytes
from wirestream.generated.rabbitmq_stream.v1.machines import (
    ConnectionMachine,
    ConnectionState,
    PublisherMachine,
    PublisherState,
)
from wirestream.runtime.errors import IllegalSend
from wirestream.runtime.machine import IGNORE, Illegal
from tests.support.engine_pair import shuttle
from tests.support.rabbitmq_stream_test_broker import open_pair, with_stream


def test_engine_follows_a_changed_publisher_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row 'declared, send Publish -> error' makes publishing fail with its message."""
    table = dict(PublisherMachine.SEND["client"])
    table[(PublisherState.DECLARED, Publish)] = ((None, Illegal("patched: no publishing")),)
    monkeypatch.setattr(PublisherMachine, "SEND", {**PublisherMachine.SEND, "client": table})
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    with pytest.raises(IllegalSend, match="patched: no publishing"):
        client.publish(0, [b"x"])


def test_engine_follows_a_changed_connection_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row 'open, receive Heartbeat -> ignore' makes the engine count it as dropped."""
    client, _ = open_pair()
    table = dict(ConnectionMachine.RECEIVE["client"])
    table[(ConnectionState.OPEN, Heartbeat)] = ((None, IGNORE),)
    monkeypatch.setattr(client._connection, "_receive", table)
    before = client.ignored_frames
    client.receive_data(frame_bytes(Heartbeat()))
    assert client.ignored_frames == before + 1


def test_tables_validate_both_roles() -> None:
    """The same tables hold a server role: the test broker drives it (every back-to-back
    test exercises both sides)."""
    assert set(PublisherMachine.ROLES) == {"client", "server"}
    assert set(ConnectionMachine.ROLES) == {"client", "server"}
