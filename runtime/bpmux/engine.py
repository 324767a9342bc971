"""The sans-I/O BPMUX (bpmux/rel) engine: one side of one connection.

Bytes in (``receive_data``), events out; commands queue packets, ``data_to_send``
drains them.  No sockets, no clocks.  The behaviour is in the generated machines of
``idl/bpmux/rel.yaml`` (``connection``, ``request``, ``flow``): every packet sent or
received goes through them, and a received packet reaches its handler only through the
generated dispatch (``HANDLERS``, ``wirestream.runtime.machine.Dispatch``):

- every packet goes through the ``connection`` machine first; its handlers
  (``on_connection_<packet>``) take MainCredit, Minimum, CancelAll, Close, Message(s),
  the Requests batch and the Create*/Greedy* packets (which open the flows: the ``flow``
  machine only observes them);
- Request, RequestCancel, Response and ResponseError then go to the ``request``
  instance of their (direction, req_id) (``on_request_<packet>``), inner packets to the
  ``flow`` instance of their (inner_id, direction) (``on_inner_flow_<packet>``).  Which
  direction is read from the tables too: the role whose receive table names the packet.

A row that says ignore drops the packet before any handler runs; an error row (or no
row) raises ``UnexpectedFrame``.  This module adds what tables cannot hold: credit (one
``wirestream.runtime.flow.Window`` for top-level packets and one per flow, see ``credit``),
req_id allocation, batching, and turning packets into events; the inner streams' ids,
per-direction registries and ended ids are ``flows``.

Credit order (the protocol's own decision, also in the IDL): a top-level packet is
charged to the top-level credit *before* the ``connection`` machine sees it (its bytes
arrived, whatever the machine then says); an inner packet is charged to its flow's
credit *after* the ``flow`` machine accepted it (items crossing our InnerCancel are
dropped uncharged, L61).

DECISIONS where seed 002 is silent (also written in the IDL):

- Start: both sides start with no top-level credit; the engine's first packet is
  MainCredit(initial_credit), then, when it has the credit for it, Minimum(minimum).
- Ids: req_ids are per direction and increase from 0; inner ids are one space split
  by parity (the initiator creates odd ids, the acceptor even ones), each side's
  increasing.  Ids are never reused.
- Any peer violation (a machine's error row, top-level or inner credit exceeded, a
  malformed packet) fails the whole connection: BPMUX has no error packet ("TODO:
  close top-level with error", L21), so nothing is sent; ``receive_data`` raises the
  ``RemoteProtocolError`` (its ``events``: those of the packets handled before, and the
  abort events of everything that was open) and the transport should be closed.
- Close is a half-close (L31: no more Message, Request, Open*): ``send_close``.  Our
  end of the connection is ``close()``: Close (unless sent) and CancelAll (what we
  still wait for), then everything open ends with its abort event.
- Batching: consecutive queued Message packets become Messages, Requests with
  consecutive ids Requests, InnerItems of one stream InnerItems -- when the batch is
  not larger than the packets it replaces.
- InnerEnd costs inner credit (no exemption in the seed), so ``send_item`` keeps back
  the InnerEnd's cost: a stream can always be ended once it had that much credit.
- Greedy packets (GreedySink/GreedyDuplex, our layout) are sent only with
  ``greedy=True``; a receiver takes every greedy item (there is no "accepted" reply).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Union

from wirestream.generated.bpmux.rel import (
    MAX_FRAME_SIZE,
    CancelAll,
    Close,
    CreateDuplex,
    CreateSink,
    CreateStream,
    Frame,
    GreedyDuplex,
    GreedySink,
    InnerCancel,
    InnerCredit,
    InnerEnd,
    InnerError,
    InnerItem,
    InnerItems,
    MainCredit,
    Message,
    Messages,
    Minimum,
    Request,
    RequestCancel,
    Requests,
    Response,
    ResponseError,
    StreamDecoder,
    UnknownFrame,
)
from wirestream.generated.bpmux.rel.machines import (
    ConnectionMachine,
    ConnectionState,
    FlowMachine,
    RequestMachine,
    RequestState,
)
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.credit import CHARGE, Charge, OutboundCredit
from wirestream.runtime.bpmux.errors import ConnectionClosedError, GreedyNotEnabled, InvalidInnerId
from wirestream.runtime.bpmux.flows import CreatePacket, Direction, Flow, InnerFlows
from wirestream.runtime.errors import DecodeError, ProtocolError, RemoteProtocolError
from wirestream.runtime.flow import VARU64_MAX, Replenisher, Window
from wirestream.runtime.machine import (
    Dispatch,
    MachineRegistry,
    StateMachine,
    check_all,
    send_all,
)

if TYPE_CHECKING:
    from wirestream.runtime.engine import Engine

__all__ = ["BpmuxConnection"]

SenderPacket = Union[InnerItem, InnerItems, InnerEnd, InnerError]
_Route = Callable[[Any, list[ev.Event]], None]
_TOP_LEVEL: Final = frozenset(kind for kind, charge in CHARGE.items() if charge is Charge.TOP_LEVEL)
_KIND: Final = {
    CreateStream: ev.InnerKind.STREAM,
    CreateSink: ev.InnerKind.SINK,
    GreedySink: ev.InnerKind.SINK,
    CreateDuplex: ev.InnerKind.DUPLEX,
    GreedyDuplex: ev.InnerKind.DUPLEX,
}


@dataclass(slots=True)
class _Queued:
    """A packet waiting for ``data_to_send``: its encoding, the credit it reserved and,
    for packets of a flow we send on, the inner id (to drop them on InnerCancel)."""

    frame: Frame
    data: bytes
    credit: OutboundCredit | None
    inner_id: int | None = None


def _received_by(machine: type[StateMachine[Any]], role: str) -> list[type]:
    """The packet classes ``role``'s receive table names, whatever the rows say: the
    instances of that role are where such a packet goes."""
    return list(dict.fromkeys(f for _, f in machine.RECEIVE[role] if isinstance(f, type)))


class BpmuxConnection:
    """One end of a BPMUX connection (the protocol is symmetric).

    ``initiator``: whether this side opened the transport (it creates odd inner ids).
    ``initial_credit``: top-level bytes granted to the peer at start; with
    ``auto_credit`` the engine grants them again as packets arrive (a
    ``wirestream.runtime.flow.Replenisher``), keeping at least the peer's Minimum when it can.
    ``minimum``: a Minimum to announce.  ``batching``/``max_batch``: see the module doc.
    ``greedy``: allow items attached to open_sink/open_duplex.  ``max_packet_size``:
    the decoder's limit for one packet.  ``ended_memory``: how many ended inner ids are
    remembered to tell late packets (dropped) from reused ids (refused).
    ``max_streams``: inner streams the peer may have open at once; one more is refused
    (``_refuse``) and the connection goes on.
    """

    # The generated tables the engine runs.  A subclass may run an edited copy of them
    # (same packets, other rows): tests/bpmux/test_bpmux_engine_dispatch.py.
    CONNECTION_MACHINE: ClassVar[type[StateMachine[Any]]] = ConnectionMachine
    REQUEST_MACHINE: ClassVar[type[StateMachine[Any]]] = RequestMachine
    FLOW_MACHINE: ClassVar[type[StateMachine[Any]]] = FlowMachine

    def __init__(self, *, initiator: bool, initial_credit: int = 1 << 16,
                 auto_credit: bool = True, minimum: int | None = None, batching: bool = True,
                 max_batch: int = 64, greedy: bool = False,
                 max_packet_size: int = MAX_FRAME_SIZE, ended_memory: int = 1024,
                 max_streams: int | None = None) -> None:  # fmt: skip
        if initial_credit < 0 or max_batch < 1 or ended_memory < 0:
            raise ValueError("initial_credit, max_batch and ended_memory must be >= 0 / >= 1")
        if max_streams is not None and max_streams < 1:
            raise ValueError("max_streams must be at least 1 (or None: no limit)")
        self.max_streams = max_streams
        # Refused inner streams whose InnerError waits for the peer's inner credit.
        self._refused: dict[int, bytes] = {}
        self.initiator = initiator
        self.batching = batching
        self.max_batch = max_batch
        self.greedy = greedy
        self.ended_memory = ended_memory
        self._initial_credit = initial_credit
        self._decoder = StreamDecoder(max_frame_size=max_packet_size)
        # Sizes of the packets the decoder produced in this feed (credit counts bytes);
        # ``_frame_size`` is the one being handled.
        self._frame_sizes: list[int] = []
        self._decoder.after_frame = lambda frame, size: self._frame_sizes.append(size)
        self._frame_size = 0
        connection, request, flow = self.CONNECTION_MACHINE, self.REQUEST_MACHINE, self.FLOW_MACHINE
        # The states the engine names itself (ids it never saw, the end), by IDL name.
        self._both_closed: ConnectionState = type(connection.INITIAL["peer"])("both_closed")
        self._request_idle: RequestState = request.INITIAL["requester"]
        self._request_closed: RequestState = type(self._request_idle)("closed")
        self._connection = connection("peer")
        self._send_top = OutboundCredit(Charge.TOP_LEVEL)
        self._recv_top = Window.inbound_window(cap=VARU64_MAX)
        self._replenisher = (
            Replenisher(initial_credit) if auto_credit and initial_credit > 0 else None
        )
        self._peer_minimum = 0
        self._minimum_to_send = minimum
        self._queue: list[_Queued] = []
        # Requests, per direction: ours (requester) and the peer's (responder).  An id
        # with no entry is idle, or spent (`closed`) below the highest id used (DECISION:
        # ids increase).
        self._next_req_id = 0
        self._peer_next_req_id = 0  # ids below this one the peer has used
        self._outgoing: MachineRegistry[int, StateMachine[Any]] = MachineRegistry(
            request, "requester", vacant_state=self._spent_request(outgoing=True)
        )
        self._incoming: MachineRegistry[int, StateMachine[Any]] = MachineRegistry(
            request, "responder", vacant_state=self._spent_request(outgoing=False)
        )
        # Inner streams (``flows``): ids, a registry per direction of items, ended ids.
        self._flows = InnerFlows(flow, initiator=initiator, ended_memory=ended_memory)
        self._outbound = self._flows.outbound  # flows we send items on
        self._inbound = self._flows.inbound  # flows the peer sends items on
        self._failure: ProtocolError | None = None
        self._closed = False  # EOF, a failure or close()
        self._transport_closed = False
        self._done_reported = False
        self.unknown_packets_skipped = 0
        self.frames_received = 0  # whole packets decoded (the engine contract's progress)
        # The generated dispatch: built once, so a handler missing for a packet the
        # tables let through fails here, not when the packet comes.
        self._dispatch = Dispatch(connection, "peer", self)
        self._answers = Dispatch(request, "requester", self)  # to our requests
        self._asks = Dispatch(request, "responder", self)  # the peer's requests
        self._credit_and_cancel = Dispatch(flow, "item_sender", self)  # flows we send on
        self._items = Dispatch(flow, "item_receiver", self)  # flows we receive on
        self._routes = self._routes_by_scope()
        # BP-29 (DECISION): announce our initial top-level credit first.
        if initial_credit > 0:
            self._grant_top(initial_credit)
        self._try_send_minimum()

    def _routes_by_scope(self) -> dict[type, _Route]:
        """Packet class -> where it goes after the ``connection`` machine: the instance
        of the role whose receive table names it (the IDL's scopes and roles, not a list
        of ours).  Packets a ``connection`` handler takes stay there."""
        routes: dict[type, _Route] = {}
        scopes: list[tuple[type[StateMachine[Any]], str, _Route]] = [
            (self.REQUEST_MACHINE, "requester", self._receive_answer),
            (self.REQUEST_MACHINE, "responder", self._receive_ask),
            (self.FLOW_MACHINE, "item_sender", self._receive_on_outbound),
            (self.FLOW_MACHINE, "item_receiver", self._receive_on_inbound),
        ]
        for machine, role, route in scopes:
            for frame in _received_by(machine, role):
                if self._dispatch.handles(frame):
                    continue
                if frame in routes:
                    raise TypeError(f"{frame.__name__} is received by two roles of "
                                    f"{machine.NAME!r}: which instance takes it?")  # fmt: skip
                routes[frame] = route
        return routes

    # ------------------------------------------------------------------ queries --

    @property
    def closed(self) -> bool:
        """The engine ended: EOF (``receive_data(b"")``), a failure or ``close()``."""
        return self._closed

    @property
    def top_level_credit(self) -> int:
        """Top-level bytes we may still send (granted by the peer, minus queued packets)."""
        return self._send_top.available

    @property
    def peer_top_level_credit(self) -> int:
        """Top-level bytes the peer may still send us."""
        return self._recv_top.available

    @property
    def peer_minimum(self) -> int:
        return self._peer_minimum

    def inner_credit(self, inner_id: int) -> int:
        """Inner bytes we may still send on ``inner_id`` (0 when we do not send on it)."""
        flow = self._outbound.get(inner_id)
        return 0 if flow is None else flow.send.available

    def peer_inner_credit(self, inner_id: int) -> int:
        """Inner bytes the peer may still send us on ``inner_id``."""
        flow = self._inbound.get(inner_id)
        return 0 if flow is None else flow.recv.available

    def item_cost(self, inner_id: int, payload: bytes) -> int:
        """Inner credit ``send_item`` needs: the InnerItem packet plus the InnerEnd kept back."""
        return len(InnerItem(inner_id, payload).to_bytes()) + len(InnerEnd(inner_id).to_bytes())

    @property
    def state(self) -> ConnectionState:
        state: ConnectionState = self._connection.state
        return state

    @property
    def done(self) -> bool:
        """Both sides sent Close and nothing is open (BP-31)."""
        return (
            self._connection.state is self._both_closed
            and not self._outgoing
            and not self._incoming
            and not self._outbound
            and not self._inbound
        )

    def open_requests(self) -> tuple[list[int], list[int]]:
        """(our pending req_ids, the peer's pending req_ids)."""
        return sorted(self._outgoing), sorted(self._incoming)

    def open_inner_ids(self) -> list[int]:
        return self._flows.open_ids()

    @property
    def buffered_bytes(self) -> int:
        """Bytes received of a packet that is not complete yet."""
        return self._decoder.buffered

    def get_timer(self) -> float | None:
        """BPMUX has no timers (the engine shape has the method for every protocol)."""
        return None

    def handle_timer(self, now: float) -> list[ev.Event]:
        return []

    # ------------------------------------------------------------------ commands --

    def grant(self, credit: int) -> None:
        """MainCredit: let the peer send ``credit`` more top-level bytes (L29)."""
        self._check_usable()
        self._grant_top(credit)

    def send_close(self) -> None:
        """Close: we open nothing more (L31); what is open goes on (a half-close)."""
        self._check_usable()
        self._queue_free(Close(), self._connection)

    def close(self) -> list[ev.Event]:
        """Our end of the connection (the engine contract): Close unless sent (L31),
        CancelAll when we still wait for something (L35), then every request and inner
        stream still open ends (``RequestAborted``, ``InnerAborted``, then
        ``ConnectionEnded``): the returned events.  ``data_to_send`` still writes what
        was queued; commands are refused and received bytes ignored from now on."""
        events: list[ev.Event] = []
        if self._closed:
            return events
        close = Close()
        if self._connection.allows_send(close):
            self._queue_free(close, self._connection)
        waiting = self._outgoing or any(not f.machine.vacant for f in self._inbound.values())
        if waiting:
            cancel = CancelAll()
            self._queue_free(cancel, self._connection)
        self._end(events, None, keep_queue=True)
        return events

    def send_message(self, payload: bytes) -> None:
        """Message (L37); consecutive messages may leave as one Messages (L39)."""
        self._check_usable()
        self._queue_top(Message(payload), self._connection)

    def send_request(self, payload: bytes) -> int:
        """Request (L41) under the next req_id, which is returned."""
        self._check_usable()
        req_id = self._next_req_id
        machine = self._outgoing.new_machine(req_id)
        self._queue_top(Request(req_id, payload), self._connection, machine)
        self._next_req_id += 1
        self._outgoing.add(req_id, machine)
        return req_id

    def cancel_request(self, req_id: int) -> None:
        """RequestCancel (L45): we no longer want the answer."""
        self._check_usable()
        machine = self._outgoing.machine(req_id)
        self._queue_free(RequestCancel(req_id), self._connection, machine)
        self._outgoing.settle(req_id, machine)

    def respond(self, req_id: int, payload: bytes) -> None:
        """Response (L47) to the peer's request ``req_id``."""
        self._answer(Response(req_id, payload))

    def respond_error(self, req_id: int, payload: bytes) -> None:
        """ResponseError (L49) to the peer's request ``req_id``."""
        self._answer(ResponseError(req_id, payload))

    def open_stream(self, payload: bytes = b"", credit: int = 0) -> int:
        """CreateStream (L51): the peer will send us items; ``credit`` is its initial
        inner credit (bytes).  Returns the inner id."""
        return self._create(CreateStream(self._flows.next_id, credit, payload))

    def open_sink(self, payload: bytes = b"", items: Sequence[bytes] | None = None) -> int:
        """CreateSink (L53): we will send items once the peer grants inner credit.  With
        ``items`` (needs ``greedy=True``): GreedySink, the items paid with top-level credit."""
        inner_id = self._flows.next_id
        if items is None:
            return self._create(CreateSink(inner_id, payload))
        return self._create(GreedySink(inner_id, payload, list(items)))

    def open_duplex(self, payload: bytes = b"", credit: int = 0,
                    items: Sequence[bytes] | None = None) -> int:  # fmt: skip
        """CreateDuplex (L55): both directions; ``credit`` for the peer's items.  With
        ``items`` (needs ``greedy=True``): GreedyDuplex."""
        inner_id = self._flows.next_id
        if items is None:
            return self._create(CreateDuplex(inner_id, credit, payload))
        return self._create(GreedyDuplex(inner_id, credit, payload, list(items)))

    def send_item(self, inner_id: int, payload: bytes) -> None:
        """InnerItem (L63); consecutive items of one stream may leave as InnerItems.
        Needs ``item_cost(inner_id, payload)`` inner credit (the InnerEnd is kept back)."""
        keep = len(InnerEnd(inner_id).to_bytes())
        self._queue_inner(InnerItem(inner_id, payload), keep)

    def end_items(self, inner_id: int) -> None:
        """InnerEnd (L67): we send no more items on ``inner_id``."""
        self._queue_inner(InnerEnd(inner_id), 0)

    def fail_items(self, inner_id: int, payload: bytes) -> None:
        """InnerError (L69): end our items on ``inner_id`` with an error."""
        self._queue_inner(InnerError(inner_id, payload), 0)

    def grant_inner(self, inner_id: int, credit: int) -> None:
        """InnerCredit (L59): let the peer send ``credit`` more bytes on ``inner_id``."""
        self._check_usable()
        flow = self._flows.flow(self._inbound, inner_id)
        frame = InnerCredit(inner_id, credit)
        check_all(frame, self._connection, flow.machine)
        flow.recv.grant(credit)  # InvalidGrant for 0 or more than 2^64-1
        self._queue_free(frame, self._connection, flow.machine)

    def cancel_inner(self, inner_id: int) -> None:
        """InnerCancel (L61): we want no more items on ``inner_id``."""
        self._check_usable()
        flow = self._flows.flow(self._inbound, inner_id)
        self._queue_free(InnerCancel(inner_id), self._connection, flow.machine)
        self._flows.settle(inner_id)

    def cancel_all(self) -> None:
        """CancelAll (L35): RequestCancel for each of our pending requests and
        InnerCancel for each open flow we receive on, in one free packet."""
        self._check_usable()
        frame = CancelAll()
        self._connection.send(frame)
        for req_id, machine in list(self._outgoing.items()):
            machine.send(RequestCancel(req_id))
            self._outgoing.settle(req_id, machine)
        for inner_id, flow in list(self._inbound.items()):
            cancel = InnerCancel(inner_id)
            if flow.machine.allows_send(cancel):
                flow.machine.send(cancel)
                self._flows.settle(inner_id)
        self._queue.append(_Queued(frame, frame.to_bytes(), None))

    def data_to_send(self) -> bytes:
        """The queued packets' bytes, batched where allowed; charges what is written."""
        if self._failure is not None:
            self._queue.clear()
            return b""
        queue, self._queue = self._queue, []
        out: list[bytes] = []
        i = 0
        while i < len(queue):
            entry = queue[i]
            stop = self._batch_end(queue, i)
            if stop - i > 1:
                run = queue[i:stop]
                batch = _batch(run)
                data = batch.to_bytes()
                reserved = sum(len(e.data) for e in run)
                if len(data) <= reserved and entry.credit is not None:
                    entry.credit.spend(reserved, len(data))
                    out.append(data)
                    i = stop
                    continue
            if entry.credit is not None:
                entry.credit.spend(len(entry.data), len(entry.data))
            out.append(entry.data)
            i += 1
        return b"".join(out)

    # -------------------------------------------------------------------- receive --

    def receive_data(self, data: bytes, now: float | None = None) -> list[ev.Event]:
        """Feed bytes from the peer (``b""`` = the transport closed); returns events.
        ``now`` is accepted for the engine contract (BPMUX has no timers).

        Raises a ``RemoteProtocolError`` when the peer broke a rule; the connection is
        then failed (see the module doc) and the error's ``events`` hold the events.
        """
        events: list[ev.Event] = []
        if self._closed:
            return events
        if not data:
            self._transport_closed = True
            self._end(events, None)
            return events
        self._frame_sizes.clear()
        try:
            try:
                frames = self._decoder.feed(data)
            except DecodeError as error:
                self.frames_received += len(error.frames)
                for frame, size in zip(error.frames, self._frame_sizes):
                    self._handle(frame, size, events)  # type: ignore[arg-type]
                raise
            self.frames_received += len(frames)
            for frame, size in zip(frames, self._frame_sizes):
                self._handle(frame, size, events)
        except RemoteProtocolError as error:
            self._failure = error
            self._end(events, error)
            error.events = events  # delivered by the caller before the error (nothing lost)
            raise
        if not self._done_reported and self.done:
            self._done_reported = True
            events.append(ev.ConnectionDone())
        return events

    def _handle(self, frame: Frame, size: int, events: list[ev.Event]) -> None:
        if isinstance(frame, UnknownFrame):
            # L19: "drop that many bytes after that VarU64, then continue the stream".
            self.unknown_packets_skipped += 1
            return
        self._frame_size = size
        kind = type(frame)
        if kind in _TOP_LEVEL:
            self._charge_top(size)  # before the machine: see the module doc
        if self._dispatch.receive(self._connection, frame, events):
            route = self._routes.get(kind)
            if route is not None:
                route(frame, events)

    def _charge_top(self, size: int) -> None:
        self._recv_top.consume(size)  # PeerExceededDemand: fatal (BP-30)
        if self._replenisher is not None:
            self._top_up(self._replenisher.delivered(size))

    def _top_up(self, grant: int) -> None:
        """Grant ``grant`` (the Replenisher's amount), and more if that leaves the peer
        below its Minimum (BP-09), as far as our own budget (initial_credit) goes."""
        floor = min(self._peer_minimum, self._initial_credit)
        short = floor - (self._recv_top.available + grant)
        if short > 0:
            grant += short
        if grant:
            self._grant_top(grant)

    # --- to the instance of the packet's scope (after the `connection` machine) -------

    def _receive_answer(self, frame: Response | ResponseError, events: list[ev.Event]) -> None:
        """An answer to our request ``req_id`` (the `request` machine as requester)."""
        outgoing, req_id = self._outgoing, frame.req_id
        machine = outgoing.get(req_id)
        if machine is None:
            machine = outgoing.new_machine(req_id)
        self._answers.receive(machine, frame, events)
        _settle(outgoing, req_id, machine)

    def _receive_ask(self, frame: Request | RequestCancel, events: list[ev.Event]) -> None:
        """The peer's request ``req_id`` (the `request` machine as responder)."""
        incoming, req_id = self._incoming, frame.req_id
        machine = incoming.get(req_id)
        if machine is None:
            machine = incoming.new_machine(req_id)
        self._asks.receive(machine, frame, events)
        _settle(incoming, req_id, machine)

    def _receive_on_outbound(self, frame: InnerCredit | InnerCancel,
                             events: list[ev.Event]) -> None:  # fmt: skip
        """InnerCredit/InnerCancel for the items we send on ``inner_id``."""
        flow = self._flows.flow(self._outbound, frame.inner_id)
        self._credit_and_cancel.receive(flow.machine, frame, flow, events)

    def _receive_on_inbound(self, frame: SenderPacket, events: list[ev.Event]) -> None:
        """Items or their end on ``inner_id``, from the peer."""
        flow = self._flows.flow(self._inbound, frame.inner_id)
        self._items.receive(flow.machine, frame, flow, events)

    # --- connection handlers (the `connection` machine let the packet in) -------------

    def on_connection_main_credit(self, frame: MainCredit, events: list[ev.Event]) -> None:
        self._send_top.grant(frame.credit)
        events.append(ev.MainCreditReceived(frame.credit))
        self._try_send_minimum()

    def on_connection_close(self, frame: Close, events: list[ev.Event]) -> None:
        events.append(ev.PeerClosed())

    def on_connection_minimum(self, frame: Minimum, events: list[ev.Event]) -> None:
        self._peer_minimum = frame.min_credit
        events.append(ev.MinimumReceived(frame.min_credit))
        if self._replenisher is not None:
            self._top_up(0)

    def on_connection_cancel_all(self, frame: CancelAll, events: list[ev.Event]) -> None:
        # L35 "The same as sending RequestCancel and InnerCancel messages for all
        # requests, streams and duplexes": each goes through its machine.
        for req_id in sorted(self._incoming):
            self._receive_ask(RequestCancel(req_id), events)
        for inner_id in sorted(self._outbound):
            self._receive_on_outbound(InnerCancel(inner_id), events)

    def on_connection_message(self, frame: Message, events: list[ev.Event]) -> None:
        events.append(ev.MessageReceived(frame.payload))

    def on_connection_messages(self, frame: Messages, events: list[ev.Event]) -> None:
        events.extend(ev.MessageReceived(payload) for payload in frame.payloads)

    def on_connection_requests(self, frame: Requests, events: list[ev.Event]) -> None:
        # L43: "The reqests are assigned consecutive ids, starting from `initial_req_id`."
        # Each one goes to its own `request` instance, as a Request would.
        for offset, payload in enumerate(frame.payloads):
            self._receive_ask(Request(frame.initial_req_id + offset, payload), events)

    def on_connection_create(self, frame: CreatePacket, events: list[ev.Event]) -> None:
        inner_id = frame.inner_id
        if self._flows.ours(inner_id):
            raise InvalidInnerId(
                f"the peer created inner id {inner_id}, of our parity (DECISION: the "
                f"{'initiator' if self.initiator else 'acceptor'} creates "
                f"{'odd' if self.initiator else 'even'} ids)"
            )
        credit = (
            frame.credit if isinstance(frame, (CreateStream, CreateDuplex, GreedyDuplex)) else 0
        )
        opened = self._flows.open(frame, credit, sending=False)
        self._flows.peer_created(inner_id)
        cap = self.max_streams
        if cap is not None and self._flows.peer_open > cap:
            self._refuse(inner_id, opened, f"too many inner streams (limit {cap})")
            events.append(ev.InnerRefused(inner_id, _KIND[type(frame)],
                                          f"too many inner streams (limit {cap})"))  # fmt: skip
            return  # greedy items of a refused stream are dropped with it
        greedy = isinstance(frame, (GreedySink, GreedyDuplex))
        events.append(
            ev.InnerOpened(inner_id, _KIND[type(frame)], frame.payload,
                           we_send=Direction.OUTBOUND in opened,
                           we_receive=Direction.INBOUND in opened,
                           credit=credit if Direction.OUTBOUND in opened else 0,
                           greedy=greedy)  # fmt: skip
        )
        if isinstance(frame, (GreedySink, GreedyDuplex)):
            # Our layout: items paid with top-level credit (charged with the packet),
            # all accepted -- there is no "accepted" reply packet (TODO L26).
            events.extend(ev.ItemReceived(inner_id, item) for item in frame.items)

    def _refuse(self, inner_id: int, opened: list[Direction], reason: str) -> None:
        """DECISION (BPMUX has no "refused" packet): end each direction the peer's
        Create* opened with what ends it from our side -- InnerCancel (L61) for the
        peer's items, InnerError (L69) for ours.  InnerError costs inner credit; without
        enough yet it waits for the peer's InnerCredit."""
        if Direction.INBOUND in opened:
            flow = self._flows.flow(self._inbound, inner_id)
            self._queue_free(InnerCancel(inner_id), self._connection, flow.machine)
            self._flows.settle(inner_id)
        if Direction.OUTBOUND in opened:
            self._refused[inner_id] = reason.encode()
            self._send_refusal(inner_id)

    def _send_refusal(self, inner_id: int) -> None:
        payload = self._refused[inner_id]
        flow = self._outbound.get(inner_id)
        if flow is None:
            del self._refused[inner_id]
            return
        if flow.send.fits(len(InnerError(inner_id, payload).to_bytes())):
            del self._refused[inner_id]
            self._queue_inner(InnerError(inner_id, payload), 0)

    on_connection_create_stream = on_connection_create
    on_connection_create_sink = on_connection_create
    on_connection_greedy_sink = on_connection_create
    on_connection_create_duplex = on_connection_create
    on_connection_greedy_duplex = on_connection_create

    # --- request handlers (the `request` instance of the req_id let the packet in) ----

    def on_request_request(self, frame: Request, events: list[ev.Event]) -> None:
        self._peer_next_req_id = max(self._peer_next_req_id, frame.req_id + 1)
        events.append(ev.RequestReceived(frame.req_id, frame.payload))

    def on_request_request_cancel(self, frame: RequestCancel, events: list[ev.Event]) -> None:
        events.append(ev.RequestCancelled(frame.req_id))

    def on_request_response(self, frame: Response, events: list[ev.Event]) -> None:
        events.append(ev.ResponseReceived(frame.req_id, frame.payload))

    def on_request_response_error(self, frame: ResponseError, events: list[ev.Event]) -> None:
        events.append(ev.ResponseErrorReceived(frame.req_id, frame.payload))

    # --- flow handlers (the `flow` instance of the inner id and direction let it in) --

    def on_inner_flow_inner_credit(self, frame: InnerCredit, flow: Flow,
                                   events: list[ev.Event]) -> None:  # fmt: skip
        flow.send.grant(frame.credit)
        if frame.inner_id in self._refused:
            self._send_refusal(frame.inner_id)
            return
        events.append(ev.InnerCreditReceived(frame.inner_id, frame.credit))

    def on_inner_flow_inner_cancel(self, frame: InnerCancel, flow: Flow,
                                   events: list[ev.Event]) -> None:  # fmt: skip
        inner_id = frame.inner_id
        # The peer wants nothing more: drop what we queued for it (BP-24).
        kept = []
        for entry in self._queue:
            if entry.inner_id == inner_id and entry.credit is not None:
                entry.credit.release(len(entry.data))
            else:
                kept.append(entry)
        self._queue = kept
        self._flows.settle(inner_id)
        if self._refused.pop(inner_id, None) is not None:
            return
        events.append(ev.InnerCancelled(inner_id))

    # Items are charged once the machine took them (L58; PeerExceededDemand: fatal, BP-30).

    def on_inner_flow_inner_item(self, frame: InnerItem, flow: Flow,
                                 events: list[ev.Event]) -> None:  # fmt: skip
        flow.recv.consume(self._frame_size)
        events.append(ev.ItemReceived(frame.inner_id, frame.payload))

    def on_inner_flow_inner_items(self, frame: InnerItems, flow: Flow,
                                  events: list[ev.Event]) -> None:  # fmt: skip
        flow.recv.consume(self._frame_size)
        inner_id = frame.inner_id
        events.extend(ev.ItemReceived(inner_id, item) for item in frame.payloads)

    def on_inner_flow_inner_end(self, frame: InnerEnd, flow: Flow,
                                events: list[ev.Event]) -> None:  # fmt: skip
        flow.recv.consume(self._frame_size)
        events.append(ev.InnerEnded(frame.inner_id))
        self._flows.settle(frame.inner_id)

    def on_inner_flow_inner_error(self, frame: InnerError, flow: Flow,
                                  events: list[ev.Event]) -> None:  # fmt: skip
        flow.recv.consume(self._frame_size)
        events.append(ev.InnerErrored(frame.inner_id, frame.payload))
        self._flows.settle(frame.inner_id)

    # ------------------------------------------------------------------ internals --

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise ConnectionClosedError(f"the connection failed: {self._failure}")
        if self._transport_closed:
            raise ConnectionClosedError("the transport is closed")
        if self._closed:
            raise ConnectionClosedError("the connection was closed (close())")

    def _grant_top(self, credit: int) -> None:
        frame = MainCredit(credit)
        check_all(frame, self._connection)
        self._recv_top.grant(credit)  # InvalidGrant for 0 or more than 2^64-1
        self._queue_free(frame, self._connection)

    def _try_send_minimum(self) -> None:
        if self._minimum_to_send is None or self._failure is not None:
            return
        frame = Minimum(self._minimum_to_send)
        if self._send_top.fits(len(frame.to_bytes())):  # L33: costs top-level credit
            self._minimum_to_send = None
            self._queue_top(frame, self._connection)

    def _queue_free(self, frame: Frame, *machines: StateMachine[Any]) -> None:
        send_all(frame, *machines)
        self._queue.append(_Queued(frame, frame.to_bytes(), None))

    def _queue_top(self, frame: Frame, *machines: StateMachine[Any]) -> None:
        data = frame.to_bytes()
        check_all(frame, *machines)
        self._send_top.reserve(len(data))  # CreditExceeded
        for machine in machines:
            machine.send(frame)  # checked above
        self._queue.append(_Queued(frame, data, self._send_top))

    def _queue_inner(self, frame: SenderPacket, keep: int) -> None:
        self._check_usable()
        inner_id = frame.inner_id
        flow = self._flows.flow(self._outbound, inner_id)
        data = frame.to_bytes()
        check_all(frame, self._connection, flow.machine)
        flow.send.reserve(len(data), keep)  # CreditExceeded
        self._connection.send(frame)  # checked above
        flow.machine.send(frame)
        self._queue.append(_Queued(frame, data, flow.send, inner_id))
        if flow.machine.vacant:
            self._flows.settle(inner_id)

    def _answer(self, frame: Response | ResponseError) -> None:
        self._check_usable()
        incoming, req_id = self._incoming, frame.req_id
        machine = incoming.get(req_id)
        if machine is None:
            machine = incoming.new_machine(req_id)
        self._queue_free(frame, self._connection, machine)
        _settle(incoming, req_id, machine)

    def _create(self, frame: CreatePacket) -> int:
        self._check_usable()
        if isinstance(frame, (GreedySink, GreedyDuplex)) and not self.greedy:
            raise GreedyNotEnabled(
                "items attached to a Create packet need greedy=True: GreedySink/GreedyDuplex"
                " are not in the seed's packet list, the peer must know codes 13/15"
            )
        data = frame.to_bytes()
        check_all(frame, self._connection)
        self._send_top.reserve(len(data))
        credit = (
            frame.credit if isinstance(frame, (CreateStream, CreateDuplex, GreedyDuplex)) else 0
        )
        try:
            self._flows.open(frame, credit, sending=True)
        except ProtocolError:
            self._send_top.release(len(data))
            raise
        self._connection.send(frame)
        self._queue.append(_Queued(frame, data, self._send_top))
        self._flows.next_id += 2
        return frame.inner_id

    def _spent_request(self, *, outgoing: bool) -> Callable[[int], RequestState]:
        """The state of a req_id with no live request: ids increase (DECISION), so one
        below the highest seen is spent (`closed`), any other is unused (`idle`)."""

        def state(req_id: int) -> RequestState:
            high = self._next_req_id if outgoing else self._peer_next_req_id
            return self._request_idle if req_id >= high else self._request_closed

        return state

    def _batch_end(self, queue: list[_Queued], start: int) -> int:
        """End of the run of packets from ``start`` that can share one batch packet."""
        first = queue[start].frame
        if not self.batching or not isinstance(first, (Message, Request, InnerItem)):
            return start + 1
        stop = start + 1
        limit = min(len(queue), start + self.max_batch)
        while stop < limit:
            frame, previous = queue[stop].frame, queue[stop - 1].frame
            if isinstance(first, Message):
                fits = isinstance(frame, Message)
            elif isinstance(first, Request):
                fits = (isinstance(frame, Request) and isinstance(previous, Request)
                        and frame.req_id == previous.req_id + 1)  # fmt: skip
            else:
                fits = isinstance(frame, InnerItem) and frame.inner_id == first.inner_id
            if not fits:
                break
            stop += 1
        return stop

    def _end(self, events: list[ev.Event], error: ProtocolError | None, *,
             keep_queue: bool = False) -> None:  # fmt: skip
        """EOF, failure or close(): every open request and inner stream ends with an
        event, then the connection (``ConnectionEnded``)."""
        clean = error is None and self.done
        for req_id, _ in sorted(self._outgoing.clear()):
            events.append(ev.RequestAborted(req_id, outgoing=True))
        for req_id, _ in sorted(self._incoming.clear()):
            events.append(ev.RequestAborted(req_id, outgoing=False))
        for inner_id in self._flows.clear():
            events.append(ev.InnerAborted(inner_id))
        self._refused.clear()
        if not keep_queue:
            self._queue.clear()
        self._closed = True
        events.append(ev.ConnectionEnded(clean, None if error is None else str(error)))


if TYPE_CHECKING:

    def _keeps_the_engine_contract(engine: BpmuxConnection) -> Engine[ev.Event]:
        return engine  # mypy checks BpmuxConnection against wirestream.runtime.engine.Engine


def _settle(requests: MachineRegistry[int, StateMachine[Any]], req_id: int,
            machine: StateMachine[Any]) -> None:  # fmt: skip
    """``MachineRegistry.settle`` for registries whose entries are the machines, without
    its ``machine_of`` indirection (one request costs a few of these)."""
    if machine.vacant:
        requests.forget(req_id)
    else:
        requests.add(req_id, machine)


def _batch(run: list[_Queued]) -> Frame:
    """One batch packet for a run found by ``_batch_end``."""
    first = run[0].frame
    if isinstance(first, Message):
        return Messages([e.frame.payload for e in run])  # type: ignore[union-attr]
    if isinstance(first, Request):
        return Requests(first.req_id, [e.frame.payload for e in run])  # type: ignore[union-attr]
    assert isinstance(first, InnerItem)
    return InnerItems(first.inner_id, [e.frame.payload for e in run])  # type: ignore[union-attr]
