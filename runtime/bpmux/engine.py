"""The sans-I/O BPMUX (bpmux/rel) engine: one side of one connection.

Bytes in (``receive_data``), events out; commands queue packets, ``data_to_send``
drains them.  No sockets, no clocks.  The behaviour is in the generated machines of
``idl/bpmux/rel.yaml`` (``connection``, ``request``, ``flow``): every packet sent or
received goes through them.  This module adds what tables cannot hold: credit (one
``wirestream.runtime.flow.Window`` for top-level packets and one per flow, see ``credit``), id
allocation, batching, and turning packets into events.

DECISIONS where seed 002 is silent (also written in the IDL):

- Start: both sides start with no top-level credit; the engine's first packet is
  MainCredit(initial_credit), then, when it has the credit for it, Minimum(minimum).
- Ids: req_ids are per direction and increase from 0; inner ids are one space split
  by parity (the initiator creates odd ids, the acceptor even ones), each side's
  increasing.  Ids are never reused.
- Any peer violation (a machine's error row, top-level or inner credit exceeded, a
  malformed packet) fails the whole connection: BPMUX has no error packet ("TODO:
  close top-level with error", L21), so nothing is sent; ``receive_data`` raises and the
  transport should be closed.  ``events_before_error`` keeps the events of the packets
  handled before, and the abort events of everything that was open.
- Batching: consecutive queued Message packets become Messages, Requests with
  consecutive ids Requests, InnerItems of one stream InnerItems -- when the batch is
  not larger than the packets it replaces.
- InnerEnd costs inner credit (no exemption in the seed), so ``send_item`` keeps back
  the InnerEnd's cost: a stream can always be ended once it had that much credit.
- Greedy packets (GreedySink/GreedyDuplex, our layout) are sent only with
  ``greedy=True``; a receiver takes every greedy item (there is no "accepted" reply).
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Union

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
    FlowState,
    RequestMachine,
    RequestState,
)
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.credit import Charge, OutboundCredit, charge_of
from wirestream.runtime.bpmux.errors import ConnectionClosedError, GreedyNotEnabled, InvalidInnerId
from wirestream.runtime.errors import DecodeError, ProtocolError, RemoteProtocolError
from wirestream.runtime.flow import VARU64_MAX, Replenisher, Window
from wirestream.runtime.machine import IGNORE

__all__ = ["BpmuxConnection", "Direction"]

CreatePacket = Union[CreateStream, CreateSink, GreedySink, CreateDuplex, GreedyDuplex]
SenderPacket = Union[InnerItem, InnerItems, InnerEnd, InnerError]
FlowRole = Literal["item_sender", "item_receiver"]
RequestRole = Literal["requester", "responder"]
_Machine = Union[ConnectionMachine, RequestMachine, FlowMachine]
_KIND: Final = {
    CreateStream: ev.InnerKind.STREAM,
    CreateSink: ev.InnerKind.SINK,
    GreedySink: ev.InnerKind.SINK,
    CreateDuplex: ev.InnerKind.DUPLEX,
    GreedyDuplex: ev.InnerKind.DUPLEX,
}


class Direction(enum.Enum):
    """Which way a flow's items go, seen from this engine."""

    OUTBOUND = "item_sender"  # we send the items (our role in the `flow` machine)
    INBOUND = "item_receiver"  # the peer sends them

    @property
    def role(self) -> FlowRole:
        return "item_sender" if self is Direction.OUTBOUND else "item_receiver"


class _Flow:
    """One direction of items under one inner id: its machine and its credit."""

    __slots__ = ("machine", "send", "recv")

    def __init__(self, direction: Direction, state: FlowState) -> None:
        self.machine = FlowMachine(direction.role, state)
        # Outbound flows use ``send`` (what the peer lets us send), inbound ones ``recv``
        # (what we let the peer send); both start at 0 (CreateStream/CreateDuplex grant).
        self.send = OutboundCredit(Charge.INNER)
        self.recv = Window.inbound_window(cap=VARU64_MAX)


@dataclass(slots=True)
class _Queued:
    """A packet waiting for ``data_to_send``: its encoding, the credit it reserved and,
    for packets of a flow we send on, the inner id (to drop them on InnerCancel)."""

    frame: Frame
    data: bytes
    credit: OutboundCredit | None
    inner_id: int | None = None


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
    """

    def __init__(self, *, initiator: bool, initial_credit: int = 1 << 16,
                 auto_credit: bool = True, minimum: int | None = None, batching: bool = True,
                 max_batch: int = 64, greedy: bool = False,
                 max_packet_size: int = MAX_FRAME_SIZE, ended_memory: int = 1024) -> None:  # fmt: skip
        if initial_credit < 0 or max_batch < 1 or ended_memory < 0:
            raise ValueError("initial_credit, max_batch and ended_memory must be >= 0 / >= 1")
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
        self._connection = ConnectionMachine("peer")
        self._send_top = OutboundCredit(Charge.TOP_LEVEL)
        self._recv_top = Window.inbound_window(cap=VARU64_MAX)
        self._replenisher = (
            Replenisher(initial_credit) if auto_credit and initial_credit > 0 else None
        )
        self._peer_minimum = 0
        self._minimum_to_send = minimum
        self._queue: list[_Queued] = []
        # Requests, per direction: ours (requester) and the peer's (responder).
        self._outgoing: dict[int, RequestMachine] = {}
        self._incoming: dict[int, RequestMachine] = {}
        self._next_req_id = 0
        self._peer_next_req_id = 0  # ids below this one the peer has used
        # Inner streams: live ids -> their flows; ended ids -> final states (bounded).
        self._flows: dict[int, dict[Direction, _Flow]] = {}
        self._ended: OrderedDict[int, dict[Direction, FlowState]] = OrderedDict()
        self._parity = 1 if initiator else 0
        self._next_inner_id = self._parity
        self._peer_next_inner_id = 1 - self._parity
        self._failure: ProtocolError | None = None
        self._transport_closed = False
        self._done_reported = False
        self.events_before_error: list[ev.Event] = []
        self.unknown_packets_skipped = 0
        self._handlers: dict[type, Callable[[Any, list[ev.Event]], None]] = {
            MainCredit: self._on_main_credit,
            Close: self._on_close,
            Minimum: self._on_minimum,
            CancelAll: self._on_cancel_all,
            Message: self._on_message,
            Messages: self._on_messages,
            Request: self._on_request,
            Requests: self._on_requests,
            RequestCancel: self._on_request_cancel,
            Response: self._on_response,
            ResponseError: self._on_response,
            CreateStream: self._on_create,
            CreateSink: self._on_create,
            GreedySink: self._on_create,
            CreateDuplex: self._on_create,
            GreedyDuplex: self._on_create,
            InnerCredit: self._on_inner_credit,
            InnerCancel: self._on_inner_cancel,
            InnerItem: self._on_sender_packet,
            InnerItems: self._on_sender_packet,
            InnerEnd: self._on_sender_packet,
            InnerError: self._on_sender_packet,
        }
        # BP-29 (DECISION): announce our initial top-level credit first.
        if initial_credit > 0:
            self._grant_top(initial_credit)
        self._try_send_minimum()

    # ------------------------------------------------------------------ queries --

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
        flow = self._flows.get(inner_id, {}).get(Direction.OUTBOUND)
        return 0 if flow is None else flow.send.available

    def peer_inner_credit(self, inner_id: int) -> int:
        """Inner bytes the peer may still send us on ``inner_id``."""
        flow = self._flows.get(inner_id, {}).get(Direction.INBOUND)
        return 0 if flow is None else flow.recv.available

    def item_cost(self, inner_id: int, payload: bytes) -> int:
        """Inner credit ``send_item`` needs: the InnerItem packet plus the InnerEnd kept back."""
        return len(InnerItem(inner_id, payload).to_bytes()) + len(InnerEnd(inner_id).to_bytes())

    @property
    def state(self) -> ConnectionState:
        return self._connection.state

    @property
    def done(self) -> bool:
        """Both sides sent Close and nothing is open (BP-31)."""
        return (
            self._connection.state is ConnectionState.BOTH_CLOSED
            and not self._outgoing
            and not self._incoming
            and not self._flows
        )

    def open_requests(self) -> tuple[list[int], list[int]]:
        """(our pending req_ids, the peer's pending req_ids)."""
        return sorted(self._outgoing), sorted(self._incoming)

    def open_inner_ids(self) -> list[int]:
        return sorted(self._flows)

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

    def close(self) -> None:
        """Close: we open nothing more (L31)."""
        self._check_usable()
        self._queue_free(Close(), [self._connection])

    def send_message(self, payload: bytes) -> None:
        """Message (L37); consecutive messages may leave as one Messages (L39)."""
        self._check_usable()
        self._queue_top(Message(payload), [self._connection])

    def send_request(self, payload: bytes) -> int:
        """Request (L41) under the next req_id, which is returned."""
        self._check_usable()
        req_id = self._next_req_id
        machine = RequestMachine("requester", RequestState.IDLE)
        self._queue_top(Request(req_id, payload), [self._connection, machine])
        self._next_req_id += 1
        self._outgoing[req_id] = machine
        return req_id

    def cancel_request(self, req_id: int) -> None:
        """RequestCancel (L45): we no longer want the answer."""
        self._check_usable()
        machine = self._request_machine(self._outgoing, req_id, "requester")
        self._queue_free(RequestCancel(req_id), [self._connection, machine])
        self._settle_request(self._outgoing, req_id, machine)

    def respond(self, req_id: int, payload: bytes) -> None:
        """Response (L47) to the peer's request ``req_id``."""
        self._answer(Response(req_id, payload))

    def respond_error(self, req_id: int, payload: bytes) -> None:
        """ResponseError (L49) to the peer's request ``req_id``."""
        self._answer(ResponseError(req_id, payload))

    def open_stream(self, payload: bytes = b"", credit: int = 0) -> int:
        """CreateStream (L51): the peer will send us items; ``credit`` is its initial
        inner credit (bytes).  Returns the inner id."""
        return self._create(CreateStream(self._next_inner_id, credit, payload))

    def open_sink(self, payload: bytes = b"", items: Sequence[bytes] | None = None) -> int:
        """CreateSink (L53): we will send items once the peer grants inner credit.  With
        ``items`` (needs ``greedy=True``): GreedySink, the items paid with top-level credit."""
        inner_id = self._next_inner_id
        if items is None:
            return self._create(CreateSink(inner_id, payload))
        return self._create(GreedySink(inner_id, payload, list(items)))

    def open_duplex(self, payload: bytes = b"", credit: int = 0,
                    items: Sequence[bytes] | None = None) -> int:  # fmt: skip
        """CreateDuplex (L55): both directions; ``credit`` for the peer's items.  With
        ``items`` (needs ``greedy=True``): GreedyDuplex."""
        inner_id = self._next_inner_id
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
        flow = self._flow(inner_id, Direction.INBOUND)
        frame = InnerCredit(inner_id, credit)
        _check_all(frame, [self._connection, flow.machine])
        flow.recv.grant(credit)  # InvalidGrant for 0 or more than 2^64-1
        self._queue_free(frame, [self._connection, flow.machine])

    def cancel_inner(self, inner_id: int) -> None:
        """InnerCancel (L61): we want no more items on ``inner_id``."""
        self._check_usable()
        flow = self._flow(inner_id, Direction.INBOUND)
        self._queue_free(InnerCancel(inner_id), [self._connection, flow.machine])
        self._settle_flow(inner_id, Direction.INBOUND, flow)

    def cancel_all(self) -> None:
        """CancelAll (L35): RequestCancel for each of our pending requests and
        InnerCancel for each open flow we receive on, in one free packet."""
        self._check_usable()
        frame = CancelAll()
        self._connection.send(frame)
        for req_id, machine in list(self._outgoing.items()):
            machine.send(RequestCancel(req_id))
            self._settle_request(self._outgoing, req_id, machine)
        for inner_id, flows in list(self._flows.items()):
            flow = flows.get(Direction.INBOUND)
            if flow is not None and flow.machine.allows_send(InnerCancel(inner_id)):
                flow.machine.send(InnerCancel(inner_id))
                self._settle_flow(inner_id, Direction.INBOUND, flow)
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

    def receive_data(self, data: bytes) -> list[ev.Event]:
        """Feed bytes from the peer (``b""`` = the transport closed); returns events.

        Raises a ``RemoteProtocolError`` when the peer broke a rule; the connection is
        then failed (see the module doc) and ``events_before_error`` holds the events.
        """
        events: list[ev.Event] = []
        if self._failure is not None or self._transport_closed:
            return events
        self.events_before_error = events
        if not data:
            self._transport_closed = True
            self._abort_everything(events, None)
            return events
        self._frame_sizes.clear()
        try:
            try:
                frames = self._decoder.feed(data)
            except DecodeError as error:
                for frame, size in zip(error.frames, self._frame_sizes):
                    self._handle(frame, size, events)  # type: ignore[arg-type]
                raise
            for frame, size in zip(frames, self._frame_sizes):
                self._handle(frame, size, events)
        except RemoteProtocolError as error:
            self._failure = error
            self._abort_everything(events, error)
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
        if charge_of(frame) is Charge.TOP_LEVEL:
            self._charge_top(size)
        if self._connection.receive(frame) is IGNORE:
            return
        self._handlers[type(frame)](frame, events)

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

    def _on_main_credit(self, frame: MainCredit, events: list[ev.Event]) -> None:
        self._send_top.grant(frame.credit)
        events.append(ev.MainCreditReceived(frame.credit))
        self._try_send_minimum()

    def _on_close(self, frame: Close, events: list[ev.Event]) -> None:
        events.append(ev.PeerClosed())

    def _on_minimum(self, frame: Minimum, events: list[ev.Event]) -> None:
        self._peer_minimum = frame.min_credit
        events.append(ev.MinimumReceived(frame.min_credit))
        if self._replenisher is not None:
            self._top_up(0)

    def _on_cancel_all(self, frame: CancelAll, events: list[ev.Event]) -> None:
        # L35 "The same as sending RequestCancel and InnerCancel messages for all
        # requests, streams and duplexes": each goes through its machine.
        for req_id in sorted(self._incoming):
            self._on_request_cancel(RequestCancel(req_id), events)
        for inner_id in sorted(self._flows):
            if Direction.OUTBOUND in self._flows.get(inner_id, {}):
                self._on_inner_cancel(InnerCancel(inner_id), events)

    def _on_message(self, frame: Message, events: list[ev.Event]) -> None:
        events.append(ev.MessageReceived(frame.payload))

    def _on_messages(self, frame: Messages, events: list[ev.Event]) -> None:
        events.extend(ev.MessageReceived(payload) for payload in frame.payloads)

    def _on_request(self, frame: Request, events: list[ev.Event]) -> None:
        machine = self._request_machine(self._incoming, frame.req_id, "responder")
        machine.receive(frame)
        self._peer_next_req_id = max(self._peer_next_req_id, frame.req_id + 1)
        self._settle_request(self._incoming, frame.req_id, machine)
        events.append(ev.RequestReceived(frame.req_id, frame.payload))

    def _on_requests(self, frame: Requests, events: list[ev.Event]) -> None:
        # L43: "The reqests are assigned consecutive ids, starting from `initial_req_id`."
        for offset, payload in enumerate(frame.payloads):
            self._on_request(Request(frame.initial_req_id + offset, payload), events)

    def _on_request_cancel(self, frame: RequestCancel, events: list[ev.Event]) -> None:
        machine = self._request_machine(self._incoming, frame.req_id, "responder")
        outcome = machine.receive(frame)
        self._settle_request(self._incoming, frame.req_id, machine)
        if outcome is not IGNORE:
            events.append(ev.RequestCancelled(frame.req_id))

    def _on_response(self, frame: Response | ResponseError, events: list[ev.Event]) -> None:
        machine = self._request_machine(self._outgoing, frame.req_id, "requester")
        outcome = machine.receive(frame)
        self._settle_request(self._outgoing, frame.req_id, machine)
        if outcome is IGNORE:
            return
        if isinstance(frame, Response):
            events.append(ev.ResponseReceived(frame.req_id, frame.payload))
        else:
            events.append(ev.ResponseErrorReceived(frame.req_id, frame.payload))

    def _on_create(self, frame: CreatePacket, events: list[ev.Event]) -> None:
        inner_id = frame.inner_id
        if inner_id % 2 == self._parity:
            raise InvalidInnerId(
                f"the peer created inner id {inner_id}, of our parity (DECISION: the "
                f"{'initiator' if self.initiator else 'acceptor'} creates "
                f"{'odd' if self.initiator else 'even'} ids)"
            )
        credit = (
            frame.credit if isinstance(frame, (CreateStream, CreateDuplex, GreedyDuplex)) else 0
        )
        opened = self._open_flows(frame, credit, sending=False)
        self._peer_next_inner_id = max(self._peer_next_inner_id, inner_id + 1)
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

    def _on_inner_credit(self, frame: InnerCredit, events: list[ev.Event]) -> None:
        flow = self._flow(frame.inner_id, Direction.OUTBOUND)
        if flow.machine.receive(frame) is IGNORE:
            return
        flow.send.grant(frame.credit)
        events.append(ev.InnerCreditReceived(frame.inner_id, frame.credit))

    def _on_inner_cancel(self, frame: InnerCancel, events: list[ev.Event]) -> None:
        inner_id = frame.inner_id
        flow = self._flow(inner_id, Direction.OUTBOUND)
        if flow.machine.receive(frame) is IGNORE:
            return
        # The peer wants nothing more: drop what we queued for it (BP-24).
        kept = []
        for entry in self._queue:
            if entry.inner_id == inner_id and entry.credit is not None:
                entry.credit.release(len(entry.data))
            else:
                kept.append(entry)
        self._queue = kept
        self._settle_flow(inner_id, Direction.OUTBOUND, flow)
        events.append(ev.InnerCancelled(inner_id))

    def _on_sender_packet(self, frame: SenderPacket, events: list[ev.Event]) -> None:
        inner_id = frame.inner_id
        flow = self._flow(inner_id, Direction.INBOUND)
        if flow.machine.receive(frame) is IGNORE:
            return  # in flight after our InnerCancel
        flow.recv.consume(self._frame_size)  # L58; PeerExceededDemand: fatal (BP-30)
        if isinstance(frame, InnerItem):
            events.append(ev.ItemReceived(inner_id, frame.payload))
        elif isinstance(frame, InnerItems):
            events.extend(ev.ItemReceived(inner_id, item) for item in frame.payloads)
        elif isinstance(frame, InnerEnd):
            events.append(ev.InnerEnded(inner_id))
        else:
            events.append(ev.InnerErrored(inner_id, frame.payload))
        self._settle_flow(inner_id, Direction.INBOUND, flow)

    # ------------------------------------------------------------------ internals --

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise ConnectionClosedError(f"the connection failed: {self._failure}")
        if self._transport_closed:
            raise ConnectionClosedError("the transport is closed")

    def _grant_top(self, credit: int) -> None:
        frame = MainCredit(credit)
        _check_all(frame, [self._connection])
        self._recv_top.grant(credit)  # InvalidGrant for 0 or more than 2^64-1
        self._queue_free(frame, [self._connection])

    def _try_send_minimum(self) -> None:
        if self._minimum_to_send is None or self._failure is not None:
            return
        frame = Minimum(self._minimum_to_send)
        if self._send_top.fits(len(frame.to_bytes())):  # L33: costs top-level credit
            self._minimum_to_send = None
            self._queue_top(frame, [self._connection])

    def _queue_free(self, frame: Frame, machines: Iterable[_Machine]) -> None:
        _send_all(frame, machines)
        self._queue.append(_Queued(frame, frame.to_bytes(), None))

    def _queue_top(self, frame: Frame, machines: Sequence[_Machine]) -> None:
        data = frame.to_bytes()
        _check_all(frame, machines)
        self._send_top.reserve(len(data))  # CreditExceeded
        _send_all(frame, machines)
        self._queue.append(_Queued(frame, data, self._send_top))

    def _queue_inner(self, frame: SenderPacket, keep: int) -> None:
        self._check_usable()
        flow = self._flow(frame.inner_id, Direction.OUTBOUND)
        machines: list[_Machine] = [self._connection, flow.machine]
        data = frame.to_bytes()
        _check_all(frame, machines)
        flow.send.reserve(len(data), keep)  # CreditExceeded
        _send_all(frame, machines)
        self._queue.append(_Queued(frame, data, flow.send, frame.inner_id))
        self._settle_flow(frame.inner_id, Direction.OUTBOUND, flow)

    def _answer(self, frame: Response | ResponseError) -> None:
        self._check_usable()
        machine = self._request_machine(self._incoming, frame.req_id, "responder")
        self._queue_free(frame, [self._connection, machine])
        self._settle_request(self._incoming, frame.req_id, machine)

    def _create(self, frame: CreatePacket) -> int:
        self._check_usable()
        if isinstance(frame, (GreedySink, GreedyDuplex)) and not self.greedy:
            raise GreedyNotEnabled(
                "items attached to a Create packet need greedy=True: GreedySink/GreedyDuplex"
                " are not in the seed's packet list, the peer must know codes 13/15"
            )
        data = frame.to_bytes()
        _check_all(frame, [self._connection])
        self._send_top.reserve(len(data))
        credit = (
            frame.credit if isinstance(frame, (CreateStream, CreateDuplex, GreedyDuplex)) else 0
        )
        try:
            self._open_flows(frame, credit, sending=True)
        except ProtocolError:
            self._send_top.release(len(data))
            raise
        self._connection.send(frame)
        self._queue.append(_Queued(frame, data, self._send_top))
        self._next_inner_id += 2
        return frame.inner_id

    def _open_flows(self, frame: CreatePacket, credit: int, *, sending: bool) -> list[Direction]:
        """Open the flows ``frame`` creates: those whose role has an ``idle`` row for it
        in the `flow` machine (so the IDL decides).  The creator's receiving flow gets
        ``credit``.  Raises (and opens nothing) when a machine refuses."""
        inner_id = frame.inner_id
        table = FlowMachine.SEND if sending else FlowMachine.RECEIVE
        flows: dict[Direction, _Flow] = {}
        for direction in Direction:
            if (FlowState.IDLE, type(frame)) not in table[direction.role]:
                continue
            creator_receives = (direction is Direction.INBOUND) == sending
            flow = self._flow(inner_id, direction, creating=True)
            if creator_receives and credit:
                if direction is Direction.INBOUND:
                    flow.recv.grant(credit)
                else:
                    flow.send.grant(credit)
            flows[direction] = flow
        for flow in flows.values():
            if sending:
                flow.machine.send(frame)
            else:
                flow.machine.receive(frame)
        if flows:
            self._flows[inner_id] = flows
        return list(flows)

    def _request_machine(self, table: dict[int, RequestMachine], req_id: int,
                         role: RequestRole) -> RequestMachine:  # fmt: skip
        machine = table.get(req_id)
        if machine is not None:
            return machine
        # Ids increase (DECISION): below the highest one seen, an id is spent.
        high = self._next_req_id if role == "requester" else self._peer_next_req_id
        return RequestMachine(role, RequestState.IDLE if req_id >= high else RequestState.CLOSED)

    @staticmethod
    def _settle_request(table: dict[int, RequestMachine], req_id: int,
                        machine: RequestMachine) -> None:  # fmt: skip
        if machine.terminated:
            table.pop(req_id, None)
        elif machine.state is not RequestState.IDLE:
            table[req_id] = machine

    def _flow(self, inner_id: int, direction: Direction, *, creating: bool = False) -> _Flow:
        """The live flow, or a stand-in whose machine is in the state the id is in:
        idle (never created), or how it ended (remembered, else `closed`).  A direction
        an existing id does not have is `idle` (no such flow), except for a Create*
        packet, for which the whole id is used (`closed`)."""
        unused = FlowState.CLOSED if creating else FlowState.IDLE
        live = self._flows.get(inner_id)
        if live is not None:
            flow = live.get(direction)
            return flow if flow is not None else _Flow(direction, unused)
        ended = self._ended.get(inner_id)
        if ended is not None:
            return _Flow(direction, ended.get(direction, unused))
        ours = inner_id % 2 == self._parity
        high = self._next_inner_id if ours else self._peer_next_inner_id
        return _Flow(direction, FlowState.IDLE if inner_id >= high else FlowState.CLOSED)

    def _settle_flow(self, inner_id: int, direction: Direction, flow: _Flow) -> None:
        flows = self._flows.get(inner_id)
        if flows is None or flows.get(direction) is not flow:
            return
        if all(f.machine.terminated for f in flows.values()):
            del self._flows[inner_id]
            if self.ended_memory:
                self._ended[inner_id] = {d: f.machine.state for d, f in flows.items()}
                while len(self._ended) > self.ended_memory:
                    self._ended.popitem(last=False)

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

    def _abort_everything(self, events: list[ev.Event], error: ProtocolError | None) -> None:
        """EOF or failure: every open request and inner stream ends with an event."""
        clean = error is None and self.done
        for req_id in sorted(self._outgoing):
            events.append(ev.RequestAborted(req_id, outgoing=True))
        for req_id in sorted(self._incoming):
            events.append(ev.RequestAborted(req_id, outgoing=False))
        for inner_id in sorted(self._flows):
            events.append(ev.InnerAborted(inner_id))
        self._outgoing.clear()
        self._incoming.clear()
        self._flows.clear()
        self._queue.clear()
        events.append(ev.ConnectionEnded(clean, None if error is None else str(error)))


def _check_all(frame: Frame, machines: Iterable[_Machine]) -> None:
    """Raise the machines' ``IllegalSend`` before anything changes."""
    for machine in machines:
        if not machine.allows_send(frame):
            machine.send(frame)  # raises with the row's message and spec


def _send_all(frame: Frame, machines: Iterable[_Machine]) -> None:
    machines = list(machines)
    _check_all(frame, machines)
    for machine in machines:
        machine.send(frame)


def _batch(run: list[_Queued]) -> Frame:
    """One batch packet for a run found by ``_batch_end``."""
    first = run[0].frame
    if isinstance(first, Message):
        return Messages([e.frame.payload for e in run])  # type: ignore[union-attr]
    if isinstance(first, Request):
        return Requests(first.req_id, [e.frame.payload for e in run])  # type: ignore[union-attr]
    assert isinstance(first, InnerItem)
    return InnerItems(first.inner_id, [e.frame.payload for e in run])  # type: ignore[union-attr]
