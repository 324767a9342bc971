"""The connection's outgoing side, shared by every scope of ``ClientConnection``.

Publishers, subscriptions and the stream queries all send through one ``Outbox``: a
frame passes the connection machine (and the machines of its publisher or subscription)
before its bytes are queued, a frame over the negotiated frame_max is refused, and a
request is remembered by its correlation id until its response arrives. 'CorrelationId
=> uint32' (PROTOCOL.adoc, "Frame structure"): a response with an unknown id, or of
another command than its request, is a connection-level violation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from wirestream.generated.rabbitmq_stream.v1 import (
    CloseRequest,
    CloseResponse,
    CreateRequest,
    CreateResponse,
    CreateSuperStreamRequest,
    CreateSuperStreamResponse,
    DeclarePublisherRequest,
    DeclarePublisherResponse,
    DeletePublisherRequest,
    DeletePublisherResponse,
    DeleteRequest,
    DeleteResponse,
    DeleteSuperStreamRequest,
    DeleteSuperStreamResponse,
    ExchangeCommandVersionsRequest,
    ExchangeCommandVersionsResponse,
    Frame,
    MetadataRequest,
    MetadataResponse,
    OpenRequest,
    OpenResponse,
    PartitionsRequest,
    PartitionsResponse,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    QueryOffsetRequest,
    QueryOffsetResponse,
    QueryPublisherSequenceRequest,
    QueryPublisherSequenceResponse,
    ResponseCode,
    RouteRequest,
    RouteResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    StreamStatsRequest,
    StreamStatsResponse,
    SubscribeRequest,
    SubscribeResponse,
    UnsubscribeRequest,
    UnsubscribeResponse,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import ConnectionState
from wirestream.runtime.machine import StateMachine, send_all
from wirestream.runtime.rabbitmq_stream.errors import (
    MessageTooLarge,
    MismatchedResponse,
    ResponseError,
    UnknownCorrelationId,
)
from wirestream.runtime.rabbitmq_stream.events import Event, RequestFailed
from wirestream.runtime.rabbitmq_stream.features import BrokerFeatures

__all__ = ["Outbox", "request_failed"]

_MAX_CORRELATION_ID: Final = 0xFFFFFFFF

# Request -> the response that answers it (matched by correlation id).
_RESPONSE_TO: Final[dict[type, type]] = {
    PeerPropertiesRequest: PeerPropertiesResponse,
    SaslHandshakeRequest: SaslHandshakeResponse,
    SaslAuthenticateRequest: SaslAuthenticateResponse,
    OpenRequest: OpenResponse,
    CloseRequest: CloseResponse,
    CreateRequest: CreateResponse,
    DeleteRequest: DeleteResponse,
    MetadataRequest: MetadataResponse,
    DeclarePublisherRequest: DeclarePublisherResponse,
    DeletePublisherRequest: DeletePublisherResponse,
    QueryPublisherSequenceRequest: QueryPublisherSequenceResponse,
    SubscribeRequest: SubscribeResponse,
    UnsubscribeRequest: UnsubscribeResponse,
    QueryOffsetRequest: QueryOffsetResponse,
    RouteRequest: RouteResponse,
    PartitionsRequest: PartitionsResponse,
    CreateSuperStreamRequest: CreateSuperStreamResponse,
    DeleteSuperStreamRequest: DeleteSuperStreamResponse,
    ExchangeCommandVersionsRequest: ExchangeCommandVersionsResponse,
    StreamStatsRequest: StreamStatsResponse,
}


class Outbox:
    """Bytes to send, once the machines let them out, and the requests awaiting answers.

    ``frame_max`` (0 = no limit) and ``features`` are what the connection negotiated;
    ``sent`` tells the heartbeat that something went out since its last check.
    """

    __slots__ = ("connection", "frame_max", "features", "sent", "pending", "next_correlation_id",
                 "_out")  # fmt: skip

    def __init__(self, connection: StateMachine[ConnectionState]) -> None:
        self.connection = connection
        self.frame_max = 0
        self.features = BrokerFeatures()
        self.sent = False
        self.pending: dict[int, Frame] = {}
        self.next_correlation_id = 1
        self._out = bytearray()

    def drain(self) -> bytes:
        """What is queued, removed from the queue."""
        data = bytes(self._out)
        self._out.clear()
        return data

    def send(self, frame: Frame, *machines: StateMachine[Any]) -> None:
        """Pass ``frame`` through the connection machine and ``machines``, then queue it.

        Nothing changes unless every machine allows it (the first refusal raises its
        ``IllegalSend``), and a frame over the negotiated frame_max is refused first.
        """
        data = frame_bytes(frame)
        if self.frame_max and len(data) > self.frame_max:
            raise MessageTooLarge(
                f"a {type(frame).__name__} of {len(data)} bytes exceeds frame_max {self.frame_max}"
            )
        self.send_encoded(frame, data, *machines)

    def send_encoded(self, probe: Frame, data: bytes, *machines: StateMachine[Any]) -> None:
        """Queue ``data``, frames of ``probe``'s type already encoded, once the
        connection machine and every one of ``machines`` allowed ``probe`` (nothing
        changes otherwise: the first refusal raises its ``IllegalSend``)."""
        send_all(probe, self.connection, *machines)
        self.queue(data)

    def queue(self, data: bytes) -> None:
        """Queue encoded frames the machines have let out."""
        self._out += data
        self.sent = True

    def new_correlation_id(self) -> int:
        while True:
            cid = self.next_correlation_id
            self.next_correlation_id = cid % _MAX_CORRELATION_ID + 1  # 1..2^32-1, wrapping
            if cid not in self.pending:
                return cid

    def request(self, build: Callable[[int], Frame], *machines: StateMachine[Any]) -> int:
        """Send the request ``build`` makes for a fresh correlation id; returns the id."""
        cid = self.new_correlation_id()
        frame = build(cid)
        self.send(frame, *machines)
        self.pending[cid] = frame
        return cid

    def take_pending(self, response: Any) -> Any:
        """The request ``response`` answers (removed from the table)."""
        cid = response.correlation_id
        request = self.pending.get(cid)
        if request is None:
            raise UnknownCorrelationId(
                f"{type(response).__name__} with correlation id {cid} answers no outstanding request"
            )
        if _RESPONSE_TO[type(request)] is not type(response):
            raise MismatchedResponse(
                f"correlation id {cid} belongs to a {type(request).__name__}, "
                f"not answered by a {type(response).__name__}"
            )
        del self.pending[cid]
        return request


def request_failed(cid: int, request: Frame, code: int, events: list[Event]) -> bool:
    """Whether the response code ``code`` to ``request`` says it failed; if so, the
    ``RequestFailed`` event naming what it was about."""
    if code == ResponseCode.OK:
        return False
    about = (
        getattr(request, "stream", None)
        or getattr(request, "super_stream", None)
        or getattr(request, "name", None)  # CreateSuperStream, DeleteSuperStream
    )
    detail = f"{type(request).__name__} for {about!r}" if about else type(request).__name__
    error = ResponseError.from_code(code, detail)
    events.append(RequestFailed(cid, type(request).__name__, error))
    return True
