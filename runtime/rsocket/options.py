"""What an RSocket engine is configured with, as frozen values (h2's ``H2Configuration``
shape): the client's SETUP, the sizes and limits either side keeps, and the server's
SETUP hook.

The asyncio ``connect`` / ``serve`` keep their keyword arguments and build these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wirestream.runtime.errors import EncodeError
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rsocket.events import SetupInfo
from wirestream.runtime.rsocket.fragmentation import MIN_MTU
from wirestream.runtime.rsocket.versions import Version

__all__ = ["ClientSetup", "Limits", "SetupPolicy"]

SetupPolicy = Callable[[SetupInfo], "tuple[int, str] | None"]
"""Server hook: None accepts the SETUP, ``(error_code, message)`` rejects it."""


@dataclass(frozen=True, slots=True)
class ClientSetup:
    """What the client's SETUP frame says (Protocol.md, SETUP Frame); times in
    milliseconds, as on the wire.  ``resume_token`` (R flag) asks for a resumable
    session, ``lease`` (L flag) for leasing."""

    keepalive_interval: int = 20_000
    max_lifetime: int = 90_000
    metadata_mime_type: str = "application/octet-stream"
    data_mime_type: str = "application/octet-stream"
    metadata: bytes | None = None
    data: bytes = b""
    lease: bool = False
    resume_token: bytes | None = None
    strict: bool = False

    def __post_init__(self) -> None:
        # SETUP Frame, Encoding MIME Type: "The string MUST NOT be null terminated."
        for what, mime in (("metadata", self.metadata_mime_type), ("data", self.data_mime_type)):
            if mime.endswith("\x00"):
                raise EncodeError(f"the {what} MIME type {mime!r} is null terminated "
                                  "(the spec says MUST NOT)")  # fmt: skip
            # "This SHOULD be a US-ASCII string": we send none that is not (a peer's is
            # passed through as it came, "MUST NOT interpret the MIME type itself").
            if not mime.isascii():
                raise EncodeError(f"the {what} MIME type {mime!r} is not US-ASCII "
                                  "(the spec says SHOULD be)")  # fmt: skip

    def info(self, version: Version) -> SetupInfo:
        """The SETUP's contents in ``version``."""
        return SetupInfo(version.major_version, version.minor_version, self.keepalive_interval,
                         self.max_lifetime, self.metadata_mime_type, self.data_mime_type,
                         self.metadata, self.data, self.lease, self.resume_token,
                         self.strict)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Limits(ConnectionLimits):
    """Sizes either side keeps, and the time and resource limits every protocol has
    (``ConnectionLimits``: handshake, idle and frame timeouts, connections per server,
    streams per connection -- a REQUEST_* beyond ``max_streams`` is answered with
    ERROR[REJECTED]).

    ``mtu``: the largest frame we send (without the 3-byte length prefix; None: the
    codec's maximum); larger messages are fragmented.  ``max_frame_size``: the largest
    frame we accept.  ``max_reassembly_size`` bounds a fragmented message we receive,
    ``resume_buffer_size`` the retransmit buffer of a resumable session.
    ``reuse_stream_ids``: after 2^31-1, "the Requester MAY re-use Stream IDs".
    """

    mtu: int | None = None
    max_frame_size: int | None = None
    max_reassembly_size: int = 16 * 1024 * 1024
    resume_buffer_size: int = 1024 * 1024
    reuse_stream_ids: bool = False

    def __post_init__(self) -> None:
        ConnectionLimits.__post_init__(self)
        if self.mtu is not None and self.mtu < MIN_MTU:
            raise ValueError(f"mtu must be at least {MIN_MTU}")
