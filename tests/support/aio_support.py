"""Running asyncio tests without a plugin, and proving they leak nothing.

``run(coro)`` runs the coroutine in a fresh event loop with a deadline (a hang is a
failure, not a stuck CI job), then asserts that no task is left behind and that the
process holds no more file descriptors (sockets) than before.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run", "open_fds", "assert_no_tasks_left"]

T = TypeVar("T")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def assert_no_tasks_left() -> None:
    """Call inside the loop at the end of a test: every task but the caller is done."""
    current = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not left, f"tasks left running: {left}"


def run(coro: Coroutine[Any, Any, T], timeout: float = 30.0, *, check_leaks: bool = True) -> T:
    """``asyncio.run(coro)`` with a ``timeout`` and leak checks (tasks, file descriptors)."""
    gc.collect()
    before = open_fds()

    async def main() -> T:
        async with asyncio.timeout(timeout):
            result = await coro
        # let callbacks scheduled by closes run (transport connection_lost etc.)
        for _ in range(5):
            await asyncio.sleep(0)
        if check_leaks:
            pending = [
                t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()
            ]
            if pending:
                await asyncio.sleep(0.05)  # a close handshake finishing
                pending = [t for t in pending if not t.done()]
            assert not pending, f"tasks left running: {pending}"
        return result

    result = asyncio.run(main())
    if check_leaks:
        gc.collect()
        after = open_fds()
        assert after <= before, f"file descriptors leaked: {before} before, {after} after"
    return result
