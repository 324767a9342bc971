"""From a captured packet to its TCP segment: link layer, IPv4 or IPv6, TCP header.

``parse_segment(linktype, data, original_length)`` peels the link layer off (the types
tcpdump and Wireshark write for TCP traffic, ``LINKTYPES``), then the IP header, and
returns the ``Segment``; a packet that is not TCP over IP is None, one that claims to be
but whose headers do not hold together is a ``Malformed`` naming why.  Nothing here
raises on packet bytes: a capture of a busy network holds odd packets, and one of them
should not fail the reading of the rest.

Not done, on purpose: checksums are not verified (a capture taken on a sending host holds
the checksums the NIC had yet to fill in: tcpdump's "incorrect cksum" on every outgoing
packet), and IP fragments are not reassembled (TCP avoids fragmentation by its MSS and
path-MTU discovery; a fragment is a ``Malformed``, which the stream reports).
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

__all__ = ["Segment", "Malformed", "parse_segment", "LINKTYPES"]

LINKTYPE_NULL: Final = 0  # BSD loopback: a 4-byte address family in the host's byte order
LINKTYPE_ETHERNET: Final = 1
LINKTYPE_RAW: Final = 101  # a raw IPv4 or IPv6 packet
LINKTYPE_LOOP: Final = 108  # OpenBSD loopback: the address family in network order
LINKTYPE_LINUX_SLL: Final = 113  # Linux "cooked" capture (tcpdump -i any)
LINKTYPE_IPV4: Final = 228
LINKTYPE_IPV6: Final = 229
LINKTYPE_LINUX_SLL2: Final = 276  # cooked v2 (newer tcpdump -i any)
_DLT_RAW_BSD: Final = (12, 14)  # DLT_RAW on some BSDs, found in old files as the link type

LINKTYPES: Final = {
    LINKTYPE_NULL: "NULL (BSD loopback)",
    LINKTYPE_ETHERNET: "Ethernet",
    LINKTYPE_RAW: "raw IP",
    12: "raw IP (BSD DLT_RAW)",
    14: "raw IP (BSD DLT_RAW)",
    LINKTYPE_LOOP: "LOOP (OpenBSD loopback)",
    LINKTYPE_LINUX_SLL: "Linux cooked (SLL)",
    LINKTYPE_IPV4: "raw IPv4",
    LINKTYPE_IPV6: "raw IPv6",
    LINKTYPE_LINUX_SLL2: "Linux cooked v2 (SLL2)",
}
"""The link types this reader unpacks, by number (www.tcpdump.org/linktypes.html)."""

_ETHERTYPE_IPV4: Final = 0x0800
_ETHERTYPE_IPV6: Final = 0x86DD
_VLAN_TAGS: Final = (0x8100, 0x88A8, 0x9100)
_AF_INET: Final = 2
_AF_INET6: Final = (10, 24, 28, 30)  # Linux, NetBSD/OpenBSD, FreeBSD, macOS
_IPV6_EXTENSIONS: Final = (0, 43, 60)  # hop-by-hop, routing, destination options
_IPV6_FRAGMENT: Final = 44
_IPV6_AH: Final = 51
_TCP: Final = 6

_IPV4_HEAD: Final = struct.Struct("!BBHHHBBH4s4s")
_IPV6_HEAD: Final = struct.Struct("!IHBB16s16s")
_TCP_HEAD: Final = struct.Struct("!HHIIBB")


class Segment(NamedTuple):
    """A TCP segment: the endpoints, sequence and acknowledgement numbers, flags, and the
    payload as captured; ``missing`` payload bytes were on the wire but not captured (a
    snap length cut the packet)."""

    src: bytes
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int = 0


class Malformed(NamedTuple):
    """A packet that claims to carry TCP (or IP) but cannot be read as such."""

    reason: str


def _ip_of(linktype: int, data: bytes) -> bytes | None:
    """The IP packet inside a link-layer frame (None: not IP, or a link type we do not
    know)."""
    if linktype == LINKTYPE_ETHERNET:
        pos = 12
        while True:
            if len(data) < pos + 2:
                return None
            ethertype = int.from_bytes(data[pos : pos + 2], "big")
            if ethertype in _VLAN_TAGS:
                pos += 4  # an 802.1Q / 802.1ad tag: its type field follows
                continue
            break
        if ethertype not in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6):
            return None
        return data[pos + 2 :]
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6, *_DLT_RAW_BSD):
        return data
    if linktype == LINKTYPE_LINUX_SLL:
        if len(data) < 16 or int.from_bytes(data[14:16], "big") not in (
            _ETHERTYPE_IPV4,
            _ETHERTYPE_IPV6,
        ):
            return None
        return data[16:]
    if linktype == LINKTYPE_LINUX_SLL2:
        if len(data) < 20 or int.from_bytes(data[0:2], "big") not in (
            _ETHERTYPE_IPV4,
            _ETHERTYPE_IPV6,
        ):
            return None
        return data[20:]
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if len(data) < 4:
            return None
        orders = ("big",) if linktype == LINKTYPE_LOOP else ("little", "big")
        for order in orders:  # NULL: the capturing host's order, which the file does not say
            family = int.from_bytes(data[:4], order)  # type: ignore[arg-type]
            if family == _AF_INET or family in _AF_INET6:
                return data[4:]
        return None
    return None


def parse_segment(
    linktype: int, data: bytes, original_length: int | None = None
) -> Segment | Malformed | None:
    """The TCP segment in a captured packet (module docstring).  ``original_length``:
    the packet's length on the wire, to tell a payload cut by the snap length."""
    ip = _ip_of(linktype, data)
    if ip is None or not ip:
        return None
    cut = 0 if original_length is None else max(0, original_length - len(data))
    version = ip[0] >> 4
    if version == 4:
        if len(ip) < 20:
            return Malformed(f"an IPv4 header of {len(ip)} bytes")
        first, _, total, _, fragment, _, protocol, _, src, dst = _IPV4_HEAD.unpack_from(ip)
        if protocol != _TCP:
            return None
        header = (first & 0x0F) * 4
        if header < 20 or header > len(ip):
            return Malformed(f"an IPv4 header length of {header} bytes")
        if fragment & 0x3FFF:  # more fragments, or a fragment offset
            return Malformed("an IPv4 fragment (fragments are not reassembled)")
        if total == 0:
            total = len(ip) + cut  # TCP segmentation offload: the length is left 0
        if total < header:
            return Malformed(f"an IPv4 total length of {total}, below its header's {header}")
        available = min(total, len(ip))
        return _tcp(src, dst, ip[header:available], total - available)
    if version == 6:
        if len(ip) < 40:
            return Malformed(f"an IPv6 header of {len(ip)} bytes")
        _, payload_length, next_header, _, src, dst = _IPV6_HEAD.unpack_from(ip)
        pos = 40
        if payload_length == 0:  # a jumbogram (or offload): the payload is what is there
            payload_length = len(ip) - 40 + cut
        end = 40 + payload_length
        while next_header != _TCP:
            if next_header in _IPV6_EXTENSIONS or next_header == _IPV6_AH:
                if len(ip) < pos + 2:
                    return Malformed("a truncated IPv6 extension header")
                size = (ip[pos + 1] + 2) * 4 if next_header == _IPV6_AH else (ip[pos + 1] + 1) * 8
                next_header = ip[pos]
                pos += size
                if pos > min(end, len(ip)):
                    return Malformed("an IPv6 extension header past the packet's end")
                continue
            if next_header == _IPV6_FRAGMENT:
                return Malformed("an IPv6 fragment (fragments are not reassembled)")
            return None
        available = min(end, len(ip))
        return _tcp(src, dst, ip[pos:available], end - available)
    return Malformed(f"IP version {version}")


def _tcp(src: bytes, dst: bytes, tcp: bytes, missing: int) -> Segment | Malformed:
    if len(tcp) < 20:
        return Malformed(f"a TCP header of {len(tcp)} captured bytes")
    sport, dport, seq, ack, offset, flags = _TCP_HEAD.unpack_from(tcp)
    header = (offset >> 4) * 4
    if header < 20:
        return Malformed(f"a TCP data offset of {header} bytes")
    if header > len(tcp):
        if missing:
            return Malformed(f"a TCP header of {header} bytes cut by the snap length")
        return Malformed(f"a TCP header of {header} bytes in a segment of {len(tcp)}")
    return Segment(src, sport, dst, dport, seq, ack, flags, tcp[header:], missing)
