"""Captures as pcap: a ``.wscap`` capture written as a pcapng file of TCP connections (for
Wireshark, tshark, tcpdump), and pcap / pcapng files of TCP traffic read back as the
records a ``.wscap`` reader yields (``PcapReader``).

Writing (``write_pcapng``, ``PcapngWriter``).  A capture holds frames, not packets: the
writer synthesizes the TCP/IP a real connection would have carried, so that any tool
reassembles the frames again.

- One pcapng section, one interface: ``LINKTYPE_ETHERNET`` (1; every pcap tool reads it),
  ``if_tsresol`` 9, so each packet carries the record's nanosecond timestamp exactly.
- Each connection of the capture is one TCP connection between the server
  ``127.0.0.1:<server port>`` (the protocol's well-known port, ``WELL_KNOWN_PORTS``, or the
  one given) and a client ``127.0.0.1:49152 + n`` (n counts the capture's connections in
  order of their first record; past 16384 connections the client address moves on:
  127.0.1.1, 127.0.2.1, ...).  It opens with the three-way handshake at the time of its
  first record (MSS and window-scale options, as a real stack sends them) and closes
  with FIN, FIN, ACK at the time of its last record, written after all the other
  packets (a capture does not record when a connection closed).
- Each frame goes from its sender (``CaptureRecord.sender``: the tapped side for ``out``,
  its peer for ``in``; ``wirestream.runtime.capture.format``) to the other side, wrapped
  in the protocol's transport framing again: RSocket's 24-bit and RabbitMQ's 32-bit
  length prefix (``CaptureProtocol.length_prefix``); Reactive Streams' and BPMUX frames
  delimit themselves and go as they are.  A frame longer than ``mss`` bytes (with its
  prefix) is cut into ``mss``-byte segments, all with the record's timestamp; every
  segment acknowledges what the other side sent so far, and the receiving side sends a
  pure ACK after every ``ACK_EVERY`` unacknowledged bytes, so no tool sees a full window.
- Sequence numbers start at a value drawn from the connection id (the same capture gives
  the same file); IPv4 header and TCP checksums are correct, so Wireshark flags nothing.
- The interface's ``if_description`` says ``wirestream protocol=<name> server-port=<port>``
  and each SYN carries the comment ``wirestream connection=0x<id> tapped=<side>``: the
  reader takes the protocol, the port, the capture's connection ids and which side
  recorded each connection from them, so a capture read back from its pcapng is
  record for record the capture (``direction`` included).  Other tools show them as the
  interface description and a packet comment.

Reading (``PcapReader``, ``iter_pcap_records``) is three steps, each its own module:
the packets of the file (``pcap_files``: classic pcap and pcapng), the TCP segment in
each packet (``tcp_segments``: link layers, IPv4/IPv6, TCP), and the connections' byte
streams cut into frames (``tcp_streams``: reassembly, which side is the client, gaps).

Only the standard library: pcapng (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-02.html)
is a handful of fixed layouts, and IPv4/TCP headers are two ``struct`` formats.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Final

from wirestream.runtime.capture.format import FLAG_OUT, FLAG_SERVER, Side
from wirestream.runtime.capture.pcap_files import (
    BYTE_ORDER_MAGIC,
    IF_DESCRIPTION,
    IF_TSRESOL,
    OPT_COMMENT,
    OPT_END,
    PCAPNG_EPB,
    PCAPNG_IDB,
    PCAPNG_SHB,
    PcapError,
    first_interface,
    iter_packets,
    sniff,
)
from wirestream.runtime.capture.protocols import CaptureProtocol, get_protocol
from wirestream.runtime.capture.reader import CaptureRecord, RawRecord, iter_records, read_header
from wirestream.runtime.capture.tcp_segments import Malformed, parse_segment
from wirestream.runtime.capture.tcp_streams import (
    DEFAULT_MAX_PENDING_BYTES,
    DEFAULT_MAX_PENDING_SEGMENTS,
    Problem,
    TcpStreams,
)
from wirestream.runtime.errors import EncodeError

__all__ = [
    "PcapError",
    "PcapReader",
    "Problem",
    "iter_pcap_records",
    "pcap_raw_records",
    "is_pcap",
    "described_capture",
    "WELL_KNOWN_PORTS",
    "DEFAULT_MSS",
    "ACK_EVERY",
    "LINKTYPE_ETHERNET",
    "PcapngWriter",
    "PcapngFile",
    "write_pcapng",
    "default_port",
    "ipv4_tcp_packet",
    "ethernet_frame",
    "TCP_FIN",
    "TCP_SYN",
    "TCP_RST",
    "TCP_PSH",
    "TCP_ACK",
]

WELL_KNOWN_PORTS: Final = {"rsocket": 7878, "rabbitmq_stream": 5552}
"""Server ports by protocol family: RabbitMQ's stream plugin listens on 5552 (its docs);
RSocket has no IANA port, 7878 is the one rsocket-java's and rsocket-py's examples (and
ours) use.  Reactive Streams and BPMUX have none: give ``server_port``."""

DEFAULT_MSS: Final = 1460
"""Ethernet's: a 1500-byte MTU less 20 bytes of IPv4 and 20 of TCP header."""
ACK_EVERY: Final = 256 * 1024
"""The receiver of a long one-way run of data acknowledges it every this many bytes."""
WINDOW_SCALE: Final = 7
"""The window-scale shift both synthesized ends announce: a 65535 << 7 (8 MiB) window,
well above ``ACK_EVERY`` plus a segment, so no segment ever fills it."""

LINKTYPE_ETHERNET: Final = 1
SERVER_IP: Final = bytes([127, 0, 0, 1])
SERVER_MAC: Final = bytes.fromhex("020000000001")  # locally administered
CLIENT_MAC: Final = bytes.fromhex("020000000002")
FIRST_CLIENT_PORT: Final = 49152  # the IANA dynamic range, 49152..65535
CLIENT_PORTS: Final = 16384
LOW_CLIENT_PORT: Final = 32768  # when the server port is itself in the dynamic range

TCP_FIN: Final = 0x01
TCP_SYN: Final = 0x02
TCP_RST: Final = 0x04
TCP_PSH: Final = 0x08
TCP_ACK: Final = 0x10

_SEQ: Final = 1 << 32
_ETHERTYPE_IPV4: Final = 0x0800

# pcapng (draft-ietf-opsawg-pcapng, section 4; block and option codes shared with the
# reader in pcap_files), all little-endian here; the SHB option this writer adds:
_SHB_USERAPPL: Final = 4

_IPV4: Final = struct.Struct("!BBHHHBBH4s4s")
_TCP: Final = struct.Struct("!HHIIBBHHH")


def default_port(protocol: CaptureProtocol | str) -> int | None:
    """The well-known server port of ``protocol``'s family (None: it has none)."""
    name = protocol.name if isinstance(protocol, CaptureProtocol) else get_protocol(protocol).name
    return WELL_KNOWN_PORTS.get(name.partition("/")[0])


# --- packets -------------------------------------------------------------------------


def _checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``.  The ones' complement sum of 16-bit
    words is the value of the bytes as one big number modulo 0xFFFF (2**16 = 1 mod
    0xFFFF), which Python's big integers compute in C."""
    if len(data) % 2:
        data += b"\0"
    total = int.from_bytes(data, "big") % 0xFFFF
    if total == 0 and any(data):
        total = 0xFFFF  # a non-zero sum that is a multiple of 0xFFFF is 0xFFFF, not 0
    return ~total & 0xFFFF


def ipv4_tcp_packet(
    src: bytes,
    dst: bytes,
    sport: int,
    dport: int,
    seq: int,
    ack: int,
    flags: int,
    payload: bytes = b"",
    *,
    options: bytes = b"",
    window: int = 0xFFFF,
    ip_id: int = 0,
) -> bytes:
    """An IPv4 packet holding one TCP segment, both checksums computed.  ``options``
    (TCP options) must be padded to a multiple of 4 bytes."""
    if len(options) % 4:
        raise ValueError("TCP options must be padded to a multiple of 4 bytes")
    tcp_length = _TCP.size + len(options) + len(payload)
    total = _IPV4.size + tcp_length
    if total > 0xFFFF:
        raise ValueError(f"an IPv4 packet holds at most 65535 bytes, not {total}")
    offset = (_TCP.size + len(options)) // 4 << 4
    ack_value = ack % _SEQ if flags & TCP_ACK else 0
    header = _TCP.pack(sport, dport, seq % _SEQ, ack_value, offset, flags, window, 0, 0)
    pseudo = struct.pack("!4s4sBBH", src, dst, 0, 6, tcp_length)
    checksum = _checksum(pseudo + header + options + payload)
    tcp = header[:16] + struct.pack("!H", checksum) + header[18:] + options
    # version 4, IHL 5; DF set; TTL 64; protocol 6 (TCP)
    ip = _IPV4.pack(0x45, 0, total, ip_id & 0xFFFF, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return ip + tcp + payload


def ethernet_frame(dst_mac: bytes, src_mac: bytes, packet: bytes, ethertype: int = 0x0800) -> bytes:
    return dst_mac + src_mac + struct.pack("!H", ethertype) + packet


# --- pcapng blocks -------------------------------------------------------------------


def _option(code: int, value: bytes) -> bytes:
    pad = -len(value) % 4
    return struct.pack("<HH", code, len(value)) + value + b"\0" * pad


def _options(*pairs: tuple[int, bytes]) -> bytes:
    if not pairs:
        return b""
    return b"".join(_option(code, value) for code, value in pairs) + _option(OPT_END, b"")


def _block(kind: int, body: bytes) -> bytes:
    length = 12 + len(body)
    return struct.pack("<II", kind, length) + body + struct.pack("<I", length)


class PcapngFile:
    """The pcapng blocks this module writes, appended to a binary file: one section
    header, interfaces, enhanced packet blocks (nanosecond timestamps)."""

    def __init__(self, out: BinaryIO, application: str = "wirestream") -> None:
        self.out = out
        self.packets = 0
        body = struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)  # v1.0, section length unknown
        body += _options((_SHB_USERAPPL, application.encode()))
        out.write(_block(PCAPNG_SHB, body))
        self._interfaces = 0

    def add_interface(
        self, linktype: int = LINKTYPE_ETHERNET, description: str | None = None
    ) -> int:
        """Add an interface (nanosecond timestamps, no snap length); returns its id."""
        options = [(IF_TSRESOL, bytes([9]))]
        if description:
            options.insert(0, (IF_DESCRIPTION, description.encode()))
        body = struct.pack("<HHI", linktype, 0, 0) + _options(*options)
        self.out.write(_block(PCAPNG_IDB, body))
        self._interfaces += 1
        return self._interfaces - 1

    def add_packet(
        self, interface: int, timestamp_ns: int, data: bytes, comment: str | None = None
    ) -> None:
        ts = timestamp_ns & 0xFFFFFFFFFFFFFFFF
        pad = -len(data) % 4
        body = struct.pack("<IIIII", interface, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data))
        body += data + b"\0" * pad
        if comment:
            body += _options((OPT_COMMENT, comment.encode()))
        self.out.write(_block(PCAPNG_EPB, body))
        self.packets += 1


# --- the writer ----------------------------------------------------------------------


@dataclass
class _Connection:
    """One synthesized TCP connection: its endpoints and where each side's sequence is."""

    number: int
    connection_id: int
    tapped: Side
    client_ip: bytes
    client_port: int
    seq: dict[Side, int]
    """The next sequence number each side sends."""
    unacked: dict[Side, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    """Bytes each side sent that the other has not acknowledged yet."""
    ip_id: dict[Side, int] = field(default_factory=lambda: {"client": 0, "server": 0})
    last_ns: int = 0


def _isn(connection_id: int, side: Side) -> int:
    """An initial sequence number drawn from the connection (reproducible output)."""
    return zlib.crc32(f"{connection_id:x}/{side}".encode())


class PcapngWriter:
    """Capture records -> a pcapng file of TCP connections (the module docstring).

    ``add(record)`` for each record in capture order, then ``close()`` (or a ``with``
    block), which writes the connections' closing handshakes.  ``out`` is a binary file
    opened for writing; it is left open.
    """

    def __init__(
        self,
        out: BinaryIO,
        protocol: CaptureProtocol | str,
        *,
        server_port: int | None = None,
        mss: int = DEFAULT_MSS,
    ) -> None:
        self.protocol = (
            protocol if isinstance(protocol, CaptureProtocol) else get_protocol(protocol)
        )
        port = default_port(self.protocol) if server_port is None else server_port
        if port is None:
            raise ValueError(f"{self.protocol.name} has no well-known port: give server_port")
        if not 1 <= port <= 65535:
            raise ValueError(f"server port {port} is not 1..65535")
        if not 64 <= mss <= 65495:  # 65535 less the IPv4 and TCP headers
            raise ValueError(f"mss {mss} is not 64..65495")
        self.server_port = port
        self.mss = mss
        self.frames = 0
        self._prefix = self.protocol.length_prefix
        self._max_frame = (1 << (8 * self._prefix)) - 1 if self._prefix else None
        self._file = PcapngFile(out)
        self._interface = self._file.add_interface(
            LINKTYPE_ETHERNET,
            f"wirestream protocol={self.protocol.name} server-port={port}",
        )
        self._connections: dict[int, _Connection] = {}
        self._first_client_port = (
            LOW_CLIENT_PORT if port >= FIRST_CLIENT_PORT else FIRST_CLIENT_PORT
        )
        self._closed = False

    @property
    def packets(self) -> int:
        """Packets written so far."""
        return self._file.packets

    # -------------------------------------------------------------- packets

    def _send(
        self,
        conn: _Connection,
        sender: Side,
        flags: int,
        timestamp_ns: int,
        payload: bytes = b"",
        *,
        options: bytes = b"",
        comment: str | None = None,
    ) -> None:
        receiver: Side = "server" if sender == "client" else "client"
        client = (conn.client_ip, conn.client_port)
        server = (SERVER_IP, self.server_port)
        (src, sport), (dst, dport) = (client, server) if sender == "client" else (server, client)
        packet = ipv4_tcp_packet(
            src, dst, sport, dport, conn.seq[sender], conn.seq[receiver], flags, payload,
            options=options, ip_id=conn.ip_id[sender],
        )  # fmt: skip
        conn.ip_id[sender] += 1
        macs = (SERVER_MAC, CLIENT_MAC) if sender == "client" else (CLIENT_MAC, SERVER_MAC)
        self._file.add_packet(self._interface, timestamp_ns, ethernet_frame(*macs, packet), comment)
        conn.seq[sender] = (
            conn.seq[sender] + len(payload) + bool(flags & (TCP_SYN | TCP_FIN))
        ) % _SEQ
        if flags & TCP_ACK:
            conn.unacked[receiver] = 0
        conn.unacked[sender] += len(payload)

    def _open(self, connection_id: int, tapped: Side, timestamp_ns: int) -> _Connection:
        number = len(self._connections)
        group, index = divmod(number, CLIENT_PORTS)
        client_ip = SERVER_IP if group == 0 else bytes([127, (group >> 8) & 0xFF, group & 0xFF, 1])
        conn = _Connection(
            number,
            connection_id,
            tapped,
            client_ip,
            self._first_client_port + index,
            {"client": _isn(connection_id, "client"), "server": _isn(connection_id, "server")},
            last_ns=timestamp_ns,
        )
        self._connections[connection_id] = conn
        syn_options = struct.pack("!BBH", 2, 4, min(self.mss, 0xFFFF))  # MSS
        syn_options += struct.pack("!BBBB", 1, 3, 3, WINDOW_SCALE)  # NOP, window scale
        self._send(conn, "client", TCP_SYN, timestamp_ns, options=syn_options,
                   comment=f"wirestream connection={connection_id:#018x} tapped={tapped}")  # fmt: skip
        self._send(conn, "server", TCP_SYN | TCP_ACK, timestamp_ns, options=syn_options)
        self._send(conn, "client", TCP_ACK, timestamp_ns)
        return conn

    # -------------------------------------------------------------- records

    def add(self, record: CaptureRecord) -> None:
        """Write one record's frame as the TCP segments that carry it."""
        if self._closed:
            raise ValueError("the pcapng writer is closed")
        frame = record.frame
        if self._max_frame is not None and len(frame) > self._max_frame:
            raise EncodeError(
                f"a frame of {len(frame)} bytes does not fit {self.protocol.name}'s "
                f"{self._prefix}-byte length prefix (connection {record.connection_id:#x})"
            )
        conn = self._connections.get(record.connection_id)
        if conn is None:
            conn = self._open(record.connection_id, record.side, record.timestamp_ns)
        conn.last_ns = max(conn.last_ns, record.timestamp_ns)
        sender = record.sender
        receiver: Side = "server" if sender == "client" else "client"
        data = frame if not self._prefix else len(frame).to_bytes(self._prefix, "big") + frame
        mss, when = self.mss, record.timestamp_ns
        view = memoryview(data)
        for start in range(0, len(data), mss):
            last = start + mss >= len(data)
            flags = TCP_ACK | (TCP_PSH if last else 0)
            self._send(conn, sender, flags, when, bytes(view[start : start + mss]))
            if conn.unacked[sender] >= ACK_EVERY:
                self._send(conn, receiver, TCP_ACK, when)
        self.frames += 1

    def close(self) -> None:
        """Close every connection (FIN from the client, FIN from the server, last ACK, at
        the time of its last record).  The output file stays open."""
        if self._closed:
            return
        self._closed = True
        for conn in self._connections.values():
            when = conn.last_ns
            self._send(conn, "client", TCP_FIN | TCP_ACK, when)
            self._send(conn, "server", TCP_FIN | TCP_ACK, when)
            self._send(conn, "client", TCP_ACK, when)

    def __enter__(self) -> PcapngWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()


def _capture_paths(
    capture: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[Path]:
    if isinstance(capture, (str, os.PathLike)):
        return [Path(capture)]
    return [Path(p) for p in capture]


def write_pcapng(
    capture: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    server_port: int | None = None,
    mss: int = DEFAULT_MSS,
) -> int:
    """Write the capture file ``capture`` (or the files of one rotated capture, oldest
    first: ``capture_files(path)``) as the pcapng file ``out``; returns how many frames
    it holds.  ``server_port``: the synthesized server's port (default: the protocol's
    well-known port, ``WELL_KNOWN_PORTS``).  ``CaptureError`` if a capture file is
    corrupt; ``ValueError`` if the files hold different protocols."""
    paths = _capture_paths(capture)
    if not paths:
        raise ValueError("no capture file given")
    protocols = {str(path): read_header(path).protocol for path in paths}
    names = {get_protocol(name).name for name in protocols.values()}
    if len(names) != 1:
        raise ValueError(f"the capture files hold different protocols: {protocols}")
    protocol = get_protocol(names.pop())
    with open(out, "wb") as file:
        with PcapngWriter(file, protocol, server_port=server_port, mss=mss) as writer:
            for record in _records(paths):
                writer.add(record)
        return writer.frames


def _records(paths: Iterable[Path]) -> Iterable[CaptureRecord]:
    for path in paths:
        yield from iter_records(path)


# --- the reader ----------------------------------------------------------------------

_DESCRIPTION: Final = re.compile(r"wirestream protocol=(\S+) server-port=(\d{1,5})")


def is_pcap(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` is a pcap or pcapng file (by its first bytes)."""
    return sniff(path) is not None


def described_capture(path: str | os.PathLike[str]) -> tuple[str, int] | None:
    """(protocol name, server port) of a pcapng file ``PcapngWriter`` wrote, from its
    interface description; None for any other pcap or pcapng file."""
    interface = first_interface(path)
    if interface is None or not interface.description:
        return None
    match = _DESCRIPTION.fullmatch(interface.description)
    if not match:
        return None
    return match.group(1), int(match.group(2))


class PcapReader:
    """The frames of one protocol's TCP connections in a pcap or pcapng file, as the
    ``CaptureRecord``s a ``.wscap`` reader yields (``wirestream.runtime.capture.tcp_streams``
    says how streams are reassembled, which side is the client, and what a gap is).

    ``protocol``: a capture protocol name; optional for files ``PcapngWriter`` wrote,
    which name theirs.  ``server_port``: the protocol's server port (0: every TCP
    connection is read); default: the one such a file names, else the protocol's
    well-known port (``WELL_KNOWN_PORTS``).  Iterate once; ``problems``,
    ``problem_counts`` and the counters are complete after the iteration.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        protocol: CaptureProtocol | str | None = None,
        *,
        server_port: int | None = None,
        midstream: bool = False,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        max_pending_segments: int = DEFAULT_MAX_PENDING_SEGMENTS,
    ) -> None:
        self.path = str(path)
        described = described_capture(path)  # PcapError if it is no pcap file at all
        if protocol is None:
            if described is None:
                raise ValueError(
                    f"{self.path}: a pcap file does not say which protocol it carries: "
                    "give the protocol (e.g. rsocket/1.0)"
                )
            protocol = described[0]
        resolved = protocol if isinstance(protocol, CaptureProtocol) else get_protocol(protocol)
        self.protocol: CaptureProtocol = resolved
        if server_port is None and described is not None:
            if get_protocol(described[0]) is resolved:
                server_port = described[1]
        if server_port is None:
            server_port = default_port(resolved)
        if server_port is None:
            raise ValueError(
                f"{resolved.name} has no well-known port: give the server port (0 reads "
                "every TCP connection)"
            )
        self.server_port = server_port
        self.streams = TcpStreams(
            resolved,
            server_port,
            midstream=midstream,
            max_pending_bytes=max_pending_bytes,
            max_pending_segments=max_pending_segments,
        )
        self.packets = 0
        """Packets in the file."""
        self.segments = 0
        """TCP segments among them (of any port)."""

    @property
    def connections(self) -> int:
        return self.streams.connections

    @property
    def problems(self) -> list[Problem]:
        return self.streams.problems

    @property
    def problem_counts(self) -> dict[str, int]:
        return self.streams.problem_counts

    def __iter__(self) -> Iterator[CaptureRecord]:
        streams = self.streams
        end = 0
        for packet in iter_packets(self.path):
            self.packets += 1
            end = packet.offset + 1
            parsed = parse_segment(packet.linktype, packet.data, packet.original_length)
            if parsed is None:
                continue
            if isinstance(parsed, Malformed):
                streams.malformed(packet.offset, parsed.reason)
                continue
            self.segments += 1
            records = streams.feed(parsed, packet.timestamp_ns, packet.offset, packet.comment)
            yield from records
        yield from streams.finish(max(end, os.path.getsize(self.path)))


def iter_pcap_records(
    path: str | os.PathLike[str],
    protocol: CaptureProtocol | str | None = None,
    *,
    server_port: int | None = None,
    midstream: bool = False,
) -> Iterator[CaptureRecord]:
    """The records of the pcap or pcapng file at ``path`` (``PcapReader``)."""
    return iter(PcapReader(path, protocol, server_port=server_port, midstream=midstream))


def pcap_raw_records(reader: PcapReader) -> Iterator[RawRecord]:
    """A pcap file's records as ``reader.scan_records``' tuples (the offset: of the packet
    that completed the frame; the flags as a capture file's record has them)."""
    for record in reader:
        flags = (FLAG_OUT if record.direction == "out" else 0) | (
            FLAG_SERVER if record.side == "server" else 0
        )
        yield record.offset, record.timestamp_ns, record.connection_id, flags, record.frame
