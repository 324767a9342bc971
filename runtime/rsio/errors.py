"""Errors specific to the Reactive Streams network protocol (subclasses of runtime.errors).

Demand errors are the shared ``wirestream.runtime.errors`` flow-control classes
(``DemandExceeded``, ``InvalidGrant``, ``PeerExceededDemand``, ``PeerInvalidGrant``);
state errors are ``IllegalSend`` / ``UnexpectedFrame`` from the generated machines;
``StreamError`` (onError, a refused subscribe) and ``ReassemblyLimitExceeded`` are the
shared classes too, re-exported here.
"""

from __future__ import annotations

from wirestream.runtime.errors import (
    LocalProtocolError,
    ReassemblyLimitExceeded,
    RemoteProtocolError,
    StreamError,
)

__all__ = [
    "ElementSizeError",
    "PeerElementSizeError",
    "ReassemblyLimitExceeded",
    "IncompleteSplitElement",
    "TransportClosed",
    "UnsupportedVersion",
    "StreamError",
]


class ElementSizeError(LocalProtocolError, ValueError):
    """We tried to publish an element whose length is not the stream's elementSize
    ("indicates the fixed size of the elements that will be published in this stream").
    (onNextPacked on a variable-size stream is refused by the `subscription` machine.)"""


class PeerElementSizeError(RemoteProtocolError):
    """The publisher sent a split element whose joined length is not the announced
    elementSize."""


class IncompleteSplitElement(RemoteProtocolError):
    """onComplete arrived while a split element of the stream still lacked its last part."""


class TransportClosed(RemoteProtocolError):
    """The transport ended (EOF) while streams were open."""


class UnsupportedVersion(RemoteProtocolError):
    """The peer's hello names a protocol version we do not speak; we sent goodbye and
    closed ("it MUST send a goodbye message ... and close the connection")."""
