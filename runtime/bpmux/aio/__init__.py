"""The asyncio BPMUX peer: ``connect(url)`` and ``serve(url, handler)`` over ``wirestream.runtime.aio``.

BPMUX is symmetric: both ends of a connection send messages, make requests and open
streams (the peer sends us items), sinks (we send items) and duplexes (both), and both
serve the other's through a ``Handler``::

    async with connect("tcp://127.0.0.1:7000") as peer:
        await peer.send_message(b"hello")              # waits for top-level credit
        reply = await peer.request(b"ping")            # BpmuxApplicationError on an error reply
        async for item in await peer.open_stream(b"ticks"):   # inner credit follows consumption
            ...
        async with await peer.open_sink(b"upload") as sink:
            await sink.send(b"chunk")                  # waits for inner credit

Credit is in bytes at two levels, and "data can only be transmitted once the receiver has
signaled that it wants to receive data" (seed 002 L4), so memory follows consumption:

- top level (Message, Request, Create*; seed L17): the engine runs with
  ``auto_credit=False`` and this peer hands bytes back as the application takes them: a
  message's bytes when the application has taken it (``messages()``) or its handler
  returned, a request's when it has been answered, other packets' at once;
- inner (one window per stream we receive on; L58): an ``ItemStream`` (the shared
  ``wirestream.runtime.aio.InboundStream``, its demand counted in bytes) grants an
  item's bytes back when the application takes the item.

Both use ``wirestream.runtime.flow.Replenisher`` (grant in batches of 3/4 of the window), plus one
rule of ours: when the application holds nothing more, everything consumed is granted at
once, so a packet larger than a quarter of the window cannot stall the sender forever.
The buffer therefore never holds more bytes than were granted (``buffered_bytes <=
credit``).  The engine knows what each packet cost (batches included) only per
``receive_data`` call; that total is spread over the call's messages or items by their
size as single packets, the rest handed back at once, so the sum is exact.

Sending waits in a FIFO per window (``gate.CreditGate``): the engine refuses a packet its
credit cannot pay for (``CreditExceeded``, changing nothing), so the gate retries the
command when the peer grants more.  The engine is the only judge of what a packet costs.

The end of the connection (EOF, reset, a peer's protocol violation, our ``close``)
fails every open request and stream with the typed error from ``wirestream.runtime.errors``:
``ConnectionLost`` or the engine's ``RemoteProtocolError``.

Serving::

    class Echo(Handler):
        async def on_request(self, data: bytes) -> bytes:
            return data
        async def on_stream(self, data: bytes, writer: ItemWriter) -> AsyncIterator[bytes]:
            for i in range(int(data)):
                yield b"%d" % i                        # pulled only as credit allows

    async with serve("tcp://127.0.0.1:7000", Echo()) as server: ...

DECISIONS where the seed is silent:

- A request holds its top-level bytes until answered, so ``credit`` also bounds the
  requests being worked on (a slow server stalls requesters, not its memory).
- The peer's Close is answered with ours (``close_on_peer_close``); once both sent Close
  and nothing is open (the engine's ConnectionDone), either side closes the transport,
  and the EOF that follows is a clean end (``error`` None).
- ``close()`` sends Close and CancelAll (``cancel=False``: Close only, open things
  drain), waits for that end at most ``close_timeout``, then closes the transport.
- An error answer's payload is the ``BpmuxApplicationError`` payload, or
  ``"<type>: <message>"`` for any other exception.
- A handler factory is called with the ``BpmuxPeer``, so a handler can call back.

Modules: ``peer`` (``BpmuxPeer``: the engine under ``EngineDriver``, events to handles
and tasks, credit handed back), ``handles`` (what the application holds: ``ItemStream``,
``ItemWriter``, ``Duplex``, ``MessageStream``, ``BpmuxApplicationError``), ``handler``
(``Handler``), ``gate`` (``CreditGate``), ``connect`` (``connect``, ``serve``,
``BpmuxServer``).
"""

from wirestream.runtime.bpmux.aio.connect import BpmuxServer, HandlerFactory, connect, serve
from wirestream.runtime.bpmux.aio.handler import Handler, StreamResult
from wirestream.runtime.bpmux.aio.handles import (
    BpmuxApplicationError,
    Duplex,
    ItemStream,
    ItemWriter,
    MessageStream,
)
from wirestream.runtime.bpmux.aio.peer import DEFAULT_CREDIT, DEFAULT_STREAM_CREDIT, BpmuxPeer

__all__ = [
    "BpmuxApplicationError",
    "BpmuxPeer",
    "BpmuxServer",
    "Duplex",
    "Handler",
    "HandlerFactory",
    "ItemStream",
    "ItemWriter",
    "MessageStream",
    "StreamResult",
    "connect",
    "serve",
    "DEFAULT_CREDIT",
    "DEFAULT_STREAM_CREDIT",
]
