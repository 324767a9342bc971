"""Run a handler coroutine at once, and give it a task only if it has to wait.

Most request handlers answer without suspending (an echo, a lookup).  Starting them as a
task costs a task object and a loop iteration per request; Python 3.12's
``asyncio.eager_task_factory`` exists for this reason.  On 3.11 we do the same by hand:
step the coroutine once; if it finished, no task was needed; if it is waiting on a future,
hand the suspended coroutine to a task through ``_Resumed``, which gives the task the
future it is already waiting on and then forwards every send/throw.  A caller that steps
the coroutine itself (the RSocket responder answers a request-response handler that
finished at once without a coroutine of its own) awaits the rest through ``Continued``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["Continued", "start_eagerly"]

T = TypeVar("T")


_STARTED = object()


class _Resumed(Coroutine[Any, Any, None]):
    """The rest of an already started coroutine, as a coroutine a task can run: its
    first step hands the task the future the coroutine already waits on (a class, not a
    generator, because 3.12's tasks accept only coroutine objects)."""

    __slots__ = ("_coroutine", "_waiting_on")

    def __init__(self, coroutine: Coroutine[Any, Any, None], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def send(self, value: Any) -> Any:
        waiting_on = self._waiting_on
        if waiting_on is not _STARTED:
            self._waiting_on = _STARTED
            return waiting_on
        return self._coroutine.send(value)

    def throw(self, *error: Any) -> Any:  # cancellation included: the coroutine decides
        self._waiting_on = _STARTED
        return self._coroutine.throw(*error)

    def close(self) -> None:
        self._coroutine.close()

    def __await__(self) -> Generator[Any, None, None]:
        raise TypeError("run by a task, not awaited")


class Continued(Awaitable[T]):
    """The rest of an already started coroutine, to ``await`` from another coroutine:
    ``yield from`` by hand (the first value handed up is the one the coroutine already
    yielded, ``waiting_on``; then every send and throw goes to the coroutine).  What a
    caller that stepped a coroutine itself (to learn whether it finishes at once) awaits
    when it did not."""

    __slots__ = ("_coroutine", "_waiting_on")

    def __init__(self, coroutine: Coroutine[Any, Any, T], waiting_on: Any) -> None:
        self._coroutine = coroutine
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, T]:
        coroutine = self._coroutine
        pending = self._waiting_on
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as error:  # cancellation included: the coroutine decides
                try:
                    pending = coroutine.throw(error)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
            else:
                try:
                    pending = coroutine.send(sent)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]


def start_eagerly(
    coroutine: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop
) -> asyncio.Task[None] | None:
    """Run ``coroutine`` until it first waits; None if it finished, else its task.
    Exceptions it raises before waiting propagate to the caller."""
    try:
        waiting_on = coroutine.send(None)
    except StopIteration:
        return None
    return loop.create_task(_Resumed(coroutine, waiting_on))
