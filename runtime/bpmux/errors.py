"""BPMUX-specific protocol errors, leaves of the ``wirestream.runtime.errors`` tree.

The engine raises the shared classes where they fit (``IllegalSend`` and
``UnexpectedFrame`` from the generated machines, ``PeerExceededDemand`` from a
``wirestream.runtime.flow.Window``); these name the rules only BPMUX has.
"""

from __future__ import annotations

from wirestream.runtime.errors import DemandExceeded, LocalProtocolError, RemoteProtocolError

__all__ = [
    "CreditExceeded",
    "ConnectionClosedError",
    "GreedyNotEnabled",
    "InvalidInnerId",
]


class CreditExceeded(DemandExceeded):
    """We tried to send a packet the peer's credit does not cover.

    Seed 002 L4: "data can only be transmitted once the receiver has signaled that it
    wants to receive data". ``level`` is ``"top-level"`` or ``"inner"``; ``needed`` the
    packet's cost in bytes and ``available`` what is left (after packets already queued).
    """

    def __init__(self, message: str, *, level: str, needed: int, available: int) -> None:
        super().__init__(message)
        self.level, self.needed, self.available = level, needed, available


class InvalidInnerId(RemoteProtocolError):
    """The peer created an inner stream under an id of our parity.

    DECISION (the seed is silent): inner ids share one space split by parity, the
    initiator creating odd ids and the acceptor even ones.
    """


class GreedyNotEnabled(LocalProtocolError):
    """Items attached to CreateSink/CreateDuplex (GreedySink/GreedyDuplex, codes 13/15)
    without ``greedy=True``: these packets are only in the seed's TODO list, so a peer
    must be known to understand them."""


class ConnectionClosedError(LocalProtocolError):
    """A command after the transport closed (EOF) or the connection failed."""
