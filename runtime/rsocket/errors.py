"""RSocket-specific errors, leaves of the one tree in ``runtime.errors``.

State-machine refusals are ``runtime.errors.IllegalSend`` / ``UnexpectedFrame`` and
request-n violations are the ``runtime.flow`` errors; these cover the rest.
"""

from __future__ import annotations

from runtime.errors import LocalProtocolError, RemoteProtocolError

__all__ = [
    "NoLease",
    "StreamIdsExhausted",
    "UnknownStream",
    "ResumeNotAllowed",
    "ReassemblyLimitExceeded",
    "FragmentOrderViolated",
    "ResumePositionLost",
]


class NoLease(LocalProtocolError):
    """The requester holds no valid LEASE ("The Requester MUST NOT send more than Number
    of Requests specified in the LEASE frame within the Time-To-Live value")."""


class StreamIdsExhausted(LocalProtocolError):
    """Every stream id of our parity is in use, or (without re-use) the 2^31-1 space is
    spent: "a new connection MUST be established"."""


class UnknownStream(LocalProtocolError, KeyError):
    """A command names a stream that is not open (never opened, or terminated)."""


class ResumeNotAllowed(LocalProtocolError):
    """The session cannot be resumed: resumption was not negotiated, or the server said
    never to retry (1.0 REJECTED_RESUME, 0.2 CONNECTION_ERROR_NO_RETRY)."""


class ReassemblyLimitExceeded(RemoteProtocolError):
    """A fragmented message grew beyond the engine's ``max_reassembly_size``."""


class FragmentOrderViolated(RemoteProtocolError):
    """Metadata arrived after data had started ("the Metadata MUST be transmitted
    completely before the Data")."""


class ResumePositionLost(RemoteProtocolError):
    """RESUME_OK names a position this side no longer retains (or never sent)."""
