"""Flow control, once: demand (items) and credit (bytes, chunks) windows.

Every engine counts what a sender may still send with a ``Window``; none re-implements
the arithmetic.  A window is seen from one side of one direction:

- ``Window.outbound_window(...)``: *we* send, the peer grants.  ``grant`` comes from the peer
  (a bad amount is ``PeerInvalidGrant``); ``consume`` is our send (too much is
  ``DemandExceeded``).
- ``Window.inbound_window(...)``: the peer sends, *we* grant.  ``grant`` is ours (a bad amount
  is ``InvalidGrant``); ``consume`` is what arrived (too much is ``PeerExceededDemand``).

The rules it implements, per protocol:

- Reactive Streams (rsio): demand is a Long; ``request(n <= 0)`` is an error (RS 3.9);
  demand accumulates up to 2^63-1 and is then "effectively unbounded" (RS 3.17):
  ``Window.outbound_window(cap=LONG_MAX, unbounded_at_cap=True)``.
- RSocket: request-n is a positive 31-bit value and there is no unbounded magic value
  ("this explicitly does NOT follow rule number 17", Protocol.md, REQUEST_STREAM):
  demand saturates at 2^31-1 and keeps counting down.
- BPMUX: credit in bytes (VarU64) at two levels: one window for top-level packets and
  one per inner stream (runtime.bpmux decides which packet consumes which).
- RabbitMQ stream: subscription credit in chunks (u16 per Credit command).
"""

from __future__ import annotations

from typing import Final

from wirestream.runtime.errors import (
    DemandExceeded,
    InvalidGrant,
    PeerExceededDemand,
    PeerInvalidGrant,
)

__all__ = ["Window", "Replenisher", "LONG_MAX", "RSOCKET_MAX_N", "VARU64_MAX"]

LONG_MAX: Final = (1 << 63) - 1  # Reactive Streams demand bound (RS 3.17)
RSOCKET_MAX_N: Final = (1 << 31) - 1  # RSocket request-n bound (31 bits)
VARU64_MAX: Final = (1 << 64) - 1  # BPMUX credit bound


class Window:
    """How much a sender may still send: granted minus consumed, saturating at ``cap``."""

    __slots__ = ("available", "cap", "unbounded_at_cap", "outbound", "granted", "consumed")

    def __init__(self, *, cap: int, unbounded_at_cap: bool = False, outbound: bool,
                 initial: int = 0) -> None:  # fmt: skip
        if cap <= 0:
            raise ValueError("cap must be positive")
        self.cap = cap
        self.unbounded_at_cap = unbounded_at_cap
        self.outbound = outbound
        self.available = 0
        self.granted = 0  # lifetime totals (Python ints: they never overflow)
        self.consumed = 0
        if initial:
            self.grant(initial)

    @classmethod
    def outbound_window(cls, *, cap: int, unbounded_at_cap: bool = False,
                        initial: int = 0) -> Window:  # fmt: skip
        """We send; the peer grants."""
        return cls(cap=cap, unbounded_at_cap=unbounded_at_cap, outbound=True, initial=initial)

    @classmethod
    def inbound_window(cls, *, cap: int, unbounded_at_cap: bool = False,
                       initial: int = 0) -> Window:  # fmt: skip
        """The peer sends; we grant."""
        return cls(cap=cap, unbounded_at_cap=unbounded_at_cap, outbound=False, initial=initial)

    @property
    def unbounded(self) -> bool:
        """RS 3.17: demand that reached 2^63-1 is never counted down again."""
        return self.unbounded_at_cap and self.available >= self.cap

    def grant(self, amount: int) -> None:
        """Add ``amount`` (must be 1..cap) to the window, saturating at ``cap``."""
        if not 0 < amount <= self.cap:
            kind = PeerInvalidGrant if self.outbound else InvalidGrant
            raise kind(f"a grant must be between 1 and {self.cap}, got {amount}")
        self.available = min(self.cap, self.available + amount)
        self.granted += amount

    def can_consume(self, amount: int = 1) -> bool:
        # ``unbounded`` spelled out: once per item, a property call was a fifth of it
        if amount <= self.available:
            return True
        return self.unbounded_at_cap and self.available >= self.cap

    def consume(self, amount: int = 1) -> None:
        """Spend ``amount`` (a sent/received item count or byte count)."""
        if amount < 0:
            raise ValueError("amount must not be negative")
        if self.unbounded_at_cap and self.available >= self.cap:  # ``unbounded``
            self.consumed += amount
            return
        if amount > self.available:
            kind = DemandExceeded if self.outbound else PeerExceededDemand
            who = "we" if self.outbound else "the peer"
            raise kind(f"{who} sent {amount} with only {self.available} granted")
        self.available -= amount
        self.consumed += amount

    def take_up_to(self, amount: int) -> int:
        """Consume as much of ``amount`` as the window allows; returns how much."""
        allowed = amount if self.unbounded else min(amount, self.available)
        self.consume(allowed)
        return allowed

    def __repr__(self) -> str:
        side = "outbound" if self.outbound else "inbound"
        shown = "unbounded" if self.unbounded else str(self.available)
        return f"<Window {side} available={shown} cap={self.cap}>"


class Replenisher:
    """When to grant more on an inbound window, like rsocket-java's ``limitRate``.

    Grant ``batch`` up front; each time ``low_tide`` items of the current batch have
    been delivered to the application, grant that many again.  So at most ``batch``
    items are ever granted but undelivered: memory stays bounded by the consumer's pace.
    """

    __slots__ = ("batch", "low_tide", "_delivered")

    def __init__(self, batch: int, low_tide: int | None = None) -> None:
        if batch <= 0:
            raise ValueError("batch must be positive")
        self.batch = batch
        self.low_tide = max(1, low_tide if low_tide is not None else batch - batch // 4)
        if self.low_tide > batch:
            raise ValueError("low_tide must not exceed batch")
        self._delivered = 0

    def delivered(self, count: int = 1) -> int:
        """Record ``count`` items handed to the application; returns the amount to grant now
        (0 most of the time)."""
        self._delivered += count
        if self._delivered >= self.low_tide:
            grant, self._delivered = self._delivered, 0
            return grant
        return 0

    def flush(self) -> int:
        """Everything delivered and not yet granted back, now (e.g. once the application
        holds nothing, so a large item cannot leave the window stuck below low tide)."""
        grant, self._delivered = self._delivered, 0
        return grant
