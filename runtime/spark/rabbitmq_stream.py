"""The ``rabbitmq_stream`` data source: a RabbitMQ stream as a Spark source and sink.

>>> events = (spark.readStream.format("rabbitmq_stream")
...           .option("uri", "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f")
...           .option("stream", "events").option("maxRecordsPerTrigger", "10000").load())
>>> query = (events.writeStream.format("rabbitmq_stream").option("stream", "copy")
...          .option("checkpointLocation", "/tmp/ck").start())

One class, ``RabbitMQStreamDataSource``, is both (Spark asks a data source for its reader
or its writer); the parts live in ``rabbitmq_source`` (reading: options, the schema,
offsets, what happens to data lost to retention) and ``rabbitmq_sink`` (publishing:
options, confirms, idempotent retries), whose docstrings document every option, and
what both need of the broker (a client, where a stream ends) in ``rabbitmq_broker``.  Both
sides share these options:

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

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource

from wirestream.runtime.spark.rabbitmq_broker import (
    MESSAGE_FORMATS,
    SOURCE,
    StreamBounds,
    check_uri,
    in_context,
    open_client,
    probe_bounds,
)
from wirestream.runtime.spark.rabbitmq_sink import RabbitMQStreamStreamWriter, RabbitMQStreamWriter
from wirestream.runtime.spark.rabbitmq_source import (
    RabbitMQStreamBatchReader,
    RabbitMQStreamReader,
    source_schema,
)

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


class RabbitMQStreamDataSource(DataSource):
    """``format("rabbitmq_stream")``: read a stream (batch or streaming), publish to one.

    Options are checked where Spark first calls us, so a bad one fails at ``load()``
    (``schema()``) or at ``save()``/``start()`` (``writer()``/``streamWriter()``), with a
    ``SparkOptionError`` naming it.
    """

    @classmethod
    def name(cls) -> str:
        return SOURCE

    def schema(self) -> str:
        return source_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RabbitMQStreamBatchReader(self.options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RabbitMQStreamReader(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return RabbitMQStreamWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RabbitMQStreamStreamWriter(self.options, schema, overwrite)
