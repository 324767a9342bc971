"""``wirestream bpmux ...``: BPMUX (seed 002) from a shell.

    wirestream bpmux serve [--host H] [--port P]
    wirestream bpmux message URL DATA
    wirestream bpmux request URL DATA
    wirestream bpmux stream URL DATA [--take K]
    wirestream bpmux sink URL DATA [ITEM ...] [--stdin]
    (every client command: [--timeout S] [--format text|hex|raw|json])

``serve`` answers until SIGINT or SIGTERM (``EchoHandler``): a request with its own data,
a stream whose data is a decimal N with the items ``0`` .. ``N-1``, a duplex by echoing
each item; messages and a sink's items are printed (``message: ...``, ``sink DATA:
ITEM``). It prints ``listening on URL``.

The client commands send one message (nothing printed), make one request (the answer
printed), open a stream (each item printed, ``--take`` cancels) or a sink (sends each
ITEM, then with ``--stdin`` each line of stdin, then ends it). Every send waits for the
receiver's byte credit ("data can only be transmitted once the receiver has signaled
that it wants to receive data", seed 002).

Exit codes as every ``wirestream`` command: 0 done; 1 an error answer, connection lost or
timeout; 2 usage error or no server; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any, Final

from wirestream.apps.cli_common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    FORMATS,
    BytesWriter,
    error,
    port,
    positive,
    print_items,
    seconds,
    stdin_lines,
    text,
    serve_demo,
    to_bytes,
    within,
)
from wirestream.runtime.bpmux.aio import BpmuxApplicationError, Handler, ItemStream, ItemWriter
from wirestream.runtime.bpmux.aio import BpmuxServer, connect, serve
from wirestream.runtime.errors import ProtocolError, RemoteProtocolError, TransportError

__all__ = ["add_commands", "run", "DEFAULT_PORT", "EchoHandler"]

DEFAULT_PORT: Final = 7880
ONE_WAY_LINGER: Final = 0.05
"""Seconds a ``message`` command stays connected after sending: closing at once could end
the connection before the server's handler took the message."""


class EchoHandler(Handler):
    """What ``wirestream bpmux serve`` answers (see the module docstring)."""

    async def on_message(self, data: bytes) -> None:
        print(f"message: {text(data)}", flush=True)

    async def on_request(self, data: bytes) -> bytes:
        return data

    def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
        return self._count(data)

    @staticmethod
    async def _count(data: bytes) -> AsyncIterator[bytes]:
        shown = data.decode("ascii", "replace").strip()
        if not (shown.isascii() and shown.isdigit()):
            raise BpmuxApplicationError(b"stream data must be a decimal count")
        for i in range(int(shown)):
            yield b"%d" % i

    async def on_sink(self, data: bytes, items: ItemStream) -> None:
        async for item in items:
            print(f"sink {text(data)}: {text(item)}", flush=True)

    def on_duplex(self, data: bytes, items: ItemStream, writer: ItemWriter) -> AsyncIterator[bytes]:
        return self._echo(items)

    @staticmethod
    async def _echo(items: ItemStream) -> AsyncIterator[bytes]:
        async for item in items:
            yield item


def add_commands(protocols: Any) -> None:
    """Add ``bpmux`` and its sub-commands to the top-level sub-parsers."""
    bpmux = protocols.add_parser(
        "bpmux", help="BPMUX: serve, message, request, stream, sink",
        description="BPMUX multiplexed messages, requests, streams and sinks.",
        epilog="examples:\n"
        f"  wirestream bpmux serve --port {DEFAULT_PORT}\n"
        f"  wirestream bpmux request tcp://127.0.0.1:{DEFAULT_PORT} ping\n"
        f"  wirestream bpmux stream tcp://127.0.0.1:{DEFAULT_PORT} 5 --take 3\n"
        f"  seq 3 | wirestream bpmux sink tcp://127.0.0.1:{DEFAULT_PORT} upload --stdin",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = bpmux.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve_ = commands.add_parser("serve", help="run the echo handler until SIGINT/SIGTERM")
    serve_.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve_.add_argument("--port", type=port, default=DEFAULT_PORT,
                        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")  # fmt: skip
    helps = {"message": "send one message, print nothing",
             "request": "make a request, print the answer",
             "stream": "open a stream, print each item",
             "sink": "open a sink, send each ITEM (and stdin's lines)"}  # fmt: skip
    for name, summary in helps.items():
        command = commands.add_parser(name, help=summary)
        command.add_argument("url", metavar="URL", help="the server, e.g. tcp://127.0.0.1:7880")
        command.add_argument("data", metavar="DATA")
        if name == "stream":
            command.add_argument("--take", type=positive, metavar="K", help="cancel after K items")
        if name == "sink":
            command.add_argument("items", metavar="ITEM", nargs="*", help="items to send")
            command.add_argument("--stdin", action="store_true",
                                 help="after the ITEMs, send each line of stdin")  # fmt: skip
        command.add_argument("--timeout", type=seconds, default=10.0, metavar="SECONDS",
                             help="limit for connecting and each answer (default 10; 0 = none)")  # fmt: skip
        command.add_argument("--format", choices=FORMATS, default="text")


async def _serve(args: argparse.Namespace) -> int:
    async def start(url: str) -> BpmuxServer:
        return await serve(url, EchoHandler())

    async def stop(server: BpmuxServer) -> None:
        server.close()
        await server.wait_closed()

    return await serve_demo(args.host, args.port, start, stop)


async def _items(args: argparse.Namespace) -> AsyncIterator[bytes]:
    for item in args.items:
        yield to_bytes(item)
    if args.stdin:
        async for line in stdin_lines():
            yield line


async def _client(args: argparse.Namespace) -> int:
    writer = BytesWriter(sys.stdout, args.format)
    data = to_bytes(args.data)
    connected = False
    try:
        async with connect(args.url, timeout=args.timeout) as peer:
            connected = True
            if args.command == "message":
                await within(args.timeout, peer.send_message(data))
                await asyncio.sleep(ONE_WAY_LINGER)
            elif args.command == "request":
                writer.write(await within(args.timeout, peer.request(data)))
            elif args.command == "stream":
                items = await within(args.timeout, peer.open_stream(data))
                await print_items(items, writer.write, take=args.take, timeout=args.timeout)
            else:
                sink = await within(args.timeout, peer.open_sink(data))
                async for item in _items(args):
                    await within(args.timeout, sink.send(item))
                await within(args.timeout, sink.end())
    except BrokenPipeError:
        return EXIT_OK
    except BpmuxApplicationError as answered:
        error(f"the server answered an error: {text(answered.payload)}")
        return EXIT_FAILED
    except TransportError as lost:  # (before TimeoutError: TransportTimeout is one too)
        error(f"{'connection lost' if connected else 'cannot connect'}: {lost}")
        return EXIT_FAILED if connected else EXIT_USAGE
    except TimeoutError:
        error(f"no answer within {args.timeout} s")
        return EXIT_FAILED
    except (RemoteProtocolError, ProtocolError) as broken:
        error(f"protocol error: {type(broken).__name__}: {broken}")
        return EXIT_FAILED
    return EXIT_OK


async def run(args: argparse.Namespace) -> int:
    """Run one parsed ``wirestream bpmux`` command; its exit code."""
    return await (_serve(args) if args.command == "serve" else _client(args))
