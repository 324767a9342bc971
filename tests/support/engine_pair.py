"""Two sans-I/O engines wired back-to-back in memory (for the engine tests).

Every engine has ``receive_data(data) -> list[event]`` and ``data_to_send() -> bytes``;
``shuttle`` moves bytes both ways until neither side has anything left to send.
"""

from __future__ import annotations

from typing import Any, Protocol


class Engine(Protocol):
    def receive_data(self, data: bytes) -> list[Any]: ...

    def data_to_send(self) -> bytes: ...


def shuttle(a: Engine, b: Engine, *, max_rounds: int = 10_000) -> tuple[list[Any], list[Any]]:
    """Deliver a's output to b and b's to a until both are quiet; the events each received."""
    events_a: list[Any] = []
    events_b: list[Any] = []
    for _ in range(max_rounds):
        out_a, out_b = a.data_to_send(), b.data_to_send()
        if not out_a and not out_b:
            return events_a, events_b
        if out_a:
            events_b.extend(b.receive_data(out_a))
        if out_b:
            events_a.extend(a.receive_data(out_b))
    raise AssertionError(f"engines still talking after {max_rounds} rounds")
