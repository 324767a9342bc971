"""wirestream.runtime.rsio: the hello handshake, extensions, goodbye and transport EOF.

Seeds 000/001 ("Protocol negotiation", "Closing the connection") of the Reactive
Streams network protocol draft; the rows of the `connection` machine in
idl/rsio/v0.yaml.
"""

from __future__ import annotations

import pytest

import wirestream.generated.rsio.v0 as rsio
from wirestream.runtime.errors import IllegalSend, UnexpectedFrame, UnknownFrameType
from wirestream.runtime.rsio import (
    RsioConnectionClosed,
    GoodbyeReceived,
    HelloReceived,
    RsioConnection,
    SubscribeReceived,
    SubscriptionCancelled,
    SubscriptionFailed,
    TransportClosed,
    UnsupportedVersion,
)
from wirestream.generated.rsio.v0.machines import ConnectionState
from tests.support.engine_pair import shuttle

ENCODINGS = ["binary", "msgpack"]


def connected(encoding: str = "binary") -> tuple[RsioConnection, RsioConnection]:
    client = RsioConnection("client", encoding=encoding)  # type: ignore[arg-type]
    server = RsioConnection("server", encoding=encoding)  # type: ignore[arg-type]
    client.initiate_connection()
    shuttle(client, server)
    assert client.state is server.state is ConnectionState.OPEN
    return client, server


def frames(data: bytes, encoding: str = "binary") -> list[rsio.Frame]:
    if encoding == "msgpack":
        return rsio.MsgpackStreamDecoder().feed(data)
    return rsio.StreamDecoder().feed(data)


def wire(frame: rsio.Frame, encoding: str = "binary") -> bytes:
    return rsio.encode_msgpack(frame) if encoding == "msgpack" else rsio.encode(frame)


def test_hello_sends_version_0() -> None:
    """'The protocol version is currently version 0.' (Protocol negotiation)"""
    client = RsioConnection("client", extensions=[7])
    client.initiate_connection()
    assert frames(client.data_to_send()) == [rsio.ClientHello(0, [7])]
    server = RsioConnection("server")
    server.initiate_connection()
    assert frames(server.data_to_send()) == [rsio.ServerHello(0, [])]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_server_hello_may_precede_client_hello(encoding: str) -> None:
    """'This is a "loose" handshake because the server doesn't have to wait for the
    clientHello before sending its serverHello.'"""
    client = RsioConnection("client", encoding=encoding)  # type: ignore[arg-type]
    server = RsioConnection("server", encoding=encoding)  # type: ignore[arg-type]
    server.initiate_connection()  # the server speaks first
    events_client, events_server = shuttle(client, server)
    assert events_client == [HelloReceived(0, ())]
    assert events_server == [HelloReceived(0, ())]  # the client answered
    assert client.state is server.state is ConnectionState.OPEN


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_client_may_send_before_server_hello(encoding: str) -> None:
    """'The client can optimistically send more messages after the clientHello without
    waiting for the serverHello.'"""
    client = RsioConnection("client", encoding=encoding)  # type: ignore[arg-type]
    server = RsioConnection("server", encoding=encoding)  # type: ignore[arg-type]
    client.initiate_connection()
    sid = client.subscribe("quotes", initial_demand=3)  # before any serverHello
    events = server.receive_data(client.data_to_send())
    assert events == [HelloReceived(0, ()), SubscribeReceived(sid, "quotes", 3)]
    assert frames(server.data_to_send(), encoding) == [rsio.ServerHello(0, [])]  # answered


@pytest.mark.parametrize("role", ["client", "server"])
def test_unsupported_hello_version_sends_goodbye_then_closes(role: str) -> None:
    """'If either side receives a hello message with a version it doesn't support, it
    MUST send a goodbye message (defined below) and close the connection.'"""
    engine = RsioConnection(role)  # type: ignore[arg-type]
    hello = rsio.ClientHello(1, []) if role == "server" else rsio.ServerHello(1, [])
    (closed,) = engine.receive_data(rsio.encode(hello))
    assert isinstance(closed, RsioConnectionClosed)
    assert isinstance(closed.cause, UnsupportedVersion)
    sent = frames(engine.data_to_send())
    assert len(sent) == 1 and isinstance(sent[0], rsio.Goodbye)
    assert "version 1" in sent[0].reason
    assert engine.closed  # closed without waiting for an acknowledgement
    assert engine.state is ConnectionState.CLOSED
    assert engine.receive_data(rsio.encode(rsio.Goodbye("late"))) == []


def test_version_mismatch_fails_optimistic_subscriptions() -> None:
    """'If it eventually receieves a serverHello with a different protocol version, it
    must consider that its messages were discarded.'"""
    client = RsioConnection("client")
    client.initiate_connection()
    first = client.subscribe("a")
    second = client.subscribe("b", initial_demand=5)
    client.data_to_send()
    events = client.receive_data(rsio.encode(rsio.ServerHello(1, [])))
    failed = [e for e in events if isinstance(e, SubscriptionFailed)]
    assert {e.subscriber for e in failed} == {first, second}
    assert all(isinstance(e.cause, UnsupportedVersion) for e in failed)
    assert [type(f) for f in frames(client.data_to_send())] == [rsio.Goodbye]


def test_first_message_must_be_hello() -> None:
    """'--> clientHello(...)' / '<-- serverHello(...)': each side's first message is its
    hello (decision: anything else first is a connection error, answered by goodbye)."""
    server = RsioConnection("server")
    with pytest.raises(UnexpectedFrame):
        server.receive_data(rsio.encode(rsio.Subscribe("x", 1, 0)))
    assert [type(f) for f in frames(server.data_to_send())] == [rsio.Goodbye]
    client = RsioConnection("client")
    client.initiate_connection()
    client.data_to_send()
    with pytest.raises(UnexpectedFrame):
        client.receive_data(rsio.encode(rsio.Subscribed(0, 0)))


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_second_hello_is_protocol_error(encoding: str) -> None:
    """A hello is sent once ('--> clientHello' / '<-- serverHello' open the connection)."""
    client, server = connected(encoding)
    with pytest.raises(UnexpectedFrame):
        server.receive_data(wire(rsio.ClientHello(0, []), encoding))
    with pytest.raises(IllegalSend):
        client.initiate_connection()


def test_server_sends_no_data_before_client_hello() -> None:
    """Only 'The client can optimistically send more messages' before the peer's hello
    (decision: a v0 server may send its hello first, but nothing else)."""
    server = RsioConnection("server")
    server.initiate_connection()
    with pytest.raises(IllegalSend):
        server.subscribe("x")


def test_client_sends_its_hello_before_anything_else() -> None:
    """The client's first message is its clientHello ('--> clientHello(...)')."""
    client = RsioConnection("client")
    with pytest.raises(IllegalSend):
        client.subscribe("x")
    assert client.data_to_send() == b""


def test_extension_message_not_sent_before_peer_hello_lists_it() -> None:
    """'If an extension defines a new message type not described in this specification,
    that message MUST NOT be sent before receiving a hello from the other side confirming
    that it supports that extension.'  We define no extension messages: the usable set
    is unknown before the peer's hello and then the intersection of both lists; an
    unknown message type from the peer cannot be skipped (no frame length) and ends the
    connection with goodbye."""
    client = RsioConnection("client", extensions=[1, 2])
    server = RsioConnection("server", extensions=[2, 3])
    client.initiate_connection()
    assert client.negotiated_extensions is None
    shuttle(client, server)
    assert client.negotiated_extensions == server.negotiated_extensions == frozenset({2})
    with pytest.raises(UnknownFrameType):
        server.receive_data(bytes([14]))
    assert [type(f) for f in frames(server.data_to_send())] == [rsio.Goodbye]


def test_semantic_extension_negotiation_not_implemented_is_documented() -> None:
    """'If an extension changes the semantics of message types ..., the modified
    behavior MUST be negotiated ...'  No such extension exists in v0: whatever the
    hellos list, the engine's behaviour does not change (both sides still speak plain
    v0 after listing the same extension)."""
    client = RsioConnection("client", extensions=[5])
    server = RsioConnection("server", extensions=[5])
    client.initiate_connection()
    shuttle(client, server)
    sid = client.subscribe("p", initial_demand=1)
    shuttle(client, server)
    server.accept(sid)
    server.send_next(sid, b"x")
    assert [type(f) for f in frames(server.data_to_send())] == [rsio.Subscribed, rsio.OnNext]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_goodbye_initiator_waits_for_goodbye_ack_then_closes(encoding: str) -> None:
    """'The orderly way of closing a connection is to send a goodbye message, wait for
    acknowledgement and then close the underlying connection'"""
    client, server = connected(encoding)
    client.close("done")
    assert client.state is ConnectionState.GOODBYE_SENT and not client.closed
    events_server = server.receive_data(client.data_to_send())
    assert events_server == [GoodbyeReceived("done"), RsioConnectionClosed("done")]
    assert server.closed
    events_client = client.receive_data(server.data_to_send())
    assert isinstance(events_client[-1], RsioConnectionClosed)
    assert client.closed and client.state is ConnectionState.CLOSED


def test_goodbye_received_is_answered_with_goodbye() -> None:
    """'--> goodbye(reason: String)' / '<-- goodbye(reason: String)': the peer's goodbye is
    acknowledged with ours."""
    client, server = connected()
    server.receive_data(rsio.encode(rsio.Goodbye("bye")))
    assert frames(server.data_to_send()) == [rsio.Goodbye("bye")]


def test_crossing_goodbyes_acknowledge_each_other() -> None:
    """Both sides send goodbye at once: each is the other's acknowledgement (decision)."""
    client, server = connected()
    client.close("a")
    server.close("b")
    shuttle(client, server)
    assert client.state is server.state is ConnectionState.CLOSED


def test_goodbye_closes_streams_as_cancel_or_onerror() -> None:
    """'Sending goodbye implicitly closes all open streams, equivalently to receiving
    cancel or onError messages.'"""
    client, server = connected()
    ours = client.subscribe("up", initial_demand=1)  # client subscribes to the server
    shuttle(client, server)
    theirs = server.subscribe("down")  # and the server to the client
    shuttle(client, server)
    ended = client.close("maintenance")
    assert ended == [
        SubscriptionFailed(ours, "goodbye sent: maintenance"),
        SubscriptionCancelled(theirs, "goodbye sent: maintenance"),
    ]
    received = server.receive_data(client.data_to_send())
    assert SubscriptionCancelled(ours, "goodbye received: maintenance") in received
    assert SubscriptionFailed(theirs, "goodbye received: maintenance") in received


def test_no_stream_messages_after_goodbye() -> None:
    """'Sending goodbye implicitly closes all open streams': nothing more is sent."""
    client, server = connected()
    client.close()
    with pytest.raises(IllegalSend):
        client.subscribe("x")


def test_stream_messages_received_after_goodbye_sent_are_ignored() -> None:
    """What the peer sent before it saw our goodbye was in flight ('Sending goodbye
    implicitly closes all open streams'): dropped, not an error."""
    client, server = connected()
    sid = client.subscribe("x", initial_demand=1)
    shuttle(client, server)
    server.accept(sid)
    server.send_next(sid, b"late")
    client.close()
    assert client.receive_data(server.data_to_send()) == []
    assert client.ignored_messages == 2


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_transport_eof_terminates_all_subscriptions(encoding: str) -> None:
    """'When the underlying transport is closed, both sides should release all related
    resources.'"""
    client, server = connected(encoding)
    ours = client.subscribe("up")
    shuttle(client, server)
    events = server.receive_data(b"")
    assert [type(e) for e in events] == [SubscriptionCancelled, RsioConnectionClosed]
    assert events[0].subscriber == ours  # type: ignore[union-attr]
    assert isinstance(events[1].cause, TransportClosed)  # type: ignore[union-attr]
    events = client.receive_data(b"")
    assert [type(e) for e in events] == [SubscriptionFailed, RsioConnectionClosed]
    assert server.closed and client.closed
    assert server.publication_state(ours).value == "idle"


def test_decode_error_keeps_frames_decoded_before_it() -> None:
    """Nothing is lost: messages decoded before malformed bytes are handled (their events
    come with the error) before the connection is closed."""
    client, server = connected()
    data = rsio.encode(rsio.Subscribe("p", 4, 2)) + bytes([0])  # then reserved type 0
    with pytest.raises(UnknownFrameType) as caught:
        server.receive_data(data)
    events = caught.value.events
    assert events[0] == SubscribeReceived(4, "p", 2)
    assert isinstance(events[1], SubscriptionCancelled) and events[1].subscriber == 4
    assert isinstance(events[-1], RsioConnectionClosed)
