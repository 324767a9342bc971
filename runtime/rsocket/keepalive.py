"""Keepalive timing: when the client's next KEEPALIVE is due and when the peer has been
silent too long.

Protocol.md, KEEPALIVE Frame: "KEEPALIVE frames MUST be initiated by the client and sent
periodically with the (R)espond flag set."  SETUP Frame: "Time Between KEEPALIVE Frames"
and "Max Lifetime: Time (in milliseconds) that a client will allow a server to not
respond to a KEEPALIVE before it is assumed to be dead."  Times come in from the engine's
caller (``now``, seconds); the SETUP's are milliseconds.
"""

from __future__ import annotations

from wirestream.runtime.rsocket.events import SetupInfo

__all__ = ["KeepaliveTimer"]


class KeepaliveTimer:
    """The deadlines of one connection; idle until ``start`` (the SETUP is sent, accepted
    or resumed)."""

    __slots__ = ("next_send", "last_heard", "_interval", "_lifetime", "_dead_reported")

    def __init__(self) -> None:
        self.next_send: float | None = None  # the client's next KEEPALIVE
        self.last_heard = 0.0  # the peer's last KEEPALIVE (or the start)
        self._interval = 0.0
        self._lifetime = 0.0  # 0: not started, or no Max Lifetime
        self._dead_reported = False

    def start(self, now: float, setup: SetupInfo, sends: bool) -> None:
        """Start the clocks of ``setup``; ``sends``: we are the client, who sends them."""
        self.last_heard = now
        self._dead_reported = False
        self._interval = setup.keepalive_interval / 1000
        self._lifetime = setup.max_lifetime / 1000
        if sends and setup.keepalive_interval:
            self.next_send = now + self._interval

    def heard(self, now: float) -> None:
        # "Reception of a KEEPALIVE by a server indicates to the server that the client is
        # alive" (and the other way round).
        self.last_heard = now
        self._dead_reported = False

    def deadline(self) -> float | None:
        """The next time ``send_due`` or ``dead`` may change their answer."""
        deadlines = []
        if self.next_send is not None:
            deadlines.append(self.next_send)
        if self._lifetime and not self._dead_reported:
            deadlines.append(self.last_heard + self._lifetime)
        return min(deadlines) if deadlines else None

    def send_due(self, now: float) -> bool:
        """Whether a KEEPALIVE is due now; the next is then one interval later (skipping
        intervals that already went by)."""
        if self.next_send is None or now < self.next_send:
            return False
        self.next_send += self._interval
        if self.next_send <= now:
            self.next_send = now + self._interval
        return True

    def dead(self, now: float) -> float | None:
        """How long the peer has been silent, the first time that exceeds Max Lifetime
        (reported once until it is heard again); None otherwise."""
        if not self._lifetime or self._dead_reported:
            return None
        silent = now - self.last_heard
        if silent < self._lifetime:
            return None
        self._dead_reported = True
        return silent
