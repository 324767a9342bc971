"""Super stream commands of one ``ClientConnection``: routing, partitions, and (RabbitMQ
3.13+) creating and deleting a super stream.

A super stream is an exchange whose bindings lead to its partition streams; Route and
Partitions ask the broker which partitions a routing key or the super stream maps to
(PROTOCOL.adoc Route, Partitions). Outcomes come back as events carrying the request's
correlation id, ``RequestFailed`` when the response code is not OK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wirestream.generated.rabbitmq_stream.v1 import (
    CreateSuperStreamRequest,
    CreateSuperStreamResponse,
    DeleteSuperStreamRequest,
    DeleteSuperStreamResponse,
    PartitionsRequest,
    PartitionsResponse,
    Property,
    RouteRequest,
    RouteResponse,
)
from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rabbitmq_stream.events import (
    Event,
    PartitionsReceived,
    RouteReceived,
    SuperStreamCreated,
    SuperStreamDeleted,
)
from wirestream.runtime.rabbitmq_stream.outbox import Outbox, request_failed

__all__ = ["SuperStreamCommands"]


class SuperStreamCommands:
    """Requests about super streams, and the handlers of their responses."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox

    def route(self, routing_key: str, super_stream: str) -> int:
        return self._outbox.request(lambda cid: RouteRequest(cid, routing_key, super_stream))

    def on_connection_route_response(self, frame: RouteResponse, events: list[Event]) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            events.append(
                RouteReceived(frame.correlation_id, tuple(s or "" for s in frame.streams))
            )

    def partitions(self, super_stream: str) -> int:
        return self._outbox.request(lambda cid: PartitionsRequest(cid, super_stream))

    def on_connection_partitions_response(
        self, frame: PartitionsResponse, events: list[Event]
    ) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            streams = tuple(s or "" for s in frame.streams)
            events.append(PartitionsReceived(frame.correlation_id, streams))

    def create_super_stream(
        self,
        name: str,
        partitions: Sequence[str],
        binding_keys: Sequence[str],
        arguments: Mapping[str, str] | None = None,
    ) -> int:
        """CreateSuperStream (RabbitMQ 3.13+): 'Name [Partition] [BindingKey] Arguments';
        the broker binds partition i with binding key i and x-stream-partition-order i, so
        both lists must have the same length (Java Client.java createSuperStream checks
        it too); the arguments are each partition's stream arguments."""
        if not partitions or len(partitions) != len(binding_keys):
            raise LocalProtocolError(
                f"a super stream needs as many binding keys as partitions, at least one "
                f"(got {len(partitions)} partitions, {len(binding_keys)} binding keys)"
            )
        streams: list[str | None] = list(partitions)
        keys: list[str | None] = list(binding_keys)
        args = [Property(key, value) for key, value in (arguments or {}).items()]
        return self._outbox.request(
            lambda cid: CreateSuperStreamRequest(cid, name, streams, keys, args)
        )

    def on_connection_create_super_stream_response(
        self, frame: CreateSuperStreamResponse, events: list[Event]
    ) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            events.append(SuperStreamCreated(frame.correlation_id, request.name or ""))

    def delete_super_stream(self, name: str) -> int:
        """DeleteSuperStream (RabbitMQ 3.13+): the exchange and every partition stream."""
        return self._outbox.request(lambda cid: DeleteSuperStreamRequest(cid, name))

    def on_connection_delete_super_stream_response(
        self, frame: DeleteSuperStreamResponse, events: list[Event]
    ) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            events.append(SuperStreamDeleted(frame.correlation_id, request.name or ""))
