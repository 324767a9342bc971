"""BPMUX (bpmux/rel) openings for ``engine.bpmux`` (tests/fuzz/engines.py).

The protocol is symmetric; the engine under test is the initiator or the acceptor, its
peer a real ``BpmuxConnection``: credit and Minimum exchanged, then a request, a
message and inner streams of the three kinds opened both ways (greedy ones where the
scenario enables them) -- or only the initial credit.  The engine under test reads
packets of at most 4 KiB and remembers 16 ended inner ids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wirestream.generated.bpmux.rel as bpmux
from wirestream.runtime.bpmux import BpmuxConnection
from tests.fuzz.engines import (
    Command,
    Once,
    Run,
    Side,
    _Checker,
    amount,
    payload,
    seen_ids,
    shuttle,
    unique,
    vector_frames,
)
from tests.fuzz.script import Script

__all__ = ["scenarios"]

CREDIT = (1, 2, 16, 100, 4096, 1 << 20, (1 << 64) - 1)


def _request(run: Run, engine: BpmuxConnection, script: Script) -> int:
    ours, theirs = engine.open_requests()
    return run.pick_id(script, [*ours, *theirs])


def _inner(run: Run, engine: BpmuxConnection, script: Script) -> int:
    return run.pick_id(script, engine.open_inner_ids())


def _items(script: Script) -> list[bytes] | None:
    if script.byte() % 2:
        return None
    return [script.blob(16) for _ in range(script.byte() % 4)]


COMMANDS: list[Command] = [
    lambda run, e, s: e.grant(amount(s, *CREDIT)),
    lambda run, e, s: e.send_close(),
    lambda run, e, s: e.send_message(payload(s)),
    lambda run, e, s: e.send_request(payload(s)),
    lambda run, e, s: e.cancel_request(_request(run, e, s)),
    lambda run, e, s: e.respond(_request(run, e, s), payload(s)),
    lambda run, e, s: e.respond_error(_request(run, e, s), s.blob(16)),
    lambda run, e, s: e.open_stream(s.blob(16), amount(s, 0, *CREDIT)),
    lambda run, e, s: e.open_sink(s.blob(16), _items(s)),
    lambda run, e, s: e.open_duplex(s.blob(16), amount(s, 0, *CREDIT), _items(s)),
    lambda run, e, s: e.send_item(_inner(run, e, s), payload(s)),
    lambda run, e, s: e.end_items(_inner(run, e, s)),
    lambda run, e, s: e.fail_items(_inner(run, e, s), s.blob(16)),
    lambda run, e, s: e.grant_inner(_inner(run, e, s), amount(s, *CREDIT)),
    lambda run, e, s: e.cancel_inner(_inner(run, e, s)),
    lambda run, e, s: e.cancel_all(),
]


def _side(engine: BpmuxConnection, who: str) -> Side:
    return Side(engine, COMMANDS, _Checker(bpmux.StreamDecoder(), f"BPMUX {who}"))


def _scenario(initiator: bool, opened: bool, **options: Any) -> Callable[[], Run]:
    once = Once()

    def build() -> Run:
        engine = BpmuxConnection(initiator=initiator, max_packet_size=4096, ended_memory=16,
                                 **options)  # fmt: skip
        peer = BpmuxConnection(initiator=not initiator, greedy=options.get("greedy", False))
        a, b = _side(engine, "under test"), _side(peer, "peer")
        sent: list[bytes] = []
        events: list[Any] = []
        for _ in range(2):
            for source, target in ((b, a), (a, b)):
                data = source.drain()
                if data:
                    sent.append(data)
                    events += target.engine.receive_data(data)
        if opened:
            greedy = bool(options.get("greedy"))
            for side in (peer, engine):
                side.send_request(b"ask")
                side.send_message(b"note")
                side.open_stream(b"stream", credit=64)
                side.open_sink(b"sink", [b"g1", b"g2"] if greedy else None)
                side.open_duplex(b"duplex", credit=64)
            for _ in range(2):
                for source, target in ((b, a), (a, b)):
                    data = source.drain()
                    if data:
                        sent.append(data)
                        events += target.engine.receive_data(data)
            events += shuttle(a, b)

        def make() -> list[Any]:
            opening: list[Any] = []
            for data in sent:
                opening += bpmux.StreamDecoder().feed(data)
            return unique([*vector_frames(bpmux, "bpmux_rel"), *opening], bpmux.encode)

        palette = once(make)
        run = Run(a, b, bpmux.encode, palette)
        run.ids |= seen_ids(events) | set(engine.open_inner_ids()) | set(peer.open_inner_ids())
        return run

    return build


def scenarios() -> list[Callable[[], Run]]:
    return [
        _scenario(False, True),
        _scenario(True, True),
        _scenario(False, True, greedy=True, minimum=32),
        _scenario(True, True, greedy=True, batching=False),
        _scenario(False, True, auto_credit=False, initial_credit=64),
        _scenario(True, False, initial_credit=16),
        _scenario(False, False),
    ]
