"""What the application holds of a BPMUX connection: ``ItemStream`` (items the peer
sends us), ``ItemWriter`` (items we send), ``Duplex`` (both), ``MessageStream`` (the
peer's messages), and ``BpmuxApplicationError`` (an error answer).

They know nothing of the peer object: the peer hands each one the engine and callbacks,
so the peer (``peer.BpmuxPeer``) builds them and they never import it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from types import TracebackType

from wirestream.runtime.aio import InboundStream, StreamCancelled
from wirestream.runtime.bpmux.aio.gate import CreditGate
from wirestream.runtime.bpmux.engine import BpmuxConnection
from wirestream.runtime.errors import StreamError

__all__ = [
    "BpmuxApplicationError",
    "Duplex",
    "ItemStream",
    "ItemWriter",
    "MessageStream",
    "error_payload",
]


class BpmuxApplicationError(StreamError):
    """An error answer: a ResponseError to a request (L49) or an InnerError ending a
    stream (L69), with its ``payload``.  Raise it in a handler to choose the payload;
    any other exception is answered with ``"<type>: <message>"``.  A ``StreamError``
    like every protocol's (RSocket's ``BpmuxApplicationError`` too): ``message`` is the
    payload as text."""

    def __init__(self, payload: bytes | str) -> None:
        self.payload = payload.encode() if isinstance(payload, str) else bytes(payload)
        super().__init__(self.payload.decode("utf-8", "replace"))


def error_payload(error: BaseException) -> bytes:
    if isinstance(error, BpmuxApplicationError):
        return error.payload
    return f"{type(error).__name__}: {error}".encode()


class ItemStream(InboundStream[bytes]):
    """Items the peer sends us on one inner stream (a stream we opened, a sink the peer
    opened, the inbound half of a duplex): ``wirestream.runtime.aio.InboundStream`` whose
    demand is inner credit in bytes (L58).

    Its inner credit follows consumption: ``credit`` bytes up front, handed back as items
    are taken, so never more than ``credit`` bytes are buffered (``buffered_bytes``).
    ``break``, ``aclose()``, leaving ``async with`` or cancelling the consuming task
    sends InnerCancel once.  An InnerError from the peer raises ``BpmuxApplicationError``; the
    connection's end raises its error (``ConnectionLost``, ``RemoteProtocolError``).
    """

    def __init__(self, inner_id: int, grant: Callable[[int], None], cancel: Callable[[], None],
                 *, credit: int, granted: int) -> None:  # fmt: skip
        self.inner_id = inner_id
        super().__init__(grant, cancel, limit_rate=credit, granted=granted, costed=True)

    @property
    def credit(self) -> int:
        """The window: the most inner bytes the peer may have sent and we not consumed."""
        return self.limit_rate

    @property
    def buffered_bytes(self) -> int:
        """Inner credit held by items received and not yet taken (<= ``credit``)."""
        return self.sink.buffered_cost


class ItemWriter:
    """Our items on one inner stream (a stream the peer opened, a sink we opened, the
    outbound half of a duplex).

    ``await send(item)`` waits for inner credit (so a slow consumer stalls us at its
    credit), ``end()`` sends InnerEnd, ``fail(error)`` InnerError.  Once the peer
    cancels (InnerCancel), ``send`` raises ``StreamCancelled`` and ``cancelled`` is
    True; ``end``/``fail`` are then no-ops (no InnerEnd is owed after InnerCancel).
    ``async with`` ends it (fails it if the block raised).

    ``sent`` is awaited after each packet queued (the peer writes it and waits while the
    transport is backed up); ``done`` is told once the writer is over.
    """

    def __init__(self, engine: BpmuxConnection, inner_id: int, *,
                 sent: Callable[[], Awaitable[None]],
                 done: Callable[[ItemWriter], None]) -> None:  # fmt: skip
        self._engine = engine
        self.inner_id = inner_id
        self._sent = sent
        self._done = done
        self._gate = CreditGate()
        self._ending = False
        self.finished = False  # InnerEnd/InnerError queued
        self.cancelled = False  # the peer sent InnerCancel
        self._cancelled_event = asyncio.Event()
        self._failure: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.finished or self.cancelled or self._failure is not None

    @property
    def credit(self) -> int:
        """Inner bytes we may still send (the engine's count)."""
        return self._engine.inner_credit(self.inner_id)

    async def send(self, item: bytes) -> None:
        engine, inner_id = self._engine, self.inner_id
        if self.cancelled:
            raise StreamCancelled(f"inner stream {inner_id} cancelled by the peer")
        await self._gate.run(lambda: engine.send_item(inner_id, item))
        await self._sent()

    async def send_from(self, source: AsyncIterable[bytes], *, end: bool = True) -> None:
        """Send ``source``'s items under credit (one item in hand at most), then ``end()``.
        Returns early if the peer cancels; the source is always closed (``aclose``).
        An error of the source ends the stream with InnerError and is raised."""
        iterator = aiter(source)
        try:
            while not self.cancelled:
                try:
                    item = await anext(iterator)
                except StopAsyncIteration:
                    if end:
                        await self.end()
                    return
                except Exception as error:
                    await self.fail(error)
                    raise
                await self.send(item)
        except StreamCancelled:
            return
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()

    async def end(self) -> None:
        """InnerEnd (L67): no more items.  Waits for the credit it costs (the engine
        keeps that much back from the items, so it never waits after one item)."""
        engine, inner_id = self._engine, self.inner_id
        await self._finish(lambda: engine.end_items(inner_id))

    async def fail(self, error: BaseException | bytes | str) -> None:
        """InnerError (L69) with ``error``'s payload (see ``BpmuxApplicationError``)."""
        if isinstance(error, BaseException):
            payload = error_payload(error)
        else:
            payload = error.encode() if isinstance(error, str) else error
        engine, inner_id = self._engine, self.inner_id
        await self._finish(lambda: engine.fail_items(inner_id, payload))

    async def _finish(self, action: Callable[[], None]) -> None:
        if self._ending or self.cancelled or self._failure is not None:
            return
        self._ending = True
        await self._gate.run(action)
        self.finished = True
        await self._sent()
        self._done(self)

    async def wait_cancelled(self) -> None:
        """Wait until the peer cancels (InnerCancel or CancelAll)."""
        await self._cancelled_event.wait()

    def _on_credit(self) -> None:
        self._gate.wakeup()

    def _on_cancel(self) -> None:
        self.cancelled = True
        self._cancelled_event.set()
        self._gate.fail(StreamCancelled(f"inner stream {self.inner_id} cancelled by the peer"))
        self._done(self)

    def _stop(self, error: BaseException) -> None:
        if self._failure is None:
            self._failure = error
        self._gate.fail(error)

    async def __aenter__(self) -> ItemWriter:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        if value is None:
            await self.end()
        elif isinstance(value, Exception):
            await self.fail(value)


class Duplex:
    """Both halves of a duplex: ``items`` (what the peer sends, an ``ItemStream``) and
    ``writer`` (what we send); ``send``/``end``/``fail``/``send_from`` are the writer's,
    iterating is the items'.  ``async with`` ends the writer and cancels the items."""

    def __init__(self, items: ItemStream, writer: ItemWriter) -> None:
        self.items = items
        self.writer = writer

    @property
    def inner_id(self) -> int:
        return self.writer.inner_id

    async def send(self, item: bytes) -> None:
        await self.writer.send(item)

    async def send_from(self, source: AsyncIterable[bytes], *, end: bool = True) -> None:
        await self.writer.send_from(source, end=end)

    async def end(self) -> None:
        await self.writer.end()

    async def fail(self, error: BaseException | bytes | str) -> None:
        await self.writer.fail(error)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.items.__aiter__()

    async def __aenter__(self) -> Duplex:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.writer.__aexit__(kind, value, traceback)
        await self.items.aclose()


class MessageStream(AsyncIterator[bytes]):
    """Messages from the peer, in order (L16), for ``async for``; each one's top-level
    bytes are granted back once it is taken.  Ends when the connection closes cleanly,
    raises its error otherwise."""

    def __init__(self, next_message: Callable[[], Awaitable[tuple[bytes, int]]],
                 release: Callable[[int], None]) -> None:  # fmt: skip
        self._next_message = next_message
        self._release = release

    def __aiter__(self) -> MessageStream:
        return self

    async def __anext__(self) -> bytes:
        payload, cost = await self._next_message()
        self._release(cost)
        return payload
