"""Time and resource limits of a connection and of a server, one shape for every protocol.

A peer that connects and sends nothing, sends a frame one byte at a time, or opens
streams without end must not hold our memory, tasks or sockets for ever.  Each asyncio
``connect`` / ``serve`` (RSocket, rsio, BPMUX, the RabbitMQ stream client) takes a
``ConnectionLimits`` (RSocket's ``wirestream.runtime.rsocket.options.Limits`` is one, with
RSocket's sizes added); who enforces what:

- ``handshake_timeout``: the asyncio driver (``wirestream.runtime.aio.EngineDriver``)
  drops the connection with ``HandshakeTimeout`` when the peer's first *whole* frame has
  not arrived this long after the transport opened (RSocket's SETUP or RESUME, rsio's
  hello, BPMUX's first packet); the RabbitMQ client waits this long for the broker's
  Tune and Open.  An RSocket client's server owes it no frame before its first
  KEEPALIVE, so the client waits one keepalive interval more (the answer to it).
- ``idle_timeout``: the driver drops a connection on which no whole frame arrived for
  this long (``IdleTimeout``).
- ``frame_timeout``: the driver drops a connection whose peer began a frame and has not
  finished it this long after (``FrameTimeout``): a peer that trickles a frame byte by
  byte.  Bytes of an unfinished frame never count as progress, only whole frames do.
- ``max_connections``: the listener (``wirestream.runtime.aio.Listener``) closes a
  connection beyond it at once, counts it (``Listener.refused``) and logs it.
- ``max_streams``: streams the peer may have open at once on one connection; the engine
  refuses one more with the protocol's own answer and the connection goes on (RSocket
  ERROR[REJECTED] on the stream; rsio subscribed + onError; BPMUX InnerError /
  InnerCancel on the inner stream).

Time the driver spends not reading because the peer does not read what we send
(backpressure) does not count against the peer.  None switches a limit off.  The
defaults and why they were chosen are in the README ("Limits").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "ConnectionLimits",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_FRAME_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_STREAMS",
]

DEFAULT_HANDSHAKE_TIMEOUT: Final = 10.0
"""Seconds.  A client must send its opening frame at once (RSocket: "Immediately upon
successful connection, the client MUST send either a SETUP or RESUME frame"); 10 s is
our ``connect`` timeout too.  rsocket-java's ``maxTimeToFirstFrame`` is one minute:
shorter here because a silent socket costs a slot of ``max_connections`` for as long."""

DEFAULT_IDLE_TIMEOUT: Final = None
"""Off: silence between frames is legitimate (an rsio or BPMUX subscription waiting for
rare elements has no keepalive); RSocket's KEEPALIVE / Max Lifetime and RabbitMQ's
heartbeat already bound a silent peer after the handshake."""

DEFAULT_FRAME_TIMEOUT: Final = 60.0
"""Seconds a begun frame may take to complete: a 16 MiB frame at 300 KB/s still makes
it, a byte-by-byte trickler is dropped within a minute."""

DEFAULT_MAX_CONNECTIONS: Final = 4096
"""Per server.  A connection costs a socket (a file descriptor), a reader task and its
engine, some 20 KiB (tracemalloc, a silent RSocket connection) before it opens a
stream: 4096 hold ~80 MiB and stay under the usual hard descriptor limits, yet above
the fan-in one asyncio process serves well."""

DEFAULT_MAX_STREAMS: Final = 4096
"""Per connection, streams the peer opened.  HTTP/2 servers allow 100-250 concurrent
streams; reactive streams are long-lived and many per connection (the test suite runs
2,000 at once on one RSocket connection), and an open stream costs ~2.5 KiB per side
here (tracemalloc): 4096 hold ~10 MiB."""


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The limits of one connection and of the server that accepted it (module
    docstring); times in seconds, None: no limit."""

    handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    frame_timeout: float | None = DEFAULT_FRAME_TIMEOUT
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS
    max_streams: int | None = DEFAULT_MAX_STREAMS

    def __post_init__(self) -> None:
        for name in ("handshake_timeout", "idle_timeout", "frame_timeout"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive seconds (or None: no limit)")
        for name in ("max_connections", "max_streams"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None: no limit)")
