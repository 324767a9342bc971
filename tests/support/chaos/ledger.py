"""What each stream of the soak must deliver, and the record of how each one ended.

An element is ``b"<tag>:<index>:"`` padded with dots to its stream's element size, so a
lost, duplicated, reordered, crossed (another stream's) or cut element shows at once.  A
stream asks for ``b"<tag> <count> <size>"``.

The invariants (issue 30): a resumable stream delivers every element exactly once, in
order; any other stream either completes in order or fails with an exception of the one
``ProtocolError`` tree -- never silently short, never untyped, never past its deadline.
"""

from __future__ import annotations

import asyncio
import math
import random
import sys
import time
from collections import Counter
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from wirestream.runtime.errors import ProtocolError

__all__ = ["Ledger", "StreamSpec", "element", "parse_spec", "consume"]

T = TypeVar("T")

MAX_STREAM_BYTES = 2 * 1024 * 1024
"""A stream's elements together: big enough for several demand rounds at every size,
small enough that a throttled link (a few KiB/s for seconds) does not eat its deadline."""

MAX_ELEMENTS = 3_162  # 10^3.5

ELEMENT_SIZES = (16, 200, 1_500, 16_000, 100_000)


def element(tag: int, index: int, size: int) -> bytes:
    head = b"%d:%d:" % (tag, index)
    return head + b"." * max(0, size - len(head))


@dataclass(frozen=True)
class StreamSpec:
    tag: int
    count: int
    size: int

    def request(self) -> bytes:
        return b"%d %d %d" % (self.tag, self.count, self.size)

    @classmethod
    def draw(cls, tag: int, rng: random.Random, *, max_bytes: int = MAX_STREAM_BYTES,
             max_elements: int = MAX_ELEMENTS) -> StreamSpec:  # fmt: skip
        """Sizes of every kind: mostly small elements, some large; counts from one to
        ``max_elements`` (log-uniform), ``max_bytes`` at most together."""
        size = rng.choice(ELEMENT_SIZES)
        count = int(10 ** rng.uniform(0, math.log10(max_elements)))
        return cls(tag, max(1, min(count, max_bytes // size)), size)


def parse_spec(request: bytes) -> StreamSpec:
    tag, count, size = (int(part) for part in request.split())
    return StreamSpec(tag, count, size)


@dataclass
class Ledger:
    """Counts of what happened, by protocol, and every broken invariant."""

    started: float = field(default_factory=time.monotonic)
    completed: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)  # "protocol: ErrorType"
    elements: Counter[str] = field(default_factory=Counter)
    connections: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    _tags: int = 0

    def tag(self) -> int:
        self._tags += 1
        return self._tags

    def violation(self, what: str) -> None:
        """A broken invariant: recorded and printed at once (the run goes on, so one
        report shows every kind of failure)."""
        at = time.monotonic() - self.started
        self.violations.append(f"{at:7.1f} s  {what}")
        print(f"VIOLATION at {at:.1f} s: {what}", file=sys.stderr, flush=True)

    def failure(self, protocol: str, error: BaseException) -> None:
        """An expected failure: typed, counted by its type."""
        self.failed[f"{protocol}: {type(error).__name__}"] += 1


async def consume(
    ledger: Ledger,
    protocol: str,
    stream: AsyncIterable[T],
    data: Callable[[T], bytes],
    spec: StreamSpec,
    *,
    rng: random.Random,
    slow: bool,
    resumable: bool,
    limit: float,
) -> bool:
    """Read ``stream`` to its end checking every element as it arrives; True when it
    completed.  ``slow``: a consumer that takes up to 4 ms per element, so demand and
    credit run out and backpressure reaches the server.  ``limit``: the stream's
    deadline; passing it is a hang."""
    got = 0
    try:
        async with asyncio.timeout(limit):
            async for item in stream:
                value = data(item)
                if got >= spec.count or value != element(spec.tag, got, spec.size):
                    want = (
                        element(spec.tag, got, spec.size)[:24] if got < spec.count else b"the end"
                    )
                    ledger.violation(f"{protocol} stream {spec.tag}: element {got} of {spec.count} "
                                     f"is {value[:24]!r}, expected {want!r}")  # fmt: skip
                    return False
                got += 1
                if slow:
                    await asyncio.sleep(rng.uniform(0, 0.004))
    except ProtocolError as error:
        ledger.elements[protocol] += got
        if resumable:
            ledger.violation(f"{protocol} resumable stream {spec.tag} failed after {got} of "
                             f"{spec.count}: {error!r}")  # fmt: skip
        else:
            ledger.failure(protocol, error)
        return False
    except TimeoutError:
        ledger.violation(f"{protocol} stream {spec.tag}: no end within {limit} s "
                         f"({got} of {spec.count} elements)")  # fmt: skip
        return False
    except Exception as error:  # noqa: BLE001  (the invariant: nothing outside the tree)
        ledger.violation(f"{protocol} stream {spec.tag} failed untyped after {got}: {error!r}")
        return False
    ledger.elements[protocol] += got
    if got != spec.count:
        ledger.violation(
            f"{protocol} stream {spec.tag} ended silently short: {got} of {spec.count}"
        )
        return False
    ledger.completed[protocol] += 1
    return True
