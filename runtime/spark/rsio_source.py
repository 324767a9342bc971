"""The ``rsio`` streaming source: a Reactive Streams (rsio) subscription, read with demand
per micro-batch (``request(n)`` = the batch's budget), so Spark's pace is the publisher's
pace.

    ticks = (
        spark.readStream.format("rsio")
        .option("uri", "tcp://127.0.0.1:7979")
        .option("publisher", "ticks")
        .option("payloadFormat", "msgpack")
        .option("payloadSchema", "symbol string, price double, qty long, ts timestamp")
        .load()
    )

Columns: ``seq long`` (the element's number, from 0, continued across restarts),
``received_at timestamp`` (when the driver received it), ``payload`` (the element,
decoded as ``payloadFormat`` says: ``wirestream.runtime.spark.payload``).

Options:

``uri`` (required)
    ``tcp://host:port``, ``tls://host:port``, ``ws://host:port/path``, ``wss://...`` or
    ``unix:///path``.  The driver connects to it (the subscription lives there); the
    executors never do.
``publisher`` (required)
    The publisher's name, as the server's ``publishers`` map has it.
``args``
    Arguments for the publisher: the subscribe message names ``publisher?args`` (the
    seeds leave the string to the recipient; ``wirestream.runtime.rsio`` splits it at ``?``).
``encoding``
    ``binary`` (default) or ``msgpack``: the protocol's two encodings, as the server
    speaks it.
``maxRecordsPerTrigger``, ``maxWaitMs``, ``prefetch``, ``failOnDataLoss``, ``connectTimeoutMs``
    Pacing and restarts: ``wirestream.runtime.spark.live_source``.
``payloadFormat``, ``payloadSchema``, ``onBadPayload``
    Decoding the elements: ``wirestream.runtime.spark.payload``.

Delivery guarantee (``wirestream.runtime.spark.live_source`` has the details): each element is in
exactly one micro-batch within a running query; across restarts at most once, since a
subscription cannot be replayed: elements the driver held but Spark had not committed are
lost, and a restarted query subscribes anew.  A lost connection fails the query with the
reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql.types import StructType

from wirestream.runtime import rsio
from wirestream.runtime.rsio import Encoding
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.live_source import (
    LiveDataSource,
    LIVE_OPTIONS,
    LiveStreamReader,
    Opened,
)
from wirestream.runtime.spark.options import Options
from wirestream.runtime.spark.payload import PAYLOAD_OPTIONS
from wirestream.runtime.spark.rsocket_source import check_uri

__all__ = ["RsioDataSource", "RsioStreamReader", "RsioSubscription", "OPTIONS"]

SOURCE: Final = "rsio"
OPTIONS: Final = ("uri", "publisher", "args", "encoding", *LIVE_OPTIONS, *PAYLOAD_OPTIONS)


@dataclass(frozen=True, slots=True)
class RsioSubscription:
    """What the source subscribes to, from its options (checked: ``SparkOptionError``)."""

    uri: str
    publisher: str
    args: str | None
    encoding: Encoding

    @classmethod
    def from_options(cls, options: Options) -> RsioSubscription:
        uri = check_uri(options)
        publisher = options.text("publisher")
        if not publisher or "?" in publisher:
            raise SparkOptionError(
                f"{options.source}: option publisher={publisher!r} must be a non-empty name "
                "without '?' (give the publisher's arguments in option args)"
            )
        encoding: Encoding = "msgpack"
        if options.choice("encoding", ("binary", "msgpack"), "binary") == "binary":
            encoding = "binary"
        return cls(uri, publisher, options.optional("args"), encoding)

    @property
    def describe(self) -> str:
        """How errors and logs name the subscription."""
        name = self.publisher if self.args is None else f"{self.publisher}?{self.args}"
        return f"{SOURCE} {self.uri} publisher {name!r}"


class RsioStreamReader(LiveStreamReader):
    """The driver holds one subscription (``wirestream.runtime.spark.live_source``)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        checked = Options(SOURCE, options, OPTIONS)
        self.subscription = RsioSubscription.from_options(checked)
        super().__init__(SOURCE, options, OPTIONS, schema, self.subscription.describe)

    async def open_stream(self, initial_demand: int) -> Opened:
        wanted = self.subscription
        peer = await rsio.connect(wanted.uri, encoding=wanted.encoding,
                                  timeout=self.pacing.connect_timeout)  # fmt: skip
        try:
            # initialDemand in the subscribe message: the first batch's budget
            stream = peer.subscribe(wanted.publisher, args=wanted.args,
                                    limit_rate=initial_demand)  # fmt: skip
        except BaseException:
            await peer.close()
            raise
        return Opened(stream, peer.close)

    @staticmethod
    def split(item: Any) -> tuple[bytes | None, bytes]:
        assert isinstance(item, bytes)
        return None, item


class RsioDataSource(LiveDataSource):
    """``spark.readStream.format("rsio")``: see the module docstring for the options."""

    SOURCE = SOURCE
    OPTIONS = OPTIONS
    ENVELOPE = (("seq", "long"), ("received_at", "timestamp"))

    def make_reader(self, options: Mapping[str, str], schema: StructType) -> LiveStreamReader:
        return RsioStreamReader(options, schema)

    @staticmethod
    def check_request(options: Options) -> None:
        RsioSubscription.from_options(options)
