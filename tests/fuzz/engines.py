"""Fuzz targets for the sans-I/O engines: a valid opening, then what the fuzzer chooses.

An input is ``[scenario]`` then a script of steps (``Script``).  The scenario builds
the engine under test and its peer -- a real engine of the other role (for RabbitMQ,
the sans-I/O test broker of tests/support/rabbitmq_stream_test_broker.py) -- and runs a valid
opening between them (SETUP and requests, hellos and subscriptions, credit and inner
streams, the RabbitMQ handshake, a resumed RSocket session ...).  Each step then does
one of:

- deliver what each side queued to the other (split at a chosen point);
- a command on the engine under test, or on its peer, with chosen arguments and ids
  (open streams, subscriptions, requests: both sides' ids, harvested from events);
- a frame from the version's *palette* -- the golden vectors (tests/vectors) and every
  frame the opening exchanged -- with fields changed (ids, counts, flags, lengths,
  payloads: ``_patch``), encoded and fed to the engine, so that structure reaches the
  deep states; or the bytes of such a frame with bytes overwritten; or raw bytes;
- time passing (``handle_timer``), the transport's end (EOF), or ``close()``.

What must hold (anything else that escapes the target is a finding):

1. engines, the peer engine included, raise nothing but ``ProtocolError`` -- from
   ``receive_data``, ``handle_timer``, ``close`` and the commands (a command refused
   because of the peer's doing, e.g. ``IllegalSend`` on a stream the peer completed, is
   a ``ProtocolError`` and fine);
2. every byte the engine under test sends decodes as frames of its protocol: whatever
   it was fed, it never writes a malformed frame (``_Checker``);
3. the work of an input is bounded: at most ``MAX_STEPS`` steps, each moving a bounded
   number of bytes, and engines configured with small frame, reassembly and resume
   limits, so that no input can make one allocate more than a few of them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import yaml

from wirestream.runtime.errors import DecodeError, ProtocolError
from tests.fuzz.script import Script
from tests.support.protocols import VECTORS

__all__ = ["MAX_STEPS", "Once", "Op", "Run", "Side", "engine_target", "scenarios"]

MAX_STEPS = 48
MAX_DELIVERY_ROUNDS = 8  # rounds of "deliver both ways" after the script ends

# Fields that name a stream, subscription, request or publisher: patched with ids the
# connection knows (harvested from events and commands) or small ones.
ID_FIELDS = frozenset({"stream_id", "subscriber", "inner_id", "req_id", "correlation_id",
                       "publisher_id", "subscription_id", "element_id",
                       "initial_req_id"})  # fmt: skip
INTERESTING = (0, 1, 2, 3, 4, 7, 8, 15, 16, 64, 127, 128, 255, 256, 1000, 0x7FFF, 0x8000,
               0xFFFF, 0x10000, 0xFFFFFF, 0x1000000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
               1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)  # fmt: skip


class Op:
    """Step codes (a script byte modulo 16)."""

    DELIVER = (0, 1, 2)
    LOCAL = (3, 4)
    PEER = (5, 6)
    FRAME = (7, 8, 9)
    RAW = (10,)
    MUTATED = (11,)
    TIME = (12,)
    EOF = (13,)
    PEER_EOF = (14,)
    CLOSE = (15,)


Command = Callable[["Run", Any, Script], object]


class _Checker:
    """Decodes every byte one side sends: a ``DecodeError`` means the engine wrote a
    malformed frame, whatever it had been fed (property 2)."""

    def __init__(self, decoder: Any, who: str) -> None:
        self.decoder = decoder
        self.who = who

    def __call__(self, data: bytes) -> None:
        try:
            self.decoder.feed(data)
        except DecodeError as error:
            raise AssertionError(f"{self.who} sent bytes that are not frames: {error!r}") from error


class _Mirror:
    """The engine's own view of the context of what it receives (rsio's elementSize per
    subscriber), kept by decoding a copy of every byte it is fed, so that palette frames
    are encoded the way the engine will decode them."""

    def __init__(self, decoder: Any, ctx: Any) -> None:
        self.decoder = decoder
        self.ctx = ctx

    def __call__(self, data: bytes) -> None:
        try:
            self.decoder.feed(data)
        except ProtocolError:
            pass  # the engine stops here too; the context stays as it was


@dataclass
class Side:
    """One end: the engine, the commands it takes, and its output check."""

    engine: Any
    commands: list[Command]
    check: _Checker | None = None  # None: not held to property 2 (the test broker)
    ended: bool = False  # fed EOF: nothing more is delivered to it

    def drain(self) -> bytes:
        data: bytes = self.engine.data_to_send()
        if data and self.check is not None:
            self.check(data)
        return data


@dataclass
class Run:
    """One input's connection: the engine under test, its peer, and what the script
    may send the engine besides the peer's output."""

    engine: Side
    peer: Side
    wire: Callable[[Any], bytes]  # a palette frame -> the bytes the engine would read
    palette: list[Any]
    mirror: _Mirror | None = None
    now: float = 0.0
    ids: set[int] = field(default_factory=lambda: {0, 1, 2, 3})

    # --- feeding --------------------------------------------------------------------

    def feed(self, side: Side, data: bytes) -> None:
        if side is self.engine and self.mirror is not None:
            self.mirror(data)
        try:
            events = side.engine.receive_data(data, self.now)
        except ProtocolError as error:
            events = list(error.events)
        self.harvest(events)

    def deliver(self, script: Script) -> None:
        for source, target in ((self.engine, self.peer), (self.peer, self.engine)):
            data = source.drain()
            if not data or target.ended:
                continue
            cut = script.byte() % (len(data) + 1)
            if cut:
                self.feed(target, data[:cut])
            if cut < len(data):
                self.feed(target, data[cut:])

    def inject(self, data: bytes, script: Script) -> None:
        """Bytes the peer did not send, fed to the engine (in up to two pieces)."""
        self.peer.drain()  # what the peer queued is not written after them
        cut = script.byte() % (len(data) + 1)
        for piece in (data[:cut], data[cut:]):
            if piece:
                self.feed(self.engine, piece)

    def harvest(self, events: Iterable[Any]) -> None:
        for event in events:
            for name in ID_FIELDS:
                value = getattr(event, name, None)
                if type(value) is int and len(self.ids) < 64:
                    self.ids.add(value)

    # --- choices --------------------------------------------------------------------

    def pick_id(self, script: Script, more: Iterable[int] = ()) -> int:
        options = sorted(self.ids.union(more))
        choice = script.byte()
        if choice == 0xFF:  # now and then an id nobody announced
            return script.u32()
        return options[choice % len(options)]

    def command(self, side: Side, script: Script) -> None:
        if not side.commands:
            return
        action = side.commands[script.below(len(side.commands))]
        try:
            result = action(self, side.engine, script)
        except ProtocolError:
            return
        if type(result) is int and len(self.ids) < 64:
            self.ids.add(result)

    def frame(self, script: Script) -> bytes | None:
        """A palette frame with up to three fields changed, as the engine would read it
        (None when the change makes it unencodable: ``EncodeError``)."""
        frame = copy.copy(self.palette[script.below(len(self.palette))])
        for _ in range(script.byte() % 4):
            _patch(frame, script, self)
        try:
            return self.wire(frame)
        except ProtocolError:
            return None

    def tick(self, script: Script) -> None:
        self.now += (0.001, 0.5, 5.0, 45.0, 120.0, 3600.0)[script.below(6)]
        for side in (self.engine, self.peer):
            try:
                events = side.engine.handle_timer(self.now)
            except ProtocolError:
                continue
            self.harvest(events)
            timer = side.engine.get_timer()
            assert timer is None or timer == timer, "get_timer() returned NaN"

    def close(self, side: Side) -> None:
        try:
            self.harvest(side.engine.close())
        except ProtocolError:
            pass


def _patch(frame: Any, script: Script, run: Run, depth: int = 0) -> None:
    """Change one field of ``frame`` (or of a struct inside it) to a value of the same
    type: an id the connection knows, a boundary number, a flipped flag, other bytes or
    text, a shorter or longer list.  Values the frame cannot carry make encoding fail
    with ``EncodeError``: the step is skipped."""
    names = getattr(type(frame), "__match_args__", ())
    if not names:
        return
    name = names[script.below(len(names))]
    new = _changed(getattr(frame, name), name, script, run, depth)
    if new is not _SAME:
        try:
            setattr(frame, name, new)
        except (AttributeError, TypeError, ValueError):
            pass  # a read-only or checked attribute


_SAME = object()


def _changed(value: Any, name: str, script: Script, run: Run, depth: int) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        if name in ID_FIELDS and script.flag():
            new = run.pick_id(script)
        else:
            choice = script.byte()
            new = INTERESTING[choice % len(INTERESTING)] if choice < 0xF0 else value + choice - 0xF8
            new = max(new, 0)
        if type(value) is not int:  # an IntEnum field keeps its type (or is left alone)
            try:
                return type(value)(new)
            except ValueError:
                return _SAME
        return new
    if isinstance(value, bytes):
        return script.blob(256) * (1 + script.byte() % 4)
    if isinstance(value, str):
        return script.blob(64).decode("utf-8", "replace")
    if isinstance(value, list):
        how = script.byte() % 4
        if how == 0:
            return value[: script.byte() % (len(value) + 1)]
        if how < 3 or not value:
            return (value * (1 + how))[:64]
        index = script.below(len(value))
        item = _changed(value[index], name, script, run, depth + 1)
        return value if item is _SAME else [*value[:index], item, *value[index + 1 :]]
    if hasattr(type(value), "__match_args__") and depth < 3:  # a struct: change inside
        inner = copy.copy(value)
        _patch(inner, script, run, depth + 1)
        return inner
    return _SAME  # None (an absent optional field)


# ==================================================================================
# Running a script
# ==================================================================================


def run_script(run: Run, script: Script) -> None:
    for _ in range(MAX_STEPS):
        if not script:
            break
        op = script.byte() % 16
        if op in Op.DELIVER:
            run.deliver(script)
        elif op in Op.LOCAL:
            run.command(run.engine, script)
        elif op in Op.PEER:
            run.command(run.peer, script)
        elif op in Op.FRAME:
            data = run.frame(script)
            if data is not None:
                run.inject(data, script)
        elif op in Op.RAW:
            run.inject(script.blob(256), script)
        elif op in Op.MUTATED:
            data = run.frame(script) or b""
            if data:
                mutable = bytearray(data)
                for _ in range(1 + script.byte() % 3):
                    mutable[script.below(len(mutable))] = script.byte()
                run.inject(bytes(mutable), script)
        elif op in Op.TIME:
            run.tick(script)
        elif op in Op.EOF:
            run.engine.ended = True
            run.feed(run.engine, b"")
        elif op in Op.PEER_EOF:
            run.peer.ended = True
            run.feed(run.peer, b"")
        else:
            run.close(run.engine)
    for _ in range(MAX_DELIVERY_ROUNDS):
        run.deliver(script)
    # The end: our close, then the transport's (both must be quiet, whatever came before).
    run.close(run.engine)
    run.engine.drain()
    run.feed(run.engine, b"")
    run.engine.drain()


Scenario = Callable[[], Run]


def engine_target(name: str) -> Callable[[bytes], None]:
    """The harness of engine target ``name`` (``rsocket.v1_0``, ``rsio``, ...)."""
    options = scenarios(name)

    def run(data: bytes) -> None:
        script = Script(data)
        built = options[script.below(len(options))]()
        run_script(built, script)

    return run


def scenarios(name: str) -> list[Scenario]:
    if name.startswith("rsocket."):
        from tests.fuzz import rsocket_scenarios

        return rsocket_scenarios.scenarios("1.0" if name == "rsocket.v1_0" else "0.2")
    if name == "rsio":
        from tests.fuzz import rsio_scenarios

        return rsio_scenarios.scenarios()
    if name == "bpmux":
        from tests.fuzz import bpmux_scenarios

        return bpmux_scenarios.scenarios()
    if name == "rabbitmq_stream":
        from tests.fuzz import rabbitmq_scenarios

        return rabbitmq_scenarios.scenarios()
    raise KeyError(name)


# ==================================================================================
# What every scenario module shares
# ==================================================================================


@cache
def vector_frames(
    codec: Any, stem: str, senders: tuple[str | None, ...] = (None,)
) -> tuple[Any, ...]:
    """The valid golden vectors of ``tests/vectors/<stem>.yaml``, decoded (those whose
    ``sender`` is one of ``senders`` or unset); read once per process."""
    frames = []
    vectors = yaml.safe_load((VECTORS / f"{stem}.yaml").read_text(encoding="utf-8")) or []
    for vector in vectors:
        sender = vector.get("sender")
        if sender is not None and sender not in senders:
            continue
        ctx = None
        if vector.get("ctx"):
            ctx = codec.Context(**vector["ctx"])
        frames.append(codec.decode(bytes.fromhex(vector["hex"]), ctx, sender))
    return tuple(frames)


class Once:
    """A scenario's palette, made on its first build (an opening is deterministic: the
    frames it exchanges are the same on every build)."""

    def __init__(self) -> None:
        self.value: list[Any] | None = None

    def __call__(self, make: Callable[[], list[Any]]) -> list[Any]:
        if self.value is None:
            self.value = make()
        return self.value


def unique(frames: Iterable[Any], key: Callable[[Any], bytes]) -> list[Any]:
    """``frames`` without repeats (by their encoding), in order."""
    seen: dict[bytes, Any] = {}
    for frame in frames:
        try:
            seen.setdefault(key(frame), frame)
        except ProtocolError:
            continue
    return list(seen.values())


def payload(script: Script) -> bytes:
    """Up to 255 bytes, now and then repeated (to cross fragment and part sizes)."""
    return script.blob(256) * (1 + (script.byte() % 8 == 7) * 7)


def amount(script: Script, *options: int) -> int:
    return options[script.below(len(options))]


def shuttle(a: Side, b: Side, rounds: int = 16) -> list[Any]:
    """Deliver both ways until quiet (scenario openings: every engine call must succeed)."""
    events: list[Any] = []
    for _ in range(rounds):
        out_a, out_b = a.drain(), b.drain()
        if not out_a and not out_b:
            break
        if out_a:
            events += b.engine.receive_data(out_a)
        if out_b:
            events += a.engine.receive_data(out_b)
    return events


def seen_ids(events: Iterable[Any]) -> set[int]:
    ids = {0, 1, 2, 3}
    for event in events:
        for name in ID_FIELDS:
            value = getattr(event, name, None)
            if type(value) is int:
                ids.add(value)
    return ids
