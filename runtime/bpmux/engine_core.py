"""What every scope of the BPMUX engine shares: ``BpmuxEngineCore`` holds the connection's
state (machines, credit windows, request and flow registries, the send queue) and the
connection-wide parts -- queries, top-level commands (grant, close, messages,
cancel_all), bytes in and out with top-level credit and batching, and the end.
``requests.RequestsPart`` and ``inner_streams.InnerStreamsPart`` add the request and
inner-flow scopes; ``engine.BpmuxConnection`` joins them with the connection's
handlers and binds the generated dispatch.  The protocol is described in ``engine``.
"""

from __future__ import annotations

from collections.abc import Callable
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
from wirestream.runtime.bpmux.errors import ConnectionClosedError
from wirestream.runtime.bpmux.flows import InnerFlows
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


__all__ = ["BpmuxEngineCore"]

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


class BpmuxEngineCore:
    """The state and connection-wide behaviour of ``BpmuxConnection`` (the class to
    use; its ``__init__`` parameters are these)."""

    # Bound by ``BpmuxConnection._bind_dispatch`` from ``__init__``.
    _dispatch: Dispatch
    _answers: Dispatch
    _asks: Dispatch
    _credit_and_cancel: Dispatch
    _items: Dispatch
    _routes: dict[type, _Route]

    # The generated tables the engine runs.  A subclass may run an edited copy of them
    # (same packets, other rows): tests/bpmux/test_bpmux_engine_dispatch.py.
    CONNECTION_MACHINE: ClassVar[type[ConnectionMachine]] = ConnectionMachine
    REQUEST_MACHINE: ClassVar[type[RequestMachine]] = RequestMachine
    FLOW_MACHINE: ClassVar[type[FlowMachine]] = FlowMachine

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
        # The generated dispatch and the routes after the connection machine: bound by
        # ``BpmuxConnection`` (the class that implements every handler protocol).
        self._bind_dispatch()
        # BP-29 (DECISION): announce our initial top-level credit first.
        if initial_credit > 0:
            self._grant_top(initial_credit)
        self._try_send_minimum()

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

    def _bind_dispatch(self) -> None:
        raise NotImplementedError("BpmuxConnection binds the generated dispatch")


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
