"""What the Reactive Streams network protocol engine reports to its application.

``RsioConnection.receive_data`` (and ``close``) return these.  One peer can be both a
subscriber and a publisher on the same connection ("The protocol is fully
bidirectional"), so the events are grouped by the local role they concern:

- connection: ``HelloReceived``, ``GoodbyeReceived``, ``RsioConnectionClosed``;
- our subscriptions (we subscribed, the peer publishes): ``SubscriptionStarted``,
  ``ElementReceived``, ``SubscriptionCompleted``, ``SubscriptionFailed``;
- our publications (the peer subscribed to us): ``SubscribeReceived``,
  ``DemandReceived``, ``SubscriptionCancelled``.

``subscriber`` is always the subscriber-chosen Id of the seed; which of the two Id
spaces it belongs to follows from the event class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from wirestream.runtime.errors import ProtocolError

__all__ = [
    "HelloReceived",
    "GoodbyeReceived",
    "RsioConnectionClosed",
    "SubscriptionStarted",
    "ElementReceived",
    "SubscriptionCompleted",
    "SubscriptionFailed",
    "SubscribeReceived",
    "DemandReceived",
    "SubscriptionCancelled",
    "Event",
]


# --- connection ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HelloReceived:
    """The peer's clientHello/serverHello with a version we speak."""

    version: int
    extensions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class GoodbyeReceived:
    """The peer sent goodbye; every stream of the connection is closed by it."""

    reason: str


@dataclass(frozen=True, slots=True)
class RsioConnectionClosed:
    """The connection is over: goodbyes exchanged, transport EOF, or a protocol error
    (``cause``).  The application closes the transport after ``data_to_send()``."""

    reason: str
    cause: ProtocolError | None = None


# --- our subscriptions (local subscriber) -----------------------------------------


@dataclass(frozen=True, slots=True)
class SubscriptionStarted:
    """``subscribed`` arrived (RS onSubscribe); ``element_size`` > 0 means fixed-size."""

    subscriber: int
    element_size: int


@dataclass(frozen=True, slots=True)
class ElementReceived:
    """One element (RS onNext): from onNext, one of an onNextPacked, or a joined split."""

    subscriber: int
    element: bytes


@dataclass(frozen=True, slots=True)
class SubscriptionCompleted:
    """``onComplete`` arrived; the Id is free again."""

    subscriber: int


@dataclass(frozen=True, slots=True)
class SubscriptionFailed:
    """The subscription ended in error (RS onError); the Id is free again (or cancelled).

    ``cause`` is None when the publisher sent ``onError`` (``error`` is its text); else
    it is why this side ended it: the publisher broke a rule (we sent ``cancel``),
    goodbye, transport EOF or a connection error.
    """

    subscriber: int
    error: str
    cause: ProtocolError | None = None


# --- our publications (local publisher) -------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscribeReceived:
    """The peer subscribed; answer with ``accept`` or ``reject`` (RS §1.9)."""

    subscriber: int
    publisher: str
    initial_demand: int


@dataclass(frozen=True, slots=True)
class DemandReceived:
    """The peer's ``request``: ``demand`` more elements may be sent."""

    subscriber: int
    demand: int


@dataclass(frozen=True, slots=True)
class SubscriptionCancelled:
    """Stop publishing: the subscriber cancelled (``cause`` None), or this side ended the
    subscription (RS §3.9 request(0), goodbye, EOF, connection error: ``cause``)."""

    subscriber: int
    reason: str
    cause: ProtocolError | None = None


Event = Union[
    HelloReceived,
    GoodbyeReceived,
    RsioConnectionClosed,
    SubscriptionStarted,
    ElementReceived,
    SubscriptionCompleted,
    SubscriptionFailed,
    SubscribeReceived,
    DemandReceived,
    SubscriptionCancelled,
]
