"""The subscriptions of one ``ClientConnection``: subscribe, credit, deliver, offsets.

'SubscriptionId => uint8' (PROTOCOL.adoc Subscribe): each id runs the generated
``subscription`` machine (``MachineRegistry``; an id back to free is forgotten and may
be reused). Flow control is ``wirestream.runtime.flow.Window`` only: per subscription,
the chunk credit ('Credit => uint16 // the number of chunks that can be sent'; a
Deliver beyond the credit is ``PeerExceededDemand``, because 3.10.8 never sends a chunk
without credit: ``send_chunks`` stops at 0). Chunks are checked, decompressed and
numbered by ``wirestream.runtime.rabbitmq_stream.chunk``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from wirestream.generated.rabbitmq_stream.v1 import (
    ChunkType,
    ConsumerUpdateRequest,
    ConsumerUpdateResponse,
    CreditRequest,
    CreditResponse,
    Deliver,
    DeliverV2,
    MetadataUpdate,
    OffsetSpecification,
    OffsetSpecNext,
    OffsetSpecNone,
    OffsetSpecOffset,
    Property,
    QueryOffsetRequest,
    QueryOffsetResponse,
    ResponseCode,
    StoreOffset,
    SubscribeRequest,
    SubscribeResponse,
    UnsubscribeRequest,
    UnsubscribeResponse,
)
from wirestream.generated.rabbitmq_stream.v1.machines import SubscriptionState
from wirestream.runtime.errors import InvalidGrant, LocalProtocolError
from wirestream.runtime.flow import Window
from wirestream.runtime.machine import MachineRegistry, StateMachine
from wirestream.runtime.rabbitmq_stream.chunk import chunk_records
from wirestream.runtime.rabbitmq_stream.credit import CreditOnConsumption
from wirestream.runtime.rabbitmq_stream.errors import ChunkError
from wirestream.runtime.rabbitmq_stream.events import (
    ChunkDelivered,
    ChunkFailed,
    ChunkSkipped,
    ConsumerUpdateRequested,
    Event,
    MessageReceived,
    MessagesReceived,
    OffsetQueried,
    Subscribed,
    SubscriptionClosed,
    Unsubscribed,
)
from wirestream.runtime.rabbitmq_stream.features import Feature
from wirestream.runtime.rabbitmq_stream.outbox import Outbox, request_failed

__all__ = ["Subscriptions", "SubscriptionEntry", "MAX_OUTSTANDING_CREDIT"]

MAX_OUTSTANDING_CREDIT: Final = 0xFFFF
"""Chunk credit granted but not yet used, per subscription (one Credit frame's uint16).
The engine refuses a grant beyond it, so its count can never saturate below the
broker's (which is unbounded)."""
_SAC_PROPERTY: Final = "single-active-consumer"  # PROTOCOL.adoc Subscribe; Utils.java:86
_FILTER_PREFIX: Final = "filter."  # Utils.java:88 SUBSCRIPTION_PROPERTY_FILTER_PREFIX


@dataclass(slots=True)
class SubscriptionEntry:
    """One subscribed (or subscribing, or unsubscribing) subscription id."""

    subscription_id: int
    machine: StateMachine[SubscriptionState]
    stream: str
    credit: Window  # chunks: the broker sends, we grant
    min_offset: int  # records before it are dropped (OffsetSpecification type 4)
    strategy: CreditOnConsumption | None
    unconsumed: int = 0  # ChunkDelivered not yet acknowledged by chunk_consumed
    single_active: bool = False  # subscribed with single-active-consumer=true
    sac_active: bool = False  # the broker's last ConsumerUpdate said active
    max_batch_size: int | None = None  # this subscription's bound (None: the connection's)


def _subscription_machine(subscription: SubscriptionEntry) -> StateMachine[Any]:
    return subscription.machine


class Subscriptions:
    """The connection's subscriptions: commands, and the handlers of frames about one.

    ``max_batch_size`` bounds a sub-entry batch's records; ``message_events`` False
    gives one ``MessagesReceived`` per chunk instead of a ``MessageReceived`` each.
    """

    def __init__(
        self,
        outbox: Outbox,
        machine: type[StateMachine[Any]],
        role: str,
        *,
        max_batch_size: int,
        message_events: bool,
    ) -> None:
        self._outbox = outbox
        self.registry: MachineRegistry[int, SubscriptionEntry] = MachineRegistry(
            machine, role, machine_of=_subscription_machine
        )
        self._max_batch_size = max_batch_size
        self._message_events = message_events
        self.consumer_updates: dict[int, int] = {}  # broker's correlation id -> subscription

    # --- state -----------------------------------------------------------------------

    def subscription_state(self, subscription_id: int) -> SubscriptionState:
        state: SubscriptionState = self.registry.machine(subscription_id).state
        return state

    def credit_left(self, subscription_id: int) -> int:
        """Chunks the broker may still send to the subscription."""
        subscription = self.registry.get(subscription_id)
        return 0 if subscription is None else subscription.credit.available

    def consumer_active(self, subscription_id: int) -> bool:
        """Whether chunks may come to the subscription: for a single-active-consumer
        subscription, the broker's last ConsumerUpdate said active (none yet: not
        active); for any other, it is subscribed (active state)."""
        subscription = self.registry.get(subscription_id)
        if subscription is None or subscription.machine.state is not SubscriptionState.ACTIVE:
            return False
        return subscription.sac_active if subscription.single_active else True

    def end_all(self) -> None:
        """The connection is over: subscriptions end silently, questions go unanswered."""
        self.registry.clear()
        self.consumer_updates.clear()

    # --- subscribing and unsubscribing -------------------------------------------------

    def subscribe(
        self,
        subscription_id: int,
        stream: str,
        offset: OffsetSpecification | None = None,
        *,
        credit: int | CreditOnConsumption = 10,
        properties: Mapping[str, str] | None = None,
        max_batch_size: int | None = None,
    ) -> int:
        """Subscribe ('OffsetSpecification => OffsetType Offset', 'Credit => uint16').

        ``offset`` defaults to next. ``credit`` is the initial chunk credit, or a
        ``CreditOnConsumption`` strategy: then call ``chunk_consumed`` after each
        ``ChunkDelivered`` and the engine gives the credit back.

        ``properties`` of newer brokers are checked against ``features`` first
        (``UnsupportedByBroker``): ``single-active-consumer`` (3.11+; the broker then
        asks with ``ConsumerUpdateRequested`` events, answered by
        ``answer_consumer_update``) and ``filter.N`` (3.13+), which a 3.10 broker would
        silently ignore.

        ``max_batch_size``: the largest uncompressed sub-entry batch this subscription
        accepts (``BatchTooLarge`` beyond it); None: the connection's.
        """
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1 byte")
        props_in = dict(properties or {})
        single_active = props_in.get(_SAC_PROPERTY) == "true"
        if single_active:
            self._outbox.features.require(Feature.SINGLE_ACTIVE_CONSUMER)
        if any(key.startswith(_FILTER_PREFIX) for key in props_in):
            self._outbox.features.require(Feature.FILTERING)
        spec = OffsetSpecNext() if offset is None else offset
        strategy = credit if isinstance(credit, CreditOnConsumption) else None
        initial = credit.initial if isinstance(credit, CreditOnConsumption) else credit
        if not 0 <= initial <= MAX_OUTSTANDING_CREDIT:
            raise InvalidGrant(f"the initial credit must be 0..65535, got {initial}")
        machine = self.registry.machine(subscription_id)
        props = [Property(key, value) for key, value in props_in.items()]
        cid = self._outbox.request(
            lambda cid: SubscribeRequest(cid, subscription_id, stream, spec, initial, props),
            machine,
        )
        # The table allowed it, so the id was free: a new subscription.
        window = Window.inbound_window(cap=MAX_OUTSTANDING_CREDIT, initial=initial)
        min_offset = spec.offset if isinstance(spec, OffsetSpecOffset) else 0
        self.registry.add(
            subscription_id,
            SubscriptionEntry(
                subscription_id,
                machine,
                stream,
                window,
                min_offset,
                strategy,
                single_active=single_active,
                max_batch_size=max_batch_size,
            ),
        )
        return cid

    def on_subscription_subscribe_response(
        self,
        frame: SubscribeResponse,
        request: SubscribeRequest,
        subscription: SubscriptionEntry,
        events: list[Event],
    ) -> None:
        if subscription.machine.state is SubscriptionState.ACTIVE:
            events.append(Subscribed(frame.correlation_id, subscription.subscription_id))
        else:  # refused: the id is free again
            self.registry.settle(subscription.subscription_id)
            request_failed(frame.correlation_id, request, frame.response_code, events)

    def unsubscribe(self, subscription_id: int) -> int:
        machine = self.registry.machine(subscription_id)
        return self._outbox.request(lambda cid: UnsubscribeRequest(cid, subscription_id), machine)

    def on_subscription_unsubscribe_response(
        self,
        frame: UnsubscribeResponse,
        request: UnsubscribeRequest,
        subscription: SubscriptionEntry,
        events: list[Event],
    ) -> None:
        if not self.registry.settle(subscription.subscription_id):  # free
            events.append(Unsubscribed(frame.correlation_id, subscription.subscription_id))
        else:  # the unsubscribe failed: the subscription goes on
            request_failed(frame.correlation_id, request, frame.response_code, events)

    def on_subscription_metadata_update(
        self, frame: MetadataUpdate, subscription: SubscriptionEntry, events: list[Event]
    ) -> None:
        if not self.registry.settle(subscription.subscription_id):  # gone with its stream
            events.append(SubscriptionClosed(subscription.subscription_id, frame.code))

    # --- credit ------------------------------------------------------------------------

    def credit(self, subscription_id: int, credit: int) -> None:
        """Credit: 'Credit => uint16 // the number of chunks that can be sent'."""
        subscription = self.registry.get(subscription_id)
        machine = self.registry.machine(subscription_id)
        frame = CreditRequest(subscription_id, credit)
        if subscription is not None and not (
            0 < credit <= MAX_OUTSTANDING_CREDIT - subscription.credit.available
        ):
            raise InvalidGrant(
                f"credit {credit}: a grant is 1..65535 and the outstanding credit stays "
                f"<= {MAX_OUTSTANDING_CREDIT} (now {subscription.credit.available})"
            )
        self._outbox.send(frame, machine)
        assert subscription is not None
        subscription.credit.grant(credit)

    def chunk_consumed(self, subscription_id: int, chunks: int = 1) -> None:
        """The application is done with ``chunks`` delivered chunks: with a
        ``CreditOnConsumption`` strategy, give credit back."""
        subscription = self.registry.get(subscription_id)
        if subscription is None or subscription.strategy is None:
            raise LocalProtocolError(f"subscription {subscription_id} has no credit strategy")
        if not 0 < chunks <= subscription.unconsumed:
            raise LocalProtocolError(
                f"{chunks} chunks consumed but {subscription.unconsumed} delivered and not consumed"
            )
        subscription.unconsumed -= chunks
        self._replenish(subscription_id, subscription, chunks)

    def _replenish(
        self, subscription_id: int, subscription: SubscriptionEntry, chunks: int
    ) -> None:
        if subscription.strategy is None:
            return
        grant = subscription.strategy.consumed(chunks)
        if grant and subscription.machine.state is SubscriptionState.ACTIVE:
            self.credit(subscription_id, grant)

    def on_subscription_credit_response(
        self, frame: CreditResponse, subscription: SubscriptionEntry, events: list[Event]
    ) -> None:
        # 'NB: the server sent a response only in case of problem, e.g. crediting an
        # unknown subscription.' No correlation id: routed by subscription id. Active ->
        # free: the broker no longer knows the subscription.
        if not self.registry.settle(subscription.subscription_id):
            events.append(SubscriptionClosed(subscription.subscription_id, frame.response_code))

    # --- delivery ----------------------------------------------------------------------

    def on_subscription_deliver(
        self, frame: Deliver | DeliverV2, subscription: SubscriptionEntry, events: list[Event]
    ) -> None:
        # Active or unsubscribing (the table refuses a chunk for any other state).
        subscription_id = frame.subscription_id
        subscription.credit.consume(1)  # PeerExceededDemand: a chunk without credit
        chunk = frame.chunk
        chunk_id = chunk.chunk_first_offset
        if chunk.chunk_type != ChunkType.USER:
            events.append(ChunkSkipped(subscription_id, chunk_id, chunk.chunk_type))
            self._replenish(subscription_id, subscription, 1)
            return
        try:
            limit = subscription.max_batch_size or self._max_batch_size
            records = chunk_records(chunk, max_batch_size=limit)
        except ChunkError as error:
            events.append(ChunkFailed(subscription_id, chunk_id, error))
            self._replenish(subscription_id, subscription, 1)
            return
        # Delivery is by whole chunk: with an offset specification, the first chunk
        # can start before the asked offset; those records are dropped.
        skip = max(0, subscription.min_offset - chunk_id)
        emitted = max(0, len(records) - skip)
        if not self._message_events:
            if emitted:
                kept = records[skip:] if skip else records
                events.append(
                    MessagesReceived(subscription_id, chunk_id + skip, chunk.timestamp, kept)
                )
        else:
            for index in range(skip, len(records)):
                events.append(
                    MessageReceived(
                        subscription_id, chunk_id + index, chunk.timestamp, records[index]
                    )
                )
        committed = frame.committed_chunk_id if isinstance(frame, DeliverV2) else None
        events.append(
            ChunkDelivered(
                subscription_id, chunk_id, len(records), emitted, chunk.timestamp, committed
            )
        )
        if subscription.strategy is not None:
            subscription.unconsumed += 1

    on_subscription_deliver_v2 = on_subscription_deliver

    # --- single active consumer --------------------------------------------------------

    def on_subscription_consumer_update_request(
        self, frame: ConsumerUpdateRequest, subscription: SubscriptionEntry, events: list[Event]
    ) -> None:
        """ConsumerUpdate ('Active => uint8'): the broker makes the subscription the
        active one of its single-active-consumer group, or takes that away, and waits
        for the offset to resume from. An active subscription hands the question to the
        application (``ConsumerUpdateRequested``, answered by ``answer_consumer_update``);
        one that is unsubscribing is answered here with no offset."""
        cid = frame.correlation_id
        subscription.sac_active = bool(frame.active)
        self.consumer_updates[cid] = subscription.subscription_id
        if subscription.machine.state is SubscriptionState.UNSUBSCRIBING:
            self.answer_consumer_update(cid, None)
            return
        events.append(
            ConsumerUpdateRequested(cid, subscription.subscription_id, bool(frame.active))
        )

    def answer_consumer_update(
        self, correlation_id: int, offset: OffsetSpecification | None
    ) -> None:
        """ConsumerUpdateResponse to the broker's ConsumerUpdate ``correlation_id``:
        ``offset`` is where an activated subscription resumes (None: 'OffsetType 0
        (none)', the broker then uses the subscription's own offset specification; the
        answer for a deactivated one). Java's default (StreamConsumer.java
        getStoredOffset): the offset stored for the consumer's name + 1, else the
        subscription's initial specification."""
        subscription_id = self.consumer_updates.pop(correlation_id, None)
        if subscription_id is None:
            raise LocalProtocolError(
                f"no ConsumerUpdate with correlation id {correlation_id} awaits an answer"
            )
        spec = OffsetSpecNone() if offset is None else offset
        self._outbox.send(ConsumerUpdateResponse(correlation_id, ResponseCode.OK, spec))
        subscription = self.registry.get(subscription_id)
        if subscription is not None and not isinstance(spec, OffsetSpecNone):
            # Delivery restarts at the chunk holding the answered offset: drop what
            # precedes it, as for a Subscribe at an offset.
            subscription.min_offset = spec.offset if isinstance(spec, OffsetSpecOffset) else 0

    # --- offsets -----------------------------------------------------------------------

    def store_offset(self, reference: str, stream: str, offset: int) -> None:
        """StoreOffset (Expects response? 'No')."""
        self._outbox.send(StoreOffset(reference, stream, offset))

    def query_offset(self, reference: str, stream: str) -> int:
        """QueryOffset; ``NoOffset`` (0x13) when nothing is stored for the reference."""
        return self._outbox.request(lambda cid: QueryOffsetRequest(cid, reference, stream))

    def on_connection_query_offset_response(
        self, frame: QueryOffsetResponse, events: list[Event]
    ) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            reference, stream = request.reference or "", request.stream or ""
            events.append(OffsetQueried(frame.correlation_id, reference, stream, frame.offset))
