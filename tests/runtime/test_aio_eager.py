"""wirestream.runtime.aio.eager: a coroutine stepped once by hand goes on as if it had
been awaited from the start (``Continued``), or in a task (``start_eagerly``)."""

from __future__ import annotations

import asyncio

import pytest

from wirestream.runtime.aio.eager import Continued, start_eagerly
from tests.support.aio_support import run


def test_a_continued_coroutine_gets_every_send_and_throw_and_returns_its_value() -> None:
    seen: list[str] = []

    async def work(gate: asyncio.Event) -> str:
        await gate.wait()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            return "stopped"
        return "never"

    async def main() -> None:
        gate = asyncio.Event()
        coroutine = work(gate)
        waiting_on = coroutine.send(None)  # waits on the gate

        async def rest() -> str:
            return await Continued(coroutine, waiting_on)

        task = asyncio.get_running_loop().create_task(rest())
        await asyncio.sleep(0)
        gate.set()
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()  # reaches the coroutine through the throw
        assert await task == "stopped"
        assert seen == ["cancelled"]

    run(main())


def test_a_continued_coroutine_raises_what_it_raises() -> None:
    async def work() -> None:
        await asyncio.sleep(0)
        raise KeyError("inside")

    async def main() -> None:
        coroutine = work()
        waiting_on = coroutine.send(None)
        with pytest.raises(KeyError, match="inside"):
            await Continued(coroutine, waiting_on)

    run(main())


def test_a_coroutine_that_does_not_wait_gets_no_task() -> None:
    async def at_once() -> None:
        return None

    async def main() -> None:
        assert start_eagerly(at_once(), asyncio.get_running_loop()) is None

    run(main())
