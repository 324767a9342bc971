"""The sans-I/O engine of the Reactive Streams network protocol, version 0.

One ``RsioConnection`` per transport connection, for the client (the side that opened
it) or the server; after the hellos both are the same: either can subscribe to the
other ("The protocol is fully bidirectional; either party can act in the --> direction").
It keeps the engine contract of ``wirestream.runtime.engine``: bytes in,
``receive_data(data) -> list[Event]`` (``b""`` = EOF); bytes out, ``data_to_send()``;
no timers (the protocol has none).  Commands queue messages and raise
``LocalProtocolError``s.

Every message sent or received goes through the generated machines
(``wirestream.generated.rsio.v0.machines``), one instance per IDL ``scope:``:

- ``connection`` (one): every message moves it (the phase: hellos, open, closing);
  hellos and goodbye go to its handlers ``on_connection_<frame>``; the data messages it
  only ``observes:`` (IDL) and passes on to their subscription;
- ``subscription`` (one per Id and direction, ``MachineRegistry``): a ``subscriber``
  table for the subscriptions we opened, a ``publisher`` table for those the peer opened
  (the Id spaces are per direction: subscribe, request and cancel go to the publisher,
  the rest to the subscriber); handlers ``on_subscription_<frame>``;
- ``element`` (one per unfinished split element of a subscription): the subscription's
  part handlers pick the instance, the ``split_element`` machine's handlers
  ``on_element_<frame>`` join the parts.

A scope's handler runs only when its machine let the frame in (``Dispatch``): a row
that says ignore drops the frame (``ignored_messages``), an error row or no row is the
peer's violation.  Sends pass through the same machines (``send_all``).  Demand is
``wirestream.runtime.flow.Window(cap=LONG_MAX, unbounded_at_cap=True)`` in both
directions (RS §1.1, §3.9, §3.17).

A hello with a version we do not speak is not a violation but the end of the
connection: the machine moves to ``rejecting``, we send goodbye, every stream ends, and
``receive_data`` returns ``ConnectionClosed(cause=UnsupportedVersion)`` ("it MUST send
a goodbye message ... and close the connection").

How peer violations are answered (the seed prescribes nothing for them):

- connection level (malformed bytes, a message the connection or subscription machine
  refuses, e.g. onNextPacked on a variable-size stream or a subscribe for an open Id):
  goodbye with the reason, every stream ends with an event, the connection is closed
  at once (no wait for the peer's goodbye, as for an unsupported version), and
  ``receive_data`` raises the error.  The events produced before the error (frames
  decoded before it, the stream endings) are on the exception's ``events``;
- subscription level, the connection goes on: a publisher exceeding demand, a split
  element over the limits or of the wrong size -> we send cancel and report
  ``SubscriptionFailed`` (RS §2.13: a subscriber signals failure by cancelling);
  request(0) -> we send onError "RS 3.9 ..." and report ``SubscriptionCancelled``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
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
from wirestream.runtime.errors import (
    DecodeError,
    PeerExceededDemand,
    PeerInvalidGrant,
    ProtocolError,
    RemoteProtocolError,
)
from wirestream.runtime.flow import LONG_MAX, Window
from wirestream.runtime.limits import DEFAULT_MAX_STREAMS
from wirestream.runtime.machine import Dispatch, MachineRegistry, StateMachine, check_all, send_all
from wirestream.runtime.rsio.errors import (
    ElementSizeError,
    IncompleteSplitElement,
    PeerElementSizeError,
    ReassemblyLimitExceeded,
    TransportClosed,
    UnsupportedVersion,
)
from wirestream.runtime.rsio.events import (
    ConnectionClosed,
    DemandReceived,
    ElementReceived,
    Event,
    GoodbyeReceived,
    HelloReceived,
    SubscribeReceived,
    SubscriptionCancelled,
    SubscriptionCompleted,
    SubscriptionFailed,
    SubscriptionStarted,
)
from wirestream.runtime.rsio.framing import Encoding, encode_frame, make_decoder

__all__ = ["RsioConfig", "RsioConnection", "PROTOCOL_VERSION"]

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


class RsioConnection:
    """One end of a Reactive Streams network protocol connection (sans-I/O)."""

    # The generated machines the engine runs, one per scope.  Class attributes so that a
    # test can run the engine on tables generated from an edited IDL
    # (tests/rsio/test_rsio_engine_dispatch.py); the frames and states stay those of v0.
    CONNECTION_MACHINE: ClassVar[type[StateMachine[ConnectionState]]] = ConnectionMachine
    SUBSCRIPTION_MACHINE: ClassVar[type[StateMachine[SubscriptionState]]] = SubscriptionMachine
    SPLIT_ELEMENT_MACHINE: ClassVar[type[StateMachine[SplitElementState]]] = SplitElementMachine

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
        # Received frames -> handler methods, from the generated HANDLERS (bound once).
        self._on_connection = Dispatch(self.CONNECTION_MACHINE, role, self)
        self._on_publication = Dispatch(self.SUBSCRIPTION_MACHINE, "publisher", self)
        self._on_subscription = Dispatch(self.SUBSCRIPTION_MACHINE, "subscriber", self)
        self._on_element = Dispatch(self.SPLIT_ELEMENT_MACHINE, "subscriber", self)
        # What the connection machine only observes goes on to the subscription of its Id.
        self._to_scope: dict[type, Callable[[Any, list[Event]], None]] = {
            **dict.fromkeys(_TO_PUBLISHER, self._receive_for_publication),
            **dict.fromkeys(_TO_SUBSCRIBER, self._receive_for_subscription),
        }
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

    def subscription_state(self, subscriber: int) -> SubscriptionState:
        """The state of our subscription ``subscriber`` (``idle``: no such subscription)."""
        machine: StateMachine[SubscriptionState] = self._subscriptions.machine(subscriber)
        return machine.state

    def publication_state(self, subscriber: int) -> SubscriptionState:
        """The state of the peer's subscription ``subscriber`` to us."""
        machine: StateMachine[SubscriptionState] = self._publications.machine(subscriber)
        return machine.state

    @property
    def buffered_bytes(self) -> int:
        """Bytes received of a message that is not complete yet."""
        return self._decoder.buffered

    @property
    def reassembly_bytes(self) -> int:
        """Bytes held for unfinished split elements (bounded by ``max_reassembly_bytes``)."""
        return self._reassembly_bytes

    def available_demand(self, subscriber: int) -> int:
        """How many elements we may still publish to ``subscriber`` (LONG_MAX: unbounded)."""
        entry = self._publication_entries.get(subscriber)
        if entry is None:
            return 0
        return LONG_MAX if entry.demand.unbounded else entry.demand.available

    def outstanding_demand(self, subscriber: int) -> int:
        """How many elements our subscription ``subscriber`` has requested and not received."""
        entry = self._subscriptions.get(subscriber)
        if entry is None:
            return 0
        return LONG_MAX if entry.demand.unbounded else entry.demand.available

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

    # --- our subscriptions (we are the subscriber) ----------------------------------

    def subscribe(self, publisher: str, *, initial_demand: int = 0,
                  subscriber: int | None = None) -> int:  # fmt: skip
        """Subscribe to ``publisher`` (a name the peer parses); returns the subscriber Id.

        Without ``subscriber`` the engine picks one: a cancelled Id first (the seed
        reuses Ids "to prevent Ids from growing without limit"), else the lowest free.
        Reusing an Id that is still open raises ``IllegalSend``.
        """
        if subscriber is None:
            subscriber = self._pick_subscriber_id()
        if not 0 <= initial_demand <= LONG_MAX:
            raise ValueError(f"initial_demand must be between 0 and {LONG_MAX}")
        old = self._subscriptions.get(subscriber)
        machine = self._subscriptions.machine(subscriber)  # a cancelled one's table goes on
        self._send(rsio.Subscribe(publisher, subscriber, initial_demand), machine)
        self._release_parts(old)
        entry = self._new_subscription(subscriber, machine, initial_demand)
        self._subscriptions.settle(subscriber, entry)
        return subscriber

    def request(self, subscriber: int, n: int) -> None:
        """Request ``n`` more elements.  ``n`` <= 0 raises ``InvalidGrant`` and sends
        nothing (RS §3.9 is the caller's onError); after cancel or the end of the
        subscription it is a NOP (RS §3.6)."""
        entry = self._subscriptions.get(subscriber)
        frame = rsio.Request(subscriber, n)
        if entry is None or not entry.machine.allows_send(frame):
            return
        entry.demand.grant(n)  # InvalidGrant for n <= 0 or > LONG_MAX; saturates (§3.17)
        self._send(frame, entry.machine)

    def cancel(self, subscriber: int) -> None:
        """Cancel the subscription (idempotent: RS §3.7).  The entry stays (see
        ``__init__``) until the publisher's last word or the Id's reuse."""
        entry = self._subscriptions.get(subscriber)
        frame = rsio.Cancel(subscriber)
        if entry is None or not entry.machine.allows_send(frame):
            return
        self._send(frame, entry.machine)
        entry.cancelled = True
        self._release_parts(entry)

    # --- our publications (the peer subscribed) -------------------------------------

    def accept(self, subscriber: int, *, element_size: int = 0) -> None:
        """Answer the peer's subscribe with subscribed; ``element_size`` > 0 declares
        fixed-size elements (and allows onNextPacked)."""
        entry = self._publication(subscriber)
        self._send(rsio.Subscribed(subscriber, element_size), entry.machine)
        entry.element_size = element_size
        if element_size:
            self._send_ctx.element_size[subscriber] = element_size

    def reject(self, subscriber: int, error: str) -> None:
        """Refuse a subscription: subscribed then onError (RS §1.9: "the only legal way to
        signal failure (or reject the Subscriber) is by calling onError (after calling
        onSubscribe)")."""
        self.accept(subscriber)
        self.error(subscriber, error)

    def send_next(self, subscriber: int, element: bytes) -> None:
        """Publish one element (onNext, or split when longer than ``max_part_size``);
        raises ``DemandExceeded`` without demand (RS §1.1)."""
        self._publish(self._publication(subscriber), [element], pack=False)

    def send_packed(self, subscriber: int, elements: Sequence[bytes]) -> None:
        """Publish elements as onNextPacked messages (fixed-size streams only)."""
        entry = self._publication(subscriber)
        # The machine refuses onNextPacked unless subscribed announced elementSize > 0.
        check_all(rsio.OnNextPacked(subscriber, []), self._connection, entry.machine)
        self._publish(entry, elements, pack=True)

    def offer(self, subscriber: int, elements: Sequence[bytes]) -> int:
        """Publish as many of ``elements`` as demand allows; returns how many were taken.
        The rest stays with the caller (nothing is buffered beyond demand)."""
        entry = self._publication(subscriber)
        window = entry.demand
        count = len(elements) if window.unbounded else min(len(elements), window.available)
        self._publish(entry, elements[:count], pack=self.config.pack)
        return count

    def complete(self, subscriber: int) -> None:
        """onComplete; the Id is released."""
        entry = self._publication(subscriber)
        self._send(rsio.OnComplete(subscriber), entry.machine)
        self._settle_publication(entry)

    def error(self, subscriber: int, error: str) -> None:
        """onError; the Id is released."""
        entry = self._publication(subscriber)
        self._send(rsio.OnError(subscriber, error), entry.machine)
        self._settle_publication(entry)

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

    def _publication(self, subscriber: int) -> _Publication:
        entry = self._publications.get(subscriber)
        if entry is None:  # not subscribed (or over): a fresh idle machine refuses it
            entry = _Publication(subscriber, self._publications.new_machine(subscriber))
        return entry

    def _settle_publication(self, entry: _Publication) -> None:
        """Keep the publication while its machine is open, else forget it and the
        elementSize of its Id ("After a subscription is closed, its Id can be reused")."""
        if not self._publications.settle(entry.subscriber, entry):
            self._send_ctx.element_size.pop(entry.subscriber, None)

    def _publish(self, entry: _Publication, elements: Sequence[bytes], *, pack: bool) -> None:
        if not elements:
            return
        subscriber, size = entry.subscriber, entry.element_size
        check_all(rsio.OnNext(subscriber, elements[0]), self._connection, entry.machine)
        if not entry.demand.can_consume(len(elements)):
            entry.demand.consume(len(elements))  # raises DemandExceeded (RS §1.1)
        if size:
            for element in elements:
                if len(element) != size:
                    raise ElementSizeError(
                        f"element of {len(element)} bytes on a stream of elementSize {size}"
                    )
        max_part = self.config.max_part_size
        splitting = max_part is not None and (size or max(map(len, elements))) > max_part
        if pack and size and not splitting and len(elements) > 1:
            batch = max(1, min(self.config.max_pack, self.config.max_frame_size // size))
            for start in range(0, len(elements), batch):
                chunk = list(elements[start : start + batch])
                entry.demand.consume(len(chunk))
                if len(chunk) == 1:
                    self._send(rsio.OnNext(subscriber, chunk[0]), entry.machine)
                else:
                    self._send(rsio.OnNextPacked(subscriber, chunk), entry.machine)
            return
        for element in elements:
            entry.demand.consume(1)
            if max_part is not None and len(element) > max_part:
                self._send_split(entry, element, max_part)
            else:
                self._send(rsio.OnNext(subscriber, element), entry.machine)

    def _send_split(self, entry: _Publication, element: bytes, max_part: int) -> None:
        """onNextPart* then onNextLastPart.  We finish each element before the next, so
        element Id 0 is always free ("element is an Id assigned by the Publisher")."""
        split = self.SPLIT_ELEMENT_MACHINE("publisher")
        last = len(element) - max_part
        for start in range(0, len(element), max_part):
            data = element[start : start + max_part]
            frame: rsio.Frame
            if start >= last:
                frame = rsio.OnNextLastPart(entry.subscriber, 0, data)
            else:
                frame = rsio.OnNextPart(entry.subscriber, 0, data)
            self._send(frame, entry.machine, split)

    def _new_subscription(self, subscriber: int, machine: StateMachine[SubscriptionState],
                          initial_demand: int) -> _Subscription:  # fmt: skip
        parts: MachineRegistry[int, _Reassembly] = MachineRegistry(
            self.SPLIT_ELEMENT_MACHINE, "subscriber", machine_of=_machine_of
        )
        return _Subscription(subscriber, machine, initial_demand, parts)

    def _pick_subscriber_id(self) -> int:
        cancelled = [sid for sid, entry in self._subscriptions.items()
                     if entry.machine.state is SubscriptionState.CANCELLED]  # fmt: skip
        if cancelled:
            return min(cancelled)
        subscriber = 0
        while subscriber in self._subscriptions:
            subscriber += 1
        return subscriber

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

    def _receive_for_publication(self, frame: ToPublisher, events: list[Event]) -> None:
        """subscribe, request, cancel: to the peer's subscription of that Id (an unknown Id
        meets a fresh ``idle`` machine: subscribe opens it, the rest is dropped)."""
        entry = self._publication(frame.subscriber)
        if not self._on_publication.receive(entry.machine, frame, entry, events):
            self.ignored_messages += 1  # RS §3.6 / §3.7: crossed our onComplete/onError

    def _receive_for_subscription(self, frame: ToSubscriber, events: list[Event]) -> None:
        """subscribed, onNext*, onComplete, onError: to our subscription of that Id (an
        unknown Id meets a fresh ``idle`` machine, which refuses everything)."""
        entry = self._subscription_entries.get(frame.subscriber)
        if entry is None:
            machine = self._subscriptions.new_machine(frame.subscriber)
            entry = self._new_subscription(frame.subscriber, machine, 0)
        if not self._on_subscription.receive(entry.machine, frame, entry, events):
            self.ignored_messages += 1  # RS §2.8: in flight after our cancel

    def _receive_part(self, frame: Part, entry: _Subscription, events: list[Event]) -> None:
        """A part, let in by the subscription: to the split element of its element Id."""
        part = entry.parts.get(frame.element_id)
        if part is None:
            part = _Reassembly(entry.parts.new_machine(frame.element_id))
        self._on_element.receive(part.machine, frame, entry, part, events)

    on_subscription_on_next_part = _receive_part
    on_subscription_on_next_last_part = _receive_part

    # --- connection handlers ----------------------------------------------------------

    def _on_hello(self, frame: rsio.ClientHello | rsio.ServerHello, events: list[Event]) -> None:
        if self._connection.state is ConnectionState.REJECTING:
            self._reject_version(frame.version, events)
            return
        self.peer_extensions = tuple(frame.extensions)
        events.append(HelloReceived(frame.version, self.peer_extensions))
        if self._connection.state is ConnectionState.HELLO_RECEIVED:
            self._send(self._hello())  # answer a hello that came first

    on_connection_client_hello = _on_hello
    on_connection_server_hello = _on_hello

    def on_connection_goodbye(self, frame: rsio.Goodbye, events: list[Event]) -> None:
        events.append(GoodbyeReceived(frame.reason))
        self._end_all_streams(f"goodbye received: {frame.reason}", None, events)
        if self._connection.state is ConnectionState.GOODBYE_RECEIVED:
            self._send(rsio.Goodbye(frame.reason))  # the acknowledgement
        events.append(ConnectionClosed(frame.reason))

    # --- publication handlers (the peer subscribed to us) ---------------------------

    def on_subscription_subscribe(self, frame: rsio.Subscribe, entry: _Publication,
                                  events: list[Event]) -> None:  # fmt: skip
        subscriber = frame.subscriber
        self._publications.settle(subscriber, entry)  # subscribing: the Id is taken
        if len(self._publications) > self.config.max_peer_subscriptions:
            limit = self.config.max_peer_subscriptions
            self.reject(subscriber, f"too many subscriptions (limit {limit})")
            return
        if frame.initial_demand:
            entry.demand.grant(frame.initial_demand)
        events.append(SubscribeReceived(subscriber, frame.publisher, frame.initial_demand))

    def on_subscription_request(self, frame: rsio.Request, entry: _Publication,
                                events: list[Event]) -> None:  # fmt: skip
        try:
            entry.demand.grant(frame.demand)
        except PeerInvalidGrant as error:
            self._answer_non_positive_request(entry, error, events)
            return
        events.append(DemandReceived(frame.subscriber, frame.demand))

    def on_subscription_cancel(self, frame: rsio.Cancel, entry: _Publication,
                               events: list[Event]) -> None:  # fmt: skip
        if entry.machine.state is SubscriptionState.CANCEL_UNANSWERED:
            self._send(rsio.Subscribed(frame.subscriber, 0), entry.machine)
        self._settle_publication(entry)
        events.append(SubscriptionCancelled(frame.subscriber, "cancelled by the subscriber"))

    def _answer_non_positive_request(self, entry: _Publication, error: PeerInvalidGrant,
                                     events: list[Event]) -> None:  # fmt: skip
        """RS §3.9: "Subscription.request(long n) MUST signal onError with a
        java.lang.IllegalArgumentException if the argument is <= 0. The cause message
        SHOULD explain that non-positive request signals are illegal." """
        reason = (
            "RS 3.9: request(n) with n <= 0 is illegal; non-positive request signals are illegal"
        )
        if entry.machine.state is SubscriptionState.SUBSCRIBING:
            self.accept(entry.subscriber)  # onSubscribe before onError (RS §1.9)
        self.error(entry.subscriber, reason)
        events.append(SubscriptionCancelled(entry.subscriber, reason, error))

    # --- subscription handlers (we subscribed) --------------------------------------

    def on_subscription_subscribed(self, frame: rsio.Subscribed, entry: _Subscription,
                                   events: list[Event]) -> None:  # fmt: skip
        entry.element_size = frame.element_size
        if entry.machine.state in _ACTIVE_STATES:  # not when it answers an early cancel
            events.append(SubscriptionStarted(frame.subscriber, frame.element_size))

    def on_subscription_on_next(self, frame: rsio.OnNext, entry: _Subscription,
                                events: list[Event]) -> None:  # fmt: skip
        if self._consume(entry, 1, events):
            events.append(ElementReceived(frame.subscriber, frame.element))

    def on_subscription_on_next_packed(self, frame: rsio.OnNextPacked, entry: _Subscription,
                                       events: list[Event]) -> None:  # fmt: skip
        # The machine let it in only on a fixed-size stream (active_fixed).
        if self._consume(entry, len(frame.elements), events):
            subscriber = frame.subscriber
            events.extend(ElementReceived(subscriber, e) for e in frame.elements)

    def _on_terminal(self, frame: rsio.OnComplete | rsio.OnError, entry: _Subscription,
                     events: list[Event]) -> None:  # fmt: skip
        unfinished = bool(entry.parts)
        self._release_parts(entry)
        self._subscriptions.settle(entry.subscriber)  # idle: the Id is free
        if entry.cancelled:
            return  # the application cancelled; it expects nothing more
        if isinstance(frame, rsio.OnError):
            events.append(SubscriptionFailed(entry.subscriber, frame.error))
        elif unfinished:
            error = IncompleteSplitElement("onComplete before the last part of a split element")
            events.append(SubscriptionFailed(entry.subscriber, str(error), error))
        else:
            events.append(SubscriptionCompleted(entry.subscriber))

    on_subscription_on_complete = _on_terminal
    on_subscription_on_error = _on_terminal

    def _consume(self, entry: _Subscription, count: int, events: list[Event]) -> bool:
        """Charge ``count`` elements to our demand; a publisher going over it broke RS §1.1:
        we cancel and fail the subscription (the connection goes on)."""
        try:
            entry.demand.consume(count)
        except PeerExceededDemand as error:
            self._fail_subscription(entry, error, events)
            return False
        return True

    # --- split element handlers -------------------------------------------------------

    def _join_part(self, frame: Part, entry: _Subscription, part: _Reassembly,
                   events: list[Event]) -> None:  # fmt: skip
        """Split messaging: "messages with the same element value, in the same stream, will
        be joined by the Subscriber"; one element costs one demand, charged when it
        starts (a publisher may only start an element it has demand for)."""
        starting = frame.element_id not in entry.parts  # a new instance: the element starts
        if starting and not self._consume(entry, 1, events):
            return
        limits = self.config
        if (
            len(part.data) + len(frame.data) > limits.max_element_size
            or self._reassembly_bytes + len(frame.data) > limits.max_reassembly_bytes
        ):
            error = ReassemblyLimitExceeded(
                f"split element {frame.element_id} exceeds the limit of"
                f" {limits.max_element_size} bytes per element"
                f" / {limits.max_reassembly_bytes} bytes in all"
            )  # fmt: skip
            self._fail_subscription(entry, error, events)
            return
        if entry.parts.settle(frame.element_id, part):  # in progress: keep joining
            part.data += frame.data
            self._reassembly_bytes += len(frame.data)
            return
        self._reassembly_bytes -= len(part.data)  # the last part: the element is whole
        element = bytes(part.data) + frame.data
        if entry.element_size and len(element) != entry.element_size:
            mismatch = PeerElementSizeError(
                f"split element of {len(element)} bytes on a stream of elementSize"
                f" {entry.element_size}"
            )  # fmt: skip
            self._fail_subscription(entry, mismatch, events)
            return
        events.append(ElementReceived(entry.subscriber, element))

    on_element_on_next_part = _join_part
    on_element_on_next_last_part = _join_part

    def _fail_subscription(self, entry: _Subscription, error: ProtocolError,
                           events: list[Event]) -> None:  # fmt: skip
        """RS §2.13: "the only legal way for a Subscriber to signal failure is by
        cancelling its Subscription" -- cancel, and tell the application (onError)."""
        self.cancel(entry.subscriber)
        events.append(SubscriptionFailed(entry.subscriber, str(error), error))

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
        events.append(ConnectionClosed(str(error), error))

    def _fail_connection(self, error: RemoteProtocolError, events: list[Event]) -> None:
        """A connection-level violation: goodbye with the reason, then closed at once."""
        reason = f"protocol error: {error}"
        goodbye = rsio.Goodbye(reason)
        if self._connection.allows_send(goodbye):
            self._send(goodbye)
        self._end_all_streams(reason, error, events)
        self._transport_closed = True
        events.append(ConnectionClosed(reason, error))

    def _transport_ended(self) -> list[Event]:
        """EOF: "When the underlying transport is closed, both sides should release all
        related resources." """
        events: list[Event] = []
        self._transport_closed = True
        if self._connection.state is ConnectionState.CLOSED:
            return events
        error = TransportClosed("the transport was closed")
        self._end_all_streams(str(error), error, events)
        events.append(ConnectionClosed(str(error), error))
        return events
