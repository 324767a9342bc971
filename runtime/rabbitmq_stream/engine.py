"""The sans-I/O RabbitMQ stream client: bytes in, events out, bytes to send.

``ClientConnection`` speaks PROTOCOL.adoc as RabbitMQ 3.10.8 does ("v1") and keeps the
engine contract of ``wirestream.runtime.engine``: it never touches a socket or a clock
(``receive_data(data)`` returns events, ``data_to_send()`` drains what to write,
``handle_timer(now)``/``get_timer()`` drive heartbeats with the caller's time).

Every frame passes through the generated state machines
(``wirestream.generated.rabbitmq_stream.v1.machines``), and the tables' ``HANDLERS``
say where it goes next (``wirestream.runtime.machine.Dispatch``): a received frame
goes through the ``connection`` machine to ``on_connection_<frame>``; a frame about a
publisher or a subscription then goes, by its id, through that id's ``publisher`` or
``subscription`` machine (``MachineRegistry``) to ``on_publisher_<frame>`` /
``on_subscription_<frame>``. A row that says ignore never reaches a handler; an error
row (or no row) is the broker's violation. The connection is split by scope, as h2 splits ``H2Connection`` from
``H2Stream``: this module is the connection (handshake, tuning, heartbeat, closing, and
which scope a frame goes to); ``publishers``, ``subscriptions``, ``stream_commands`` and
``super_stream_commands`` are the parts, sending through the shared ``outbox``. Their
methods stay on ``ClientConnection`` (``delegation.Delegated``), where users and the
generated ``HANDLERS`` tables name them. Together they add what tables cannot hold:

- correlation: request/response pairs are matched by correlation id in a table of
  outstanding requests; a response with an unknown id, or of another command than
  its request, is a connection-level violation (``UnknownCorrelationId``,
  ``MismatchedResponse``). The request names the publisher or subscription a
  DeclarePublisher/DeletePublisher/Subscribe/Unsubscribe response is about.
- negotiation: 'Tune: the server sends a Tune frame to suggest some settings (max
  frame size, heartbeat). The client answers with a Tune frame with the settings he
  agrees on' -- the minimum of the two, 0 meaning "no limit" on either side.
- flow control, with ``wirestream.runtime.flow.Window`` only: per publisher, the unconfirmed
  publishing ids (a bounded window: publishing beyond it raises ``DemandExceeded``);
  per subscription, the chunk credit ('Credit => uint16 // the number of chunks that
  can be sent'; a Deliver beyond the credit is ``PeerExceededDemand``, because 3.10.8
  never sends a chunk without credit: ``send_chunks`` stops at 0).
- chunks: CRC check, decompression and record offsets (``wirestream.runtime.rabbitmq_stream.chunk``).
- newer brokers (``wirestream.runtime.rabbitmq_stream.features``): a broker whose
  ``version`` is 3.11 or later is sent ExchangeCommandVersions right after Open, as the
  Java client does, and ``ConnectionOpened`` waits for its answer (``features``);
  StreamStats, Publish v2 (filter values), filter and single-active-consumer
  subscription properties raise ``UnsupportedByBroker`` before anything is sent when
  the answer lacks them; ConsumerUpdate reaches the application as
  ``ConsumerUpdateRequested`` (``answer_consumer_update``).

Connection-level violations by the broker queue a CloseRequest (code 13 "unknown
frame", 14 for a frame too large: what 3.10.8 itself answers), move the connection to
closed, and raise ``RemoteProtocolError`` from ``receive_data``; the events produced
before the violation are on the exception's ``events`` attribute.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

from wirestream.generated.rabbitmq_stream.v1 import (
    CloseRequest,
    CloseResponse,
    CommandVersion,
    ConsumerUpdateRequest,
    CreditResponse,
    DeclarePublisherResponse,
    DeletePublisherResponse,
    Deliver,
    DeliverV2,
    ExchangeCommandVersionsRequest,
    ExchangeCommandVersionsResponse,
    Heartbeat,
    MetadataUpdate,
    OpenRequest,
    OpenResponse,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    Property,
    PublishConfirm,
    PublishError,
    ResponseCode,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    StreamDecoder,
    SubscribeResponse,
    Tune,
    UnsubscribeResponse,
)
from wirestream.generated.rabbitmq_stream.v1.machines import (
    ConnectionMachine,
    ConnectionState,
    PublisherMachine,
    SubscriptionMachine,
)
from wirestream.runtime.errors import (
    DecodeError,
    FrameTooLarge,
    RemoteProtocolError,
    Truncated,
)
from wirestream.runtime.machine import Dispatch, StateMachine
from wirestream.runtime.rabbitmq_stream.chunk import DEFAULT_MAX_BATCH_SIZE
from wirestream.runtime.rabbitmq_stream.bindings import bind_client
from wirestream.runtime.rabbitmq_stream.delegation import Delegated
from wirestream.runtime.rabbitmq_stream.features import (
    CLIENT_COMMAND_VERSIONS,
    BrokerFeatures,
    wants_command_versions,
)
from wirestream.runtime.rabbitmq_stream.errors import MechanismNotOffered, ResponseError
from wirestream.runtime.rabbitmq_stream.events import (
    BrokerConnectionClosed,
    ConnectionFailed,
    ConnectionOpened,
    ConnectionTimedOut,
    Event,
    MetadataChanged,
    RequestFailed,
    SaslChallenge,
)
from wirestream.runtime.rabbitmq_stream.heartbeat_schedule import HeartbeatSchedule
from wirestream.runtime.rabbitmq_stream.outbox import Outbox
from wirestream.runtime.rabbitmq_stream.publishers import DEFAULT_MAX_IN_FLIGHT, Publishers
from wirestream.runtime.rabbitmq_stream.stream_commands import StreamCommands
from wirestream.runtime.rabbitmq_stream.subscriptions import (
    MAX_OUTSTANDING_CREDIT,
    Subscriptions,
)
from wirestream.runtime.rabbitmq_stream.super_stream_commands import SuperStreamCommands

__all__ = [
    "ClientConnection",
    "negotiate",
    "DEFAULT_FRAME_MAX",
    "DEFAULT_HEARTBEAT",
    "DEFAULT_MAX_IN_FLIGHT",
    "MAX_OUTSTANDING_CREDIT",
]

CLIENT: Final = "client"
DEFAULT_FRAME_MAX: Final = 1_048_576  # what 3.10.8 proposes (rabbitmq_stream.app: frame_max)
DEFAULT_HEARTBEAT: Final = 60  # seconds; 3.10.8's proposal
_OPENING_CAPTURE_LIMIT: Final = 65_536
_CLOSING: Final = frozenset(
    {ConnectionState.CLOSE_SENT, ConnectionState.CLOSE_RECEIVED, ConnectionState.CLOSED}
)


def negotiate(server: int, client: int) -> int:
    """One tuned value: the smaller of both, where 0 means "no limit" / "none"
    ('FrameMax => uint32 // in bytes, 0 means no limit', 'Heartbeat => uint32 // in
    seconds, 0 means no heartbeat')."""
    if server == 0:
        return client
    if client == 0:
        return server
    return min(server, client)


def _properties(values: Mapping[str, str | None]) -> list[Property]:
    return [Property(key, value) for key, value in values.items()]


def _as_dict(properties: Iterable[Property]) -> dict[str, str | None]:
    return {prop.key or "": prop.value for prop in properties}


def _open_failure_from_310(raw: bytes) -> OpenResponse | None:
    """3.10.8 answers a refused Open with <<Key, Version, Corr:32, Code:16>> and no
    properties array (10 bytes), which the adoc layout cannot decode (Truncated). While
    opening, the engine reads the code from the raw bytes received so far (``raw``) and
    stands in the frame the broker meant."""
    pos = 0
    while len(raw) - pos >= 4 + 10:
        size = int.from_bytes(raw[pos : pos + 4], "big")
        body = raw[pos + 4 : pos + 4 + size]
        if size == 10 and body[:4] == b"\x80\x15\x00\x01":
            cid = int.from_bytes(body[4:8], "big")
            code = int.from_bytes(body[8:10], "big")
            if code != ResponseCode.OK:
                return OpenResponse(cid, code, [])
        pos += 4 + size
    return None


class ClientConnection:
    """One client connection to a RabbitMQ stream broker (port 5552), without I/O.

    Call ``initiate_connection()`` first, write ``data_to_send()`` to the socket, feed
    what arrives to ``receive_data``; ``ConnectionOpened`` tells when commands may
    follow. Command methods that expect a response return its correlation id; the
    outcome comes back as an event carrying it (``close`` returns the events of what
    it ends, as every engine's does; ``close_correlation_id`` is its request's id).
    """

    # The generated machines this engine runs: class attributes, so that an engine can
    # run on tables regenerated from an edited IDL (test_rabbitmq_stream_engine_dispatch).
    CONNECTION_MACHINE: ClassVar[type[StateMachine[Any]]] = ConnectionMachine
    PUBLISHER_MACHINE: ClassVar[type[StateMachine[Any]]] = PublisherMachine
    SUBSCRIPTION_MACHINE: ClassVar[type[StateMachine[Any]]] = SubscriptionMachine

    def __init__(
        self,
        *,
        username: str = "guest",
        password: str = "guest",
        mechanism: str = "PLAIN",
        virtual_host: str = "/",
        frame_max: int = DEFAULT_FRAME_MAX,
        heartbeat: int = DEFAULT_HEARTBEAT,
        client_properties: Mapping[str, str] | None = None,
        max_frame_size: int = 16_777_216,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        message_events: bool = True,
    ) -> None:
        if mechanism not in ("PLAIN", "EXTERNAL"):
            raise ValueError("mechanism must be PLAIN or EXTERNAL (or answer challenges)")
        self._username = username
        self._password = password
        self._mechanism = mechanism
        self._virtual_host = virtual_host
        self._wanted_frame_max = frame_max
        self._wanted_heartbeat = heartbeat
        self._client_properties: dict[str, str | None] = {
            "product": "wirestream",
            "version": "0.1",
            "platform": f"Python {platform.python_version()}",
            "information": "https://github.com/rabbitmq/rabbitmq-server (stream protocol)",
        }
        self._client_properties.update(client_properties or {})
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1 byte")
        self.max_batch_size = max_batch_size
        """The largest uncompressed sub-entry batch a subscription accepts by default
        (``BatchTooLarge`` beyond it) -- and so the largest a producer on this connection
        writes, or a consumer with the same limits would refuse what it published."""
        self._decoder = StreamDecoder(max_frame_size=max_frame_size, sender="server")
        self._connection: StateMachine[ConnectionState] = self.CONNECTION_MACHINE(CLIENT)
        # The parts, by scope (publisher and subscription ids are uint8 and reused: an
        # id whose machine is back to free is forgotten, an unknown id answers with a
        # free machine), all sending through one outbox.
        self._outbox = Outbox(self._connection)
        self._publishers = Publishers(self._outbox, self.PUBLISHER_MACHINE, CLIENT)
        self._subscriptions = Subscriptions(
            self._outbox,
            self.SUBSCRIPTION_MACHINE,
            CLIENT,
            max_batch_size=max_batch_size,
            message_events=message_events,  # False: one MessagesReceived per chunk
        )
        self._streams = StreamCommands(self._outbox)
        self._super_streams = SuperStreamCommands(self._outbox)
        # The generated dispatch, bound once: frame class -> handler method, per scope.
        # (typed: _implements below has mypy check every handler the binders name)
        self._dispatch = Dispatch(
            self.CONNECTION_MACHINE, CLIENT, bind_client(self.CONNECTION_MACHINE, self)
        )
        self._publisher_dispatch = Dispatch(
            self.PUBLISHER_MACHINE, CLIENT, bind_client(self.PUBLISHER_MACHINE, self)
        )
        self._subscription_dispatch = Dispatch(
            self.SUBSCRIPTION_MACHINE, CLIENT, bind_client(self.SUBSCRIPTION_MACHINE, self)
        )
        self.close_correlation_id: int | None = None
        """The correlation id of our CloseRequest (``close``): its CloseResponse ends the
        connection with ``BrokerConnectionClosed(by_peer=False)``."""
        self.heartbeat = 0  # negotiated seconds; valid once open
        self.server_properties: dict[str, str | None] = {}
        self._opened: ConnectionOpened | None = None  # held while versions are exchanged
        self.ignored_frames = 0  # frames the tables say to drop (debug counter)
        self.frames_received = 0  # whole frames decoded (the engine contract's progress)
        self._opening_bytes = bytearray()  # see _open_failure_from_310
        self._heartbeats = HeartbeatSchedule()  # see handle_timer

    # --- state -----------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._connection.state

    @property
    def buffered_bytes(self) -> int:
        """Bytes received of a frame that is not complete yet."""
        return self._decoder.buffered

    @property
    def is_open(self) -> bool:
        return self._connection.state is ConnectionState.OPEN

    @property
    def closed(self) -> bool:
        """No command may follow: the connection is over, or our CloseRequest is out
        (``close``; its CloseResponse, still read, then reports ``BrokerConnectionClosed``)."""
        return self._connection.state in _CLOSING

    @property
    def frame_max(self) -> int:
        """The negotiated frame_max (0 = no limit); valid once open."""
        return self._outbox.frame_max

    @frame_max.setter
    def frame_max(self, value: int) -> None:
        self._outbox.frame_max = value

    @property
    def features(self) -> BrokerFeatures:
        """What the broker offers beyond 3.10 (``features``): valid once open."""
        return self._outbox.features

    @features.setter
    def features(self, value: BrokerFeatures) -> None:
        self._outbox.features = value

    @property
    def ignored_outcomes(self) -> int:
        """Confirms and errors for publishing ids not outstanding (debug counter)."""
        return self._publishers.ignored_outcomes

    @property
    def outstanding_requests(self) -> dict[int, str]:
        """Correlation id -> request frame name, for requests awaiting their response."""
        return {cid: type(frame).__name__ for cid, frame in self._outbox.pending.items()}

    @property
    def consumer_updates_pending(self) -> dict[int, int]:
        """The broker's ConsumerUpdate correlation ids awaiting an answer -> subscription."""
        return dict(self._subscriptions.consumer_updates)

    publisher_state = Delegated("_publishers", Publishers.publisher_state)
    unconfirmed = Delegated("_publishers", Publishers.unconfirmed)
    publish_capacity = Delegated("_publishers", Publishers.publish_capacity)
    subscription_state = Delegated("_subscriptions", Subscriptions.subscription_state)
    credit_left = Delegated("_subscriptions", Subscriptions.credit_left)
    consumer_active = Delegated("_subscriptions", Subscriptions.consumer_active)

    # --- I/O surface -------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        return self._outbox.drain()

    def receive_data(self, data: bytes, now: float | None = None) -> list[Event]:
        """Feed bytes from the broker; ``b""`` means the transport closed (EOF).

        ``now`` is accepted for the engine contract and not needed: liveness is "any
        bytes since the last heartbeat check" (``handle_timer`` keeps the clock)."""
        events: list[Event] = []
        if not data:
            if self._connection.state is not ConnectionState.CLOSED:
                self._terminate(
                    events, BrokerConnectionClosed(None, "transport closed", by_peer=True)
                )
            return events
        if self._connection.state is ConnectionState.CLOSED:
            self.ignored_frames += 1
            return events
        self._heartbeats.received = True
        if self._connection.state is ConnectionState.OPENING:
            self._opening_bytes += data[: _OPENING_CAPTURE_LIMIT - len(self._opening_bytes)]
        try:
            try:
                frames = self._decoder.feed(data)
            except DecodeError as error:
                self.frames_received += len(error.frames)
                self._handle_frames(error.frames, events)
                quirk = None
                if (
                    isinstance(error, Truncated)
                    and self._connection.state is ConnectionState.OPENING
                ):
                    quirk = _open_failure_from_310(bytes(self._opening_bytes))
                if quirk is None:
                    raise
                self._handle_frames([quirk], events)
                return events
            self.frames_received += len(frames)
            self._handle_frames(frames, events)
        except RemoteProtocolError as error:
            self._fail_connection(error, events)
            error.events = events
            raise
        return events

    def _handle_frames(self, frames: Iterable[object], events: list[Event]) -> None:
        """Each frame through the connection machine, then to ``on_connection_<frame>``
        (the generated dispatch); ignore rows are counted, error rows raise."""
        receive = self._dispatch.receive
        connection = self._connection
        for frame in frames:
            if not receive(connection, frame, events):
                self.ignored_frames += 1

    # --- heartbeat -------------------------------------------------------------------------

    def get_timer(self) -> float | None:
        """When ``handle_timer`` wants to run next (``0.0``: as soon as possible, to start
        the heartbeat schedule after the connection opened); None: no timer."""
        if self._connection.state is not ConnectionState.OPEN or self.heartbeat == 0:
            return None
        next_check = self._heartbeats.next_check
        return 0.0 if next_check is None else next_check

    def handle_timer(self, now: float) -> list[Event]:
        """Heartbeats, the way 3.10.8's rabbit_heartbeat does them
        (``HeartbeatSchedule``): a Heartbeat when nothing was sent during a check
        period, ``ConnectionTimedOut`` when nothing arrived for 2 intervals."""
        events: list[Event] = []
        if self._connection.state is not ConnectionState.OPEN or self.heartbeat == 0:
            return events
        schedule = self._heartbeats
        if schedule.next_check is None:
            schedule.start(now, self.heartbeat)
            self._outbox.sent = False
            return events
        if now < schedule.next_check:
            return events
        if not self._outbox.sent:
            self._outbox.send(Heartbeat())
        self._outbox.sent = False
        silence = schedule.check(now, self.heartbeat)
        if silence is not None:
            self._terminate(events, ConnectionTimedOut(silence))
        return events

    # --- handshake -------------------------------------------------------------------------

    def initiate_connection(self) -> None:
        """Queue the first frame: 'Once a client is connected to the server, it initiates
        an authentication sequence' (PeerProperties)."""
        props = _properties(self._client_properties)
        self._outbox.request(lambda cid: PeerPropertiesRequest(cid, props))

    def on_connection_peer_properties_response(
        self, frame: PeerPropertiesResponse, events: list[Event]
    ) -> None:
        self._outbox.take_pending(frame)
        if self._handshake_failed("peer_properties", frame.response_code, events):
            return
        self.server_properties = _as_dict(frame.peer_properties)
        self._outbox.request(SaslHandshakeRequest)

    def on_connection_sasl_handshake_response(
        self, frame: SaslHandshakeResponse, events: list[Event]
    ) -> None:
        self._outbox.take_pending(frame)
        if self._handshake_failed("sasl_handshake", frame.response_code, events):
            return
        # 'It can then pick one from the list the server returns.'
        if self._mechanism not in frame.mechanisms:
            error = MechanismNotOffered(
                f"the broker offers {frame.mechanisms}, not {self._mechanism}"
            )
            # Nothing to send: 3.10.8 treats any frame but SaslAuthenticate here as an
            # invalid transition and closes the socket; the transport is dropped.
            self._terminate(events, ConnectionFailed("sasl_handshake", error))
            return
        if self._mechanism == "PLAIN":
            response = b"\0" + self._username.encode() + b"\0" + self._password.encode()
        else:  # EXTERNAL: the identity comes from the TLS client certificate
            response = b""
        self._authenticate(response)

    def _authenticate(self, response: bytes) -> None:
        mechanism = self._mechanism
        self._outbox.request(lambda cid: SaslAuthenticateRequest(cid, mechanism, response))

    def answer_sasl_challenge(self, response: bytes) -> None:
        """Answer a ``SaslChallenge`` ('the client answers to the server's challenge(s),
        using the SASL mechanism it picked')."""
        self._authenticate(response)

    def on_connection_sasl_authenticate_response(
        self, frame: SaslAuthenticateResponse, events: list[Event]
    ) -> None:
        self._outbox.take_pending(frame)
        state = self._connection.state
        if state is ConnectionState.SASL_CHALLENGED:
            challenge = frame.sasl_opaque_data[0] if frame.sasl_opaque_data else b""
            events.append(SaslChallenge(self._mechanism, challenge or b""))
            return
        self._handshake_failed("sasl_authenticate", frame.response_code, events)
        # OK: 'The server will send a Tune frame once it is satisfied'.

    def on_connection_tune(self, frame: Tune, events: list[Event]) -> None:
        self.frame_max = negotiate(frame.frame_max, self._wanted_frame_max)
        self.heartbeat = negotiate(frame.heartbeat, self._wanted_heartbeat)
        self._outbox.send(Tune(self.frame_max, self.heartbeat))
        vhost = self._virtual_host
        self._outbox.request(lambda cid: OpenRequest(cid, vhost))

    def on_connection_open_response(self, frame: OpenResponse, events: list[Event]) -> None:
        self._outbox.take_pending(frame)
        self._opening_bytes.clear()
        if self._handshake_failed("open", frame.response_code, events):
            return
        opened = ConnectionOpened(
            self.frame_max,
            self.heartbeat,
            dict(self.server_properties),
            _as_dict(frame.connection_properties),
        )
        version = self.server_properties.get("version")
        self.features = BrokerFeatures(version)
        if not wants_command_versions(version):
            events.append(opened)  # 3.10 and older: the 3.10 command set, nothing to ask
            return
        # Client.java maybeExchangeCommandVersions: a 3.11+ broker learns what we handle
        # (Deliver 1..2, so it delivers version 2) and says what it handles; the
        # connection counts as opened once that answer is in.
        self._opened = opened
        commands = [CommandVersion(*command) for command in CLIENT_COMMAND_VERSIONS]
        self._outbox.request(lambda cid: ExchangeCommandVersionsRequest(cid, commands))

    def on_connection_exchange_command_versions_response(
        self, frame: ExchangeCommandVersionsResponse, events: list[Event]
    ) -> None:
        self._outbox.take_pending(frame)
        version = self.server_properties.get("version")
        if frame.response_code == ResponseCode.OK:
            answer = [(c.key, c.min_version, c.max_version) for c in frame.commands]
            self.features = BrokerFeatures.from_answer(version, answer)
        # else: Java logs the error and goes on without any newer command
        opened, self._opened = self._opened, None
        if opened is not None:
            events.append(opened)

    def _handshake_failed(self, step: str, code: int, events: list[Event]) -> bool:
        """After the machine saw a handshake response: True when it failed (the table
        moved to closed: 3.10.8 answers, then closes the socket)."""
        if self._connection.state is not ConnectionState.CLOSED:
            return False
        self._terminate(events, ConnectionFailed(step, ResponseError.from_code(code)))
        return True

    # --- closing ---------------------------------------------------------------------------

    def close(self, code: int = ResponseCode.OK, reason: str = "") -> list[Event]:
        """Close the connection: queue CloseRequest ('Close' From 'Client & Server',
        Expects response? 'Yes'; its correlation id is ``close_correlation_id``) and end
        what it leaves unanswered; ``BrokerConnectionClosed`` follows from ``receive_data``
        when the CloseResponse arrives.

        Returns the events of what ends now: the table ignores every frame but the
        CloseResponse (or a crossing CloseRequest) from here on, so outstanding requests
        fail (``RequestFailed`` without an error) and unconfirmed messages are abandoned
        (``PublishAbandoned``); subscriptions end silently, as with any end of the
        connection. Raises ``IllegalSend`` where the table allows no CloseRequest
        (during the handshake, or once closed)."""
        self.close_correlation_id = self._outbox.request(
            lambda cid: CloseRequest(cid, code, reason)
        )
        events: list[Event] = []
        self._end_everything(events)
        return events

    def on_connection_close_request(self, frame: CloseRequest, events: list[Event]) -> None:
        # 'Close' From 'Client & Server', Expects response? 'Yes': answer with the
        # broker's own correlation id (its id space, not ours).
        self._outbox.send(CloseResponse(frame.correlation_id, ResponseCode.OK))
        self._terminate(
            events,
            BrokerConnectionClosed(frame.closing_code, frame.closing_reason or "", by_peer=True),
        )

    def on_connection_close_response(self, frame: CloseResponse, events: list[Event]) -> None:
        request = self._outbox.take_pending(frame)
        self._terminate(
            events,
            BrokerConnectionClosed(request.closing_code, request.closing_reason or "", False),
        )

    def _fail_connection(self, error: RemoteProtocolError, events: list[Event]) -> None:
        """The broker broke a connection-level rule: queue the CloseRequest 3.10.8 would
        send in our place (13 unknown frame; 14 frame too large) and close."""
        code = (
            ResponseCode.FRAME_TOO_LARGE
            if isinstance(error, FrameTooLarge)
            else ResponseCode.UNKNOWN_FRAME
        )
        close = CloseRequest(self._outbox.new_correlation_id(), code, str(error)[:200])
        if self._connection.allows_send(close):
            self._outbox.send(close)
        if self._connection.state is not ConnectionState.CLOSED:
            self._terminate(events, BrokerConnectionClosed(code, str(error), by_peer=False))

    def _terminate(self, events: list[Event], final: Event) -> None:
        """The connection is over: every outstanding thing fails, then ``final``."""
        self._connection.state = ConnectionState.CLOSED  # not a frame: EOF, timeout, failure
        self._end_everything(events)
        self._outbox.pending.clear()  # our CloseRequest too, when it crossed the broker's
        self._heartbeats.stop()
        events.append(final)

    def _end_everything(self, events: list[Event]) -> None:
        """Fail every outstanding request but our CloseRequest (its response ends the
        connection), abandon what publishers have unconfirmed, forget every publisher
        and subscription."""
        pending = self._outbox.pending
        for cid, request in list(pending.items()):
            if not isinstance(request, CloseRequest):
                del pending[cid]
                events.append(RequestFailed(cid, type(request).__name__, None))
        self._publishers.end_all("connection closed", events)
        self._subscriptions.end_all()
        self._opened = None

    def on_connection_heartbeat(self, frame: Heartbeat, events: list[Event]) -> None:
        pass  # any bytes count as life (see handle_timer)

    # --- which scope a frame goes to ---------------------------------------------------

    def _response_to_publisher(
        self, frame: DeclarePublisherResponse | DeletePublisherResponse, events: list[Event]
    ) -> None:
        """A response about a publisher: its request (matched by correlation id) names
        the publisher, whose machine takes the response. The request made the entry
        (declare) or found it (delete), and only its response or the connection's end
        forgets it."""
        request = self._outbox.take_pending(frame)
        publisher = self._publishers.registry[request.publisher_id]
        if not self._publisher_dispatch.receive(
            publisher.machine, frame, request, publisher, events
        ):
            self.ignored_frames += 1

    on_connection_declare_publisher_response = _response_to_publisher
    on_connection_delete_publisher_response = _response_to_publisher

    def _to_publisher(self, frame: PublishConfirm | PublishError, events: list[Event]) -> None:
        """A frame carrying its publisher id: through that id's machine (a free one for an
        unknown id) to ``on_publisher_<frame>``. (One lookup for the usual case, a live
        id: this runs per confirm.)"""
        registry = self._publishers.registry
        publisher = registry.get(frame.publisher_id)
        machine = registry.machine(frame.publisher_id) if publisher is None else publisher.machine
        if not self._publisher_dispatch.receive(machine, frame, publisher, events):
            # Outcomes for a publisher that is gone, or of an earlier one with its id.
            self.ignored_frames += 1
            self._publishers.ignored_outcomes += len(
                frame.publishing_ids
                if isinstance(frame, PublishConfirm)
                else frame.publishing_errors
            )

    on_connection_publish_confirm = _to_publisher
    on_connection_publish_error = _to_publisher

    def _response_to_subscription(
        self, frame: SubscribeResponse | UnsubscribeResponse, events: list[Event]
    ) -> None:
        """A response about a subscription: its request (matched by correlation id) names
        the subscription, whose machine takes the response (the request made or found
        the entry; only its response or the connection's end forgets it)."""
        request = self._outbox.take_pending(frame)
        subscription = self._subscriptions.registry[request.subscription_id]
        if not self._subscription_dispatch.receive(
            subscription.machine, frame, request, subscription, events
        ):
            self.ignored_frames += 1

    on_connection_subscribe_response = _response_to_subscription
    on_connection_unsubscribe_response = _response_to_subscription

    def _to_subscription(
        self,
        frame: Deliver | DeliverV2 | CreditResponse | ConsumerUpdateRequest,
        events: list[Event],
    ) -> None:
        """A frame carrying its subscription id: through that id's machine (a free one
        for an unknown id) to ``on_subscription_<frame>``. (One lookup for the usual
        case, a live id: this runs per chunk.)"""
        registry = self._subscriptions.registry
        subscription = registry.get(frame.subscription_id)
        machine = (
            registry.machine(frame.subscription_id)
            if subscription is None
            else subscription.machine
        )
        if not self._subscription_dispatch.receive(machine, frame, subscription, events):
            self.ignored_frames += 1

    on_connection_deliver = _to_subscription
    on_connection_deliver_v2 = _to_subscription
    on_connection_credit_response = _to_subscription
    on_connection_consumer_update_request = _to_subscription

    def on_connection_metadata_update(self, frame: MetadataUpdate, events: list[Event]) -> None:
        stream = frame.stream or ""
        events.append(MetadataChanged(stream, frame.code))
        # 'Stream => string // the stream implied': 3.10.8 has already removed this
        # connection's publishers and subscriptions on the stream; each one's machine
        # decides (declared/active -> on_publisher/on_subscription_metadata_update;
        # pending ones ignore it and wait for their response).
        to_publisher = self._publisher_dispatch.receive
        for publisher in [p for p in self._publishers.registry.values() if p.stream == stream]:
            to_publisher(publisher.machine, frame, publisher, events)
        to_subscription = self._subscription_dispatch.receive
        subscriptions = self._subscriptions.registry.values()
        for subscription in [s for s in subscriptions if s.stream == stream]:
            to_subscription(subscription.machine, frame, subscription, events)

    # --- the parts' commands and handlers ----------------------------------------------

    create_stream = Delegated("_streams", StreamCommands.create_stream)
    delete_stream = Delegated("_streams", StreamCommands.delete_stream)
    metadata = Delegated("_streams", StreamCommands.metadata)
    stream_stats = Delegated("_streams", StreamCommands.stream_stats)
    on_connection_create_response = Delegated(
        "_streams", StreamCommands.on_connection_create_response
    )
    on_connection_delete_response = Delegated(
        "_streams", StreamCommands.on_connection_delete_response
    )
    on_connection_metadata_response = Delegated(
        "_streams", StreamCommands.on_connection_metadata_response
    )
    on_connection_stream_stats_response = Delegated(
        "_streams", StreamCommands.on_connection_stream_stats_response
    )

    route = Delegated("_super_streams", SuperStreamCommands.route)
    partitions = Delegated("_super_streams", SuperStreamCommands.partitions)
    create_super_stream = Delegated("_super_streams", SuperStreamCommands.create_super_stream)
    delete_super_stream = Delegated("_super_streams", SuperStreamCommands.delete_super_stream)
    on_connection_route_response = Delegated(
        "_super_streams", SuperStreamCommands.on_connection_route_response
    )
    on_connection_partitions_response = Delegated(
        "_super_streams", SuperStreamCommands.on_connection_partitions_response
    )
    on_connection_create_super_stream_response = Delegated(
        "_super_streams", SuperStreamCommands.on_connection_create_super_stream_response
    )
    on_connection_delete_super_stream_response = Delegated(
        "_super_streams", SuperStreamCommands.on_connection_delete_super_stream_response
    )

    declare_publisher = Delegated("_publishers", Publishers.declare_publisher)
    delete_publisher = Delegated("_publishers", Publishers.delete_publisher)
    publish = Delegated("_publishers", Publishers.publish)
    publish_filtered = Delegated("_publishers", Publishers.publish_filtered)
    publish_batch = Delegated("_publishers", Publishers.publish_batch)
    publish_sub_entries = Delegated("_publishers", Publishers.publish_sub_entries)
    query_publisher_sequence = Delegated("_publishers", Publishers.query_publisher_sequence)
    on_connection_query_publisher_sequence_response = Delegated(
        "_publishers", Publishers.on_connection_query_publisher_sequence_response
    )
    on_publisher_declare_publisher_response = Delegated(
        "_publishers", Publishers.on_publisher_declare_publisher_response
    )
    on_publisher_delete_publisher_response = Delegated(
        "_publishers", Publishers.on_publisher_delete_publisher_response
    )
    on_publisher_publish_confirm = Delegated("_publishers", Publishers.on_publisher_publish_confirm)
    on_publisher_publish_error = Delegated("_publishers", Publishers.on_publisher_publish_error)
    on_publisher_metadata_update = Delegated("_publishers", Publishers.on_publisher_metadata_update)

    subscribe = Delegated("_subscriptions", Subscriptions.subscribe)
    unsubscribe = Delegated("_subscriptions", Subscriptions.unsubscribe)
    credit = Delegated("_subscriptions", Subscriptions.credit)
    chunk_consumed = Delegated("_subscriptions", Subscriptions.chunk_consumed)
    answer_consumer_update = Delegated("_subscriptions", Subscriptions.answer_consumer_update)
    store_offset = Delegated("_subscriptions", Subscriptions.store_offset)
    query_offset = Delegated("_subscriptions", Subscriptions.query_offset)
    on_connection_query_offset_response = Delegated(
        "_subscriptions", Subscriptions.on_connection_query_offset_response
    )
    on_subscription_subscribe_response = Delegated(
        "_subscriptions", Subscriptions.on_subscription_subscribe_response
    )
    on_subscription_unsubscribe_response = Delegated(
        "_subscriptions", Subscriptions.on_subscription_unsubscribe_response
    )
    on_subscription_deliver = Delegated("_subscriptions", Subscriptions.on_subscription_deliver)
    on_subscription_deliver_v2 = Delegated(
        "_subscriptions", Subscriptions.on_subscription_deliver_v2
    )
    on_subscription_credit_response = Delegated(
        "_subscriptions", Subscriptions.on_subscription_credit_response
    )
    on_subscription_consumer_update_request = Delegated(
        "_subscriptions", Subscriptions.on_subscription_consumer_update_request
    )
    on_subscription_metadata_update = Delegated(
        "_subscriptions", Subscriptions.on_subscription_metadata_update
    )


if TYPE_CHECKING:

    def _implements(engine: ClientConnection) -> None:
        """Never called: every client binder of the committed version, given the engine
        (mypy checks it has each handler the binder names, taking a compatible frame)."""
        ConnectionMachine.bind_client(engine)
        PublisherMachine.bind_client(engine)
        SubscriptionMachine.bind_client(engine)
