"""The publishers of one ``ClientConnection``: declare, publish, confirm, deduplicate.

'PublisherId => uint8' (PROTOCOL.adoc DeclarePublisher): each id runs the generated
``publisher`` machine (``MachineRegistry``; an id back to free is forgotten and may be
reused). Flow control is ``wirestream.runtime.flow.Window`` only: per publisher, the
unconfirmed publishing ids (a bounded window: publishing beyond it raises
``DemandExceeded``). Ids increase strictly per publisher, which is what the broker's
deduplication needs ('PublishingId => uint64').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from wirestream.generated.rabbitmq_stream.v1 import (
    CompressionType,
    DeclarePublisherRequest,
    DeclarePublisherResponse,
    DeletePublisherRequest,
    DeletePublisherResponse,
    MetadataUpdate,
    Publish,
    PublishConfirm,
    PublishError,
    PublishV2,
    QueryPublisherSequenceRequest,
    QueryPublisherSequenceResponse,
    SubEntryBatch,
)
from wirestream.generated.rabbitmq_stream.v1.machines import PublisherState
from wirestream.runtime.flow import Window
from wirestream.runtime.machine import MachineRegistry, StateMachine, check_all
from wirestream.runtime.rabbitmq_stream.chunk import sub_entry_batch
from wirestream.runtime.rabbitmq_stream.errors import PublishingIdNotIncreasing, ResponseError
from wirestream.runtime.rabbitmq_stream.events import (
    Event,
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublisherDeclared,
    PublisherDeleted,
    PublisherSequence,
    PublishErrored,
)
from wirestream.runtime.rabbitmq_stream.features import Feature
from wirestream.runtime.rabbitmq_stream.outbox import Outbox, request_failed
from wirestream.runtime.rabbitmq_stream.publish_frames import (
    encode_publish,
    encode_publish_v2,
    encode_sub_entries,
)

__all__ = ["Publishers", "PublisherEntry", "DEFAULT_MAX_IN_FLIGHT"]

DEFAULT_MAX_IN_FLIGHT: Final = 10_000
"""Unconfirmed messages per publisher. 3.10.8 stops reading a connection at 50,000
unconfirmed messages (``initial_credits``) with no frame to say so; stay well below."""


@dataclass(slots=True)
class PublisherEntry:
    """One declared (or declaring, or deleting) publisher id of the connection."""

    publisher_id: int
    machine: StateMachine[PublisherState]
    stream: str
    window: Window  # unconfirmed publishing ids: we send, confirms give back
    next_publishing_id: int = 1
    unconfirmed: set[int] = field(default_factory=set)


def _publisher_machine(publisher: PublisherEntry) -> StateMachine[Any]:
    return publisher.machine


class Publishers:
    """The connection's publishers: commands, and the handlers of frames about one."""

    def __init__(self, outbox: Outbox, machine: type[StateMachine[Any]], role: str) -> None:
        self._outbox = outbox
        self.registry: MachineRegistry[int, PublisherEntry] = MachineRegistry(
            machine, role, machine_of=_publisher_machine
        )
        self.ignored_outcomes = 0  # confirms/errors for publishing ids not outstanding

    # --- state -----------------------------------------------------------------------

    def publisher_state(self, publisher_id: int) -> PublisherState:
        state: PublisherState = self.registry.machine(publisher_id).state
        return state

    def unconfirmed(self, publisher_id: int) -> int:
        """Publishing ids of the publisher still waiting for a confirm or an error."""
        publisher = self.registry.get(publisher_id)
        return 0 if publisher is None else len(publisher.unconfirmed)

    def publish_capacity(self, publisher_id: int) -> int:
        """How many more messages the publisher may publish before confirms arrive."""
        publisher = self.registry.get(publisher_id)
        return 0 if publisher is None else publisher.window.available

    # --- declaring and deleting --------------------------------------------------------

    def declare_publisher(
        self,
        publisher_id: int,
        stream: str,
        reference: str | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        first_publishing_id: int = 1,
    ) -> int:
        """DeclarePublisher ('PublisherId => uint8', 'PublisherReference => string // max
        256 characters'). ``max_in_flight`` bounds the unconfirmed messages."""
        if reference is not None and len(reference) > 256:
            raise ValueError("'PublisherReference => string // max 256 characters'")
        machine = self.registry.machine(publisher_id)
        cid = self._outbox.request(
            lambda cid: DeclarePublisherRequest(cid, publisher_id, reference or "", stream), machine
        )
        # The table allowed it, so the id was free: a new publisher.
        window = Window.outbound_window(cap=max_in_flight, initial=max_in_flight)
        self.registry.add(
            publisher_id,
            PublisherEntry(publisher_id, machine, stream, window, first_publishing_id),
        )
        return cid

    def on_publisher_declare_publisher_response(
        self,
        frame: DeclarePublisherResponse,
        request: DeclarePublisherRequest,
        publisher: PublisherEntry,
        events: list[Event],
    ) -> None:
        if publisher.machine.state is PublisherState.DECLARED:
            events.append(PublisherDeclared(frame.correlation_id, publisher.publisher_id))
        else:  # refused: the id is free again
            self.registry.settle(publisher.publisher_id)
            request_failed(frame.correlation_id, request, frame.response_code, events)

    def delete_publisher(self, publisher_id: int) -> int:
        machine = self.registry.machine(publisher_id)
        return self._outbox.request(lambda cid: DeletePublisherRequest(cid, publisher_id), machine)

    def on_publisher_delete_publisher_response(
        self,
        frame: DeletePublisherResponse,
        request: DeletePublisherRequest,
        publisher: PublisherEntry,
        events: list[Event],
    ) -> None:
        if not self.registry.settle(publisher.publisher_id):  # free: deleted
            # 3.10.8 drops the confirms of a deleted publisher: what is still
            # unconfirmed will never be resolved.
            self.abandon(publisher, "publisher deleted", events)
            events.append(PublisherDeleted(frame.correlation_id, publisher.publisher_id))
        else:  # the delete failed: the publisher is still declared
            request_failed(frame.correlation_id, request, frame.response_code, events)

    def on_publisher_metadata_update(
        self, frame: MetadataUpdate, publisher: PublisherEntry, events: list[Event]
    ) -> None:
        if not self.registry.settle(publisher.publisher_id):  # free: gone with its stream
            self.abandon(publisher, "stream metadata changed", events)
            events.append(PublisherClosed(publisher.publisher_id, publisher.stream, frame.code))

    @staticmethod
    def abandon(publisher: PublisherEntry, reason: str, events: list[Event]) -> None:
        """``PublishAbandoned`` for what the publisher has unconfirmed (it never will be)."""
        if publisher.unconfirmed:
            ids = tuple(sorted(publisher.unconfirmed))
            events.append(PublishAbandoned(publisher.publisher_id, ids, reason))

    def end_all(self, reason: str, events: list[Event]) -> None:
        """The connection is over: abandon what is unconfirmed, forget every publisher."""
        for _, publisher in self.registry.clear():
            self.abandon(publisher, reason, events)

    # --- publishing ------------------------------------------------------------------

    def publish(
        self,
        publisher_id: int,
        messages: Sequence[bytes],
        *,
        publishing_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Publish messages as simple entries; returns their publishing ids.

        Ids increase strictly per publisher (deduplication); by default they continue
        from the last one. The messages go out in as few Publish frames as frame_max
        allows. Refused as a whole when the publisher is not declared (``IllegalSend``)
        or its window of unconfirmed messages is too small (``DemandExceeded``).
        """
        probe = Publish(publisher_id, [])
        publisher = self._declared(publisher_id, probe)
        ids = self._publishing_ids(publisher, len(messages), publishing_ids)
        limit = self._outbox.frame_max or 0xFFFFFFFF
        data = encode_publish(limit, publisher_id, ids, messages)  # MessageTooLarge
        return self._publish_encoded(publisher, probe, ids, data)

    def publish_filtered(
        self,
        publisher_id: int,
        messages: Sequence[bytes],
        filter_values: Sequence[str | None],
        *,
        publishing_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Publish messages with their filter values (Publish version 2, 3.13+; None =
        no filter value, written as the null string as Java does,
        StreamProducer.java OutboundMessageFilterValueWriterCallback). Otherwise as
        ``publish``; ``UnsupportedByBroker`` when the broker's ExchangeCommandVersions
        answer has Publish only up to version 1."""
        if len(filter_values) != len(messages):
            raise ValueError("one filter value (or None) per message")
        self._outbox.features.require(Feature.FILTERING)
        probe = PublishV2(publisher_id, [])
        publisher = self._declared(publisher_id, probe)
        ids = self._publishing_ids(publisher, len(messages), publishing_ids)
        limit = self._outbox.frame_max or 0xFFFFFFFF
        data = encode_publish_v2(limit, publisher_id, ids, messages, filter_values)
        return self._publish_encoded(publisher, probe, ids, data)

    def publish_batch(
        self,
        publisher_id: int,
        messages: Sequence[bytes],
        compression: CompressionType = CompressionType.GZIP,
        *,
        publishing_id: int | None = None,
    ) -> int:
        """Publish messages as one sub-entry batch (one publishing id, one confirm)."""
        self._declared(publisher_id, Publish(publisher_id, []))  # refused before compressing
        given = None if publishing_id is None else [publishing_id]
        batch = sub_entry_batch(messages, compression)
        (pid,) = self.publish_sub_entries(publisher_id, [batch], publishing_ids=given)
        return pid

    def publish_sub_entries(
        self,
        publisher_id: int,
        batches: Sequence[SubEntryBatch],
        *,
        publishing_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Publish sub-entry batches made with ``sub_entry_batch`` (already compressed:
        a producer holding them for a re-send compresses once), one publishing id
        each; returns the ids. Ids, frames and refusals as ``publish``: each batch
        counts as one unconfirmed message of the window (the broker confirms, and
        3.10.8 counts its credit, per publishing id)."""
        probe = Publish(publisher_id, [])
        publisher = self._declared(publisher_id, probe)
        ids = self._publishing_ids(publisher, len(batches), publishing_ids)
        limit = self._outbox.frame_max or 0xFFFFFFFF
        data = encode_sub_entries(limit, publisher_id, ids, batches)  # MessageTooLarge
        return self._publish_encoded(publisher, probe, ids, data)

    def _publish_encoded(
        self, publisher: PublisherEntry, probe: Publish | PublishV2, ids: list[int], data: bytes
    ) -> list[int]:
        """The end of every publish: take the window (``DemandExceeded``: nothing was
        sent), apply the frame to both machines (``_declared`` checked them and nothing
        moved since), queue the bytes, count the ids as unconfirmed."""
        publisher.window.consume(len(ids))
        outbox = self._outbox
        outbox.connection.send(probe)
        publisher.machine.send(probe)
        outbox.queue(data)
        publisher.unconfirmed.update(ids)
        if ids:
            publisher.next_publishing_id = ids[-1] + 1
        return ids

    def _declared(self, publisher_id: int, probe: Publish | PublishV2) -> PublisherEntry:
        """The publisher, when the machines allow ``probe`` (a Publish of it) now; else
        the table's ``IllegalSend`` (an unknown id answers with a free machine: "the
        publisher is not declared"). Nothing moves: the send comes once encoded."""
        check_all(probe, self._outbox.connection, self.registry.machine(publisher_id))
        return self.registry[publisher_id]

    @staticmethod
    def _publishing_ids(
        publisher: PublisherEntry, count: int, given: Sequence[int] | None
    ) -> list[int]:
        if given is None:
            return list(range(publisher.next_publishing_id, publisher.next_publishing_id + count))
        ids = list(given)
        if len(ids) != count:
            raise ValueError("one publishing id per message")
        previous = publisher.next_publishing_id - 1
        for pid in ids:
            if pid <= previous:
                raise PublishingIdNotIncreasing(
                    f"publishing id {pid} does not follow {previous} (ids must increase)"
                )
            previous = pid
        return ids

    # --- confirms, errors, the stored sequence ----------------------------------------

    def on_publisher_publish_confirm(
        self, frame: PublishConfirm, publisher: PublisherEntry, events: list[Event]
    ) -> None:
        unconfirmed = publisher.unconfirmed
        confirmed = [pid for pid in frame.publishing_ids if pid in unconfirmed]
        self.ignored_outcomes += len(frame.publishing_ids) - len(confirmed)
        if confirmed:
            unconfirmed.difference_update(confirmed)
            publisher.window.grant(len(confirmed))
            events.append(PublishConfirmed(frame.publisher_id, tuple(confirmed)))

    def on_publisher_publish_error(
        self, frame: PublishError, publisher: PublisherEntry, events: list[Event]
    ) -> None:
        for item in frame.publishing_errors:
            if item.publishing_id not in publisher.unconfirmed:
                self.ignored_outcomes += 1
                continue
            publisher.unconfirmed.discard(item.publishing_id)
            publisher.window.grant(1)
            error = ResponseError.from_code(item.code)
            events.append(PublishErrored(frame.publisher_id, item.publishing_id, error))

    def query_publisher_sequence(self, reference: str, stream: str) -> int:
        """The last publishing id stored for ``reference`` (0 when none)."""
        return self._outbox.request(
            lambda cid: QueryPublisherSequenceRequest(cid, reference, stream)
        )

    def on_connection_query_publisher_sequence_response(
        self, frame: QueryPublisherSequenceResponse, events: list[Event]
    ) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            reference, stream = request.publisher_reference or "", request.stream or ""
            events.append(
                PublisherSequence(frame.correlation_id, reference, stream, frame.sequence)
            )
