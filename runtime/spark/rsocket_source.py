"""The ``rsocket`` streaming source: an RSocket request-stream or request-channel, read with
demand per micro-batch (REQUEST_N = the batch's budget), so Spark's pace is the
publisher's pace.

    ticks = (
        spark.readStream.format("rsocket")
        .option("uri", "tcp://127.0.0.1:7878")
        .option("route", "ticks")
        .option("payloadFormat", "msgpack")
        .option("payloadSchema", "symbol string, price double, qty long, ts timestamp")
        .option("maxRecordsPerTrigger", 5000)
        .load()
    )

Columns: ``seq long`` (the item's number, from 0, continued across restarts),
``received_at timestamp`` (when the driver received it), ``metadata binary`` (the
PAYLOAD's metadata, null without one), ``payload`` (the data, decoded as
``payloadFormat`` says: ``wirestream.runtime.spark.payload``).

Options:

``uri`` (required)
    ``tcp://host:port``, ``tls://host:port``, ``ws://host:port/path``, ``wss://...`` or
    ``unix:///path``.  The driver connects to it (the subscription lives there); the
    executors never do.
``interaction``
    ``stream`` (default: REQUEST_STREAM) or ``channel`` (REQUEST_CHANNEL).  On a channel,
    the request payload is the source's first and only message upstream: REQUEST_CHANNEL
    carries it with the COMPLETE flag, so our side ends at once and the source reads the
    responder's side, as a stream.
``data`` / ``dataBase64``
    The request payload's data: UTF-8 text, or bytes in base64 (one or neither; default
    empty).
``route``
    A route for the routing extension: the request's metadata becomes composite metadata
    with that routing tag (what ``wirestream.runtime.rsocket.Router``, rsocket-java and rsocket-py
    route on), or the bare routing metadata when ``metadataMimeType`` is
    ``message/x.rsocket.routing.v0``.  Without it the request has no metadata.
``dataMimeType`` / ``metadataMimeType``
    The SETUP's MIME types (default ``application/octet-stream`` and
    ``message/x.rsocket.composite-metadata.v0``).
``maxRecordsPerTrigger``, ``maxWaitMs``, ``prefetch``, ``failOnDataLoss``, ``connectTimeoutMs``
    Pacing and restarts: ``wirestream.runtime.spark.live_source``.
``payloadFormat``, ``payloadSchema``, ``onBadPayload``
    Decoding the data: ``wirestream.runtime.spark.payload``.

Delivery guarantee (``wirestream.runtime.spark.live_source`` has the details): each item is in
exactly one micro-batch within a running query; across restarts at most once, since a
request-stream cannot be replayed: items the driver held but Spark had not committed are
lost, and a restarted query sends a new request.  Connections are not resumed (RSocket
resumption needs the server's session, which a restarted driver does not have): a lost
connection fails the query with the reason.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql.types import StructType

from wirestream.runtime.aio import parse_url
from wirestream.runtime.errors import EncodeError
from wirestream.runtime.rsocket import RSocketPayload, connect
from wirestream.runtime.rsocket.metadata import COMPOSITE_METADATA, ROUTING, encode_route, route
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.live_source import (
    LiveDataSource,
    LIVE_OPTIONS,
    LiveStreamReader,
    Opened,
)
from wirestream.runtime.spark.options import Options
from wirestream.runtime.spark.payload import PAYLOAD_OPTIONS

__all__ = ["RSocketDataSource", "RSocketStreamReader", "RSocketRequest", "OPTIONS"]

SOURCE: Final = "rsocket"
OPTIONS: Final = (
    "uri",
    "interaction",
    "data",
    "dataBase64",
    "route",
    "dataMimeType",
    "metadataMimeType",
    *LIVE_OPTIONS,
    *PAYLOAD_OPTIONS,
)
DEFAULT_DATA_MIME_TYPE: Final = "application/octet-stream"


def check_uri(options: Options) -> str:
    """The ``uri`` option, parsed (shared with ``rsio``): schemes the driver can dial."""
    uri = options.text("uri")
    try:
        endpoint = parse_url(uri)
    except ValueError as error:
        raise SparkOptionError(f"{options.source}: option uri: {error}") from None
    if endpoint.scheme == "memory":
        raise SparkOptionError(
            f"{options.source}: option uri={uri!r}: memory:// reaches only its own process, "
            "and the subscription lives in Spark's driver process; use tcp://, tls://, "
            "ws://, wss:// or unix://"
        )
    return uri


def _mime_type(options: Options, name: str, default: str) -> str:
    value = options.text(name, default)
    if not value or len(value) > 255 or not value.isascii():
        raise SparkOptionError(
            f"{options.source}: option {name}={value!r} is not a MIME type "
            "(1..255 US-ASCII characters, as SETUP carries it)"
        )
    return value


@dataclass(frozen=True, slots=True)
class RSocketRequest:
    """The request the source sends, from its options (checked: ``SparkOptionError``)."""

    uri: str
    interaction: str  # "stream" | "channel"
    data: bytes
    metadata: bytes | None
    route: str | None
    data_mime_type: str
    metadata_mime_type: str

    @classmethod
    def from_options(cls, options: Options) -> RSocketRequest:
        uri = check_uri(options)
        interaction = options.choice("interaction", ("stream", "channel"), "stream")
        text, encoded = options.optional("data"), options.optional("dataBase64")
        if text is not None and encoded is not None:
            raise SparkOptionError(f"{options.source}: give option data or dataBase64, not both")
        data = b""
        if text is not None:
            data = text.encode("utf-8")
        elif encoded is not None:
            try:
                data = base64.b64decode(encoded, validate=True)
            except binascii.Error as error:
                raise SparkOptionError(
                    f"{options.source}: option dataBase64={encoded[:40]!r} is not base64: {error}"
                ) from None
        data_mime = _mime_type(options, "dataMimeType", DEFAULT_DATA_MIME_TYPE)
        metadata_mime = _mime_type(options, "metadataMimeType", COMPOSITE_METADATA)
        tag = options.optional("route")
        metadata = None if tag is None else _route_metadata(options, tag, metadata_mime)
        return cls(uri, interaction, data, metadata, tag, data_mime, metadata_mime)

    @property
    def describe(self) -> str:
        """How errors and logs name the subscription."""
        where = f" route {self.route!r}" if self.route is not None else ""
        return f"{SOURCE} request-{self.interaction} {self.uri}{where}"


def _route_metadata(options: Options, tag: str, mime_type: str) -> bytes:
    try:
        if mime_type == COMPOSITE_METADATA:
            return route(tag)
        if mime_type == ROUTING:
            return encode_route(tag)
    except EncodeError as error:
        raise SparkOptionError(f"{options.source}: option route={tag!r}: {error}") from None
    raise SparkOptionError(
        f"{options.source}: option route needs metadataMimeType {COMPOSITE_METADATA} "
        f"or {ROUTING}, not {mime_type!r}"
    )


class RSocketStreamReader(LiveStreamReader):
    """The driver holds one request-stream/channel (``wirestream.runtime.spark.live_source``)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        checked = Options(SOURCE, options, OPTIONS)
        self.request = RSocketRequest.from_options(checked)
        super().__init__(SOURCE, options, OPTIONS, schema, self.request.describe)

    async def open_stream(self, initial_demand: int) -> Opened:
        request = self.request
        peer = await connect(
            request.uri,
            data_mime_type=request.data_mime_type,
            metadata_mime_type=request.metadata_mime_type,
            timeout=self.pacing.connect_timeout,
        )
        try:
            if request.interaction == "stream":
                stream = peer.request_stream(request.data, request.metadata,
                                             limit_rate=initial_demand)  # fmt: skip
            else:
                # outbound=None: REQUEST_CHANNEL carries COMPLETE, our side ends at once
                stream = peer.request_channel(request.data, request.metadata,
                                              limit_rate=initial_demand)  # fmt: skip
        except BaseException:
            await peer.close()
            raise
        return Opened(stream, peer.close)

    @staticmethod
    def split(item: Any) -> tuple[bytes | None, bytes]:
        assert isinstance(item, RSocketPayload)
        return item.metadata, item.data


class RSocketDataSource(LiveDataSource):
    """``spark.readStream.format("rsocket")``: see the module docstring for the options."""

    SOURCE = SOURCE
    OPTIONS = OPTIONS
    ENVELOPE = (("seq", "long"), ("received_at", "timestamp"), ("metadata", "binary"))

    def make_reader(self, options: Mapping[str, str], schema: StructType) -> LiveStreamReader:
        return RSocketStreamReader(options, schema)

    @staticmethod
    def check_request(options: Options) -> None:
        RSocketRequest.from_options(options)
