"""Shared helpers for the asyncio stream client's tests against a real broker.

The broker is RabbitMQ 3.10.8 on 127.0.0.1:5552: the session fixture ``rabbitmq_broker``
(tests/support/rabbitmq_broker.py) starts it when nothing answers there. A test module whose tests
all need it says so once:

    pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            ...
            messages = await read(consumer, 10)
            error = await error_of(client.delete_stream("missing"))

Asserting inside a coroutine: ``pytest.raises`` would raise pytest's BaseException
through the event loop when nothing is raised (connections left open), so use
``error_of`` and plain asserts instead.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any


from wirestream.runtime.rabbitmq_stream.aio import Client, Consumer, ReceivedMessage

__all__ = [
    "HOST",
    "PORT",
    "URI",
    "uri",
    "unique",
    "fresh_stream",
    "read",
    "until",
    "error_of",
]

HOST, PORT = "127.0.0.1", 5552
URI = f"rabbitmq-stream://guest:guest@{HOST}:{PORT}/%2f"


def uri(
    port: int = PORT, *, user: str = "guest", password: str = "guest", vhost: str = "%2f"
) -> str:
    """The URI of the broker, or of a ``FrameCapture`` proxy in front of it (its port)."""
    return f"rabbitmq-stream://{user}:{password}@{HOST}:{port}/{vhost}"


def unique(prefix: str) -> str:
    """A name no other test (or earlier run) uses: ``prefix-<12 hex digits>``."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@asynccontextmanager
async def fresh_stream(
    client: Client, arguments: Mapping[str, str | int] | None = None, *, prefix: str = "ws-client"
) -> AsyncIterator[str]:
    """A new uniquely named stream, deleted on exit (already gone is fine)."""
    stream = unique(prefix)
    await client.create_stream(stream, arguments)
    try:
        yield stream
    finally:
        await client.delete_stream(stream, missing_ok=True)


async def read(consumer: Consumer, count: int, timeout: float = 10.0) -> list[ReceivedMessage]:
    """The next ``count`` messages of ``consumer`` (a timeout fails the test)."""
    messages: list[ReceivedMessage] = []
    if count <= 0:
        return messages
    async with asyncio.timeout(timeout):
        async for message in consumer:
            messages.append(message)
            if len(messages) == count:
                break
    assert len(messages) == count, f"the consumer ended after {len(messages)} of {count}"
    return messages


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``condition()`` holds (checked every few ms): a state, never a guess."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


async def error_of(awaitable: Awaitable[Any]) -> BaseException:
    """The exception ``awaitable`` raises; an AssertionError when it returns instead."""
    try:
        result = await awaitable
    except Exception as error:
        return error
    raise AssertionError(f"expected an error, got {result!r}")
