"""A responder for demos and tests: what ``wirestream rsocket serve`` answers with.

- request-response: the request comes back unchanged (data and metadata);
- fire-and-forget: recorded (``fire_and_forgets``, the newest ``history`` of them) and
  passed to ``on_fire_and_forget`` when given (the CLI prints them);
- request-stream: the data is a decimal count N; the stream is the N payloads ``0``,
  ``1`` .. ``N-1`` (as decimal text), sent only as fast as REQUEST_N allows; anything
  else ends the stream with ERROR[APPLICATION_ERROR];
- request-channel: the first payload, then every payload the requester sends, echoed
  in order; the responder's side completes when the requester's side does;
- metadata push: recorded (``metadata_pushes``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable

from wirestream.runtime.rsocket.errors import ApplicationError
from wirestream.runtime.rsocket.handler import RSocketPayload, RSocketHandler

__all__ = ["EchoResponder", "parse_count"]


def parse_count(data: bytes) -> int:
    """A request-stream's count: decimal ASCII digits (surrounding whitespace allowed)."""
    text = data.decode("ascii", "replace").strip()
    if not text.isdigit() or not text.isascii():
        shown = data[:40].decode("utf-8", "replace")
        raise ApplicationError(f"request-stream data must be a decimal count, not {shown!r}")
    return int(text)


class EchoResponder(RSocketHandler):
    """Echoes request-response and channels, counts request-streams, keeps
    fire-and-forget and metadata-push payloads; see the module docstring."""

    def __init__(
        self,
        on_fire_and_forget: Callable[[RSocketPayload], None] | None = None,
        *,
        history: int = 1000,
    ) -> None:
        self.on_fire_and_forget = on_fire_and_forget
        self.fire_and_forgets: deque[RSocketPayload] = deque(maxlen=history)
        self.metadata_pushes: deque[bytes] = deque(maxlen=history)

    async def request_response(self, payload: RSocketPayload) -> RSocketPayload:
        return RSocketPayload(payload.data, payload.metadata)

    async def fire_and_forget(self, payload: RSocketPayload) -> None:
        self.fire_and_forgets.append(payload)
        if self.on_fire_and_forget is not None:
            self.on_fire_and_forget(payload)

    def request_stream(self, payload: RSocketPayload) -> AsyncIterator[bytes]:
        return self._count(parse_count(payload.data))

    @staticmethod
    async def _count(n: int) -> AsyncIterator[bytes]:
        for i in range(n):
            yield b"%d" % i

    def request_channel(
        self, payload: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[RSocketPayload]:
        return self._echo(payload, inbound)

    @staticmethod
    async def _echo(
        first: RSocketPayload, inbound: AsyncIterator[RSocketPayload]
    ) -> AsyncIterator[RSocketPayload]:
        yield first
        async for payload in inbound:
            yield payload

    async def metadata_push(self, metadata: bytes) -> None:
        self.metadata_pushes.append(metadata)
