"""RabbitMQ stream openings for ``engine.rabbitmq_stream`` (tests/fuzz/engines.py).

The engine under test is the client (``ClientConnection``, the only role wirestream
implements); its peer the sans-I/O test broker of tests/support/rabbitmq_stream_test_broker.py,
which scripts RabbitMQ 3.10's answers.  The broker is a test double, not the system
under test: what it raises is swallowed (``_Broker``) and it stops answering.
Openings: the connection open with a publisher declared, messages stored and a
subscription receiving chunks; open with nothing else; half-way through the handshake
(after PeerProperties / SASL); or nothing read at all.  The client reads frames of at
most 64 KiB.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wirestream.generated.rabbitmq_stream.v1 as rmq
from wirestream.runtime.errors import ProtocolError
from wirestream.runtime.rabbitmq_stream import (
    ClientConnection,
    CompressionType,
    CreditOnConsumption,
    OffsetSpecFirst,
    OffsetSpecLast,
    OffsetSpecNext,
    OffsetSpecOffset,
    OffsetSpecTimestamp,
)
from tests.fuzz.engines import (
    Command,
    Once,
    Run,
    Side,
    _Checker,
    amount,
    payload,
    seen_ids,
    unique,
    vector_frames,
)
from tests.fuzz.script import Script
from tests.support.rabbitmq_stream_test_broker import TestBroker

__all__ = ["scenarios"]

STREAMS = ("s", "t", "")


OFFSETS = (None, OffsetSpecFirst(), OffsetSpecLast(), OffsetSpecNext(), OffsetSpecOffset(2),
           OffsetSpecTimestamp(0))  # fmt: skip


def _credit(script: Script) -> int | CreditOnConsumption:
    choice = script.byte() % 6
    if choice >= 4:
        initial = choice - 3  # 1 or 2
        return CreditOnConsumption(initial, low_tide=1 + script.byte() % initial)
    return (0, 1, 10, 0xFFFF)[choice]


def _messages(script: Script) -> list[bytes]:
    return [payload(script) for _ in range(1 + script.byte() % 3)]


def _id(script: Script) -> int:
    return script.byte() % 4


COMMANDS: list[Command] = [
    lambda run, e, s: e.create_stream(s.pick(STREAMS)),
    lambda run, e, s: e.delete_stream(s.pick(STREAMS)),
    lambda run, e, s: e.metadata([s.pick(STREAMS) for _ in range(1 + s.byte() % 2)]),
    lambda run, e, s: e.route("key", "super"),
    lambda run, e, s: e.partitions("super"),
    lambda run, e, s: e.declare_publisher(_id(s), s.pick(STREAMS), s.pick((None, "ref"))),
    lambda run, e, s: e.publish(_id(s), _messages(s)),
    lambda run, e, s: e.publish(_id(s), [b"m"] * 2, publishing_ids=[s.u16(), s.u16()]),
    lambda run, e, s: e.publish_batch(
        _id(s), _messages(s), s.pick((CompressionType.NONE, CompressionType.GZIP))
    ),
    lambda run, e, s: e.query_publisher_sequence("ref", s.pick(STREAMS)),
    lambda run, e, s: e.delete_publisher(_id(s)),
    lambda run, e, s: e.subscribe(_id(s), s.pick(STREAMS), s.pick(OFFSETS), credit=_credit(s)),
    lambda run, e, s: e.credit(_id(s), amount(s, 0, 1, 10, 0xFFFF)),
    lambda run, e, s: e.chunk_consumed(_id(s), amount(s, 1, 2, 10)),
    lambda run, e, s: e.unsubscribe(_id(s)),
    lambda run, e, s: e.store_offset("ref", s.pick(STREAMS), amount(s, 0, 1, 1 << 40)),
    lambda run, e, s: e.query_offset("ref", s.pick(STREAMS)),
    lambda run, e, s: e.answer_sasl_challenge(s.blob(16)),
]


class _Broker:
    """The test broker behind the engine shape; once it raises it is gone (quiet)."""

    def __init__(self, broker: TestBroker) -> None:
        self.broker: TestBroker | None = broker
        self.closed = False

    def _call(self, action: Callable[[TestBroker], Any]) -> None:
        if self.broker is not None:
            try:
                action(self.broker)
            except Exception:  # noqa: BLE001 - a test double's limits, not a finding
                self.broker = None

    def receive_data(self, data: bytes, now: float | None = None) -> list[Any]:
        self._call(lambda b: b.receive_data(data) if data else None)
        return []

    def data_to_send(self) -> bytes:
        return self.broker.data_to_send() if self.broker is not None else b""

    def get_timer(self) -> float | None:
        return None

    def handle_timer(self, now: float) -> list[Any]:
        return []

    def close(self) -> list[Any]:
        self._call(lambda b: b.close())
        return []


BROKER_COMMANDS: list[Command] = [
    lambda run, e, s: e._call(lambda b: b.close(amount(s, 1, 13, 16), "bye")),
    lambda run, e, s: e._call(lambda b: b.heartbeat_now()),
    lambda run, e, s: e._call(lambda b: b.add_stream(s.pick(STREAMS))),
    lambda run, e, s: e._call(lambda b: b.stream_gone(s.pick(STREAMS))),
    lambda run, e, s: e._call(lambda b: b.deliver_all()),
]


def _scenario(stage: str, challenge: bytes | None = None, **options: Any) -> Callable[[], Run]:
    once = Once()

    def build() -> Run:
        client = ClientConnection(max_frame_size=65536, **options)
        broker = TestBroker(heartbeat=options.get("heartbeat", 60), challenge=challenge)
        broker.add_stream("s")
        engine = Side(client, COMMANDS, _Checker(rmq.StreamDecoder(sender="client"), "client"))
        peer = Side(_Broker(broker), BROKER_COMMANDS)
        received: list[bytes] = []
        events: list[Any] = []

        def exchange(rounds: int) -> None:
            for _ in range(rounds):
                out = engine.drain()
                if out:
                    peer.engine.receive_data(out)
                answer = peer.drain()
                if not answer:
                    break
                received.append(answer)
                events.extend(client.receive_data(answer))

        if stage != "none":
            client.initiate_connection()
            exchange(1 if stage == "handshake" else 8)
        if stage == "busy":
            client.declare_publisher(0, "s", "ref")
            exchange(4)
            client.publish(0, [b"one", b"two"])
            client.publish_batch(0, [b"three", b"four"], CompressionType.NONE)
            exchange(4)
            client.subscribe(1, "s", OffsetSpecFirst(), credit=2)
            client.subscribe(2, "s", OffsetSpecOffset(1), credit=CreditOnConsumption(1))
            exchange(4)
            client.publish(0, [b"five"])
            exchange(4)

        def make() -> list[Any]:
            opening: list[Any] = []
            decoder = rmq.StreamDecoder(sender="server")
            for data in received:
                try:
                    opening += decoder.feed(data)
                except ProtocolError:
                    break
            senders = ("server",)
            return unique([*vector_frames(rmq, "rabbitmq_stream_v1", senders), *opening],
                          rmq.encode)  # fmt: skip

        palette = once(make)
        run = Run(engine, peer, rmq.frame_bytes, palette)
        run.ids |= seen_ids(events)
        return run

    return build


def scenarios() -> list[Callable[[], Run]]:
    return [
        _scenario("busy"),
        _scenario("busy", heartbeat=1),
        _scenario("open"),
        _scenario("handshake"),
        _scenario("handshake", challenge=b"more, please"),
        _scenario("none"),
    ]
