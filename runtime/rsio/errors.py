"""Errors specific to the Reactive Streams network protocol (subclasses of runtime.errors).

Demand errors are the shared ``wirestream.runtime.errors`` flow-control classes
(``DemandExceeded``, ``InvalidGrant``, ``PeerExceededDemand``, ``PeerInvalidGrant``);
state errors are ``IllegalSend`` / ``UnexpectedFrame`` from the generated machines.
"""

from __future__ import annotations

from wirestream.runtime.errors import LocalProtocolError, RemoteProtocolError

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


class ReassemblyLimitExceeded(RemoteProtocolError):
    """A split element grew beyond the configured ``max_element_size`` (or all
    unfinished split elements beyond ``max_reassembly_bytes``)."""


class IncompleteSplitElement(RemoteProtocolError):
    """onComplete arrived while a split element of the stream still lacked its last part."""


class TransportClosed(RemoteProtocolError):
    """The transport ended (EOF) while streams were open."""


class UnsupportedVersion(RemoteProtocolError):
    """The peer's hello names a protocol version we do not speak; we sent goodbye and
    closed ("it MUST send a goodbye message ... and close the connection")."""


class StreamError(RemoteProtocolError):
    """The publisher ended the stream with onError (or refused the subscribe: onError
    right after subscribed, RS §1.9).  ``str()`` is the publisher's message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
