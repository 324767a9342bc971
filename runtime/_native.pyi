"""Type stub of the Rust extension ``wirestream._native`` (runtime/rust/wirestream-native),
built by ``make native``; read through ``wirestream.runtime.capture.native`` (captures),
``wirestream.runtime.rabbitmq_stream.chunk`` (RabbitMQ chunks) and
``wirestream.runtime.postgresql.rows`` / ``wirestream.runtime.mysql.rows`` (rows) only."""

from typing import Any, Final

PROTOCOLS: Final[list[str]]
SCAN_CAREFUL: Final[int]
SCAN_FULL: Final[int]
SCAN_FRAME_CRC: Final[int]
SCAN_MALFORMED: Final[int]
MAX_FRAME_LENGTH: Final[int]
ROW_LIMIT: Final[int]

Field = tuple[str, str, bool]

# What `FrameLog.counts` gives (`wirestream capture stats`): (frames, bytes, malformed,
# (first, last) record time in ns or None, per frame type and sender `(frame_type, sent
# by the server, frames, bytes)`, per connection `(id, tapped side is the server,
# frames, bytes, first, last)`), each list in the order its keys were first seen.
Counts = tuple[
    int,
    int,
    int,
    tuple[int, int] | None,
    list[tuple[str, bool, int, int]],
    list[tuple[int, bool, int, int, int, int]],
]

class FrameLog:
    def __init__(self, protocol: str, mode: str) -> None: ...
    def layout(self) -> tuple[list[Field], list[tuple[str, list[Field]]]]: ...
    def rows(self) -> int: ...
    def scan(
        self, buf: bytes, i: int, pos: int, stop: int, sync: bytes, room: int
    ) -> tuple[int, int, int, str | None]: ...
    def scan_file(
        self, path: str, pos: int, stop: int, sync: bytes, room: int
    ) -> tuple[int, int, str | None]: ...
    def fits(self, length: int) -> bool: ...
    def add(self, frame: bytes, timestamp_ns: int, connection: int, flags: int) -> str | None: ...
    def export(self) -> tuple[int, int]:
        """(rows, address of the batch's Arrow C Data Interface ``ArrowArray``)."""

    def count(self) -> None: ...
    def counts(self) -> Counts: ...
    def discard(self) -> None: ...

def rabbitmq_chunk_records(
    data: bytes, crc: int, num_entries: int, num_records: int
) -> tuple[list[Any], bool] | None: ...
def rabbitmq_batch_records(raw: bytes | bytearray, num_records: int) -> list[bytes] | None: ...
def amqp_data_bodies(records: list[bytes]) -> list[bytes | None] | None: ...
def postgresql_data_row(data: object, kinds: bytes) -> list[Any] | None: ...
def mysql_text_row(data: object, kinds: bytes) -> tuple[Any, ...] | None: ...
