"""Stream commands of one ``ClientConnection``: create, delete, metadata, statistics.

Each is a request matched by its correlation id ('Expects response? Yes', PROTOCOL.adoc
Commands); the outcome comes back as an event carrying the id, ``RequestFailed`` when
the response code is not OK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wirestream.generated.rabbitmq_stream.v1 import (
    CreateRequest,
    CreateResponse,
    DeleteRequest,
    DeleteResponse,
    MetadataRequest,
    MetadataResponse,
    Property,
    StreamStatsRequest,
    StreamStatsResponse,
)
from wirestream.runtime.rabbitmq_stream.events import (
    Event,
    MetadataReceived,
    StreamCreated,
    StreamDeleted,
    StreamStatsReceived,
)
from wirestream.runtime.rabbitmq_stream.features import Feature
from wirestream.runtime.rabbitmq_stream.outbox import Outbox, request_failed

__all__ = ["StreamCommands"]


class StreamCommands:
    """Requests about streams, and the handlers of their responses."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox

    def create_stream(self, stream: str, arguments: Mapping[str, str] | None = None) -> int:
        """Create: 'Create => Key Version CorrelationId Stream Arguments' (e.g.
        max-length-bytes, max-age, stream-max-segment-size-bytes)."""
        args = [Property(key, value) for key, value in (arguments or {}).items()]
        return self._outbox.request(lambda cid: CreateRequest(cid, stream, args))

    def on_connection_create_response(self, frame: CreateResponse, events: list[Event]) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            events.append(StreamCreated(frame.correlation_id, request.stream))

    def delete_stream(self, stream: str) -> int:
        return self._outbox.request(lambda cid: DeleteRequest(cid, stream))

    def on_connection_delete_response(self, frame: DeleteResponse, events: list[Event]) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            events.append(StreamDeleted(frame.correlation_id, request.stream))

    def metadata(self, streams: Sequence[str]) -> int:
        names: list[str | None] = list(streams)
        return self._outbox.request(lambda cid: MetadataRequest(cid, names))

    def on_connection_metadata_response(self, frame: MetadataResponse, events: list[Event]) -> None:
        self._outbox.take_pending(frame)
        events.append(
            MetadataReceived(
                frame.correlation_id, tuple(frame.brokers), tuple(frame.stream_metadata)
            )
        )

    def stream_stats(self, stream: str) -> int:
        """StreamStats (3.11+): 'Stats => [Statistic]' (first_chunk_id, committed_chunk_id,
        ...). ``UnsupportedByBroker`` before anything is sent when the broker's
        ExchangeCommandVersions answer lacks it (StreamEnvironment.queryStreamStats does
        the same check, Client.java streamStatsCommandVersionsCheck)."""
        self._outbox.features.require(Feature.STREAM_STATS)
        return self._outbox.request(lambda cid: StreamStatsRequest(cid, stream))

    def on_connection_stream_stats_response(
        self, frame: StreamStatsResponse, events: list[Event]
    ) -> None:
        request = self._outbox.take_pending(frame)
        if not request_failed(frame.correlation_id, request, frame.response_code, events):
            stats = {stat.key or "": stat.value for stat in frame.stats}
            events.append(StreamStatsReceived(frame.correlation_id, request.stream or "", stats))
