"""The subscriber side of rsio subscriptions (we subscribed to the peer): subscribing,
demand, cancelling, and the ``subscriber`` table's handlers -- elements, packed elements
and split elements joined part by part (the ``split_element`` machine's ``on_element_*``),
completion and errors (``SubscriptionSubscriberHandlers``, ``ElementSubscriberHandlers``).
"""

from __future__ import annotations


import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import SubscriptionState
from wirestream.runtime.errors import PeerExceededDemand, ProtocolError
from wirestream.runtime.flow import LONG_MAX
from wirestream.runtime.machine import Dispatch, MachineRegistry, StateMachine
from wirestream.runtime.rsio.errors import (
    IncompleteSplitElement,
    PeerElementSizeError,
    ReassemblyLimitExceeded,
)
from wirestream.runtime.rsio.events import (
    ElementReceived,
    Event,
    SubscriptionCompleted,
    SubscriptionFailed,
    SubscriptionStarted,
)
from wirestream.runtime.rsio.engine_core import (
    RsioEngineCore,
    Part,
    ToSubscriber,
    _ACTIVE_STATES,
    _Reassembly,
    _Subscription,
    _machine_of,
)

__all__ = ["SubscriberSide"]


class SubscriberSide(RsioEngineCore):
    """Our subscriptions: commands and the publisher's messages."""

    _on_subscription: Dispatch  # bound by ``RsioConnection``
    _on_element: Dispatch

    def subscription_state(self, subscriber: int) -> SubscriptionState:
        """The state of our subscription ``subscriber`` (``idle``: no such subscription)."""
        machine: StateMachine[SubscriptionState] = self._subscriptions.machine(subscriber)
        return machine.state

    @property
    def reassembly_bytes(self) -> int:
        """Bytes held for unfinished split elements (bounded by ``max_reassembly_bytes``)."""
        return self._reassembly_bytes

    def outstanding_demand(self, subscriber: int) -> int:
        """How many elements our subscription ``subscriber`` has requested and not received."""
        entry = self._subscriptions.get(subscriber)
        if entry is None:
            return 0
        return LONG_MAX if entry.demand.unbounded else entry.demand.available

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
