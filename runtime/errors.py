"""The one exception tree of wirestream.

Every error that bytes from a peer, a bad local call or a broken protocol rule can
cause is a ``ProtocolError``. As in h11, ``LocalProtocolError`` means *we* broke a rule
(or were asked to encode something unencodable) and ``RemoteProtocolError`` means the
peer did (malformed bytes, illegal sequences).  One stream of a connection can also end
early without a broken rule: ``StreamCancelled`` (by either side) and ``StreamError`` (the
peer ended it with an error); every protocol raises these same classes, so one ``except``
covers them all.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ProtocolError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "EncodeError",
    "DecodeError",
    "Truncated",
    "TrailingBytes",
    "FrameTooLarge",
    "UnknownFrameType",
    "AmbiguousFrameType",
    "InvalidValue",
    "InvalidString",
    "NonCanonical",
    "RuleViolation",
    "MalformedMsgpack",
    "IllegalSend",
    "UnexpectedFrame",
    "FlowControlError",
    "DemandExceeded",
    "InvalidGrant",
    "PeerExceededDemand",
    "PeerInvalidGrant",
    "StreamCancelled",
    "StreamError",
    "ReassemblyLimitExceeded",
    "TransportError",
    "ConnectionLost",
    "TransportTimeout",
    "HandshakeTimeout",
    "IdleTimeout",
    "FrameTimeout",
]


class ProtocolError(Exception):
    """Base of every wirestream protocol error."""

    events: Sequence[object] = ()
    """When an engine's ``receive_data`` raises: the events of the frames it handled
    before the violation, which the caller still delivers ("nothing is lost")."""


class LocalProtocolError(ProtocolError):
    """We broke a protocol rule, or asked for something the protocol cannot carry."""


class RemoteProtocolError(ProtocolError):
    """The peer broke a protocol rule: malformed bytes or an illegal sequence."""


class EncodeError(LocalProtocolError, ValueError):
    """A frame cannot be encoded: a value is out of range, too long, or inconsistent."""


class DecodeError(RemoteProtocolError):
    """Bytes that are not a valid frame.

    ``frames`` holds the frames a stream decoder had decoded in the same ``feed`` call
    before the bad one, so that nothing already received is lost.
    """

    def __init__(self, message: str, *, frames: list[object] | None = None) -> None:
        super().__init__(message)
        self.frames: list[object] = [] if frames is None else frames


class Truncated(DecodeError):
    """The input ends before the frame (or a field of it) does.

    ``needed`` is the offset the input would have to reach, when known (0 otherwise).
    """

    def __init__(self, message: str, *, needed: int = 0) -> None:
        super().__init__(message)
        self.needed = needed


class TrailingBytes(DecodeError):
    """Bytes remain after exactly one frame was decoded."""


class FrameTooLarge(DecodeError):
    """A declared length exceeds the configured maximum frame size."""


class UnknownFrameType(DecodeError):
    """A frame type code that this protocol version does not define (and may not skip)."""


class AmbiguousFrameType(DecodeError):
    """A code shared by frames of both senders, decoded without saying who sent it."""


class InvalidValue(DecodeError):
    """A field holds a value the protocol forbids (constraint, enum, const, length)."""


class InvalidString(InvalidValue):
    """A string field is not valid UTF-8."""


class NonCanonical(InvalidValue):
    """A variable-length integer is not in its one valid (shortest) encoding."""


class RuleViolation(InvalidValue):
    """The values of a frame break a rule of its protocol (an IDL ``rules:`` entry: this
    frame's stream id must be 0, a will QoS needs the will flag...); the message quotes
    the rule and its spec."""


class MalformedMsgpack(DecodeError):
    """Bytes that are not the MessagePack form of a frame."""


# --- state machines (runtime.machine) -------------------------------------------------


class _MachineRefusal(ProtocolError):
    """Where a state machine refused an event: ``machine``, ``role``, ``state``, ``frame``
    and, when the IDL row that refuses it cites one, ``spec``."""

    def __init__(self, message: str, *, machine: str = "", role: str = "", state: str = "",
                 frame: str = "", spec: str = "") -> None:  # fmt: skip
        super().__init__(message)
        self.machine, self.role, self.state, self.frame, self.spec = (
            machine, role, state, frame, spec
        )  # fmt: skip


class IllegalSend(_MachineRefusal, LocalProtocolError):
    """Sending this frame now breaks the protocol's state machine (we are at fault)."""


class UnexpectedFrame(_MachineRefusal, RemoteProtocolError):
    """The peer sent a frame its state does not allow (and the spec does not say ignore)."""


# --- flow control (runtime.flow) ------------------------------------------------------


class FlowControlError(ProtocolError):
    """Base of the demand/credit errors (both sides)."""


class DemandExceeded(FlowControlError, LocalProtocolError):
    """We tried to send more items (or bytes) than the peer granted."""


class InvalidGrant(FlowControlError, LocalProtocolError, ValueError):
    """We tried to grant a non-positive or out-of-range amount (RS 3.9, RSocket request-n)."""


class PeerExceededDemand(FlowControlError, RemoteProtocolError):
    """The peer sent more items (or bytes) than we granted."""


class PeerInvalidGrant(FlowControlError, RemoteProtocolError):
    """The peer granted a non-positive or out-of-range amount."""


# --- streams -------------------------------------------------------------------------
# One stream of a connection ended before this side was done with it; the connection
# goes on.  The protocol packages re-export these (``rsocket.errors``, ``rsio.errors``)
# or subclass them where their errors carry more (RSocket's ERROR code).


class StreamCancelled(ProtocolError):
    """The stream was cancelled: the peer cancelled the stream a publisher was feeding
    (RSocket CANCEL, Reactive Streams cancel, BPMUX InnerCancel) or we cancelled what we
    were waiting for (BPMUX CancelAll).  No rule is broken, so it is neither Local nor
    Remote: a publisher stops and its source is closed.  It is not
    ``asyncio.CancelledError``: no task is cancelled by it."""


class StreamError(RemoteProtocolError):
    """The peer ended a stream with an error (RSocket ERROR; Reactive Streams onError,
    also a refused subscribe: onError right after subscribed, RS §1.9), or the engine
    ended it because the peer broke a stream rule.
    ``str()`` and ``message`` are the peer's message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ReassemblyLimitExceeded(RemoteProtocolError):
    """A message the peer sent in parts grew beyond the configured limit: RSocket
    fragments beyond ``max_reassembly_size``; a Reactive Streams split element beyond
    ``max_element_size`` (or all unfinished split elements beyond
    ``max_reassembly_bytes``)."""


# --- transport -----------------------------------------------------------------------
# The asyncio layer (runtime.aio) reports what happens to the byte stream underneath an
# engine with these, on every stream that was open: the peer is gone, not wrong.


class TransportError(ProtocolError):
    """The transport under a connection failed or ended."""


class ConnectionLost(TransportError, ConnectionError):
    """The transport ended: EOF (``reason`` "eof"), reset, or closed by us while streams
    were open.  Also a ``ConnectionError`` so code that catches that keeps working."""

    def __init__(self, message: str = "connection lost", *, reason: str = "eof") -> None:
        super().__init__(message)
        self.reason = reason


class TransportTimeout(TransportError, TimeoutError):
    """Connecting, or a peer's response, took longer than the configured timeout."""


class HandshakeTimeout(TransportTimeout):
    """The peer's first whole frame (RSocket SETUP or RESUME, an rsio hello, a BPMUX
    packet) or the broker's handshake (RabbitMQ Tune and Open) did not arrive within
    ``limit`` seconds (``ConnectionLimits.handshake_timeout``): the connection is dropped."""

    def __init__(self, message: str, *, limit: float | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class IdleTimeout(TransportTimeout):
    """No whole frame arrived from the peer for ``limit`` seconds
    (``ConnectionLimits.idle_timeout``): the connection is dropped.  Bytes of a frame
    that is not complete do not count."""

    def __init__(self, message: str, *, limit: float | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class FrameTimeout(IdleTimeout):
    """The peer began a frame and did not finish it within ``limit`` seconds
    (``ConnectionLimits.frame_timeout``): a peer trickling bytes is dropped."""
