"""RabbitMQ stream client engine: handshake, tune, close, heartbeat, correlation.

Each test is named after the rule it proves; the docstring quotes the passage
(PROTOCOL.adoc unless marked 3.10.8, the broker's behaviour where the text is silent).
"""

from __future__ import annotations

import pytest

from wirestream.generated.rabbitmq_stream.v1 import (
    CloseRequest,
    CloseResponse,
    ConsumerUpdateRequest,
    CreateResponse,
    DeclarePublisherResponse,
    Heartbeat,
    MetadataUpdate,
    OpenRequest,
    OpenResponse,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    PublishConfirm,
    ResponseCode,
    RouteResponse,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    Tune,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import ConnectionState
from wirestream.runtime.errors import FrameTooLarge, IllegalSend, UnexpectedFrame
from wirestream.runtime.rabbitmq_stream import (
    AuthenticationError,
    ClientConnection,
    BrokerConnectionClosed,
    ConnectionFailed,
    ConnectionOpened,
    ConnectionTimedOut,
    MechanismNotOffered,
    MismatchedResponse,
    PublishAbandoned,
    RequestFailed,
    ResponseError,
    RouteReceived,
    SaslChallenge,
    StreamCreated,
    UnknownCorrelationId,
    VirtualHostAccessFailure,
    negotiate,
)
from tests.support.engine_pair import shuttle
from tests.support.rabbitmq_stream_test_broker import TestBroker, open_pair, with_stream


def _handshake_frames(broker: TestBroker) -> list[type]:
    return [type(frame) for frame in broker.frames]


# --- handshake -----------------------------------------------------------------------------


def test_handshake_order() -> None:
    """Authentication: 'Once a client is connected to the server, it initiates an
    authentication sequence': Peer Properties Exchange, SASL Handshake, SASL
    Authenticate, Tune (server, then client), Open."""
    client, broker = open_pair()
    assert _handshake_frames(broker) == [
        PeerPropertiesRequest, SaslHandshakeRequest, SaslAuthenticateRequest, Tune, OpenRequest,
    ]  # fmt: skip
    assert client.state is ConnectionState.OPEN and client.is_open


def test_peer_properties_carry_product_version_platform() -> None:
    """PeerProperties: 'PeerPropertiesRequest => Key Version PeerProperties' (the client
    tells who it is; brokers show product, version, platform in the management UI)."""
    client, broker = open_pair(client_properties={"connection_name": "c1"})
    request = broker.frames[0]
    props = {p.key: p.value for p in request.peer_properties}
    assert props["product"] == "wirestream" and props["connection_name"] == "c1"
    assert "version" in props and props["platform"].startswith("Python")
    assert client.server_properties["product"] == "TestBroker"


def test_sasl_plain_response_is_nul_user_nul_password() -> None:
    """SaslAuthenticate: 'SaslAuthenticateRequest => Key Version CorrelationId Mechanism
    SaslOpaqueData'; PLAIN (RFC 4616) is '\\0user\\0password'."""
    client, broker = open_pair(
        TestBroker(users={"alice": "s3cret"}), username="alice", password="s3cret"
    )
    auth = broker.frames[2]
    assert auth.mechanism == "PLAIN" and auth.sasl_opaque_data == b"\0alice\0s3cret"


def test_sasl_external_sends_empty_response() -> None:
    """SaslAuthenticate with EXTERNAL: the identity is the TLS client certificate's, so
    the opaque data is empty."""
    client, broker = open_pair(TestBroker(mechanisms=("PLAIN", "EXTERNAL")), mechanism="EXTERNAL")
    auth = broker.frames[2]
    assert auth.mechanism == "EXTERNAL" and auth.sasl_opaque_data == b""


def test_mechanism_picked_from_server_list_or_refused_locally() -> None:
    """Authentication: 'SaslHandshake: the client asks about the SASL mechanisms the
    server supports. It can then pick one from the list the server returns.'"""
    client = ClientConnection(mechanism="EXTERNAL")
    broker = TestBroker(mechanisms=("PLAIN", "AMQPLAIN"))
    client.initiate_connection()
    events, _ = shuttle(client, broker)
    (failed,) = events
    assert isinstance(failed, ConnectionFailed) and failed.step == "sasl_handshake"
    assert isinstance(failed.error, MechanismNotOffered)
    assert client.state is ConnectionState.CLOSED
    assert SaslAuthenticateRequest not in _handshake_frames(broker)


def test_sasl_challenge_answered_with_same_mechanism() -> None:
    """Authentication: 'SaslAuthenticate: the client answers to the server's
    challenge(s), using the SASL mechanism it picked.'"""
    client = ClientConnection()
    broker = TestBroker(challenge=b"nonce")
    client.initiate_connection()
    events, _ = shuttle(client, broker)
    assert events == [SaslChallenge("PLAIN", b"nonce")]
    assert client.state is ConnectionState.SASL_CHALLENGED
    client.answer_sasl_challenge(b"\0guest\0guest")
    events, _ = shuttle(client, broker)
    assert isinstance(events[-1], ConnectionOpened)
    auths = [f for f in broker.frames if isinstance(f, SaslAuthenticateRequest)]
    assert [a.mechanism for a in auths] == ["PLAIN", "PLAIN"]


def test_authentication_failure_ends_connection() -> None:
    """3.10.8: authentication failures (codes 7, 8, 9, 11) are answered, then the
    broker closes the socket; the error is typed (``AuthenticationError``)."""
    client = ClientConnection(password="wrong")
    broker = TestBroker()
    client.initiate_connection()
    events, _ = shuttle(client, broker)
    (failed,) = events
    assert isinstance(failed, ConnectionFailed) and failed.step == "sasl_authenticate"
    assert isinstance(failed.error, AuthenticationError)
    assert failed.error.code == ResponseCode.AUTHENTICATION_FAILURE
    assert failed.error.name == "AUTHENTICATION_FAILURE"
    assert client.state is ConnectionState.CLOSED
    with pytest.raises(IllegalSend):
        client.create_stream("s")


@pytest.mark.parametrize(
    "server, client_wants, agreed",
    [(1_048_576, 131_072, 131_072), (131_072, 1_048_576, 131_072), (0, 4096, 4096),
     (4096, 0, 4096), (0, 0, 0)],
)  # fmt: skip
def test_tune_answer_is_min_with_zero_as_unlimited(server: int, client_wants: int,
                                                    agreed: int) -> None:  # fmt: skip
    """Tune: 'The client answers with a Tune frame with the settings he agrees on,
    possibly adjusted from the server's suggestions'; 'FrameMax => uint32 // in bytes,
    0 means no limit', 'Heartbeat => uint32 // in seconds, 0 means no heartbeat'."""
    assert negotiate(server, client_wants) == agreed
    broker = TestBroker(frame_max=server, heartbeat=server)
    client, _ = open_pair(broker, frame_max=client_wants, heartbeat=client_wants)
    assert broker.tuned == Tune(agreed, agreed)
    assert (client.frame_max, client.heartbeat) == (agreed, agreed)


def test_open_ok_gives_advertised_host_port() -> None:
    """Open: 'OpenResponse => Key Version CorrelationId ResponseCode
    ConnectionProperties' (advertised_host, advertised_port)."""
    client = ClientConnection()
    client.initiate_connection()
    events, _ = shuttle(client, TestBroker())
    (opened,) = events
    assert isinstance(opened, ConnectionOpened)
    assert opened.connection_properties == {"advertised_host": "localhost",
                                            "advertised_port": "5552"}  # fmt: skip
    assert opened.frame_max == 1_048_576 and opened.heartbeat == 60


def test_open_vhost_refused_ends_connection() -> None:
    """Authentication: 'Open: ... The server answers whether it accepts the access or
    not.' (3.10.8: 12 virtual host access failure, then the socket is closed)."""
    client = ClientConnection(virtual_host="/other")
    client.initiate_connection()
    events, _ = shuttle(client, TestBroker())
    (failed,) = events
    assert isinstance(failed, ConnectionFailed) and failed.step == "open"
    assert isinstance(failed.error, VirtualHostAccessFailure)
    assert client.state is ConnectionState.CLOSED


def test_open_refusal_without_properties_from_3_10_8() -> None:
    """3.10.8 answers a refused Open with <<1:1, 21:15, 1:16, Corr:32, 12:16>>: no
    ConnectionProperties array, shorter than 'OpenResponse => Key Version
    CorrelationId ResponseCode ConnectionProperties'. It is still a refusal, not a
    malformed frame."""
    client = ClientConnection(virtual_host="/other")
    broker = TestBroker()
    client.initiate_connection()
    broker.on_open = lambda frame: broker.send_raw(  # type: ignore[method-assign]
        (10).to_bytes(4, "big") + b"\x80\x15\x00\x01" + frame.correlation_id.to_bytes(4, "big")
        + b"\x00\x0c"
    )  # fmt: skip
    events, _ = shuttle(client, broker)
    (failed,) = events
    assert isinstance(failed, ConnectionFailed) and isinstance(
        failed.error, VirtualHostAccessFailure
    )


def test_no_command_before_open() -> None:
    """Authentication: the handshake steps come first, in order (3.10.8 closes the
    socket on any other frame: 'invalid_transition')."""
    client = ClientConnection()
    with pytest.raises(IllegalSend, match="handshake comes first"):
        client.create_stream("s")
    client.initiate_connection()
    with pytest.raises(IllegalSend):
        client.declare_publisher(0, "s")
    assert client.data_to_send()  # only the PeerPropertiesRequest


def test_no_heartbeat_before_open() -> None:
    """3.10.8: a Heartbeat during the handshake does not advance the connection step,
    so the broker closes the socket: the client never sends one before open."""
    client = ClientConnection()
    client.initiate_connection()
    assert client.get_timer() is None
    assert client.handle_timer(1000.0) == []
    client.data_to_send()
    assert client.handle_timer(5000.0) == [] and client.data_to_send() == b""


def test_heartbeat_from_broker_ignored_during_handshake() -> None:
    """Heartbeat: 'From Client & Server', no response; nothing to do with one during the
    handshake (the table ignores it)."""
    client = ClientConnection()
    client.initiate_connection()
    assert client.receive_data(frame_bytes(Heartbeat())) == []
    assert client.ignored_frames == 1 and client.state is ConnectionState.PEER_PROPERTIES_SENT


def test_broker_frame_out_of_handshake_order_is_protocol_error() -> None:
    """Authentication: the broker answers each step in order; a Tune before the
    authentication is a violation (UnexpectedFrame), and the connection closes."""
    client = ClientConnection()
    client.initiate_connection()
    client.data_to_send()
    with pytest.raises(UnexpectedFrame) as info:
        client.receive_data(frame_bytes(Tune(1024, 10)))
    assert client.state is ConnectionState.CLOSED
    assert isinstance(info.value.events[-1], BrokerConnectionClosed)  # type: ignore[attr-defined]


def test_handshake_command_after_open_refused_locally() -> None:
    """3.10.8: a handshake command on an open connection is an unknown frame (the
    broker closes with CloseRequest 13): the client's table refuses to send it."""
    client, _ = open_pair()
    with pytest.raises(IllegalSend, match="handshake is over"):
        client.initiate_connection()
    with pytest.raises(UnexpectedFrame, match="handshake frame on an open connection"):
        client.receive_data(frame_bytes(Tune(1024, 10)))


# --- close ---------------------------------------------------------------------------------


def test_close_request_answered_with_close_response() -> None:
    """Commands: 'Close' From 'Client & Server', Expects response? 'Yes';
    'CloseResponse => Key Version CorrelationId ResponseCode'."""
    client, broker = open_pair()
    assert not client.closed
    assert client.close(ResponseCode.OK, "done") == []
    assert client.closed and client.state is ConnectionState.CLOSE_SENT
    cid = client.close_correlation_id
    events, _ = shuttle(client, broker)
    assert events == [BrokerConnectionClosed(ResponseCode.OK, "done", by_peer=False)]
    assert broker.frames[-1] == CloseRequest(cid, ResponseCode.OK, "done")
    assert client.state is ConnectionState.CLOSED and client.closed


def test_close_ends_what_its_request_leaves_unanswered() -> None:
    """After our CloseRequest the broker's frames are dropped (close_sent rows) but its
    CloseResponse: ``close()`` fails outstanding requests and abandons unconfirmed
    messages at once (the engine contract: close returns what it ended); the
    CloseResponse still ends the connection."""
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    client.publish(0, [b"a", b"b"])
    cid = client.create_stream("t")
    events = client.close()
    assert events == [RequestFailed(cid, "CreateRequest", None),
                      PublishAbandoned(0, (1, 2), "connection closed")]  # fmt: skip
    assert client.outstanding_requests == {client.close_correlation_id: "CloseRequest"}
    events, _ = shuttle(client, broker)
    assert events == [BrokerConnectionClosed(ResponseCode.OK, "", by_peer=False)]


def test_server_close_answered_with_its_correlation_id() -> None:
    """Close from the server: the client answers CloseResponse with the broker's own
    correlation id (3.10.8 sends ``{request, 1, {close, 13, <<"unknown frame">>}}``)."""
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    client.publish(0, [b"x"])
    client.data_to_send()  # lost: the broker closes first
    broker.close(ResponseCode.UNKNOWN_FRAME, "unknown frame")
    events = client.receive_data(broker.data_to_send())
    assert events == [PublishAbandoned(0, (1,), "connection closed"),
                      BrokerConnectionClosed(ResponseCode.UNKNOWN_FRAME, "unknown frame", by_peer=True)]  # fmt: skip
    broker.receive_data(client.data_to_send())
    assert broker.frames[-1] == CloseResponse(1, ResponseCode.OK)
    assert broker.connection.state is ConnectionState.CLOSED
    with pytest.raises(IllegalSend, match="connection is closed"):
        client.create_stream("t")


def test_frames_after_own_close_request_ignored() -> None:
    """After its CloseRequest the client only waits for CloseResponse: frames the broker
    wrote before it read the CloseRequest are dropped (the table's close_sent rows)."""
    client, broker = open_pair()
    client.close()
    late = frame_bytes(MetadataUpdate(ResponseCode.STREAM_NOT_AVAILABLE, "s"))
    assert client.receive_data(late) == []
    assert client.ignored_frames == 1
    with pytest.raises(IllegalSend, match="closing"):
        client.create_stream("s")
    events, _ = shuttle(client, broker)
    assert isinstance(events[-1], BrokerConnectionClosed)


def test_crossing_close_requests_both_answered() -> None:
    """Both sides send CloseRequest at once: each answers the other's (the table moves
    close_sent -> close_received on the peer's CloseRequest)."""
    client, broker = open_pair()
    client.close()
    broker.close()
    out_client, out_broker = client.data_to_send(), broker.data_to_send()
    events = client.receive_data(out_broker)
    broker.receive_data(out_client)
    assert isinstance(events[-1], BrokerConnectionClosed) and events[-1].by_peer
    assert isinstance(broker.frames[-1], CloseRequest)
    assert client.receive_data(broker.data_to_send()) == []  # the broker's answer, late
    broker.receive_data(client.data_to_send())
    assert broker.frames[-1] == CloseResponse(1, ResponseCode.OK)
    assert client.state is broker.connection.state is ConnectionState.CLOSED


def test_eof_fails_everything_outstanding() -> None:
    """EOF (b""): every outstanding request fails, unconfirmed publishing ids are
    abandoned, and the connection is closed."""
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    client.publish(0, [b"a", b"b"])
    cid = client.create_stream("t")
    events = client.receive_data(b"")
    assert events == [RequestFailed(cid, "CreateRequest", None),
                      PublishAbandoned(0, (1, 2), "connection closed"),
                      BrokerConnectionClosed(None, "transport closed", by_peer=True)]  # fmt: skip
    assert client.receive_data(b"") == []


def test_data_after_close_ignored() -> None:
    """After the connection is closed nothing from the broker matters."""
    client, _ = open_pair()
    client.receive_data(b"")
    assert client.receive_data(b"\x00\x00\x00\x04garbage") == []


# --- heartbeat -----------------------------------------------------------------------------


def _open_with_heartbeat(seconds: int) -> tuple[ClientConnection, TestBroker]:
    return open_pair(TestBroker(heartbeat=seconds), heartbeat=seconds)


def test_heartbeat_sent_when_idle() -> None:
    """Heartbeat: 'From Client & Server', no response; interval from Tune. The client
    checks every half interval and sends a Heartbeat when it sent nothing during a
    whole check period (3.10.8's rabbit_heartbeat does the same)."""
    client, broker = _open_with_heartbeat(10)
    assert client.get_timer() == 0.0  # start the schedule
    client.handle_timer(100.0)
    assert client.get_timer() == 105.0
    assert client.handle_timer(104.0) == [] and client.data_to_send() == b""
    client.handle_timer(105.0)
    broker.receive_data(client.data_to_send())
    assert isinstance(broker.frames[-1], Heartbeat)


def test_no_heartbeat_when_traffic_flows() -> None:
    """A Heartbeat is only for idle connections: other frames count as life."""
    client, broker = _open_with_heartbeat(10)
    client.handle_timer(100.0)
    client.create_stream("x")
    client.handle_timer(105.0)
    broker.receive_data(client.data_to_send())
    assert not isinstance(broker.frames[-1], Heartbeat)


def test_peer_dead_after_two_intervals_silence() -> None:
    """Broker silent for 2 heartbeat intervals -> dead (3.10.8 itself gives up on a
    client after two silent heartbeat-long checks)."""
    client, broker = _open_with_heartbeat(10)
    client.declare_publisher(0, "s")
    client.handle_timer(0.0)
    events: list[object] = []
    for now in (5.0, 10.0, 15.0):
        events += client.handle_timer(now)
    assert events == [] and client.is_open
    events = client.handle_timer(20.0)
    assert isinstance(events[0], RequestFailed) and events[-1] == ConnectionTimedOut(20.0)
    assert client.state is ConnectionState.CLOSED and client.get_timer() is None


def test_received_bytes_keep_the_broker_alive() -> None:
    """Any bytes from the broker (here its Heartbeats) reset the silence count."""
    client, broker = _open_with_heartbeat(10)
    client.handle_timer(0.0)
    for now in range(5, 100, 5):
        broker.heartbeat_now()
        client.receive_data(broker.data_to_send())
        assert client.handle_timer(float(now)) == []
    assert client.is_open


def test_heartbeat_zero_disables() -> None:
    """'Heartbeat => uint32 // in seconds, 0 means no heartbeat'."""
    client, _ = _open_with_heartbeat(0)
    assert client.heartbeat == 0 and client.get_timer() is None
    assert client.handle_timer(1e9) == [] and client.data_to_send() == b""


# --- correlation ---------------------------------------------------------------------------


def test_response_matched_by_correlation_id_not_order() -> None:
    """'CorrelationId => uint32 // correlation id to correlate the response': responses
    may come in any order."""
    client, broker = open_pair()
    first, second = client.create_stream("a"), client.create_stream("b")
    client.data_to_send()
    data = frame_bytes(CreateResponse(second, ResponseCode.OK)) + frame_bytes(
        CreateResponse(first, ResponseCode.STREAM_ALREADY_EXISTS)
    )
    events = client.receive_data(data)
    assert events[0] == StreamCreated(second, "b")
    assert isinstance(events[1], RequestFailed) and events[1].correlation_id == first
    assert events[1].error is not None and events[1].error.name == "STREAM_ALREADY_EXISTS"


def test_response_with_unknown_correlation_id_is_protocol_error() -> None:
    """Decision (the adoc is silent): the engine never forgets a request, so a response
    that answers none is the broker's violation: CloseRequest 13 ('unknown frame', what
    3.10.8 answers to frames it cannot place), connection closed, error raised."""
    client, _ = open_pair()
    pending = client.create_stream("a")
    client.data_to_send()
    with pytest.raises(UnknownCorrelationId) as info:
        client.receive_data(frame_bytes(CreateResponse(pending + 100, ResponseCode.OK)))
    events = info.value.events  # type: ignore[attr-defined]
    assert events[0] == RequestFailed(pending, "CreateRequest", None)
    assert isinstance(events[-1], BrokerConnectionClosed)
    assert client.state is ConnectionState.CLOSED
    broker = TestBroker()
    broker.connection.state = ConnectionState.OPEN
    broker.receive_data(client.data_to_send())
    close = broker.frames[-1]
    assert isinstance(close, CloseRequest) and close.closing_code == ResponseCode.UNKNOWN_FRAME


def test_response_of_another_command_is_protocol_error() -> None:
    """'Keys are uint16, ... the most significant bit being used to make the difference
    between a request (0) and a response (1)': a response answers a request with the
    same key; another key under that correlation id is a violation."""
    client, _ = open_pair()
    cid = client.create_stream("a")
    with pytest.raises(MismatchedResponse):
        client.receive_data(frame_bytes(DeclarePublisherResponse(cid, ResponseCode.OK)))


def test_correlation_ids_unique_among_outstanding() -> None:
    """Correlation ids are uint32, allocated by the client: after wrapping around, ids
    still outstanding are skipped."""
    client, _ = open_pair()
    client._outbox.next_correlation_id = 0xFFFFFFFF
    last = client.create_stream("a")
    wrapped = [client.create_stream(name) for name in "bcd"]
    assert last == 0xFFFFFFFF and wrapped[0] == 1
    assert len(set(client.outstanding_requests)) == len(client.outstanding_requests)
    client._outbox.next_correlation_id = 1
    assert client.create_stream("e") not in (1, 2, 3, last)


def test_unknown_response_code_is_failure() -> None:
    """Response codes: only OK (0x01) is success; a code this client does not know
    is a failure all the same (``ResponseError`` named UNKNOWN_0x..)."""
    client, _ = open_pair()
    cid = client.create_stream("a")
    (event,) = client.receive_data(frame_bytes(CreateResponse(cid, 0x77)))
    assert isinstance(event, RequestFailed) and type(event.error) is ResponseError
    assert event.error.code == 0x77 and event.error.name == "UNKNOWN_0x0077"


def test_route_response_without_response_bit_matched_by_correlation() -> None:
    """3.10.8 answers Route WITHOUT the response bit (<<24:16, 1:16, ...>>); the codec
    reads key 0x0018 from the server as a RouteResponse, the engine matches it by
    correlation id."""
    client, _ = open_pair()
    cid = client.route("key", "super")
    raw = bytearray(frame_bytes(RouteResponse(cid, ResponseCode.OK, ["super-0"])))
    raw[4] &= 0x7F  # clear the response bit, as 3.10.8 does
    assert client.receive_data(bytes(raw)) == [RouteReceived(cid, ("super-0",))]


def test_decode_error_keeps_frames_before_it() -> None:
    """Nothing is lost: the frames decoded before a malformed one are handled first;
    their events travel on the raised error."""
    client, _ = open_pair()
    cid = client.create_stream("a")
    good = frame_bytes(CreateResponse(cid, ResponseCode.OK))
    bad = (4).to_bytes(4, "big") + b"\x7f\x7f\x00\x01"  # unknown key
    with pytest.raises(Exception) as info:
        client.receive_data(good + bad)
    assert info.value.events[0] == StreamCreated(cid, "a")  # type: ignore[attr-defined]
    assert client.state is ConnectionState.CLOSED


def test_frame_too_large_closes_with_code_14() -> None:
    """'Frame too large 0x0e': a frame over the decoder's limit is refused before it is
    buffered, and the close carries that code."""
    client, _ = open_pair(max_frame_size=1024)
    with pytest.raises(FrameTooLarge):
        client.receive_data((5000).to_bytes(4, "big") + b"\x00\x08\x00\x01")
    broker = TestBroker()
    broker.connection.state = ConnectionState.OPEN
    broker.receive_data(client.data_to_send())
    assert broker.frames[-1].closing_code == ResponseCode.FRAME_TOO_LARGE


def test_consumer_update_for_a_subscription_that_is_not_active_is_protocol_error() -> None:
    """ConsumerUpdate (single active consumer, 3.11+) follows the SubscribeResponse of a
    single-active-consumer subscription: one for an id nobody subscribed is a violation."""
    client, _ = open_pair()
    with pytest.raises(UnexpectedFrame, match="not active"):
        client.receive_data(frame_bytes(ConsumerUpdateRequest(7, 0, 1)))


def test_server_only_frames_are_never_sent_by_the_client() -> None:
    """Commands 'From' column: a server command (e.g. PublishConfirm) cannot come from
    the client; its decoder reads codes as the server's (sender='server')."""
    client, _ = open_pair()
    frame = PublishConfirm(0, [1])
    assert not client._connection.allows_send(frame)
    with pytest.raises(IllegalSend):
        client._outbox.send(frame)


def test_peer_properties_failure_ends_connection() -> None:
    """3.10.8: a failed handshake step is answered, then the socket is closed."""
    client = ClientConnection()
    client.initiate_connection()
    client.data_to_send()
    (failed,) = client.receive_data(
        frame_bytes(PeerPropertiesResponse(1, ResponseCode.INTERNAL_ERROR, []))
    )
    assert isinstance(failed, ConnectionFailed) and failed.step == "peer_properties"
    assert client.state is ConnectionState.CLOSED


def test_sasl_handshake_failure_ends_connection() -> None:
    """3.10.8: a failed handshake step is answered, then the socket is closed."""
    client = ClientConnection()
    client.initiate_connection()
    client.receive_data(frame_bytes(PeerPropertiesResponse(1, ResponseCode.OK, [])))
    (failed,) = client.receive_data(
        frame_bytes(SaslHandshakeResponse(2, ResponseCode.SASL_ERROR, []))
    )
    assert isinstance(failed, ConnectionFailed) and failed.step == "sasl_handshake"


def test_open_response_for_unknown_open_is_protocol_error() -> None:
    """An OpenResponse must answer the client's OpenRequest (by correlation id)."""
    client = ClientConnection()
    client.initiate_connection()
    broker = TestBroker()
    broker.on_open = lambda frame: broker.send(  # type: ignore[method-assign]
        OpenResponse(frame.correlation_id + 1, ResponseCode.OK, [])
    )
    with pytest.raises(UnknownCorrelationId):
        shuttle(client, broker)
