"""``run_soak``: the whole soak, start to report (package docstring).

Timeline: servers and proxies start; every client, the bad peers and the fault injector
run at once until ``seconds`` have passed (the first quarter is the warm-up, after which
memory may grow by ``resources.MEMORY_BOUND`` at most); then the stop: each worker
finishes the cycle it is in (each within its deadline), RabbitMQ producers drain and
their streams are checked, everything closes, and tasks and file descriptors must come
back to where they were before the start.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from wirestream.runtime.rabbitmq_stream.aio import connect as rabbitmq_connect
from tests.support.aio_support import open_fds
from tests.support.chaos import bpmux_load, rabbitmq_load, rsio_load, rsocket_load
from tests.support.chaos.bad_peers import BadPeers
from tests.support.chaos.context import CYCLE_LIMIT, LIMITS, Soak
from tests.support.chaos.faults import FaultInjector
from tests.support.chaos.ledger import MAX_ELEMENTS, MAX_STREAM_BYTES, Ledger
from tests.support.chaos.resources import ResourceWatch, rss_bytes
from tests.support.rabbitmq_broker import STREAM_PORT
from tests.support.rabbitmq_stream_client_support import uri as rabbitmq_uri
from tests.support.tcp_proxy import TcpProxy

__all__ = ["Load", "SoakReport", "run_soak"]

STOP_LIMIT = CYCLE_LIMIT + rabbitmq_load.DRAIN_LIMIT + 30.0
"""Seconds the workers have after the stop to finish their cycles."""

SETTLE_LIMIT = 15.0  # seconds for tasks and sockets to be back where they were


@dataclass(frozen=True)
class Load:
    """Workers of each kind running at once (each holds one connection at a time; a
    RabbitMQ stream holds two)."""

    rsocket_resumable: int
    rsocket: int
    rsio: int
    bpmux: int
    rabbitmq_streams: int
    bad_clients: int
    bad_server_victims: int
    fault_interval: float  # mean seconds between two injected faults
    think: float = 0.0  # mean seconds a worker idles, connected, between its streams
    max_stream_bytes: int = MAX_STREAM_BYTES
    max_elements: int = MAX_ELEMENTS
    rabbitmq_rate: float = 3_000.0  # messages a second per producer

    @property
    def connections(self) -> int:
        return (self.rsocket_resumable + self.rsocket + self.rsio + self.bpmux
                + 2 * self.rabbitmq_streams + self.bad_clients + self.bad_server_victims)  # fmt: skip

    def scaled(self, factor: float) -> Load:
        def times(n: int) -> int:
            return max(1, round(n * factor))

        return dataclasses.replace(
            self, rsocket_resumable=times(self.rsocket_resumable), rsocket=times(self.rsocket),
            rsio=times(self.rsio), bpmux=times(self.bpmux),
            rabbitmq_streams=times(self.rabbitmq_streams), bad_clients=times(self.bad_clients),
            bad_server_victims=times(self.bad_server_victims),
            fault_interval=self.fault_interval / factor,
        )  # fmt: skip


@dataclass
class SoakReport:
    seed: int
    seconds: float
    load: Load
    ledger: Ledger
    faults: Counter[str] = field(default_factory=Counter)
    watch: ResourceWatch | None = None
    stop_seconds: float = 0.0  # from the stop until every worker had finished
    tasks_after: int = 0
    fds_after: int = 0

    @property
    def violations(self) -> list[str]:
        return self.ledger.violations

    def __str__(self) -> str:
        ledger, watch = self.ledger, self.watch
        assert watch is not None
        lines = [
            f"chaos soak: seed {self.seed}, {self.seconds:.0f} s (+ {self.stop_seconds:.0f} s to "
            f"finish the last cycles), {self.load}",
            f"  connections opened: {dict(sorted(ledger.connections.items()))}; "
            f"open at once (proxied, peak): {watch.links_peak}",
            f"  streams completed: {dict(sorted(ledger.completed.items()))}",
            f"  elements / messages delivered and checked: {dict(sorted(ledger.elements.items()))}",
            f"  failed as expected (typed): {dict(sorted(ledger.failed.items()))}",
            f"  faults injected: {dict(sorted(self.faults.items()))}",
            f"  tasks {watch.tasks_base} -> peak {watch.tasks_peak} (bound {watch.task_bound}) -> "
            f"{self.tasks_after}; fds {watch.fds_base} -> peak {watch.fds_peak} "
            f"(bound {watch.fd_bound}) -> {self.fds_after}; RSS {watch.rss_base >> 20} MiB -> "
            f"warm {(watch.rss_warm or 0) >> 20} MiB -> peak {watch.rss_peak >> 20} MiB",
            f"  lost / broken invariants: {len(ledger.violations) or 'nothing'}",
        ]
        lines.extend(f"    {violation}" for violation in ledger.violations)
        return "\n".join(lines)


async def run_soak(load: Load, seconds: float, seed: int) -> SoakReport:
    """Run the soak; the report lists every broken invariant (none: nothing lost)."""
    gc.collect()
    ledger = Ledger()
    soak = Soak(ledger, asyncio.Event(), seed, think=load.think, max_stream_bytes=load.max_stream_bytes,
                max_elements=load.max_elements, rabbitmq_rate=load.rabbitmq_rate)  # fmt: skip
    watch = ResourceWatch(ledger, load.connections)
    report = SoakReport(seed, seconds, load, ledger, watch=watch)
    resident = {task for task in asyncio.all_tasks() if not task.done()}

    rsocket_server = await rsocket_load.start_server()
    rsio_server = await rsio_load.start_server()
    bpmux_server = await bpmux_load.start_server()
    servers = {"rsocket": rsocket_server.url, "rsio": rsio_server.url, "bpmux": bpmux_server.url}
    ports = {name: int(url.rsplit(":", 1)[1]) for name, url in servers.items()}
    proxies = {name: TcpProxy(port) for name, port in ports.items()}
    proxies["rabbitmq"] = TcpProxy(STREAM_PORT)
    for proxy in proxies.values():
        await proxy.start()
    via = {name: f"tcp://127.0.0.1:{proxy.port}" for name, proxy in proxies.items()}
    admin = await rabbitmq_connect(rabbitmq_uri(), reconnect=False, limits=LIMITS)
    bad = BadPeers(soak, ports)
    await bad.start_server()
    injector = FaultInjector(proxies, soak.rng("faults"), load.fault_interval)

    workers: list[Coroutine[Any, Any, None]] = []
    for n in range(load.rsocket_resumable):
        workers.append(rsocket_load.resumable_client(soak, via["rsocket"], n))
    for n in range(load.rsocket):
        workers.append(rsocket_load.plain_client(soak, via["rsocket"], n))
    for n in range(load.rsio):
        workers.append(rsio_load.client(soak, via["rsio"], n))
    for n in range(load.bpmux):
        workers.append(bpmux_load.client(soak, via["bpmux"], n))
    rabbit_uri = rabbitmq_uri(proxies["rabbitmq"].port)
    for n in range(load.rabbitmq_streams):
        workers.append(rabbitmq_load.stream_pair(soak, admin, rabbit_uri, n))
    for n in range(load.bad_clients):
        workers.append(bad.client(n))
    for n in range(load.bad_server_victims):
        workers.append(bad.victim(n))

    async def guarded(worker: Coroutine[Any, Any, None]) -> None:
        try:
            await worker
        except Exception as error:  # noqa: BLE001  (a worker's crash is a finding, named)
            ledger.violation(f"a worker crashed ({worker.cr_code.co_name}): {error!r}")  # type: ignore[attr-defined]

    async def watching() -> None:
        warm_at = time.monotonic() + seconds / 4
        while soak.running():
            watch.sample(sum(len(proxy.links) for proxy in proxies.values()))
            if watch.rss_warm is None and time.monotonic() >= warm_at:
                watch.warmed_up()
            try:
                async with asyncio.timeout(0.5):
                    await soak.stop.wait()
            except TimeoutError:
                pass

    started = time.monotonic()
    tasks = [asyncio.create_task(guarded(worker)) for worker in workers]
    tasks.append(asyncio.create_task(injector.run(soak.stop)))
    tasks.append(asyncio.create_task(watching()))
    print(
        f"chaos soak: seed {seed}, {seconds:.0f} s, {load.connections} connections at once",
        flush=True,
    )
    try:
        await asyncio.sleep(seconds)
    finally:
        soak.stop.set()
        stopping = time.monotonic()
        done, pending = await asyncio.wait(tasks, timeout=STOP_LIMIT)
        for task in pending:
            ledger.violation(f"still running {STOP_LIMIT} s after the stop: {task.get_coro()!r}")
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        report.seconds = stopping - started
        report.stop_seconds = time.monotonic() - stopping
        report.faults = Counter(injector.injected)
        report.faults.update(bad.dropped)
        await bad.close()
        await admin.close()
        for proxy in proxies.values():
            await proxy.close()
        rsocket_server.close()
        await rsocket_server.wait_closed()
        await rsio_server.close()
        await bpmux_server.__aexit__(None, None, None)
    await _settle(report, resident)
    watch.rss_peak = max(watch.rss_peak, rss_bytes())
    return report


async def _settle(report: SoakReport, resident: set[asyncio.Task[object]]) -> None:
    """Tasks back to those that ran before the start and file descriptors to their
    number then, within ``SETTLE_LIMIT``."""
    assert report.watch is not None
    deadline = time.monotonic() + SETTLE_LIMIT
    while True:
        await asyncio.sleep(0.05)
        gc.collect()
        extra = {task for task in asyncio.all_tasks() if not task.done()} - resident
        fds = open_fds()
        if (not extra and fds <= report.watch.fds_base) or time.monotonic() > deadline:
            break
    report.tasks_after = len(asyncio.all_tasks())
    report.fds_after = fds
    if extra:
        names = sorted(repr(task.get_coro()) for task in extra)[:10]
        report.ledger.violation(f"{len(extra)} tasks still running after the soak: {names}")
    if fds > report.watch.fds_base:
        report.ledger.violation(f"{fds - report.watch.fds_base} file descriptors more than before")
