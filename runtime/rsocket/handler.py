"""What an application implements to answer RSocket requests: ``RSocketHandler`` (one
method per interaction model) and ``Router`` (handlers chosen by the routing extension).

Handlers are plain async code.  A request-stream or channel handler returns an async
iterable (an ``async def`` generator is the natural one); the peer pulls from it only
as fast as the requester's REQUEST_N allows and closes it (``aclose``) on CANCEL.
Raising ``ApplicationError("why")`` (or any exception) ends the stream with
ERROR[APPLICATION_ERROR] carrying the message.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from wirestream.runtime.rsocket.errors import ApplicationError
from wirestream.runtime.rsocket.events import SetupInfo
from wirestream.runtime.rsocket.metadata import (
    COMPOSITE_METADATA,
    ROUTING,
    decode_route,
    find_route,
)

__all__ = ["RSocketPayload", "RSocketHandler", "Router", "as_payload", "PayloadLike"]


@dataclass(slots=True)
class RSocketPayload:
    """One RSocket message as the application sees it: data and optional metadata (None:
    the M flag is clear).

    A message's path to the application, one form per layer:

    1. the codec decodes a PAYLOAD frame (``wirestream.generated.rsocket.v1_0.Payload``,
       0.2's ``Response``; fragments reassembled by the engine) -- wire fields, flags
       and stream id;
    2. the sans-I/O engine (``RSocketConnection``) checks it against the stream's machine
       and credit and reports ``PayloadReceived(stream_id, data, metadata, complete)``;
    3. the asyncio peer (``RSocketPeer``) hands the data and metadata on as this class:
       the result of ``request_response``, each item of ``request_stream`` /
       ``request_channel``, and what a handler (``RSocketHandler``, ``Router``) receives.

    Handlers answer with one (or bytes/str, ``PayloadLike``) and the path runs backwards.
    Named apart from the frame class so the two never meet under one name.
    """

    data: bytes = b""
    metadata: bytes | None = None


PayloadLike = RSocketPayload | bytes | str
"""What handlers and publishers may produce: an RSocketPayload, or data alone (str as UTF-8)."""


def as_payload(value: PayloadLike) -> RSocketPayload:
    if isinstance(value, RSocketPayload):
        return value
    if isinstance(value, str):
        return RSocketPayload(value.encode())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return RSocketPayload(bytes(value))
    raise TypeError(f"a handler produced {type(value).__name__}, not an RSocketPayload or bytes")


class RSocketHandler:
    """Override the models you serve; the others answer ERROR[APPLICATION_ERROR]
    "... not supported" (fire-and-forget and metadata push are dropped).

    ``setup`` is the connection's SETUP (data, metadata, MIME types), set before the
    first request arrives.  ``extensions``: the EXT extended types ``on_ext`` understands;
    an EXT of any other type is dropped when its I flag is set and ends the connection
    when it is clear (Handling Ignore Flag).
    """

    setup: SetupInfo | None = None
    extensions: frozenset[int] = frozenset()

    async def request_response(self, payload: RSocketPayload) -> PayloadLike:
        raise ApplicationError("request-response is not supported")

    async def fire_and_forget(self, payload: RSocketPayload) -> None:
        return None

    def request_stream(self, payload: RSocketPayload) -> AsyncIterable[PayloadLike]:
        raise ApplicationError("request-stream is not supported")

    def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterable[PayloadLike]:
        raise ApplicationError("request-channel is not supported")

    async def metadata_push(self, metadata: bytes) -> None:
        return None

    async def on_ext(self, extended_type: int, payload: RSocketPayload, stream_id: int) -> None:
        """An EXT frame of one of ``extensions`` (``stream_id`` 0: the connection's); runs
        to its end like fire-and-forget.  The default does nothing."""
        return None

    async def on_frame(self, frame: object) -> None:
        """A frame an IDL extension added, reported by its engine handler as
        ``FrameReceived`` (``idl/README.md``, "Adding a frame with behaviour"); runs to
        its end like fire-and-forget.  The default does nothing."""
        return None


ResponseRoute = Callable[[RSocketPayload], Awaitable[PayloadLike]]
StreamRoute = Callable[[RSocketPayload], AsyncIterable[PayloadLike]]
ChannelRoute = Callable[[RSocketPayload, AsyncIterator[RSocketPayload]], AsyncIterable[PayloadLike]]
FnfRoute = Callable[[RSocketPayload], Awaitable[None]]
F = TypeVar("F", bound=Callable[..., Any])


class Router(RSocketHandler):
    """Dispatch on the route of the routing extension (Extensions/Routing.md), carried
    in composite metadata (``message/x.rsocket.composite-metadata.v0``, what rsocket-java
    and rsocket-py send) or as the whole metadata (``message/x.rsocket.routing.v0``)::

        router = Router()

        @router.stream("ticks")
        async def ticks(payload: RSocketPayload) -> AsyncIterator[bytes]:
            for i in range(int(payload.data)):
                yield str(i).encode()

    A request whose route has no handler gets ERROR[APPLICATION_ERROR] "no route ...".
    Requests without a route go to the ``default`` handler when given, and so does what
    has no route at all: metadata push, EXT frames (the router understands the
    ``default``'s ``extensions``, plus any set on the router) and IDL-added frames.
    """

    def __init__(self, default: RSocketHandler | None = None) -> None:
        self._responses: dict[str, ResponseRoute] = {}
        self._streams: dict[str, StreamRoute] = {}
        self._channels: dict[str, ChannelRoute] = {}
        self._fnfs: dict[str, FnfRoute] = {}
        self._extensions: frozenset[int] = frozenset()
        self.default = default

    @property
    def extensions(self) -> frozenset[int]:
        """The EXT types the engine hands to ``on_ext``: the default handler's as well,
        or an EXT frame it understands would be dropped (or end the connection) before
        the router could pass it on."""
        default = self.default
        if default is None:
            return self._extensions
        return self._extensions | default.extensions

    @extensions.setter
    def extensions(self, value: frozenset[int]) -> None:
        self._extensions = frozenset(value)

    # --- registration ------------------------------------------------------------------

    def response(self, route: str) -> Callable[[F], F]:
        return self._register(self._responses, route)

    def stream(self, route: str) -> Callable[[F], F]:
        return self._register(self._streams, route)

    def channel(self, route: str) -> Callable[[F], F]:
        return self._register(self._channels, route)

    def fire_and_forget_route(self, route: str) -> Callable[[F], F]:
        return self._register(self._fnfs, route)

    @staticmethod
    def _register(table: dict[str, Any], route: str) -> Callable[[F], F]:
        def decorate(function: F) -> F:
            if route in table:
                raise ValueError(f"route {route!r} is already registered")
            table[route] = function
            return function

        return decorate

    # --- dispatch ------------------------------------------------------------------------

    def route_of(self, payload: RSocketPayload) -> str | None:
        """The payload's route (first tag), by the SETUP's metadata MIME type."""
        if payload.metadata is None:
            return None
        mime = self.setup.metadata_mime_type if self.setup is not None else COMPOSITE_METADATA
        if mime == ROUTING:
            tags = decode_route(payload.metadata)
            return tags[0] if tags else None
        return find_route(payload.metadata)

    def _lookup(self, table: dict[str, Any], payload: RSocketPayload) -> Any:
        route = self.route_of(payload)
        if route is None:
            return None
        try:
            return table[route]
        except KeyError:
            raise ApplicationError(f"no route {route!r}") from None

    def _default(self) -> RSocketHandler:
        if self.default is None:
            raise ApplicationError("the request carries no route")
        self.default.setup = self.setup
        return self.default

    async def request_response(self, payload: RSocketPayload) -> PayloadLike:
        handler = self._lookup(self._responses, payload)
        if handler is None:
            return await self._default().request_response(payload)
        result: PayloadLike = await handler(payload)
        return result

    async def fire_and_forget(self, payload: RSocketPayload) -> None:
        handler = self._lookup(self._fnfs, payload)
        if handler is None:
            await self._default().fire_and_forget(payload)
            return
        await handler(payload)

    def request_stream(self, payload: RSocketPayload) -> AsyncIterable[PayloadLike]:
        handler = self._lookup(self._streams, payload)
        if handler is None:
            return self._default().request_stream(payload)
        result: AsyncIterable[PayloadLike] = handler(payload)
        return result

    def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterable[PayloadLike]:
        handler = self._lookup(self._channels, payload)
        if handler is None:
            return self._default().request_channel(payload, inbound)
        result: AsyncIterable[PayloadLike] = handler(payload, inbound)
        return result

    async def metadata_push(self, metadata: bytes) -> None:
        if self.default is not None:
            await self.default.metadata_push(metadata)

    async def on_ext(self, extended_type: int, payload: RSocketPayload, stream_id: int) -> None:
        if self.default is not None:
            self.default.setup = self.setup
            await self.default.on_ext(extended_type, payload, stream_id)

    async def on_frame(self, frame: object) -> None:
        if self.default is not None:
            self.default.setup = self.setup
            await self.default.on_frame(frame)
