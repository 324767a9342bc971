"""The protocol-neutral parts of ``wirestream.runtime.limits``: the ``ConnectionLimits``
values and ``Listener(max_connections)`` on every kind of listener (the per-protocol
behaviour is in tests/<protocol>/test_limits_<protocol>.py).  Under a second.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from wirestream.runtime.aio import Transport, listen, open_transport
from wirestream.runtime.errors import ConnectionLost
from wirestream.runtime.limits import ConnectionLimits
from wirestream.runtime.rsocket.options import Limits
from tests.support.aio_support import run
from tests.support.limits_support import SLACK, RawPeer

LIMITS_PAGE = Path(__file__).parent.parent.parent / "docs" / "limits.md"


@pytest.mark.parametrize("field", ["handshake_timeout", "idle_timeout", "frame_timeout"])
@pytest.mark.parametrize("value", [0, -1.0])
def test_a_timeout_must_be_positive_or_none(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        ConnectionLimits(**{field: value})  # type: ignore[arg-type]
    assert getattr(ConnectionLimits(**{field: None}), field) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["max_connections", "max_streams"])
def test_a_cap_must_be_at_least_one_or_none(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        ConnectionLimits(**{field: 0})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=field):
        Limits(**{field: 0})  # type: ignore[arg-type]  # RSocket's checks them too


async def _refused(transport: Transport, within: float = 1.0) -> bool:
    """Whether the listener dropped ``transport`` (EOF or reset) ``within`` seconds."""
    try:
        async with asyncio.timeout(within):
            return await transport.read() == b""
    except ConnectionLost:
        return True
    except TimeoutError:
        return False
    finally:
        transport.close()
        await transport.wait_closed()


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/limits",
                                 "memory://limits"])  # fmt: skip
def test_the_listener_refuses_connections_beyond_max_connections(url: str) -> None:
    async def main() -> None:
        release = asyncio.Event()

        async def hold(transport: Transport) -> None:
            await release.wait()

        async with await listen(url, hold, max_connections=2) as listener:
            kept = [await open_transport(listener.url) for _ in range(2)]
            for _ in range(100):
                if listener.connections == 2:
                    break
                await asyncio.sleep(0.01)
            assert listener.connections == 2
            assert await _refused(await open_transport(listener.url))
            assert listener.refused == 1
            release.set()  # the two end; slots free up
            for transport in kept:
                transport.close()
                await transport.wait_closed()
            for _ in range(100):
                if listener.connections == 0:
                    break
                await asyncio.sleep(0.01)
            release.clear()
            again = await open_transport(listener.url)
            assert not await _refused(again, within=0.2)
            assert listener.refused == 1
            release.set()

    run(main())


def test_listen_without_max_connections_has_no_cap() -> None:
    async def main() -> None:
        async def nothing(transport: Transport) -> None:
            pass

        async with await listen("memory://no-cap", nothing) as listener:
            assert listener.max_connections is None

    run(main())


def test_the_defaults_are_the_ones_the_docs_list() -> None:
    section = LIMITS_PAGE.read_text()  # docs/limits.md: the guide the README links to
    defaults = ConnectionLimits()
    assert Limits().handshake_timeout == defaults.handshake_timeout  # one shape
    for name in ("handshake_timeout", "idle_timeout", "frame_timeout", "max_connections",
                 "max_streams"):  # fmt: skip
        value = getattr(defaults, name)
        shown = "off" if value is None else f"{value:g}"
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}`"))
        assert f"| {shown}" in row, (name, shown, row)


def test_every_server_takes_the_default_limits() -> None:
    from wirestream.runtime import bpmux, rsio, rsocket

    async def main() -> None:
        defaults = ConnectionLimits()
        async with await rsocket.serve("memory://d-rsocket", rsocket.RSocketHandler()) as rs:
            assert rs.listener is not None
            assert rs.listener.max_connections == defaults.max_connections
        async with await rsio.serve("memory://d-rsio") as ri:
            assert ri._listener is not None
            assert ri._listener.max_connections == defaults.max_connections
        async with bpmux.serve("memory://d-bpmux", bpmux.Handler()) as bp:
            assert bp.listener is not None
            assert bp.listener.max_connections == defaults.max_connections
            async with bpmux.connect("memory://d-bpmux") as peer:
                assert peer.limits == defaults
                assert peer.engine.max_streams == defaults.max_streams

    run(main())


@pytest.mark.parametrize("scheme", ["tls", "ws", "wss"])
def test_a_silent_peer_never_reaches_the_protocol_past_handshake_timeout(
    scheme: str, tmp_path: Path
) -> None:
    """Before the protocol's first frame there is TLS's handshake or WebSocket's opening
    handshake: a peer silent there is dropped after ``handshake_timeout`` too."""
    from tests.support.tls_support import tls_contexts

    server_ssl = tls_contexts(tmp_path)[0] if scheme in ("tls", "wss") else None

    async def main() -> float:
        reached: list[Transport] = []

        async def record(transport: Transport) -> None:
            reached.append(transport)

        url = f"{scheme}://127.0.0.1:0/" if scheme != "tls" else "tls://127.0.0.1:0"
        async with await listen(url, record, ssl=server_ssl, handshake_timeout=0.3) as listener:
            raw = await RawPeer.open(listener.url)
            elapsed = await raw.closed_after(0.3 + SLACK)
            await raw.aclose()
            assert not reached
            return elapsed

    assert 0.3 <= run(main()) < 0.3 + SLACK
