"""Events a BPMUX engine returns from ``receive_data``: small frozen dataclasses.

One event per thing the application must know, in packet order ("Top-level packets
are guaranteed to be delivered in the order in which they were sent", seed 002 L16);
a batch packet (Messages, Requests, InnerItems) becomes one event per entry, in order.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Union

__all__ = [
    "ConnectionDone",
    "ConnectionEnded",
    "Event",
    "InnerAborted",
    "InnerCancelled",
    "InnerCreditReceived",
    "InnerEnded",
    "InnerErrored",
    "InnerKind",
    "InnerOpened",
    "InnerRefused",
    "ItemReceived",
    "MainCreditReceived",
    "BpmuxMessageReceived",
    "MinimumReceived",
    "PeerClosed",
    "RequestAborted",
    "RequestCancelled",
    "BpmuxRequestReceived",
    "ResponseErrorReceived",
    "ResponseReceived",
]


class InnerKind(enum.Enum):
    """What the peer's Create* packet asked for, from the creator's side."""

    STREAM = "stream"  # CreateStream: the creator receives items (we send them)
    SINK = "sink"  # CreateSink/GreedySink: the creator sends items (we receive them)
    DUPLEX = "duplex"  # CreateDuplex/GreedyDuplex: both


@dataclass(frozen=True, slots=True)
class MainCreditReceived:
    """The peer let us send ``credit`` more bytes of top-level packets (MainCredit)."""

    credit: int


@dataclass(frozen=True, slots=True)
class MinimumReceived:
    """The peer's lowest workable top-level credit (Minimum)."""

    min_credit: int


@dataclass(frozen=True, slots=True)
class PeerClosed:
    """The peer sent Close: it opens no more messages, requests or inner streams."""


@dataclass(frozen=True, slots=True)
class BpmuxMessageReceived:
    """A one-shot message (Message, or one entry of Messages)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class BpmuxRequestReceived:
    """A request to answer with ``respond`` or ``respond_error``."""

    req_id: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The answer to our request ``req_id``."""

    req_id: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class ResponseErrorReceived:
    """The error answer to our request ``req_id``."""

    req_id: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class RequestCancelled:
    """The peer no longer wants the answer to its request ``req_id`` (RequestCancel, or
    CancelAll); the request is over, do not answer it."""

    req_id: int


@dataclass(frozen=True, slots=True)
class InnerOpened:
    """The peer created an inner stream. ``we_send``/``we_receive`` say which directions
    of items it opened; ``credit`` is our initial inner credit for sending (bytes)."""

    inner_id: int
    kind: InnerKind
    payload: bytes
    we_send: bool
    we_receive: bool
    credit: int
    greedy: bool = False


@dataclass(frozen=True, slots=True)
class InnerRefused:
    """The peer created an inner stream beyond ``max_streams``: the engine answered it
    (InnerCancel for the peer's items, InnerError for ours) and the application never
    sees it; the connection goes on."""

    inner_id: int
    kind: InnerKind
    reason: str


@dataclass(frozen=True, slots=True)
class ItemReceived:
    """One item on ``inner_id`` (InnerItem, an entry of InnerItems, or a greedy item)."""

    inner_id: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class InnerEnded:
    """The peer sends no more items on ``inner_id`` (InnerEnd)."""

    inner_id: int


@dataclass(frozen=True, slots=True)
class InnerErrored:
    """The peer ended its items on ``inner_id`` with an error (InnerError)."""

    inner_id: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class InnerCreditReceived:
    """The peer let us send ``credit`` more bytes on ``inner_id`` (InnerCredit)."""

    inner_id: int
    credit: int


@dataclass(frozen=True, slots=True)
class InnerCancelled:
    """The peer wants no more items from us on ``inner_id`` (InnerCancel or CancelAll)."""

    inner_id: int


@dataclass(frozen=True, slots=True)
class RequestAborted:
    """The transport closed (or the connection failed) with request ``req_id`` open;
    ``outgoing`` is True for our requests, False for the peer's."""

    req_id: int
    outgoing: bool


@dataclass(frozen=True, slots=True)
class InnerAborted:
    """The transport closed (or the connection failed) with ``inner_id`` still open."""

    inner_id: int


@dataclass(frozen=True, slots=True)
class ConnectionDone:
    """Both sides sent Close and no request or inner stream is open: the transport may
    be closed (DECISION: the seed defines no end of connection)."""


@dataclass(frozen=True, slots=True)
class ConnectionEnded:
    """The transport closed (``receive_data(b"")``) or the connection failed (``error``);
    the last event. ``clean`` is True when the connection was done (see ConnectionDone)."""

    clean: bool
    error: str | None = None


Event = Union[
    MainCreditReceived,
    MinimumReceived,
    PeerClosed,
    BpmuxMessageReceived,
    BpmuxRequestReceived,
    ResponseReceived,
    ResponseErrorReceived,
    RequestCancelled,
    InnerOpened,
    InnerRefused,
    ItemReceived,
    InnerEnded,
    InnerErrored,
    InnerCreditReceived,
    InnerCancelled,
    RequestAborted,
    InnerAborted,
    ConnectionDone,
    ConnectionEnded,
]
