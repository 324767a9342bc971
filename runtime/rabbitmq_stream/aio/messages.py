"""What a consumer hands the application: one message (``ReceivedMessage``, ``async for
message in consumer``) or the consecutive messages of one chunk (``MessageBatch``,
``async for batch in consumer.batches()``, issue 28)."""

from __future__ import annotations

from collections.abc import Iterator

from wirestream.runtime.rabbitmq_stream.amqp import (
    AmqpMessage,
    data_bodies,
    decode_body,
    decode_message,
)

__all__ = ["MessageBatch", "ReceivedMessage"]


class ReceivedMessage:
    """One message of the stream. ``data`` is the stored record; ``body`` the
    application data (the AMQP 1.0 Data section, or ``data`` for a raw consumer);
    ``amqp`` the whole decoded AMQP message (properties, annotations...); ``stream`` the
    stream it was read from (for a super stream consumer: the partition)."""

    __slots__ = ("offset", "timestamp", "data", "stream", "body")

    body: bytes
    """Set when known (a raw consumer's record; a body the consumer decoded with its
    chunk); else decoded from ``data`` when first read (``__getattr__``), which raises
    ``AmqpDecodeError`` there, at each read, for a body that is not binary data."""

    def __init__(
        self, offset: int, timestamp: int, data: bytes, raw: bool, stream: str = ""
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp  # the chunk's, ms since the epoch
        self.data = data
        self.stream = stream
        if raw:
            self.body = data

    def __getattr__(self, name: str) -> bytes:
        # Only for attributes not set: ``body`` before it is decoded (a slot read
        # costs nothing; a property costs a call per message, issue 30).
        if name != "body":
            raise AttributeError(f"'ReceivedMessage' object has no attribute {name!r}")
        body = self.body = decode_body(self.data)
        return body

    @property
    def amqp(self) -> AmqpMessage:
        return decode_message(self.data)

    def __repr__(self) -> str:
        where = f"{self.stream}, " if self.stream else ""
        return f"ReceivedMessage({where}offset={self.offset}, {len(self.data)} bytes)"


class MessageBatch:
    """Consecutive messages of one chunk: ``records`` are the stored records of offsets
    ``first_offset`` .. ``last_offset``; ``bodies`` their application data (each AMQP 1.0
    Data section, or the records for a raw consumer); ``timestamp`` the chunk's (ms since
    the epoch); ``stream`` the stream they were read from. Iterating gives a
    ``ReceivedMessage`` each, the same ``async for message in consumer`` gives."""

    __slots__ = ("first_offset", "timestamp", "records", "_raw", "stream")

    def __init__(
        self, first_offset: int, timestamp: int, records: list[bytes], raw: bool, stream: str = ""
    ) -> None:
        self.first_offset = first_offset
        self.timestamp = timestamp
        self.records = records
        self._raw = raw
        self.stream = stream

    def __len__(self) -> int:
        return len(self.records)

    @property
    def last_offset(self) -> int:
        return self.first_offset + len(self.records) - 1

    @property
    def offsets(self) -> range:
        return range(self.first_offset, self.first_offset + len(self.records))

    @property
    def bodies(self) -> list[bytes]:
        """Each message's body (``ReceivedMessage.body``), in offset order; decoded on
        each access (``AmqpDecodeError`` for a body that is not binary data)."""
        if self._raw:
            return list(self.records)
        # One pass for the plain Data sections, decode_body for the others (in offset
        # order: the first that is not binary data raises, as ever).
        bodies = data_bodies(self.records)
        if None not in bodies:  # every one a plain Data section: the common case
            return bodies  # type: ignore[return-value]  # None is not in it
        return [
            decode_body(data) if body is None else body for data, body in zip(self.records, bodies)
        ]

    def __iter__(self) -> Iterator[ReceivedMessage]:
        first, timestamp, raw, stream = self.first_offset, self.timestamp, self._raw, self.stream
        for index, data in enumerate(self.records):
            yield ReceivedMessage(first + index, timestamp, data, raw, stream)

    def __repr__(self) -> str:
        where = f"{self.stream}, " if self.stream else ""
        return (
            f"MessageBatch({where}offsets {self.first_offset}..{self.last_offset}, "
            f"{len(self.records)} messages)"
        )
