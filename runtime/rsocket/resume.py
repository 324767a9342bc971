"""Implied positions and the retransmit buffer of a resumable session.

Protocol.md, Resuming Operation, Implied Position: "As a Requester or Responder sends
REQUEST_RESPONSE, REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N, CANCEL, ERROR,
or PAYLOAD frames, it maintains a position ... The positions are calculated based on the
length of encoded frames without the frame length field after any fragmentation is
applied."  (0.2 gives no unit; we use the same, IDL decision A5.)  KEEPALIVE carries the
receiver's position, "used to update state for possible retransmission, such as trimming a
retransmit buffer".

Resuming Operation: what survives a lost transport (``ResumableSession``) and the
server's answer to a RESUME (``answer_resume``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wirestream.runtime.machine import MachineRegistry
from wirestream.runtime.rsocket.events import SetupInfo
from wirestream.runtime.rsocket.streams import Stream, StreamIds
from wirestream.runtime.rsocket.versions import Version

__all__ = ["ResumeLog", "ResumableSession", "ResumeLookup", "answer_resume"]


class ResumeLog:
    """Sent and received implied positions, plus the sent frames not yet known received.

    The buffer holds at most ``limit`` bytes; beyond that the oldest frames are dropped
    (the first available position moves on, and a peer that has not received them can
    no longer resume).
    """

    __slots__ = ("limit", "sent_position", "received_position", "_frames", "_buffered")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.sent_position = 0
        self.received_position = 0
        self._frames: deque[tuple[int, bytes]] = deque()  # (start position, wire bytes)
        self._buffered = 0

    @property
    def first_available(self) -> int:
        """The earliest position we can still retransmit from."""
        return self._frames[0][0] if self._frames else self.sent_position

    def sent(self, wire: bytes, length: int) -> None:
        """Record a tracked frame we sent (``wire`` with its length prefix, ``length``
        without it)."""
        self._frames.append((self.sent_position, wire))
        self.sent_position += length
        self._buffered += len(wire)
        while self._buffered > self.limit and self._frames:
            _, dropped = self._frames.popleft()
            self._buffered -= len(dropped)

    def received(self, length: int) -> None:
        self.received_position += length

    def trim(self, peer_position: int) -> None:
        """Forget frames the peer says it received (they end at or before the position)."""
        frames = self._frames
        while frames:
            start, wire = frames[0]
            # the position counts frames without their 3-byte length prefix
            if start + len(wire) - 3 > peer_position:
                break
            frames.popleft()
            self._buffered -= len(wire)

    def replay_from(self, peer_position: int) -> list[bytes] | None:
        """The frames to send again so the peer continues at ``peer_position``; None when
        that position is not one we can resume from."""
        if not self.first_available <= peer_position <= self.sent_position:
            return None
        self.trim(peer_position)
        return [wire for _, wire in self._frames]


@dataclass(eq=False)
class ResumableSession:
    """What survives a transport loss when resumption was negotiated: streams, stream
    ids, implied positions and the retransmit buffer.  The objects are shared with the
    engine that produced it, so it always reflects that engine's latest state."""

    version: Version
    role: str
    token: bytes
    setup: SetupInfo
    streams: MachineRegistry[int, Stream]
    ids: StreamIds
    log: ResumeLog


ResumeLookup = Callable[[bytes], "ResumableSession | None"]
"""Server hook: the session a RESUME's token names, or None (unknown token)."""


def answer_resume(version: Version, lookup: ResumeLookup | None,
                  frame: Any) -> tuple[ResumableSession, list[bytes], int] | str:  # fmt: skip
    """(server) The session a RESUME frame continues, the frames to send it again and the
    client's last received position; or why it cannot be resumed (ERROR's message)."""
    client_last, client_first, same_version = version.resume_fields(frame)
    if lookup is None:
        return "resumption is not supported"
    session = lookup(frame.resume_token)
    if session is None:
        return "unknown resume token"  # "If not identified, then the server MUST send an ERROR"
    if not same_version or session.version is not version or session.role != "server":
        return "a session resumes with the version it started with"
    if client_first is not None and client_first > session.log.received_position:
        # "has the client retained all frames past the server's last-retained position"
        return "the client no longer has frames the server has not received"
    replay = session.log.replay_from(client_last)
    if replay is None:
        return "the server no longer has frames past the client's position"
    return session, replay, client_last
