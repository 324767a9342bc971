"""Talking to the broker, for both sides of the ``rabbitmq_stream`` data source.

The source (``rabbitmq_source``) and the sink (``rabbitmq_sink``) share these: the data
source's name, the message formats, the ``uri`` check, opening a client with errors that
say which broker and what to check, and (``probe_bounds``) where a stream starts and ends.
They live apart from the data source class (``rabbitmq_stream``) because that class
imports the source and the sink, which import these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from wirestream.runtime.errors import ConnectionLost, ProtocolError, TransportTimeout
from wirestream.runtime.rabbitmq_stream.aio import (
    DEFAULT_URI,
    Client,
    Consumer,
    connect,
    parse_stream_uri,
)
from wirestream.runtime.rabbitmq_stream.errors import ResponseError
from wirestream.runtime.spark.errors import SparkOptionError
from wirestream.runtime.spark.options import Options

__all__ = [
    "SOURCE",
    "MESSAGE_FORMATS",
    "check_uri",
    "open_client",
    "in_context",
    "require_stream",
    "StreamBounds",
    "probe_bounds",
    "plain",
]

SOURCE: Final = "rabbitmq_stream"
MESSAGE_FORMATS: Final = ("amqp", "raw")


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
