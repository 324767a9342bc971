"""What an RSocket server's capture (``wirestream rsocket serve --capture PATH``) says.

A peer the test cannot look into (a page in Chromium) is checked by what the server read
from it and sent to it, in the order the server did: its tap records a frame it sent when
it is written, and one it read when it is read, so a grant the server read comes before
anything the server sent because of it, and a grant the server sent comes before anything
the client sent because of it. Frames are whole (the servers here run without an MTU;
``read_capture`` refuses fragments, which would make the item counts wrong).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from wirestream.generated.rsocket.v1_0 import (
    Cancel,
    Frame,
    Payload,
    RequestChannel,
    RequestN,
    RequestStream,
    decode,
)
from wirestream.runtime.capture.format import Side
from wirestream.runtime.capture.reader import iter_records
from wirestream.runtime.capture.writer import capture_files

__all__ = ["Seen", "read_capture", "credit_excess", "grants", "sent_after_cancel", "items"]


@dataclass(frozen=True)
class Seen:
    """One frame of the capture: the connection it went over and who sent it."""

    connection: int
    sender: Side
    frame: Frame


def read_capture(path: str | os.PathLike[str]) -> list[Seen]:
    """Every frame of the capture files ``PATH.*.wscap``, in the server's order."""
    files = capture_files(path)
    assert files, f"no capture at {path}"
    seen = []
    for file in files:
        for record in iter_records(file):
            frame = decode(record.frame)
            assert not getattr(frame, "follows", False), f"a fragment: {frame!r}"
            seen.append(Seen(record.connection_id, record.sender, frame))
    return seen


def _peer(side: Side) -> Side:
    return "client" if side == "server" else "server"


def items(seen: list[Seen], stream_id: int, sender: Side) -> list[bytes]:
    """The data of the items (PAYLOAD with NEXT) ``sender`` sent on the stream."""
    return [
        s.frame.data
        for s in seen
        if s.sender == sender
        and isinstance(s.frame, Payload)
        and s.frame.stream_id == stream_id
        and s.frame.next
    ]


def grants(seen: list[Seen], stream_id: int, to: Side) -> list[int]:
    """The credit granted to ``to`` on the stream, one entry per grant: the request's
    Initial Request N (a requester grants its responder) and each REQUEST_N."""
    found = []
    for s in seen:
        frame = s.frame
        if s.sender != _peer(to) or frame.stream_id != stream_id:
            continue
        if isinstance(frame, (RequestStream, RequestChannel)):
            found.append(frame.initial_request_n)
        elif isinstance(frame, RequestN):
            found.append(frame.request_n)
    return found


def credit_excess(seen: list[Seen], stream_id: int, sender: Side) -> int:
    """The most items ``sender`` had sent on the stream beyond the credit granted to it
    so far, over the whole stream; 0 or less: it never sent beyond its credit ("The
    Responder MUST NOT send more than Initial Request N items" and likewise for
    REQUEST_N)."""
    granted = sent = 0
    worst = -(1 << 62)
    for s in seen:
        frame = s.frame
        if frame.stream_id != stream_id:
            continue
        if s.sender == sender and isinstance(frame, Payload) and frame.next:
            sent += 1
            worst = max(worst, sent - granted)
        elif s.sender == _peer(sender):
            if isinstance(frame, (RequestStream, RequestChannel)):
                granted += frame.initial_request_n
            elif isinstance(frame, RequestN):
                granted += frame.request_n
    return worst


def sent_after_cancel(seen: list[Seen], stream_id: int) -> list[Frame] | None:
    """What the server sent on the stream after it read the client's CANCEL of it; None
    when it read no CANCEL."""
    for at, s in enumerate(seen):
        if s.sender == "client" and isinstance(s.frame, Cancel) and s.frame.stream_id == stream_id:
            rest = seen[at + 1 :]
            return [
                r.frame for r in rest if r.sender == "server" and r.frame.stream_id == stream_id
            ]
    return None
