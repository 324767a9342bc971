"""The generated MQTT 5.0 codec and machines (idl/mqtt/v5.yaml) against a real mosquitto 2.0.11.

Every session here is driven only by ``wirestream.generated.mqtt.v5`` and its machines,
through tests/support/mqtt_support.py: a frame we send passes ``ConnectionMachine`` (and one
``PublishQos2Machine`` per QoS 2 packet identifier) before ``encode()``; what mosquitto
sends is cut from the stream by ``StreamDecoder``, each packet's bytes checked with
``encode(decode(raw)) == raw``, then passed through the same machines.

Tests marked ``server`` need mosquitto (the ``mosquitto_server`` fixture starts it:
127.0.0.1:18830 with a login, 18831 anonymous). The others are plain codec and machine
tests: out-of-order packets refused by the machines, malformed packets refused by the
codec. Test names carry the conformance statement they prove ([MQTT-x.y.z-n] of the
OASIS standard), tests/spec_rules/mqtt.md maps each statement to its tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.mqtt_support import ConnectionClosed, FrameCutter, Peer, vbi
from tests.support.servers import MQTT_ANON_PORT, MQTT_PASSWORD, MQTT_USER, Server
from wirestream.generated.mqtt.v5 import (
    AssignedClientIdentifier,
    Connack,
    Connect,
    ContentType,
    CorrelationData,
    Disconnect,
    MessageExpiryInterval,
    PayloadFormatIndicator,
    Pingreq,
    Pingresp,
    Puback,
    Pubcomp,
    Publish,
    Pubrec,
    Pubrel,
    QoS,
    ReasonCode,
    ReasonString,
    ReceiveMaximum,
    RequestProblemInformation,
    RequestResponseInformation,
    ResponseTopic,
    RetainHandling,
    SessionExpiryInterval,
    Suback,
    Subscribe,
    Subscription,
    SubscriptionIdentifier,
    TopicAlias,
    TopicAliasMaximum,
    Unsuback,
    Unsubscribe,
    UserProperty,
    WillDelayInterval,
    decode,
    encode,
)
from wirestream.generated.mqtt.v5 import strategies as mqtt_strategies
from wirestream.generated.mqtt.v5.machines import (
    ConnectionMachine,
    ConnectionState,
    PublishQos2Machine,
    PublishQos2State,
)
from wirestream.runtime.errors import (
    DecodeError,
    EncodeError,
    IllegalSend,
    InvalidString,
    InvalidValue,
    NonCanonical,
    RuleViolation,
    Truncated,
    UnexpectedFrame,
    UnknownFrameType,
)

server = pytest.mark.server

# mosquitto 2.0.11 answers every CONNECT on these listeners with these properties (its
# defaults: max_inflight_messages 20, max_topic_alias 10)
MOSQUITTO_CONNACK = [TopicAliasMaximum(10), ReceiveMaximum(20)]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def topic_root() -> str:
    return f"ws/codec/{uuid.uuid4().hex[:12]}"


@contextmanager
def session(
    mosquitto: Server,
    port: int | None = None,
    login: bool = True,
    **connect: object,
) -> Iterator[tuple[Peer, Connack]]:
    """A client connection: CONNECT (clean start, keep alive 60, a fresh client id unless
    given, the login on the login listener), its CONNACK; DISCONNECT at the end."""
    fields: dict[str, object] = {"clean_start": True, "keep_alive": 60, "client_id": unique("ws")}
    if login and port is None:
        fields.update(username=MQTT_USER, password=MQTT_PASSWORD.encode())
    fields.update(connect)
    peer = Peer(mosquitto.connect(port=port), "client")
    try:
        peer.send(Connect(**fields))  # type: ignore[arg-type]
        connack = peer.expect(Connack)
        assert isinstance(connack, Connack)
        yield peer, connack
        if peer.connected:
            peer.send(Disconnect())
            peer.wait_closed()
    finally:
        peer.close()


def subscribe(peer: Peer, packet_id: int, *subscriptions: Subscription, **fields: object) -> Suback:
    peer.send(Subscribe(packet_id=packet_id, subscriptions=list(subscriptions), **fields))  # type: ignore[arg-type]
    suback = peer.expect(Suback)
    assert isinstance(suback, Suback)
    assert suback.packet_id == packet_id  # [MQTT-3.8.4-2]
    return suback


def publish(peer: Peer, frame: Publish) -> None:
    """``frame`` with its whole acknowledgement handshake at its QoS (as the sender)."""
    peer.send(frame)
    if frame.qos == QoS.AT_LEAST_ONCE:
        puback = peer.expect(Puback)
        assert isinstance(puback, Puback) and puback.packet_id == frame.packet_id
        assert puback.reason_code in (None, ReasonCode.SUCCESS, ReasonCode.NO_MATCHING_SUBSCRIBERS)
    elif frame.qos == QoS.EXACTLY_ONCE:
        assert frame.packet_id is not None
        machine = peer.qos2_sending[frame.packet_id]
        assert machine.state is PublishQos2State.PUBLISHED
        pubrec = peer.expect(Pubrec)
        assert isinstance(pubrec, Pubrec) and pubrec.packet_id == frame.packet_id
        assert pubrec.reason_code in (None, ReasonCode.SUCCESS, ReasonCode.NO_MATCHING_SUBSCRIBERS)
        assert machine.state is PublishQos2State.ACKNOWLEDGED
        peer.send(Pubrel(packet_id=frame.packet_id))
        assert machine.state is PublishQos2State.RELEASED
        pubcomp = peer.expect(Pubcomp)
        assert isinstance(pubcomp, Pubcomp) and pubcomp.packet_id == frame.packet_id
        assert machine.state is PublishQos2State.COMPLETE
        assert frame.packet_id not in peer.qos2_sending  # a terminal machine is forgotten


def deliver(peer: Peer) -> Publish:
    """The next PUBLISH from the server, acknowledged at its QoS (as the receiver)."""
    frame = peer.expect(Publish)
    assert isinstance(frame, Publish)
    if frame.qos == QoS.AT_LEAST_ONCE:
        assert frame.packet_id is not None
        peer.send(Puback(packet_id=frame.packet_id))
    elif frame.qos == QoS.EXACTLY_ONCE:
        assert frame.packet_id is not None
        machine = peer.qos2_receiving[frame.packet_id]
        assert machine.state is PublishQos2State.RECEIVED
        peer.send(Pubrec(packet_id=frame.packet_id))
        assert machine.state is PublishQos2State.RECORDED
        pubrel = peer.expect(Pubrel)
        assert isinstance(pubrel, Pubrel) and pubrel.packet_id == frame.packet_id
        assert machine.state is PublishQos2State.RELEASING
        peer.send(Pubcomp(packet_id=frame.packet_id))
        assert machine.state is PublishQos2State.COMPLETE
        assert frame.packet_id not in peer.qos2_receiving
    return frame


def mosquitto_refusal(mosquitto: Server, raw: bytes) -> ReasonCode | None:
    """Send ``raw`` after a good CONNECT (past every machine: a broken client): the reason
    code of mosquitto's DISCONNECT, or None when it just closed. Fails if it accepts."""
    with session(mosquitto, MQTT_ANON_PORT) as (peer, _):
        peer.send_raw(raw)
        try:
            frame, _ = peer.receive_raw()  # nothing in TIMEOUT: accepted (and this fails)
        except ConnectionClosed:
            peer.connection = ConnectionMachine("client", ConnectionState.CLOSED)
            return None
        assert isinstance(frame, Disconnect), f"mosquitto accepted {raw.hex()}: {frame!r}"
        assert frame.reason_code is not None
        peer.connection.receive(frame)
        peer.wait_closed()
        return frame.reason_code


REFUSALS = (None, ReasonCode.MALFORMED_PACKET, ReasonCode.PROTOCOL_ERROR)


def refused(raw: bytes, error: type[DecodeError]) -> DecodeError:
    with pytest.raises(error) as raised:
        decode(raw)
    return raised.value


# --- CONNECT / CONNACK with mosquitto -------------------------------------------------------


@server
def test_mqtt_3_1_0_1_connect_with_login_and_properties(mosquitto_server: Server) -> None:
    """[MQTT-3.1.0-1] CONNECT first; user name and password; the client's properties;
    the CONNACK properties as mosquitto sends them ([MQTT-3.2.2-16]: an empty client id
    gets an Assigned Client Identifier; [MQTT-3.2.2-2]: clean start, no session)."""
    properties = [
        SessionExpiryInterval(30),
        ReceiveMaximum(10),
        TopicAliasMaximum(4),
        RequestProblemInformation(1),
        RequestResponseInformation(0),
        UserProperty("client", "wirestream"),
        UserProperty("client", "again"),  # a key may repeat
    ]
    with session(mosquitto_server, client_id="", properties=properties) as (peer, connack):
        connect = decode(peer.sent[0])
        assert isinstance(connect, Connect)
        assert (connect.username, connect.password) == (MQTT_USER, MQTT_PASSWORD.encode())
        assert connect.properties == properties
        assert peer.sent[0][:1] == b"\x10"  # type 1, reserved flags 0000
        assert connack.reason_code == ReasonCode.SUCCESS and not connack.session_present
        assert peer.connection.state is ConnectionState.CONNECTED
        assigned = [p for p in connack.properties if isinstance(p, AssignedClientIdentifier)]
        assert len(assigned) == 1 and assigned[0].value.startswith("auto-")
        assert connack.properties == [MOSQUITTO_CONNACK[0], assigned[0], MOSQUITTO_CONNACK[1]]
        assert peer.received[0][1][:1] == b"\x20"
    assert peer.connection.state is ConnectionState.CLOSED


@server
def test_mqtt_3_2_2_3_session_present_when_a_session_is_resumed(mosquitto_server: Server) -> None:
    """[MQTT-3.2.2-3] Clean Start 0 with Session State for the ClientID: Session Present 1;
    without: 0. The session outlives the connection by its Session Expiry Interval."""
    client_id = unique("ws-session")
    keep = [SessionExpiryInterval(60)]
    with session(mosquitto_server, client_id=client_id, properties=keep) as (_, first):
        assert not first.session_present and first.properties == MOSQUITTO_CONNACK
    end = [SessionExpiryInterval(0)]  # resumed once more, then gone with the connection
    with session(mosquitto_server, client_id=client_id, clean_start=False, properties=end) as (
        _,
        resumed,
    ):
        assert resumed.session_present and resumed.reason_code == ReasonCode.SUCCESS
    with session(mosquitto_server, client_id=client_id, clean_start=False) as (_, fresh):
        assert not fresh.session_present


@server
@pytest.mark.parametrize(
    "login",
    [
        {"username": MQTT_USER, "password": b"wrong"},
        {"username": "nobody", "password": MQTT_PASSWORD.encode()},
        {},
    ],
    ids=["wrong-password", "unknown-user", "anonymous"],
)
def test_mqtt_3_2_2_7_refused_login_connack_then_close(
    mosquitto_server: Server, login: dict[str, object]
) -> None:
    """[MQTT-3.2.2-7] A CONNACK with a Reason Code of 128 or greater, then the Server
    closes the Network Connection; [MQTT-3.2.2-6] Session Present is 0 with it. The
    client machine is closed by that CONNACK. mosquitto 2.0.11 answers a bad password
    (and an unknown user, and no login at all) with 0x87 Not authorized, not 0x86 Bad
    User Name or Password; paho's test (tests/mqtt/test_mqtt_paho.py) carries 0x86."""
    with session(mosquitto_server, login=False, **login) as (peer, connack):
        assert connack.reason_code == ReasonCode.NOT_AUTHORIZED  # 0x87, what 2.0.11 sends
        assert not connack.session_present
        assert peer.received[0][1] == bytes.fromhex("2003008700")
        assert peer.connection.state is ConnectionState.CLOSED
        peer.wait_closed()
        with pytest.raises(IllegalSend):
            peer.send(Pingreq())


@server
def test_mqtt_3_1_0_1_first_packet_must_be_connect(mosquitto_server: Server) -> None:
    """[MQTT-3.1.0-1] The first packet from the Client MUST be CONNECT: our client machine
    refuses to send anything else, and mosquitto drops a client that does."""
    peer = Peer(mosquitto_server.connect(port=MQTT_ANON_PORT), "client")
    try:
        publish_first = Publish(topic_name="ws/first", payload=b"x")
        with pytest.raises(IllegalSend) as refused_send:
            peer.send(publish_first)
        assert "[MQTT-3.1.0-1]" in str(refused_send.value.spec)
        assert peer.connection.state is ConnectionState.IDLE
        peer.send_raw(encode(publish_first))
        peer.wait_closed()
    finally:
        peer.close()


@server
def test_mqtt_3_1_0_2_second_connect_is_a_protocol_error(mosquitto_server: Server) -> None:
    """[MQTT-3.1.0-2] A second CONNECT is a Protocol Error and the Server closes the
    Network Connection: our machine refuses to send one; mosquitto closes on one."""
    with session(mosquitto_server, MQTT_ANON_PORT) as (peer, _):
        again = Connect(clean_start=True, client_id=unique("ws"))
        with pytest.raises(IllegalSend):
            peer.send(again)
        assert peer.connected
        peer.send_raw(encode(again))
        peer.wait_closed()
        peer.connection = ConnectionMachine("client", ConnectionState.CLOSED)


@server
def test_mqtt_3_1_4_6_client_may_send_before_connack(mosquitto_server: Server) -> None:
    """3.1.4 (non-normative, before [MQTT-3.1.4-6]): "Clients are allowed to send further
    MQTT Control Packets immediately after sending a CONNECT packet; Clients need not wait
    for a CONNACK packet to arrive from the Server." A SUBSCRIBE (No Local: our PUBLISH is
    not echoed), a QoS 1 PUBLISH and a PINGREQ go out in the same write as the CONNECT:
    the client machine lets each through while connecting, a server-role machine takes
    them before its CONNACK, and mosquitto answers all of them in order. (Only a Client
    that set an Authentication Method must wait [MQTT-3.1.2-30]: the machines do not tell
    it apart.)"""
    topic = f"{topic_root()}/early"
    connect = Connect(clean_start=True, keep_alive=60, client_id=unique("ws-pipe"))
    early = [
        Subscribe(packet_id=1, subscriptions=[Subscription(topic, no_local=True)]),
        Publish(qos=QoS.AT_LEAST_ONCE, packet_id=2, topic_name=topic, payload=b"early"),
        Pingreq(),
    ]
    broker = ConnectionMachine("server")  # the server's side of the same exchange
    peer = Peer(mosquitto_server.connect(port=MQTT_ANON_PORT), "client")
    try:
        for frame in (connect, *early):
            assert peer.connection.send(frame) is ConnectionState.CONNECTING
            assert broker.receive(frame) is ConnectionState.CONNECTING
        peer.send_raw(b"".join(encode(frame) for frame in (connect, *early)))
        answers = [peer.receive() for _ in range(4)]
        for answer in answers:
            broker.send(answer)
        assert peer.connection.state is broker.state is ConnectionState.CONNECTED
        peer.send(Disconnect())
        peer.wait_closed()
    finally:
        peer.close()
    assert [type(frame) for frame in answers] == [Connack, Suback, Puback, Pingresp]
    assert isinstance(answers[0], Connack) and answers[0].reason_code == ReasonCode.SUCCESS
    assert answers[1] == Suback(packet_id=1, reason_codes=[ReasonCode.SUCCESS])
    assert isinstance(answers[2], Puback) and answers[2].packet_id == 2


# --- SUBSCRIBE / SUBACK ------------------------------------------------------------------


@server
def test_mqtt_3_8_4_6_suback_has_a_reason_code_per_subscription(mosquitto_server: Server) -> None:
    """SUBSCRIBE with options (QoS, No Local, Retain As Published, Retain Handling), a
    Subscription Identifier and a User Property: [MQTT-3.8.4-2] the SUBACK has its Packet
    Identifier, [MQTT-3.8.4-6] a Reason Code per Topic Filter, [MQTT-3.9.3-1] in order,
    each the granted QoS [MQTT-3.8.4-7]; [MQTT-3.8.1-1] the fixed header is 0x82;
    [MQTT-3.3.4-3] a forwarded PUBLISH carries the Subscription Identifier."""
    root = topic_root()
    subscriptions = [
        Subscription(f"{root}/a", qos=QoS.AT_MOST_ONCE),
        Subscription(f"{root}/b/+", qos=QoS.AT_LEAST_ONCE, no_local=True),
        Subscription(
            f"{root}/c/#",
            qos=QoS.EXACTLY_ONCE,
            retain_as_published=True,
            retain_handling=RetainHandling.DO_NOT_SEND,
        ),
        Subscription(
            f"$share/ws/{root}/d", qos=QoS.AT_LEAST_ONCE, retain_handling=RetainHandling.SEND_IF_NEW
        ),
    ]
    properties = [SubscriptionIdentifier(268_435_455), UserProperty("why", "test")]
    with session(mosquitto_server) as (peer, _):
        suback = subscribe(peer, 0xFFFF, *subscriptions, properties=properties)
        assert peer.sent[1][:1] == b"\x82"
        sent = decode(peer.sent[1])
        assert isinstance(sent, Subscribe)
        assert sent.subscriptions == subscriptions and sent.properties == properties
        assert suback.reason_codes == [
            ReasonCode.SUCCESS,
            ReasonCode.GRANTED_QOS_1,
            ReasonCode.GRANTED_QOS_2,
            ReasonCode.GRANTED_QOS_1,
        ]
        assert suback.properties == []
        with session(mosquitto_server) as (publisher, _):
            publish(publisher, Publish(topic_name=f"{root}/c/deep/er", payload=b"id"))
        forwarded = deliver(peer)
        assert forwarded.topic_name == f"{root}/c/deep/er" and forwarded.payload == b"id"
        assert forwarded.properties == [SubscriptionIdentifier(268_435_455)]
        assert peer.sent[0][:1] == b"\x10" and peer.cutter.checked == len(peer.received)


# --- PUBLISH at each QoS -------------------------------------------------------------------


@server
@pytest.mark.parametrize("qos", list(QoS), ids=lambda qos: f"qos{int(qos)}")
def test_mqtt_4_3_publish_and_forward_with_every_handshake(
    mosquitto_server: Server, qos: QoS
) -> None:
    """4.3.1-4.3.3: our client publishes at ``qos`` (QoS 1: PUBACK; QoS 2: PUBREC, PUBREL,
    PUBCOMP, with a PublishQos2Machine as sender) and mosquitto forwards to our
    subscriber at the same QoS with the same handshake the other way (a PublishQos2Machine
    as receiver): [MQTT-4.3.2-4], [MQTT-4.3.3-4], [MQTT-4.3.3-8], [MQTT-4.3.3-11],
    [MQTT-2.2.1-5] every acknowledgement carries the PUBLISH's Packet Identifier;
    [MQTT-3.8.4-8] the QoS forwarded is the minimum of the message's and the granted one."""
    topic = f"{topic_root()}/q{int(qos)}"
    with session(mosquitto_server) as (subscriber, _), session(mosquitto_server) as (publisher, _):
        assert subscribe(subscriber, 7, Subscription(topic, qos=QoS.EXACTLY_ONCE)).reason_codes == [
            ReasonCode.GRANTED_QOS_2
        ]
        packet_id = None if qos == QoS.AT_MOST_ONCE else 0x1234
        frame = Publish(qos=qos, packet_id=packet_id, topic_name=topic, payload=b"\x00\xff" * 50)
        publish(publisher, frame)
        got = deliver(subscriber)
        assert (got.topic_name, got.payload, got.qos, got.retain, got.dup) == (
            topic,
            frame.payload,
            qos,
            False,
            False,
        )
        assert (got.packet_id is None) == (qos == QoS.AT_MOST_ONCE)  # [MQTT-2.2.1-2]
        assert subscriber.barrier() == []
        kinds = [type(f).__name__ for f, _ in subscriber.received]
        expected = {
            QoS.AT_MOST_ONCE: ["Connack", "Suback", "Publish", "Pingresp"],
            QoS.AT_LEAST_ONCE: ["Connack", "Suback", "Publish", "Pingresp"],
            QoS.EXACTLY_ONCE: ["Connack", "Suback", "Publish", "Pubrel", "Pingresp"],
        }
        assert kinds == expected[qos]
        assert publisher.sent[1][0] == 0x30 | (int(qos) << 1)


@server
def test_mqtt_3_8_4_8_qos_is_the_minimum_of_published_and_granted(
    mosquitto_server: Server,
) -> None:
    """[MQTT-3.8.4-8] QoS 2 published to a QoS 1 subscription arrives at QoS 1."""
    topic = f"{topic_root()}/min"
    with session(mosquitto_server) as (subscriber, _), session(mosquitto_server) as (publisher, _):
        subscribe(subscriber, 1, Subscription(topic, qos=QoS.AT_LEAST_ONCE))
        publish(publisher, Publish(qos=QoS.EXACTLY_ONCE, packet_id=9, topic_name=topic))
        assert deliver(subscriber).qos == QoS.AT_LEAST_ONCE


@server
def test_mqtt_3_3_2_publish_properties_forwarded_unaltered(mosquitto_server: Server) -> None:
    """PUBLISH with Payload Format Indicator, Message Expiry Interval, Content Type,
    Response Topic, Correlation Data and User Properties: [MQTT-3.3.2-4] (format
    indicator), [MQTT-3.3.2-15] (response topic), [MQTT-3.3.2-16] (correlation data),
    [MQTT-3.3.2-17]/[MQTT-3.3.2-18] (user properties unaltered, in order),
    [MQTT-3.3.2-20] (content type) unaltered; [MQTT-3.3.2-6] the expiry interval minus
    the time waited."""
    topic = f"{topic_root()}/props"
    sent = [
        UserProperty("z", "last first"),
        CorrelationData(bytes(range(256))),
        ResponseTopic(f"{topic}/reply"),
        ContentType("text/plain; charset=utf-8"),
        PayloadFormatIndicator(1),
        MessageExpiryInterval(3600),
        UserProperty("a", "é ü 日本"),
        UserProperty("z", "again"),
    ]
    with session(mosquitto_server) as (subscriber, _), session(mosquitto_server) as (publisher, _):
        subscribe(subscriber, 1, Subscription(topic, qos=QoS.AT_LEAST_ONCE))
        frame = Publish(
            qos=QoS.AT_LEAST_ONCE,
            packet_id=1,
            topic_name=topic,
            properties=sent,
            payload="grüße".encode(),
        )
        publish(publisher, frame)
        assert len(publisher.sent[1]) > 128 + 2  # a two-byte Remaining Length
        got = deliver(subscriber)
        assert got.payload == "grüße".encode()
        # mosquitto moves the expiry interval to the end (it recomputes it)
        expiry = [p for p in got.properties if isinstance(p, MessageExpiryInterval)]
        assert len(expiry) == 1 and 3598 <= expiry[0].value <= 3600
        assert [p for p in got.properties if not isinstance(p, MessageExpiryInterval)] == [
            p for p in sent if not isinstance(p, MessageExpiryInterval)
        ]
        assert len(subscriber.received[-1][1]) > 128 + 2


@server
def test_mqtt_1_5_5_large_packets_cut_from_the_stream(mosquitto_server: Server) -> None:
    """1.5.5 / 2.1.4: a 3-byte Remaining Length (a 1 MB payload at QoS 2 and a 20 kB one
    at QoS 1) both ways through mosquitto, cut from the stream over many socket reads."""
    topic = f"{topic_root()}/large"
    with session(mosquitto_server) as (subscriber, _), session(mosquitto_server) as (publisher, _):
        subscribe(subscriber, 1, Subscription(topic, qos=QoS.EXACTLY_ONCE))
        for qos, size in ((QoS.EXACTLY_ONCE, 1 << 20), (QoS.AT_LEAST_ONCE, 20_000)):
            payload = bytes(range(256)) * (size // 256)
            publish(
                publisher,
                Publish(qos=qos, packet_id=size & 0xFFFF or 1, topic_name=topic, payload=payload),
            )
            assert publisher.sent[-1 if qos == QoS.AT_LEAST_ONCE else -2][1:4] == vbi(
                2 + len(topic.encode()) + 2 + 1 + len(payload)
            )
            got = deliver(subscriber)
            assert (got.payload, got.qos) == (payload, qos)
        assert subscriber.cutter.checked == len(subscriber.received)


# --- retained messages ---------------------------------------------------------------------


@server
def test_mqtt_3_3_1_5_retained_messages(mosquitto_server: Server) -> None:
    """[MQTT-3.3.1-5] a retained message is stored; [MQTT-3.3.1-9] Retain Handling 0 sends it
    to a new subscription (RETAIN 1); [MQTT-3.3.1-10] Retain Handling 1 not to an existing
    one; [MQTT-3.3.1-11] Retain Handling 2 never; [MQTT-3.3.1-12]/[MQTT-3.3.1-13] Retain As
    Published 0/1 on live messages; [MQTT-3.3.1-6]/[MQTT-3.3.1-7] an empty retained payload
    removes it and is not stored."""
    topic = f"{topic_root()}/retained"
    with session(mosquitto_server) as (publisher, _):
        publish(
            publisher,
            Publish(
                retain=True, qos=QoS.AT_LEAST_ONCE, packet_id=1, topic_name=topic, payload=b"r1"
            ),
        )
        with session(mosquitto_server) as (plain, _), session(mosquitto_server) as (rap, _):
            subscribe(plain, 1, Subscription(topic, qos=QoS.AT_LEAST_ONCE))
            stored = deliver(plain)
            assert (stored.retain, stored.payload, stored.qos) == (True, b"r1", QoS.AT_LEAST_ONCE)
            # the subscription exists now: Retain Handling 1 sends nothing
            subscribe(
                plain,
                2,
                Subscription(
                    topic, qos=QoS.AT_LEAST_ONCE, retain_handling=RetainHandling.SEND_IF_NEW
                ),
            )
            assert plain.barrier() == []
            subscribe(
                rap,
                1,
                Subscription(
                    topic,
                    retain_as_published=True,
                    retain_handling=RetainHandling.DO_NOT_SEND,
                ),
            )
            assert rap.barrier() == []
            publish(publisher, Publish(retain=True, topic_name=topic, payload=b"r2"))
            live = deliver(plain)
            assert (live.retain, live.payload) == (False, b"r2")
            as_published = deliver(rap)
            assert (as_published.retain, as_published.payload) == (True, b"r2")
            publish(publisher, Publish(retain=True, topic_name=topic, payload=b""))  # clears it
            cleared = deliver(plain)
            assert (cleared.retain, cleared.payload) == (False, b"")
            assert deliver(rap).retain
        with session(mosquitto_server) as (late, _):
            subscribe(late, 1, Subscription(topic, qos=QoS.AT_LEAST_ONCE))
            assert late.barrier() == []


# --- will message --------------------------------------------------------------------------

WILL_PROPERTIES = [
    WillDelayInterval(0),
    PayloadFormatIndicator(1),
    MessageExpiryInterval(600),
    ContentType("text/plain"),
    ResponseTopic("ws/will/reply"),
    CorrelationData(b"\x00will\xff"),
    UserProperty("state", "gone"),
    UserProperty("state", "really"),
]


@server
def test_mqtt_3_1_2_8_will_published_when_the_connection_drops(mosquitto_server: Server) -> None:
    """[MQTT-3.1.2-9] Will Properties, Will Topic and Will Payload are in the Payload when
    the Will Flag is 1; [MQTT-3.1.2-7]/[MQTT-3.1.2-8] the Will Message is published after
    the Network Connection closes without DISCONNECT (Will Delay 0), [MQTT-3.1.2-14] not
    retained when Will Retain is 0, at the Will QoS, with the will's properties."""
    will_topic = f"{topic_root()}/will"
    with session(mosquitto_server) as (watcher, _):
        subscribe(watcher, 1, Subscription(will_topic, qos=QoS.EXACTLY_ONCE))
        with session(
            mosquitto_server,
            will_properties=WILL_PROPERTIES,
            will_topic=will_topic,
            will_payload=b"\x00bye",
            will_qos=QoS.AT_LEAST_ONCE,
        ) as (dying, _):
            connect = decode(dying.sent[0])
            assert isinstance(connect, Connect)
            assert (connect.will_qos, connect.will_retain) == (QoS.AT_LEAST_ONCE, False)
            assert connect.will_properties == WILL_PROPERTIES
            assert watcher.barrier() == []  # nothing yet
            dying.sock.close()  # no DISCONNECT
            dying.connection = ConnectionMachine("client", ConnectionState.CLOSED)
        will = deliver(watcher)
        assert (will.topic_name, will.payload, will.qos, will.retain) == (
            will_topic,
            b"\x00bye",
            QoS.AT_LEAST_ONCE,
            False,
        )
        forwarded = [p for p in will.properties if not isinstance(p, MessageExpiryInterval)]
        assert forwarded == [
            p
            for p in WILL_PROPERTIES
            if not isinstance(p, (WillDelayInterval, MessageExpiryInterval))
        ]
        assert any(isinstance(p, MessageExpiryInterval) and p.value <= 600 for p in will.properties)


@server
@pytest.mark.parametrize(
    ("reason", "published"),
    [(None, False), (ReasonCode.SUCCESS, False), (ReasonCode.DISCONNECT_WITH_WILL_MESSAGE, True)],
    ids=["normal-short", "normal-0x00", "with-will-0x04"],
)
def test_mqtt_3_14_4_3_normal_disconnect_discards_the_will(
    mosquitto_server: Server, reason: ReasonCode | None, published: bool
) -> None:
    """[MQTT-3.14.4-3] DISCONNECT with Reason Code 0x00 (or none: 3.14.2.1) discards the
    Will Message; 0x04 Disconnect with Will Message publishes it (3.14.2.1)."""
    will_topic = f"{topic_root()}/will"
    with session(mosquitto_server) as (watcher, _):
        subscribe(watcher, 1, Subscription(will_topic, qos=QoS.AT_LEAST_ONCE))
        with session(
            mosquitto_server,
            will_properties=[],
            will_topic=will_topic,
            will_payload=b"bye",
        ) as (leaving, _):
            leaving.send(Disconnect(reason_code=reason, properties=None if reason is None else []))
            assert leaving.connection.state is ConnectionState.CLOSED
            assert leaving.sent[-1] == (
                b"\xe0\x00" if reason is None else bytes([0xE0, 2, reason, 0])
            )
            leaving.wait_closed()
        if published:
            assert deliver(watcher).payload == b"bye"
        assert watcher.barrier() == []


# --- no local, unsubscribe, ping, disconnect ----------------------------------------------


@server
def test_mqtt_3_8_3_3_no_local_publications_not_echoed(mosquitto_server: Server) -> None:
    """[MQTT-3.8.3-3] No Local 1: our own publications are not forwarded back to us (a
    subscription without it gets them)."""
    root = topic_root()
    with session(mosquitto_server) as (peer, _):
        subscribe(
            peer,
            1,
            Subscription(f"{root}/quiet", qos=QoS.AT_LEAST_ONCE, no_local=True),
            Subscription(f"{root}/echo", qos=QoS.AT_LEAST_ONCE),
        )
        # QoS 0: no PUBACK to wait for, so everything that comes back is before PINGRESP
        peer.send(Publish(topic_name=f"{root}/quiet", payload=b"not for me"))
        peer.send(Publish(topic_name=f"{root}/echo", payload=b"for me"))
        echoed = peer.barrier()
        assert len(echoed) == 1 and isinstance(echoed[0], Publish)
        assert (echoed[0].topic_name, echoed[0].payload) == (f"{root}/echo", b"for me")


@server
def test_mqtt_3_10_4_5_unsubscribe_answered_by_unsuback(mosquitto_server: Server) -> None:
    """[MQTT-3.10.1-1] UNSUBSCRIBE's fixed header is 0xA2; [MQTT-3.10.4-4]/[MQTT-3.10.4-5]
    an UNSUBACK with the same Packet Identifier, even where no subscription is deleted;
    [MQTT-3.11.3-1] a Reason Code per Topic Filter, in order; [MQTT-3.10.4-2] no more
    messages for the filter."""
    topic = f"{topic_root()}/gone"
    with session(mosquitto_server) as (peer, _), session(mosquitto_server) as (publisher, _):
        subscribe(peer, 1, Subscription(topic))
        peer.send(
            Unsubscribe(
                packet_id=0x0102,
                properties=[UserProperty("k", "v")],
                topic_filters=[topic, f"{topic}/never"],
            )
        )
        assert peer.sent[-1][:1] == b"\xa2"
        unsuback = peer.expect(Unsuback)
        assert isinstance(unsuback, Unsuback) and unsuback.packet_id == 0x0102
        assert unsuback.reason_codes == [ReasonCode.SUCCESS, ReasonCode.NO_SUBSCRIPTION_EXISTED]
        publish(publisher, Publish(topic_name=topic, payload=b"unheard"))
        assert peer.barrier() == []


@server
def test_mqtt_3_12_4_1_pingreq_answered_by_pingresp(mosquitto_server: Server) -> None:
    """[MQTT-3.12.4-1] The Server MUST send a PINGRESP in response to a PINGREQ."""
    with session(mosquitto_server, MQTT_ANON_PORT) as (peer, _):
        for _ in range(3):
            assert peer.send(Pingreq()) == b"\xc0\x00"
            assert isinstance(peer.receive(), Pingresp)
            assert peer.received[-1][1] == b"\xd0\x00"


@server
@pytest.mark.parametrize(
    "disconnect",
    [
        Disconnect(),
        Disconnect(
            reason_code=ReasonCode.SUCCESS,
            properties=[ReasonString("done"), UserProperty("bye", "now")],
        ),
    ],
    ids=["short", "with-properties"],
)
def test_mqtt_3_14_4_1_nothing_after_disconnect(
    mosquitto_server: Server, disconnect: Disconnect
) -> None:
    """[MQTT-3.14.4-1] After sending a DISCONNECT the sender MUST NOT send any more
    packets (the machine refuses them); [MQTT-3.14.4-2] the connection closes."""
    with session(mosquitto_server) as (peer, _):
        peer.send(disconnect)
        assert peer.connection.state is ConnectionState.CLOSED
        with pytest.raises(IllegalSend):
            peer.send(Pingreq())
        peer.wait_closed()


def case(raw: str, rule: str, name: str) -> object:
    return pytest.param(bytes.fromhex(raw), rule, id=name)


@server
@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        case("80080001000003742f7800", "[MQTT-3.8.1-1] SUBSCRIBE flags 0000", "subscribe-flags"),
        case("a0070001000003742f78", "[MQTT-3.10.1-1] UNSUBSCRIBE flags 0000", "unsub-flags"),
        case("60020001", "[MQTT-3.6.1-1] PUBREL flags 0000", "pubrel-flags"),
        case("e100", "[MQTT-3.14.1-1] DISCONNECT flags 0001", "disconnect-flags"),
        case("36050003742f78", "[MQTT-3.3.1-4] PUBLISH QoS 3", "qos3"),
        case("30ffffffff7f", "1.5.5 a five-byte Remaining Length", "length-5-bytes"),
        case("82090001000003742f78c0", "[MQTT-3.8.3-5] options 11......", "options-reserved"),
        case("82090001000003742f7830", "3.8.3.1 Retain Handling 3", "retain-handling-3"),
        case("820b0001020b000003742f7800", "3.8.2.1.2 Subscription Identifier 0", "sub-id-0"),
        case("32070003742f78000000", "[MQTT-2.2.1-3] Packet Identifier 0", "packet-id-0"),
    ],
)
def test_mqtt_4_13_mosquitto_refuses_what_the_codec_refuses(
    mosquitto_server: Server, raw: bytes, rule: str
) -> None:
    """Each malformed packet the codec refuses (the tests below) is one mosquitto refuses
    too: a DISCONNECT with 0x81 Malformed Packet or 0x82 Protocol Error, or a plain close."""
    with pytest.raises(DecodeError):
        decode(raw)
    assert mosquitto_refusal(mosquitto_server, raw) in REFUSALS, rule


# --- malformed packets mosquitto refuses with 0x81, and the codec too --------------------


@server
def test_mqtt_1_5_4_2_null_character_is_malformed(mosquitto_server: Server) -> None:
    """[MQTT-1.5.4-2] A UTF-8 Encoded String MUST NOT include an encoding of the null
    character U+0000 (1.5.4: the receiver treats such a packet as malformed; mosquitto
    answers 0x81); [MQTT-4.7.3-2] the same for Topic Names and Topic Filters. Topic
    "t\\0x": 30 06 00 03 74 00 78 00. The codec refuses it in every string (topic, topic
    filters, client id, property strings and pairs) on decode (InvalidString) and will not
    write it (EncodeError)."""
    raw = bytes.fromhex("3006000374007800")
    assert mosquitto_refusal(mosquitto_server, raw) in REFUSALS  # 2.0.11: 0x81
    assert "Publish.topic_name" in str(refused(raw, InvalidString))
    for bad in (
        "820800010000027400" "00",  # SUBSCRIBE topic filter "t\0"
        "a20700010000027400",  # UNSUBSCRIBE topic filter "t\0"
        "30" "0c" "000174" "08" "2600016b00027600",  # User Property "k": "v\0"
        "30" "08" "000174" "04" "03000100",  # Content Type "\0"
    ):
        refused(bytes.fromhex(bad), InvalidString)
    for frame in (
        Publish(topic_name="t\x00x"),
        Subscribe(packet_id=1, subscriptions=[Subscription("t\x00")]),
        Unsubscribe(packet_id=1, topic_filters=["t\x00"]),
        Connect(client_id="c\x00"),
        Connect(will_properties=[], will_topic="w\x00", will_payload=b""),
        Connect(username="u\x00"),
        Publish(topic_name="t", properties=[UserProperty("k\x00", "v")]),
        Publish(topic_name="t", properties=[UserProperty("k", "v\x00")]),
        Publish(topic_name="t", properties=[ContentType("\x00")]),
    ):
        with pytest.raises(EncodeError, match="forbids"):
            encode(frame)
    # U+0000 in Binary Data (a payload, Correlation Data) is fine: only strings refuse it
    ok = Publish(topic_name="t", properties=[CorrelationData(b"\x00")], payload=b"\x00")
    assert decode(encode(ok)) == ok


@server
def test_mqtt_3_3_2_8_topic_alias_0_is_refused(mosquitto_server: Server) -> None:
    """[MQTT-3.3.2-8] A sender MUST NOT send a PUBLISH containing a Topic Alias of 0 (a
    Protocol Error, 3.3.2.3.4; mosquitto answers 0x81): ``TopicAlias`` is 1..65535 on
    decode (InvalidValue) and on encode (EncodeError)."""
    raw = bytes.fromhex("30090003742f7803230000")
    assert mosquitto_refusal(mosquitto_server, raw) in REFUSALS  # 2.0.11: 0x81
    assert "TopicAlias" in str(refused(raw, InvalidValue))
    with pytest.raises(EncodeError, match="TopicAlias"):
        encode(Publish(topic_name="t/x", properties=[TopicAlias(0)]))
    for alias in (1, 0xFFFF):
        frame = Publish(topic_name="t/x", properties=[TopicAlias(alias)])
        assert decode(encode(frame)) == frame


@server
def test_mqtt_3_8_3_2_subscribe_and_unsubscribe_need_a_topic_filter(
    mosquitto_server: Server,
) -> None:
    """[MQTT-3.8.3-2] The Payload MUST contain at least one Topic Filter and Subscription
    Options pair; [MQTT-3.10.3-2] an UNSUBSCRIBE at least one Topic Filter (Protocol
    Errors; mosquitto answers both with 0x81). SUBSCRIBE's ``min_count: 1`` refuses an
    empty list on decode (InvalidValue) and on encode (EncodeError); UNSUBSCRIBE: see
    test_mqtt_3_10_3_2_unsubscribe_needs_a_topic_filter."""
    for raw in (bytes.fromhex("8203000100"), bytes.fromhex("a203000100")):
        assert mosquitto_refusal(mosquitto_server, raw) in REFUSALS, raw.hex()  # 2.0.11: 0x81
    assert "at least 1" in str(refused(bytes.fromhex("8203000100"), InvalidValue))
    with pytest.raises(EncodeError, match="at least 1"):
        encode(Subscribe(packet_id=1))
    one = Subscribe(packet_id=1, subscriptions=[Subscription("t")])
    assert decode(encode(one)) == one


def test_mqtt_3_10_3_2_unsubscribe_needs_a_topic_filter() -> None:
    """[MQTT-3.10.3-2] "The Payload of an UNSUBSCRIBE packet MUST contain at least one Topic
    Filter." (mosquitto answers a2 03 00 01 00 with 0x81: the test above). The codec
    refuses it (``min_count: 1``) on decode and on encode."""
    raw = bytes.fromhex("a203000100")
    problems = []
    try:
        problems.append(f"decode({raw.hex()}) = {decode(raw)!r}")
    except InvalidValue:
        pass
    try:
        problems.append(
            f"encode(Unsubscribe(packet_id=1)) = {encode(Unsubscribe(packet_id=1)).hex()}"
        )
    except EncodeError:
        pass
    assert not problems, f"BUG [MQTT-3.10.3-2]: an UNSUBSCRIBE without a topic filter: {problems}"


# --- the codec refuses malformed packets (no server) --------------------------------------


def test_mqtt_3_8_1_1_subscribe_reserved_flags_are_0010() -> None:
    """[MQTT-3.8.1-1] Bits 3,2,1,0 of SUBSCRIBE's fixed header MUST be 0,0,1,0."""
    good = encode(Subscribe(packet_id=1, subscriptions=[Subscription("t/x")]))
    assert good[0] == 0x82 and isinstance(decode(good), Subscribe)
    for flags in (0x0, 0x1, 0x3, 0x6, 0xA, 0xF):
        bad = bytes([0x80 | flags]) + good[1:]
        assert "flag bits" in str(refused(bad, InvalidValue))


def test_mqtt_3_10_1_1_unsubscribe_reserved_flags_are_0010() -> None:
    """[MQTT-3.10.1-1] Bits 3,2,1,0 of UNSUBSCRIBE's fixed header MUST be 0,0,1,0."""
    good = encode(Unsubscribe(packet_id=1, topic_filters=["t/x"]))
    assert good[0] == 0xA2
    for flags in (0x0, 0x3, 0x8):
        refused(bytes([0xA0 | flags]) + good[1:], InvalidValue)


def test_mqtt_3_6_1_1_pubrel_reserved_flags_are_0010() -> None:
    """[MQTT-3.6.1-1] Bits 3,2,1,0 of PUBREL's fixed header MUST be 0,0,1,0."""
    assert encode(Pubrel(packet_id=1)) == bytes.fromhex("62020001")
    for first in (0x60, 0x61, 0x63, 0x6A):
        refused(bytes([first]) + bytes.fromhex("020001"), InvalidValue)


@pytest.mark.parametrize(
    "body",
    [
        encode(Connect(client_id="c")),
        encode(Connack()),
        encode(Puback(packet_id=1)),
        encode(Pubrec(packet_id=1)),
        encode(Pubcomp(packet_id=1)),
        encode(Suback(packet_id=1, reason_codes=[ReasonCode.SUCCESS])),
        encode(Unsuback(packet_id=1, reason_codes=[ReasonCode.SUCCESS])),
        encode(Pingreq()),
        encode(Pingresp()),
        encode(Disconnect()),
        b"\xf0\x00",  # AUTH
    ],
    ids=lambda raw: f"type{raw[0] >> 4}",
)
def test_mqtt_2_1_3_1_reserved_flags_are_0000(body: bytes) -> None:
    """[MQTT-2.1.3-1] Reserved flag bits MUST be set to the value listed in Table 2.2
    (0000 for every packet but PUBLISH, PUBREL, SUBSCRIBE and UNSUBSCRIBE);
    [MQTT-3.14.1-1] for DISCONNECT, [MQTT-3.15.1-1] for AUTH."""
    assert body[0] & 0x0F == 0
    decode(body)
    for flags in (0x1, 0x2, 0x4, 0x8):
        refused(bytes([body[0] | flags]) + body[1:], InvalidValue)


def test_mqtt_3_3_1_4_qos_3_is_malformed() -> None:
    """[MQTT-3.3.1-4] A PUBLISH Packet MUST NOT have both QoS bits set to 1."""
    assert "QoS" in str(refused(bytes.fromhex("36070003742f78000100"), InvalidValue))
    refused(bytes.fromhex("3e070003742f78000100"), InvalidValue)  # with DUP


def test_mqtt_3_3_1_2_dup_on_qos_0_is_a_rule_violation() -> None:
    """[MQTT-3.3.1-2] The DUP flag MUST be set to 0 for all QoS 0 messages (mosquitto
    2.0.11 lets such a packet through; the codec refuses it, and will not write one)."""
    error = refused(bytes.fromhex("38060003742f7800"), RuleViolation)
    assert "[MQTT-3.3.1-2]" in str(error)
    with pytest.raises(EncodeError):
        encode(Publish(dup=True, topic_name="t/x"))
    assert decode(bytes.fromhex("3a080003742f78000100")).dup  # QoS 1 may be a duplicate


def test_mqtt_1_5_5_1_variable_byte_integers_shortest_and_at_most_4_bytes() -> None:
    """1.5.5: a Variable Byte Integer takes at most four bytes (268,435,455);
    [MQTT-1.5.5-1] the encoded value MUST use the minimum number of bytes."""
    refused(bytes.fromhex("30ffffffff7f"), InvalidValue)  # five bytes of Remaining Length
    refused(bytes.fromhex("30ffffff7f"), Truncated)  # four: fine, but 268 MB are not here
    refused(bytes.fromhex("c08000"), NonCanonical)  # PINGREQ, length 0 in two bytes
    refused(bytes.fromhex("3086800003742f7800"), NonCanonical)
    # a property length and a Subscription Identifier in their overlong forms
    refused(bytes.fromhex("3005000174" "8000"), NonCanonical)
    refused(bytes.fromhex("3007000174" "030b8000"), NonCanonical)
    for value in (1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, 268_435_455):
        frame = Publish(topic_name="t", properties=[SubscriptionIdentifier(value)])
        assert encode(frame).endswith(vbi(value))
        assert decode(encode(frame)) == frame
    big = Publish(topic_name="t", payload=bytes(200_000))
    raw = encode(big)
    assert raw[1:4] == vbi(200_000 + 4) and decode(raw) == big


def test_mqtt_3_1_2_1_protocol_name_and_version() -> None:
    """[MQTT-3.1.2-1] The protocol name MUST be the UTF-8 String "MQTT"; 3.1.2.2 the
    version is 5 (a 3.1.1 CONNECT, version 4, is not this protocol)."""
    good = encode(Connect(client_id="c"))
    assert good[2:9] == b"\x00\x04MQTT\x05"
    refused(good[:4] + b"MQTX" + good[8:], InvalidValue)
    refused(good[:8] + b"\x04" + good[9:], InvalidValue)
    v31 = b"\x00\x06MQIsdp\x03" + good[9:]  # MQTT 3.1
    refused(bytes([0x10, len(v31)]) + v31, InvalidValue)


def test_mqtt_3_1_2_3_connect_reserved_flag_is_0() -> None:
    """[MQTT-3.1.2-3] The Server MUST validate that the reserved flag in the CONNECT is 0."""
    good = encode(Connect(client_id="c", clean_start=True))
    assert good[9] == 0x02
    refused(good[:9] + b"\x03" + good[10:], InvalidValue)


def test_mqtt_3_1_2_11_will_qos_0_without_will_flag() -> None:
    """[MQTT-3.1.2-11] If the Will Flag is 0, the Will QoS MUST be 0; [MQTT-3.1.2-12] QoS
    3 is malformed even with a will."""
    good = encode(Connect(client_id="c"))
    error = refused(good[:9] + b"\x08" + good[10:], RuleViolation)
    assert "[MQTT-3.1.2-11]" in str(error)
    with pytest.raises(EncodeError):
        encode(Connect(client_id="c", will_qos=QoS.AT_LEAST_ONCE))
    with_will = encode(Connect(will_properties=[], will_topic="w", will_payload=b""))
    assert with_will[9] == 0x04
    refused(with_will[:9] + b"\x1c" + with_will[10:], InvalidValue)


def test_mqtt_3_1_2_13_will_retain_0_without_will_flag() -> None:
    """[MQTT-3.1.2-13] If the Will Flag is set to 0, then Will Retain MUST be set to 0."""
    good = encode(Connect(client_id="c"))
    assert "[MQTT-3.1.2-13]" in str(refused(good[:9] + b"\x20" + good[10:], RuleViolation))
    with pytest.raises(EncodeError):
        encode(Connect(client_id="c", will_retain=True))


def test_mqtt_3_1_2_9_will_fields_follow_the_will_flag() -> None:
    """[MQTT-3.1.2-9] With the Will Flag, Will Properties, Will Topic and Will Payload
    MUST be present; [MQTT-3.1.2-16..19] user name and password exactly when their flags
    say; [MQTT-3.1.3-1] in the order Client Identifier, Will Properties, Will Topic, Will
    Payload, User Name, Password."""
    frame = Connect(
        client_id="id",
        will_properties=[WillDelayInterval(5)],
        will_topic="wt",
        will_payload=b"wp",
        username="u",
        password=b"p",
    )
    raw = encode(frame)
    assert raw[9] == 0xC4
    assert raw[12:] == (
        b"\x00" + b"\x00\x02id" + b"\x05\x18\x00\x00\x00\x05" + b"\x00\x02wt"
        b"\x00\x02wp" + b"\x00\x01u" + b"\x00\x01p"
    )
    assert decode(raw) == frame
    no_password = raw[2:-3]  # the password flag promises a password the packet lacks
    short = refused(bytes([0x10, len(no_password)]) + no_password, InvalidValue)
    assert "Connect.password" in str(short) and "declared length" in str(short)
    with pytest.raises(EncodeError):
        encode(Connect(will_topic="wt", will_payload=b"wp"))  # no will properties: no flag
    only_password = encode(Connect(client_id="c", password=b"p"))  # allowed in MQTT 5
    assert only_password[9] == 0x40 and decode(only_password) == Connect(
        client_id="c", password=b"p"
    )


def test_mqtt_3_2_2_1_connack_reserved_bits_are_0() -> None:
    """[MQTT-3.2.2-1] Bits 7-1 of the Connect Acknowledge Flags are reserved, MUST be 0."""
    assert encode(Connack(session_present=True)) == bytes.fromhex("2003010000")
    for flags in (0x02, 0x80, 0xFE):
        refused(bytes([0x20, 3, flags, 0, 0]), InvalidValue)


def test_mqtt_3_8_3_5_subscription_options_reserved_bits_are_0() -> None:
    """[MQTT-3.8.3-5] The Server MUST treat a SUBSCRIBE as malformed if any Reserved bits
    in the Payload are non-zero; 3.8.3.1: Retain Handling 3 is a Protocol Error."""
    good = encode(Subscribe(packet_id=1, subscriptions=[Subscription("t/x")]))
    assert good[-1] == 0
    for options in (0x40, 0x80, 0xC2):
        refused(good[:-1] + bytes([options]), InvalidValue)
    assert "RetainHandling" in str(refused(good[:-1] + b"\x30", InvalidValue))
    assert "QoS" in str(refused(good[:-1] + b"\x03", InvalidValue))


def test_mqtt_2_2_1_3_packet_identifiers_are_non_zero() -> None:
    """[MQTT-2.2.1-3] a non-zero Packet Identifier; [MQTT-2.2.1-2] none in a QoS 0 PUBLISH."""
    for raw in (
        bytes.fromhex("32070003742f78000000"),  # PUBLISH QoS 1
        bytes.fromhex("40020000"),  # PUBACK
        bytes.fromhex("62020000"),  # PUBREL
        bytes.fromhex("820700000000017400"),  # SUBSCRIBE
        bytes.fromhex("a2060000" "00" "000174"),  # UNSUBSCRIBE
    ):
        refused(raw, DecodeError)
    for frame in (Publish(qos=QoS.AT_LEAST_ONCE, packet_id=0), Puback(packet_id=0)):
        with pytest.raises(EncodeError):
            encode(frame)
    with pytest.raises(EncodeError):
        encode(Publish(packet_id=5))  # QoS 0
    with pytest.raises(EncodeError):
        encode(Publish(qos=QoS.AT_LEAST_ONCE))  # QoS 1 without one


def test_mqtt_2_2_2_1_no_properties_is_a_property_length_of_0() -> None:
    """[MQTT-2.2.2-1] If there are no properties, this MUST be indicated by including a
    Property Length of zero; 2.2.2.2 a property whose value overruns the Property Length,
    or an unknown identifier, is malformed."""
    assert encode(Connack()) == bytes.fromhex("2003000000")
    assert encode(Subscribe(packet_id=1, subscriptions=[Subscription("t")])) == bytes.fromhex(
        "82070001" "00" "00017400"
    )
    # no property length inside the Remaining Length: malformed, not "wait for more" (a
    # stream decoder fails on it rather than wait for bytes that belong to the next packet)
    assert "declared length" in str(refused(bytes.fromhex("20020000"), InvalidValue))
    with pytest.raises(InvalidValue):
        FrameCutter().feed(bytes.fromhex("20020000" "d000"))
    refused(bytes.fromhex("20050000021100"), InvalidValue)  # 0x11 needs 4 bytes, 1 counted
    refused(bytes.fromhex("200500000204ff"), InvalidValue)  # no property 0x04
    # the short forms of 3.4.2.1 / 3.14.2.1 (no Reason Code, no Property Length) stay short
    for raw in ("40020001", "4003000110", "400400011000", "e000", "e00104", "f000"):
        frame = decode(bytes.fromhex(raw))
        assert encode(frame) == bytes.fromhex(raw), (raw, frame)


def test_mqtt_1_5_4_1_strings_are_well_formed_utf8() -> None:
    """[MQTT-1.5.4-1] well-formed UTF-8, no encodings of U+D800..U+DFFF; [MQTT-1.5.7-1]
    both strings of a pair; [MQTT-1.5.4-3] 0xEF 0xBB 0xBF is U+FEFF, not stripped."""
    refused(bytes.fromhex("3006000374ed78") + b"\x00", InvalidString)  # truncated sequence
    refused(bytes.fromhex("3008000574eda08078") + b"\x00", InvalidString)  # U+D800
    refused(bytes.fromhex("3006000374c0af00"), InvalidString)  # overlong "/"
    pair = bytes.fromhex("26" "000161" "0001ff")  # User Property "a": 0xFF
    body = b"\x00\x01t" + bytes([len(pair)]) + pair
    refused(bytes([0x30, len(body)]) + body, InvalidString)
    bom = decode(bytes.fromhex("3008000574efbbbf7800"))
    assert isinstance(bom, Publish) and bom.topic_name == "t\ufeffx"
    assert encode(bom) == bytes.fromhex("3008000574efbbbf7800")


def test_mqtt_4_7_3_3_strings_encode_to_at_most_65535_bytes() -> None:
    """[MQTT-4.7.3-3] Topic Names and Topic Filters MUST NOT encode to more than 65,535
    bytes (1.5.4: every UTF-8 string has a Two Byte Integer length)."""
    longest = "é" * 32_767 + "a"  # 65,535 bytes
    assert decode(encode(Publish(topic_name=longest))) == Publish(topic_name=longest)
    for frame in (
        Publish(topic_name=longest + "a"),
        Subscribe(subscriptions=[Subscription(longest + "a")]),
        Unsubscribe(topic_filters=[longest + "a"]),
        Publish(topic_name="t", properties=[UserProperty("k", longest + "a")]),
    ):
        with pytest.raises(EncodeError):
            encode(frame)


def test_mqtt_2_1_2_reserved_packet_type_0() -> None:
    """2.1.2: packet type 0 is Reserved (a Malformed Packet)."""
    refused(b"\x00\x00", UnknownFrameType)


# --- encoder: values the decoder would refuse (no server) ---------------------------------


def test_mqtt_3_3_1_4_encoder_refuses_what_the_decoder_refuses() -> None:
    """What ``encode`` writes, ``decode`` must read back: a value outside a closed enum
    (QoS 3 [MQTT-3.3.1-4], Will QoS 3 [MQTT-3.1.2-12], subscription QoS 3, Retain Handling 3
    (3.8.3.1), a Reason Code the standard does not define) is an EncodeError naming the
    enum, not a malformed packet on the wire."""
    frames: dict[str, tuple[object, str]] = {
        "PUBLISH QoS 3": (Publish(qos=3, packet_id=1, topic_name="t"), "not a QoS"),  # type: ignore[arg-type]
        "subscription QoS 3": (
            Subscribe(packet_id=1, subscriptions=[Subscription("t", qos=3)]),  # type: ignore[arg-type]
            "not a QoS",
        ),
        "Retain Handling 3": (
            Subscribe(packet_id=1, subscriptions=[Subscription("t", retain_handling=3)]),  # type: ignore[arg-type]
            "not a RetainHandling",
        ),
        "Will QoS 3": (
            Connect(will_qos=3, will_properties=[], will_topic="t", will_payload=b""),  # type: ignore[arg-type]
            "not a QoS",
        ),
        "PUBACK Reason Code 0x05": (Puback(packet_id=1, reason_code=0x05), "not a ReasonCode"),  # type: ignore[arg-type]
        "CONNACK Reason Code 0x05": (Connack(reason_code=0x05), "not a ReasonCode"),  # type: ignore[arg-type]
        "SUBACK Reason Code 0x05": (
            Suback(packet_id=1, reason_codes=[0x05]),  # type: ignore[list-item]
            "not a ReasonCode",
        ),
    }
    for frame, message in frames.values():
        with pytest.raises(EncodeError, match=message):
            encode(frame)  # type: ignore[arg-type]
    # the same packets with the largest defined values are written and read back
    for frame in (
        Publish(qos=QoS.EXACTLY_ONCE, packet_id=1, topic_name="t"),
        Subscribe(
            packet_id=1,
            subscriptions=[
                Subscription("t", qos=QoS.EXACTLY_ONCE, retain_handling=RetainHandling.DO_NOT_SEND)
            ],
        ),
        Connack(reason_code=ReasonCode.WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED),
    ):
        assert decode(encode(frame)) == frame


# --- machines refuse out-of-order packets (no server) -------------------------------------


def test_mqtt_3_1_0_1_machines_refuse_anything_before_connect() -> None:
    """[MQTT-3.1.0-1]: the client machine refuses to send, the server machine to receive,
    any packet but CONNECT first."""
    for frame in (Publish(topic_name="t"), Subscribe(packet_id=1), Pingreq(), Disconnect()):
        with pytest.raises(IllegalSend) as sent:
            ConnectionMachine("client").send(frame)
        assert "[MQTT-3.1.0-1]" in sent.value.spec
        with pytest.raises(UnexpectedFrame) as received:
            ConnectionMachine("server").receive(frame)
        assert "[MQTT-3.1.0-1]" in received.value.spec
    client, broker = ConnectionMachine("client"), ConnectionMachine("server")
    assert client.send(Connect()) is ConnectionState.CONNECTING
    assert broker.receive(Connect()) is ConnectionState.CONNECTING


def connected_pair() -> tuple[ConnectionMachine, ConnectionMachine]:
    client, broker = ConnectionMachine("client"), ConnectionMachine("server")
    client.send(Connect())
    broker.receive(Connect())
    broker.send(Connack())
    client.receive(Connack())
    assert client.state is broker.state is ConnectionState.CONNECTED
    return client, broker


def test_mqtt_3_1_0_2_machines_refuse_a_second_connect() -> None:
    """[MQTT-3.1.0-2] The Server MUST process a second CONNECT packet as a Protocol Error:
    once connected, and while the first CONNECT waits for its CONNACK (3.1.4 lets a
    client send other packets then, not another CONNECT)."""
    client, broker = connected_pair()
    with pytest.raises(IllegalSend):
        client.send(Connect())
    with pytest.raises(UnexpectedFrame) as received:
        broker.receive(Connect())
    assert "[MQTT-3.1.0-2]" in received.value.spec
    client, broker = ConnectionMachine("client"), ConnectionMachine("server")
    client.send(Connect())
    broker.receive(Connect())
    with pytest.raises(IllegalSend) as sent:
        client.send(Connect())
    assert "[MQTT-3.1.0-2]" in sent.value.spec
    with pytest.raises(UnexpectedFrame) as received:
        broker.receive(Connect())
    assert "[MQTT-3.1.0-2]" in received.value.spec
    assert client.state is broker.state is ConnectionState.CONNECTING


def test_mqtt_3_2_0_1_connack_before_anything_but_auth() -> None:
    """[MQTT-3.2.0-1] The Server MUST send a CONNACK with 0x00 before sending any packet
    other than AUTH; [MQTT-3.2.0-2] not more than one CONNACK."""
    broker = ConnectionMachine("server")
    broker.receive(Connect())
    for frame in (Publish(topic_name="t"), Suback(packet_id=1), Pingresp(), Disconnect()):
        with pytest.raises(IllegalSend):
            broker.send(frame)
    client = ConnectionMachine("client")
    client.send(Connect())
    with pytest.raises(UnexpectedFrame):
        client.receive(Publish(topic_name="t"))
    assert client.receive(Connack()) is ConnectionState.CONNECTED
    with pytest.raises(UnexpectedFrame):
        client.receive(Connack())
    _, connected_broker = connected_pair()
    with pytest.raises(IllegalSend):
        connected_broker.send(Connack())


def test_mqtt_3_2_2_7_refusing_connack_closes_both_machines() -> None:
    """[MQTT-3.2.2-7] A CONNACK with a Reason Code of 128 or greater ends the connection."""
    client, broker = ConnectionMachine("client"), ConnectionMachine("server")
    client.send(Connect())
    broker.receive(Connect())
    refusal = Connack(reason_code=ReasonCode.BAD_USER_NAME_OR_PASSWORD)
    assert broker.send(refusal) is ConnectionState.CLOSED
    assert client.receive(refusal) is ConnectionState.CLOSED
    with pytest.raises(IllegalSend):
        client.send(Subscribe(packet_id=1))


def test_mqtt_3_14_4_1_machines_refuse_packets_after_disconnect() -> None:
    """[MQTT-3.14.4-1] After sending a DISCONNECT the sender MUST NOT send any more
    packets; after receiving one, nothing more is expected."""
    client, broker = connected_pair()
    assert client.send(Disconnect()) is ConnectionState.CLOSED
    assert broker.receive(Disconnect()) is ConnectionState.CLOSED
    with pytest.raises(IllegalSend):
        client.send(Pingreq())
    with pytest.raises(UnexpectedFrame):
        broker.receive(Pingreq())
    with pytest.raises(IllegalSend):
        broker.send(Pingresp())


ERROR_PUBREC = ReasonCode.QUOTA_EXCEEDED  # 0x97, one of PUBREC's codes of 0x80 or more


def test_mqtt_4_3_3_qos2_machines_follow_the_handshake() -> None:
    """4.3.3, the sender: idle -> published (PUBLISH, DUP 0 [MQTT-4.3.3-2]; re-sent with
    DUP 1 [MQTT-3.3.1-1]) -> acknowledged (PUBREC below 0x80 [MQTT-4.3.3-3]) -> released
    (PUBREL [MQTT-4.3.3-4], which may be re-sent) -> complete (PUBCOMP [MQTT-4.3.3-5]); no
    PUBLISH once PUBREC came [MQTT-4.3.3-6]. The receiver: idle -> received (PUBLISH) ->
    recorded (PUBREC [MQTT-4.3.3-8]; a duplicate PUBLISH is answered again
    [MQTT-4.3.3-10]) -> releasing (PUBREL) -> complete (PUBCOMP [MQTT-4.3.3-11]). A PUBREC
    of 0x80 or more ends the delivery [MQTT-4.4.0-2]; only QoS 2 starts one."""
    publish_2 = Publish(qos=QoS.EXACTLY_ONCE, packet_id=5, topic_name="t")
    again = Publish(dup=True, qos=QoS.EXACTLY_ONCE, packet_id=5, topic_name="t")
    sender = PublishQos2Machine("sender")
    assert sender.send(publish_2) is PublishQos2State.PUBLISHED
    assert sender.send(again) is PublishQos2State.PUBLISHED
    with pytest.raises(IllegalSend):  # [MQTT-3.3.1-1] a re-sent PUBLISH has DUP 1
        sender.send(publish_2)
    for early in (Pubcomp(packet_id=5),):
        with pytest.raises(UnexpectedFrame):
            sender.receive(early)
    with pytest.raises(IllegalSend):
        sender.send(Pubrel(packet_id=5))  # before the PUBREC
    # [MQTT-2.2.1-5] an acknowledgement for another packet identifier meets a machine
    # that sent nothing under it
    for ack in (Pubrec(packet_id=6), Pubcomp(packet_id=6)):
        with pytest.raises(UnexpectedFrame):
            PublishQos2Machine("sender").receive(ack)
    assert sender.receive(Pubrec(packet_id=5)) is PublishQos2State.ACKNOWLEDGED
    with pytest.raises(UnexpectedFrame):
        sender.receive(Pubcomp(packet_id=5))  # before the PUBREL
    with pytest.raises(IllegalSend):
        sender.send(again)  # [MQTT-4.3.3-6]
    assert sender.send(Pubrel(packet_id=5)) is PublishQos2State.RELEASED
    assert sender.send(Pubrel(packet_id=5)) is PublishQos2State.RELEASED  # 4.4 retry
    with pytest.raises(IllegalSend) as resent:
        sender.send(again)
    assert "[MQTT-4.3.3-6]" in resent.value.spec
    assert sender.receive(Pubcomp(packet_id=5)) is PublishQos2State.COMPLETE
    assert sender.terminated
    for after in (again, Pubrel(packet_id=5)):
        with pytest.raises(IllegalSend):
            sender.send(after)

    receiver = PublishQos2Machine("receiver")
    with pytest.raises(UnexpectedFrame):
        receiver.receive(Pubrel(packet_id=5))
    assert receiver.receive(publish_2) is PublishQos2State.RECEIVED
    assert receiver.receive(again) is PublishQos2State.RECEIVED
    with pytest.raises(IllegalSend):
        receiver.send(Pubcomp(packet_id=5))  # no PUBREL yet
    assert receiver.send(Pubrec(packet_id=5)) is PublishQos2State.RECORDED
    assert receiver.receive(again) is PublishQos2State.RECORDED  # [MQTT-4.3.3-10]
    assert receiver.send(Pubrec(packet_id=5)) is PublishQos2State.RECORDED  # answered again
    with pytest.raises(IllegalSend):
        receiver.send(Pubcomp(packet_id=5))  # still no PUBREL
    assert receiver.receive(Pubrel(packet_id=5)) is PublishQos2State.RELEASING
    assert receiver.receive(Pubrel(packet_id=5)) is PublishQos2State.RELEASING  # 4.4 retry
    assert receiver.send(Pubcomp(packet_id=5)) is PublishQos2State.COMPLETE
    assert receiver.terminated

    refused_delivery = PublishQos2Machine("sender")
    refused_delivery.send(publish_2)
    error = Pubrec(packet_id=5, reason_code=ERROR_PUBREC, properties=[])
    assert refused_delivery.receive(error) is PublishQos2State.COMPLETE  # [MQTT-4.4.0-2]
    with pytest.raises(IllegalSend):
        refused_delivery.send(Pubrel(packet_id=5))
    with pytest.raises(IllegalSend):
        PublishQos2Machine("sender").send(Publish(qos=QoS.AT_LEAST_ONCE, packet_id=5))
    with pytest.raises(UnexpectedFrame):
        PublishQos2Machine("receiver").receive(Publish(qos=QoS.AT_LEAST_ONCE, packet_id=5))


def test_mqtt_4_3_3_4_pubrel_only_after_pubrec() -> None:
    """[MQTT-4.3.3-4] The sender MUST send a PUBREL packet when it receives a PUBREC with a
    Reason Code below 0x80 -- not before: the sender may not send PUBREL while its PUBLISH
    is unacknowledged, and the receiver refuses a PUBREL before its PUBREC. Also
    [MQTT-4.3.3-2]: the first PUBLISH of a delivery has DUP 0."""
    sender = PublishQos2Machine("sender")
    sender.send(Publish(qos=QoS.EXACTLY_ONCE, packet_id=5, topic_name="t"))
    assert not sender.allows_send(Pubrel(packet_id=5))
    with pytest.raises(IllegalSend) as early:
        sender.send(Pubrel(packet_id=5))
    assert "[MQTT-4.3.3-4]" in early.value.spec
    assert sender.state is PublishQos2State.PUBLISHED
    receiver = PublishQos2Machine("receiver")
    receiver.receive(Publish(qos=QoS.EXACTLY_ONCE, packet_id=5, topic_name="t"))
    with pytest.raises(UnexpectedFrame):
        receiver.receive(Pubrel(packet_id=5))
    assert receiver.state is PublishQos2State.RECEIVED
    first_dup = PublishQos2Machine("sender")
    assert not first_dup.allows_send(Publish(dup=True, qos=QoS.EXACTLY_ONCE, packet_id=5))
    with pytest.raises(IllegalSend) as dup:
        first_dup.send(Publish(dup=True, qos=QoS.EXACTLY_ONCE, packet_id=5))
    assert "[MQTT-4.3.3-2]" in dup.value.spec
    assert first_dup.state is PublishQos2State.IDLE


def test_mqtt_4_3_3_9_error_pubrec_ends_the_receivers_delivery() -> None:
    """[MQTT-4.3.3-9] If it has sent a PUBREC with a Reason Code of 0x80 or greater, the
    receiver MUST treat any subsequent PUBLISH packet that contains that Packet
    Identifier as being a new Application Message (and [MQTT-4.4.0-2]: the sender treats
    the PUBLISH as acknowledged, no PUBREL follows). The receiver's machine is complete
    after such a PUBREC: no PUBREL is expected, and a PUBLISH under that id starts a new
    delivery (a new machine, as ``Peer`` keeps them)."""
    error = Pubrec(packet_id=5, reason_code=ERROR_PUBREC, properties=[])
    receiver = PublishQos2Machine("receiver")
    receiver.receive(Publish(qos=QoS.EXACTLY_ONCE, packet_id=5, topic_name="t"))
    assert receiver.send(error) is PublishQos2State.COMPLETE
    assert receiver.terminated
    with pytest.raises(UnexpectedFrame):
        receiver.receive(Pubrel(packet_id=5))
    sender = PublishQos2Machine("sender")
    sender.send(Publish(qos=QoS.EXACTLY_ONCE, packet_id=5, topic_name="t"))
    assert sender.receive(error) is PublishQos2State.COMPLETE
    # a receiver that accepted the message first cannot take it back with an error PUBREC
    recorded = PublishQos2Machine("receiver", PublishQos2State.RECORDED)
    with pytest.raises(IllegalSend):
        recorded.send(error)


def test_mqtt_4_3_3_6_idl_cites_the_rules_it_implements() -> None:
    """The spec text the IDL quotes reaches users (``IllegalSend.spec``, enum docs): the
    identifiers must be the standard's. 4.3.3: [MQTT-4.3.3-6] is "MUST NOT re-send the
    PUBLISH once it has sent the corresponding PUBREL" (4.3.3-5 is "treat the PUBREL as
    unacknowledged until PUBCOMP"), [MQTT-4.3.3-4] "MUST send a PUBREL packet when it
    receives a PUBREC", [MQTT-4.3.3-2] the first PUBLISH has DUP 0; 3.8.3.1 has no
    identifier for "Retain Handling 3 is a Protocol Error" ([MQTT-3.8.3-5] is the reserved
    bits of the options)."""
    first = Publish(qos=QoS.EXACTLY_ONCE, packet_id=1, topic_name="t")
    again = Publish(dup=True, qos=QoS.EXACTLY_ONCE, packet_id=1, topic_name="t")
    cited = {}
    sender = PublishQos2Machine("sender")
    with pytest.raises(IllegalSend) as refused_send:
        sender.send(again)
    cited["first PUBLISH with DUP 1"] = (refused_send.value.spec, "[MQTT-4.3.3-2]")
    sender.send(first)
    with pytest.raises(IllegalSend) as refused_send:
        sender.send(Pubrel(packet_id=1))
    cited["PUBREL before PUBREC"] = (refused_send.value.spec, "[MQTT-4.3.3-4]")
    sender.receive(Pubrec(packet_id=1))
    sender.send(Pubrel(packet_id=1))
    with pytest.raises(IllegalSend) as refused_send:
        sender.send(again)
    cited["PUBLISH re-sent after PUBREL"] = (refused_send.value.spec, "[MQTT-4.3.3-6]")
    wrong = {what: spec for what, (spec, rule) in cited.items() if rule not in spec}
    assert not wrong, wrong
    assert "[MQTT-3.8.3-5]" not in (RetainHandling.__doc__ or "")
    assert "[MQTT-3.3.1-4]" in (QoS.__doc__ or "")


# --- the stream decoder cuts any chunking (no server) -------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(mqtt_strategies.frames(), min_size=1, max_size=8), st.data())
def test_mqtt_2_1_4_remaining_length_delimits_packets_in_any_chunking(
    drawn: list[tuple[object, object]], data: st.DataObject
) -> None:
    """2.1.4: the Remaining Length delimits each packet on the byte stream. Random packets
    (the generated strategies), cut into random chunks, come out of ``StreamDecoder`` one
    by one, each exactly its own bytes."""
    frames = [frame for frame, _ in drawn]
    stream = b"".join(encode(frame) for frame in frames)  # type: ignore[arg-type]
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(stream) - 1)), max_size=12)))
    cutter = FrameCutter()
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        got.extend(cutter.feed(stream[start:end]))
    assert [frame for frame, _ in got] == frames
    assert b"".join(raw for _, raw in got) == stream
    assert cutter.decoder.buffered == 0
