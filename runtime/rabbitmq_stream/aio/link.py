"""The connection as a ``Producer`` or ``Consumer`` sees it: what they call on it.

``Client`` implements it; producers and consumers depend on this interface only, so the
client imports them and they never import the client (no import circle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from wirestream.runtime.rabbitmq_stream.engine import ClientConnection
from wirestream.runtime.rabbitmq_stream.events import Event

__all__ = ["Link"]

E = TypeVar("E", bound=Event)


class Link(Protocol):
    """One connection (restored by recovery), shared by its producers and consumers."""

    @property
    def engine(self) -> ClientConnection:
        """The sans-I/O engine of the current connection (a new one after a recovery)."""

    @property
    def is_open(self) -> bool: ...

    @property
    def will_recover(self) -> bool:
        """The connection dropped and will be restored."""

    async def wait_ready(self) -> None:
        """Wait until a connection is open; raises when the client gave up or closed."""

    async def request(self, issue: Callable[[ClientConnection], int], expect: type[E]) -> E:
        """Queue a request (``issue`` returns its correlation id) and await its answer."""

    async def query_publisher_sequence(self, reference: str, stream: str) -> int: ...

    async def query_offset(self, reference: str, stream: str) -> int | None: ...

    def store_offset(self, reference: str, stream: str, offset: int) -> None: ...

    def wakeup(self) -> None:
        """The engine queued frames: write them this loop iteration."""

    def write_now(self) -> None: ...

    def backed_up(self) -> bool: ...

    async def flush(self) -> None: ...

    def detach_producer(self, publisher_id: int) -> None:
        """The producer with this id is over: its id is free for another."""

    def detach_consumer(self, subscription_id: int) -> None:
        """The consumer with this id is over: its id is free for another."""
