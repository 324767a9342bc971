"""Reactive Streams (rsio v0) openings for ``engine.rsio`` (tests/fuzz/engines.py).

Both encodings (binary LEB128 and MessagePack), either role under test: hellos
exchanged, then subscriptions both ways -- accepted with variable and fixed-size
elements, with demand -- or nothing beyond the hello.  The engine under test keeps small
limits (4 KiB messages, 1 KiB elements, 4 KiB of unfinished split elements, four peer
subscriptions) and splits what it publishes into 8-byte parts in some scenarios.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wirestream.generated.rsio.v0 as rsio
from wirestream.runtime.rsio import RsioConfig, RsioConnection
from wirestream.runtime.rsio.framing import Encoding, encode_frame, make_decoder
from tests.fuzz.engines import (
    Command,
    Once,
    Run,
    Side,
    _Checker,
    _Mirror,
    amount,
    payload,
    seen_ids,
    unique,
    vector_frames,
)
from tests.fuzz.script import Script

__all__ = ["scenarios"]

SMALL = RsioConfig(max_frame_size=4096, max_element_size=1024, max_reassembly_bytes=4096,
                   max_peer_subscriptions=4, max_pack=4)  # fmt: skip
SPLITTING = RsioConfig(max_frame_size=4096, max_element_size=1024, max_reassembly_bytes=4096,
                       max_peer_subscriptions=4, max_pack=4, max_part_size=8)  # fmt: skip
LONG_MAX = (1 << 63) - 1
DEMAND = (0, 1, 2, 5, 100, LONG_MAX)


def _sub(run: Run, script: Script) -> int:
    return run.pick_id(script)


def _elements(script: Script) -> list[bytes]:
    size = amount(script, 0, 1, 4, 8)
    count = script.byte() % 6
    if size:
        return [script.take(size).ljust(size, b"\0") for _ in range(count)]
    return [script.blob(32) for _ in range(count)]


COMMANDS: list[Command] = [
    lambda run, e, s: e.subscribe(s.pick(("ticks", "x", "")), initial_demand=amount(s, *DEMAND)),
    lambda run, e, s: e.request(_sub(run, s), amount(s, *DEMAND)),
    lambda run, e, s: e.cancel(_sub(run, s)),
    lambda run, e, s: e.accept(_sub(run, s), element_size=amount(s, 0, 0, 1, 4, 8)),
    lambda run, e, s: e.reject(_sub(run, s), "refused"),
    lambda run, e, s: e.send_next(_sub(run, s), payload(s)),
    lambda run, e, s: e.send_packed(_sub(run, s), _elements(s)),
    lambda run, e, s: e.offer(_sub(run, s), _elements(s)),
    lambda run, e, s: e.complete(_sub(run, s)),
    lambda run, e, s: e.error(_sub(run, s), "failed"),
]


def _side(engine: RsioConnection, encoding: Encoding) -> Side:
    decoder = make_decoder(encoding, rsio.Context(), rsio.MAX_FRAME_SIZE)
    return Side(engine, COMMANDS, _Checker(decoder, f"rsio {engine.role} ({encoding})"))


def _scenario(encoding: Encoding, under_test: str, config: RsioConfig, subscriptions: bool,
              hello: bool = True) -> Callable[[], Run]:  # fmt: skip
    once = Once()

    def build() -> Run:
        engine = RsioConnection(under_test, encoding=encoding, config=config)  # type: ignore[arg-type]
        peer_role = "server" if under_test == "client" else "client"
        peer = RsioConnection(peer_role, encoding=encoding)  # type: ignore[arg-type]
        a, b = _side(engine, encoding), _side(peer, encoding)
        exchanged: list[tuple[bool, bytes]] = []  # (to the engine under test?, bytes)
        events: list[Any] = []
        unread: list[bytes] = []  # for the palette only: the engine has not read it

        def exchange() -> None:
            for _ in range(4):
                for source, target in ((a, b), (b, a)):
                    data = source.drain()
                    if data:
                        exchanged.append((target is a, data))
                        events.extend(target.engine.receive_data(data))

        (engine if under_test == "client" else peer).initiate_connection()
        if hello:
            exchange()
        else:  # the hello is in the palette, not yet read
            unread.append(peer.data_to_send())
        if subscriptions:
            mine = engine.subscribe("ticks", initial_demand=5)
            theirs = peer.subscribe("fixed", initial_demand=3)
            more = peer.subscribe("more", initial_demand=LONG_MAX)
            exchange()
            peer.accept(mine, element_size=0)
            engine.accept(theirs, element_size=4)
            engine.accept(more, element_size=0)
            exchange()

        def make() -> list[Any]:
            opening: list[Any] = []
            for to_engine in (True, False):
                collect = make_decoder(encoding, rsio.Context(), rsio.MAX_FRAME_SIZE)
                for target_is_engine, data in [*exchanged, *((True, d) for d in unread)]:
                    if target_is_engine == to_engine:
                        opening += collect.feed(data)
            return unique([*vector_frames(rsio, "rsio_v0"), *opening],
                          lambda f: encode_frame(encoding, f, rsio.Context()))  # fmt: skip

        palette = once(make)
        # A mirror of the engine's decoder, fed the same bytes, says how the engine will
        # read a palette frame (the elementSize of each subscriber Id).
        mirror = _Mirror(make_decoder(encoding, ctx := rsio.Context(), rsio.MAX_FRAME_SIZE), ctx)
        for target_is_engine, data in exchanged:
            if target_is_engine:
                mirror(data)
        run = Run(a, b, lambda f: encode_frame(encoding, f, ctx), palette, mirror=mirror)
        run.ids |= seen_ids(events)
        return run

    return build


def scenarios() -> list[Callable[[], Run]]:
    found: list[Callable[[], Run]] = []
    for encoding in ("binary", "msgpack"):
        for under_test in ("server", "client"):
            found.append(_scenario(encoding, under_test, SMALL, subscriptions=True))
            found.append(_scenario(encoding, under_test, SPLITTING, subscriptions=True))
            found.append(_scenario(encoding, under_test, SMALL, subscriptions=False))
        found.append(_scenario(encoding, "server", SMALL, subscriptions=False, hello=False))
    return found
