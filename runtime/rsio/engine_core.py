"""What every scope of the rsio engine shares: ``RsioEngineCore`` holds the connection's
state (machines, registries, codec contexts, output) and the connection-wide parts --
bytes in and out, sending through the machines, the connection scope's receive loop,
and ending every stream (goodbye, violations, EOF).  ``publications.PublisherSide`` and
``subscriptions.SubscriberSide`` add the two directions of a subscription;
``engine.RsioConnection`` joins them with the connection's handlers and binds the
generated dispatch.  The protocol and its rules are described in ``engine``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, ClassVar, Literal, Union, cast, get_args

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import (
    ConnectionMachine,
    ConnectionState,
    SplitElementMachine,
    SplitElementState,
    SubscriptionMachine,
    SubscriptionState,
)
from wirestream.runtime.errors import DecodeError, ProtocolError, RemoteProtocolError
from wirestream.runtime.flow import LONG_MAX, Window
from wirestream.runtime.limits import DEFAULT_MAX_STREAMS
from wirestream.runtime.machine import Dispatch, MachineRegistry, StateMachine, send_all
from wirestream.runtime.rsio.errors import TransportClosed, UnsupportedVersion
from wirestream.runtime.rsio.events import (
    RsioConnectionClosed,
    Event,
    SubscriptionCancelled,
    SubscriptionFailed,
)
from wirestream.runtime.rsio.framing import Encoding, encode_frame, make_decoder

__all__ = ["RsioEngineCore", "PROTOCOL_VERSION", "RsioConfig"]

PROTOCOL_VERSION = 0  # "The protocol version is currently version 0."

_S = SubscriptionState
_ACTIVE_STATES = frozenset({_S.ACTIVE, _S.ACTIVE_FIXED})
_OPEN_SUBSCRIBER_STATES = frozenset({_S.SUBSCRIBING, _S.ACTIVE, _S.ACTIVE_FIXED, _S.RESUBSCRIBING})
_OPEN_PUBLISHER_STATES = frozenset({_S.SUBSCRIBING, _S.ACTIVE, _S.ACTIVE_FIXED})
# Which Id space a message's ``subscriber`` is in: the seed's directions ("-->" goes to
# the publisher; "the subscriber Id identifies the recipient in all messages going <--
# this way").  The one routing decision the tables leave to the engine.
ToPublisher = Union[rsio.Subscribe, rsio.Request, rsio.Cancel]
ToSubscriber = Union[rsio.Subscribed, rsio.OnNext, rsio.OnNextPacked, rsio.OnNextPart,
                     rsio.OnNextLastPart, rsio.OnComplete, rsio.OnError]  # fmt: skip
_TO_PUBLISHER: tuple[type, ...] = get_args(ToPublisher)
_TO_SUBSCRIBER: tuple[type, ...] = get_args(ToSubscriber)
Part = Union[rsio.OnNextPart, rsio.OnNextLastPart]

_machine_of: Callable[[Any], StateMachine[Any]] = attrgetter("machine")


@dataclass(frozen=True, slots=True)
class RsioConfig:
    """Limits and publishing choices of one connection.

    - ``pack``: publish several fixed-size elements as one onNextPacked when demand
      allows ("Packing does not help if new data becomes available very frequently and
      must not be delayed", so ``offer`` only packs what it is given at once);
      ``max_pack``: elements per onNextPacked.
    - ``max_part_size``: split elements longer than this into onNextPart* +
      onNextLastPart ("Publishers MAY split elements"); None: never split.
    - ``max_element_size`` / ``max_reassembly_bytes``: bound what we buffer to join split
      elements, per element / over all unfinished elements of the connection.
    - ``max_frame_size``: the decoder's limit per message.
    - ``max_peer_subscriptions``: open subscriptions the peer may have with us; more are
      rejected (subscribed + onError).  The asyncio layer sets it from
      ``ConnectionLimits.max_streams`` (the same default).
    """

    pack: bool = True
    max_pack: int = 1024
    max_part_size: int | None = None
    max_element_size: int = 16 * 1024 * 1024
    max_reassembly_bytes: int = 64 * 1024 * 1024
    max_frame_size: int = rsio.MAX_FRAME_SIZE
    max_peer_subscriptions: int = DEFAULT_MAX_STREAMS

    def __post_init__(self) -> None:
        if self.max_pack < 1:
            raise ValueError("max_pack must be at least 1")
        if self.max_part_size is not None and self.max_part_size < 1:
            raise ValueError("max_part_size must be at least 1 (or None: never split)")


class _Reassembly:
    """An unfinished split element: its machine and the parts joined so far."""

    __slots__ = ("machine", "data")

    def __init__(self, machine: StateMachine[SplitElementState]) -> None:
        self.machine = machine
        self.data = bytearray()


class _Subscription:
    """A subscription we opened (we are the subscriber)."""

    __slots__ = ("subscriber", "machine", "demand", "element_size", "parts", "cancelled")

    def __init__(self, subscriber: int, machine: StateMachine[SubscriptionState],
                 initial_demand: int,
                 parts: MachineRegistry[int, _Reassembly]) -> None:  # fmt: skip
        self.subscriber = subscriber
        self.machine = machine
        # Inbound: we grant (request), the publisher's elements consume.
        self.demand = Window.inbound_window(cap=LONG_MAX, unbounded_at_cap=True,
                                            initial=initial_demand)  # fmt: skip
        self.element_size = 0
        self.parts = parts  # unfinished split elements, by element Id
        self.cancelled = False  # we sent cancel: the application expects nothing more


class _Publication:
    """A subscription the peer opened (we are the publisher)."""

    __slots__ = ("subscriber", "machine", "demand", "element_size")

    def __init__(self, subscriber: int, machine: StateMachine[SubscriptionState]) -> None:
        self.subscriber = subscriber
        self.machine = machine
        # Outbound: the subscriber grants, our elements consume.
        self.demand = Window.outbound_window(cap=LONG_MAX, unbounded_at_cap=True)
        self.element_size = 0


class RsioEngineCore:
    """The state and connection-wide behaviour of ``RsioConnection`` (the class to use)."""

    # Bound by ``RsioConnection.__init__`` (the generated, typed binders need the class
    # that implements every handler): stream 0's dispatch, and where the data messages
    # the connection machine only observes go next.
    _on_connection: Dispatch
    _to_scope: dict[type, Callable[[Any, list[Event]], None]]

    # The generated machines the engine runs, one per scope.  Class attributes so that a
    # test can run the engine on tables generated from an edited IDL
    # (tests/rsio/test_rsio_engine_dispatch.py); the frames and states stay those of v0.
    # Typed as the generated classes: their ``bind_<role>`` take this engine as the
    # scope's handler protocol, so mypy checks every handler it implements.
    CONNECTION_MACHINE: ClassVar[type[ConnectionMachine]] = ConnectionMachine
    SUBSCRIPTION_MACHINE: ClassVar[type[SubscriptionMachine]] = SubscriptionMachine
    SPLIT_ELEMENT_MACHINE: ClassVar[type[SplitElementMachine]] = SplitElementMachine

    def __init__(
        self,
        role: Literal["client", "server"],
        *,
        encoding: Encoding = "binary",
        extensions: Iterable[int] = (),
        config: RsioConfig | None = None,
    ) -> None:
        self.role = role
        self.encoding: Encoding = encoding
        self.config = config if config is not None else RsioConfig()
        self.extensions = tuple(extensions)
        self.peer_extensions: tuple[int, ...] | None = None
        self._connection = self.CONNECTION_MACHINE(role)
        # The subscription machines have no terminal state: an instance back in `idle`
        # (completed, failed, cancelled and acknowledged) is vacant and forgotten, its Id
        # free.  A subscription we cancelled stays (`cancelled`, `cancelled_early`): the
        # publisher's messages still in flight (RS §2.8) must meet its table, which drops
        # them, not a fresh one, which would call them a violation; and an Id cancelled
        # before its Subscribed stays taken until that arrives (the reuse guarantee).
        # ``subscribe`` reuses those Ids first, so they do not pile up.
        self._subscriptions: MachineRegistry[int, _Subscription] = MachineRegistry(
            self.SUBSCRIPTION_MACHINE, "subscriber", machine_of=_machine_of
        )
        self._publications: MachineRegistry[int, _Publication] = MachineRegistry(
            self.SUBSCRIPTION_MACHINE, "publisher", machine_of=_machine_of
        )
        # Their dicts, read directly where it happens per element (a receive, a publisher's
        # demand check): the registry's get() is one more Python call.
        self._subscription_entries = self._subscriptions.entries
        self._publication_entries = self._publications.entries
        # Two contexts because the Id spaces are per direction: the decoder's follows the
        # publishers we subscribed to, the encoder's the streams we publish.
        self._receive_ctx = rsio.Context()
        self._send_ctx = rsio.Context()
        self._decoder = make_decoder(encoding, self._receive_ctx, self.config.max_frame_size)
        self._reassembly_bytes = 0
        self._outbox = bytearray()
        self._transport_closed = False
        self.ignored_messages = 0  # dropped as the machines say (debug counter)
        self.frames_received = 0  # whole messages decoded (the engine contract's progress)

    # --- state ------------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._connection.state

    @property
    def closed(self) -> bool:
        """Goodbyes exchanged, EOF, or a connection error: close the transport once
        ``data_to_send()`` is drained."""
        return self._transport_closed or self._connection.state is ConnectionState.CLOSED

    @property
    def negotiated_extensions(self) -> frozenset[int] | None:
        """Extensions both hellos list, None before the peer's hello. "If an extension
        defines a new message type ..., that message MUST NOT be sent before receiving a
        hello from the other side confirming that it supports that extension.\" """
        if self.peer_extensions is None:
            return None
        return frozenset(self.extensions) & frozenset(self.peer_extensions)

    @property
    def buffered_bytes(self) -> int:
        """Bytes received of a message that is not complete yet."""
        return self._decoder.buffered

    # --- bytes and time (the engine contract) -----------------------------------------

    def data_to_send(self) -> bytes:
        """Drain the queued bytes."""
        data = bytes(self._outbox)
        self._outbox.clear()
        return data

    def receive_data(self, data: bytes, now: float | None = None) -> list[Event]:
        """Feed bytes from the transport (``b""``: EOF); returns what happened.  ``now``
        is unused: no rule of this protocol depends on time."""
        if self._transport_closed:
            return []
        if not data:
            return self._transport_ended()
        events: list[Event] = []
        try:
            try:
                frames = self._decoder.feed(data)
            except DecodeError as error:
                # "Nothing is lost": what was decoded before the bad bytes is handled.
                self.frames_received += len(error.frames)
                self._receive_frames(cast(list[rsio.Frame], error.frames), events)
                raise
            self.frames_received += len(frames)
            self._receive_frames(frames, events)
        except RemoteProtocolError as error:
            self._fail_connection(error, events)
            error.events = events
            raise
        return events

    def get_timer(self) -> float | None:
        """No deadline: the seed has no keepalive nor timeout."""
        return None

    def handle_timer(self, now: float) -> list[Event]:
        return []

    # --- connection commands ----------------------------------------------------------

    def initiate_connection(self) -> None:
        """Queue our hello (the client's must come first; a v0 server may send it before
        the client's: "the server doesn't have to wait for the clientHello").  A side
        that receives the peer's hello before sending its own answers automatically."""
        self._send(self._hello())

    def close(self, reason: str = "") -> list[Event]:
        """Send goodbye; it "implicitly closes all open streams", which the returned
        events report.  The connection is closed when the peer's goodbye arrives
        ("send a goodbye message, wait for acknowledgement and then close")."""
        self._send(rsio.Goodbye(reason))
        events: list[Event] = []
        self._end_all_streams(f"goodbye sent: {reason}", None, events)
        return events

    # --- sending ----------------------------------------------------------------------

    def _send(self, frame: rsio.Frame, *machines: StateMachine[Any]) -> None:
        """Encode ``frame`` (an unencodable value raises ``EncodeError``), move the
        connection machine and ``machines`` all or none (a refusal raises the table's
        ``IllegalSend``), then queue it: either error changes nothing."""
        data = encode_frame(self.encoding, frame, self._send_ctx)
        send_all(frame, self._connection, *machines)
        self._outbox += data

    def _hello(self) -> rsio.Frame:
        if self.role == "client":
            return rsio.ClientHello(PROTOCOL_VERSION, list(self.extensions))
        return rsio.ServerHello(PROTOCOL_VERSION, list(self.extensions))

    # --- receiving: the scopes --------------------------------------------------------

    def _receive_frames(self, frames: list[rsio.Frame], events: list[Event]) -> None:
        """Connection scope first (every message moves the phase), then, for the data
        messages the connection machine only observes, the subscription of their Id."""
        connection, to_scope = self._connection, self._to_scope
        on_connection = self._on_connection.receive  # bound once: this is the hot loop
        for frame in frames:
            if not on_connection(connection, frame, events):
                self.ignored_messages += 1  # e.g. in flight when we sent goodbye
                continue
            receive = to_scope.get(type(frame))
            if receive is not None:
                receive(frame, events)

    def _release_parts(self, entry: _Subscription | None) -> None:
        if entry is not None and entry.parts:
            self._reassembly_bytes -= sum(len(p.data) for _, p in entry.parts.clear())

    # --- ending -----------------------------------------------------------------------

    def _end_all_streams(self, reason: str, cause: ProtocolError | None,
                         events: list[Event]) -> None:  # fmt: skip
        """Goodbye "implicitly closes all open streams, equivalently to receiving cancel or
        onError messages"; so does the end of the transport."""
        for _, entry in self._subscriptions.clear():
            if entry.machine.state in _OPEN_SUBSCRIBER_STATES:
                events.append(SubscriptionFailed(entry.subscriber, reason, cause))
            self._release_parts(entry)
        for _, publication in self._publications.clear():
            if publication.machine.state in _OPEN_PUBLISHER_STATES:
                events.append(SubscriptionCancelled(publication.subscriber, reason, cause))
        self._send_ctx.element_size.clear()

    def _reject_version(self, version: int, events: list[Event]) -> None:
        """ "If either side receives a hello message with a version it doesn't support, it
        MUST send a goodbye message (defined below) and close the connection."  Our
        optimistic messages count as discarded: their streams end here."""
        error = UnsupportedVersion(
            f"the peer speaks protocol version {version}; this side speaks {PROTOCOL_VERSION}"
        )
        self._send(rsio.Goodbye(str(error)))  # rejecting -> closed: no wait for an answer
        self._end_all_streams(str(error), error, events)
        self._transport_closed = True
        events.append(RsioConnectionClosed(str(error), error))

    def _fail_connection(self, error: RemoteProtocolError, events: list[Event]) -> None:
        """A connection-level violation: goodbye with the reason, then closed at once."""
        reason = f"protocol error: {error}"
        goodbye = rsio.Goodbye(reason)
        if self._connection.allows_send(goodbye):
            self._send(goodbye)
        self._end_all_streams(reason, error, events)
        self._transport_closed = True
        events.append(RsioConnectionClosed(reason, error))

    def _transport_ended(self) -> list[Event]:
        """EOF: "When the underlying transport is closed, both sides should release all
        related resources." """
        events: list[Event] = []
        self._transport_closed = True
        if self._connection.state is ConnectionState.CLOSED:
            return events
        error = TransportClosed("the transport was closed")
        self._end_all_streams(str(error), error, events)
        events.append(RsioConnectionClosed(str(error), error))
        return events
