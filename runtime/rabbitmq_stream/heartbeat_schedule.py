"""When a RabbitMQ stream client sends a Heartbeat and when it gives the broker up.

'Heartbeat => Key Version' (PROTOCOL.adoc), negotiated by Tune in seconds. The schedule
is 3.10.8's rabbit_heartbeat: a check every half interval; a Heartbeat goes out when
nothing was sent during a whole check period (so the broker hears from us at least once
per interval); the broker is dead when nothing arrived for 2 intervals (4 silent
checks). Time is the caller's (``now``), never read here.
"""

from __future__ import annotations

from typing import Final

__all__ = ["HeartbeatSchedule"]

_SILENT_CHECKS: Final = 4


class HeartbeatSchedule:
    """The checks of one connection; ``received`` is set by whoever reads the socket."""

    __slots__ = ("next_check", "received", "_silent_checks")

    def __init__(self) -> None:
        self.next_check: float | None = None  # None: not started (or stopped)
        self.received = False  # bytes arrived since the last check
        self._silent_checks = 0

    def start(self, now: float, heartbeat: int) -> None:
        self.next_check = now + heartbeat / 2
        self.received = False
        self._silent_checks = 0

    def stop(self) -> None:
        self.next_check = None

    def check(self, now: float, heartbeat: int) -> float | None:
        """The check due at ``now`` (``next_check`` reached): schedules the next one;
        returns the broker's silence in seconds when it is dead, else None."""
        period = heartbeat / 2
        self.next_check = now + period
        if self.received:
            self._silent_checks = 0
        else:
            self._silent_checks += 1
        self.received = False
        if self._silent_checks >= _SILENT_CHECKS:
            return self._silent_checks * period
        return None
