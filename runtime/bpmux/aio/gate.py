"""Senders waiting for BPMUX credit, first come first served (``CreditGate``).

The engine refuses a packet its credit cannot pay for (``CreditExceeded``, changing
nothing) and is the only judge of what a packet costs, so a command that was refused is
simply run again when the peer grants more.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any, TypeVar

from wirestream.runtime.bpmux.errors import CreditExceeded

__all__ = ["CreditGate"]

R = TypeVar("R")


class CreditGate:
    """Senders waiting for credit on one window (top level, or one inner stream).

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
