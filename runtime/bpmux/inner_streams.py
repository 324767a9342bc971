"""The inner-stream scope of the BPMUX engine: opening streams, sinks and duplexes (ours
and, through the Create*/Greedy* packets the ``connection`` machine lets in, the peer's,
refused beyond ``max_streams``), items and per-flow credit, and the ``flow`` instances'
handlers (``on_inner_flow_<packet>``: ``InnerFlowItemSenderHandlers`` and
``InnerFlowItemReceiverHandlers`` of the generated machines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from wirestream.generated.bpmux.rel import (
    CreateDuplex,
    CreateSink,
    CreateStream,
    GreedyDuplex,
    GreedySink,
    InnerCancel,
    InnerCredit,
    InnerEnd,
    InnerError,
    InnerItem,
    InnerItems,
)
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.errors import GreedyNotEnabled, InvalidInnerId
from wirestream.runtime.bpmux.flows import CreatePacket, Direction, Flow
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.machine import check_all

if TYPE_CHECKING:
    from wirestream.runtime.engine import Engine

from wirestream.runtime.bpmux.engine_core import BpmuxEngineCore, SenderPacket, _KIND, _Queued

__all__ = ["InnerStreamsPart"]


class InnerStreamsPart(BpmuxEngineCore):
    """Inner streams, both directions (see ``BpmuxConnection``)."""

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

    def open_inner_ids(self) -> list[int]:
        return self._flows.open_ids()

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

    def _receive_on_outbound(self, frame: InnerCredit | InnerCancel,
                             events: list[ev.Event]) -> None:  # fmt: skip
        """InnerCredit/InnerCancel for the items we send on ``inner_id``."""
        flow = self._flows.flow(self._outbound, frame.inner_id)
        self._credit_and_cancel.receive(flow.machine, frame, flow, events)

    def _receive_on_inbound(self, frame: SenderPacket, events: list[ev.Event]) -> None:
        """Items or their end on ``inner_id``, from the peer."""
        flow = self._flows.flow(self._inbound, frame.inner_id)
        self._items.receive(flow.machine, frame, flow, events)

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
