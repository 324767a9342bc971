"""``wirestream rabbitmq ...``: RabbitMQ streams from a shell, on our client.

    wirestream rabbitmq create STREAM [--max-length-bytes N] [--max-age AGE]
                                      [--max-segment-size-bytes N] [--argument KEY=VALUE]
                                      [--exist-ok]
    wirestream rabbitmq delete STREAM [--missing-ok]
    wirestream rabbitmq info STREAM [STREAM ...] [--format text|json]
    wirestream rabbitmq publish STREAM [--reference NAME] [--raw]      < one message per line
    wirestream rabbitmq consume STREAM [--offset first|last|next|N|ISO-8601]
                                       [--count N] [--idle SECONDS] [--reference NAME]
                                       [--format text|hex|raw|json] [--raw]
    wirestream rabbitmq super-stream create NAME [--partitions N | --routing-keys K,...]
                                                 [--max-age AGE] [--max-length-bytes N]
    wirestream rabbitmq super-stream delete NAME [--missing-ok]
    wirestream rabbitmq super-stream partitions NAME
    wirestream rabbitmq super-stream route NAME KEY
    wirestream rabbitmq publish NAME --super-stream [--routing hash|key] [--key-delimiter D]
    wirestream rabbitmq consume NAME --super-stream [...]

Every command takes ``--uri`` (default ``$WIRESTREAM_RABBITMQ_URI``, else
``rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f``; ``rabbitmq-stream+tls://`` for
TLS) and ``--timeout`` (connecting and each answer of the broker; default 10 s).

``publish`` sends each line of stdin (without its line ending) as one message (an AMQP
1.0 message with the line as its data section, as the Java client writes them; ``--raw``:
the line as it is) and exits once the broker confirmed every one. With ``--reference``
line N is publishing id N of that producer name, so the broker stores each line once:
publishing the same input again (say, after a failure half-way) sends only the lines
not stored yet. It prints ``published N`` (and how many were skipped) on stderr.

``consume`` prints one line per message (``text``: UTF-8, else ``0x`` + hex; ``hex``;
``raw``: the bytes and a newline; ``json``: ``{"offset", "timestamp", "data"}``) from
``--offset`` until ``--count`` messages, or until no message came for ``--idle`` seconds
(default: follow the stream until interrupted). With ``--reference`` it stores the
offset of the last message it printed and, without ``--offset``, starts after the one
stored before: a consumer that picks up where it stopped.

With ``--super-stream`` NAME is a super stream: ``publish`` routes each line by its
routing key -- the whole line, or with ``--key-delimiter`` the text before the first
delimiter (the message is still the whole line) -- hashed as the Java client hashes it
(``--routing hash``, the default) or bound by the broker (``--routing key``: Route);
``consume`` reads every partition (``json`` lines name the partition) and, with
``--reference``, stores and resumes an offset per partition. ``super-stream create`` and
``delete`` need RabbitMQ 3.13+ (CreateSuperStream); on an older broker they fail with the
``rabbitmq-streams`` command that does it there.

``info`` shows each stream's leader and replicas and its first and last offset (read
from the first and the last chunk; ``-`` for an empty stream), and on RabbitMQ 3.11+
the broker's StreamStats (``json``: ``stats``).

Exit codes: 0 done; 1 the broker refused (the stream does not exist, a message was not
confirmed, ...) or the connection was lost; 2 usage error or the broker could not be
reached; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, Final

from wirestream.apps.cli_common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    count,
    error,
    positive,
    seconds,
    stdin_lines,
    text,
    within as _within,
)
from wirestream.runtime.errors import ProtocolError, TransportError
from wirestream.runtime.rabbitmq_stream.aio import (
    DEFAULT_URI,
    Client,
    Consumer,
    OffsetLike,
    ReceivedMessage,
    connect,
    parse_stream_uri,
)
from wirestream.runtime.rabbitmq_stream.aio.producer import Body
from wirestream.runtime.rabbitmq_stream.amqp import AmqpDecodeError
from wirestream.runtime.rabbitmq_stream.aio.super_consumer import SuperStreamConsumer
from wirestream.runtime.rabbitmq_stream.errors import ResponseError, UnsupportedByBroker

__all__ = ["add_commands", "run", "URI_VARIABLE"]

URI_VARIABLE: Final = "WIRESTREAM_RABBITMQ_URI"
FORMATS: Final = ("text", "hex", "raw", "json")
PEEK_SECONDS: Final = 2.0
"""How long ``info`` waits for a stream's first chunk: an empty stream sends nothing."""

# ====================================================================== arguments


def _uri(value: str) -> str:
    try:
        parse_stream_uri(value)
    except ValueError as problem:
        raise argparse.ArgumentTypeError(str(problem)) from None
    return value


def _offset(value: str) -> OffsetLike:
    """first | last | next | a whole offset | an ISO-8601 time (a timestamp spec)."""
    if value in ("first", "last", "next"):
        return value  # type: ignore[return-value]  # one of the three literals
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r}: an offset is first, last, next, a whole number or an ISO-8601 time"
        ) from None
    return moment if moment.tzinfo else moment.astimezone()


def _age(value: str) -> str:
    """The broker's max-age syntax: a whole number and one of Y M D h m s. (3.10.8
    answers anything else by closing the connection, so it is checked here.)"""
    if re.fullmatch(r"[0-9]+[YMDhms]", value) is None:
        raise argparse.ArgumentTypeError(
            f"{value!r}: an age is a whole number and a unit, Y M D h m or s (e.g. 7D, 24h)"
        )
    return value


def _argument(value: str) -> tuple[str, str]:
    key, sep, setting = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{value!r}: an argument is KEY=VALUE")
    return key, setting


def _keys(value: str) -> list[str]:
    keys = value.split(",")
    if not all(keys):
        raise argparse.ArgumentTypeError(f"{value!r}: routing keys are K1,K2,... (none empty)")
    return keys


def _super_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--super-stream", action="store_true",
                        help="STREAM is a super stream: every partition")  # fmt: skip


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--uri", type=_uri, default=os.environ.get(URI_VARIABLE, DEFAULT_URI),
                        help=f"the broker (default ${URI_VARIABLE}, else {DEFAULT_URI.replace('%', '%%')})")  # fmt: skip
    parser.add_argument("--timeout", type=seconds, default=10.0, metavar="SECONDS",
                        help="limit for connecting and for each answer of the broker "
                             "(default 10; 0 = none)")  # fmt: skip


def add_commands(protocols: Any) -> None:
    """Add ``rabbitmq`` and its sub-commands to the top-level sub-parsers."""
    rabbitmq = protocols.add_parser(
        "rabbitmq", help="RabbitMQ streams: create, inspect, publish, consume",
        description="RabbitMQ stream protocol commands (streams and super streams).",
        epilog="examples:\n"
        "  wirestream rabbitmq create events --max-age 24h\n"
        "  seq 3 | wirestream rabbitmq publish events --reference app-1\n"
        "  wirestream rabbitmq consume events --offset first --count 3\n"
        "  wirestream rabbitmq info events --format json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = rabbitmq.add_subparsers(dest="command", metavar="COMMAND", required=True)

    create = commands.add_parser("create", help="create a stream")
    create.add_argument("stream", metavar="STREAM")
    create.add_argument("--max-length-bytes", type=positive, metavar="N",
                        help="retention: the stream's size limit in bytes")  # fmt: skip
    create.add_argument("--max-age", type=_age, metavar="AGE",
                        help="retention: the age limit, e.g. 24h, 7D, 30m (Y M D h m s)")  # fmt: skip
    create.add_argument("--max-segment-size-bytes", type=positive, metavar="N",
                        help="the size of one segment file")  # fmt: skip
    create.add_argument("--argument", type=_argument, action="append", default=[],
                        metavar="KEY=VALUE", help="any other stream argument (repeatable)")  # fmt: skip
    create.add_argument("--exist-ok", action="store_true",
                        help="succeed when the stream exists already")  # fmt: skip
    _common(create)

    delete = commands.add_parser("delete", help="delete a stream")
    delete.add_argument("stream", metavar="STREAM")
    delete.add_argument("--missing-ok", action="store_true",
                        help="succeed when there is no such stream")  # fmt: skip
    _common(delete)

    info = commands.add_parser("info", help="leader, replicas, first and last offset")
    info.add_argument("streams", metavar="STREAM", nargs="+")
    info.add_argument("--format", choices=("text", "json"), default="text")
    _common(info)

    publish = commands.add_parser(
        "publish", help="publish each line of stdin as one message, wait for the confirms"
    )
    publish.add_argument("stream", metavar="STREAM")
    publish.add_argument("--reference", metavar="NAME",
                         help="the producer's name: the broker deduplicates by it")  # fmt: skip
    publish.add_argument("--raw", action="store_true",
                         help="send each line as it is, not as an AMQP 1.0 message")  # fmt: skip
    _super_options(publish)
    publish.add_argument("--routing", choices=("hash", "key"), default="hash",
                         help="super streams: hash the key as the Java client does (default), "
                              "or send it where the broker binds it (Route)")  # fmt: skip
    publish.add_argument("--key-delimiter", metavar="D",
                         help="super streams: the routing key is the text before the first D "
                              "(default: the whole line)")  # fmt: skip
    _common(publish)

    consume = commands.add_parser("consume", help="print the messages of a stream")
    consume.add_argument("stream", metavar="STREAM")
    consume.add_argument("--offset", type=_offset, metavar="OFFSET",
                         help="first, last, next (default), a whole offset, or an ISO-8601 "
                              "time; with --reference: after the stored offset")  # fmt: skip
    consume.add_argument("--count", type=count, metavar="N",
                         help="stop after N messages (default: no limit)")  # fmt: skip
    consume.add_argument("--idle", type=seconds, metavar="SECONDS",
                         help="stop when no message came for this long (default: follow)")  # fmt: skip
    consume.add_argument("--reference", metavar="NAME",
                         help="store the last printed offset under NAME, resume after it")  # fmt: skip
    consume.add_argument("--format", choices=FORMATS, default="text")
    consume.add_argument("--raw", action="store_true",
                         help="print each record as stored, not its AMQP 1.0 data section")  # fmt: skip
    _super_options(consume)
    _common(consume)

    super_stream = commands.add_parser("super-stream", help="super streams (partitioned)")
    supers = super_stream.add_subparsers(dest="super_command", metavar="COMMAND", required=True)
    create_super = supers.add_parser("create", help="create a super stream (RabbitMQ 3.13+)")
    create_super.add_argument("name", metavar="NAME")
    shape = create_super.add_mutually_exclusive_group()
    shape.add_argument("--partitions", type=positive, metavar="N",
                       help="streams NAME-0 .. NAME-(N-1) bound with keys 0 .. N-1 (default 3)")  # fmt: skip
    shape.add_argument("--routing-keys", type=_keys, metavar="K1,K2,...",
                       help="one stream NAME-K per binding key K")  # fmt: skip
    create_super.add_argument("--max-length-bytes", type=positive, metavar="N",
                              help="retention of each partition, in bytes")  # fmt: skip
    create_super.add_argument("--max-age", type=_age, metavar="AGE",
                              help="retention of each partition, e.g. 7D")  # fmt: skip
    _common(create_super)
    delete_super = supers.add_parser("delete", help="delete a super stream (RabbitMQ 3.13+)")
    delete_super.add_argument("name", metavar="NAME")
    delete_super.add_argument("--missing-ok", action="store_true",
                              help="succeed when there is no such super stream")  # fmt: skip
    _common(delete_super)
    partitions = supers.add_parser("partitions", help="the partition streams, in order")
    partitions.add_argument("name", metavar="NAME")
    _common(partitions)
    route = supers.add_parser("route", help="the partitions a routing key goes to")
    route.add_argument("name", metavar="NAME")
    route.add_argument("key", metavar="KEY")
    _common(route)


# ====================================================================== commands


async def _create(client: Client, args: argparse.Namespace) -> int:
    arguments: dict[str, str | int] = dict(args.argument)
    for key, value in (("max-length-bytes", args.max_length_bytes), ("max-age", args.max_age),
                       ("stream-max-segment-size-bytes", args.max_segment_size_bytes)):  # fmt: skip
        if value is not None:
            arguments[key] = value
    await _within(args.timeout, client.create_stream(args.stream, arguments,
                                                     exist_ok=args.exist_ok))  # fmt: skip
    return EXIT_OK


async def _delete(client: Client, args: argparse.Namespace) -> int:
    await _within(args.timeout, client.delete_stream(args.stream, missing_ok=args.missing_ok))
    return EXIT_OK


async def _peek(client: Client, stream: str, offset: OffsetLike) -> tuple[int, int] | None:
    """The first and last offset of the chunk a subscription at ``offset`` gets first,
    or None when nothing comes within PEEK_SECONDS (an empty stream)."""
    consumer = await client.consumer(stream, offset, credit=1, raw=True)
    try:
        first, _, records = await asyncio.wait_for(consumer.next_run(1 << 30), PEEK_SECONDS)
        return first, first + len(records) - 1
    except TimeoutError:
        return None
    finally:
        await consumer.close()


async def _info(client: Client, args: argparse.Namespace) -> int:
    metadata = await _within(args.timeout, client.metadata(*args.streams))
    brokers = {b.reference: f"{b.host}:{b.port}" for b in metadata.brokers}
    found = {m.stream: m for m in metadata.streams}
    status = EXIT_OK
    for stream in args.streams:
        meta = found.get(stream)
        row: dict[str, Any] = {"stream": stream, "exists": False}
        if meta is not None and meta.response_code == 1:  # ResponseCode.OK
            first = await _within(args.timeout, _peek(client, stream, "first"))
            last = await _within(args.timeout, _peek(client, stream, "last"))
            row = {
                "stream": stream,
                "exists": True,
                "leader": brokers.get(meta.leader_reference),
                "replicas": [brokers.get(r) for r in meta.replicas_references],
                "first_offset": None if first is None else first[0],
                "last_offset": None if last is None else last[1],
            }
            if client.supports("stream_stats"):  # 3.11+: the broker's own figures too
                row["stats"] = await _within(args.timeout, client.stream_stats(stream))
        else:
            status = EXIT_FAILED
        if args.format == "json":
            print(json.dumps(row), flush=True)
        elif not row["exists"]:
            print(f"{stream}: no such stream", flush=True)
        else:
            print(f"{stream}: leader {row['leader']}, replicas "
                  f"{', '.join(map(str, row['replicas'])) or '-'}, first offset "
                  f"{_or_dash(row['first_offset'])}, last offset "
                  f"{_or_dash(row['last_offset'])}", flush=True)  # fmt: skip
    return status


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def _routing_key(delimiter: str | None) -> Callable[[Body], str]:
    """A line's routing key: all of it, or what comes before the first ``delimiter``."""
    separator = None if delimiter is None else delimiter.encode("utf-8", "surrogateescape")

    def key(body: Body) -> str:
        if not isinstance(body, bytes):  # the CLI sends the lines it read, as bytes
            raise TypeError(f"a line is bytes, not {type(body).__name__}")
        data = body
        if separator is not None:
            data = data.split(separator, 1)[0]
        return data.decode("utf-8", "surrogateescape")

    return key


async def _stored_sequence(
    client: Client, args: argparse.Namespace, producer: Any
) -> Callable[[bytes], Awaitable[int]]:
    """The stored publishing id a line is compared with: the stream's, or for a super
    stream that of the line's partition (each partition deduplicates on its own)."""
    if args.reference is None:
        return _nothing_stored
    if not args.super_stream:
        stored = await _within(args.timeout,
                               client.query_publisher_sequence(args.reference, args.stream))  # fmt: skip

        async def of_stream(line: bytes) -> int:
            return stored

        return of_stream
    sequences: dict[str, int] = {}
    route = producer.route

    async def of_partition(line: bytes) -> int:
        lowest = None
        for partition in await route(line):
            if partition not in sequences:
                sequences[partition] = await _within(
                    args.timeout, client.query_publisher_sequence(args.reference, partition)
                )
            lowest = sequences[partition] if lowest is None else min(lowest, sequences[partition])
        return 0 if lowest is None else lowest

    return of_partition


async def _nothing_stored(line: bytes) -> int:
    return 0


async def _producer(client: Client, args: argparse.Namespace) -> Any:
    """The stream's producer, or the super stream's (same send/close)."""
    if args.super_stream:
        return await _within(args.timeout, client.super_stream_producer(
            args.stream, routing=_routing_key(args.key_delimiter), routing_mode=args.routing,
            reference=args.reference, raw=args.raw))  # fmt: skip
    return await _within(
        args.timeout, client.producer(args.stream, reference=args.reference, raw=args.raw)
    )


async def _publish(client: Client, args: argparse.Namespace) -> int:
    producer = await _producer(client, args)
    stored_before = await _stored_sequence(client, args, producer)
    sent = 0
    refused: list[BaseException] = []

    def settled(outcome: asyncio.Future[int]) -> None:
        if not outcome.cancelled() and outcome.exception() is not None:
            refused.append(outcome.exception())  # type: ignore[arg-type]

    # With a reference, line N is publishing id N: the broker stores each line once,
    # however often the same input is published (a re-run after a failure skips what
    # was stored; 'Deduplication' in the stream plugin's docs). Without one, ids are
    # the producer's own.
    number = 0
    async for line in stdin_lines():
        number += 1
        if args.reference is None:
            outcome = await producer.send(line)
        elif number <= await stored_before(line):
            continue
        else:
            outcome = await producer.send(line, publishing_id=number)
        outcome.add_done_callback(settled)
        sent += 1
    await _within(args.timeout, producer.close())  # waits for every confirm
    await asyncio.sleep(0)  # the last futures' callbacks
    skipped = number - sent
    error(f"published {sent - len(refused)}"
          + (f", {skipped} stored before (skipped)" if skipped else "")
          + (f", {len(refused)} refused" if refused else ""))  # fmt: skip
    if refused:
        error(f"the first refusal: {refused[0]}")
        return EXIT_FAILED
    return EXIT_OK


class _Printer:
    def __init__(self, format: str) -> None:
        self.format = format

    def write(self, message: ReceivedMessage) -> None:
        try:
            body = message.body
        except AmqpDecodeError as undecodable:
            # Not one Data section (another client's amqp-value string, an amqp-sequence):
            # the record is still the stream's, so it is printed as stored, not dropped,
            # and the reader goes on (exit 1 means the broker or the connection failed).
            error(f"offset {message.offset}: {undecodable}: printed as the stored bytes")
            body = message.data
        if self.format == "raw":
            sys.stdout.flush()
            sys.stdout.buffer.write(body + b"\n")
            sys.stdout.buffer.flush()
            return
        if self.format == "json":
            row: dict[str, Any] = {"offset": message.offset, "timestamp": message.timestamp}
            if message.stream is not None:
                row["partition"] = message.stream
            try:
                row["data"] = body.decode("utf-8")
            except UnicodeDecodeError:
                row["data_hex"] = body.hex()
            line = json.dumps(row)
        else:
            line = text(body) if self.format == "text" else body.hex()
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


async def _start(client: Client, args: argparse.Namespace) -> OffsetLike:
    if args.offset is not None:
        return args.offset  # type: ignore[no-any-return]
    if args.reference is None:
        return "next"
    if args.super_stream:
        return "first"  # each partition resumes after its own stored offset, else first
    stored = await _within(args.timeout, client.query_offset(args.reference, args.stream))
    return "first" if stored is None else stored + 1


async def _consume(client: Client, args: argparse.Namespace) -> int:
    offset = await _start(client, args)
    consumer: Consumer | SuperStreamConsumer
    if args.super_stream:
        consumer = await _within(args.timeout, client.super_stream_consumer(
            args.stream, offset, reference=args.reference, raw=args.raw))  # fmt: skip
    else:
        consumer = await _within(args.timeout, client.consumer(args.stream, offset, raw=args.raw))
    printer = _Printer(args.format)
    printed = 0
    last: int | None = None
    try:
        while args.count is None or printed < args.count:
            try:
                message = await _within(args.idle, anext(consumer))
            except (StopAsyncIteration, TimeoutError):
                break
            printer.write(message)
            printed += 1
            last = message.offset
    finally:
        if args.reference is not None and last is not None and client.is_open:
            if isinstance(consumer, SuperStreamConsumer):
                consumer.store_offsets()
            else:
                client.store_offset(args.reference, args.stream, last)
        await consumer.close()
    return EXIT_OK


async def _create_super(client: Client, args: argparse.Namespace) -> int:
    arguments: dict[str, str | int] = {}
    if args.max_length_bytes is not None:
        arguments["max-length-bytes"] = args.max_length_bytes
    if args.max_age is not None:
        arguments["max-age"] = args.max_age
    partitions = await _within(args.timeout, client.create_super_stream(
        args.name, args.partitions, args.routing_keys, arguments))  # fmt: skip
    for stream in partitions:
        print(stream, flush=True)
    return EXIT_OK


async def _delete_super(client: Client, args: argparse.Namespace) -> int:
    await _within(args.timeout, client.delete_super_stream(args.name, missing_ok=args.missing_ok))
    return EXIT_OK


async def _partitions(client: Client, args: argparse.Namespace) -> int:
    for stream in await _within(args.timeout, client.partitions(args.name)):
        print(stream, flush=True)
    return EXIT_OK


async def _route(client: Client, args: argparse.Namespace) -> int:
    streams = await _within(args.timeout, client.route(args.key, args.name))
    for stream in streams:
        print(stream, flush=True)
    if not streams:
        error(f"routing key {args.key!r} goes to no partition of {args.name!r}")
        return EXIT_FAILED
    return EXIT_OK


_COMMANDS: Final[dict[str, Callable[[Client, argparse.Namespace], Awaitable[int]]]] = {
    "create": _create,
    "delete": _delete,
    "super-stream create": _create_super,
    "super-stream delete": _delete_super,
    "info": _info,
    "publish": _publish,
    "consume": _consume,
    "partitions": _partitions,
    "route": _route,
}


_SUPER: Final = {"create": "super-stream create", "delete": "super-stream delete"}


async def run(args: argparse.Namespace) -> int:
    """Run one parsed ``wirestream rabbitmq`` command; its exit code."""
    sub = getattr(args, "super_command", None)
    command = _COMMANDS[args.command if sub is None else _SUPER.get(sub, sub)]
    connected = False
    try:
        async with asyncio.timeout(args.timeout):
            client = await connect(args.uri, reconnect=False, timeout=args.timeout or 3600.0,
                                   connection_name=f"wirestream-cli-{args.command}")  # fmt: skip
        connected = True
        async with client:
            return await command(client, args)
    except BrokenPipeError:
        return EXIT_OK  # `wirestream rabbitmq consume ... | head`: the reader has seen enough
    except ResponseError as refusal:
        error(f"the broker refused: {refusal}")
        return EXIT_FAILED
    except UnsupportedByBroker as missing:
        error(str(missing))
        return EXIT_FAILED
    except (TransportError, OSError) as lost:  # (first: TransportTimeout is a TimeoutError)
        if not connected:
            error(f"cannot connect to {args.uri}: {lost}")
            return EXIT_USAGE
        error(f"connection lost: {lost}")
        return EXIT_FAILED
    except TimeoutError:
        error(f"no answer from the broker within {args.timeout} s")
        return EXIT_FAILED if connected else EXIT_USAGE
    except ProtocolError as broken:
        error(f"{type(broken).__name__}: {broken}")
        return EXIT_FAILED
