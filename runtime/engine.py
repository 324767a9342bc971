"""The contract every sans-I/O engine of wirestream keeps (h11/h2/aioquic's shape).

One engine is one connection of one protocol, in one role.  Nothing in it touches a
socket or a clock; ``wirestream.runtime.aio.EngineDriver`` runs any engine that keeps
this contract over any transport:

- **bytes in**: ``receive_data(data, now)`` takes what the transport read (``b""`` is
  the transport's end) and returns the events it caused, in order.  ``now`` is the
  caller's clock, in seconds (None: the time of the last call that passed one);
- **bytes out**: commands queue frames; ``data_to_send()`` drains everything queued;
- **time**: ``get_timer()`` says when ``handle_timer(now)`` is next due (None: no
  deadline); ``handle_timer`` returns the events the deadline caused (a silent peer);
- **a peer's violation** (malformed bytes, a frame its machine refuses, more than its
  credit): ``receive_data`` queues the closing frame the protocol prescribes, ends the
  engine and raises the ``RemoteProtocolError`` that says what happened; the events of
  the frames handled before it are on the error's ``events``.  Only this: no engine
  reports a connection-ending violation as an event alone;
- **our close**: ``close()`` queues the protocol's goodbye (when it has one), ends every
  stream, subscription or request still open and returns the events that reports.
  Engines take optional arguments (an error code, a reason), never required ones;
- **progress**: ``frames_received`` counts the whole frames the peer's bytes completed and
  ``buffered_bytes`` the bytes held of a frame not complete yet, so that the driver's
  limits (``wirestream.runtime.limits``) measure a peer on whole frames, never on bytes;
- ``closed``: nothing more will be sent or delivered.  Where the protocol's goodbye is a
  handshake (the Reactive Streams protocol waits for the peer's goodbye) it turns True
  when the peer answered or the transport ended; otherwise at once.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

__all__ = ["Engine"]

EventT = TypeVar("EventT")


class Engine(Protocol[EventT]):
    """What ``EngineDriver`` and the asyncio peers rely on (module docstring)."""

    @property
    def closed(self) -> bool: ...

    @property
    def frames_received(self) -> int: ...

    @property
    def buffered_bytes(self) -> int: ...

    def receive_data(self, data: bytes, now: float | None = None) -> list[EventT]: ...

    def data_to_send(self) -> bytes: ...

    def get_timer(self) -> float | None: ...

    def handle_timer(self, now: float) -> list[EventT]: ...

    def close(self) -> list[EventT]: ...
