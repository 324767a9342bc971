"""``wirestream rsio ...``: the Reactive Streams network protocol (seeds 000/001) from a
shell.

    wirestream rsio serve [--host H] [--port P] [--encoding binary|msgpack]
    wirestream rsio subscribe URL PUBLISHER [--args ARGS] [--encoding binary|msgpack]
                              [--limit-rate N] [--take K] [--timeout S]
                              [--format text|hex|raw|json]

``serve`` publishes two demo publishers until SIGINT or SIGTERM: ``count`` (its args a
decimal N: the elements ``0`` .. ``N-1`` as decimal text) and ``echo`` (one element: its
args). It prints ``listening on URL`` (the real port with ``--port 0``).

``subscribe`` subscribes to PUBLISHER on the server at URL (``tcp://``, ``tls://``,
``ws://``, ``unix://``) and prints each element as a line (formats as ``wirestream
rsocket``); demand follows the printing (``--limit-rate`` up front, topped up as
elements are printed). It ends on onComplete, after ``--take`` elements (then cancel),
or when no element came within ``--timeout``.

Exit codes as every ``wirestream`` command: 0 done; 1 onError, connection lost or
timeout; 2 usage error or no server; 130 interrupted.
"""

from __future__ import annotations

import argparse
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
    serve_demo,
)
from wirestream.runtime.errors import ProtocolError, TransportError
from wirestream.runtime.rsio import RsioServer, StreamError, connect, serve
from wirestream.runtime.rsio.aio import DEFAULT_LIMIT_RATE

__all__ = ["add_commands", "run", "DEFAULT_PORT", "demo_publishers"]

DEFAULT_PORT: Final = 7879
ENCODINGS: Final = ("binary", "msgpack")


def demo_publishers() -> dict[str, Any]:
    """What ``wirestream rsio serve`` publishes: ``count`` (args N -> "0" .. "N-1") and
    ``echo`` (one element, the args)."""

    async def count(args: str) -> AsyncIterator[bytes]:
        text = args.strip()
        if not (text.isascii() and text.isdigit()):
            raise ValueError(f"count's args must be a decimal count, not {args[:40]!r}")
        for i in range(int(text)):
            yield b"%d" % i

    async def echo(args: str) -> AsyncIterator[bytes]:
        yield args.encode()

    return {"count": count, "echo": echo}


def add_commands(protocols: Any) -> None:
    """Add ``rsio`` and its sub-commands to the top-level sub-parsers."""
    rsio = protocols.add_parser(
        "rsio", help="Reactive Streams network protocol: serve, subscribe",
        description="Reactive Streams network protocol (binary or msgpack encoding).",
        epilog="examples:\n"
        f"  wirestream rsio serve --port {DEFAULT_PORT}\n"
        f"  wirestream rsio subscribe tcp://127.0.0.1:{DEFAULT_PORT} count --args 5\n"
        f"  wirestream rsio subscribe tcp://127.0.0.1:{DEFAULT_PORT} echo --args hi --format json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = rsio.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve_ = commands.add_parser("serve", help="publish `count` and `echo` until SIGINT/SIGTERM")
    serve_.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve_.add_argument("--port", type=port, default=DEFAULT_PORT,
                        help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")  # fmt: skip
    serve_.add_argument("--encoding", choices=ENCODINGS, default="binary")
    subscribe = commands.add_parser("subscribe", help="print each element of a publisher")
    subscribe.add_argument("url", metavar="URL", help="the server, e.g. tcp://127.0.0.1:7879")
    subscribe.add_argument("publisher", metavar="PUBLISHER")
    subscribe.add_argument("--args", help="the publisher's arguments (sent as PUBLISHER?ARGS)")
    subscribe.add_argument("--encoding", choices=ENCODINGS, default="binary")
    subscribe.add_argument("--limit-rate", type=positive, default=DEFAULT_LIMIT_RATE,
                           metavar="N", help=f"demand N at a time (default {DEFAULT_LIMIT_RATE})")  # fmt: skip
    subscribe.add_argument("--take", type=positive, metavar="K", help="cancel after K elements")
    subscribe.add_argument("--timeout", type=seconds, default=10.0, metavar="SECONDS",
                           help="limit for connecting and for each element (default 10; 0 = none)")  # fmt: skip
    subscribe.add_argument("--format", choices=FORMATS, default="text")


async def _serve(args: argparse.Namespace) -> int:
    async def start(url: str) -> RsioServer:
        return await serve(url, publishers=demo_publishers(), encoding=args.encoding)

    async def stop(server: RsioServer) -> None:
        await server.close()

    return await serve_demo(args.host, args.port, start, stop)


async def _subscribe(args: argparse.Namespace) -> int:
    connected = False
    try:
        async with await connect(args.url, encoding=args.encoding, timeout=args.timeout) as peer:
            connected = True
            items = peer.subscribe(args.publisher, args=args.args, limit_rate=args.limit_rate)
            writer = BytesWriter(sys.stdout, args.format)
            await print_items(items, writer.write, take=args.take, timeout=args.timeout)
    except BrokenPipeError:
        return EXIT_OK
    except StreamError as failed:
        error(f"the publisher failed: {failed}")
        return EXIT_FAILED
    except TransportError as lost:  # (before TimeoutError: TransportTimeout is one too)
        error(f"{'connection lost' if connected else 'cannot connect'}: {lost}")
        return EXIT_FAILED if connected else EXIT_USAGE
    except TimeoutError:
        error(f"no element within {args.timeout} s")
        return EXIT_FAILED
    except ProtocolError as broken:
        error(f"protocol error: {type(broken).__name__}: {broken}")
        return EXIT_FAILED
    return EXIT_OK


async def run(args: argparse.Namespace) -> int:
    """Run one parsed ``wirestream rsio`` command; its exit code."""
    return await (_serve(args) if args.command == "serve" else _subscribe(args))
