"""``BpmuxPeer``: one end of a BPMUX connection over asyncio (the package docstring
says what it does and the decisions it takes).  It runs the sans-I/O engine
(``wirestream.runtime.bpmux.engine``) with ``EngineDriver``, turns its events into the
application's handles (``handles``) and its ``Handler``'s tasks, and hands credit back
as the application consumes."""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any

from wirestream.runtime._support import write_varu64
from wirestream.runtime.aio import EngineDriver, InboundSink, StreamCancelled, Transport
from wirestream.runtime.aio.streams import YIELD_EVERY
from wirestream.runtime.bpmux import events as ev
from wirestream.runtime.bpmux.aio.gate import CreditGate
from wirestream.runtime.bpmux.aio.handler import Handler, handles_messages
from wirestream.runtime.bpmux.aio.handles import (
    BpmuxApplicationError,
    Duplex,
    ItemStream,
    ItemWriter,
    MessageStream,
    error_payload,
)
from wirestream.runtime.bpmux.engine import BpmuxConnection
from wirestream.runtime.errors import ConnectionLost, ProtocolError
from wirestream.runtime.flow import Replenisher
from wirestream.runtime.limits import ConnectionLimits

__all__ = ["BpmuxPeer", "DEFAULT_CREDIT", "DEFAULT_STREAM_CREDIT"]

log = logging.getLogger("wirestream.runtime.bpmux.aio")

DEFAULT_CREDIT = 1 << 16
"""Top-level bytes we let the peer have in flight and buffered (messages, requests)."""

DEFAULT_STREAM_CREDIT = 1 << 16
"""Inner bytes per stream we receive on (the most an ``ItemStream`` buffers)."""

DEFAULT_LIMITS = ConnectionLimits()


def _packet_size(payload: bytes, *varu64s: int) -> int:
    """Bytes of a single packet: type byte, VarU64 fields, payload length, payload
    (seed 002 layouts: Message, Request, InnerItem)."""
    size = 1 + len(write_varu64(len(payload))) + len(payload)
    for value in varu64s:
        size += len(write_varu64(value))
    return size


class _Flow:
    """One inner id, as the peer keeps it: the sink of the ``ItemStream`` we receive on
    (never the stream itself, so a dropped iterator is finalised and cancels), the
    ``ItemWriter`` we send with, the handler's task, and ``mirror``: what the engine
    still let the peer send us (``peer_inner_credit``) as of our last look."""

    __slots__ = ("inner_id", "items", "writer", "task", "mirror")

    def __init__(self, inner_id: int) -> None:
        self.inner_id = inner_id
        self.items: InboundSink[bytes] | None = None
        self.writer: ItemWriter | None = None
        self.task: asyncio.Task[None] | None = None
        self.mirror = 0


class BpmuxPeer:
    """One end of a BPMUX connection over a ``wirestream.runtime.aio`` transport (the
    package docstring of ``wirestream.runtime.bpmux.aio``).

    ``credit``: top-level bytes the peer may have in flight or held by us (buffered
    messages, requests being answered).  ``stream_credit``: the default inner window of
    the streams we receive on.  ``greedy``: allow items attached to ``open_sink`` /
    ``open_duplex`` (GreedySink/GreedyDuplex, which the peer must know).
    ``close_on_peer_close``: answer the peer's Close with ours, so the connection ends
    once nothing is open.  ``close_timeout``: how long ``close()`` waits for that.
    ``limits`` (``ConnectionLimits``): the time limits (the first packet is due
    ``handshake_timeout`` after the start: both sides begin with MainCredit) and
    ``max_streams``, inner streams the peer may have open (one more is refused:
    ``refused_streams`` counts them).
    """

    def __init__(self, transport: Transport, *, initiator: bool, handler: Handler | None = None,
                 credit: int = DEFAULT_CREDIT, stream_credit: int = DEFAULT_STREAM_CREDIT,
                 greedy: bool = False, close_on_peer_close: bool = True,
                 close_timeout: float = 5.0, limits: ConnectionLimits | None = None) -> None:  # fmt: skip
        if credit <= 0 or stream_credit <= 0:
            raise ValueError("credit and stream_credit must be positive")
        limits = limits or DEFAULT_LIMITS
        self.limits = limits
        self.engine = BpmuxConnection(initiator=initiator, initial_credit=credit,
                                      auto_credit=False, greedy=greedy,
                                      max_streams=limits.max_streams)  # fmt: skip
        self.handler = handler if handler is not None else Handler()
        self.credit = credit
        self.stream_credit = stream_credit
        self.close_on_peer_close = close_on_peer_close
        self.close_timeout = close_timeout
        self._loop = asyncio.get_running_loop()
        # The driver also delivers the events of the packets before a violation.
        self._driver = EngineDriver(self.engine, transport, self._on_events, self._on_closed,
                                    handshake_timeout=limits.handshake_timeout,
                                    idle_timeout=limits.idle_timeout,
                                    frame_timeout=limits.frame_timeout)  # fmt: skip
        self.refused_streams = 0
        """Inner streams the peer created beyond ``limits.max_streams`` (refused)."""
        # top level: sending waits here; receiving holds and hands back credit
        self._top_gate = CreditGate()
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
        if handles_messages(self.handler):
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
        ``BpmuxApplicationError``.  Cancelling the caller sends RequestCancel (L45)."""
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

        def create() -> ItemStream:
            flow = _Flow(engine.open_stream(data, window))
            stream = self._item_stream(flow, window, granted=window)  # with the packet
            self._flows[flow.inner_id] = flow
            return stream

        stream = await self._top_gate.run(create, lambda stream: stream.sink.cancel_once())
        self._queued()
        return stream

    async def open_sink(self, data: bytes = b"", *, items: list[bytes] | None = None) -> ItemWriter:
        """CreateSink (L53): we send items once the peer grants inner credit.  ``items``
        (needs ``greedy``): GreedySink, items paid with top-level credit."""
        engine = self.engine

        def create() -> ItemWriter:
            flow = _Flow(engine.open_sink(data, items))
            writer = flow.writer = self._item_writer(flow.inner_id)
            self._flows[flow.inner_id] = flow
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
            flow = _Flow(engine.open_duplex(data, window, items))
            stream = self._item_stream(flow, window, granted=window)
            writer = flow.writer = self._item_writer(flow.inner_id)
            self._flows[flow.inner_id] = flow
            return Duplex(stream, writer)

        duplex = await self._top_gate.run(create, lambda duplex: duplex.items.sink.cancel_once())
        self._queued()
        return duplex

    def messages(self) -> MessageStream:
        """The peer's messages, for ``async for`` (when the handler has no ``on_message``)."""
        return MessageStream(self._next_message, self._release_message)

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
            if flow.items is not None:
                flow.items.cancel_once()  # the engine sent CancelAll: nothing more to send

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
        # an ended engine (failed on a packet after the peer's Close) sends no Close
        if not self._close_sent and not self._closed and not self.engine.closed:
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
            if flow is not None and flow.items is not None:
                flow.items.release(left)
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

    def _on_message(self, event: ev.BpmuxMessageReceived) -> None:
        cost = self._take_top(_packet_size(event.payload))
        self._messages.append((event.payload, cost))
        waiter = self._message_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_request(self, event: ev.BpmuxRequestReceived) -> None:
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
            future.set_exception(BpmuxApplicationError(event.payload))

    def _on_request_cancelled(self, event: ev.RequestCancelled) -> None:
        task = self._responders.pop(event.req_id, None)
        if task is not None:
            task.cancel()

    def _on_inner_opened(self, event: ev.InnerOpened) -> None:
        inner_id = event.inner_id
        flow = _Flow(inner_id)
        self._flows[inner_id] = flow
        if event.we_send:
            flow.writer = self._item_writer(inner_id)
        # A sink or duplex starts without inner credit (L53, L55): the stream grants it.
        stream = (
            self._item_stream(flow, self.stream_credit, granted=0) if event.we_receive else None
        )
        flow.task = self._spawn(self._serve_flow(event, flow, stream), f"bpmux inner {inner_id}")

    def _on_inner_refused(self, event: ev.InnerRefused) -> None:
        self.refused_streams += 1
        log.debug("inner stream %d refused: %s", event.inner_id, event.reason)

    def _on_item(self, event: ev.ItemReceived) -> None:
        flow = self._flows.get(event.inner_id)
        sink = flow.items if flow is not None else None
        if flow is None or sink is None or sink.finished:
            return
        unassigned = self._inner_unassigned
        if event.inner_id not in unassigned:
            available = self.engine.peer_inner_credit(event.inner_id)
            unassigned[event.inner_id] = flow.mirror - available
            flow.mirror = available
        estimate = _packet_size(event.payload, event.inner_id)
        cost = min(estimate, unassigned[event.inner_id])
        unassigned[event.inner_id] -= cost
        sink.push_costed(event.payload, cost)

    def _on_inner_ended(self, event: ev.InnerEnded | ev.InnerErrored) -> None:
        flow = self._flows.get(event.inner_id)
        if flow is None or flow.items is None:
            return
        if isinstance(event, ev.InnerEnded):
            flow.items.complete()
        else:
            flow.items.fail(BpmuxApplicationError(event.payload))
        self._forget_flow(flow)

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
        if flow.items is None and flow.task is not None:
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
        ev.BpmuxMessageReceived: _on_message,
        ev.BpmuxRequestReceived: _on_request,
        ev.ResponseReceived: _on_response,
        ev.ResponseErrorReceived: _on_response,
        ev.RequestCancelled: _on_request_cancelled,
        ev.InnerOpened: _on_inner_opened,
        ev.InnerRefused: _on_inner_refused,
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
            if flow.items is not None:
                flow.items.fail(failure)
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

    def _item_stream(self, flow: _Flow, credit: int, *, granted: int) -> ItemStream:
        """The ``ItemStream`` of ``flow``: its grants and its cancel go to the engine."""
        stream = ItemStream(flow.inner_id, lambda more: self._grant_inner(flow, more),
                            lambda: self._cancel_inbound(flow), credit=credit,
                            granted=granted)  # fmt: skip
        if granted:
            flow.mirror = granted
        flow.items = stream.sink
        return stream

    def _item_writer(self, inner_id: int) -> ItemWriter:
        return ItemWriter(self.engine, inner_id, sent=self._sent, done=self._outbound_done)

    def _grant_inner(self, flow: _Flow, credit: int) -> None:
        if self._closed or (flow.items is not None and flow.items.finished):
            return
        try:
            self.engine.grant_inner(flow.inner_id, credit)
        except ProtocolError:
            return  # the stream ended meanwhile
        flow.mirror = self.engine.peer_inner_credit(flow.inner_id)
        self._queued()

    def _cancel_inbound(self, flow: _Flow) -> None:
        if not self._closed:
            try:
                self.engine.cancel_inner(flow.inner_id)
            except ProtocolError:
                pass  # ended by the peer in the same instant, by CancelAll, or the connection is gone
            self._queued()
        self._forget_flow(flow)

    def _outbound_done(self, writer: ItemWriter) -> None:
        flow = self._flows.get(writer.inner_id)
        if flow is not None:
            self._forget_flow(flow)

    def _forget_flow(self, flow: _Flow) -> None:
        if flow.items is not None and not flow.items.finished:
            return
        if flow.writer is not None and not flow.writer.done:
            return
        if self._flows.get(flow.inner_id) is flow:
            del self._flows[flow.inner_id]

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
                answer, failed = error_payload(error), True
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

    async def _fail_flow(self, writer: ItemWriter | None, error: Exception,
                         inner_id: int) -> None:  # fmt: skip
        """End our side of an inner stream whose handler failed with InnerError (L69)."""
        if writer is not None and not self._closed:
            try:
                await writer.fail(error)
            except (StreamCancelled, ProtocolError):
                pass
        else:
            log.exception("inner stream %d handler failed", inner_id, exc_info=error)

    async def _serve_flow(self, event: ev.InnerOpened, flow: _Flow,
                          items: ItemStream | None) -> None:  # fmt: skip
        handler, data, writer = self.handler, event.payload, flow.writer
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
        except BpmuxApplicationError as error:  # an error answer (the handler's or the peer's)
            await self._fail_flow(writer, error, event.inner_id)
        except ProtocolError as error:
            if not self._closed:
                log.warning("inner stream %d: %s", event.inner_id, error)
        except Exception as error:
            await self._fail_flow(writer, error, event.inner_id)
        finally:
            if items is not None:
                await items.aclose()  # the handler is done with the peer's items
