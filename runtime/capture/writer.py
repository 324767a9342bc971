"""Appending records to capture files, with rotation (``CaptureWriter``).

Files.  ``CaptureWriter("caps/rsocket.wscap", "rsocket/1.0")`` writes
``caps/rsocket.000000.wscap``, then, each time the next record would take the current
file past ``max_file_bytes``, closes it and goes on in ``caps/rsocket.000001.wscap``, ...
(``<stem>.<n><suffix>``, n in at least six digits so that names sort in writing order).
A new writer never appends to an existing file (a previous run's last file may end in a
torn record): it starts after the highest n present.  With ``max_files`` set, once a new
file is opened the oldest files of that name beyond the newest ``max_files`` are deleted.
Read them all with the glob ``caps/rsocket.*.wscap``.

Cost.  ``record`` packs the record into a buffer (two CRC-32s and a ``struct.pack``,
about a microsecond); the buffer goes to the file when it holds ``buffer_bytes``, on
``flush()`` and on ``close()``.  That write is a plain blocking ``write`` into the page
cache -- tens of microseconds per 64 KiB -- which an asyncio loop can afford, so the
writer is called directly from the tap, with no thread.  It is not thread-safe: use one
writer per event loop.  A crash loses at most the unflushed buffer, and leaves at worst a
torn final record, which readers tolerate.

Connection ids.  ``new_connection_id()`` hands out ``(writer id << 32) | n``: n counts
the writer's connections from 1, the writer id is 31 random bits, so connections of
different runs (or processes) writing to the same folder do not share an id, and every
id fits a signed 64-bit integer (Spark's ``long``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Final

from wirestream.runtime.capture.format import (
    MAX_FRAME_LENGTH,
    RECORD_HEADER_SIZE,
    Direction,
    Side,
    encode_file_header,
    encode_record,
    new_sync_marker,
)
from wirestream.runtime.capture.protocols import CaptureProtocol, get_protocol
from wirestream.runtime.errors import EncodeError

__all__ = ["CaptureWriter", "DEFAULT_MAX_FILE_BYTES", "capture_files"]

DEFAULT_MAX_FILE_BYTES: Final = 256 * 1024 * 1024
"""256 MiB per file: a couple of Spark partitions' worth, small enough to move around."""

DEFAULT_BUFFER_BYTES: Final = 64 * 1024


def _family(path: Path) -> tuple[Path, str, str]:
    return path.parent, path.stem if path.suffix else path.name, path.suffix


def capture_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files a ``CaptureWriter(path, ...)`` wrote (and earlier ones of that name), oldest
    first."""
    folder, stem, suffix = _family(Path(path))
    pattern = re.compile(rf"{re.escape(stem)}\.(\d{{6,}}){re.escape(suffix)}")
    if not folder.is_dir():
        return []
    numbered = []
    for entry in folder.iterdir():
        match = pattern.fullmatch(entry.name)
        if match:
            numbered.append((int(match.group(1)), entry))
    return [entry for _, entry in sorted(numbered)]


class CaptureWriter:
    """Appends frames of one protocol to rotating capture files (module docstring).

    ``protocol`` is a name from ``wirestream.runtime.capture.protocols`` ("rsocket/1.0", ...); every
    file's header carries it.  ``max_file_bytes`` None: one file, never rotated.
    ``max_files`` None: keep every file.  ``clock`` gives nanoseconds since the epoch.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        protocol: str,
        *,
        max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
        max_files: int | None = None,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.protocol: CaptureProtocol = get_protocol(protocol)
        if max_file_bytes is not None and max_file_bytes < 1:
            raise ValueError(f"max_file_bytes must be positive, not {max_file_bytes}")
        if max_files is not None and max_files < 1:
            raise ValueError(f"max_files must be at least 1, not {max_files}")
        self.base_path = Path(path)
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.buffer_bytes = buffer_bytes
        self.clock = clock
        self.records = 0
        """Records written by this writer (all files)."""
        # 31 bits: ids stay below 2**63, so they fit a signed 64-bit column (Spark's long)
        self._writer_id = int.from_bytes(os.urandom(4), "big") >> 1
        self._connections = 0
        self._buffer = bytearray()
        self._file: BinaryIO | None = None
        self._file_size = 0  # bytes in the current file, buffer included
        self._file_records = 0
        self._sync = b""
        self.path: Path = self.base_path
        """The file being written."""
        self.files: list[Path] = []
        """The files this writer created, oldest first (some may be deleted by now)."""
        folder, self._stem, self._suffix = _family(self.base_path)
        folder.mkdir(parents=True, exist_ok=True)
        existing = capture_files(self.base_path)
        self._next_number = self._number(existing[-1]) + 1 if existing else 0
        self._open_next()

    def _number(self, path: Path) -> int:
        return int(path.name[len(self._stem) + 1 : len(path.name) - len(self._suffix)])

    # ------------------------------------------------------------------ files

    def _open_next(self) -> None:
        folder = self.base_path.parent
        path = folder / f"{self._stem}.{self._next_number:06d}{self._suffix}"
        self._next_number += 1
        self._sync = new_sync_marker()
        header = encode_file_header(self.protocol.name, self._sync)
        # "xb": never overwrite a file, even one created between listing and opening
        self._file = open(path, "xb", buffering=0)
        self._file.write(header)
        self._file_size = len(header)
        self._file_records = 0
        self.path = path
        self.files.append(path)
        if self.max_files is not None:
            for old in capture_files(self.base_path)[: -self.max_files]:
                old.unlink(missing_ok=True)

    def _rotate(self) -> None:
        self._write_buffer()
        assert self._file is not None
        self._file.close()
        self._open_next()

    def _write_buffer(self) -> None:
        if self._buffer and self._file is not None:
            self._file.write(self._buffer)
            self._buffer.clear()

    # ------------------------------------------------------------------ recording

    def new_connection_id(self) -> int:
        """A fresh id for one connection (module docstring)."""
        self._connections += 1
        return (self._writer_id << 32) | (self._connections & 0xFFFFFFFF)

    def record(
        self,
        connection_id: int,
        direction: Direction,
        frame: bytes,
        *,
        side: Side = "client",
        timestamp_ns: int | None = None,
    ) -> None:
        """Append one frame (without its transport length prefix) seen by ``side`` of
        connection ``connection_id`` going ``direction``."""
        if self._file is None:
            raise ValueError(f"capture {self.path} is closed")
        if len(frame) > MAX_FRAME_LENGTH:
            raise EncodeError(
                f"capture: a frame of {len(frame)} bytes exceeds the format's maximum of "
                f"{MAX_FRAME_LENGTH}"
            )
        size = RECORD_HEADER_SIZE + len(frame)
        if (
            self.max_file_bytes is not None
            and self._file_records
            and self._file_size + size > self.max_file_bytes
        ):
            self._rotate()
        when = self.clock() if timestamp_ns is None else timestamp_ns
        self._buffer += encode_record(self._sync, when, connection_id, direction, side, frame)
        self._file_size += size
        self._file_records += 1
        self.records += 1
        if len(self._buffer) >= self.buffer_bytes:
            self._write_buffer()

    def flush(self) -> None:
        """Write the buffered records to the file (no fsync: the OS has them)."""
        self._write_buffer()

    def close(self) -> None:
        if self._file is not None:
            self._write_buffer()
            self._file.close()
            self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self.close()

    def __repr__(self) -> str:
        return f"<CaptureWriter {self.protocol.name} {self.path}>"
