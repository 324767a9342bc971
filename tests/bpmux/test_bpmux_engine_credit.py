"""BPMUX two-level credit, as properties (hypothesis).

Seed 002 L4: "data can only be transmitted once the receiver has signaled that it wants
to receive data"; L17 top-level credit "1 credit per byte sent, including metadata";
L58 inner packets "consume inner credit, not top-level credit".

For any interleaving of grants, sends, flushes and partial deliveries between two
engines: the bytes a sender has written never exceed what the receiver granted, at
either level; a command is refused exactly when the credit left cannot pay for it; the
receiver never sees an overrun; and once everything is delivered both sides agree on
the credit left (batching included); a stream that carried items can always be ended.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.generated.bpmux.rel import InnerItem, MainCredit, Message, Request, ResponseError
from wirestream.runtime.bpmux import (
    BpmuxConnection,
    Charge,
    CreditExceeded,
    OutboundCredit,
    charge_of,
)
from wirestream.runtime.errors import PeerExceededDemand

Op = tuple[str, int]
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("message"), st.integers(0, 300)),
        st.tuples(st.just("request"), st.integers(0, 300)),
        st.tuples(st.just("item"), st.integers(0, 300)),
        st.tuples(st.just("grant_top"), st.integers(1, 400)),
        st.tuples(st.just("grant_inner"), st.integers(1, 400)),
        st.tuples(st.just("flush"), st.just(0)),
        st.tuples(st.just("deliver"), st.integers(0, 1000)),
        st.tuples(st.just("answer"), st.just(0)),
    ),
    max_size=60,
)


def deliver(conn: BpmuxConnection, data: bytes) -> None:
    """Hand bytes over (never b"", which would mean EOF)."""
    if data:
        conn.receive_data(data)


class Link:
    """a sends messages, requests and items (on a stream b opened); b grants."""

    def __init__(self, initial: int, stream_credit: int, batching: bool, auto: bool) -> None:
        self.a = BpmuxConnection(initiator=True, initial_credit=1000, batching=batching)
        self.b = BpmuxConnection(initiator=False, initial_credit=initial, auto_credit=auto,
                                 batching=batching)  # fmt: skip
        deliver(self.a, self.b.data_to_send())
        deliver(self.b, self.a.data_to_send())
        self.stream = self.b.open_stream(b"s", credit=stream_credit)
        deliver(self.a, self.b.data_to_send())
        self.in_flight = b""  # written by a, not yet received by b
        self.items_sent = 0

    def send(self, kind: str, size: int) -> None:
        a, payload = self.a, bytes(size)
        if kind == "message":
            cost, available, command = len(Message(payload).to_bytes()), a.top_level_credit, (
                lambda: a.send_message(payload))  # fmt: skip
        elif kind == "request":
            cost = len(Request(0, payload).to_bytes())  # ids stay below 248: one byte
            available = a.top_level_credit
            command = lambda: a.send_request(payload)  # noqa: E731
        else:
            cost, available = a.item_cost(self.stream, payload), a.inner_credit(self.stream)
            command = lambda: a.send_item(self.stream, payload)  # noqa: E731
        try:
            command()
        except CreditExceeded:
            assert cost > available, "refused although the credit covered it"
        else:
            assert cost <= available, "accepted beyond the credit"
            self.items_sent += kind == "item"

    def check(self) -> None:
        a_top, b_top = self.a._send_top, self.b._recv_top
        assert a_top.window.consumed + a_top.reserved <= a_top.window.granted
        assert a_top.window.granted <= b_top.granted  # a never believes in ungranted credit
        assert a_top.window.consumed <= b_top.granted  # written <= granted (L4, L17)
        if self.stream in self.a.open_inner_ids():
            a_in = self.a._outbound[self.stream].send
            b_in = self.b._inbound[self.stream].recv
            assert a_in.window.consumed + a_in.reserved <= a_in.window.granted
            assert a_in.window.consumed <= b_in.granted  # L58

    def settle(self) -> None:
        for _ in range(10):
            self.in_flight += self.a.data_to_send()
            deliver(self.b, self.in_flight)
            self.in_flight = b""
            back = self.b.data_to_send()
            if not back:
                break
            deliver(self.a, back)


@settings(max_examples=300, deadline=None)
@given(initial=st.integers(0, 2000), stream_credit=st.integers(0, 500), batching=st.booleans(),
       auto=st.booleans(), ops=OPS)  # fmt: skip
def test_two_level_credit_is_never_exceeded(initial: int, stream_credit: int, batching: bool,
                                            auto: bool, ops: list[Op]) -> None:  # fmt: skip
    link = Link(initial, stream_credit, batching, auto)
    a, b = link.a, link.b
    pending: list[int] = []
    for kind, value in ops:
        if kind in ("message", "request", "item"):
            link.send(kind, value)
        elif kind == "grant_top":
            b.grant(value)
        elif kind == "grant_inner":
            b.grant_inner(link.stream, value)
        elif kind == "flush":
            link.in_flight += a.data_to_send()
            deliver(a, b.data_to_send())
        elif kind == "deliver":
            cut = min(value, len(link.in_flight))
            for event in b.receive_data(link.in_flight[:cut]) if cut else []:
                if type(event).__name__ == "RequestReceived":
                    pending.append(getattr(event, "req_id"))
            link.in_flight = link.in_flight[cut:]
        elif kind == "answer" and pending:
            b.respond(pending.pop(0), b"ok")  # free: does not touch credit
        link.check()
    if link.items_sent:
        a.end_items(link.stream)  # B3: the InnerEnd's credit was kept back
    link.settle()
    link.check()
    # Everything delivered: both sides agree on the credit left, at both levels.
    assert a.top_level_credit == b.peer_top_level_credit
    if not link.items_sent:
        assert a.inner_credit(link.stream) == b.peer_inner_credit(link.stream)


@settings(max_examples=200, deadline=None)
@given(credit=st.integers(1, 600), size=st.integers(0, 600), inner=st.booleans())
def test_receiver_refuses_exactly_the_overruns(credit: int, size: int, inner: bool) -> None:
    """The receiving side of the law: a packet is accepted iff it fits the credit left."""
    conn = BpmuxConnection(initiator=True, initial_credit=credit, auto_credit=False)
    conn.data_to_send()
    conn.receive_data(MainCredit(10_000).to_bytes())
    if inner:
        stream = conn.open_stream(b"", credit=credit)
        packet: InnerItem | Message = InnerItem(stream, bytes(size))
    else:
        packet = Message(bytes(size))
    fits = len(packet.to_bytes()) <= credit
    if fits:
        conn.receive_data(packet.to_bytes())
    else:
        with pytest.raises(PeerExceededDemand):
            conn.receive_data(packet.to_bytes())


# --- the charge table and outbound credit, unit by unit (docs/mutation.md) --------------


def test_charge_of_a_packet_is_its_seed_rule() -> None:
    """L17 "Unless indicated otherwise, sending a message consumes top-level credit", L58
    inner packets "consume inner credit, not top-level credit", L49 ResponseError "(does
    not consume credit)"; a packet of unknown type costs nothing (DECISION B4)."""
    assert charge_of(Message(b"m")) is Charge.TOP_LEVEL
    assert charge_of(InnerItem(1, b"i")) is Charge.INNER
    assert charge_of(ResponseError(0, b"e")) is Charge.NONE
    assert charge_of(object()) is Charge.NONE


def test_outbound_credit_reserves_releases_and_says_what_is_missing() -> None:
    """L4: "data can only be transmitted once the receiver has signaled that it wants to
    receive data": a packet beyond what is left fails at the call with the bytes needed
    and left; a reservation given back is credit again."""
    credit = OutboundCredit(Charge.INNER, initial=10)
    assert credit.available == 10 and credit.fits(10) and not credit.fits(10, keep=1)
    credit.reserve(4)
    credit.release(4)
    assert credit.available == 10
    credit.reserve(6)
    with pytest.raises(CreditExceeded) as caught:
        credit.reserve(3, keep=2)
    assert (caught.value.level, caught.value.needed, caught.value.available) == ("inner", 5, 4)
    assert str(caught.value) == (
        "a 3-byte packet needs more inner credit than the 4 bytes left"
        " (keeping 2 for the end of the stream)"
    )
    with pytest.raises(
        CreditExceeded, match="^a 5-byte packet needs more inner credit than the 4 bytes left$"
    ):
        credit.reserve(5)
