"""The chaos soak for a minute (issue 30, item 5; tests/support/chaos): RSocket (some
sessions resumable), rsio, BPMUX and RabbitMQ clients at once through proxies that cut,
stall and throttle at random, beside garbage-sending and trickling peers.  Nothing may be
lost (every resumable stream and every confirmed message exactly once, in order; any
other stream complete or failed with a typed error), nothing may hang past its
deadline, tasks, file descriptors and memory stay within their bounds and come back.

Fewer workers than ``make soak`` (``SOAK_LOAD``, hundreds of connections) so that it
holds on a loaded 2-core machine.  The seed is printed; ``WIRESTREAM_SOAK_SEED=<seed>``
repeats a run's random decisions.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
from collections.abc import AsyncIterator, Callable

import pytest

from wirestream.runtime.errors import ConnectionLost
from tests.support.aio_support import run
from tests.support.chaos import Load, run_soak
from tests.support.chaos.ledger import Ledger, StreamSpec, consume, element
from tests.support.chaos.__main__ import open_files
from tests.support.soak_support import fd_limit

SECONDS = 60.0
TEST_LOAD = Load(rsocket_resumable=6, rsocket=10, rsio=10, bpmux=10, rabbitmq_streams=3,
                 bad_clients=2, bad_server_victims=1, fault_interval=0.25)  # fmt: skip


def test_a_minute_of_every_protocol_under_faults_loses_nothing_and_leaks_nothing(
    rabbitmq_broker: object,
) -> None:
    seed = int(os.environ.get("WIRESTREAM_SOAK_SEED") or secrets.randbits(32))
    print(f"chaos soak seed {seed} (WIRESTREAM_SOAK_SEED={seed} repeats it)")
    with fd_limit(open_files(TEST_LOAD.connections)):
        report = run(run_soak(TEST_LOAD, SECONDS, seed), timeout=SECONDS + 400)
    print(report)
    assert not report.violations, f"seed {seed}:\n{report}"
    # the soak did what it claims: every kind of fault landed and every protocol carried
    # streams to their end meanwhile (a soak that injects nothing proves nothing)
    for kind in ("cut", "stall", "throttle"):
        assert report.faults[kind] > 0, f"no {kind} injected:\n{report}"
    assert any(key.startswith("garbage client") for key in report.faults), str(report)
    assert any(key.startswith("trickle client") for key in report.faults), str(report)
    assert any(key.startswith("bad server") for key in report.faults), str(report)
    for protocol in ("rsocket-resumable", "rsocket", "rsio", "bpmux", "rabbitmq"):
        assert report.ledger.completed[protocol] > 0, f"no {protocol} stream completed:\n{report}"


# -- the soak's own checker can fail: each broken invariant it claims to see, seen


async def _items(
    *items: bytes, then: BaseException | None = None, stall: bool = False
) -> AsyncIterator[bytes]:
    for item in items:
        yield item
    if stall:
        await asyncio.sleep(3600)
    if then is not None:
        raise then


SPEC = StreamSpec(tag=7, count=3, size=16)
GOOD = [element(7, i, 16) for i in range(3)]


def _verdict(
    stream: AsyncIterator[bytes], *, resumable: bool = False, limit: float = 5.0
) -> Ledger:
    ledger = Ledger()

    async def main() -> None:
        await consume(ledger, "p", stream, bytes, SPEC, rng=random.Random(0), slow=False,
                      resumable=resumable, limit=limit)  # fmt: skip

    run(main())
    return ledger


def test_the_checker_passes_a_complete_stream_and_counts_a_typed_failure() -> None:
    assert _verdict(_items(*GOOD)).completed["p"] == 1
    ledger = _verdict(_items(GOOD[0], then=ConnectionLost("cut")))
    assert not ledger.violations and ledger.failed["p: ConnectionLost"] == 1


@pytest.mark.parametrize(
    ("stream", "resumable", "says"),
    [
        (lambda: _items(*GOOD[:2]), False, "silently short"),
        (lambda: _items(GOOD[0], GOOD[0], GOOD[1]), False, "element 1 of 3"),
        (lambda: _items(GOOD[1]), False, "element 0 of 3"),
        (lambda: _items(*GOOD, GOOD[0]), False, "expected b'the end'"),
        (lambda: _items(GOOD[0], then=RuntimeError("boom")), False, "untyped"),
        (lambda: _items(GOOD[0], then=ConnectionLost("cut")), True, "resumable stream 7 failed"),
        (lambda: _items(GOOD[0], stall=True), False, "no end within 0.2 s"),
    ],
)
def test_the_checker_sees_every_broken_invariant(
    stream: Callable[[], AsyncIterator[bytes]], resumable: bool, says: str
) -> None:
    ledger = _verdict(stream(), resumable=resumable, limit=0.2)
    assert len(ledger.violations) == 1 and says in ledger.violations[0], ledger.violations
