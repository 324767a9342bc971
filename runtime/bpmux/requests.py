"""The ``request`` scope of the BPMUX engine: our requests and their answers, the peer's
requests and ours to them (``on_request_<packet>``: the ``RequestRequesterHandlers`` and
``RequestResponderHandlers`` of the generated machines), req_id allocation and the
registries of both directions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wirestream.generated.bpmux.rel import Request, RequestCancel, Response, ResponseError
from wirestream.runtime.bpmux import events as ev

if TYPE_CHECKING:
    from wirestream.runtime.engine import Engine

from wirestream.runtime.bpmux.engine_core import BpmuxEngineCore, _settle

__all__ = ["RequestsPart"]


class RequestsPart(BpmuxEngineCore):
    """Requests, both directions (see ``BpmuxConnection``)."""

    def open_requests(self) -> tuple[list[int], list[int]]:
        """(our pending req_ids, the peer's pending req_ids)."""
        return sorted(self._outgoing), sorted(self._incoming)

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

    # --- request handlers (the `request` instance of the req_id let the packet in) ----

    def on_request_request(self, frame: Request, events: list[ev.Event]) -> None:
        self._peer_next_req_id = max(self._peer_next_req_id, frame.req_id + 1)
        events.append(ev.BpmuxRequestReceived(frame.req_id, frame.payload))

    def on_request_request_cancel(self, frame: RequestCancel, events: list[ev.Event]) -> None:
        events.append(ev.RequestCancelled(frame.req_id))

    def on_request_response(self, frame: Response, events: list[ev.Event]) -> None:
        events.append(ev.ResponseReceived(frame.req_id, frame.payload))

    def on_request_response_error(self, frame: ResponseError, events: list[ev.Event]) -> None:
        events.append(ev.ResponseErrorReceived(frame.req_id, frame.payload))

    def _answer(self, frame: Response | ResponseError) -> None:
        self._check_usable()
        incoming, req_id = self._incoming, frame.req_id
        machine = incoming.get(req_id)
        if machine is None:
            machine = incoming.new_machine(req_id)
        self._queue_free(frame, self._connection, machine)
        _settle(incoming, req_id, machine)
