"""Hand-made TCP connections and pcap files for the pcap reader's tests.

``Flow`` makes the packets of one TCP connection (either IP version) with chosen
sequence numbers, so a test can drop, repeat, reorder or cut segments; ``link`` wraps an
IP packet in one of the link layers the reader knows; ``write_pcap`` and
``write_pcapng`` write packets in each file variant (classic pcap in both byte orders and
both resolutions, pcapng in both byte orders with any ``if_tsresol``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

from wirestream.runtime.capture.pcap import (
    TCP_ACK,
    TCP_FIN,
    TCP_PSH,
    TCP_RST,
    TCP_SYN,
    ipv4_tcp_packet,
)

__all__ = ["Flow", "frames_stream", "link", "write_pcap", "write_pcapng", "TCP_ACK", "TCP_FIN",
           "TCP_PSH", "TCP_RST", "TCP_SYN"]  # fmt: skip

CLIENT4 = bytes([10, 0, 0, 1])
SERVER4 = bytes([10, 0, 0, 2])
CLIENT6 = bytes.fromhex("fd000000000000000000000000000001")
SERVER6 = bytes.fromhex("fd000000000000000000000000000002")


def ipv6_tcp_packet(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int,
                    flags: int, payload: bytes = b"") -> bytes:  # fmt: skip
    """An IPv6 packet with one TCP segment (checksum 0: the reader does not check it)."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq % 2**32, ack % 2**32, 5 << 4, flags,
                      0xFFFF, 0, 0)  # fmt: skip
    return (
        struct.pack("!IHBB16s16s", 6 << 28, len(tcp) + len(payload), 6, 64, src, dst)
        + tcp
        + payload
    )


class Flow:
    """One TCP connection's packets: ``packet(sender, offset, payload)`` is a segment
    whose first byte is byte ``offset`` of the sender's stream."""

    def __init__(self, *, client_port: int = 50000, server_port: int = 7878,
                 client_isn: int = 1000, server_isn: int = 900000, ipv6: bool = False) -> None:  # fmt: skip
        self.ports = {"client": client_port, "server": server_port}
        self.isn = {"client": client_isn, "server": server_isn}
        self.ipv6 = ipv6
        self.addresses = ({"client": CLIENT6, "server": SERVER6} if ipv6
                          else {"client": CLIENT4, "server": SERVER4})  # fmt: skip
        self.sent = {"client": 0, "server": 0}

    def packet(self, sender: str, offset: int, payload: bytes = b"",
               flags: int = TCP_ACK | TCP_PSH, *, seq: int | None = None) -> bytes:  # fmt: skip
        other = "server" if sender == "client" else "client"
        number = self.isn[sender] + 1 + offset if seq is None else seq
        ack = self.isn[other] + 1 + self.sent[other]
        args = (self.addresses[sender], self.addresses[other], self.ports[sender],
                self.ports[other], number, ack, flags, payload)  # fmt: skip
        if self.ipv6:
            return ipv6_tcp_packet(*args)
        return ipv4_tcp_packet(*args)

    def handshake(self) -> list[bytes]:
        return [
            self.packet("client", -1, b"", TCP_SYN),
            self.packet("server", -1, b"", TCP_SYN | TCP_ACK),
            self.packet("client", 0, b"", TCP_ACK),
        ]

    def send(self, sender: str, data: bytes, mss: int = 1000) -> list[bytes]:
        """``data`` from ``sender`` in order, in segments of ``mss`` bytes."""
        packets = []
        for start in range(0, len(data), mss):
            packets.append(self.packet(sender, self.sent[sender], data[start : start + mss]))
            self.sent[sender] += len(data[start : start + mss])
        return packets

    def close(self) -> list[bytes]:
        return [
            self.packet("client", self.sent["client"], b"", TCP_FIN | TCP_ACK),
            self.packet("server", self.sent["server"], b"", TCP_FIN | TCP_ACK),
            self.packet("client", self.sent["client"] + 1, b"", TCP_ACK),
        ]


def frames_stream(frames: Sequence[bytes], prefix: int = 3) -> bytes:
    """Frames behind their length prefix (RSocket's 3 bytes by default)."""
    return b"".join(len(f).to_bytes(prefix, "big") + f for f in frames)


def link(linktype: int, ip: bytes, *, order: str = "little") -> bytes:
    """``ip`` as a packet of ``linktype``."""
    v6 = ip[0] >> 4 == 6
    ethertype = struct.pack("!H", 0x86DD if v6 else 0x0800)
    if linktype == 1:
        return bytes(6) + bytes.fromhex("020000000009") + ethertype + ip
    if linktype == 0x8100:  # a test's name for "Ethernet with an 802.1Q tag"
        return bytes(12) + b"\x81\x00\x00\x2a" + ethertype + ip
    if linktype in (101, 228, 229, 12, 14):
        return ip
    if linktype == 113:  # SLL: packet type, ARPHRD, address length, address, protocol
        return struct.pack("!HHH8s", 0, 772, 6, bytes(8)) + ethertype + ip
    if linktype == 276:  # SLL2: protocol, reserved, ifindex, ARPHRD, type, addr len, addr
        return ethertype + struct.pack("!HIHBB8s", 0, 1, 772, 0, 6, bytes(8)) + ip
    if linktype == 0:
        family = 30 if v6 else 2
        return family.to_bytes(4, order) + ip  # type: ignore[arg-type]
    if linktype == 108:
        return (24 if v6 else 2).to_bytes(4, "big") + ip
    raise ValueError(linktype)


def write_pcap(path: Path, packets: Sequence[tuple[int, bytes]], linktype: int, *,
               big_endian: bool = False, nano: bool = False, snaplen: int = 262144,
               original: Sequence[int] | None = None) -> None:  # fmt: skip
    """A classic pcap file of (timestamp_ns, packet) pairs."""
    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for k, (when, data) in enumerate(packets):
        seconds, nanos = divmod(when, 10**9)
        fraction = nanos if nano else nanos // 1000
        wire = len(data) if original is None else original[k]
        out.append(struct.pack(order + "IIII", seconds, fraction, len(data), wire) + data)
    path.write_bytes(b"".join(out))


def _block(order: str, kind: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(order + "II", kind, length) + body + struct.pack(order + "I", length)


def _option(order: str, code: int, value: bytes) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def write_pcapng(path: Path, packets: Sequence[tuple[int, bytes]], linktype: int, *,
                 big_endian: bool = False, tsresol: int = 9, tsoffset: int = 0,
                 block: str = "epb", sections: int = 1) -> None:  # fmt: skip
    """A pcapng file of (timestamp_ns, packet) pairs, timestamps in ``tsresol`` units
    (``if_tsresol``'s byte: 0..127 = 10**-n, 128+n = 2**-n), packets as enhanced
    (``epb``), simple (``spb``) or obsolete (``pb``) packet blocks, the packets shared
    out over ``sections`` sections."""
    order = ">" if big_endian else "<"
    end = _option(order, 0, b"")
    out = []
    per = -(-len(packets) // sections) if packets else 0
    for section in range(sections):
        out.append(_block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
        options = _option(order, 9, bytes([tsresol]))
        if tsoffset:
            options += _option(order, 14, struct.pack(order + "q", tsoffset))
        out.append(_block(order, 1, struct.pack(order + "HHI", linktype, 0, 0) + options + end))
        out.append(_block(order, 0x0BAD, b"a custom block that readers skip"))
        for when, data in packets[section * per : (section + 1) * per]:
            nanos = when - tsoffset * 10**9
            ticks = (nanos * 2 ** (tsresol & 0x7F) // 10**9 if tsresol & 0x80
                     else nanos * 10 ** tsresol // 10**9)  # fmt: skip
            high, low = ticks >> 32, ticks & 0xFFFFFFFF
            if block == "epb":
                body = struct.pack(order + "IIIII", 0, high, low, len(data), len(data)) + data
            elif block == "pb":
                body = struct.pack(order + "HHIIII", 0, 0, high, low, len(data), len(data)) + data
            else:
                body = struct.pack(order + "I", len(data)) + data
            out.append(_block(order, {"epb": 6, "pb": 2, "spb": 3}[block], body))
    path.write_bytes(b"".join(out))
