"""The inner streams of one BPMUX connection: their ids, one ``flow`` machine and credit
window per direction of items (a ``MachineRegistry`` per direction), and the bounded
memory of ended ids.

DECISIONS (the seed is silent; also in idl/bpmux/rel.yaml): inner packets carry only
the id, so both sides' ids share one space split by parity -- the initiator creates odd
ids, the acceptor even ones, each increasing, never reused.  An id with no live flow in
a direction is run through a detached stand-in in the state the id is in: how it ended
(remembered, up to ``ended_memory`` ids), `idle` (never created, or open without that
direction), or `closed` (below the creator's highest id and forgotten).  So the tables
drop late packets and refuse reused ids.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal, Union

from wirestream.generated.bpmux.rel import (
    CreateDuplex,
    CreateSink,
    CreateStream,
    GreedyDuplex,
    GreedySink,
)
from wirestream.generated.bpmux.rel.machines import FlowState
from wirestream.runtime.bpmux.credit import Charge, OutboundCredit
from wirestream.runtime.flow import VARU64_MAX, Window
from wirestream.runtime.machine import MachineRegistry, StateMachine

__all__ = ["CreatePacket", "Direction", "Flow", "InnerFlows"]

CreatePacket = Union[CreateStream, CreateSink, GreedySink, CreateDuplex, GreedyDuplex]
FlowRole = Literal["item_sender", "item_receiver"]


class Direction(enum.Enum):
    """Which way a flow's items go, seen from this engine."""

    OUTBOUND = "item_sender"  # we send the items (our role in the `flow` machine)
    INBOUND = "item_receiver"  # the peer sends them

    @property
    def role(self) -> FlowRole:
        return "item_sender" if self is Direction.OUTBOUND else "item_receiver"


class Flow:
    """One direction of items under one inner id: its machine and its credit."""

    __slots__ = ("machine", "send", "recv")

    def __init__(self, machine: StateMachine[Any]) -> None:
        self.machine = machine
        # Outbound flows use ``send`` (what the peer lets us send), inbound ones ``recv``
        # (what we let the peer send); both start at 0 (CreateStream/CreateDuplex grant).
        self.send = OutboundCredit(Charge.INNER)
        self.recv = Window.inbound_window(cap=VARU64_MAX)


def _machine_of(flow: Flow) -> StateMachine[Any]:
    return flow.machine


class InnerFlows:
    """The live flows by direction (``outbound``: we send the items, ``inbound``: the
    peer does), the ids each side may create next, and how recent ids ended.

    ``machine`` is the generated `flow` machine class (an edited copy in tests).
    """

    def __init__(self, machine: type[StateMachine[Any]], *, initiator: bool,
                 ended_memory: int) -> None:  # fmt: skip
        self.machine = machine
        self.ended_memory = ended_memory
        self._idle: FlowState = machine.INITIAL["item_sender"]
        self._closed: FlowState = type(self._idle)("closed")
        self.outbound: MachineRegistry[int, Flow] = MachineRegistry(
            machine, "item_sender", machine_of=_machine_of,
            vacant_state=self._spent(Direction.OUTBOUND),
        )  # fmt: skip
        self.inbound: MachineRegistry[int, Flow] = MachineRegistry(
            machine, "item_receiver", machine_of=_machine_of,
            vacant_state=self._spent(Direction.INBOUND),
        )  # fmt: skip
        # An id is kept while any of its directions is live; then its final states.
        self._ended: OrderedDict[int, dict[Direction, FlowState]] = OrderedDict()
        self.parity = 1 if initiator else 0
        self.next_id = self.parity  # the id our next Create* gets
        self.peer_next_id = 1 - self.parity  # ids of the peer's parity below it are used
        self.peer_open = 0  # ids the peer created with a live flow (for ``max_streams``)

    # --- ids ----------------------------------------------------------------------------

    def ours(self, inner_id: int) -> bool:
        """Whether ``inner_id`` is of the parity this side creates."""
        return inner_id % 2 == self.parity

    def peer_created(self, inner_id: int) -> None:
        self.peer_next_id = max(self.peer_next_id, inner_id + 1)

    def open_ids(self) -> list[int]:
        return sorted(set(self.outbound) | set(self.inbound))

    # --- flows ----------------------------------------------------------------------------

    def registry(self, direction: Direction) -> MachineRegistry[int, Flow]:
        return self.outbound if direction is Direction.OUTBOUND else self.inbound

    def flow(self, registry: MachineRegistry[int, Flow], inner_id: int) -> Flow:
        """The live flow, or a detached stand-in in the state the id is in."""
        flow = registry.get(inner_id)
        return Flow(registry.new_machine(inner_id)) if flow is None else flow

    def open(self, frame: CreatePacket, credit: int, *, sending: bool) -> list[Direction]:
        """Open the flows ``frame`` creates: those whose role has an ``idle`` row for it
        in the `flow` machine (so the IDL decides).  The creator's receiving flow gets
        ``credit``.  Raises (and opens nothing) when a machine refuses.  The flow
        machines only observe Create* (IDL ``observes``): their rows move them here."""
        inner_id = frame.inner_id
        table = self.machine.SEND if sending else self.machine.RECEIVE
        flows: dict[Direction, Flow] = {}
        for direction in Direction:
            if (self._idle, type(frame)) not in table[direction.role]:
                continue
            creator_receives = (direction is Direction.INBOUND) == sending
            flow = self._creation_flow(inner_id, direction)
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
        for direction, flow in flows.items():
            self.registry(direction).add(inner_id, flow)
        if flows and not sending:
            self.peer_open += 1
        return list(flows)

    def settle(self, inner_id: int) -> None:
        """Forget ``inner_id`` once every direction it has ended; remember how (bounded)."""
        outbound, inbound = self.outbound.get(inner_id), self.inbound.get(inner_id)
        if outbound is None and inbound is None:
            return
        if (outbound is not None and not outbound.machine.vacant) or (
                inbound is not None and not inbound.machine.vacant):  # fmt: skip
            return
        ended: dict[Direction, FlowState] = {}
        if outbound is not None:
            self.outbound.forget(inner_id)
            ended[Direction.OUTBOUND] = outbound.machine.state
        if inbound is not None:
            self.inbound.forget(inner_id)
            ended[Direction.INBOUND] = inbound.machine.state
        if not self.ours(inner_id):
            self.peer_open -= 1
        if self.ended_memory:
            self._ended[inner_id] = ended
            while len(self._ended) > self.ended_memory:
                self._ended.popitem(last=False)

    def clear(self) -> list[int]:
        """Forget every live flow; returns their ids, in order (to report their end)."""
        inner_ids = {inner_id for inner_id, _ in self.outbound.clear()}
        inner_ids.update(inner_id for inner_id, _ in self.inbound.clear())
        self.peer_open = 0
        return sorted(inner_ids)

    # --- stand-ins --------------------------------------------------------------------

    def _spent(self, direction: Direction) -> Callable[[int], FlowState]:
        """The state of an id with no live flow in ``direction`` (module docstring)."""

        def state(inner_id: int) -> FlowState:
            ended = self._ended.get(inner_id)
            if ended is not None:
                return ended.get(direction, self._idle)
            if inner_id in self.outbound or inner_id in self.inbound:
                return self._idle
            return self._idle if inner_id >= self._high(inner_id) else self._closed

        return state

    def _high(self, inner_id: int) -> int:
        return self.next_id if self.ours(inner_id) else self.peer_next_id

    def _creation_flow(self, inner_id: int, direction: Direction) -> Flow:
        """For a Create* packet the whole id is used: a direction the id does not have
        is `closed` once the id was created (open or ended), not `idle`."""
        live = self.registry(direction).get(inner_id)
        if live is not None:
            return live
        ended = self._ended.get(inner_id)
        if ended is not None:
            state = ended.get(direction, self._closed)
        elif inner_id in self.outbound or inner_id in self.inbound:
            state = self._closed
        elif inner_id >= self._high(inner_id):
            state = self._idle
        else:
            state = self._closed
        return Flow(self.machine(direction.role, state))
