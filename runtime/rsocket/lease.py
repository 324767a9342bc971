"""LEASE bookkeeping: the request budgets of a connection whose SETUP had the L flag.

Protocol.md, LEASE Frame: "The Requester MUST NOT send more than Number of Requests
specified in the LEASE frame within the Time-To-Live value in the LEASE"; "The last
received LEASE frame overrides all previous LEASE frame values"; "A Responder that
receives a REQUEST that it can not honor due to LEASE restrictions MUST respond with an
ERROR[REJECTED]".  Each LEASE is a request-n style budget (``runtime.flow.Window``) with
an expiry; which frames may flow before the first LEASE is the ``connection`` machine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from wirestream.runtime.flow import Window
from wirestream.runtime.rsocket.errors import NoLease

__all__ = ["LEASE_CAP", "Lease", "LeaseStatus", "Leases"]

LEASE_CAP: Final = (1 << 32) - 1  # 0.2 counts are u32, 1.0 counts 31-bit


@dataclass(frozen=True, slots=True)
class LeaseStatus:
    """What the peer's last LEASE leaves our requester: ``requests_left`` of its Number
    of Requests, until ``expires_at`` (the engine's clock: reception plus Time-To-Live).
    A snapshot; ``allows(now)`` says whether a request may go now."""

    requests_left: int
    expires_at: float

    def allows(self, now: float) -> bool:
        # "When a LEASE expires due to time, the value of the Number of Requests that a
        # Requester may make is implicitly 0."
        return now < self.expires_at and self.requests_left > 0


class Lease:
    """One LEASE: a fresh request budget and its expiry (Time-To-Live from reception)."""

    __slots__ = ("window", "expires_at")

    def __init__(self, window: Window, expires_at: float) -> None:
        self.window = window
        self.expires_at = expires_at

    def allows(self, now: float) -> bool:
        # "When a LEASE expires due to time, the value of the Number of Requests that a
        # Requester may make is implicitly 0."
        return now < self.expires_at and self.window.can_consume(1)


class Leases:
    """Both directions' budgets: the peer's LEASE bounds our requester, ours bounds the
    peer's.  ``required`` is whether the SETUP asked for leasing at all."""

    __slots__ = ("required", "_for_us", "_for_peer")

    def __init__(self) -> None:
        self.required = False
        self._for_us: Lease | None = None  # the peer's LEASE: what our requester may send
        self._for_peer: Lease | None = None  # our LEASE: what the peer's requester may send

    def restart(self, required: bool) -> None:
        """A SETUP (or a resumed session) starts over: "LEASE semantics MUST be restarted
        upon a new connection by sending a LEASE frame from the server"."""
        self.required = required
        self._for_us = self._for_peer = None

    def received(self, ttl_ms: int, number_of_requests: int, now: float) -> None:
        budget = Window.outbound_window(cap=LEASE_CAP, initial=number_of_requests)
        self._for_us = Lease(budget, now + ttl_ms / 1000)

    def sent(self, ttl_ms: int, number_of_requests: int, now: float) -> None:
        budget = Window.inbound_window(cap=LEASE_CAP, initial=number_of_requests)
        self._for_peer = Lease(budget, now + ttl_ms / 1000)

    def status(self) -> LeaseStatus | None:
        """The peer's current LEASE for our requester (None: none received since the
        connection or its last restart)."""
        lease = self._for_us
        if lease is None:
            return None
        return LeaseStatus(lease.window.available, lease.expires_at)

    def allows_request(self, now: float) -> bool:
        """Whether our requester may send a request now (always, without leasing)."""
        if not self.required:
            return True
        lease = self._for_us
        return lease is not None and lease.allows(now)

    def check_request(self, now: float) -> None:
        """(leasing) Raise ``NoLease`` unless our requester may send a request now."""
        lease = self._for_us
        if lease is None or not lease.allows(now):
            raise NoLease(
                "no valid LEASE: 'The Requester MUST NOT send more than Number of Requests"
                " specified in the LEASE frame within the Time-To-Live value in the LEASE.'"
            )

    def spend_request(self) -> None:
        """(leasing) Our request went out: "a request counts against a single lease count"."""
        if self._for_us is not None:
            self._for_us.window.consume(1)

    def admit(self, now: float) -> bool:
        """(leasing) Whether the peer's request is within our LEASE; counts it if so."""
        lease = self._for_peer
        if lease is None or not lease.allows(now):
            return False
        lease.window.consume(1)
        return True
