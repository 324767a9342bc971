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
row (or no row) is the broker's violation. This module adds what tables cannot hold:

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
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from wirestream.generated.rabbitmq_stream.v1 import (
    ChunkType,
    CloseRequest,
    CloseResponse,
    CommandVersion,
    CompressionType,
    ConsumerUpdateRequest,
    ConsumerUpdateResponse,
    CreateRequest,
    CreateResponse,
    CreateSuperStreamRequest,
    CreateSuperStreamResponse,
    CreditRequest,
    CreditResponse,
    DeclarePublisherRequest,
    DeclarePublisherResponse,
    DeletePublisherRequest,
    DeletePublisherResponse,
    DeleteRequest,
    DeleteResponse,
    DeleteSuperStreamRequest,
    DeleteSuperStreamResponse,
    Deliver,
    DeliverV2,
    ExchangeCommandVersionsRequest,
    ExchangeCommandVersionsResponse,
    Frame,
    Heartbeat,
    MetadataRequest,
    MetadataResponse,
    MetadataUpdate,
    OffsetSpecification,
    OffsetSpecNext,
    OffsetSpecNone,
    OffsetSpecOffset,
    OpenRequest,
    OpenResponse,
    PartitionsRequest,
    PartitionsResponse,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    Property,
    Publish,
    PublishConfirm,
    PublishedMessage,
    PublishedMessageV2,
    PublishError,
    PublishV2,
    QueryOffsetRequest,
    QueryOffsetResponse,
    QueryPublisherSequenceRequest,
    QueryPublisherSequenceResponse,
    ResponseCode,
    RouteRequest,
    RouteResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    StoreOffset,
    StreamDecoder,
    SubEntryBatch,
    StreamStatsRequest,
    StreamStatsResponse,
    SubscribeRequest,
    SubscribeResponse,
    Tune,
    UnsubscribeRequest,
    UnsubscribeResponse,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import (
    ConnectionMachine,
    ConnectionState,
    PublisherMachine,
    PublisherState,
    SubscriptionMachine,
    SubscriptionState,
)
from wirestream.runtime.errors import (
    DecodeError,
    FrameTooLarge,
    InvalidGrant,
    LocalProtocolError,
    RemoteProtocolError,
    Truncated,
)
from wirestream.runtime.flow import Window
from wirestream.runtime.machine import (
    Dispatch,
    MachineRegistry,
    StateMachine,
    check_all,
    send_all,
)
from wirestream.runtime.rabbitmq_stream.chunk import (
    DEFAULT_MAX_BATCH_SIZE,
    chunk_records,
    sub_entry_batch,
)
from wirestream.runtime.rabbitmq_stream.credit import CreditOnConsumption
from wirestream.runtime.rabbitmq_stream.features import (
    CLIENT_COMMAND_VERSIONS,
    BrokerFeatures,
    Feature,
    wants_command_versions,
)
from wirestream.runtime.rabbitmq_stream.errors import (
    ChunkError,
    MechanismNotOffered,
    MessageTooLarge,
    MismatchedResponse,
    PublishingIdNotIncreasing,
    ResponseError,
    UnknownCorrelationId,
)
from wirestream.runtime.rabbitmq_stream.events import (
    ChunkDelivered,
    ChunkFailed,
    ChunkSkipped,
    ConnectionClosed,
    ConnectionFailed,
    ConnectionOpened,
    ConnectionTimedOut,
    ConsumerUpdateRequested,
    Event,
    MessageReceived,
    MessagesReceived,
    MetadataChanged,
    MetadataReceived,
    OffsetQueried,
    PartitionsReceived,
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublisherDeclared,
    PublisherDeleted,
    PublisherSequence,
    PublishErrored,
    RequestFailed,
    RouteReceived,
    SaslChallenge,
    StreamCreated,
    StreamDeleted,
    StreamStatsReceived,
    Subscribed,
    SuperStreamCreated,
    SuperStreamDeleted,
    SubscriptionClosed,
    Unsubscribed,
)

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
DEFAULT_MAX_IN_FLIGHT: Final = 10_000
"""Unconfirmed messages per publisher. 3.10.8 stops reading a connection at 50,000
unconfirmed messages (``initial_credits``) with no frame to say so; stay well below."""
MAX_OUTSTANDING_CREDIT: Final = 0xFFFF
"""Chunk credit granted but not yet used, per subscription (one Credit frame's uint16).
The engine refuses a grant beyond it, so its count can never saturate below the
broker's (which is unbounded)."""
_MAX_CORRELATION_ID: Final = 0xFFFFFFFF
_PUBLISH_OVERHEAD: Final = 4 + 2 + 2 + 1 + 4  # size, key, version, publisher id, count
_PUBLISH_HEAD: Final = struct.Struct(
    ">IHHBI"
)  # 'Publish => Key Version PublisherId PublishedMessages'
_ENTRY_HEAD: Final = struct.Struct(">QI")  # 'PublishingId => uint64', <<0:1, Size:31>>
_BATCH_HEADER: Final = 1 + 2 + 4 + 4  # type/compression, records, uncompressed, size
_SUB_ENTRY_HEAD: Final = struct.Struct(">QBHII")  # PublishingId, then <<1:1, CompType:3, ...>>
_OPENING_CAPTURE_LIMIT: Final = 65_536
_CLOSING: Final = frozenset(
    {ConnectionState.CLOSE_SENT, ConnectionState.CLOSE_RECEIVED, ConnectionState.CLOSED}
)

# Request -> the response that answers it (matched by correlation id).
_RESPONSE_TO: Final[dict[type, type]] = {
    PeerPropertiesRequest: PeerPropertiesResponse,
    SaslHandshakeRequest: SaslHandshakeResponse,
    SaslAuthenticateRequest: SaslAuthenticateResponse,
    OpenRequest: OpenResponse,
    CloseRequest: CloseResponse,
    CreateRequest: CreateResponse,
    DeleteRequest: DeleteResponse,
    MetadataRequest: MetadataResponse,
    DeclarePublisherRequest: DeclarePublisherResponse,
    DeletePublisherRequest: DeletePublisherResponse,
    QueryPublisherSequenceRequest: QueryPublisherSequenceResponse,
    SubscribeRequest: SubscribeResponse,
    UnsubscribeRequest: UnsubscribeResponse,
    QueryOffsetRequest: QueryOffsetResponse,
    RouteRequest: RouteResponse,
    PartitionsRequest: PartitionsResponse,
    CreateSuperStreamRequest: CreateSuperStreamResponse,
    DeleteSuperStreamRequest: DeleteSuperStreamResponse,
    ExchangeCommandVersionsRequest: ExchangeCommandVersionsResponse,
    StreamStatsRequest: StreamStatsResponse,
}
_SAC_PROPERTY: Final = "single-active-consumer"  # PROTOCOL.adoc Subscribe; Utils.java:86
_FILTER_PREFIX: Final = "filter."  # Utils.java:88 SUBSCRIPTION_PROPERTY_FILTER_PREFIX


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


@dataclass(slots=True)
class _Publisher:
    publisher_id: int
    machine: StateMachine[PublisherState]
    stream: str
    window: Window  # unconfirmed publishing ids: we send, confirms give back
    next_publishing_id: int = 1
    unconfirmed: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Subscription:
    subscription_id: int
    machine: StateMachine[SubscriptionState]
    stream: str
    credit: Window  # chunks: the broker sends, we grant
    min_offset: int  # records before it are dropped (OffsetSpecification type 4)
    strategy: CreditOnConsumption | None
    unconsumed: int = 0  # ChunkDelivered not yet acknowledged by chunk_consumed
    single_active: bool = False  # subscribed with single-active-consumer=true
    sac_active: bool = False  # the broker's last ConsumerUpdate said active


def _publisher_machine(publisher: _Publisher) -> StateMachine[Any]:
    return publisher.machine


def _subscription_machine(subscription: _Subscription) -> StateMachine[Any]:
    return subscription.machine


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
        self._max_batch_size = max_batch_size
        self._message_events = message_events  # False: one MessagesReceived per chunk
        self._decoder = StreamDecoder(max_frame_size=max_frame_size, sender="server")
        self._connection: StateMachine[ConnectionState] = self.CONNECTION_MACHINE(CLIENT)
        # The generated dispatch, bound once: frame class -> handler method, per scope.
        self._dispatch = Dispatch(self.CONNECTION_MACHINE, CLIENT, self)
        self._publisher_dispatch = Dispatch(self.PUBLISHER_MACHINE, CLIENT, self)
        self._subscription_dispatch = Dispatch(self.SUBSCRIPTION_MACHINE, CLIENT, self)
        # Publisher and subscription ids (uint8) are reused: an id whose machine is back
        # to free is forgotten, and an unknown id answers with a free machine.
        self._publishers: MachineRegistry[int, _Publisher] = MachineRegistry(
            self.PUBLISHER_MACHINE, CLIENT, machine_of=_publisher_machine
        )
        self._subscriptions: MachineRegistry[int, _Subscription] = MachineRegistry(
            self.SUBSCRIPTION_MACHINE, CLIENT, machine_of=_subscription_machine
        )
        self._out = bytearray()
        self._pending: dict[int, Frame] = {}
        self._next_correlation_id = 1
        self.close_correlation_id: int | None = None
        """The correlation id of our CloseRequest (``close``): its CloseResponse ends the
        connection with ``ConnectionClosed(by_peer=False)``."""
        self.frame_max = 0  # negotiated (0 = no limit); valid once open
        self.heartbeat = 0  # negotiated seconds; valid once open
        self.server_properties: dict[str, str | None] = {}
        self.features = BrokerFeatures()
        """What the broker offers beyond 3.10 (``features``): valid once open."""
        self._opened: ConnectionOpened | None = None  # held while versions are exchanged
        self._consumer_updates: dict[int, int] = {}  # broker's correlation id -> subscription
        self.ignored_frames = 0  # frames the tables say to drop (debug counter)
        self.frames_received = 0  # whole frames decoded (the engine contract's progress)
        self.ignored_outcomes = 0  # confirms/errors for publishing ids not outstanding
        self._opening_bytes = bytearray()  # see _open_failure_from_310
        # heartbeat (see handle_timer)
        self._next_check: float | None = None
        self._sent_since_check = False
        self._received_since_check = False
        self._silent_checks = 0

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
        (``close``; its CloseResponse, still read, then reports ``ConnectionClosed``)."""
        return self._connection.state in _CLOSING

    def publisher_state(self, publisher_id: int) -> PublisherState:
        state: PublisherState = self._publishers.machine(publisher_id).state
        return state

    def subscription_state(self, subscription_id: int) -> SubscriptionState:
        state: SubscriptionState = self._subscriptions.machine(subscription_id).state
        return state

    def unconfirmed(self, publisher_id: int) -> int:
        """Publishing ids of the publisher still waiting for a confirm or an error."""
        publisher = self._publishers.get(publisher_id)
        return 0 if publisher is None else len(publisher.unconfirmed)

    def publish_capacity(self, publisher_id: int) -> int:
        """How many more messages the publisher may publish before confirms arrive."""
        publisher = self._publishers.get(publisher_id)
        return 0 if publisher is None else publisher.window.available

    def credit_left(self, subscription_id: int) -> int:
        """Chunks the broker may still send to the subscription."""
        subscription = self._subscriptions.get(subscription_id)
        return 0 if subscription is None else subscription.credit.available

    @property
    def outstanding_requests(self) -> dict[int, str]:
        """Correlation id -> request frame name, for requests awaiting their response."""
        return {cid: type(frame).__name__ for cid, frame in self._pending.items()}

    # --- I/O surface -------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        data = bytes(self._out)
        self._out.clear()
        return data

    def receive_data(self, data: bytes, now: float | None = None) -> list[Event]:
        """Feed bytes from the broker; ``b""`` means the transport closed (EOF).

        ``now`` is accepted for the engine contract and not needed: liveness is "any
        bytes since the last heartbeat check" (``handle_timer`` keeps the clock)."""
        events: list[Event] = []
        if not data:
            if self._connection.state is not ConnectionState.CLOSED:
                self._terminate(events, ConnectionClosed(None, "transport closed", by_peer=True))
            return events
        if self._connection.state is ConnectionState.CLOSED:
            self.ignored_frames += 1
            return events
        self._received_since_check = True
        if self._connection.state is ConnectionState.OPENING:
            self._opening_bytes += data[: _OPENING_CAPTURE_LIMIT - len(self._opening_bytes)]
        try:
            try:
                frames = self._decoder.feed(data)
            except DecodeError as error:
                self.frames_received += len(error.frames)
                self._handle_frames(error.frames, events)
                quirk = self._open_failure_from_310(error)
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
        return 0.0 if self._next_check is None else self._next_check

    def handle_timer(self, now: float) -> list[Event]:
        """Heartbeats, the way 3.10.8's rabbit_heartbeat does them: a check every half
        interval; a Heartbeat goes out when nothing was sent during a whole check
        period (so the broker hears from us at least once per interval); the broker is
        dead when nothing arrived for 2 intervals (4 silent checks)."""
        events: list[Event] = []
        if self._connection.state is not ConnectionState.OPEN or self.heartbeat == 0:
            return events
        period = self.heartbeat / 2
        if self._next_check is None:
            self._start_heartbeat(now)
            return events
        if now < self._next_check:
            return events
        self._next_check = now + period
        if not self._sent_since_check:
            self._send(Heartbeat())
        self._sent_since_check = False
        if self._received_since_check:
            self._silent_checks = 0
        else:
            self._silent_checks += 1
        self._received_since_check = False
        if self._silent_checks >= 4:
            silence = self._silent_checks * period
            self._terminate(events, ConnectionTimedOut(silence))
        return events

    def _start_heartbeat(self, now: float) -> None:
        self._next_check = now + self.heartbeat / 2
        self._sent_since_check = self._received_since_check = False
        self._silent_checks = 0

    # --- sending ---------------------------------------------------------------------------

    def _send(self, frame: Frame, *machines: StateMachine[Any]) -> None:
        """Pass ``frame`` through the connection machine and ``machines``, then queue it.

        Nothing changes unless every machine allows it (the first refusal raises its
        ``IllegalSend``), and a frame over the negotiated frame_max is refused first.
        """
        data = frame_bytes(frame)
        if self.frame_max and len(data) > self.frame_max:
            raise MessageTooLarge(
                f"a {type(frame).__name__} of {len(data)} bytes exceeds frame_max {self.frame_max}"
            )
        self._send_encoded(frame, data, *machines)

    def _new_correlation_id(self) -> int:
        while True:
            cid = self._next_correlation_id
            self._next_correlation_id = cid % _MAX_CORRELATION_ID + 1  # 1..2^32-1, wrapping
            if cid not in self._pending:
                return cid

    def _request(self, build: Callable[[int], Frame], *machines: StateMachine[Any]) -> int:
        cid = self._new_correlation_id()
        frame = build(cid)
        self._send(frame, *machines)
        self._pending[cid] = frame
        return cid

    def _take_pending(self, response: Any) -> Any:
        """The request ``response`` answers (removed from the table)."""
        cid = response.correlation_id
        request = self._pending.get(cid)
        if request is None:
            raise UnknownCorrelationId(
                f"{type(response).__name__} with correlation id {cid} answers no outstanding request"
            )
        if _RESPONSE_TO[type(request)] is not type(response):
            raise MismatchedResponse(
                f"correlation id {cid} belongs to a {type(request).__name__}, "
                f"not answered by a {type(response).__name__}"
            )
        del self._pending[cid]
        return request

    # --- handshake -------------------------------------------------------------------------

    def initiate_connection(self) -> None:
        """Queue the first frame: 'Once a client is connected to the server, it initiates
        an authentication sequence' (PeerProperties)."""
        props = _properties(self._client_properties)
        self._request(lambda cid: PeerPropertiesRequest(cid, props))

    def on_connection_peer_properties_response(
        self, frame: PeerPropertiesResponse, events: list[Event]
    ) -> None:
        self._take_pending(frame)
        if self._handshake_failed("peer_properties", frame.response_code, events):
            return
        self.server_properties = _as_dict(frame.peer_properties)
        self._request(SaslHandshakeRequest)

    def on_connection_sasl_handshake_response(
        self, frame: SaslHandshakeResponse, events: list[Event]
    ) -> None:
        self._take_pending(frame)
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
        self._request(lambda cid: SaslAuthenticateRequest(cid, mechanism, response))

    def answer_sasl_challenge(self, response: bytes) -> None:
        """Answer a ``SaslChallenge`` ('the client answers to the server's challenge(s),
        using the SASL mechanism it picked')."""
        self._authenticate(response)

    def on_connection_sasl_authenticate_response(
        self, frame: SaslAuthenticateResponse, events: list[Event]
    ) -> None:
        self._take_pending(frame)
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
        self._send(Tune(self.frame_max, self.heartbeat))
        vhost = self._virtual_host
        self._request(lambda cid: OpenRequest(cid, vhost))

    def on_connection_open_response(self, frame: OpenResponse, events: list[Event]) -> None:
        self._take_pending(frame)
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
        self._request(lambda cid: ExchangeCommandVersionsRequest(cid, commands))

    def on_connection_exchange_command_versions_response(
        self, frame: ExchangeCommandVersionsResponse, events: list[Event]
    ) -> None:
        self._take_pending(frame)
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

    def _open_failure_from_310(self, error: DecodeError) -> OpenResponse | None:
        """3.10.8 answers a refused Open with <<Key, Version, Corr:32, Code:16>> and no
        properties array (10 bytes), which the adoc layout cannot decode (Truncated).
        While opening, read the code from the raw bytes and stand in the frame the
        broker meant."""
        if (
            not isinstance(error, Truncated)
            or self._connection.state is not ConnectionState.OPENING
        ):
            return None
        raw, pos = bytes(self._opening_bytes), 0
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

    # --- closing ---------------------------------------------------------------------------

    def close(self, code: int = ResponseCode.OK, reason: str = "") -> list[Event]:
        """Close the connection: queue CloseRequest ('Close' From 'Client & Server',
        Expects response? 'Yes'; its correlation id is ``close_correlation_id``) and end
        what it leaves unanswered; ``ConnectionClosed`` follows from ``receive_data``
        when the CloseResponse arrives.

        Returns the events of what ends now: the table ignores every frame but the
        CloseResponse (or a crossing CloseRequest) from here on, so outstanding requests
        fail (``RequestFailed`` without an error) and unconfirmed messages are abandoned
        (``PublishAbandoned``); subscriptions end silently, as with any end of the
        connection. Raises ``IllegalSend`` where the table allows no CloseRequest
        (during the handshake, or once closed)."""
        self.close_correlation_id = self._request(lambda cid: CloseRequest(cid, code, reason))
        events: list[Event] = []
        self._end_everything(events)
        return events

    def on_connection_close_request(self, frame: CloseRequest, events: list[Event]) -> None:
        # 'Close' From 'Client & Server', Expects response? 'Yes': answer with the
        # broker's own correlation id (its id space, not ours).
        self._send(CloseResponse(frame.correlation_id, ResponseCode.OK))
        self._terminate(
            events, ConnectionClosed(frame.closing_code, frame.closing_reason or "", by_peer=True)
        )

    def on_connection_close_response(self, frame: CloseResponse, events: list[Event]) -> None:
        request = self._take_pending(frame)
        self._terminate(
            events, ConnectionClosed(request.closing_code, request.closing_reason or "", False)
        )

    def _fail_connection(self, error: RemoteProtocolError, events: list[Event]) -> None:
        """The broker broke a connection-level rule: queue the CloseRequest 3.10.8 would
        send in our place (13 unknown frame; 14 frame too large) and close."""
        code = (
            ResponseCode.FRAME_TOO_LARGE
            if isinstance(error, FrameTooLarge)
            else ResponseCode.UNKNOWN_FRAME
        )
        close = CloseRequest(self._new_correlation_id(), code, str(error)[:200])
        if self._connection.allows_send(close):
            self._send(close)
        if self._connection.state is not ConnectionState.CLOSED:
            self._terminate(events, ConnectionClosed(code, str(error), by_peer=False))

    def _terminate(self, events: list[Event], final: Event) -> None:
        """The connection is over: every outstanding thing fails, then ``final``."""
        self._connection.state = ConnectionState.CLOSED  # not a frame: EOF, timeout, failure
        self._end_everything(events)
        self._pending.clear()  # our CloseRequest too, when it crossed the broker's
        self._next_check = None
        events.append(final)

    def _end_everything(self, events: list[Event]) -> None:
        """Fail every outstanding request but our CloseRequest (its response ends the
        connection), abandon what publishers have unconfirmed, forget every publisher
        and subscription."""
        for cid, request in list(self._pending.items()):
            if not isinstance(request, CloseRequest):
                del self._pending[cid]
                events.append(RequestFailed(cid, type(request).__name__, None))
        for _, publisher in self._publishers.clear():
            self._abandon(publisher, "connection closed", events)
        self._subscriptions.clear()
        self._consumer_updates.clear()
        self._opened = None

    def on_connection_heartbeat(self, frame: Heartbeat, events: list[Event]) -> None:
        pass  # any bytes count as life (see handle_timer)

    # --- streams ---------------------------------------------------------------------------

    def create_stream(self, stream: str, arguments: Mapping[str, str] | None = None) -> int:
        """Create: 'Create => Key Version CorrelationId Stream Arguments' (e.g.
        max-length-bytes, max-age, stream-max-segment-size-bytes)."""
        args = _properties(arguments or {})
        return self._request(lambda cid: CreateRequest(cid, stream, args))

    def delete_stream(self, stream: str) -> int:
        return self._request(lambda cid: DeleteRequest(cid, stream))

    def metadata(self, streams: Sequence[str]) -> int:
        names: list[str | None] = list(streams)
        return self._request(lambda cid: MetadataRequest(cid, names))

    def route(self, routing_key: str, super_stream: str) -> int:
        return self._request(lambda cid: RouteRequest(cid, routing_key, super_stream))

    def partitions(self, super_stream: str) -> int:
        return self._request(lambda cid: PartitionsRequest(cid, super_stream))

    def create_super_stream(
        self,
        name: str,
        partitions: Sequence[str],
        binding_keys: Sequence[str],
        arguments: Mapping[str, str] | None = None,
    ) -> int:
        """CreateSuperStream (RabbitMQ 3.13+): 'Name [Partition] [BindingKey] Arguments';
        the broker binds partition i with binding key i and x-stream-partition-order i, so
        both lists must have the same length (Java Client.java createSuperStream checks
        it too); the arguments are each partition's stream arguments."""
        if not partitions or len(partitions) != len(binding_keys):
            raise LocalProtocolError(
                f"a super stream needs as many binding keys as partitions, at least one "
                f"(got {len(partitions)} partitions, {len(binding_keys)} binding keys)"
            )
        streams: list[str | None] = list(partitions)
        keys: list[str | None] = list(binding_keys)
        args = _properties(arguments or {})
        return self._request(lambda cid: CreateSuperStreamRequest(cid, name, streams, keys, args))

    def delete_super_stream(self, name: str) -> int:
        """DeleteSuperStream (RabbitMQ 3.13+): the exchange and every partition stream."""
        return self._request(lambda cid: DeleteSuperStreamRequest(cid, name))

    def _failed(self, cid: int, request: Frame, code: int, events: list[Event]) -> bool:
        if code == ResponseCode.OK:
            return False
        about = (
            getattr(request, "stream", None)
            or getattr(request, "super_stream", None)
            or getattr(request, "name", None)  # CreateSuperStream, DeleteSuperStream
        )
        detail = f"{type(request).__name__} for {about!r}" if about else type(request).__name__
        error = ResponseError.from_code(code, detail)
        events.append(RequestFailed(cid, type(request).__name__, error))
        return True

    def on_connection_create_response(self, frame: CreateResponse, events: list[Event]) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            events.append(StreamCreated(frame.correlation_id, request.stream))

    def on_connection_delete_response(self, frame: DeleteResponse, events: list[Event]) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            events.append(StreamDeleted(frame.correlation_id, request.stream))

    def on_connection_metadata_response(self, frame: MetadataResponse, events: list[Event]) -> None:
        self._take_pending(frame)
        events.append(
            MetadataReceived(
                frame.correlation_id, tuple(frame.brokers), tuple(frame.stream_metadata)
            )
        )

    def on_connection_route_response(self, frame: RouteResponse, events: list[Event]) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            events.append(
                RouteReceived(frame.correlation_id, tuple(s or "" for s in frame.streams))
            )

    def on_connection_partitions_response(
        self, frame: PartitionsResponse, events: list[Event]
    ) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            streams = tuple(s or "" for s in frame.streams)
            events.append(PartitionsReceived(frame.correlation_id, streams))

    def on_connection_create_super_stream_response(
        self, frame: CreateSuperStreamResponse, events: list[Event]
    ) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            events.append(SuperStreamCreated(frame.correlation_id, request.name or ""))

    def on_connection_delete_super_stream_response(
        self, frame: DeleteSuperStreamResponse, events: list[Event]
    ) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            events.append(SuperStreamDeleted(frame.correlation_id, request.name or ""))

    def on_connection_metadata_update(self, frame: MetadataUpdate, events: list[Event]) -> None:
        stream = frame.stream or ""
        events.append(MetadataChanged(stream, frame.code))
        # 'Stream => string // the stream implied': 3.10.8 has already removed this
        # connection's publishers and subscriptions on the stream; each one's machine
        # decides (declared/active -> on_publisher/on_subscription_metadata_update;
        # pending ones ignore it and wait for their response).
        to_publisher = self._publisher_dispatch.receive
        for publisher in [p for p in self._publishers.values() if p.stream == stream]:
            to_publisher(publisher.machine, frame, publisher, events)
        to_subscription = self._subscription_dispatch.receive
        for subscription in [s for s in self._subscriptions.values() if s.stream == stream]:
            to_subscription(subscription.machine, frame, subscription, events)

    def stream_stats(self, stream: str) -> int:
        """StreamStats (3.11+): 'Stats => [Statistic]' (first_chunk_id, committed_chunk_id,
        ...). ``UnsupportedByBroker`` before anything is sent when the broker's
        ExchangeCommandVersions answer lacks it (StreamEnvironment.queryStreamStats does
        the same check, Client.java streamStatsCommandVersionsCheck)."""
        self.features.require(Feature.STREAM_STATS)
        return self._request(lambda cid: StreamStatsRequest(cid, stream))

    def on_connection_stream_stats_response(
        self, frame: StreamStatsResponse, events: list[Event]
    ) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            stats = {stat.key or "": stat.value for stat in frame.stats}
            events.append(StreamStatsReceived(frame.correlation_id, request.stream or "", stats))

    # --- publishers ------------------------------------------------------------------------

    def declare_publisher(
        self,
        publisher_id: int,
        stream: str,
        reference: str | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        first_publishing_id: int = 1,
    ) -> int:
        """DeclarePublisher ('PublisherId => uint8', 'PublisherReference => string // max
        256 characters'). ``max_in_flight`` bounds the unconfirmed messages."""
        if reference is not None and len(reference) > 256:
            raise ValueError("'PublisherReference => string // max 256 characters'")
        machine = self._publishers.machine(publisher_id)
        cid = self._request(
            lambda cid: DeclarePublisherRequest(cid, publisher_id, reference or "", stream), machine
        )
        # The table allowed it, so the id was free: a new publisher.
        window = Window.outbound_window(cap=max_in_flight, initial=max_in_flight)
        self._publishers.add(
            publisher_id,
            _Publisher(publisher_id, machine, stream, window, first_publishing_id),
        )
        return cid

    def _response_to_publisher(
        self, frame: DeclarePublisherResponse | DeletePublisherResponse, events: list[Event]
    ) -> None:
        """A response about a publisher: its request (matched by correlation id) names
        the publisher, whose machine takes the response. The request made the entry
        (declare) or found it (delete), and only its response or the connection's end
        forgets it."""
        request = self._take_pending(frame)
        publisher = self._publishers[request.publisher_id]
        if not self._publisher_dispatch.receive(
            publisher.machine, frame, request, publisher, events
        ):
            self.ignored_frames += 1

    on_connection_declare_publisher_response = _response_to_publisher
    on_connection_delete_publisher_response = _response_to_publisher

    def on_publisher_declare_publisher_response(
        self,
        frame: DeclarePublisherResponse,
        request: DeclarePublisherRequest,
        publisher: _Publisher,
        events: list[Event],
    ) -> None:
        if publisher.machine.state is PublisherState.DECLARED:
            events.append(PublisherDeclared(frame.correlation_id, publisher.publisher_id))
        else:  # refused: the id is free again
            self._publishers.settle(publisher.publisher_id)
            self._failed(frame.correlation_id, request, frame.response_code, events)

    def publish(
        self,
        publisher_id: int,
        messages: Sequence[bytes],
        *,
        publishing_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Publish messages as simple entries; returns their publishing ids.

        Ids increase strictly per publisher (deduplication); by default they continue
        from the last one. The messages go out in as few Publish frames as frame_max
        allows. Refused as a whole when the publisher is not declared (``IllegalSend``)
        or its window of unconfirmed messages is too small (``DemandExceeded``).
        """
        probe = Publish(publisher_id, [])
        publisher = self._declared(publisher_id, probe)
        ids = self._publishing_ids(publisher, len(messages), publishing_ids)
        data = self._encode_publish(publisher_id, ids, messages)  # MessageTooLarge
        return self._publish_encoded(publisher, probe, ids, data)

    def _publish_encoded(
        self, publisher: _Publisher, probe: Publish | PublishV2, ids: list[int], data: bytes
    ) -> list[int]:
        """The end of every publish: take the window (``DemandExceeded``: nothing was
        sent), apply the frame to both machines (``_declared`` checked them and nothing
        moved since), queue the bytes, count the ids as unconfirmed."""
        publisher.window.consume(len(ids))
        self._connection.send(probe)
        publisher.machine.send(probe)
        self._queue(data)
        publisher.unconfirmed.update(ids)
        if ids:
            publisher.next_publishing_id = ids[-1] + 1
        return ids

    def publish_filtered(
        self,
        publisher_id: int,
        messages: Sequence[bytes],
        filter_values: Sequence[str | None],
        *,
        publishing_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Publish messages with their filter values (Publish version 2, 3.13+; None =
        no filter value, written as the null string as Java does,
        StreamProducer.java OutboundMessageFilterValueWriterCallback). Otherwise as
        ``publish``; ``UnsupportedByBroker`` when the broker's ExchangeCommandVersions
        answer has Publish only up to version 1."""
        if len(filter_values) != len(messages):
            raise ValueError("one filter value (or None) per message")
        self.features.require(Feature.FILTERING)
        probe = PublishV2(publisher_id, [])
        publisher = self._declared(publisher_id, probe)
        ids = self._publishing_ids(publisher, len(messages), publishing_ids)
        data = self._encode_publish_v2(publisher_id, ids, messages, filter_values)
        return self._publish_encoded(publisher, probe, ids, data)

    def _encode_publish_v2(
        self,
        publisher_id: int,
        ids: list[int],
        messages: Sequence[bytes],
        filter_values: Sequence[str | None],
    ) -> bytes:
        """PublishV2 frames of at most frame_max bytes: 'PublishedMessage =>
        PublishingId FilterValue Message' each."""
        limit = self.frame_max or 0xFFFFFFFF
        if ids and ids[-1] > 0xFFFFFFFFFFFFFFFF:
            raise PublishingIdNotIncreasing(
                f"publishing id {ids[-1]} does not fit 'PublishingId => uint64'"
            )
        frames: list[bytes] = []
        batch: list[PublishedMessageV2] = []
        size = _PUBLISH_OVERHEAD
        for pid, message, value in zip(ids, messages, filter_values):
            encoded = b"" if value is None else value.encode()
            if len(encoded) > 0x7FFF:
                raise ValueError("'FilterValue => string': at most 32767 bytes (int16 length)")
            entry_size = 8 + 2 + len(encoded) + 4 + len(message)
            if _PUBLISH_OVERHEAD + entry_size > limit or len(message) > 0x7FFFFFFF:
                raise MessageTooLarge(
                    f"a message of {entry_size} bytes (with its headers) does not fit "
                    f"frame_max {limit}"
                )
            if batch and size + entry_size > limit:
                frames.append(frame_bytes(PublishV2(publisher_id, batch)))
                batch, size = [], _PUBLISH_OVERHEAD
            batch.append(PublishedMessageV2(pid, value, message))
            size += entry_size
        if batch:
            frames.append(frame_bytes(PublishV2(publisher_id, batch)))
        return b"".join(frames)

    def _encode_publish(
        self, publisher_id: int, ids: list[int], messages: Sequence[bytes]
    ) -> bytes:
        """Publish frames of simple entries, at most frame_max bytes each: the bytes
        ``frame_bytes(Publish(publisher_id, [PublishedMessage(id, SimpleEntry(m))...]))``
        gives, written directly. This is every producer's hot path; building a frame
        object per message cost more than the broker's work per message
        (tests/rabbitmq_stream/test_rabbitmq_stream_engine_publish.py proves the bytes identical)."""
        limit = self.frame_max or 0xFFFFFFFF
        if ids and ids[-1] > 0xFFFFFFFFFFFFFFFF:
            raise PublishingIdNotIncreasing(
                f"publishing id {ids[-1]} does not fit 'PublishingId => uint64'"
            )
        frames: list[bytes] = []
        parts: list[bytes] = []
        size = _PUBLISH_OVERHEAD
        count = 0
        entry_head = _ENTRY_HEAD.pack
        for pid, message in zip(ids, messages):
            entry_size = 12 + len(message)  # publishing id, <<0:1, Size:31>>, data
            if _PUBLISH_OVERHEAD + entry_size > limit or len(message) > 0x7FFFFFFF:
                raise MessageTooLarge(
                    f"a message of {entry_size} bytes (with its headers) does not fit "
                    f"frame_max {limit}"
                )
            if count and size + entry_size > limit:
                frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
                frames.extend(parts)
                parts, size, count = [], _PUBLISH_OVERHEAD, 0
            parts.append(entry_head(pid, len(message)))
            parts.append(message)
            size += entry_size
            count += 1
        if count:
            frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
            frames.extend(parts)
        return b"".join(frames)

    def _send_encoded(self, probe: Frame, data: bytes, *machines: StateMachine[Any]) -> None:
        """Queue ``data``, frames of ``probe``'s type already encoded, once the
        connection machine and every one of ``machines`` allowed ``probe`` (nothing
        changes otherwise: the first refusal raises its ``IllegalSend``)."""
        send_all(probe, self._connection, *machines)
        self._queue(data)

    def _queue(self, data: bytes) -> None:
        """Queue encoded frames the machines have let out."""
        self._out += data
        self._sent_since_check = True

    def publish_batch(
        self,
        publisher_id: int,
        messages: Sequence[bytes],
        compression: CompressionType = CompressionType.GZIP,
        *,
        publishing_id: int | None = None,
    ) -> int:
        """Publish messages as one sub-entry batch (one publishing id, one confirm)."""
        self._declared(publisher_id, Publish(publisher_id, []))  # refused before compressing
        given = None if publishing_id is None else [publishing_id]
        batch = sub_entry_batch(messages, compression)
        (pid,) = self.publish_sub_entries(publisher_id, [batch], publishing_ids=given)
        return pid

    def publish_sub_entries(
        self,
        publisher_id: int,
        batches: Sequence[SubEntryBatch],
        *,
        publishing_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Publish sub-entry batches made with ``sub_entry_batch`` (already compressed:
        a producer holding them for a re-send compresses once), one publishing id
        each; returns the ids. Ids, frames and refusals as ``publish``: each batch
        counts as one unconfirmed message of the window (the broker confirms, and
        3.10.8 counts its credit, per publishing id)."""
        probe = Publish(publisher_id, [])
        publisher = self._declared(publisher_id, probe)
        ids = self._publishing_ids(publisher, len(batches), publishing_ids)
        data = self._encode_sub_entries(publisher_id, ids, batches)  # MessageTooLarge
        return self._publish_encoded(publisher, probe, ids, data)

    def _encode_sub_entries(
        self, publisher_id: int, ids: list[int], batches: Sequence[SubEntryBatch]
    ) -> bytes:
        """Publish frames of sub-entry batches, at most frame_max bytes each, written
        directly as ``_encode_publish`` does for simple entries (the same bytes as
        ``frame_bytes(Publish(publisher_id, [PublishedMessage(id, batch)...]))``)."""
        limit = self.frame_max or 0xFFFFFFFF
        if ids and ids[-1] > 0xFFFFFFFFFFFFFFFF:
            raise PublishingIdNotIncreasing(
                f"publishing id {ids[-1]} does not fit 'PublishingId => uint64'"
            )
        frames: list[bytes] = []
        parts: list[bytes] = []
        size = _PUBLISH_OVERHEAD
        count = 0
        head = _SUB_ENTRY_HEAD.pack
        for pid, batch in zip(ids, batches):
            entry_size = 8 + _BATCH_HEADER + len(batch.data)
            if _PUBLISH_OVERHEAD + entry_size > limit:
                raise MessageTooLarge(
                    f"a sub-entry batch of {entry_size} bytes (with its headers) does not "
                    f"fit frame_max {limit}"
                )
            if count and size + entry_size > limit:
                frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
                frames.extend(parts)
                parts, size, count = [], _PUBLISH_OVERHEAD, 0
            flags = 0x80 | (int(batch.compression) << 4)  # <<1:1, CompType:3, 0:4>>
            parts.append(
                head(pid, flags, batch.num_records, batch.uncompressed_length, len(batch.data))
            )
            parts.append(batch.data)
            size += entry_size
            count += 1
        if count:
            frames.append(_PUBLISH_HEAD.pack(size - 4, 0x0002, 1, publisher_id, count))
            frames.extend(parts)
        return b"".join(frames)

    def _declared(self, publisher_id: int, probe: Publish | PublishV2) -> _Publisher:
        """The publisher, when the machines allow ``probe`` (a Publish of it) now; else
        the table's ``IllegalSend`` (an unknown id answers with a free machine: "the
        publisher is not declared"). Nothing moves: the send comes once encoded."""
        check_all(probe, self._connection, self._publishers.machine(publisher_id))
        return self._publishers[publisher_id]

    @staticmethod
    def _publishing_ids(
        publisher: _Publisher, count: int, given: Sequence[int] | None
    ) -> list[int]:
        if given is None:
            return list(range(publisher.next_publishing_id, publisher.next_publishing_id + count))
        ids = list(given)
        if len(ids) != count:
            raise ValueError("one publishing id per message")
        previous = publisher.next_publishing_id - 1
        for pid in ids:
            if pid <= previous:
                raise PublishingIdNotIncreasing(
                    f"publishing id {pid} does not follow {previous} (ids must increase)"
                )
            previous = pid
        return ids

    def _to_publisher(self, frame: PublishConfirm | PublishError, events: list[Event]) -> None:
        """A frame carrying its publisher id: through that id's machine (a free one for an
        unknown id) to ``on_publisher_<frame>``. (One lookup for the usual case, a live
        id: this runs per confirm.)"""
        publisher = self._publishers.get(frame.publisher_id)
        machine = (
            self._publishers.machine(frame.publisher_id) if publisher is None else publisher.machine
        )
        if not self._publisher_dispatch.receive(machine, frame, publisher, events):
            # Outcomes for a publisher that is gone, or of an earlier one with its id.
            self.ignored_frames += 1
            self.ignored_outcomes += len(
                frame.publishing_ids
                if isinstance(frame, PublishConfirm)
                else frame.publishing_errors
            )

    on_connection_publish_confirm = _to_publisher
    on_connection_publish_error = _to_publisher

    def on_publisher_publish_confirm(
        self, frame: PublishConfirm, publisher: _Publisher, events: list[Event]
    ) -> None:
        unconfirmed = publisher.unconfirmed
        confirmed = [pid for pid in frame.publishing_ids if pid in unconfirmed]
        self.ignored_outcomes += len(frame.publishing_ids) - len(confirmed)
        if confirmed:
            unconfirmed.difference_update(confirmed)
            publisher.window.grant(len(confirmed))
            events.append(PublishConfirmed(frame.publisher_id, tuple(confirmed)))

    def on_publisher_publish_error(
        self, frame: PublishError, publisher: _Publisher, events: list[Event]
    ) -> None:
        for item in frame.publishing_errors:
            if item.publishing_id not in publisher.unconfirmed:
                self.ignored_outcomes += 1
                continue
            publisher.unconfirmed.discard(item.publishing_id)
            publisher.window.grant(1)
            error = ResponseError.from_code(item.code)
            events.append(PublishErrored(frame.publisher_id, item.publishing_id, error))

    def query_publisher_sequence(self, reference: str, stream: str) -> int:
        """The last publishing id stored for ``reference`` (0 when none)."""
        return self._request(lambda cid: QueryPublisherSequenceRequest(cid, reference, stream))

    def on_connection_query_publisher_sequence_response(
        self, frame: QueryPublisherSequenceResponse, events: list[Event]
    ) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            reference, stream = request.publisher_reference or "", request.stream or ""
            events.append(
                PublisherSequence(frame.correlation_id, reference, stream, frame.sequence)
            )

    def delete_publisher(self, publisher_id: int) -> int:
        machine = self._publishers.machine(publisher_id)
        return self._request(lambda cid: DeletePublisherRequest(cid, publisher_id), machine)

    def on_publisher_delete_publisher_response(
        self,
        frame: DeletePublisherResponse,
        request: DeletePublisherRequest,
        publisher: _Publisher,
        events: list[Event],
    ) -> None:
        if not self._publishers.settle(publisher.publisher_id):  # free: deleted
            # 3.10.8 drops the confirms of a deleted publisher: what is still
            # unconfirmed will never be resolved.
            self._abandon(publisher, "publisher deleted", events)
            events.append(PublisherDeleted(frame.correlation_id, publisher.publisher_id))
        else:  # the delete failed: the publisher is still declared
            self._failed(frame.correlation_id, request, frame.response_code, events)

    def on_publisher_metadata_update(
        self, frame: MetadataUpdate, publisher: _Publisher, events: list[Event]
    ) -> None:
        if not self._publishers.settle(publisher.publisher_id):  # free: gone with its stream
            self._abandon(publisher, "stream metadata changed", events)
            events.append(PublisherClosed(publisher.publisher_id, publisher.stream, frame.code))

    @staticmethod
    def _abandon(publisher: _Publisher, reason: str, events: list[Event]) -> None:
        if publisher.unconfirmed:
            ids = tuple(sorted(publisher.unconfirmed))
            events.append(PublishAbandoned(publisher.publisher_id, ids, reason))

    # --- subscriptions ---------------------------------------------------------------------

    def subscribe(
        self,
        subscription_id: int,
        stream: str,
        offset: OffsetSpecification | None = None,
        *,
        credit: int | CreditOnConsumption = 10,
        properties: Mapping[str, str] | None = None,
    ) -> int:
        """Subscribe ('OffsetSpecification => OffsetType Offset', 'Credit => uint16').

        ``offset`` defaults to next. ``credit`` is the initial chunk credit, or a
        ``CreditOnConsumption`` strategy: then call ``chunk_consumed`` after each
        ``ChunkDelivered`` and the engine gives the credit back.

        ``properties`` of newer brokers are checked against ``features`` first
        (``UnsupportedByBroker``): ``single-active-consumer`` (3.11+; the broker then
        asks with ``ConsumerUpdateRequested`` events, answered by
        ``answer_consumer_update``) and ``filter.N`` (3.13+), which a 3.10 broker would
        silently ignore.
        """
        props_in = dict(properties or {})
        single_active = props_in.get(_SAC_PROPERTY) == "true"
        if single_active:
            self.features.require(Feature.SINGLE_ACTIVE_CONSUMER)
        if any(key.startswith(_FILTER_PREFIX) for key in props_in):
            self.features.require(Feature.FILTERING)
        spec = OffsetSpecNext() if offset is None else offset
        strategy = credit if isinstance(credit, CreditOnConsumption) else None
        initial = credit.initial if isinstance(credit, CreditOnConsumption) else credit
        if not 0 <= initial <= MAX_OUTSTANDING_CREDIT:
            raise InvalidGrant(f"the initial credit must be 0..65535, got {initial}")
        machine = self._subscriptions.machine(subscription_id)
        props = _properties(props_in)
        cid = self._request(
            lambda cid: SubscribeRequest(cid, subscription_id, stream, spec, initial, props),
            machine,
        )
        # The table allowed it, so the id was free: a new subscription.
        window = Window.inbound_window(cap=MAX_OUTSTANDING_CREDIT, initial=initial)
        min_offset = spec.offset if isinstance(spec, OffsetSpecOffset) else 0
        self._subscriptions.add(
            subscription_id,
            _Subscription(
                subscription_id,
                machine,
                stream,
                window,
                min_offset,
                strategy,
                single_active=single_active,
            ),
        )
        return cid

    def _response_to_subscription(
        self, frame: SubscribeResponse | UnsubscribeResponse, events: list[Event]
    ) -> None:
        """A response about a subscription: its request (matched by correlation id) names
        the subscription, whose machine takes the response (the request made or found
        the entry; only its response or the connection's end forgets it)."""
        request = self._take_pending(frame)
        subscription = self._subscriptions[request.subscription_id]
        if not self._subscription_dispatch.receive(
            subscription.machine, frame, request, subscription, events
        ):
            self.ignored_frames += 1

    on_connection_subscribe_response = _response_to_subscription
    on_connection_unsubscribe_response = _response_to_subscription

    def on_subscription_subscribe_response(
        self,
        frame: SubscribeResponse,
        request: SubscribeRequest,
        subscription: _Subscription,
        events: list[Event],
    ) -> None:
        if subscription.machine.state is SubscriptionState.ACTIVE:
            events.append(Subscribed(frame.correlation_id, subscription.subscription_id))
        else:  # refused: the id is free again
            self._subscriptions.settle(subscription.subscription_id)
            self._failed(frame.correlation_id, request, frame.response_code, events)

    def credit(self, subscription_id: int, credit: int) -> None:
        """Credit: 'Credit => uint16 // the number of chunks that can be sent'."""
        subscription = self._subscriptions.get(subscription_id)
        machine = self._subscriptions.machine(subscription_id)
        frame = CreditRequest(subscription_id, credit)
        if subscription is not None and not (
            0 < credit <= MAX_OUTSTANDING_CREDIT - subscription.credit.available
        ):
            raise InvalidGrant(
                f"credit {credit}: a grant is 1..65535 and the outstanding credit stays "
                f"<= {MAX_OUTSTANDING_CREDIT} (now {subscription.credit.available})"
            )
        self._send(frame, machine)
        assert subscription is not None
        subscription.credit.grant(credit)

    def chunk_consumed(self, subscription_id: int, chunks: int = 1) -> None:
        """The application is done with ``chunks`` delivered chunks: with a
        ``CreditOnConsumption`` strategy, give credit back."""
        subscription = self._subscriptions.get(subscription_id)
        if subscription is None or subscription.strategy is None:
            raise LocalProtocolError(f"subscription {subscription_id} has no credit strategy")
        if not 0 < chunks <= subscription.unconsumed:
            raise LocalProtocolError(
                f"{chunks} chunks consumed but {subscription.unconsumed} delivered and not consumed"
            )
        subscription.unconsumed -= chunks
        self._replenish(subscription_id, subscription, chunks)

    def _replenish(self, subscription_id: int, subscription: _Subscription, chunks: int) -> None:
        if subscription.strategy is None:
            return
        grant = subscription.strategy.consumed(chunks)
        if grant and subscription.machine.state is SubscriptionState.ACTIVE:
            self.credit(subscription_id, grant)

    def _to_subscription(
        self,
        frame: Deliver | DeliverV2 | CreditResponse | ConsumerUpdateRequest,
        events: list[Event],
    ) -> None:
        """A frame carrying its subscription id: through that id's machine (a free one
        for an unknown id) to ``on_subscription_<frame>``. (One lookup for the usual
        case, a live id: this runs per chunk.)"""
        subscription = self._subscriptions.get(frame.subscription_id)
        machine = (
            self._subscriptions.machine(frame.subscription_id)
            if subscription is None
            else subscription.machine
        )
        if not self._subscription_dispatch.receive(machine, frame, subscription, events):
            self.ignored_frames += 1

    on_connection_deliver = _to_subscription
    on_connection_deliver_v2 = _to_subscription
    on_connection_credit_response = _to_subscription
    on_connection_consumer_update_request = _to_subscription

    def on_subscription_consumer_update_request(
        self, frame: ConsumerUpdateRequest, subscription: _Subscription, events: list[Event]
    ) -> None:
        """ConsumerUpdate ('Active => uint8'): the broker makes the subscription the
        active one of its single-active-consumer group, or takes that away, and waits
        for the offset to resume from. An active subscription hands the question to the
        application (``ConsumerUpdateRequested``, answered by ``answer_consumer_update``);
        one that is unsubscribing is answered here with no offset."""
        cid = frame.correlation_id
        subscription.sac_active = bool(frame.active)
        self._consumer_updates[cid] = subscription.subscription_id
        if subscription.machine.state is SubscriptionState.UNSUBSCRIBING:
            self.answer_consumer_update(cid, None)
            return
        events.append(
            ConsumerUpdateRequested(cid, subscription.subscription_id, bool(frame.active))
        )

    def answer_consumer_update(
        self, correlation_id: int, offset: OffsetSpecification | None
    ) -> None:
        """ConsumerUpdateResponse to the broker's ConsumerUpdate ``correlation_id``:
        ``offset`` is where an activated subscription resumes (None: 'OffsetType 0
        (none)', the broker then uses the subscription's own offset specification; the
        answer for a deactivated one). Java's default (StreamConsumer.java
        getStoredOffset): the offset stored for the consumer's name + 1, else the
        subscription's initial specification."""
        subscription_id = self._consumer_updates.pop(correlation_id, None)
        if subscription_id is None:
            raise LocalProtocolError(
                f"no ConsumerUpdate with correlation id {correlation_id} awaits an answer"
            )
        spec = OffsetSpecNone() if offset is None else offset
        self._send(ConsumerUpdateResponse(correlation_id, ResponseCode.OK, spec))
        subscription = self._subscriptions.get(subscription_id)
        if subscription is not None and not isinstance(spec, OffsetSpecNone):
            # Delivery restarts at the chunk holding the answered offset: drop what
            # precedes it, as for a Subscribe at an offset.
            subscription.min_offset = spec.offset if isinstance(spec, OffsetSpecOffset) else 0

    def consumer_active(self, subscription_id: int) -> bool:
        """Whether chunks may come to the subscription: for a single-active-consumer
        subscription, the broker's last ConsumerUpdate said active (none yet: not
        active); for any other, it is subscribed (active state)."""
        subscription = self._subscriptions.get(subscription_id)
        if subscription is None or subscription.machine.state is not SubscriptionState.ACTIVE:
            return False
        return subscription.sac_active if subscription.single_active else True

    @property
    def consumer_updates_pending(self) -> dict[int, int]:
        """The broker's ConsumerUpdate correlation ids awaiting an answer -> subscription."""
        return dict(self._consumer_updates)

    def on_subscription_deliver(
        self, frame: Deliver | DeliverV2, subscription: _Subscription, events: list[Event]
    ) -> None:
        # Active or unsubscribing (the table refuses a chunk for any other state).
        subscription_id = frame.subscription_id
        subscription.credit.consume(1)  # PeerExceededDemand: a chunk without credit
        chunk = frame.chunk
        chunk_id = chunk.chunk_first_offset
        if chunk.chunk_type != ChunkType.USER:
            events.append(ChunkSkipped(subscription_id, chunk_id, chunk.chunk_type))
            self._replenish(subscription_id, subscription, 1)
            return
        try:
            records = chunk_records(chunk, max_batch_size=self._max_batch_size)
        except ChunkError as error:
            events.append(ChunkFailed(subscription_id, chunk_id, error))
            self._replenish(subscription_id, subscription, 1)
            return
        # Delivery is by whole chunk: with an offset specification, the first chunk
        # can start before the asked offset; those records are dropped.
        skip = max(0, subscription.min_offset - chunk_id)
        emitted = max(0, len(records) - skip)
        if not self._message_events:
            if emitted:
                kept = records[skip:] if skip else records
                events.append(
                    MessagesReceived(subscription_id, chunk_id + skip, chunk.timestamp, kept)
                )
        else:
            for index in range(skip, len(records)):
                events.append(
                    MessageReceived(
                        subscription_id, chunk_id + index, chunk.timestamp, records[index]
                    )
                )
        committed = frame.committed_chunk_id if isinstance(frame, DeliverV2) else None
        events.append(
            ChunkDelivered(
                subscription_id, chunk_id, len(records), emitted, chunk.timestamp, committed
            )
        )
        if subscription.strategy is not None:
            subscription.unconsumed += 1

    on_subscription_deliver_v2 = on_subscription_deliver

    def on_subscription_credit_response(
        self, frame: CreditResponse, subscription: _Subscription, events: list[Event]
    ) -> None:
        # 'NB: the server sent a response only in case of problem, e.g. crediting an
        # unknown subscription.' No correlation id: routed by subscription id. Active ->
        # free: the broker no longer knows the subscription.
        if not self._subscriptions.settle(subscription.subscription_id):
            events.append(SubscriptionClosed(subscription.subscription_id, frame.response_code))

    def unsubscribe(self, subscription_id: int) -> int:
        machine = self._subscriptions.machine(subscription_id)
        return self._request(lambda cid: UnsubscribeRequest(cid, subscription_id), machine)

    def on_subscription_unsubscribe_response(
        self,
        frame: UnsubscribeResponse,
        request: UnsubscribeRequest,
        subscription: _Subscription,
        events: list[Event],
    ) -> None:
        if not self._subscriptions.settle(subscription.subscription_id):  # free
            events.append(Unsubscribed(frame.correlation_id, subscription.subscription_id))
        else:  # the unsubscribe failed: the subscription goes on
            self._failed(frame.correlation_id, request, frame.response_code, events)

    def on_subscription_metadata_update(
        self, frame: MetadataUpdate, subscription: _Subscription, events: list[Event]
    ) -> None:
        if not self._subscriptions.settle(subscription.subscription_id):  # gone with its stream
            events.append(SubscriptionClosed(subscription.subscription_id, frame.code))

    # --- offsets ---------------------------------------------------------------------------

    def store_offset(self, reference: str, stream: str, offset: int) -> None:
        """StoreOffset (Expects response? 'No')."""
        self._send(StoreOffset(reference, stream, offset))

    def query_offset(self, reference: str, stream: str) -> int:
        """QueryOffset; ``NoOffset`` (0x13) when nothing is stored for the reference."""
        return self._request(lambda cid: QueryOffsetRequest(cid, reference, stream))

    def on_connection_query_offset_response(
        self, frame: QueryOffsetResponse, events: list[Event]
    ) -> None:
        request = self._take_pending(frame)
        if not self._failed(frame.correlation_id, request, frame.response_code, events):
            reference, stream = request.reference or "", request.stream or ""
            events.append(OffsetQueried(frame.correlation_id, reference, stream, frame.offset))
