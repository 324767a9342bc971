"""pcap and pcapng files: the packets they hold, with their link type and time.

``iter_packets(path)`` yields every packet of a classic pcap file (both byte orders,
microsecond and nanosecond variants: https://www.ietf.org/archive/id/draft-ietf-opsawg-pcap-04.html)
or of a pcapng file (any number of sections, either byte order, interfaces with their
own link type, ``if_tsresol`` and ``if_tsoffset``; enhanced, simple and obsolete packet
blocks; every other block is skipped: https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-02.html).
Which one a file is comes from its first four bytes (``sniff``), never its name.

Every length in a file is checked before it is used: a header or block that runs past
the end of the file, a block length that is not a multiple of 4 or disagrees with its
trailing copy, a packet longer than ``MAX_PACKET_BYTES``, an option that runs past its
block -- each is a ``PcapError`` (a ``CaptureError``) naming the file and the offset of
the record or block.  No read is sized by the file beyond ``MAX_BLOCK_BYTES``; blocks of
types this reader has no use for are skipped by seeking, whatever their size.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Final, Literal

from wirestream.runtime.capture.format import CaptureError

__all__ = [
    "PcapError",
    "Packet",
    "Interface",
    "iter_packets",
    "sniff",
    "first_interface",
    "MAX_PACKET_BYTES",
    "MAX_BLOCK_BYTES",
    # pcapng block types and option codes (the writer in ``pcap`` uses them too)
    "PCAPNG_SHB",
    "PCAPNG_IDB",
    "PCAPNG_EPB",
    "BYTE_ORDER_MAGIC",
    "OPT_END",
    "OPT_COMMENT",
    "IF_DESCRIPTION",
    "IF_TSRESOL",
]

MAX_PACKET_BYTES: Final = 1 << 20
"""The longest captured packet accepted: 1 MiB, four times libpcap's largest snap length
(262144), above the 64 KiB GSO/GRO packets seen on loopback captures."""
MAX_BLOCK_BYTES: Final = MAX_PACKET_BYTES + (1 << 16)
"""The longest pcapng block read into memory (a packet, its header and its options)."""

_PCAP_MICRO: Final = 0xA1B2C3D4
_PCAP_NANO: Final = 0xA1B23C4D
PCAPNG_SHB: Final = 0x0A0D0D0A
BYTE_ORDER_MAGIC: Final = 0x1A2B3C4D

PCAPNG_IDB: Final = 0x00000001
_PB: Final = 0x00000002  # obsolete Packet Block
_SPB: Final = 0x00000003
PCAPNG_EPB: Final = 0x00000006

OPT_END: Final = 0
OPT_COMMENT: Final = 1
IF_DESCRIPTION: Final = 3
IF_TSRESOL: Final = 9
_IF_TSOFFSET: Final = 14

Format = Literal["pcap", "pcapng"]


class PcapError(CaptureError):
    """A pcap or pcapng file that is not one, or is corrupt or truncated: ``path`` and
    ``offset`` (of the file header, the packet record or the block) say where."""


@dataclass(frozen=True, slots=True)
class Interface:
    """What a pcapng interface (or a pcap file header) says about its packets."""

    linktype: int
    snaplen: int
    description: str | None = None
    ticks_per_second: int = 1_000_000
    """``if_tsresol``: 10**6 unless said otherwise (pcapng default and classic pcap)."""
    offset_seconds: int = 0
    """``if_tsoffset``: seconds added to every timestamp."""


@dataclass(frozen=True, slots=True)
class Packet:
    """One captured packet: where its record/block starts in the file, when, on which
    link type, the captured bytes, how long it was on the wire, its comment."""

    offset: int
    timestamp_ns: int
    linktype: int
    data: bytes
    original_length: int
    comment: str | None = None


def sniff(path: str | os.PathLike[str]) -> Format | None:
    """``"pcap"``, ``"pcapng"`` or None, from the first four bytes of the file."""
    with open(path, "rb") as file:
        head = file.read(4)
    if len(head) < 4:
        return None
    if head == struct.pack("<I", PCAPNG_SHB):  # a palindrome: the same in both orders
        return "pcapng"
    for order in "<>":
        if struct.unpack(order + "I", head)[0] in (_PCAP_MICRO, _PCAP_NANO):
            return "pcap"
    return None


class _File:
    """Exact reads with the offset kept: a short read is a precise ``PcapError``."""

    def __init__(self, file: BinaryIO, path: str) -> None:
        self.file = file
        self.path = path
        self.offset = 0

    def error(self, message: str, offset: int) -> PcapError:
        return PcapError(message, path=self.path, offset=offset)

    def read(self, n: int, what: str, at: int) -> bytes:
        """Exactly ``n`` bytes (``n`` already checked against the limits)."""
        data = self.file.read(n)
        self.offset += len(data)
        if len(data) < n:
            raise self.error(
                f"truncated {what}: {n} bytes expected, the file ends after {len(data)}", at
            )
        return data

    def read_or_end(self, n: int, what: str) -> bytes | None:
        """``n`` bytes, or None at a clean end of the file (no byte left)."""
        at = self.offset
        data = self.file.read(n)
        self.offset += len(data)
        if not data:
            return None
        if len(data) < n:
            raise self.error(
                f"truncated {what}: {n} bytes expected, the file ends after {len(data)}", at
            )
        return data

    def skip(self, n: int, what: str, at: int) -> None:
        end = self.offset + n
        size = os.fstat(self.file.fileno()).st_size
        if end > size:
            raise self.error(
                f"truncated {what}: it runs {end - size} bytes past the end of the file", at
            )
        self.file.seek(end)
        self.offset = end


def iter_packets(path: str | os.PathLike[str]) -> Iterator[Packet]:
    """Every packet of the pcap or pcapng file at ``path``, in file order."""
    name = str(path)
    kind = sniff(path)
    if kind is None:
        raise PcapError(
            "not a pcap or pcapng file (the first 4 bytes are no pcap magic number, "
            "nor a pcapng section header)",
            path=name,
        )
    with open(path, "rb") as raw:
        file = _File(raw, name)
        if kind == "pcap":
            yield from _pcap_packets(file)
        else:
            yield from _pcapng_packets(file)


def first_interface(path: str | os.PathLike[str]) -> Interface | None:
    """The first interface of a pcapng file (the one our writer describes); a classic pcap
    file's header as an interface; None if the file has no interface before its first
    packet."""
    name = str(path)
    kind = sniff(path)
    if kind is None:
        raise PcapError("not a pcap or pcapng file", path=name)
    with open(path, "rb") as raw:
        file = _File(raw, name)
        if kind == "pcap":
            return _pcap_header(file)[0]
        for block in _pcapng_blocks(file):
            if isinstance(block, Interface):
                return block
            if isinstance(block, Packet):
                return None
    return None


# --- classic pcap --------------------------------------------------------------------


def _pcap_header(file: _File) -> tuple[Interface, str, int]:
    head = file.read(24, "pcap file header", 0)
    for order in "<>":
        magic = struct.unpack(order + "I", head[:4])[0]
        if magic in (_PCAP_MICRO, _PCAP_NANO):
            break
    major, minor, _, _, snaplen, network = struct.unpack(order + "HHiIII", head[4:])
    if major != 2:
        raise file.error(f"pcap version {major}.{minor} is not supported (2.4 is)", 0)
    ticks = 1_000_000_000 if magic == _PCAP_NANO else 1_000_000
    # The link type is the low 28 bits; the top four may say whether frames carry an FCS.
    linktype = network & 0x0FFFFFFF
    return Interface(linktype, snaplen, None, ticks), order, ticks


def _pcap_packets(file: _File) -> Iterator[Packet]:
    interface, order, ticks = _pcap_header(file)
    record = struct.Struct(order + "IIII")
    nano = ticks == 1_000_000_000
    while True:
        at = file.offset
        head = file.read_or_end(16, "packet record header")
        if head is None:
            return
        seconds, fraction, captured, original = record.unpack(head)
        if captured > MAX_PACKET_BYTES:
            raise file.error(
                f"packet record declares {captured} captured bytes; the limit is "
                f"{MAX_PACKET_BYTES}",
                at,
            )
        if fraction >= ticks:
            raise file.error(
                f"timestamp fraction {fraction} is not below {ticks} "
                f"({'nano' if nano else 'micro'}second file)",
                at,
            )
        data = file.read(captured, "packet", at)
        timestamp = seconds * 1_000_000_000 + (fraction if nano else fraction * 1000)
        yield Packet(at, timestamp, interface.linktype, data, max(original, captured))


# --- pcapng --------------------------------------------------------------------------


def _options(
    body: bytes, start: int, order: str, file: _File, at: int
) -> Iterator[tuple[int, bytes]]:
    """The (code, value) options of a block body from ``start`` to its end."""
    pos, end = start, len(body)
    header = struct.Struct(order + "HH")
    while pos + 4 <= end:
        code, length = header.unpack_from(body, pos)
        if code == OPT_END:
            return
        value_end = pos + 4 + length
        if value_end > end:
            raise file.error(f"option {code} of {length} bytes runs past the end of its block", at)
        yield code, body[pos + 4 : value_end]
        pos = value_end + (-length % 4)


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace").rstrip("\0")


def _interface(body: bytes, order: str, file: _File, at: int) -> Interface:
    if len(body) < 8:
        raise file.error(f"interface description block of {len(body)} body bytes", at)
    linktype, _, snaplen = struct.unpack_from(order + "HHI", body, 0)
    description: str | None = None
    ticks, offset = 1_000_000, 0
    for code, value in _options(body, 8, order, file, at):
        if code == IF_DESCRIPTION:
            description = _text(value)
        elif code == IF_TSRESOL and len(value) >= 1:
            resolution = value[0]
            exponent = resolution & 0x7F
            if resolution & 0x80:
                if exponent > 63:
                    raise file.error(f"if_tsresol 2**-{exponent} is out of range", at)
                ticks = 1 << exponent
            else:
                if exponent > 18:
                    raise file.error(f"if_tsresol 10**-{exponent} is out of range", at)
                ticks = 10**exponent
        elif code == _IF_TSOFFSET and len(value) == 8:
            (offset,) = struct.unpack(order + "q", value)
    return Interface(linktype, snaplen, description, ticks, offset)


def _nanoseconds(ticks: int, interface: Interface) -> int:
    per = interface.ticks_per_second
    nanos = ticks * 1_000_000_000 // per
    return nanos + interface.offset_seconds * 1_000_000_000


def _comment(body: bytes, start: int, order: str, file: _File, at: int) -> str | None:
    for code, value in _options(body, start, order, file, at):
        if code == OPT_COMMENT:
            return _text(value)
    return None


def _pcapng_blocks(file: _File) -> Iterator[Interface | Packet]:
    """Interfaces and packets in file order (sections reset the interface list)."""
    order = "<"
    interfaces: list[Interface] = []
    first = True
    while True:
        at = file.offset
        head = file.read_or_end(8, "block header")
        if head is None:
            return
        raw_type = head[:4]
        if raw_type == b"\x0a\x0d\x0d\x0a":
            bom = file.read(4, "section header block", at)
            if bom == struct.pack("<I", BYTE_ORDER_MAGIC):
                order = "<"
            elif bom == struct.pack(">I", BYTE_ORDER_MAGIC):
                order = ">"
            else:
                raise file.error(f"section header byte-order magic {bom.hex()} is not 1a2b3c4d", at)
            interfaces = []  # a new section: its own interfaces
            (length,) = struct.unpack(order + "I", head[4:])
            consumed = 12
        elif first:
            raise file.error("a pcapng file starts with a section header block", at)
        else:
            (length,) = struct.unpack(order + "I", head[4:])
            consumed = 8
        first = False
        (kind,) = struct.unpack(order + "I", raw_type)
        least = 28 if kind == PCAPNG_SHB else 12  # a section header has 16 fixed bytes
        if length < least or length % 4:
            raise file.error(
                f"block length {length} is not a multiple of 4 of at least {least}", at
            )
        if kind not in (PCAPNG_SHB, PCAPNG_IDB, PCAPNG_EPB, _SPB, _PB):
            file.skip(length - consumed, f"block of type {kind:#x}", at)
            continue
        if length > MAX_BLOCK_BYTES:
            raise file.error(
                f"block of type {kind:#x} declares {length} bytes; the limit is {MAX_BLOCK_BYTES}",
                at,
            )
        rest = file.read(length - consumed, f"block of type {kind:#x}", at)
        (trailer,) = struct.unpack(order + "I", rest[-4:])
        if trailer != length:
            raise file.error(f"block length {length} and its trailing copy {trailer} differ", at)
        body = rest[:-4]
        if kind == PCAPNG_SHB:
            if len(body) < 12:
                raise file.error("truncated section header block", at)
            major, minor = struct.unpack_from(order + "HH", body, 0)
            if major != 1:
                raise file.error(f"pcapng version {major}.{minor} is not supported (1.0 is)", at)
        elif kind == PCAPNG_IDB:
            interfaces.append(_interface(body, order, file, at))
            yield interfaces[-1]
        else:
            yield _packet(kind, body, order, interfaces, file, at)


def _packet(
    kind: int, body: bytes, order: str, interfaces: list[Interface], file: _File, at: int
) -> Packet:
    if kind == _SPB:
        if len(body) < 4:
            raise file.error("truncated simple packet block", at)
        (original,) = struct.unpack_from(order + "I", body, 0)
        if not interfaces:
            raise file.error("simple packet block before any interface description", at)
        interface = interfaces[0]
        captured = min(original, len(body) - 4)
        if interface.snaplen:
            captured = min(captured, interface.snaplen)
        return Packet(at, 0, interface.linktype, body[4 : 4 + captured], original)
    if kind == PCAPNG_EPB:
        fixed = 20
        if len(body) < fixed:
            raise file.error("truncated enhanced packet block", at)
        number, high, low, captured, original = struct.unpack_from(order + "IIIII", body, 0)
    else:  # the obsolete packet block: a 16-bit interface id and a drop count
        fixed = 20
        if len(body) < fixed:
            raise file.error("truncated packet block", at)
        number, _, high, low, captured, original = struct.unpack_from(order + "HHIIII", body, 0)
    if number >= len(interfaces):
        raise file.error(
            f"packet of interface {number}, but the section describes {len(interfaces)}", at
        )
    end = fixed + captured
    if end > len(body):
        raise file.error(
            f"packet declares {captured} captured bytes; its block holds {len(body) - fixed}",
            at,
        )
    interface = interfaces[number]
    data = body[fixed:end]
    comment = _comment(body, end + (-captured % 4), order, file, at)
    timestamp = _nanoseconds((high << 32) | low, interface)
    return Packet(at, timestamp, interface.linktype, data, max(original, captured), comment)


def _pcapng_packets(file: _File) -> Iterator[Packet]:
    for block in _pcapng_blocks(file):
        if isinstance(block, Packet):
            yield block
