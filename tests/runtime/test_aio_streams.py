"""wirestream.runtime.aio.InboundStream on its own: demand counted in items (RSocket,
rsio) or in units each item costs (``costed``, BPMUX's inner credit in bytes)."""

from __future__ import annotations

import asyncio

from wirestream.runtime.aio import InboundStream
from tests.support.aio_support import run


def test_items_are_requested_back_by_count() -> None:
    async def main() -> None:
        requested: list[int] = []
        stream: InboundStream[int] = InboundStream(requested.append, lambda: None,
                                                   limit_rate=4)  # fmt: skip
        assert requested == [4]
        for item in range(4):
            stream.sink.push(item)
        assert [await anext(stream) for _ in range(4)] == [0, 1, 2, 3]
        assert requested == [4, 3]  # 3/4 of the batch consumed: that much again

    run(main())


def test_costed_items_give_back_their_cost_and_everything_once_empty() -> None:
    async def main() -> None:
        requested: list[int] = []
        stream: InboundStream[bytes] = InboundStream(requested.append, lambda: None,
                                                     limit_rate=100, granted=100,
                                                     costed=True)  # fmt: skip
        assert requested == []  # the opening packet granted the window
        stream.sink.push_costed(b"a", 40)
        stream.sink.push_costed(b"b", 10)
        assert stream.sink.buffered_cost == 50
        assert await anext(stream) == b"a"
        assert requested == [] and stream.sink.buffered_cost == 10  # 40 < low tide 75
        assert await anext(stream) == b"b"
        assert requested == [50]  # nothing buffered: all consumed bytes at once
        stream.sink.push_costed(b"c", 30)
        assert stream.take_buffered() == [b"c"] and stream.sink.buffered_cost == 0
        assert requested == [50]  # taken without granting back

    run(main())


def test_cancel_from_elsewhere_ends_a_waiting_consumer() -> None:
    async def main() -> None:
        cancels: list[bool] = []
        stream: InboundStream[int] = InboundStream(lambda n: None, lambda: cancels.append(True),
                                                   limit_rate=2)  # fmt: skip
        consumer = asyncio.create_task(anext(stream, None))
        await asyncio.sleep(0)
        await stream.aclose()
        assert await asyncio.wait_for(consumer, 1) is None  # StopAsyncIteration
        assert cancels == [True] and stream.finished

    run(main())
