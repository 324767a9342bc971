"""``wirestream``: poke protocol servers from a shell (like rsocket-py's ``rsocket-py``).

The generator's commands (``wirestream.codegen.cli``)::

    wirestream generate [--idl idl] [--out generated] [--package NAME] [--target all] [--only P[/V]]
    wirestream check    [--idl idl] [--out generated] [--package NAME] [--target all] [--only P[/V]]
    wirestream validate FILE...
    wirestream diff     OLD NEW | --against REF [PATH...] [--format text|json] [--fail-on ...]

``wirestream capture decode|stats|to-pcap`` (``wirestream.apps.capture_cli``), and one
sub-command per protocol: ``rsocket`` (below), ``rabbitmq``
(``wirestream.apps.rabbitmq_cli``), ``rsio`` (``rsio_cli``) and ``bpmux``
(``bpmux_cli``)::

    wirestream rsocket serve [--host H] [--port P] [--transport tcp|ws] [--version 1.0|0.2]
                             [--resume] [--mtu N] [--handshake-timeout S] [--idle-timeout S]
                             [--frame-timeout S] [--max-connections N] [--max-streams N]
                             [--lease TTL,N] [--capture PATH]
    wirestream rsocket request URL DATA
    wirestream rsocket fnf URL DATA
    wirestream rsocket stream URL DATA [--limit-rate N] [--take K]
    wirestream rsocket channel URL DATA [ITEM ...] [--stdin] [--limit-rate N] [--take K]
    wirestream rsocket metadata-push URL METADATA

``serve`` runs ``wirestream.apps.demo_responder.EchoResponder``: request-response and
channel echo, a request-stream whose data is N answers ``0`` .. ``N-1``,
fire-and-forget payloads are printed.  It prints ``listening on URL`` (the real port
when ``--port 0``) and serves until SIGINT or SIGTERM, then closes every connection and
exits 0.  Its limits (``wirestream.runtime.limits``; README "Limits") default to the
library's; ``0`` switches one off; a connection dropped or refused by one is one line on
stderr (``wirestream: HandshakeTimeout: ...``).  ``--lease TTL,N`` grants clients that ask
for leasing (SETUP with the L flag) N requests per TTL milliseconds, renewed at half the
TTL; without it such a SETUP is refused with ERROR[UNSUPPORTED_SETUP].  ``--capture PATH``
records every frame of every connection, as the server sent and read them, in capture
files (``PATH.000000.wscap`` ...; ``wirestream capture decode``): what the server did,
seen from the server, for a peer under test that cannot be looked into (a browser).

The client commands talk to any RSocket server (``tcp://``, ``tls://``, ``unix://``,
``ws://``, ``wss://`` URLs).  DATA ``-`` reads the data from stdin.  A channel's first
payload is DATA; each further ITEM argument is one more payload of our side, then, with
``--stdin``, each line of stdin (without its line ending) as it is read; our side
completes after the last one.  Each received payload is one line on stdout
(``--format``: ``text`` = UTF-8 when decodable, else ``0x`` + hex; ``hex``; ``raw`` =
the bytes and a newline; ``json`` = one object per line with data and metadata).

Exit codes: 0 done; 1 the interaction failed (the server answered ERROR or rejected the
SETUP, the connection was lost, ``--timeout`` passed); 2 usage error or the server
could not be reached; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any, Final, TextIO

from wirestream.apps.cli_common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    to_bytes as _bytes,
    count as _count,
    error as _error,
    port as _port,
    print_items,
    until_signalled,
    within as _within,
    json_field as _json_field,
    positive as _positive,
    seconds as _seconds,
    stdin_lines as _stdin_lines,
    text as _text,
)
from wirestream.apps import bpmux_cli, capture_cli, rabbitmq_cli, rsio_cli
from wirestream.codegen import cli as codegen_cli
from wirestream.runtime.aio import InboundStream, parse_url
from wirestream.runtime.capture.writer import CaptureWriter
from wirestream.runtime.errors import ProtocolError, TransportError
from wirestream.apps.demo_responder import EchoResponder
from wirestream.runtime.rsocket.errors import SetupRejected, RSocketStreamError
from wirestream.runtime.rsocket.fragmentation import MIN_MTU
from wirestream.runtime.rsocket.handler import RSocketPayload
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rsocket.metadata import COMPOSITE_METADATA, ROUTING, encode_route, route
from wirestream.runtime.rsocket.options import Limits
from wirestream.runtime.rsocket.aio import DEFAULT_LIMIT_RATE, RSocketPeer, connect, serve
from wirestream.runtime.rsocket.versions import get_version

__all__ = ["main", "amain", "build_parser", "PayloadWriter"]

RSOCKET_SCHEMES: Final = ("tcp", "tls", "unix", "ws", "wss")
SERVE_TRANSPORTS: Final = ("tcp", "ws")
VERSION_NAMES: Final = ("1.0", "0.2")
FORMATS: Final = ("text", "hex", "raw", "json")
ONE_WAY_LINGER: Final = 0.05
MAX_LEASE_VALUE: Final = (1 << 31) - 1  # 1.0's 31-bit Time-To-Live and Number of Requests
"""Seconds to stay connected after a fire-and-forget or metadata push.  Nothing answers
those; closing at once sends ERROR[CONNECTION_CLOSE] right behind the request, and a
server that reads both in one go may end the connection before its handler ran
(``wirestream.runtime.rsocket.aio`` does: it cancels the handler's task before it starts)."""


# ====================================================================== output


class PayloadWriter:
    """Writes one line per payload to ``out`` in one of ``FORMATS``.

    ``text``: data as UTF-8 when it decodes, else ``0x`` and hex; ``hex``: always hex;
    ``raw``: the data bytes then a newline; ``json``: ``{"data": ..., "metadata": ...}``
    (``data_hex``/``metadata_hex`` instead when not UTF-8; metadata ``null`` when
    absent), metadata always included.  With ``show_metadata`` the text and hex lines
    are ``data<TAB>metadata`` (nothing after the tab when there is no metadata).
    """

    def __init__(self, out: TextIO, format: str = "text", show_metadata: bool = False) -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r} (one of {', '.join(FORMATS)})")
        self.out = out
        self.format = format
        self.show_metadata = show_metadata

    def write(self, payload: RSocketPayload) -> None:
        if self.format == "raw":
            self.out.flush()
            self.out.buffer.write(payload.data + b"\n")
            self.out.buffer.flush()
            return
        if self.format == "json":
            line = json.dumps(
                _json_field("data", payload.data) | _json_field("metadata", payload.metadata)
            )
        else:
            render = _text if self.format == "text" else bytes.hex
            line = render(payload.data)
            if self.show_metadata:
                metadata = payload.metadata
                line += "\t" + ("" if metadata is None else render(metadata))
        self.out.write(line + "\n")
        self.out.flush()


# ====================================================================== arguments


def _url(value: str) -> str:
    """An RSocket server URL (argparse type: a bad one is a usage error)."""
    try:
        endpoint = parse_url(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if endpoint.scheme not in RSOCKET_SCHEMES:
        raise argparse.ArgumentTypeError(
            f"{value!r}: RSocket runs over {', '.join(RSOCKET_SCHEMES)} URLs"
        )
    return value


def _lease(value: str) -> tuple[int, int]:
    """``TTL,N``: a LEASE of N requests per TTL milliseconds (both 31-bit on the wire:
    "Time-To-Live ... Value MUST be > 0", "Number of Requests ... Value MUST be > 0")."""
    ttl, _, count = value.partition(",")
    try:
        lease = int(ttl), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not TTL,N (e.g. 60000,100)") from None
    if not all(0 < number <= MAX_LEASE_VALUE for number in lease):
        raise argparse.ArgumentTypeError(
            f"{value!r}: TTL (ms) and N must each be 1..{MAX_LEASE_VALUE}"
        )
    return lease


def _mtu(value: str) -> int:
    number = _positive(value)
    if number < MIN_MTU:
        raise argparse.ArgumentTypeError(f"{value!r}: the MTU must be at least {MIN_MTU}")
    return number


def _add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", metavar="URL", type=_url,
                        help="the server: tcp://host:port, tls://, unix:///path, ws://host:port/path, wss://")  # fmt: skip
    parser.add_argument("--version", choices=VERSION_NAMES, default="1.0",
                        help="protocol version of the SETUP (default 1.0; 0.2 = ReactiveSocket)")  # fmt: skip
    parser.add_argument("--data-mime", default="application/octet-stream", metavar="MIME",
                        help="SETUP data MIME type (default application/octet-stream)")  # fmt: skip
    parser.add_argument("--metadata-mime", default=COMPOSITE_METADATA, metavar="MIME",
                        help=f"SETUP metadata MIME type (default {COMPOSITE_METADATA})")  # fmt: skip
    parser.add_argument("--timeout", type=_seconds, default=10.0, metavar="SECONDS",
                        help="limit for connecting and for each response or stream item "
                             "(default 10; 0 = none)")  # fmt: skip
    parser.add_argument("--mtu", type=_mtu, metavar="BYTES",
                        help="fragment frames larger than this")  # fmt: skip


def _add_request_options(parser: argparse.ArgumentParser, *, streams: bool) -> None:
    metadata = parser.add_mutually_exclusive_group()
    metadata.add_argument("--metadata", metavar="TEXT",
                          help="request metadata (UTF-8 text)")  # fmt: skip
    metadata.add_argument("--route", action="append", metavar="TAG",
                          help="routing extension tag (repeat for more tags): composite "
                               "metadata, or routing metadata with --metadata-mime "
                               f"{ROUTING}")  # fmt: skip
    if streams:
        parser.add_argument("--limit-rate", type=_positive, default=DEFAULT_LIMIT_RATE,
                            metavar="N", help="request N items at a time "
                                              f"(default {DEFAULT_LIMIT_RATE})")  # fmt: skip
        parser.add_argument("--take", type=_positive, metavar="K",
                            help="cancel after K items")  # fmt: skip
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="how each received payload is printed (default text)")  # fmt: skip
    parser.add_argument("--show-metadata", action="store_true",
                        help="print each payload's metadata after a tab")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Generate code from the IDL, and talk to (or serve) each protocol "
        "from a shell. `wirestream COMMAND --help` for a command's options and examples.",
        epilog="examples:\n"
        "  wirestream generate                       # in a checkout: what make generate runs\n"
        "  wirestream diff --against origin/main idl/\n"
        "  wirestream capture decode out/session.wscap --format json\n"
        "  wirestream rsocket stream tcp://127.0.0.1:7878 5\n"
        "  seq 3 | wirestream rabbitmq publish events\n"
        "  wirestream rsio subscribe tcp://127.0.0.1:7879 count --args 5\n"
        "  wirestream bpmux request tcp://127.0.0.1:7880 ping",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    protocols = parser.add_subparsers(dest="protocol", metavar="COMMAND", required=True)
    codegen_cli.add_commands(protocols)  # wirestream generate|check|validate
    rabbitmq_cli.add_commands(protocols)  # wirestream rabbitmq ...
    rsio_cli.add_commands(protocols)  # wirestream rsio serve|subscribe
    bpmux_cli.add_commands(protocols)  # wirestream bpmux serve|message|request|stream|sink
    capture_cli.add_commands(protocols)  # wirestream capture decode|stats|to-pcap

    rsocket = protocols.add_parser(
        "rsocket", help="RSocket 1.0 (and ReactiveSocket 0.2)",
        description="RSocket client commands and a demo server.",
        epilog="examples:\n"
        "  wirestream rsocket serve --port 7878 --resume\n"
        "  wirestream rsocket request tcp://127.0.0.1:7878 ping --format json\n"
        "  wirestream rsocket stream tcp://127.0.0.1:7878 100 --take 3 --limit-rate 8\n"
        "  seq 3 | wirestream rsocket channel ws://127.0.0.1:7878 first --stdin\n"
        "  wirestream rsocket request tcp://127.0.0.1:7878 hi --route echo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = rsocket.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve_ = commands.add_parser(
        "serve", help="run the demo echo responder until SIGINT/SIGTERM",
        description="Serve the demo responder: request-response and channel echo, a "
        "request-stream of decimal N answers 0..N-1, fire-and-forget payloads are printed.",
    )  # fmt: skip
    serve_.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve_.add_argument("--port", type=_port, default=7878,
                        help="port (default 7878; 0 picks a free one)")  # fmt: skip
    serve_.add_argument("--transport", choices=SERVE_TRANSPORTS, default="tcp",
                        help="tcp (length-prefixed frames) or ws (one frame per WebSocket "
                             "message)")  # fmt: skip
    serve_.add_argument("--version", choices=VERSION_NAMES, default="1.0",
                        help="protocol version to accept (default 1.0)")  # fmt: skip
    serve_.add_argument("--resume", action="store_true",
                        help="keep the sessions of clients that negotiated resumption")  # fmt: skip
    serve_.add_argument("--mtu", type=_mtu, metavar="BYTES",
                        help="fragment frames larger than this")  # fmt: skip
    defaults = ConnectionLimits()
    serve_.add_argument("--handshake-timeout", type=_seconds, metavar="SECONDS",
                        default=defaults.handshake_timeout,
                        help="drop a connection whose SETUP has not arrived this long after "
                             f"connecting (default {defaults.handshake_timeout}; 0: never)")  # fmt: skip
    serve_.add_argument("--idle-timeout", type=_seconds, metavar="SECONDS",
                        default=defaults.idle_timeout,
                        help="drop a connection that sent no whole frame for this long "
                             "(default: never)")  # fmt: skip
    serve_.add_argument("--frame-timeout", type=_seconds, metavar="SECONDS",
                        default=defaults.frame_timeout,
                        help="drop a connection whose frame, once begun, is not complete "
                             f"this long after (default {defaults.frame_timeout}; 0: never)")  # fmt: skip
    serve_.add_argument("--max-connections", type=_count, metavar="N",
                        default=defaults.max_connections,
                        help="connections open at once; more are closed at once "
                             f"(default {defaults.max_connections}; 0: no limit)")  # fmt: skip
    serve_.add_argument("--max-streams", type=_count, metavar="N",
                        default=defaults.max_streams,
                        help="streams a client may have open at once; more are answered "
                             f"ERROR[REJECTED] (default {defaults.max_streams}; 0: no limit)")  # fmt: skip
    serve_.add_argument("--lease", type=_lease, metavar="TTL,N",
                        help="grant clients that ask for leasing N requests per TTL ms, "
                             "renewed at half the TTL (default: refuse such clients)")  # fmt: skip
    serve_.add_argument("--capture", metavar="PATH",
                        help="record every frame of every connection in capture files "
                             "PATH.000000.wscap ... (read: wirestream capture decode)")  # fmt: skip

    request = commands.add_parser("request", help="request-response: print the one answer")
    _add_connection_options(request)
    request.add_argument("data", metavar="DATA", help="request data ('-': read stdin)")
    _add_request_options(request, streams=False)

    fnf = commands.add_parser("fnf", help="fire-and-forget: send, print nothing")
    _add_connection_options(fnf)
    fnf.add_argument("data", metavar="DATA", help="request data ('-': read stdin)")
    _add_request_options(fnf, streams=False)

    stream = commands.add_parser("stream", help="request-stream: print each item")
    _add_connection_options(stream)
    stream.add_argument("data", metavar="DATA", help="request data ('-': read stdin)")
    _add_request_options(stream, streams=True)

    channel = commands.add_parser(
        "channel", help="request-channel: send DATA and ITEMs, print each item received",
        description="Open a channel whose first payload is DATA; each ITEM (then, with "
        "--stdin, each line of stdin) is one more payload; our side completes after the "
        "last.  Prints what the server sends.",
    )  # fmt: skip
    _add_connection_options(channel)
    channel.add_argument("data", metavar="DATA", help="the first payload's data")
    channel.add_argument("items", metavar="ITEM", nargs="*", help="further payloads")
    channel.add_argument("--stdin", action="store_true",
                         help="after the ITEMs, send each line of stdin as it is read")  # fmt: skip
    _add_request_options(channel, streams=True)

    push = commands.add_parser("metadata-push", help="METADATA_PUSH: send, print nothing")
    _add_connection_options(push)
    push.add_argument("metadata", metavar="METADATA", help="the metadata (UTF-8 text)")
    return parser


# ====================================================================== serve


async def _serve(args: argparse.Namespace) -> int:
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"{args.transport}://{host}:{args.port}"

    def show(payload: RSocketPayload) -> None:
        print(f"fire-and-forget: {_text(payload.data)}", flush=True)

    limits = Limits(mtu=args.mtu, handshake_timeout=args.handshake_timeout,
                    idle_timeout=args.idle_timeout, frame_timeout=args.frame_timeout,
                    max_connections=args.max_connections,
                    max_streams=args.max_streams)  # fmt: skip
    try:
        capture = _capture_writer(args.capture, args.version)
    except OSError as error:
        _error(f"cannot write the capture {args.capture}: {error.strerror or error}")
        return EXIT_FAILED
    try:
        return await _serve_until_signalled(url, args, limits, capture, show)
    finally:
        if capture is not None:
            capture.close()  # its last records are in its buffer until then


def _capture_writer(path: str | None, version: str) -> CaptureWriter | None:
    if path is None:
        return None
    # One file however long the server runs: a test or a debugging session reads it whole.
    return CaptureWriter(path, f"rsocket/{version}", max_file_bytes=None)


async def _serve_until_signalled(url: str, args: argparse.Namespace, limits: Limits,
                                 capture: CaptureWriter | None,
                                 show: Callable[[RSocketPayload], None]) -> int:  # fmt: skip
    try:
        server = await serve(url, EchoResponder(show), version=args.version,
                             resume=args.resume, limits=limits, lease=args.lease,
                             capture=capture)  # fmt: skip
    except OSError as error:
        _error(f"cannot listen on {url}: {error.strerror or error}")
        return EXIT_FAILED
    # Connections dropped by a limit and refused ones are told on stderr.
    limits_log = logging.getLogger("wirestream.runtime.aio")
    told = logging.StreamHandler(sys.stderr)
    told.setFormatter(logging.Formatter(f"{PROG}: %(message)s"))
    limits_log.addHandler(told)
    level = limits_log.level
    limits_log.setLevel(logging.INFO)
    try:
        await until_signalled(server.url)
    finally:
        server.close()
        await server.wait_closed()
        limits_log.removeHandler(told)
        limits_log.setLevel(level)
    return EXIT_OK


# ====================================================================== client


def _data(value: str) -> bytes:
    return sys.stdin.buffer.read() if value == "-" else _bytes(value)


def _metadata(args: argparse.Namespace) -> bytes | None:
    if args.route:
        if args.metadata_mime == ROUTING:
            return encode_route(*args.route)
        return route(*args.route)
    return None if args.metadata is None else _bytes(args.metadata)


async def _print_items(items: InboundStream[RSocketPayload], args: argparse.Namespace,
                       writer: PayloadWriter) -> None:  # fmt: skip
    await print_items(items, writer.write, take=args.take, timeout=args.timeout)


async def _channel_items(args: argparse.Namespace) -> AsyncIterator[bytes]:
    for item in args.items:
        yield _bytes(item)
    if args.stdin:
        async for line in _stdin_lines():
            yield line


async def _run_command(peer: RSocketPeer, args: argparse.Namespace, writer: PayloadWriter) -> None:
    command = args.command
    if command == "metadata-push":
        await _within(args.timeout, peer.metadata_push(_bytes(args.metadata)))
        await asyncio.sleep(ONE_WAY_LINGER)
        return
    data = _data(args.data)
    metadata = _metadata(args)
    if command == "request":
        writer.write(await _within(args.timeout, peer.request_response(data, metadata)))
    elif command == "fnf":
        await _within(args.timeout, peer.fire_and_forget(data, metadata))
        await asyncio.sleep(ONE_WAY_LINGER)
    elif command == "stream":
        items = peer.request_stream(data, metadata, limit_rate=args.limit_rate)
        await _print_items(items, args, writer)
    else:
        outbound = _channel_items(args) if args.items or args.stdin else None
        items = peer.request_channel(data, metadata, outbound=outbound,
                                     limit_rate=args.limit_rate)  # fmt: skip
        await _print_items(items, args, writer)


def _error_name(version: str, code: int) -> str:
    try:
        return str(get_version(version).codec.ErrorCode(code).name)
    except ValueError:
        return f"0x{code:x}"


async def _client(args: argparse.Namespace) -> int:
    writer = PayloadWriter(sys.stdout, getattr(args, "format", "text"),
                           getattr(args, "show_metadata", False))  # fmt: skip
    connected = False
    try:
        async with connect(args.url, version=args.version, data_mime_type=args.data_mime,
                           metadata_mime_type=args.metadata_mime, mtu=args.mtu,
                           timeout=args.timeout) as peer:  # fmt: skip
            connected = True
            await _run_command(peer, args, writer)
    except BrokenPipeError:
        return EXIT_OK  # `wirestream ... | head`: the reader has seen enough
    except SetupRejected as error:
        name = _error_name(args.version, error.error_code)
        _error(f"the server rejected the connection: {name}: {error}")
        return EXIT_FAILED
    except RSocketStreamError as error:
        _error(f"the server answered ERROR {_error_name(args.version, error.error_code)}: "
               f"{error.message}")  # fmt: skip
        return EXIT_FAILED
    except TransportError as error:
        if not connected:
            _error(f"cannot connect: {error}")
            return EXIT_USAGE
        _error(f"connection lost: {error}")
        return EXIT_FAILED
    except TimeoutError:
        _error(f"no answer within {args.timeout} s")
        return EXIT_FAILED
    except ProtocolError as error:  # the server broke the protocol
        _error(f"protocol error: {error}")
        return EXIT_FAILED
    return EXIT_OK


# ====================================================================== entry points


def _parse(argv: Sequence[str] | None) -> argparse.Namespace | int:
    try:
        return build_parser().parse_args(argv)
    except SystemExit as exit:  # --help, or a usage error argparse already printed
        return exit.code if isinstance(exit.code, int) else EXIT_USAGE


def _runner(args: argparse.Namespace) -> Callable[[argparse.Namespace], Coroutine[Any, Any, int]]:
    others = {"rabbitmq": rabbitmq_cli.run, "rsio": rsio_cli.run, "bpmux": bpmux_cli.run,
              "capture": capture_cli.arun}  # fmt: skip
    if args.protocol in others:
        return others[args.protocol]
    return _serve if args.command == "serve" else _client


async def amain(argv: Sequence[str] | None = None) -> int:
    """``main`` inside an event loop that is already running (tests, notebooks)."""
    args = _parse(argv)
    if isinstance(args, int):
        return args
    return await _runner(args)(args)


def main(argv: list[str] | None = None) -> int:
    """The ``wirestream`` console script: parse ``argv`` (default ``sys.argv[1:]``), run
    the command in a new event loop, return the exit code."""
    args = _parse(argv)
    if isinstance(args, int):
        return args
    if args.protocol in codegen_cli.COMMANDS:
        return codegen_cli.run(args, args.protocol)
    if args.protocol == "capture":  # no event loop needed: files only
        code = capture_cli.run(args)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return code
    try:
        code = asyncio.run(_runner(args)(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # Python's docs: point stdout at devnull so the flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


if __name__ == "__main__":
    sys.exit(main())
