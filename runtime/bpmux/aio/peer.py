"""The asyncio BPMUX peer: ``connect(url)`` and ``serve(url, handler)`` over ``wirestream.runtime.aio``.

BPMUX is symmetric: both ends of a connection send messages, make requests and open
streams (the peer sends us items), sinks (we send items) and duplexes (both), and both
serve the other's through a ``Handler``::

    async with connect("tcp://127.0.0.1:7000") as peer:
        await peer.send_message(b"hello")              # waits for top-level credit
        reply = await peer.request(b"ping")            # ApplicationError on an error reply
        async for item in await peer.open_stream(b"ticks"):   # inner credit follows consumption
            ...
        async with await peer.open_sink(b"upload") as sink:
            await sink.send(b"chunk")                  # waits for inner credit

Credit is in bytes at two levels, and "data can only be transmitted once the receiver has
signaled that it wants to receive data" (seed 002 L4), so memory follows consumption:

- top level (Message, Request, Create*; seed L17): the engine runs with
  ``auto_credit=False`` and this peer hands bytes back as the application takes them: a
  message's bytes when the application has taken it (``messages()``) or its handler
  returned, a request's when it has been answered, other packets' at once;
- inner (one window per stream we receive on; L58): an ``ItemStream`` grants an item's
  bytes back when the application takes the item.

Both use ``wirestream.runtime.flow.Replenisher`` (grant in batches of 3/4 of the window), plus one
rule of ours: when the application holds nothing more, everything consumed is granted at
once, so a packet larger than a quarter of the window cannot stall the sender forever.
The buffer therefore never holds more bytes than were granted (``buffered_bytes <=
credit``).  The engine knows what each packet cost (batches included) only per
``receive_data`` call; that total is spread over the call's messages or items by their
size as single packets, the rest handed back at once, so the sum is exact.

Sending waits in a FIFO per window (``_CreditGate``): the engine refuses a packet its
credit cannot pay for (``CreditExceeded``, changing nothing), so the gate retries the
command when the peer grants more.  The engine is the only judge of what a packet costs.

The end of the connection (EOF, reset, a peer's protocol violation, our ``close``)
fails every open request and stream with the typed error from ``wirestream.runtime.errors``:
``ConnectionLost`` or the engine's ``RemoteProtocolError``.

Serving::

    class Echo(Handler):
        async def on_request(self, data: bytes) -> bytes:
            return data
        async def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
            for i in range(int(data)):
                yield b"%d" % i                        # pulled only as credit allows

    async with serve("tcp://127.0.0.1:7000", Echo()) as server: ...

DECISIONS where the seed is silent:

- A request holds its top-level bytes until answered, so ``credit`` also bounds the
  requests being worked on (a slow server stalls requesters, not its memory).
- The peer's Close is answered with ours (``close_on_peer_close``); once both sent Close
  and nothing is open (the engine's ConnectionDone), either side closes the transport,
  and the EOF that follows is a clean end (``error`` None).
- ``close()`` sends Close and CancelAll (``cancel=False``: Close only, open things
  drain), waits for that end at most ``close_timeout``, then closes the transport.
- An error answer's payload is the ``ApplicationError`` payload, or
  ``"<type>: <message>"`` for any other exception.
- A handler factory is called with the ``BpmuxPeer``, so a handler can call back.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import ssl as ssl_module
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
)
from types import TracebackType
from typing import Any, Generic, TypeVar, Union

from wirestream.runtime._support import write_varu64
from wirestream.runtime.aio import (
    EngineDriver,
    Listener,
    StreamCancelled,
    Transport,
    listen,
    open_transport,
)
from wirestream.runtime.aio.streams import YIELD_EVERY
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.engine import BpmuxConnection
from wirestream.runtime.bpmux.errors import CreditExceeded
from wirestream.runtime.capture import CaptureWriter, tap, tap_accepted
from wirestream.runtime.errors import ConnectionLost, ProtocolError
from wirestream.runtime.flow import Replenisher

__all__ = [
    "ApplicationError",
    "BpmuxPeer",
    "BpmuxServer",
    "Duplex",
    "Handler",
    "ItemStream",
    "ItemWriter",
    "MessageStream",
    "connect",
    "serve",
    "DEFAULT_CREDIT",
    "DEFAULT_STREAM_CREDIT",
]

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")

DEFAULT_CREDIT = 1 << 16
"""Top-level bytes we let the peer have in flight and buffered (messages, requests)."""

DEFAULT_STREAM_CREDIT = 1 << 16
"""Inner bytes per stream we receive on (the most an ``ItemStream`` buffers)."""


class ApplicationError(Exception):
    """An error answer: a ResponseError to a request (L49) or an InnerError ending a
    stream (L69), with its ``payload``.  Raise it in a handler to choose the payload;
    any other exception is answered with ``"<type>: <message>"``."""

    def __init__(self, payload: bytes | str) -> None:
        self.payload = payload.encode() if isinstance(payload, str) else bytes(payload)
        super().__init__(self.payload.decode("utf-8", "replace"))


def _error_payload(error: BaseException) -> bytes:
    if isinstance(error, ApplicationError):
        return error.payload
    return f"{type(error).__name__}: {error}".encode()


# --- credit -----------------------------------------------------------------------------


def _packet_size(payload: bytes, *varu64s: int) -> int:
    """Bytes of a single packet: type byte, VarU64 fields, payload length, payload
    (seed 002 layouts: Message, Request, InnerItem)."""
    size = 1 + len(write_varu64(len(payload))) + len(payload)
    for value in varu64s:
        size += len(write_varu64(value))
    return size


class _CreditGate:
    """Senders waiting for credit on one window, first come first served.

    An action is an engine command that raises ``CreditExceeded`` (changing nothing)
    when the credit left does not pay for its packet; the gate runs it at once if nobody
    waits, else when ``wakeup()`` (a grant) lets it through, in order.  ``fail`` ends the
    window for everyone waiting and every later caller.
    """

    __slots__ = ("_waiters", "_error")

    def __init__(self) -> None:
        self._waiters: collections.deque[tuple[Callable[[], Any], asyncio.Future[Any]]] = (
            collections.deque()
        )
        self._error: BaseException | None = None

    @property
    def waiting(self) -> int:
        return sum(1 for _, future in self._waiters if not future.done())

    async def run(self, action: Callable[[], R],
                  undo: Callable[[R], None] | None = None) -> R:  # fmt: skip
        """Run ``action`` once the credit allows; ``undo(result)`` if the caller was
        cancelled after it ran."""
        if self._error is not None:
            raise self._error
        if not self._waiters:
            try:
                return action()
            except CreditExceeded:
                pass
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._waiters.append((action, future))
        # Queued packets reserve their single-packet cost; written as one batch they may
        # cost less, freeing credit without a grant: look again after the pending write
        # (the driver's, scheduled earlier, runs first).
        loop.call_soon(self.wakeup)
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                if undo is not None:
                    undo(future.result())
            raise

    def wakeup(self) -> None:
        waiters = self._waiters
        while waiters:
            action, future = waiters[0]
            if future.done():  # the waiter was cancelled
                waiters.popleft()
                continue
            try:
                result = action()
            except CreditExceeded:
                return
            except BaseException as error:
                waiters.popleft()
                future.set_exception(error)
                continue
            waiters.popleft()
            future.set_result(result)

    def fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        while self._waiters:
            _, future = self._waiters.popleft()
            if not future.done():
                future.set_exception(error)


# --- inbound items ----------------------------------------------------------------------


class _Inbound:
    """The peer's end of an ``ItemStream``: items with the inner bytes each cost, and the
    credit handed back as the application takes them.  The peer object keeps this, not
    the ``ItemStream``, so a dropped iterator (``break``) is finalised and cancels."""

    __slots__ = ("peer", "inner_id", "credit", "items", "buffered_bytes", "waiter",
                 "finished", "error", "cancelled", "regrant", "mirror")  # fmt: skip

    def __init__(self, peer: BpmuxPeer, inner_id: int, credit: int) -> None:
        self.peer = peer
        self.inner_id = inner_id
        self.credit = credit
        self.items: collections.deque[tuple[bytes, int]] = collections.deque()
        self.buffered_bytes = 0
        self.waiter: asyncio.Future[None] | None = None
        self.finished = False  # the peer ended it (InnerEnd, InnerError), or it failed/cancelled
        self.error: BaseException | None = None
        self.cancelled = False
        self.regrant = Replenisher(credit)
        self.mirror = 0  # what the engine still lets the peer send us (peer_inner_credit)

    def push(self, item: bytes, cost: int) -> None:
        self.items.append((item, cost))
        self.buffered_bytes += cost
        self._wake()

    def complete(self) -> None:
        self._finish(None)

    def fail(self, error: BaseException) -> None:
        self._finish(error)

    def _finish(self, error: BaseException | None) -> None:
        if self.finished:
            return
        self.finished = True
        self.error = error
        self._wake()
        self.peer._inbound_done(self)

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def cancel_once(self) -> None:
        """InnerCancel (L61), once, if the stream is still open; buffered items dropped."""
        if self.finished:
            return
        self.finished = True
        self.cancelled = True
        self.items.clear()
        self.buffered_bytes = 0
        self.peer._cancel_inbound(self)

    def release(self, consumed: int) -> None:
        """``consumed`` inner bytes are no longer held: grant them back (batched)."""
        if self.finished:
            return
        grant = self.regrant.delivered(consumed) if consumed else 0
        if not self.items:
            grant += self.regrant.flush()
        if grant:
            self.peer._grant_inner(self, grant)

    async def next(self) -> bytes:
        items = self.items
        while not items:
            if self.finished:
                if self.error is not None and not self.cancelled:
                    raise self.error
                raise StopAsyncIteration
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await self.waiter
            except asyncio.CancelledError:
                self.cancel_once()  # the consuming task was cancelled
                raise
            finally:
                self.waiter = None
        item, cost = items.popleft()
        self.buffered_bytes -= cost
        self.release(cost)
        return item


class ItemStream(AsyncIterator[bytes]):
    """Items the peer sends us on one inner stream (a stream we opened, a sink the peer
    opened, the inbound half of a duplex).

    Its inner credit follows consumption: ``credit`` bytes up front, handed back as items
    are taken, so never more than ``credit`` bytes are buffered (``buffered_bytes``).
    ``break``, ``aclose()``, leaving ``async with`` or cancelling the consuming task
    sends InnerCancel once.  An InnerError from the peer raises ``ApplicationError``; the
    connection's end raises its error (``ConnectionLost``, ``RemoteProtocolError``).
    """

    def __init__(self, inbound: _Inbound) -> None:
        self._inbound = inbound

    @property
    def inner_id(self) -> int:
        return self._inbound.inner_id

    @property
    def credit(self) -> int:
        """The window: the most inner bytes the peer may have sent and we not consumed."""
        return self._inbound.credit

    @property
    def buffered(self) -> int:
        return len(self._inbound.items)

    @property
    def buffered_bytes(self) -> int:
        """Inner credit held by items received and not yet taken (<= ``credit``)."""
        return self._inbound.buffered_bytes

    @property
    def finished(self) -> bool:
        return self._inbound.finished

    def __aiter__(self) -> _ItemIteration:
        # Each `async for` gets its own iterator, referenced only by the loop: `break`
        # drops it, which cancels even while the application still holds the stream
        # (as runtime.aio.InboundStream).  To read part and keep the rest: `anext(stream)`.
        return _ItemIteration(self)

    async def __anext__(self) -> bytes:
        return await self._inbound.next()

    async def aclose(self) -> None:
        self._inbound.cancel_once()

    def __del__(self) -> None:
        inbound = getattr(self, "_inbound", None)
        if inbound is not None and not inbound.finished:
            try:
                inbound.cancel_once()
            except Exception:
                pass  # the loop or the connection is gone already

    async def __aenter__(self) -> ItemStream:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        self._inbound.cancel_once()


class _ItemIteration(AsyncIterator[bytes]):
    """One ``async for`` over an ``ItemStream``: leaving the loop early cancels."""

    __slots__ = ("stream", "inbound")

    def __init__(self, stream: ItemStream) -> None:
        self.stream = stream  # keeps the stream alive while the loop runs
        self.inbound = stream._inbound

    def __aiter__(self) -> _ItemIteration:
        return self

    async def __anext__(self) -> bytes:
        return await self.inbound.next()

    def __del__(self) -> None:
        inbound = self.inbound
        if not inbound.finished:
            try:
                inbound.cancel_once()
            except Exception:
                pass  # the loop or the connection is gone already


# --- outbound items ---------------------------------------------------------------------


class ItemWriter:
    """Our items on one inner stream (a stream the peer opened, a sink we opened, the
    outbound half of a duplex).

    ``await send(item)`` waits for inner credit (so a slow consumer stalls us at its
    credit), ``end()`` sends InnerEnd, ``fail(error)`` InnerError.  Once the peer
    cancels (InnerCancel), ``send`` raises ``StreamCancelled`` and ``cancelled`` is
    True; ``end``/``fail`` are then no-ops (no InnerEnd is owed after InnerCancel).
    ``async with`` ends it (fails it if the block raised).
    """

    def __init__(self, peer: BpmuxPeer, inner_id: int) -> None:
        self._peer = peer
        self.inner_id = inner_id
        self._gate = _CreditGate()
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
        return self._peer.engine.inner_credit(self.inner_id)

    async def send(self, item: bytes) -> None:
        engine, inner_id = self._peer.engine, self.inner_id
        if self.cancelled:
            raise StreamCancelled(f"inner stream {inner_id} cancelled by the peer")
        await self._gate.run(lambda: engine.send_item(inner_id, item))
        await self._peer._sent()

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
        engine, inner_id = self._peer.engine, self.inner_id
        await self._finish(lambda: engine.end_items(inner_id))

    async def fail(self, error: BaseException | bytes | str) -> None:
        """InnerError (L69) with ``error``'s payload (see ``ApplicationError``)."""
        if isinstance(error, BaseException):
            payload = _error_payload(error)
        else:
            payload = error.encode() if isinstance(error, str) else error
        engine, inner_id = self._peer.engine, self.inner_id
        await self._finish(lambda: engine.fail_items(inner_id, payload))

    async def _finish(self, action: Callable[[], None]) -> None:
        if self._ending or self.cancelled or self._failure is not None:
            return
        self._ending = True
        await self._gate.run(action)
        self.finished = True
        await self._peer._sent()
        self._peer._outbound_done(self)

    async def wait_cancelled(self) -> None:
        """Wait until the peer cancels (InnerCancel or CancelAll)."""
        await self._cancelled_event.wait()

    def _on_credit(self) -> None:
        self._gate.wakeup()

    def _on_cancel(self) -> None:
        self.cancelled = True
        self._cancelled_event.set()
        self._gate.fail(StreamCancelled(f"inner stream {self.inner_id} cancelled by the peer"))
        self._peer._outbound_done(self)

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

    def __aiter__(self) -> _ItemIteration:
        return self.items.__aiter__()

    async def __aenter__(self) -> Duplex:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.writer.__aexit__(kind, value, traceback)
        await self.items.aclose()


# --- messages ---------------------------------------------------------------------------


class MessageStream(AsyncIterator[bytes]):
    """Messages from the peer, in order (L16), for ``async for``; each one's top-level
    bytes are granted back once it is taken.  Ends when the connection closes cleanly,
    raises its error otherwise."""

    def __init__(self, peer: BpmuxPeer) -> None:
        self._peer = peer

    def __aiter__(self) -> MessageStream:
        return self

    async def __anext__(self) -> bytes:
        payload, cost = await self._peer._next_message()
        self._peer._release_message(cost)
        return payload


# --- handler ----------------------------------------------------------------------------

StreamResult = Union[Awaitable[Union[AsyncIterable[bytes], None]], AsyncIterable[bytes]]


class Handler:
    """What this side serves; subclass and override.

    - ``on_message(data)``: if overridden, messages go here, one at a time in order
      (each one's credit back when it returns); otherwise to ``peer.messages()``.
    - ``on_request(data) -> bytes``: raise to answer with ResponseError
      (``ApplicationError`` to pick the payload).  Default: an error answer.
    - ``on_stream(data, writer)``: the peer opened a stream, we send.  Send with
      ``writer`` or return (or be) an async iterable of items; the stream is ended when
      it returns, failed (InnerError) when it raises.  Default: InnerError.
    - ``on_sink(data, items)``: the peer opened a sink, we receive.  Default: cancel.
    - ``on_duplex(data, items, writer)``: both.  Default: InnerError and cancel.

    Each request and stream runs in its own task, cancelled when the peer cancels the
    request (RequestCancel) or the stream we send on (InnerCancel, for ``on_stream``), or
    when the connection ends.
    """

    async def on_message(self, data: bytes) -> None:
        raise NotImplementedError

    async def on_request(self, data: bytes) -> bytes:
        raise ApplicationError(b"no request handler")

    def on_stream(self, data: bytes, writer: ItemWriter) -> StreamResult:
        return writer.fail(b"no stream handler")

    async def on_sink(self, data: bytes, items: ItemStream) -> None:
        await items.aclose()

    def on_duplex(self, data: bytes, items: ItemStream, writer: ItemWriter) -> StreamResult:
        return _refuse_duplex(items, writer)


async def _refuse_duplex(items: ItemStream, writer: ItemWriter) -> None:
    await items.aclose()
    await writer.fail(b"no duplex handler")


def _handles_messages(handler: Handler) -> bool:
    return type(handler).on_message is not Handler.on_message


# --- the peer ---------------------------------------------------------------------------


class _Flow:
    __slots__ = ("inbound", "writer", "task")

    def __init__(self, inbound: _Inbound | None, writer: ItemWriter | None) -> None:
        self.inbound = inbound
        self.writer = writer
        self.task: asyncio.Task[None] | None = None


class BpmuxPeer:
    """One end of a BPMUX connection over a ``wirestream.runtime.aio`` transport (module docstring).

    ``credit``: top-level bytes the peer may have in flight or held by us (buffered
    messages, requests being answered).  ``stream_credit``: the default inner window of
    the streams we receive on.  ``greedy``: allow items attached to ``open_sink`` /
    ``open_duplex`` (GreedySink/GreedyDuplex, which the peer must know).
    ``close_on_peer_close``: answer the peer's Close with ours, so the connection ends
    once nothing is open.  ``close_timeout``: how long ``close()`` waits for that.
    """

    def __init__(self, transport: Transport, *, initiator: bool, handler: Handler | None = None,
                 credit: int = DEFAULT_CREDIT, stream_credit: int = DEFAULT_STREAM_CREDIT,
                 greedy: bool = False, close_on_peer_close: bool = True,
                 close_timeout: float = 5.0) -> None:  # fmt: skip
        if credit <= 0 or stream_credit <= 0:
            raise ValueError("credit and stream_credit must be positive")
        self.engine = BpmuxConnection(initiator=initiator, initial_credit=credit,
                                      auto_credit=False, greedy=greedy)  # fmt: skip
        self.handler = handler if handler is not None else Handler()
        self.credit = credit
        self.stream_credit = stream_credit
        self.close_on_peer_close = close_on_peer_close
        self.close_timeout = close_timeout
        self._loop = asyncio.get_running_loop()
        # The driver also delivers the events of the packets before a violation.
        self._driver = EngineDriver(self.engine, transport, self._on_events, self._on_closed)
        # top level: sending waits here; receiving holds and hands back credit
        self._top_gate = _CreditGate()
        self._top_regrant = Replenisher(credit)
        self._top_mirror = credit  # engine.peer_top_level_credit as of our last look
        self._top_held = 0
        self._top_unassigned = 0  # bytes of this receive call not yet given to an event
        self._inner_unassigned: dict[int, int] = {}
        self._messages: collections.deque[tuple[bytes, int]] = collections.deque()
        self._message_waiter: asyncio.Future[None] | None = None
        self._requests: dict[int, asyncio.Future[bytes]] = {}
        self._responders: dict[int, asyncio.Task[None]] = {}
        self._flows: dict[int, _Flow] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._close_sent = False
        self._sends = 0
        self._closer: asyncio.Task[Any] | None = None
        self._peer_closed = asyncio.Event()
        self._done = asyncio.Event()  # ConnectionDone: both closed, nothing open
        self._clean = False
        self._closed = False
        self.error: BaseException | None = None
        """What ended the connection (None while open or after a clean end)."""

    def start(self) -> None:
        self._driver.start()
        if _handles_messages(self.handler):
            self._spawn(self._dispatch_messages(), "bpmux messages")

    @property
    def transport(self) -> Transport:
        return self._driver.transport

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def peer_closed(self) -> bool:
        """The peer sent Close: it opens nothing more."""
        return self._peer_closed.is_set()

    @property
    def buffered_message_bytes(self) -> int:
        """Top-level credit held by messages received and not yet taken."""
        return sum(cost for _, cost in self._messages)

    @property
    def held_top_level_bytes(self) -> int:
        """Top-level credit held by buffered messages and requests being answered
        (never more than ``credit``)."""
        return self._top_held

    # ------------------------------------------------------------------ commands --

    async def send_message(self, data: bytes) -> None:
        """Message (L37): waits for top-level credit; returns once queued."""
        engine = self.engine
        await self._top_gate.run(lambda: engine.send_message(data))
        await self._sent()

    async def request(self, data: bytes) -> bytes:
        """Request (L41) and its Response (L47); a ResponseError (L49) raises
        ``ApplicationError``.  Cancelling the caller sends RequestCancel (L45)."""
        engine = self.engine
        future: asyncio.Future[bytes] = self._loop.create_future()

        def send() -> int:
            req_id = engine.send_request(data)
            self._requests[req_id] = future
            return req_id

        req_id = await self._top_gate.run(send, self._cancel_request)
        self._queued()
        try:
            return await future
        except asyncio.CancelledError:
            self._cancel_request(req_id)
            raise

    def _cancel_request(self, req_id: int) -> None:
        if self._requests.pop(req_id, None) is not None and not self._closed:
            self.engine.cancel_request(req_id)
            self._queued()

    async def open_stream(self, data: bytes = b"", *, credit: int | None = None) -> ItemStream:
        """CreateStream (L51): the peer sends us items; ``credit`` is the window
        (default ``stream_credit``) and is granted with the packet."""
        window = credit or self.stream_credit
        engine = self.engine

        def create() -> _Inbound:
            inner_id = engine.open_stream(data, window)
            inbound = _Inbound(self, inner_id, window)
            inbound.mirror = window
            self._flows[inner_id] = _Flow(inbound, None)
            return inbound

        inbound = await self._top_gate.run(create, lambda inbound: inbound.cancel_once())
        self._queued()
        return ItemStream(inbound)

    async def open_sink(self, data: bytes = b"", *, items: list[bytes] | None = None) -> ItemWriter:
        """CreateSink (L53): we send items once the peer grants inner credit.  ``items``
        (needs ``greedy``): GreedySink, items paid with top-level credit."""
        engine = self.engine

        def create() -> ItemWriter:
            inner_id = engine.open_sink(data, items)
            writer = ItemWriter(self, inner_id)
            self._flows[inner_id] = _Flow(None, writer)
            return writer

        writer = await self._top_gate.run(create)
        self._queued()
        return writer

    async def open_duplex(self, data: bytes = b"", *, credit: int | None = None,
                          items: list[bytes] | None = None) -> Duplex:  # fmt: skip
        """CreateDuplex (L55): both directions; ``credit`` is the window of the peer's
        items.  ``items`` (needs ``greedy``): GreedyDuplex."""
        window = credit or self.stream_credit
        engine = self.engine

        def create() -> Duplex:
            inner_id = engine.open_duplex(data, window, items)
            inbound = _Inbound(self, inner_id, window)
            inbound.mirror = window
            writer = ItemWriter(self, inner_id)
            self._flows[inner_id] = _Flow(inbound, writer)
            return Duplex(ItemStream(inbound), writer)

        duplex = await self._top_gate.run(
            create, lambda duplex: duplex.items._inbound.cancel_once()
        )
        self._queued()
        return duplex

    def messages(self) -> MessageStream:
        """The peer's messages, for ``async for`` (when the handler has no ``on_message``)."""
        return MessageStream(self)

    def cancel_all(self) -> None:
        """CancelAll (L35): cancel every request we wait for and every stream we receive
        on (their iterators end, ``request`` raises ``StreamCancelled``)."""
        if self._closed:
            return
        self.engine.cancel_all()
        self._queued()
        cancelled = StreamCancelled("cancelled by cancel_all")
        requests, self._requests = self._requests, {}
        for future in requests.values():
            if not future.done():
                future.set_exception(cancelled)
        for flow in list(self._flows.values()):
            inbound = flow.inbound
            if inbound is not None and not inbound.finished:
                inbound.finished = inbound.cancelled = True
                inbound.items.clear()
                inbound.buffered_bytes = 0
                inbound._wake()
                self._inbound_done(inbound)

    async def close(self, timeout: float | None = None, *, cancel: bool = True) -> None:
        """End politely: Close (L31: we open nothing more) and, with ``cancel``, CancelAll
        (L35: we want nothing more); wait until the peer has closed too and nothing is
        open (at most ``timeout``, default ``close_timeout``), then close the transport:
        what is still open fails with ``ConnectionLost``.  ``cancel=False`` drains: open
        requests and streams run to their end (the seed: Close stops only new ones)."""
        if not self._closed:
            try:
                self._send_close()
                if cancel:
                    self.cancel_all()
            except ProtocolError:
                pass  # the connection failed meanwhile
            wait = self.close_timeout if timeout is None else timeout
            try:
                async with asyncio.timeout(wait):
                    await self._done.wait()
            except TimeoutError:
                pass
            await self._driver.close()
        await self.wait_closed()

    def abort(self) -> None:
        """Drop the connection now: everything open fails with ``ConnectionLost``."""
        self._driver.abort()

    async def wait_closed(self) -> None:
        await self._driver.wait_closed()
        current = asyncio.current_task()
        while True:
            tasks = [t for t in self._tasks if t is not current and not t.done()]
            if not tasks:
                break
            await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> BpmuxPeer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()

    def _send_close(self) -> None:
        if not self._close_sent and not self._closed:
            self._close_sent = True
            self.engine.send_close()
            self._queued()

    async def _sent(self) -> None:
        """After queueing packets: write them this loop iteration, and wait while the
        peer is not reading the transport."""
        self._queued()
        self._sends += 1
        if self._driver.backed_up():
            await self._driver.flush()  # the peer is not reading: wait for it
        elif self._sends % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # let writes coalesce and the reader run

    # ------------------------------------------------------------------ receiving --

    def _on_events(self, events: list[ev.Event]) -> None:
        engine = self.engine
        available = engine.peer_top_level_credit
        self._top_unassigned = self._top_mirror - available
        self._top_mirror = available
        self._inner_unassigned.clear()
        for event in events:
            handle = self._handlers.get(type(event))
            if handle is not None:
                handle(self, event)
        # Bytes no buffered message or item holds (other packets, batch overheads, an
        # InnerEnd) go back at once.
        leftover, self._top_unassigned = self._top_unassigned, 0
        self._release_top(leftover)
        for inner_id, left in self._inner_unassigned.items():
            flow = self._flows.get(inner_id)
            if flow is not None and flow.inbound is not None:
                flow.inbound.release(left)
        self._inner_unassigned.clear()

    def _take_top(self, estimate: int) -> int:
        """The share of this call's top-level bytes an event holds."""
        cost = min(estimate, self._top_unassigned)
        self._top_unassigned -= cost
        self._top_held += cost
        return cost

    def _on_main_credit(self, event: ev.MainCreditReceived) -> None:
        self._top_gate.wakeup()

    def _on_peer_closed(self, event: ev.PeerClosed) -> None:
        self._peer_closed.set()
        if self.close_on_peer_close:
            self._send_close()

    def _on_message(self, event: ev.MessageReceived) -> None:
        cost = self._take_top(_packet_size(event.payload))
        self._messages.append((event.payload, cost))
        waiter = self._message_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_request(self, event: ev.RequestReceived) -> None:
        cost = self._take_top(_packet_size(event.payload, event.req_id))
        task = self._spawn(self._respond(event.req_id, event.payload, cost),
                           f"bpmux request {event.req_id}")  # fmt: skip
        self._responders[event.req_id] = task

    def _on_response(self, event: ev.ResponseReceived | ev.ResponseErrorReceived) -> None:
        future = self._requests.pop(event.req_id, None)
        if future is None or future.done():
            return
        if isinstance(event, ev.ResponseReceived):
            future.set_result(event.payload)
        else:
            future.set_exception(ApplicationError(event.payload))

    def _on_request_cancelled(self, event: ev.RequestCancelled) -> None:
        task = self._responders.pop(event.req_id, None)
        if task is not None:
            task.cancel()

    def _on_inner_opened(self, event: ev.InnerOpened) -> None:
        inner_id = event.inner_id
        inbound = _Inbound(self, inner_id, self.stream_credit) if event.we_receive else None
        writer = ItemWriter(self, inner_id) if event.we_send else None
        flow = _Flow(inbound, writer)
        self._flows[inner_id] = flow
        if inbound is not None:  # a sink or duplex starts without inner credit (L53, L55)
            self._grant_inner(inbound, self.stream_credit)
        flow.task = self._spawn(self._serve_flow(event, flow), f"bpmux inner {inner_id}")

    def _on_item(self, event: ev.ItemReceived) -> None:
        flow = self._flows.get(event.inner_id)
        inbound = flow.inbound if flow is not None else None
        if inbound is None or inbound.finished:
            return
        unassigned = self._inner_unassigned
        if event.inner_id not in unassigned:
            available = self.engine.peer_inner_credit(event.inner_id)
            unassigned[event.inner_id] = inbound.mirror - available
            inbound.mirror = available
        estimate = _packet_size(event.payload, event.inner_id)
        cost = min(estimate, unassigned[event.inner_id])
        unassigned[event.inner_id] -= cost
        inbound.push(event.payload, cost)

    def _on_inner_ended(self, event: ev.InnerEnded | ev.InnerErrored) -> None:
        flow = self._flows.get(event.inner_id)
        if flow is None or flow.inbound is None:
            return
        if isinstance(event, ev.InnerEnded):
            flow.inbound.complete()
        else:
            flow.inbound.fail(ApplicationError(event.payload))

    def _on_inner_credit(self, event: ev.InnerCreditReceived) -> None:
        flow = self._flows.get(event.inner_id)
        if flow is not None and flow.writer is not None:
            flow.writer._on_credit()

    def _on_inner_cancelled(self, event: ev.InnerCancelled) -> None:
        flow = self._flows.get(event.inner_id)
        if flow is None or flow.writer is None:
            return
        flow.writer._on_cancel()
        # Only items of ours were wanted: the handler of a stream has nothing left to do.
        if flow.inbound is None and flow.task is not None:
            flow.task.cancel()

    def _queued(self) -> None:
        """Packets were queued: write them this loop iteration.  A command can be what
        makes the connection done (our Close, the last answer or InnerEnd)."""
        self._driver.wakeup()
        if self.engine.done and not self._done.is_set() and not self._closed:
            self._on_connection_done(ev.ConnectionDone())

    def _on_connection_ended(self, event: ev.ConnectionEnded) -> None:
        if event.clean:
            self._clean = True  # EOF after both sides were done

    def _on_connection_done(self, event: ev.ConnectionDone) -> None:
        # DECISION (the seed defines no end of connection): both sent Close and nothing
        # is open, so the transport is closed (the engine's BP-31).
        self._clean = True
        self._done.set()
        if self._closer is None:
            self._closer = self._spawn(self._driver.close(), "bpmux close")

    _handlers: dict[type, Callable[[BpmuxPeer, Any], None]] = {
        ev.MainCreditReceived: _on_main_credit,
        ev.PeerClosed: _on_peer_closed,
        ev.MessageReceived: _on_message,
        ev.RequestReceived: _on_request,
        ev.ResponseReceived: _on_response,
        ev.ResponseErrorReceived: _on_response,
        ev.RequestCancelled: _on_request_cancelled,
        ev.InnerOpened: _on_inner_opened,
        ev.ItemReceived: _on_item,
        ev.InnerEnded: _on_inner_ended,
        ev.InnerErrored: _on_inner_ended,
        ev.InnerCreditReceived: _on_inner_credit,
        ev.InnerCancelled: _on_inner_cancelled,
        ev.ConnectionDone: _on_connection_done,
        ev.ConnectionEnded: _on_connection_ended,
        # RequestAborted, InnerAborted: _on_closed fails what was open.
    }

    def _on_closed(self, error: BaseException | None) -> None:
        self._closed = True
        if error is not None and self._clean and isinstance(error, ConnectionLost):
            error = None  # EOF after both sides were done: a clean end
        self.error = error
        failure = error or ConnectionLost("connection closed", reason="closed")
        self._top_gate.fail(failure)
        requests, self._requests = self._requests, {}
        for future in requests.values():
            if not future.done():
                future.set_exception(failure)
        for flow in list(self._flows.values()):
            if flow.inbound is not None:
                flow.inbound.fail(failure)
            if flow.writer is not None:
                flow.writer._stop(failure)
        self._flows.clear()
        waiter = self._message_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        for task in list(self._tasks):
            if task is not self._closer:
                task.cancel()
        self._done.set()

    # ------------------------------------------------------------------ credit --

    def _release_top(self, consumed: int, held: bool = False) -> None:
        """Hand top-level bytes back to the peer (``held``: they were held by a message
        or request)."""
        if held:
            self._top_held -= consumed
        if self._closed or (consumed <= 0 and self._top_held):
            return
        grant = self._top_regrant.delivered(consumed) if consumed > 0 else 0
        if not self._top_held:
            grant += self._top_regrant.flush()
        if grant:
            try:
                self.engine.grant(grant)
            except ProtocolError:
                return  # the connection failed: nothing to grant to
            self._top_mirror = self.engine.peer_top_level_credit
            self._queued()

    def _grant_inner(self, inbound: _Inbound, credit: int) -> None:
        if self._closed or inbound.finished:
            return
        try:
            self.engine.grant_inner(inbound.inner_id, credit)
        except ProtocolError:
            return  # the stream ended meanwhile
        inbound.mirror = self.engine.peer_inner_credit(inbound.inner_id)
        self._queued()

    def _cancel_inbound(self, inbound: _Inbound) -> None:
        if not self._closed:
            try:
                self.engine.cancel_inner(inbound.inner_id)
            except ProtocolError:
                pass  # the peer ended it in the same instant, or the connection is gone
            self._queued()
        self._inbound_done(inbound)

    def _inbound_done(self, inbound: _Inbound) -> None:
        self._forget_flow(inbound.inner_id)

    def _outbound_done(self, writer: ItemWriter) -> None:
        self._forget_flow(writer.inner_id)

    def _forget_flow(self, inner_id: int) -> None:
        flow = self._flows.get(inner_id)
        if flow is None:
            return
        if flow.inbound is not None and not flow.inbound.finished:
            return
        if flow.writer is not None and not flow.writer.done:
            return
        del self._flows[inner_id]

    # ------------------------------------------------------------------ serving --

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = self._loop.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _next_message(self) -> tuple[bytes, int]:
        while not self._messages:
            if self._closed:
                if self.error is not None:
                    raise self.error
                raise StopAsyncIteration
            self._message_waiter = self._loop.create_future()
            try:
                await self._message_waiter
            finally:
                self._message_waiter = None
        return self._messages.popleft()

    def _release_message(self, cost: int) -> None:
        self._release_top(cost, held=True)

    async def _dispatch_messages(self) -> None:
        while True:
            try:
                payload, cost = await self._next_message()
            except StopAsyncIteration:
                return
            except ProtocolError:
                return  # the connection's end; reported on everything open
            try:
                await self.handler.on_message(payload)
            except Exception:
                log.exception("on_message failed")
            finally:
                self._release_message(cost)

    async def _respond(self, req_id: int, payload: bytes, cost: int) -> None:
        try:
            try:
                reply = await self.handler.on_request(payload)
            except Exception as error:
                answer, failed = _error_payload(error), True
            else:
                answer, failed = reply, False
            if self._responders.pop(req_id, None) is not None and not self._closed:
                if failed:
                    self.engine.respond_error(req_id, answer)
                else:
                    self.engine.respond(req_id, answer)
                self._queued()
        finally:
            self._responders.pop(req_id, None)
            self._release_top(cost, held=True)

    async def _serve_flow(self, event: ev.InnerOpened, flow: _Flow) -> None:
        handler, data = self.handler, event.payload
        writer, inbound = flow.writer, flow.inbound
        items = ItemStream(inbound) if inbound is not None else None
        try:
            result: Any
            if event.kind is ev.InnerKind.STREAM:
                assert writer is not None
                result = handler.on_stream(data, writer)
            elif event.kind is ev.InnerKind.SINK:
                assert items is not None
                result = handler.on_sink(data, items)
            else:
                assert items is not None and writer is not None
                result = handler.on_duplex(data, items, writer)
            if inspect.isawaitable(result):
                result = await result
            if result is not None and writer is not None:
                await writer.send_from(result)
            if writer is not None:
                await writer.end()
        except (StreamCancelled, asyncio.CancelledError):
            pass
        except ProtocolError as error:
            if not self._closed:
                log.warning("inner stream %d: %s", event.inner_id, error)
        except Exception as error:
            if writer is not None and not self._closed:
                try:
                    await writer.fail(error)
                except (StreamCancelled, ProtocolError):
                    pass
            else:
                log.exception("inner stream %d handler failed", event.inner_id)
        finally:
            if items is not None:
                await items.aclose()  # the handler is done with the peer's items


# --- connect / serve --------------------------------------------------------------------


class _Opening(Generic[T]):
    """``await connect(...)`` or ``async with connect(...) as peer`` (also ``serve``)."""

    def __init__(self, opener: Callable[[], Awaitable[T]]) -> None:
        self._opener = opener
        self._opened: T | None = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._open().__await__()

    async def _open(self) -> T:
        self._opened = await self._opener()
        return self._opened

    async def __aenter__(self) -> T:
        opened = await self._open()
        return await opened.__aenter__()  # type: ignore[attr-defined,no-any-return]

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        if self._opened is not None:
            await self._opened.__aexit__(kind, value, traceback)  # type: ignore[attr-defined]


def connect(url: str, handler: Handler | None = None, *, ssl: ssl_module.SSLContext | None = None,
            timeout: float | None = 10.0, capture: CaptureWriter | None = None,
            **options: Any) -> _Opening[BpmuxPeer]:  # fmt: skip
    """Open a BPMUX connection to ``url`` (any ``wirestream.runtime.aio`` scheme) as the initiator.
    ``options``: ``BpmuxPeer``'s (credit, stream_credit, greedy, ...).  ``capture``
    records every frame (``wirestream.runtime.capture``)."""

    async def opener() -> BpmuxPeer:
        transport = await open_transport(url, ssl=ssl, timeout=timeout)
        transport = tap(transport, capture, protocol="bpmux/rel", side="client")
        peer = BpmuxPeer(transport, initiator=True, handler=handler, **options)
        peer.start()
        return peer

    return _Opening(opener)


HandlerFactory = Callable[[BpmuxPeer], Handler]


class BpmuxServer:
    """Accepts BPMUX connections; ``peers`` are the open ones.  ``close()`` stops
    accepting and drops them (their streams fail with ``ConnectionLost``)."""

    def __init__(self, handler: Handler | HandlerFactory, options: dict[str, Any]) -> None:
        self._handler = handler
        self._options = options
        self.peers: set[BpmuxPeer] = set()
        self._new_peer = asyncio.Condition()
        self.listener: Listener | None = None

    @property
    def url(self) -> str:
        assert self.listener is not None
        return self.listener.url

    async def _on_transport(self, transport: Transport) -> None:
        peer = BpmuxPeer(transport, initiator=False, **self._options)
        handler = self._handler
        peer.handler = handler if isinstance(handler, Handler) else handler(peer)
        self.peers.add(peer)
        peer.start()
        async with self._new_peer:
            self._new_peer.notify_all()
        try:
            await peer.wait_closed()
        finally:
            self.peers.discard(peer)

    async def accepted(self) -> BpmuxPeer:
        """Wait for a connection (the first open one)."""
        async with self._new_peer:
            await self._new_peer.wait_for(lambda: bool(self.peers))
        return next(iter(self.peers))

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()

    async def wait_closed(self) -> None:
        if self.listener is not None:
            await self.listener.wait_closed()

    async def __aenter__(self) -> BpmuxServer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()
        await self.wait_closed()


def serve(url: str, handler: Handler | HandlerFactory, *,
          ssl: ssl_module.SSLContext | None = None, capture: CaptureWriter | None = None,
          **options: Any) -> _Opening[BpmuxServer]:  # fmt: skip
    """Accept BPMUX connections on ``url``; each gets ``handler`` (or ``handler(peer)``
    when it is a factory).  ``options``: ``BpmuxPeer``'s.  ``capture`` records every
    frame of every connection (``wirestream.runtime.capture``)."""

    async def opener() -> BpmuxServer:
        server = BpmuxServer(handler, options)
        on_transport = tap_accepted(server._on_transport, capture, protocol="bpmux/rel")
        server.listener = await listen(url, on_transport, ssl=ssl)
        return server

    return _Opening(opener)
