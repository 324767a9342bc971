"""TCP segments -> each connection's two byte streams -> the protocol's frames, as records.

``TcpStreams`` is sans-I/O: ``feed(segment, timestamp_ns, offset)`` for every segment of
a capture in file order, ``finish()`` at its end; both return the ``CaptureRecord``s of
the frames that became complete, exactly as a ``.wscap`` reader yields them, so
everything downstream (the Spark source, ``wirestream capture``) reads a pcap like a
capture.

Connections.  Only segments to or from the protocol's server port are read (0: every TCP
segment).  The client is the side that sent the SYN; when the capture holds no SYN of a
connection, the SYN+ACK's receiver; without either, the side whose port is not the
server port (with port 0, or both ends on it: the higher port, the usual ephemeral one).
A new SYN with another initial sequence number on a known address pair is a new
connection (port reuse); a retransmitted SYN is not.  Connection ids count connections
from 1 in order of their first segment -- except in files ``PcapngWriter`` wrote, whose
SYNs carry the capture's connection id and tapped side in a comment (``wirestream
connection=0x... tapped=client``), so a capture read back from its pcapng is the capture.
Records are seen from the tapped side: the client, unless a comment says otherwise
(``direction`` "out" = sent by the client).

Streams.  Each direction is cut into frames from its first byte (the byte after the SYN):
by sequence number, so a retransmitted or overlapping segment adds only the bytes not
seen yet, and a segment past a hole waits (at most ``max_pending_bytes`` and
``max_pending_segments`` per direction) for the hole to be filled.  A hole that is never
filled -- the wait outgrew its bound, the connection ended, the capture ended, or the
snap length cut a segment -- is a *gap*: frames cannot be found past missing bytes, so
that direction stops being read, and ``problems`` says where and how many bytes were
missing.  A direction whose start is not in the capture (tcpdump started after the
connection opened) is not read either.  ``midstream=True`` reads on in both cases, from
the first segment after the gap (or the first seen): right when that segment begins a
frame (usual for small frames, one per write), garbage otherwise, which the protocol's
deframer then reports like any undecodable bytes (one last record holding them, as the
tap records them: ``wirestream.runtime.capture.tap``).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, NamedTuple

from wirestream.runtime.capture.format import Direction, Side
from wirestream.runtime.capture.protocols import CaptureProtocol, Deframer
from wirestream.runtime.capture.reader import CaptureRecord
from wirestream.runtime.capture.tcp_segments import Segment

__all__ = [
    "TcpStreams",
    "Problem",
    "PROBLEM_KINDS",
    "DEFAULT_MAX_PENDING_BYTES",
    "DEFAULT_MAX_PENDING_SEGMENTS",
    "MAX_PROBLEMS",
    "CLOSED_REMEMBERED",
]

DEFAULT_MAX_PENDING_BYTES: Final = 8 * 1024 * 1024
"""Out-of-order bytes one direction may hold while waiting for a hole to be filled: a
few receive windows, far more than any retransmission in a capture needs."""
DEFAULT_MAX_PENDING_SEGMENTS: Final = 4096
MAX_PROBLEMS: Final = 1000
"""Problems kept with their details; beyond, only ``problem_counts`` grows."""
CLOSED_REMEMBERED: Final = 4096
"""Closed connections remembered, so that their late segments (the last ACK, a
retransmitted FIN) are not taken for new connections."""

PROBLEM_KINDS: Final = {
    "gap": "bytes of a direction are missing from the capture; the direction stops here",
    "start-missed": "the capture holds no start of a direction (no SYN)",
    "unframed": "a direction's bytes stopped being frames of the protocol",
    "incomplete-frame": "a direction ended inside a frame",
    "malformed-packet": "a packet that claims TCP/IP but cannot be read as such",
}

_SEQ: Final = 1 << 32
_HALF: Final = 1 << 31
_FIN: Final = 0x01
_SYN: Final = 0x02
_RST: Final = 0x04
_ACK: Final = 0x10
_COMMENT: Final = re.compile(r"wirestream connection=0x([0-9a-fA-F]{1,16}) tapped=(client|server)")

Endpoint = tuple[bytes, int]


class Problem(NamedTuple):
    """Something the capture lacks or holds wrongly (``PROBLEM_KINDS``): the file offset
    of the packet where it showed, the connection and the sender (None when not known),
    what, and how many bytes it cost (0 when not known)."""

    kind: str
    offset: int
    connection_id: int | None
    sender: Side | None
    detail: str
    missing: int = 0


class _Direction:
    """One direction of a connection: where its stream is, what waits past a hole."""

    __slots__ = ("next", "pending", "pending_bytes", "deframer", "fin", "stopped", "fed",
                 "framed")  # fmt: skip

    def __init__(self) -> None:
        self.next: int | None = None  # sequence number of the next byte, unwrapped
        self.pending: dict[int, bytes] = {}
        self.pending_bytes = 0
        self.deframer: Deframer | None = None
        self.fin: int | None = None
        self.stopped = False
        self.fed = 0  # bytes given to the deframer, and those it returned as frames
        self.framed = 0

    def unwrap(self, seq: int) -> int:
        """``seq`` (32 bits) as the unwrapped number nearest to ``next``."""
        assert self.next is not None
        delta = (seq - self.next) % _SEQ
        return self.next + (delta - _SEQ if delta >= _HALF else delta)

    @property
    def finished(self) -> bool:
        return self.stopped or (self.fin is not None and self.next is not None
                                and self.next >= self.fin)  # fmt: skip


class _Connection:
    __slots__ = ("id", "client", "server", "tapped", "directions", "client_isn", "closed")

    def __init__(self, connection_id: int, client: Endpoint, server: Endpoint,
                 tapped: Side) -> None:  # fmt: skip
        self.id = connection_id
        self.client = client
        self.server = server
        self.tapped: Side = tapped
        self.directions: dict[Side, _Direction] = {"client": _Direction(), "server": _Direction()}
        self.client_isn: int | None = None
        self.closed = False

    def sender(self, src: Endpoint) -> Side:
        return "client" if src == self.client else "server"


def _key(a: Endpoint, b: Endpoint) -> tuple[Endpoint, Endpoint]:
    return (a, b) if a <= b else (b, a)


class TcpStreams:
    """The frames of one protocol's TCP connections in a capture (module docstring)."""

    def __init__(
        self,
        protocol: CaptureProtocol,
        server_port: int,
        *,
        midstream: bool = False,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        max_pending_segments: int = DEFAULT_MAX_PENDING_SEGMENTS,
    ) -> None:
        if not 0 <= server_port <= 65535:
            raise ValueError(f"server port {server_port} is not 0..65535")
        self.protocol = protocol
        self.server_port = server_port
        self.midstream = midstream
        self.max_pending_bytes = max_pending_bytes
        self.max_pending_segments = max_pending_segments
        self.prefix = protocol.length_prefix
        self.new_deframer: Callable[[], Deframer] = protocol.deframer
        self.connections = 0
        """Connections seen so far."""
        self.problems: list[Problem] = []
        self.problem_counts: dict[str, int] = {}
        self._live: dict[tuple[Endpoint, Endpoint], _Connection] = {}
        self._closed: OrderedDict[tuple[Endpoint, Endpoint], _Connection] = OrderedDict()
        self._next_id = 0

    # -------------------------------------------------------------- problems

    def problem(self, kind: str, offset: int, conn: _Connection | None, sender: Side | None,
                detail: str, missing: int = 0) -> None:  # fmt: skip
        self.problem_counts[kind] = self.problem_counts.get(kind, 0) + 1
        if len(self.problems) < MAX_PROBLEMS:
            connection = None if conn is None else conn.id
            self.problems.append(Problem(kind, offset, connection, sender, detail, missing))

    def malformed(self, offset: int, reason: str) -> None:
        """A packet ``parse_segment`` could not read (``Malformed``)."""
        self.problem("malformed-packet", offset, None, None, reason)

    # -------------------------------------------------------------- connections

    def _is_server_port(self, port: int) -> bool:
        return self.server_port == 0 or port == self.server_port

    def _open(self, client: Endpoint, server: Endpoint, comment: str | None) -> _Connection:
        tapped: Side = "client"
        match = _COMMENT.search(comment) if comment else None
        if match:
            connection_id = int(match.group(1), 16)
            tapped = "server" if match.group(2) == "server" else "client"
        else:
            self._next_id += 1
            connection_id = self._next_id
        conn = _Connection(connection_id, client, server, tapped)
        self._live[_key(client, server)] = conn
        self.connections += 1
        return conn

    def _guess_sides(self, src: Endpoint, dst: Endpoint) -> tuple[Endpoint, Endpoint]:
        """(client, server) of a connection whose handshake the capture lacks."""
        src_serves, dst_serves = self._is_server_port(src[1]), self._is_server_port(dst[1])
        if src_serves != dst_serves:
            return (dst, src) if src_serves else (src, dst)
        return (src, dst) if src[1] >= dst[1] else (dst, src)

    def _close(self, conn: _Connection, offset: int, records: list[CaptureRecord]) -> None:
        """The connection ended (FINs, RST, port reuse, the end of the capture)."""
        if conn.closed:
            return
        conn.closed = True
        key = _key(conn.client, conn.server)
        if self._live.get(key) is conn:
            del self._live[key]
        self._closed[key] = conn
        self._closed.move_to_end(key)
        while len(self._closed) > CLOSED_REMEMBERED:
            self._closed.popitem(last=False)
        for sender, direction in conn.directions.items():
            if direction.stopped:
                continue
            if direction.pending:
                assert direction.next is not None
                missing = min(direction.pending) - direction.next
                self.problem("gap", offset, conn, sender,
                             f"{missing} bytes missing: a hole that was never filled",
                             missing)  # fmt: skip
            elif direction.fed > direction.framed:
                self.problem("incomplete-frame", offset, conn, sender,
                             f"{direction.fed - direction.framed} bytes of a frame that "
                             "never completed", direction.fed - direction.framed)  # fmt: skip
            direction.stopped = True
            direction.pending.clear()
            direction.deframer = None

    # -------------------------------------------------------------- segments

    def feed(self, segment: Segment, timestamp_ns: int, offset: int,
             comment: str | None = None) -> list[CaptureRecord]:  # fmt: skip
        """The records of the frames this segment completed.  ``offset``: the file offset
        of its packet (records and problems carry it); ``comment``: the packet's."""
        src: Endpoint = (segment.src, segment.sport)
        dst: Endpoint = (segment.dst, segment.dport)
        if not (self._is_server_port(segment.sport) or self._is_server_port(segment.dport)):
            return []
        records: list[CaptureRecord] = []
        flags = segment.flags
        key = _key(src, dst)
        conn = self._live.get(key)
        if flags & _SYN and not flags & _ACK:  # a client's SYN
            if conn is not None and conn.client == src and conn.client_isn == segment.seq:
                return records  # retransmitted
            if conn is not None:
                self._close(conn, offset, records)  # the address pair is reused
            conn = self._open(src, dst, comment)
            conn.client_isn = segment.seq
            conn.directions["client"].next = segment.seq + 1
            return records
        if conn is None:
            if key in self._closed:
                return records  # a late segment of a closed connection
            if flags & _SYN:  # a SYN+ACK whose SYN is not in the capture
                conn = self._open(dst, src, comment)
                conn.directions["client"].next = segment.ack
            else:
                conn = self._open(*self._guess_sides(src, dst), comment)
        sender = conn.sender(src)
        direction = conn.directions[sender]
        if flags & _SYN:  # SYN+ACK: the server's stream starts after it
            if direction.next is None:
                direction.next = segment.seq + 1
            return records
        if (sender == "client" and flags & _ACK and conn.client_isn is not None
                and conn.directions["server"].next is None):  # fmt: skip
            # The handshake's last ACK (or any ACK) when the SYN+ACK was not captured: it
            # acknowledges the server's SYN, so the server's stream starts at its number.
            conn.directions["server"].next = segment.ack
        if segment.payload or segment.missing or flags & _FIN:
            self._data(conn, sender, direction, segment, timestamp_ns, offset, records)
        if flags & _RST or all(d.finished for d in conn.directions.values()):
            self._close(conn, offset, records)
        return records

    def _data(self, conn: _Connection, sender: Side, direction: _Direction, segment: Segment,
              timestamp_ns: int, offset: int, records: list[CaptureRecord]) -> None:  # fmt: skip
        if direction.stopped:
            return
        if direction.next is None:
            if not self.midstream:
                self.problem("start-missed", offset, conn, sender,
                             "the capture started after this direction did")  # fmt: skip
                direction.stopped = True
                return
            direction.next = segment.seq
        start = direction.unwrap(segment.seq)
        payload = segment.payload
        end = start + len(payload)
        if segment.flags & _FIN:
            direction.fin = end + segment.missing
        if direction.deframer is None:
            direction.deframer = self.new_deframer()
        if start > direction.next:
            if payload:
                self._wait(conn, sender, direction, start, payload, timestamp_ns, offset, records)
            return
        if end > direction.next:
            self._deliver(conn, sender, direction, payload[direction.next - start :],
                          timestamp_ns, offset, records)  # fmt: skip
            direction.next = end
        if segment.missing and end + segment.missing > direction.next:
            missing = end + segment.missing - direction.next
            self._gap(conn, sender, direction, end + segment.missing, missing,
                      "the snap length cut a segment", timestamp_ns, offset, records)  # fmt: skip
        self._drain(conn, sender, direction, timestamp_ns, offset, records)

    def _wait(self, conn: _Connection, sender: Side, direction: _Direction, start: int,
              payload: bytes, timestamp_ns: int, offset: int,
              records: list[CaptureRecord]) -> None:  # fmt: skip
        """Keep a segment past a hole, within the bounds; past them, the hole is a gap."""
        held = direction.pending.get(start)
        if held is not None and len(held) >= len(payload):
            return  # a retransmission of a segment already waiting
        direction.pending_bytes += len(payload) - (len(held) if held else 0)
        direction.pending[start] = payload
        if (direction.pending_bytes > self.max_pending_bytes
                or len(direction.pending) > self.max_pending_segments):  # fmt: skip
            assert direction.next is not None
            first = min(direction.pending)
            self._gap(conn, sender, direction, first, first - direction.next,
                      "a hole not filled within the bound on waiting segments",
                      timestamp_ns, offset, records)  # fmt: skip
            self._drain(conn, sender, direction, timestamp_ns, offset, records)

    def _drain(self, conn: _Connection, sender: Side, direction: _Direction,
               timestamp_ns: int, offset: int, records: list[CaptureRecord]) -> None:  # fmt: skip
        """Deliver the waiting segments the stream has reached."""
        pending = direction.pending
        while pending and not direction.stopped:
            assert direction.next is not None
            start = min(pending)
            if start > direction.next:
                return
            data = pending.pop(start)
            direction.pending_bytes -= len(data)
            end = start + len(data)
            if end > direction.next:
                self._deliver(conn, sender, direction, data[direction.next - start :],
                              timestamp_ns, offset, records)  # fmt: skip
                direction.next = end

    def _gap(self, conn: _Connection, sender: Side, direction: _Direction, resume: int,
             missing: int, why: str, timestamp_ns: int, offset: int,
             records: list[CaptureRecord]) -> None:  # fmt: skip
        """``missing`` bytes before ``resume`` will never come: stop the direction, or
        (``midstream``) cut frames again from ``resume``."""
        self.problem("gap", offset, conn, sender, f"{missing} bytes missing: {why}", missing)
        if not self.midstream:
            direction.stopped = True
            direction.pending.clear()
            direction.pending_bytes = 0
            direction.deframer = None
            return
        direction.next = resume
        direction.deframer = self.new_deframer()
        direction.fed = direction.framed = 0

    def _deliver(self, conn: _Connection, sender: Side, direction: _Direction, data: bytes,
                 timestamp_ns: int, offset: int, records: list[CaptureRecord]) -> None:  # fmt: skip
        deframer = direction.deframer
        if deframer is None or not data:
            return
        frames = deframer.feed(data)
        direction.fed += len(data)
        out: Direction = "out" if sender == conn.tapped else "in"
        for frame in frames:
            direction.framed += len(frame) + self.prefix
            records.append(CaptureRecord(timestamp_ns, conn.id, out, frame, conn.tapped, offset))
        if deframer.failed is not None:
            self.problem("unframed", offset, conn, sender, str(deframer.failed))
            direction.stopped = True
            direction.pending.clear()
            direction.deframer = None

    def finish(self, offset: int) -> list[CaptureRecord]:
        """The end of the capture (``offset``: its size): every connection still open
        ends here; what it still waited for is reported."""
        records: list[CaptureRecord] = []
        for conn in list(self._live.values()):
            self._close(conn, offset, records)
        return records
