"""``Handler``: what one side of a BPMUX connection serves (the peer's requests,
streams, sinks, duplexes and messages)."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable
from typing import Union

from wirestream.runtime.bpmux.aio.handles import BpmuxApplicationError, ItemStream, ItemWriter

__all__ = ["Handler", "StreamResult", "handles_messages"]

StreamResult = Union[Awaitable[Union[AsyncIterable[bytes], None]], AsyncIterable[bytes]]


class Handler:
    """What this side serves; subclass and override.

    - ``on_message(data)``: if overridden, messages go here, one at a time in order
      (each one's credit back when it returns); otherwise to ``peer.messages()``.
    - ``on_request(data) -> bytes``: raise to answer with ResponseError
      (``BpmuxApplicationError`` to pick the payload).  Default: an error answer.
    - ``on_stream(data, writer)``: the peer opened a stream, we send.  Send with
      ``writer`` or return (or be) an async iterable of items; the stream is ended when
      it returns, failed (InnerError) when it raises.  Default: InnerError.
    - ``on_sink(data, items)``: the peer opened a sink, we receive.  Default: cancel.
    - ``on_duplex(data, items, writer)``: both.  Default: InnerError and cancel.

    Each request and stream runs in its own task, cancelled when the peer cancels the
    request (RequestCancel) or the stream we send on (InnerCancel, for ``on_stream``), or
    when the connection ends.
    """

    async def on_message(self, data: bytes) -> None:
        raise NotImplementedError

    async def on_request(self, data: bytes) -> bytes:
        raise BpmuxApplicationError(b"no request handler")

    def on_stream(self, data: bytes, writer: ItemWriter) -> StreamResult:
        return writer.fail(b"no stream handler")

    async def on_sink(self, data: bytes, items: ItemStream) -> None:
        await items.aclose()

    def on_duplex(self, data: bytes, items: ItemStream, writer: ItemWriter) -> StreamResult:
        return _refuse_duplex(items, writer)


async def _refuse_duplex(items: ItemStream, writer: ItemWriter) -> None:
    await items.aclose()
    await writer.fail(b"no duplex handler")


def handles_messages(handler: Handler) -> bool:
    """Whether ``handler`` takes the messages (else they wait for ``peer.messages()``)."""
    return type(handler).on_message is not Handler.on_message
