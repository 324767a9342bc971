"""Requests that wait for a LEASE (asyncio): opt-in, bounded, each with a deadline.

Lease Semantics: "The Requester MUST NOT send more than Number of Requests specified in
the LEASE frame within the Time-To-Live value in the LEASE", and "Lack of LEASE frames
that stops new Requests is an application concern and SHALL NOT be handled by the
protocol".  By default a request that no LEASE allows fails at once (``NoLease``, the
engine's own refusal).  With a ``LeaseQueue`` the application chooses to wait instead,
as rsocket-java's ``maxPendingRequests`` does: at most ``max_pending`` requests wait, in
order, each at most ``deadline`` seconds; the next LEASE lets as many go as it allows.
Nothing waits unbounded: a full queue refuses (``LeaseQueueFull``), a passed deadline
fails the request unsent (``LeaseDeadlineExceeded``), and the connection's end fails
every waiter with its cause.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from wirestream.runtime.rsocket.errors import LeaseDeadlineExceeded, LeaseQueueFull

__all__ = ["LeaseQueue", "LeaseWaiters"]


@dataclass(frozen=True, slots=True)
class LeaseQueue:
    """How many requests may wait for a LEASE (``max_pending``), and for how long each
    (``deadline``, seconds)."""

    max_pending: int = 256
    deadline: float = 10.0

    def __post_init__(self) -> None:
        if self.max_pending < 1:
            raise ValueError("max_pending must be at least 1 (no queue: leave lease_queue None)")
        if not self.deadline > 0:
            raise ValueError("deadline must be a positive number of seconds")


class LeaseWaiters:
    """The requests of one connection waiting for a LEASE, first come first served.
    ``allows()`` says whether a request may go now (the engine's lease, at the loop's
    time)."""

    __slots__ = ("queue", "_allows", "_loop", "_waiting")

    def __init__(
        self, queue: LeaseQueue | None, allows: Callable[[], bool], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.queue = queue
        self._allows = allows
        self._loop = loop
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def pending(self) -> int:
        """Requests waiting now."""
        return len(self._waiting)

    def must_wait(self) -> bool:
        """Whether a new request has to queue: a queue is configured and no LEASE allows
        it now, or others wait before it (they come first)."""
        return self.queue is not None and (bool(self._waiting) or not self._allows())

    async def admit(self) -> None:
        """Return once a request may go now (then send it before the next ``await``);
        without a queue at once (the engine refuses with ``NoLease`` if it must)."""
        queue = self.queue
        if queue is None or not self.must_wait():
            return
        if len(self._waiting) >= queue.max_pending:
            raise LeaseQueueFull(
                f"no LEASE allows a request now and {queue.max_pending} requests already "
                "wait for one (LeaseQueue.max_pending)"
            )
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiting.append(future)
        deadline = asyncio.timeout(queue.deadline)
        try:
            async with deadline:
                while True:
                    await future
                    if self._allows():
                        return
                    # woken, but the budget went to those before it: first in line again
                    future = self._loop.create_future()
                    self._waiting.appendleft(future)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise LeaseDeadlineExceeded(
                f"no LEASE allowed the request within its deadline of {queue.deadline} s "
                "(it was not sent)"
            ) from None
        finally:
            # Left the line without being woken (deadline, cancelled: a task's
            # cancellation cancels the future it awaits too): out of the queue.
            if not future.done() or future.cancelled():
                future.cancel()
                try:
                    self._waiting.remove(future)
                except ValueError:
                    pass

    def wake(self, requests: int) -> None:
        """A LEASE arrived that allows ``requests`` requests: the first that many go."""
        waiting = self._waiting
        while requests > 0 and waiting:
            future = waiting.popleft()
            if not future.done():
                future.set_result(None)
                requests -= 1

    def release(self) -> None:
        """The connection is over for good: drop ``allows`` (a bound method of the peer
        that holds this object, a reference cycle); nothing is allowed any more."""
        self._allows = _nothing_allowed

    def fail(self, error: BaseException) -> None:
        """The connection ended: every waiter fails with why."""
        waiting, self._waiting = self._waiting, deque()
        for future in waiting:
            if not future.done():
                future.set_exception(error)


def _nothing_allowed() -> bool:
    return False
