"""The connection as a super stream producer or consumer sees it: a ``Link`` that also
answers Partitions and Route and makes the partitions' producers and consumers.

``Client`` implements it; ``SuperStreamProducer`` and ``SuperStreamConsumer`` depend on
this interface only, so the client imports them and they never import the client (no
import circle), as ``Link`` does for ``Producer`` and ``Consumer``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from wirestream.runtime.rabbitmq_stream.aio.consumer import Consumer
from wirestream.runtime.rabbitmq_stream.aio.link import Link
from wirestream.runtime.rabbitmq_stream.aio.producer import Producer

__all__ = ["SuperLink"]


class SuperLink(Link, Protocol):
    """One connection, shared by a super stream's partition producers or consumers."""

    async def partitions(self, super_stream: str) -> tuple[str, ...]: ...

    async def route(self, routing_key: str, super_stream: str) -> tuple[str, ...]: ...

    @property
    def producer(self) -> Callable[..., Awaitable[Producer]]:
        """``producer(stream, *, reference=None, **options)``: declare a publisher on one
        partition stream (the client's options: sub_entry_size, compression, ...)."""

    async def attach_consumer(self, build: Callable[[int], Consumer]) -> Consumer:
        """Subscribe the consumer ``build`` makes for a free subscription id."""
