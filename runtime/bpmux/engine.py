"""The sans-I/O BPMUX (bpmux/rel) engine: one side of one connection.

Bytes in (``receive_data``), events out; commands queue packets, ``data_to_send``
drains them.  No sockets, no clocks.  The behaviour is in the generated machines of
``idl/bpmux/rel.yaml`` (``connection``, ``request``, ``flow``): every packet sent or
received goes through them, and a received packet reaches its handler only through the
generated, typed dispatch (the machines' ``bind_<role>``, run by
``wirestream.runtime.machine.Dispatch``):

- every packet goes through the ``connection`` machine first; its handlers
  (``on_connection_<packet>``) take MainCredit, Minimum, CancelAll, Close, Message(s),
  the Requests batch and the Create*/Greedy* packets (which open the flows: the ``flow``
  machine only observes them);
- Request, RequestCancel, Response and ResponseError then go to the ``request``
  instance of their (direction, req_id) (``on_request_<packet>``), inner packets to the
  ``flow`` instance of their (inner_id, direction) (``on_inner_flow_<packet>``).  Which
  direction is read from the tables too: the role whose receive table names the packet.

The engine is one class in parts by scope: ``engine_core.BpmuxEngineCore`` (state, top-level
commands, bytes in and out, credit, batching, the end), ``requests.RequestsPart``,
``inner_streams.InnerStreamsPart``, and here ``BpmuxConnection``: the connection's
handlers and the binding of the generated dispatch.

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

from typing import TYPE_CHECKING, Any

from wirestream.generated.bpmux.rel import (
    CancelAll,
    Close,
    InnerCancel,
    MainCredit,
    Message,
    Messages,
    Minimum,
    Request,
    RequestCancel,
    Requests,
)
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.engine_core import _Route, _received_by
from wirestream.runtime.bpmux.inner_streams import InnerStreamsPart
from wirestream.runtime.bpmux.requests import RequestsPart
from wirestream.runtime.machine import Dispatch, StateMachine

if TYPE_CHECKING:
    from wirestream.runtime.engine import Engine

__all__ = ["BpmuxConnection"]


class BpmuxConnection(InnerStreamsPart, RequestsPart):
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

    def _bind_dispatch(self) -> None:
        """The generated dispatch, bound once (from ``__init__``) by the machines' typed
        binders: mypy checks this class against each scope's handler protocol, and a
        handler missing at run time fails here, not when the packet comes."""
        connection, request, flow = self.CONNECTION_MACHINE, self.REQUEST_MACHINE, self.FLOW_MACHINE
        self._dispatch = Dispatch(connection, "peer", connection.bind_peer(self))
        # to our requests, the peer's requests; flows we send on, flows we receive on
        self._answers = Dispatch(request, "requester", request.bind_requester(self))
        self._asks = Dispatch(request, "responder", request.bind_responder(self))
        self._credit_and_cancel = Dispatch(flow, "item_sender", flow.bind_item_sender(self))
        self._items = Dispatch(flow, "item_receiver", flow.bind_item_receiver(self))
        self._routes = self._routes_by_scope()
        self._routes = self._routes_by_scope()

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
        events.append(ev.BpmuxMessageReceived(frame.payload))

    def on_connection_messages(self, frame: Messages, events: list[ev.Event]) -> None:
        events.extend(ev.BpmuxMessageReceived(payload) for payload in frame.payloads)

    def on_connection_requests(self, frame: Requests, events: list[ev.Event]) -> None:
        # L43: "The reqests are assigned consecutive ids, starting from `initial_req_id`."
        # Each one goes to its own `request` instance, as a Request would.
        for offset, payload in enumerate(frame.payloads):
            self._receive_ask(Request(frame.initial_req_id + offset, payload), events)


if TYPE_CHECKING:

    def _keeps_the_engine_contract(engine: BpmuxConnection) -> Engine[ev.Event]:
        return engine  # mypy checks BpmuxConnection against wirestream.runtime.engine.Engine
