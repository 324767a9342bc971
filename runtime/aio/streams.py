"""The stream API: async iterators whose demand follows consumption, and publishers that
never send more than the peer asked for.

``InboundStream`` is what ``async for item in peer.request_stream(...)`` iterates.  Its
demand is rsocket-java's ``limitRate(n)``: ``n`` up front (the opening frame usually
carries it), then, each time 75% of a batch has been *consumed by the application*, that
much again (``wirestream.runtime.flow.Replenisher``).  The protocol engine enforces that the peer
sends no more than granted, so the buffer here never holds more than ``limit_rate`` items:
a slow consumer slows the producer instead of growing memory.

Demand may be counted in other units than items (``costed=True``, BPMUX's inner credit
in bytes): each item is pushed with its cost and that much is requested back once the
application takes it, batched the same way, and all at once when nothing is buffered
(an item larger than a batch must not stall the peer).

Leaving early cancels the stream exactly once: ``break`` (the iterator is dropped;
CPython finalises it at once), ``aclose()``, leaving ``async with``, or the consuming task
being cancelled while it waits.

``OutboundDemand`` + ``pump`` run a publisher (an async generator or any async iterable)
under the peer's demand: the next item is pulled from the source only when the engine's
window (the one flow-control implementation, ``wirestream.runtime.flow.Window``) allows a send, and
the source is closed (``aclose``) when the peer cancels.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any, Generic, TypeVar

from wirestream.runtime.errors import StreamCancelled
from wirestream.runtime.flow import Replenisher

__all__ = [
    "InboundStream",
    "InboundSink",
    "OutboundDemand",
    "StreamCancelled",
    "pump",
    "YIELD_EVERY",
]

T = TypeVar("T")

YIELD_EVERY = 64
"""A publisher with demand left yields to the loop after this many items, so writes
coalesce and the reader runs."""


class InboundSink(Generic[T]):
    """The peer's end of an ``InboundStream``: ``push``, ``complete``, ``fail``.

    The protocol peer keeps this, never the ``InboundStream`` itself, so that when the
    application drops the iterator (``break``) it is finalised and cancels the stream.
    """

    __slots__ = ("items", "waiter", "finished", "error", "cancelled", "request", "cancel",
                 "replenisher", "costs", "buffered_cost")  # fmt: skip

    def __init__(self, request: Callable[[int], None], cancel: Callable[[], None],
                 replenisher: Replenisher, *, costed: bool = False) -> None:  # fmt: skip
        self.items: collections.deque[T] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None
        self.finished = False  # the peer ended it (complete, error) or we cancelled
        self.error: BaseException | None = None
        self.cancelled = False
        self.request = request
        self.cancel = cancel
        self.replenisher = replenisher
        # costed: what each buffered item holds of the demand (None: one unit each).
        self.costs: collections.deque[int] | None = collections.deque() if costed else None
        self.buffered_cost = 0

    def push(self, item: T) -> None:
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def push_costed(self, item: T, cost: int) -> None:
        """``push`` for a costed sink: ``item`` holds ``cost`` units until taken."""
        assert self.costs is not None, "push_costed needs InboundStream(costed=True)"
        self.costs.append(cost)
        self.buffered_cost += cost
        self.push(item)

    def release(self, consumed: int) -> None:
        """``consumed`` units are no longer held: request them back (batched by the
        replenisher; everything once nothing is buffered)."""
        if self.finished:
            return
        more = self.replenisher.delivered(consumed) if consumed else 0
        if not self.items:
            more += self.replenisher.flush()
        if more:
            self.request(more)

    def complete(self) -> None:
        self._finish(None)

    def fail(self, error: BaseException) -> None:
        self._finish(error)

    def _finish(self, error: BaseException | None) -> None:
        if self.finished:
            return
        self.finished = True
        self.error = error
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def cancel_once(self) -> None:
        if not self.finished:
            self.finished = True
            self.cancelled = True
            self._drop_buffered()
            self.cancel()
            waiter = self.waiter  # a consumer waiting elsewhere ends (StopAsyncIteration)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def _drop_buffered(self) -> None:
        self.items.clear()
        if self.costs is not None:
            self.costs.clear()
            self.buffered_cost = 0


class InboundStream(AsyncIterator[T], Generic[T]):
    """Items pushed by a protocol peer, pulled by the application (module docstring).

    ``request(n)`` asks the peer for ``n`` more; ``cancel()`` tells it to stop.
    ``granted``: what the opening frame already requested (0: request ``limit_rate`` now).
    ``costed``: ``limit_rate`` counts units the peer gives each item (``sink.push_costed``),
    not items.  The peer feeds it through ``sink``.
    """

    def __init__(
        self,
        request: Callable[[int], None],
        cancel: Callable[[], None],
        *,
        limit_rate: int,
        low_tide: int | None = None,
        granted: int = 0,
        costed: bool = False,
    ) -> None:
        replenisher = Replenisher(limit_rate, low_tide)
        self.sink: InboundSink[T] = InboundSink(request, cancel, replenisher, costed=costed)
        self.limit_rate = limit_rate
        if granted < limit_rate:
            request(limit_rate - granted)

    @property
    def finished(self) -> bool:
        return self.sink.finished

    @property
    def buffered(self) -> int:
        """Items received and not yet consumed (never more than ``limit_rate``)."""
        return len(self.sink.items)

    # --- explicit demand, for a consumer whose pace is not its consumption (a Spark
    # micro-batch source grants one batch's budget per batch).  What ``take_buffered``
    # takes is never replenished; iterating still replenishes as usual.

    def request(self, n: int) -> None:
        """Ask the peer for ``n`` more now (nothing once the stream has ended)."""
        if not self.sink.finished:
            self.sink.request(n)

    def take_buffered(self) -> list[T]:
        """Every item received and not yet consumed, without granting anything back."""
        items = list(self.sink.items)
        self.sink._drop_buffered()
        return items

    async def wait_buffered(self) -> None:
        """Return once an item is buffered or the stream has ended (``error`` says how)."""
        sink = self.sink
        if sink.items or sink.finished:
            return
        sink.waiter = asyncio.get_running_loop().create_future()
        try:
            await sink.waiter
        finally:
            sink.waiter = None

    @property
    def error(self) -> BaseException | None:
        """Why the peer ended the stream (None: completed, cancelled by us, or open)."""
        return None if self.sink.cancelled else self.sink.error

    def __aiter__(self) -> _Iteration[T]:
        # Each `async for` gets its own iterator object, referenced only by the loop: a
        # `break` drops it, and dropping it cancels, even when the application still holds
        # the stream.  (Read part of a stream and keep the rest with `anext(stream)`.)
        return _Iteration(self)

    async def __anext__(self) -> T:
        sink = self.sink
        items = sink.items
        while not items:
            if sink.finished:
                if sink.error is not None and not sink.cancelled:
                    raise sink.error
                raise StopAsyncIteration
            sink.waiter = asyncio.get_running_loop().create_future()
            try:
                await sink.waiter
            except asyncio.CancelledError:
                sink.cancel_once()  # the consuming task was cancelled
                raise
            finally:
                sink.waiter = None
        item = items.popleft()
        costs = sink.costs
        if costs is not None:
            cost = costs.popleft()
            sink.buffered_cost -= cost
            sink.release(cost)
        elif not sink.finished:
            more = sink.replenisher.delivered(1)
            if more:
                sink.request(more)
        return item

    async def aclose(self) -> None:
        """Stop early: the peer gets a cancel (once), buffered items are dropped."""
        self.sink.cancel_once()

    def __del__(self) -> None:
        # `break` out of `async for` drops the iterator; CPython finalises it right away.
        sink = getattr(self, "sink", None)
        if sink is not None and not sink.finished:
            try:
                sink.cancel_once()
            except Exception:
                pass  # the connection is gone already; nothing left to tell

    async def __aenter__(self) -> InboundStream[T]:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        self.sink.cancel_once()


class _Iteration(AsyncIterator[T], Generic[T]):
    """One ``async for`` over an ``InboundStream``: leaving the loop early cancels."""

    __slots__ = ("sink", "stream")

    def __init__(self, stream: InboundStream[T]) -> None:
        self.stream = stream  # keeps the stream alive while the loop runs
        self.sink = stream.sink

    def __aiter__(self) -> _Iteration[T]:
        return self

    # The stream's own method, shared rather than wrapped (no extra coroutine per item):
    # it reads only ``self.sink``, which an iteration has too. Typed for an iteration so
    # that ``async for item in stream`` gives ``item: T`` under mypy --strict.
    __anext__: Callable[[_Iteration[T]], Coroutine[Any, Any, T]] = (
        InboundStream.__anext__  # type: ignore[assignment]
    )

    def __del__(self) -> None:
        sink = self.sink
        if not sink.finished:
            try:
                sink.cancel_once()
            except Exception:
                pass  # the connection is gone already; nothing left to tell


class OutboundDemand:
    """Whether a publisher may send now: ``can_send`` asks the engine's window;
    ``wakeup()`` (on a request-n from the peer) and ``cancel()``/``fail()`` wake a waiting
    ``wait()``."""

    __slots__ = ("_can_send", "_event", "_stopped")

    def __init__(self, can_send: Callable[[], bool]) -> None:
        self._can_send = can_send
        self._event = asyncio.Event()
        self._stopped: BaseException | None = None

    def wakeup(self) -> None:
        self._event.set()

    def cancel(self) -> None:
        self.fail(StreamCancelled())

    def fail(self, error: BaseException) -> None:
        if self._stopped is None:
            self._stopped = error
        self._event.set()

    @property
    def stopped(self) -> bool:
        return self._stopped is not None

    def ready(self) -> bool:
        """Whether one item may be sent now (``wait()`` would return at once), without
        making a coroutine: ``pump`` asks this first, once per item."""
        return self._stopped is None and self._can_send()

    async def wait(self) -> None:
        """Return once one item may be sent; raise ``StreamCancelled`` (or the connection's
        error) once the stream is over for the publisher."""
        while True:
            if self._stopped is not None:
                raise self._stopped
            if self._can_send():
                return
            self._event.clear()
            await self._event.wait()


async def pump(
    source: AsyncIterable[T],
    demand: OutboundDemand,
    send: Callable[[T], None],
    *,
    backed_up: Callable[[], bool],
    flush: Callable[[], Awaitable[None]],
) -> None:
    """Send ``source``'s items while demand allows; pull the next only when one may be
    sent.  Returns when the source ends (the caller completes the stream); raises
    ``StreamCancelled`` when the peer cancelled, or what the source raised.  The source
    is always closed."""
    iterator = aiter(source)
    sent = 0
    try:
        while True:
            if not demand.ready():
                await demand.wait()
            try:
                item = await anext(iterator)
            except StopAsyncIteration:
                return
            if demand.stopped:  # cancelled while the source was producing
                await demand.wait()
            send(item)
            sent += 1
            if backed_up():
                await flush()  # the peer is not reading: wait for it
            elif sent % YIELD_EVERY == 0:
                await asyncio.sleep(0)
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:
            await close()
