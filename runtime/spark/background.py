"""An asyncio loop on a daemon thread: how the Spark helpers run asyncio clients and
servers beside Spark's synchronous calls.

Spark reads a partition through a generator, writes one through a function and asks a
stream reader for offsets, all on plain threads; a client living on this loop keeps
reading its socket (credit, confirms, heartbeats, demand) while Spark's thread works on
rows.  The thread is a daemon because PySpark may end a reader's process without
calling ``stop()``, and that process must not wait for the loop to exit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from wirestream.runtime.errors import TransportTimeout

__all__ = ["BackgroundLoop", "CLOSE_TIMEOUT"]

CLOSE_TIMEOUT: Final = 30.0
"""Seconds ``close`` gives what is left on the loop to finish."""

T = TypeVar("T")


class BackgroundLoop:
    """``run`` waits for one coroutine's outcome; ``submit`` starts one and returns its
    future; ``call`` schedules a plain function; ``close`` cancels whatever is left and
    stops the thread (idempotent)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """The coroutine's result (or exception), run on the loop; ``TransportTimeout``
        when it takes longer than ``timeout`` seconds (it is cancelled)."""
        future = self.submit(coroutine)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TransportTimeout(f"{self.name}: no outcome within {timeout} s") from None

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call(self, function: Callable[[], None]) -> None:
        self.loop.call_soon_threadsafe(function)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def cancel_the_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            if self._thread.is_alive():
                self.run(cancel_the_rest(), CLOSE_TIMEOUT)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(CLOSE_TIMEOUT)
            if not self._thread.is_alive():
                self.loop.close()
