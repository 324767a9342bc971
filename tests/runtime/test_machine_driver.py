"""The state-machine driver (runtime.machine) on a generated table, and the
edit-the-YAML workflow for machines: changing a transition changes behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wirestream.generated.rsocket.v1_0 import (
    Error,
    ErrorCode,
    Keepalive,
    Lease,
    RequestStream,
    Setup,
)
from wirestream.generated.rsocket.v1_0.machines import ConnectionMachine, ConnectionState
from wirestream.runtime.errors import (
    IllegalSend,
    LocalProtocolError,
    RemoteProtocolError,
    UnexpectedFrame,
)
from wirestream.runtime.machine import IGNORE
from tests.support.protocols import IDL, generate_into


def test_guards_choose_the_row_setup_with_and_without_lease() -> None:
    plain, leased = ConnectionMachine("client"), ConnectionMachine("client")
    assert plain.send(Setup(lease=False)) is ConnectionState.SETUP_SENT
    assert leased.send(Setup(lease=True)) is ConnectionState.AWAITING_LEASE


def test_an_error_row_raises_illegal_send_with_its_message_and_spec() -> None:
    machine = ConnectionMachine("client")
    machine.send(Setup(lease=True))
    with pytest.raises(IllegalSend) as caught:
        machine.send(RequestStream(stream_id=1, initial_request_n=1))
    error = caught.value
    assert isinstance(error, LocalProtocolError)
    assert "LEASE" in str(error) and "state=awaiting_lease" in str(error)
    assert "MUST wait for the server-side Responder" in error.spec
    assert (error.machine, error.role, error.state, error.frame) == (
        "connection", "client", "awaiting_lease", "RequestStream"
    )  # fmt: skip
    assert machine.state is ConnectionState.AWAITING_LEASE  # a refused event changes nothing


def test_a_wildcard_row_refuses_any_first_frame_but_setup_on_the_server() -> None:
    server = ConnectionMachine("server")
    with pytest.raises(UnexpectedFrame) as caught:
        server.receive(Keepalive(respond=True))
    assert isinstance(caught.value, RemoteProtocolError)
    assert "INVALID_SETUP" in str(caught.value)


def test_a_condition_on_a_header_field_setup_on_stream_1_is_invalid() -> None:
    with pytest.raises(UnexpectedFrame):
        ConnectionMachine("server").receive(Setup(stream_id=1))


def test_ignore_rows_return_ignore_and_keep_the_state() -> None:
    server = ConnectionMachine("server")
    server.receive(Setup())
    assert server.receive(Setup()) is IGNORE
    assert server.state is ConnectionState.ESTABLISHED


def test_terminal_state_and_enum_conditions() -> None:
    client = ConnectionMachine("client")
    client.send(Setup(lease=True))
    assert client.receive(Error(error_code=ErrorCode.REJECTED_SETUP)) is ConnectionState.CLOSED
    assert client.terminated
    with pytest.raises(IllegalSend):
        client.send(Keepalive())


def test_allows_send_does_not_change_state() -> None:
    client = ConnectionMachine("client")
    assert client.allows_send(Setup()) and not client.allows_send(Lease())
    assert client.state is ConnectionState.NEW


def test_unknown_role_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        ConnectionMachine("responder")  # type: ignore[arg-type]


def test_changing_a_transition_in_the_yaml_changes_behaviour(tmp_path: Path) -> None:
    """Make SETUP with L go straight to established, regenerate, and the generated
    machine lets the client send a request without waiting for LEASE."""
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    for row in spec["machines"]["connection"]["transitions"]:
        if row.get("send") == "Setup" and row.get("when", {}).get("lease") is True:
            row["to"] = "established"
    codec, machines = generate_into(tmp_path, spec, "wsmach", "machines")
    edited = machines.ConnectionMachine("client")
    edited.send(codec.Setup(lease=True))
    assert edited.state.value == "established"
    edited.send(codec.RequestStream(stream_id=1, initial_request_n=1))  # now allowed
    docs = (tmp_path / "wsmach" / "rsocket" / "v1_0" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert "new --> established: send Setup [stream_id=0, lease]" in docs


TOY = {
    "wirestream": 1,
    "protocol": "toy",
    "version": "v1",
    "title": "Toy",
    "framing": {"length_prefix": "u24", "max_frame_size": 1024},
    "header": {
        "fields": [{"word": "u16", "bits": [{"name": "frame_type", "width": 8}, {"flags": 8}]}],
        "discriminator": "frame_type",
    },
    "unknown": {"policy": "error"},
    "frames": {
        "Hello": {"code": 1, "fields": [{"name": "version", "type": "u8"}]},
        "Bye": {"code": 2, "flags": {"now": 1}, "fields": []},
    },
    "machines": {
        "session": {
            "roles": ["peer"],
            "states": {"new": "nothing yet", "open": "greeted", "closed": "done"},
            "initial": "new",
            "terminal": ["closed"],
            "transitions": [
                {"from": "new", "receive": "Hello", "when": {"version": 0}, "to": "open"},
                {"from": "new", "receive": "Hello", "when": {"version": {"not": 0}},
                 "error": "unsupported version"},
                {"from": "open", "receive": "Bye", "when": {"now": True}, "to": "closed"},
                {"from": "open", "receive": "*", "ignore": True},
            ],
        }
    },
}  # fmt: skip


def test_negated_and_flag_conditions_and_the_wildcard_fallback(tmp_path: Path) -> None:
    """`{not: 0}` rows, flag rows, and a `*` row catching a frame whose guards all fail."""
    codec, machines = generate_into(tmp_path, TOY, "wstoy", "machines")
    refused = machines.SessionMachine("peer")
    with pytest.raises(UnexpectedFrame, match="unsupported version"):
        refused.receive(codec.Hello(version=2))
    session = machines.SessionMachine("peer")
    assert session.receive(codec.Hello(version=0)).value == "open"
    assert session.receive(codec.Bye(now=False)) is IGNORE  # guard fails -> the `*` row
    assert session.receive(codec.Bye(now=True)).value == "closed"
    # the generated dispatch table: the frames whose rows move the machine, by engine method
    assert machines.SessionMachine.HANDLERS == {
        "peer": {codec.Hello: "on_connection_hello", codec.Bye: "on_connection_bye"}
    }
    assert machines.SessionMachine.SCOPE == "connection"


def test_fresh_makes_the_machine_the_constructor_makes_and_refuses_an_unknown_role() -> None:
    """``StateMachine.fresh(role)`` (one call per stream on the engines' hot paths) is
    ``cls(role)``: the role's initial state and tables; an unknown role is refused alike."""
    for role in ConnectionMachine.ROLES:
        made, fresh = ConnectionMachine(role), ConnectionMachine.fresh(role)
        assert type(fresh) is ConnectionMachine
        assert (fresh.role, fresh.state) == (made.role, made.state)
        assert fresh._send is made._send and fresh._receive is made._receive
    with pytest.raises(ValueError, match="unknown role"):
        ConnectionMachine.fresh("observer")
