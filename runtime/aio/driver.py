"""Runs one sans-I/O engine over one transport: the only loop a peer needs.

The engine decides everything; the driver moves bytes and time (aioquic's
``QuicConnectionProtocol`` shape):

- a reader task: ``transport.read()`` -> ``engine.receive_data`` -> ``on_events(events)``
  -> write what the engine queued, and wait (``drain``) while the peer is not reading, so
  a peer that stops reading also stops being read;
- writes coalesced per loop iteration: commands queue frames in the engine and call
  ``wakeup()``; one ``call_soon`` writes everything queued (one syscall for many frames);
- the engine's timer (``get_timer``/``handle_timer``) on the loop clock, re-armed after
  every read and write;
- the end, whatever caused it (EOF, reset, a peer's protocol violation, our close, a
  time limit), reported once through ``on_closed(error)``: the peer fails every open
  stream with it;
- the time limits of ``wirestream.runtime.limits``, measured on whole frames (the
  engine's ``frames_received``), never on bytes: no first frame within
  ``handshake_timeout`` (``HandshakeTimeout``), no frame for ``idle_timeout``
  (``IdleTimeout``), a frame begun and not finished within ``frame_timeout``
  (``FrameTimeout``: the engine's ``buffered_bytes`` grew no whole frame) drop the
  connection.  While the reader waits for the peer to read what we sent, these clocks
  stop: our not reading is not the peer's silence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Final, Generic, TypeVar

from wirestream.runtime.aio.transport import Transport
from wirestream.runtime.engine import Engine
from wirestream.runtime.errors import (
    ConnectionLost,
    FrameTimeout,
    HandshakeTimeout,
    IdleTimeout,
    ProtocolError,
    TransportTimeout,
)

__all__ = ["Engine", "EngineDriver"]

EventT = TypeVar("EventT")

log = logging.getLogger("wirestream.runtime.aio")

_EARLY: Final = 0.001
"""A limit's timer that fires this close before its deadline counts as on time (the
loop runs timers up to its clock resolution early)."""


class EngineDriver(Generic[EventT]):
    """Feeds ``engine`` from ``transport`` and writes its output back (module docstring).

    Any engine that keeps the contract of ``wirestream.runtime.engine`` runs here: the
    driver passes the loop's clock as ``now`` with every read and timer.  ``on_closed``
    gets ``None`` after our own ``close()``, else the error that ended the connection
    (``ConnectionLost`` for EOF or reset, the engine's ``RemoteProtocolError`` for a
    peer violation, a ``TransportTimeout`` for a time limit).

    ``handshake_timeout``, ``idle_timeout``, ``frame_timeout``: seconds (None: no limit),
    as in ``wirestream.runtime.limits.ConnectionLimits`` (module docstring).
    """

    def __init__(
        self,
        engine: Engine[EventT],
        transport: Transport,
        on_events: Callable[[list[EventT]], None],
        on_closed: Callable[[BaseException | None], None],
        *,
        handshake_timeout: float | None = None,
        idle_timeout: float | None = None,
        frame_timeout: float | None = None,
    ) -> None:
        self.engine = engine
        self.transport = transport
        self._on_events = on_events
        self._on_closed = on_closed
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._write_scheduled = False
        self.writes = 0
        """Writes to the transport so far: its buffer grows only with one (``backed_up``
        callers may skip asking again while this has not moved since it said no)."""
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._eof_fed = False
        self.error: BaseException | None = None
        """What ended the connection (None while open or after a clean ``close``)."""
        self._done = asyncio.Event()
        # The time limits (``_watch_*``): when the transport started, the last whole frame
        # arrived, the frame being received began; while the reader waits on drain, the
        # clocks stop (``_paused_since``).
        self._handshake_timeout = handshake_timeout
        self._idle_timeout = idle_timeout
        self._frame_timeout = frame_timeout
        self._frames = 0
        self._started_at = 0.0
        self._last_frame_at = 0.0
        self._partial_since: float | None = None
        self._paused_since: float | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._watch_at: float | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        now = self._loop.time()
        self._started_at = self._last_frame_at = now
        self._arm_watch()
        self.wakeup()
        self._reader = self._loop.create_task(self._read_loop(), name=f"read {self.transport}")

    @property
    def closed(self) -> bool:
        return self._closed

    async def _read_loop(self) -> None:
        transport = self.transport
        error: BaseException | None = None
        try:
            while True:
                try:
                    data = await transport.read()
                except ConnectionLost as lost:
                    error = lost
                    data = b""
                if self._closed:
                    break  # closed or aborted by us meanwhile
                try:
                    events = self._receive(data)
                except ProtocolError as violation:
                    # The engine queued the closing frame it prescribes (ERROR ...); what
                    # came before the violation is still delivered.
                    error = violation
                    self._eof_fed = True
                    self._write_now()
                    if violation.events:
                        self._on_events(self._events_of(violation.events))
                    break
                self._write_now()
                if not data:
                    self._eof_fed = True
                else:
                    self._progress()
                if events:
                    self._on_events(events)
                if not data:
                    if error is None:
                        error = ConnectionLost(f"{transport.peer}: closed by peer")
                    break
                if transport.backed_up():
                    self._paused_since = self._loop.time()
                    try:
                        await transport.drain()
                    finally:
                        self._resume_clocks()
        except ConnectionLost as lost:
            error = lost
        except asyncio.CancelledError:
            pass
        finally:
            self._finish(error)

    def _finish(self, error: BaseException | None) -> None:
        if self._closed:
            return
        self._closed = True
        self.error = error
        if not self._eof_fed:
            # The engine learns the transport is gone (it ends or parks its streams).
            self._eof_fed = True
            try:
                events = self._receive(b"")
            except ProtocolError:
                events = []
            if events:
                self._on_events(events)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if error is not None and not isinstance(error, ConnectionLost):
            self.transport.close()  # a peer violation: the ERROR is queued, then close
        elif not self.transport.is_closing:
            self.transport.close()
        try:
            self._on_closed(error)
        finally:
            self._done.set()

    def _receive(self, data: bytes) -> list[EventT]:
        return self.engine.receive_data(data, self._loop.time())

    @staticmethod
    def _events_of(events: Sequence[object]) -> list[EventT]:
        # ProtocolError.events is typed for every engine at once (Sequence[object]); the
        # engine that raised it produced them, so they are its events.
        return list(events)  # type: ignore[arg-type]

    def rebind(self, on_events: Callable[[list[EventT]], None],
               on_closed: Callable[[BaseException | None], None]) -> None:  # fmt: skip
        """Deliver to another owner from now on (a resumed session adopting this
        connection)."""
        self._on_events = on_events
        self._on_closed = on_closed

    def shutdown(self, error: BaseException | None = None) -> None:
        """Write what is queued, then close the transport (without waiting)."""
        if not self._closed:
            self._write_now()
            self.transport.close()
            self._finish(error)

    async def close(self) -> None:
        """Write what is queued, close the transport and wait for the reader to end."""
        self.shutdown()
        await self.wait_closed()

    def abort(self, error: BaseException | None = None) -> None:
        """Drop the transport now (nothing more is written)."""
        self.transport.abort()
        self._finish(error or ConnectionLost(f"{self.transport.peer}: aborted", reason="reset"))

    async def wait_closed(self) -> None:
        await self._done.wait()
        reader = self._reader
        if reader is not None and reader is not asyncio.current_task():
            if not reader.done():
                reader.cancel()
            try:
                await reader
            except asyncio.CancelledError:
                pass
        await self.transport.wait_closed()

    # ------------------------------------------------------------------ writing

    def wakeup(self) -> None:
        """The engine has output (or a new deadline): write it this loop iteration."""
        if not self._write_scheduled and not self._closed:
            self._write_scheduled = True
            self._loop.call_soon(self._write_now)

    def write_now(self) -> None:
        """Write what the engine queued at once, not at the end of this loop iteration
        (a producer that queued a lot: ``backed_up()`` then counts it)."""
        if not self._closed:
            self._write_now()

    def _write_now(self) -> None:
        self._write_scheduled = False
        data = self.engine.data_to_send()
        if data and not self.transport.is_closing:
            self.writes += 1
            try:
                self.transport.write(data)
            except ConnectionLost as lost:
                self.abort(lost)
                return
        self._arm_timer()

    def backed_up(self) -> bool:
        """More than the high-water mark is waiting for the peer."""
        return self.transport.backed_up()

    async def flush(self) -> None:
        """Write what the engine queued and wait while the peer is not reading
        (``ConnectionLost`` if the connection ended)."""
        self._write_now()
        if self._closed:
            raise self.error or ConnectionLost("connection closed", reason="closed")
        await self.transport.drain()

    # ------------------------------------------------------------------ time

    def _arm_timer(self) -> None:
        deadline = self.engine.get_timer()
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None and not self._closed:
            self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        if self._closed:
            return
        events = self.engine.handle_timer(self._loop.time())
        self._write_now()
        if events:
            self._on_events(events)

    # ------------------------------------------------------------------ limits

    def _progress(self) -> None:
        """After a read: whole frames restart the idle clock; bytes of a frame not yet
        whole start the frame clock, and only a whole frame stops it."""
        engine = self.engine
        frames = engine.frames_received
        if frames != self._frames:
            self._frames = frames
            now = self._loop.time()
            self._last_frame_at = now
            self._partial_since = now if engine.buffered_bytes else None
        elif self._partial_since is None and engine.buffered_bytes:
            self._partial_since = self._loop.time()
        else:
            return
        self._arm_watch()

    def _resume_clocks(self) -> None:
        """The reader reads again after waiting for the peer to read: the time it waited
        does not count against the peer."""
        paused, self._paused_since = self._paused_since, None
        if paused is None or self._closed:
            return
        waited = self._loop.time() - paused
        self._started_at += waited
        self._last_frame_at += waited
        if self._partial_since is not None:
            self._partial_since += waited
        self._arm_watch()

    def _next_limit(self) -> tuple[float, str] | None:
        """The earliest deadline of the time limits, and which limit it is."""
        due: tuple[float, str] | None = None
        if self._handshake_timeout is not None and not self._frames:
            due = (self._started_at + self._handshake_timeout, "handshake")
        if self._idle_timeout is not None:
            at = self._last_frame_at + self._idle_timeout
            if due is None or at < due[0]:
                due = (at, "idle")
        if self._frame_timeout is not None and self._partial_since is not None:
            at = self._partial_since + self._frame_timeout
            if due is None or at < due[0]:
                due = (at, "frame")
        return due

    def _arm_watch(self) -> None:
        # Lazily: a deadline that moved later keeps the armed timer, which finds out
        # when it fires (no timer churn per frame).
        due = self._next_limit()
        if due is None or self._closed:
            return
        at = due[0]
        if self._watch_at is not None and self._watch_at <= at:
            return
        if self._watch is not None:
            self._watch.cancel()
        self._watch_at = at
        self._watch = self._loop.call_at(at, self._on_watch)

    def _on_watch(self) -> None:
        self._watch = None
        self._watch_at = None
        if self._closed or self._paused_since is not None:
            return  # closed, or the reader waits on drain: _resume_clocks re-arms
        due = self._next_limit()
        if due is None:
            return
        at, limit = due
        if at - self._loop.time() > _EARLY:
            self._arm_watch()
            return
        error = self._limit_error(limit)
        log.info("%s: %s", type(error).__name__, error)
        self.abort(error)

    def _limit_error(self, limit: str) -> TransportTimeout:
        peer = self.transport.peer
        if limit == "handshake":
            seconds = self._handshake_timeout
            return HandshakeTimeout(f"{peer}: no whole frame within {seconds} s of connecting",
                                    limit=seconds)  # fmt: skip
        if limit == "idle":
            seconds = self._idle_timeout
            return IdleTimeout(f"{peer}: no whole frame for {seconds} s", limit=seconds)
        seconds = self._frame_timeout
        return FrameTimeout(f"{peer}: a frame begun {seconds} s ago is still not complete "
                            f"({self.engine.buffered_bytes} bytes of it arrived)",
                            limit=seconds)  # fmt: skip
