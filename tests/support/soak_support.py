"""Soak measuring (issue 17, "Soak, in tests"): run one cycle many times and prove that
memory, asyncio tasks and file descriptors end where they started.

``soak(cycle, count, warmup=...)`` runs ``warmup`` cycles first, so that what is
allocated once and kept by design is there before measuring: asyncio's and the codecs'
caches, free lists, the selector's fd map at its largest, lazily imported modules, and
bounded memories such as BPMUX's ended inner ids (a warm-up must fill those).  Then:

- tasks: every task started by the cycles must end.  ``settle`` waits (bounded) until the
  live tasks are exactly those alive when ``soak`` was called (the connection under test,
  the server's listener); a task still running after ``SETTLE_TIMEOUT`` is a leak (or a
  hang) and fails with its name.
- file descriptors: ``/proc/self/fd`` has as many entries after the run as before.
- memory: ``tracemalloc`` traces from the start of the warm-up; the traced memory after
  the warm-up and after the cycles (each after settling and ``gc.collect()``) may differ
  by at most ``TOLERANCE_BLOCKS`` blocks and ``TOLERANCE_BYTES`` bytes.  Tracing the warm-up too matters: a bounded memory
  that replaces its oldest entries (allocated during the warm-up) with new ones (during
  the cycles) is flat only if the old ones' release is counted, and tracemalloc counts
  the release of the blocks it traced only.

Tracing slows Python about threefold; the figures printed are of the traced cycles.
"""

from __future__ import annotations

import asyncio
import gc
import resource
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from tests.support.aio_support import open_fds

__all__ = [
    "SoakReport",
    "soak",
    "settle",
    "fd_limit",
    "fds_for",
    "somaxconn",
    "TOLERANCE_BLOCKS",
    "TOLERANCE_BYTES",
    "SETTLE_TIMEOUT",
]

TOLERANCE_BLOCKS = 1_000
"""How many more memory blocks (objects, buffers) tracemalloc may count after the cycles
than before.  Measured: a few dozen, one-off.  A leak keeps at least one object per
cycle (or per few cycles): 10,000 cycles make that 10,000 blocks, or a few thousand."""

TOLERANCE_BYTES = 256 * 1024
"""How many more bytes.  Measured: a few KiB, except where a bounded memory's hash table
is at another size than before (BPMUX remembers its last 1,024 ended inner ids per side
in an ``OrderedDict``; rotating through it reallocates its table: +104 KiB seen, same
block count), which ``TOLERANCE_BLOCKS`` does not see as growth.  What this catches is
a buffer growing in place (a list or bytearray that gains 27 bytes a cycle or more)."""

SETTLE_TIMEOUT = 5.0
"""How long the tasks a cycle started may take to end once the cycles are done (a
server finishing the last connection's close)."""


@dataclass(frozen=True)
class SoakReport:
    cycles: int
    seconds: float  # the measured cycles, traced (wall clock)
    cpu_seconds: float  # the same, this process's CPU time (the machine may be shared)
    retained_bytes: int  # traced memory after the cycles minus before them
    retained_blocks: int  # traced memory blocks (objects, buffers): after minus before
    peak_bytes: int  # the traced peak during the cycles, above the memory before them
    tasks_before: int
    tasks_after: int
    fds_before: int
    fds_after: int

    def __str__(self) -> str:
        return (
            f"{self.cycles} cycles in {self.seconds:.1f} s ({self.cpu_seconds:.1f} s CPU, "
            f"traced): memory retained "
            f"{self.retained_bytes} B in {self.retained_blocks} blocks (peak +{self.peak_bytes} B), "
            f"tasks "
            f"{self.tasks_before} -> {self.tasks_after}, fds {self.fds_before} -> "
            f"{self.fds_after}"
        )


def _live_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if not task.done()}


async def settle(resident: set[asyncio.Task[object]], idle: Callable[[], bool]) -> None:
    """Wait until only ``resident`` tasks run and ``idle()`` holds; fail after
    ``SETTLE_TIMEOUT`` naming what is still running."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        for _ in range(3):
            await asyncio.sleep(0)  # callbacks scheduled by closes (connection_lost)
        extra = _live_tasks() - resident
        if not extra and idle():
            return
        if time.monotonic() > deadline:
            names = sorted(task.get_name() + ": " + repr(task.get_coro()) for task in extra)
            pytest.fail(f"not settled {SETTLE_TIMEOUT} s after the cycles: idle()={idle()},"
                        f" tasks still running: {names}")  # fmt: skip
        await asyncio.sleep(0.005)


async def soak(
    cycle: Callable[[int], Awaitable[None]],
    count: int,
    *,
    warmup: int,
    idle: Callable[[], bool] = lambda: True,
) -> SoakReport:
    """Run ``cycle(i)`` ``warmup`` times, then ``count`` times, and assert memory,
    tasks and fds flat (module docstring).  ``idle()``: the system under test has
    forgotten the cycles (e.g. the server holds no connection); waited for like tasks."""
    resident = _live_tasks()
    gc.collect()
    gc.freeze()  # what the test process held before: not rescanned by every full collection
    tracemalloc.start()
    try:
        for i in range(warmup):
            await cycle(i)
        await settle(resident, idle)
        gc.collect()
        tasks_before = _live_tasks()
        fds_before = open_fds()
        before = tracemalloc.take_snapshot()  # to name the growth, if any
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        started, cpu_started = time.perf_counter(), time.process_time()
        for i in range(warmup, warmup + count):
            await cycle(i)
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        await settle(resident, idle)
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        after = tracemalloc.take_snapshot()
        retained = current - base
        blocks = len(after.traces) - len(before.traces)
        top = ""
        if retained > TOLERANCE_BYTES or blocks > TOLERANCE_BLOCKS:
            stats = after.compare_to(before, "lineno")[:15]
            top = "\n".join(str(stat) for stat in stats)
    finally:
        tracemalloc.stop()
        gc.unfreeze()
    report = SoakReport(count, seconds, cpu_seconds, retained, blocks, peak - base, len(tasks_before),
                        len(_live_tasks()), fds_before, open_fds())  # fmt: skip
    print(report)
    assert retained <= TOLERANCE_BYTES, f"memory grew: {report}; where:\n{top}"
    assert blocks <= TOLERANCE_BLOCKS, f"memory blocks piled up: {report}; where:\n{top}"
    assert _live_tasks() == tasks_before, f"tasks changed: {report}"
    assert report.fds_after == fds_before, f"file descriptors leaked: {report}"
    return report


@contextmanager
def fd_limit(needed: int) -> Iterator[int]:
    """Raise the soft limit on open files (RLIMIT_NOFILE) to ``needed`` if it is lower,
    for the duration; fail (never skip) when the hard limit does not allow it.  Returns
    the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        yield soft
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.fail(f"this test needs {needed} open files; the hard limit is {hard} "
                    f"(raise it: ulimit -Hn)")  # fmt: skip
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    try:
        yield needed
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def somaxconn() -> int:
    """The kernel's cap on a listener's accept queue (Linux; 4096 since 5.4)."""
    try:
        with open("/proc/sys/net/core/somaxconn") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 128


def fds_for(connections: int) -> int:
    """Open files a test with ``connections`` loopback connections (both ends in this
    process) needs: two sockets each, plus what is open now and some slack."""
    return open_fds() + 2 * connections + 64
