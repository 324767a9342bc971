"""Tasks, file descriptors and memory, sampled through the soak against their bounds.

The bounds are per connection the soak plans to hold at once (each through a proxy:
four sockets in this process, the client's, the proxy's two, the server's), so a leak
of one per connection cycle crosses them within a minute while a busy moment does not.
Memory is the resident set (``/proc/self/statm``): after the warm-up it may grow by
``MEMORY_BOUND`` at most (pymalloc keeps its arenas, so RSS does not come back down;
what must not happen is growth without end).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from tests.support.aio_support import open_fds
from tests.support.chaos.ledger import Ledger

__all__ = [
    "ResourceWatch",
    "rss_bytes",
    "TASKS_PER_CONNECTION",
    "FDS_PER_CONNECTION",
    "MEMORY_BOUND",
]

TASKS_PER_CONNECTION = 12
"""A connection runs a reader task per side, the proxy two pumps and an accept task, and a
few streams' publishers and handlers; 12 is well above that and below a leak's pace."""

FDS_PER_CONNECTION = 6  # four sockets through a proxy; slack for a bad peer's one or two
MEMORY_BOUND = 384 * 1024 * 1024
"""Bytes of RSS growth after the warm-up.  Measured: the 60 s soak grows ~20-60 MiB
after it (large elements of new streams landing in fresh arenas); a leak of the
streams' elements (hundreds of MiB a minute) crosses it."""

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * _PAGE


@dataclass
class ResourceWatch:
    ledger: Ledger
    connections: int  # planned at once
    tasks_base: int = 0
    fds_base: int = 0
    rss_base: int = 0
    rss_warm: int | None = None  # the resident set at the end of the warm-up
    tasks_peak: int = 0
    fds_peak: int = 0
    rss_peak: int = 0
    links_peak: int = 0  # proxied connections open at once
    _reported: bool = False

    def __post_init__(self) -> None:
        self.tasks_base = len(asyncio.all_tasks())
        self.fds_base = open_fds()
        self.rss_base = rss_bytes()

    @property
    def task_bound(self) -> int:
        return self.tasks_base + 64 + TASKS_PER_CONNECTION * self.connections

    @property
    def fd_bound(self) -> int:
        return self.fds_base + 64 + FDS_PER_CONNECTION * self.connections

    def warmed_up(self) -> None:
        self.rss_warm = rss_bytes()

    def sample(self, links: int) -> None:
        tasks, fds, rss = len(asyncio.all_tasks()), open_fds(), rss_bytes()
        self.tasks_peak = max(self.tasks_peak, tasks)
        self.fds_peak = max(self.fds_peak, fds)
        self.rss_peak = max(self.rss_peak, rss)
        self.links_peak = max(self.links_peak, links)
        over = []
        if tasks > self.task_bound:
            over.append(f"{tasks} tasks > {self.task_bound}")
        if fds > self.fd_bound:
            over.append(f"{fds} fds > {self.fd_bound}")
        if self.rss_warm is not None and rss > self.rss_warm + MEMORY_BOUND:
            over.append(f"RSS {rss >> 20} MiB > {(self.rss_warm + MEMORY_BOUND) >> 20} MiB")
        if over and not self._reported:  # once: a leak would otherwise flood the report
            self._reported = True
            self.ledger.violation("resources past their bound: " + ", ".join(over))
