"""The publisher side of rsio subscriptions (the peer subscribed to us): accepting or
rejecting a subscription, publishing elements under the peer's demand (packed, split),
completing it, and the ``publisher`` table's handlers (``on_subscription_subscribe``,
``_request``, ``_cancel``: the ``SubscriptionPublisherHandlers`` of the generated machines).
"""

from __future__ import annotations

from collections.abc import Sequence

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import SubscriptionState
from wirestream.runtime.errors import PeerInvalidGrant
from wirestream.runtime.flow import LONG_MAX
from wirestream.runtime.machine import Dispatch, StateMachine, check_all
from wirestream.runtime.rsio.errors import ElementSizeError
from wirestream.runtime.rsio.events import (
    DemandReceived,
    Event,
    SubscribeReceived,
    SubscriptionCancelled,
)
from wirestream.runtime.rsio.engine_core import RsioEngineCore, ToPublisher, _Publication

__all__ = ["PublisherSide"]


class PublisherSide(RsioEngineCore):
    """Our publications: commands and the peer's subscribe, request and cancel."""

    _on_publication: Dispatch  # bound by ``RsioConnection``

    def publication_state(self, subscriber: int) -> SubscriptionState:
        """The state of the peer's subscription ``subscriber`` to us."""
        machine: StateMachine[SubscriptionState] = self._publications.machine(subscriber)
        return machine.state

    def available_demand(self, subscriber: int) -> int:
        """How many elements we may still publish to ``subscriber`` (LONG_MAX: unbounded)."""
        entry = self._publication_entries.get(subscriber)
        if entry is None:
            return 0
        return LONG_MAX if entry.demand.unbounded else entry.demand.available

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

    def _receive_for_publication(self, frame: ToPublisher, events: list[Event]) -> None:
        """subscribe, request, cancel: to the peer's subscription of that Id (an unknown Id
        meets a fresh ``idle`` machine: subscribe opens it, the rest is dropped)."""
        entry = self._publication(frame.subscriber)
        if not self._on_publication.receive(entry.machine, frame, entry, events):
            self.ignored_messages += 1  # RS §3.6 / §3.7: crossed our onComplete/onError

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
