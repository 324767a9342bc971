"""The ``rabbitmq_stream`` data source: a RabbitMQ stream as a Spark source and sink.

>>> events = (spark.readStream.format("rabbitmq_stream")
...           .option("uri", "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f")
...           .option("stream", "events").option("maxRecordsPerTrigger", "10000").load())
>>> query = (events.writeStream.format("rabbitmq_stream").option("stream", "copy")
...          .option("checkpointLocation", "/tmp/ck").start())

One class, ``RabbitMQStreamDataSource``, is both (Spark asks a data source for its reader
or its writer); the parts live in ``rabbitmq_source`` (reading: options, the schema,
offsets, what happens to data lost to retention) and ``rabbitmq_sink`` (publishing:
options, confirms, idempotent retries), whose docstrings document every option.  Both
sides share:

``uri``
    ``rabbitmq-stream://user:password@host:port/vhost`` or ``rabbitmq-stream+tls://...``
    (default ``rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f``).  It travels to the
    executors with the other options, so every executor must reach the broker.
``stream``
    the stream's name (required).
``messageFormat``
    ``amqp`` (default: a message is an AMQP 1.0 message whose Data section is the
    payload, as the Java, .NET, Go and rstream clients write it) or ``raw`` (the stored
    bytes, untouched).

Delivery guarantees, in short: the source's offsets are the stream's own, checkpointed by
Spark, so a query restarted from its checkpoint reads every record once, in offset order;
the sink publishes with confirms and with publishing ids derived from (query, micro-batch,
partition, row) under a per-partition publisher reference, so the broker drops what a
retried task or a replayed micro-batch sends again.  Together they make a
stream-to-stream query exactly-once.  Details in each module.

Everything that leaves the driver is plain data (options, offsets): each executor opens
its own connection from ``uri``.  The asyncio client runs on a ``BackgroundLoop`` (its own
thread) so that its socket is read, heartbeats are answered and confirms arrive while
Spark's thread converts rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from pyspark.sql.datasource import DataSource

from wirestream.runtime.errors import ConnectionLost, ProtocolError, TransportTimeout
from wirestream.runtime.rabbitmq_stream.aio import (
    DEFAULT_URI,
    Client,
    Consumer,
    connect,
    parse_stream_uri,
)
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.spark.background import CLOSE_TIMEOUT, BackgroundLoop
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.options import Options

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )
    from pyspark.sql.types import StructType

__all__ = [
    "SOURCE",
    "MESSAGE_FORMATS",
    "RabbitMQStreamDataSource",
    "open_client",
    "check_uri",
    "in_context",
    "StreamBounds",
    "probe_bounds",
]

SOURCE: Final = "rabbitmq_stream"
MESSAGE_FORMATS: Final = ("amqp", "raw")


class RabbitMQStreamDataSource(DataSource):
    """``format("rabbitmq_stream")``: read a stream (batch or streaming), publish to one.

    Options are checked where Spark first calls us, so a bad one fails at ``load()``
    (``schema()``) or at ``save()``/``start()`` (``writer()``/``streamWriter()``), with a
    ``SparkOptionError`` naming it.  (The parts are imported when asked for: they import
    the helpers of this module.)
    """

    @classmethod
    def name(cls) -> str:
        return SOURCE

    def schema(self) -> str:
        from wirestream.runtime.spark.rabbitmq_source import source_schema

        return source_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        from wirestream.runtime.spark.rabbitmq_source import RabbitMQStreamBatchReader

        return RabbitMQStreamBatchReader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from wirestream.runtime.spark.rabbitmq_source import RabbitMQStreamReader

        return RabbitMQStreamReader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from wirestream.runtime.spark.rabbitmq_sink import RabbitMQStreamWriter

        return RabbitMQStreamWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from wirestream.runtime.spark.rabbitmq_sink import RabbitMQStreamStreamWriter

        return RabbitMQStreamStreamWriter(self.options, schema, overwrite)


# ---------------------------------------------------------------------- running the client


def check_uri(options: Options) -> str:
    """The ``uri`` option, parsed once so that a malformed one fails at query start."""
    uri = options.text("uri", DEFAULT_URI)
    try:
        parse_stream_uri(uri)
    except ValueError as error:
        raise SparkOptionError(
            f"{options.source}: option uri: {error} (rabbitmq-stream://user:password@host:port"
            "/vhost or rabbitmq-stream+tls://...)"
        ) from None
    return uri


async def open_client(uri: str, who: str) -> Client:
    """A connection to the broker at ``uri``; failures say which broker and what to check.

    ``who`` names the connection (shown by ``rabbitmqctl list_stream_connections``) and
    the side in error messages ("rabbitmq_stream source", ...).
    """
    shown = parse_stream_uri(uri)  # str() hides the password
    try:
        return await connect(uri, connection_name=f"wirestream spark {who}")
    except ResponseError as refused:
        raise in_context(
            refused, f"{who}: the broker at {shown} refused user {shown.username!r}"
        ) from refused
    except (ProtocolError, OSError) as error:
        raise in_context(error, f"{who}: cannot connect to the broker at {shown}") from error


def in_context(error: BaseException, context: str) -> BaseException:
    """``error`` again, same type, with ``context`` in front of its message.

    Spark shows a task's failure as its text, so the text must say what we were doing
    (which stream, which publisher) and not only what the broker said.
    """
    if isinstance(error, ResponseError):
        return ResponseError.from_code(error.code, context)
    if isinstance(error, ConnectionLost):
        return ConnectionLost(f"{context}: {error}", reason=error.reason)
    if isinstance(error, TransportTimeout):
        return TransportTimeout(f"{context}: {error}")
    error.add_note(context)
    return error


async def require_stream(client: Client, stream: str, who: str) -> None:
    """A ``SparkOptionError`` (about option ``stream``) when the broker has no ``stream``."""
    if not await client.stream_exists(stream):
        raise SparkOptionError(
            f"{who}: option stream={stream!r}: no such stream on {client.uri} "
            "(create it first" + (", or set createStream=true)" if "sink" in who else ")")
        )


# ---------------------------------------------------------------------- where a stream ends


class StreamBounds:
    """What a stream holds at one moment, by offset (None: it holds no message).

    ``head``: the first message; ``last_chunk``: the first message of the last chunk
    (where ``OffsetSpecLast`` starts); ``tail``: one past the last message.
    """

    __slots__ = ("head", "last_chunk", "tail")

    def __init__(self, head: int | None, last_chunk: int | None, tail: int | None) -> None:
        self.head = head
        self.last_chunk = last_chunk
        self.tail = tail

    def __repr__(self) -> str:
        return f"StreamBounds(head={self.head}, last_chunk={self.last_chunk}, tail={self.tail})"


async def probe_bounds(client: Client, stream: str, *, head: bool = True) -> StreamBounds:
    """Where ``stream`` starts and ends now, exactly: everything confirmed before the call.

    RabbitMQ 3.10 has no StreamStats (3.11+).  Instead: subscribe at ``last`` (the last
    chunk of messages; 3.10's readers skip offset-tracking chunks) and, for ``head``, at
    ``first``, each with a credit of one chunk; then ask anything (Metadata).  The broker's
    connection process sends the chunks a subscription can already read right after its
    SubscribeResponse, before it reads our next request (rabbit_stream_reader's subscribe
    handling calls send_chunks inline), so once the Metadata answer is in, any chunk that
    exists has arrived: no chunk means no message.  Checked against a publisher racing
    the probe (confirm, then probe: never behind).  A probe costs ~3 ms on a local broker.
    """
    specs: list[Literal["first", "last"]] = ["first", "last"] if head else ["last"]
    consumers: list[Consumer] = []
    try:
        for spec in specs:
            consumers.append(
                await client.consumer(stream, spec, credit=1, max_buffered=1, raw=True)
            )
        await client.metadata(stream)  # the barrier
        found: dict[str, tuple[int, int] | None] = {}
        for spec, consumer in zip(specs, consumers):
            count = consumer.buffered  # exactly one chunk (credit 1, credit withheld after it)
            if not count:
                found[spec] = None
                continue
            first = last = await consumer.__anext__()
            for _ in range(count - 1):
                last = await consumer.__anext__()
            found[spec] = (first.offset, last.offset + 1)
    finally:
        for consumer in consumers:
            await consumer.close()
    at_head, at_end = found.get("first"), found["last"]
    return StreamBounds(
        head=at_head[0] if at_head else None,
        last_chunk=at_end[0] if at_end else None,
        tail=at_end[1] if at_end else None,
    )


def plain(options: Mapping[str, str]) -> dict[str, str]:
    """Spark's (case-insensitive) options as a plain dict, for pickling to executors."""
    return {str(key): str(value) for key, value in options.items()}
