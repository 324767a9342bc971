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
- the end, whatever caused it (EOF, reset, a peer's protocol violation, our close),
  reported once through ``on_closed(error)``: the peer fails every open stream with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from wirestream.runtime.aio.transport import Transport
from wirestream.runtime.engine import Engine
from wirestream.runtime.errors import ConnectionLost, ProtocolError

__all__ = ["Engine", "EngineDriver"]

EventT = TypeVar("EventT")


class EngineDriver(Generic[EventT]):
    """Feeds ``engine`` from ``transport`` and writes its output back (module docstring).

    Any engine that keeps the contract of ``wirestream.runtime.engine`` runs here: the
    driver passes the loop's clock as ``now`` with every read and timer.  ``on_closed``
    gets ``None`` after our own ``close()``, else the error that ended the connection
    (``ConnectionLost`` for EOF or reset, the engine's ``RemoteProtocolError`` for a
    peer violation).
    """

    def __init__(
        self,
        engine: Engine[EventT],
        transport: Transport,
        on_events: Callable[[list[EventT]], None],
        on_closed: Callable[[BaseException | None], None],
    ) -> None:
        self.engine = engine
        self.transport = transport
        self._on_events = on_events
        self._on_closed = on_closed
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._write_scheduled = False
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._eof_fed = False
        self.error: BaseException | None = None
        """What ended the connection (None while open or after a clean ``close``)."""
        self._done = asyncio.Event()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
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
                if events:
                    self._on_events(events)
                if not data:
                    if error is None:
                        error = ConnectionLost(f"{transport.peer}: closed by peer")
                    break
                if transport.backed_up():
                    await transport.drain()
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
