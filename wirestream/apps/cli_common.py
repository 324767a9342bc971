"""What every ``wirestream`` sub-command shares: exit codes, argument types, how bytes
are printed, stdin read line by line. (One module, so that the RSocket commands in
``cli`` and the RabbitMQ ones in ``rabbitmq_cli`` behave the same.)"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Final, Protocol, TextIO, TypeVar

T = TypeVar("T")

__all__ = [
    "PROG", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_INTERRUPTED", "text",
    "json_field", "error", "positive", "count", "seconds", "to_bytes", "read_lines",
    "stdin_lines", "port", "until_signalled", "print_items", "BytesWriter", "FORMATS",
    "within", "serve_demo",
]  # fmt: skip

PROG: Final = "wirestream"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2  # argparse's own code; also "could not connect"
EXIT_INTERRUPTED: Final = 130
FORMATS: Final = ("text", "hex", "raw", "json")


def text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + value.hex()


def json_field(name: str, value: bytes | None) -> dict[str, str | None]:
    if value is None:
        return {name: None}
    try:
        return {name: value.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_hex": value.hex()}


def error(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: must be at least 1")
    return number


def count(value: str) -> int | None:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: must not be negative")
    return number or None  # 0: no limit


def seconds(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r}: must not be negative")
    return number or None  # 0: no limit


def to_bytes(value: str) -> bytes:
    """A command-line string as bytes: UTF-8, undecodable argv bytes kept as they were."""
    return value.encode("utf-8", "surrogateescape")


def read_lines(source: TextIO) -> Iterator[bytes]:
    """Lines of ``source`` without their line endings.  A real file descriptor is read
    with ``os.read``, which holds no lock of ``sys.stdin``'s buffer: a daemon thread
    blocked in it does not stop the interpreter from shutting down."""
    try:
        fd = source.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: an in-memory stream
        for line in source.buffer:
            yield line.rstrip(b"\r\n")
        return
    pending = b""
    while chunk := os.read(fd, 65536):
        *complete, pending = (pending + chunk).split(b"\n")
        for line in complete:
            yield line.rstrip(b"\r")
    if pending:
        yield pending.rstrip(b"\r")


async def stdin_lines() -> AsyncIterator[bytes]:
    """Lines of stdin as they are read.  A daemon thread blocks on the read, so a server
    that ends the channel first does not wait for the user's next line; the queue is
    bounded, so stdin is read only as fast as the server takes the lines."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=16)
    source = sys.stdin

    def put(line: bytes | None) -> None:
        asyncio.run_coroutine_threadsafe(lines.put(line), loop).result()

    def read() -> None:
        try:
            for line in read_lines(source):
                put(line)
            put(None)
        except (RuntimeError, OSError, ValueError):
            return  # the loop is gone, or stdin is closed

    threading.Thread(target=read, name="wirestream-stdin", daemon=True).start()
    while (line := await lines.get()) is not None:
        yield line


def port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r}: a port is 0..65535 (0 picks a free one)")
    return number


async def within(timeout: float | None, work: Awaitable[T]) -> T:
    """``work``, or TimeoutError after ``timeout`` seconds (None: no limit)."""
    async with asyncio.timeout(timeout):
        return await work


async def until_signalled(url: str) -> None:
    """Print ``listening on URL`` and wait for SIGINT or SIGTERM (a server command's
    life); outside the main thread, until cancelled."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # not the main thread (or no signals here): stop by cancelling
        handled.append(signum)
    try:
        print(f"listening on {url}", flush=True)
        await stop.wait()
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


class BytesWriter:
    """One line per item on ``out``, in one of ``FORMATS``: ``text`` (UTF-8 when it
    decodes, else ``0x`` and hex), ``hex``, ``raw`` (the bytes and a newline), ``json``
    (``{"data": ...}``, ``data_hex`` when not UTF-8)."""

    def __init__(self, out: TextIO, format: str = "text") -> None:
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r} (one of {', '.join(FORMATS)})")
        self.out = out
        self.format = format

    def write(self, data: bytes) -> None:
        if self.format == "raw":
            self.out.flush()
            self.out.buffer.write(data + b"\n")
            self.out.buffer.flush()
            return
        if self.format == "json":
            line = json.dumps(json_field("data", data))
        else:
            line = text(data) if self.format == "text" else data.hex()
        self.out.write(line + "\n")
        self.out.flush()


async def print_items(items: AsyncIterator[T], write: Callable[[T], None], *,
                      take: int | None, timeout: float | None) -> None:  # fmt: skip
    """Write each item of ``items`` until it ends or ``take`` were written; each item
    must come within ``timeout``. The stream is closed at the end (its cancel, when it
    was still open)."""
    taken = 0
    try:
        while take is None or taken < take:
            try:
                item = await within(timeout, anext(items))
            except StopAsyncIteration:
                return
            write(item)
            taken += 1
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


class _Server(Protocol):
    @property
    def url(self) -> str: ...


S = TypeVar("S", bound=_Server)


async def serve_demo(
    host: str, port: int, start: Callable[[str], Awaitable[S]],
    stop: Callable[[S], Awaitable[None]],
) -> int:  # fmt: skip
    """A demo server command's life: ``start(url)`` on tcp://host:port (a port in use is
    one line on stderr, exit 1), ``listening on URL``, serve until SIGINT or SIGTERM,
    ``stop(server)``; exit 0."""
    url = f"tcp://{f'[{host}]' if ':' in host else host}:{port}"
    try:
        server = await start(url)
    except OSError as problem:
        error(f"cannot listen on {url}: {problem.strerror or problem}")
        return EXIT_FAILED
    try:
        await until_signalled(server.url)
    finally:
        await stop(server)
    return EXIT_OK
