"""Captures: every frame of a connection, recorded to append-only files, read back later.

The file format is specified in ``wirestream.runtime.capture.format`` (enough to write a reader in
another language).  The pieces:

- ``CaptureWriter`` (``writer``): appends records, rotates files by size, keeps N files;
- ``tap`` / ``CapturedTransport`` (``tap``): records a ``wirestream.runtime.aio`` transport's frames;
  every peer's ``connect``/``serve`` takes ``capture=writer`` and taps its connections;
- ``read_header``, ``iter_records``, ``plan_ranges`` (``reader``): the records of a file
  or of a byte range of it (how the Spark source splits files into partitions);
- ``get_protocol`` (``protocols``): which protocols a capture can hold and how their
  frames are cut and decoded;
- ``write_pcapng``, ``PcapReader``, ``iter_pcap_records`` (``pcap``): a capture as a pcapng
  file for Wireshark, and pcap/pcapng files of TCP traffic read as capture records.

>>> import asyncio
>>> from wirestream.runtime.capture import CaptureWriter, iter_records
>>> from wirestream.runtime.rsocket import connect
>>> async def main(capture: CaptureWriter) -> None:
...     async with connect("tcp://127.0.0.1:7878", capture=capture) as rs:
...         await rs.request_response(b"ping")
>>> with CaptureWriter("caps/demo.wscap", "rsocket/1.0") as capture:  # doctest: +SKIP
...     asyncio.run(main(capture))
>>> [r.direction for r in iter_records("caps/demo.000000.wscap")]  # doctest: +SKIP
['out', 'out', 'in']
"""

from wirestream.runtime.capture.format import (
    FORMAT_VERSION,
    MAX_FRAME_LENGTH,
    CaptureError,
    Direction,
    FileHeader,
    Side,
)
from wirestream.runtime.capture.protocols import PROTOCOLS, CaptureProtocol, get_protocol
from wirestream.runtime.capture.reader import (
    CaptureRecord,
    iter_records,
    plan_ranges,
    read_header,
    split_ranges,
)
from wirestream.runtime.capture.tap import CapturedTransport, tap, tap_accepted
from wirestream.runtime.capture.writer import DEFAULT_MAX_FILE_BYTES, CaptureWriter, capture_files
from wirestream.runtime.capture.pcap import PcapError, PcapReader, iter_pcap_records, write_pcapng

__all__ = [
    "FORMAT_VERSION",
    "MAX_FRAME_LENGTH",
    "DEFAULT_MAX_FILE_BYTES",
    "CaptureError",
    "CaptureProtocol",
    "CaptureRecord",
    "CaptureWriter",
    "CapturedTransport",
    "Direction",
    "FileHeader",
    "PROTOCOLS",
    "PcapError",
    "PcapReader",
    "Side",
    "capture_files",
    "get_protocol",
    "iter_pcap_records",
    "iter_records",
    "plan_ranges",
    "read_header",
    "split_ranges",
    "tap",
    "tap_accepted",
    "write_pcapng",
]
