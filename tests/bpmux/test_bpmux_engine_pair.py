"""BPMUX: two engines back-to-back in memory (tests.support.engine_pair.shuttle), every
interaction model with its complete, error and cancel paths, batching, greedy
creation, Close and CancelAll."""

from __future__ import annotations

import pytest

from wirestream.generated.bpmux.rel import (
    InnerItems,
    Message,
    Messages,
    Request,
    Requests,
    StreamDecoder,
)
from wirestream.runtime.bpmux import (
    BpmuxConnection,
    ConnectionDone,
    ConnectionEnded,
    InnerCancelled,
    InnerCreditReceived,
    InnerEnded,
    InnerErrored,
    InnerKind,
    InnerOpened,
    ItemReceived,
    BpmuxMessageReceived,
    PeerClosed,
    RequestCancelled,
    BpmuxRequestReceived,
    ResponseErrorReceived,
    ResponseReceived,
)
from wirestream.runtime.errors import IllegalSend
from tests.support.engine_pair import shuttle


def pair(**options: object) -> tuple[BpmuxConnection, BpmuxConnection]:
    """Initiator a and acceptor b, past the MainCredit exchange."""
    a = BpmuxConnection(initiator=True, **options)  # type: ignore[arg-type]
    b = BpmuxConnection(initiator=False, **options)  # type: ignore[arg-type]
    shuttle(a, b)
    return a, b


def wire(sender: BpmuxConnection, receiver: BpmuxConnection) -> tuple[list[object], list[object]]:
    """Move sender's output to receiver; (the packets on the wire, receiver's events)."""
    data = sender.data_to_send()
    return list(StreamDecoder().feed(data)), list(receiver.receive_data(data))


def only(events: list[object], *kinds: type) -> list[object]:
    return [e for e in events if isinstance(e, kinds)]


def test_message_both_ways() -> None:
    a, b = pair()
    a.send_message(b"to b")
    b.send_message(b"to a")
    events_a, events_b = shuttle(a, b)
    assert only(events_b, BpmuxMessageReceived) == [BpmuxMessageReceived(b"to b")]
    assert only(events_a, BpmuxMessageReceived) == [BpmuxMessageReceived(b"to a")]


def test_request_response_and_error_both_directions() -> None:
    a, b = pair()
    first, second = a.send_request(b"q1"), a.send_request(b"q2")
    mine = b.send_request(b"from b")
    events_a, events_b = shuttle(a, b)
    assert only(events_b, BpmuxRequestReceived) == [BpmuxRequestReceived(first, b"q1"),
                                               BpmuxRequestReceived(second, b"q2")]  # fmt: skip
    # Per-direction req_id namespaces: both sides used id 0.
    assert (
        only(events_a, BpmuxRequestReceived) == [BpmuxRequestReceived(mine, b"from b")]
        and mine == 0
    )
    b.respond(first, b"r1")
    b.respond_error(second, b"e2")
    a.respond(mine, b"ra")
    events_a, events_b = shuttle(a, b)
    assert only(events_a, ResponseReceived, ResponseErrorReceived) == [
        ResponseReceived(first, b"r1"), ResponseErrorReceived(second, b"e2")]  # fmt: skip
    assert only(events_b, ResponseReceived) == [ResponseReceived(mine, b"ra")]
    assert a.open_requests() == ([], []) and b.open_requests() == ([], [])


def test_request_cancel_and_crossing_response() -> None:
    a, b = pair()
    req_id = a.send_request(b"slow")
    shuttle(a, b)
    a.cancel_request(req_id)
    b.respond(req_id, b"crossing")  # b has not seen the cancel yet
    events_a, events_b = shuttle(a, b)
    assert events_b == []  # the RequestCancel met a request already answered
    assert events_a == []  # the answer met a request already cancelled
    other = a.send_request(b"second")
    _, events_b = shuttle(a, b)
    a.cancel_request(other)
    _, events_b = shuttle(a, b)
    assert events_b == [RequestCancelled(other)]
    with pytest.raises(IllegalSend):
        b.respond(other, b"too late")


def test_stream_items_end() -> None:
    a, b = pair()
    stream = a.open_stream(b"numbers", credit=100)
    _, events_b = shuttle(a, b)
    assert events_b == [InnerOpened(stream, InnerKind.STREAM, b"numbers", we_send=True,
                                    we_receive=False, credit=100)]  # fmt: skip
    for n in range(3):
        b.send_item(stream, bytes([n]))
    b.end_items(stream)
    events_a, _ = shuttle(a, b)
    assert events_a == [ItemReceived(stream, b"\x00"), ItemReceived(stream, b"\x01"),
                        ItemReceived(stream, b"\x02"), InnerEnded(stream)]  # fmt: skip
    assert a.open_inner_ids() == [] and b.open_inner_ids() == []


def test_stream_error() -> None:
    a, b = pair()
    stream = a.open_stream(b"", credit=100)
    shuttle(a, b)
    b.send_item(stream, b"one")
    b.fail_items(stream, b"broken")
    events_a, _ = shuttle(a, b)
    assert events_a == [ItemReceived(stream, b"one"), InnerErrored(stream, b"broken")]


def test_stream_cancel_stops_the_sender() -> None:
    a, b = pair()
    stream = a.open_stream(b"", credit=100)
    shuttle(a, b)
    b.send_item(stream, b"in flight")
    a.cancel_inner(stream)
    events_a, events_b = shuttle(a, b)
    assert events_a == []  # the item crossing our InnerCancel is dropped
    assert events_b == [InnerCancelled(stream)]
    with pytest.raises(IllegalSend):
        b.send_item(stream, b"more")
    assert a.open_inner_ids() == [] and b.open_inner_ids() == []


def test_sink_credit_items_end() -> None:
    a, b = pair()
    sink = a.open_sink(b"upload")
    _, events_b = shuttle(a, b)
    assert events_b == [InnerOpened(sink, InnerKind.SINK, b"upload", we_send=False,
                                    we_receive=True, credit=0)]  # fmt: skip
    b.grant_inner(sink, 50)
    events_a, _ = shuttle(a, b)
    assert events_a == [InnerCreditReceived(sink, 50)]
    a.send_item(sink, b"chunk")
    a.end_items(sink)
    _, events_b = shuttle(a, b)
    assert events_b == [ItemReceived(sink, b"chunk"), InnerEnded(sink)]


def test_duplex_both_directions_end_and_cancel() -> None:
    a, b = pair()
    duplex = a.open_duplex(b"chat", credit=100)
    _, events_b = shuttle(a, b)
    assert events_b == [InnerOpened(duplex, InnerKind.DUPLEX, b"chat", we_send=True,
                                    we_receive=True, credit=100)]  # fmt: skip
    b.grant_inner(duplex, 100)
    b.send_item(duplex, b"hello a")
    events_a, _ = shuttle(a, b)
    assert only(events_a, ItemReceived) == [ItemReceived(duplex, b"hello a")]
    a.send_item(duplex, b"hello b")
    a.end_items(duplex)  # a's half ends, b's half goes on
    _, events_b = shuttle(a, b)
    assert events_b == [ItemReceived(duplex, b"hello b"), InnerEnded(duplex)]
    assert a.open_inner_ids() == [duplex]
    b.send_item(duplex, b"still here")
    a.cancel_inner(duplex)
    events_a, events_b = shuttle(a, b)
    assert events_b == [InnerCancelled(duplex)]
    assert a.open_inner_ids() == [] and b.open_inner_ids() == []


def test_duplex_opened_by_acceptor_uses_even_ids() -> None:
    a, b = pair()
    duplex = b.open_duplex(b"", credit=10)
    events_a, _ = shuttle(a, b)
    assert duplex == 0 and only(events_a, InnerOpened)[0] == InnerOpened(
        0, InnerKind.DUPLEX, b"", we_send=True, we_receive=True, credit=10)  # fmt: skip


def test_queued_messages_leave_as_one_messages_packet() -> None:
    a, b = pair()
    for n in range(5):
        a.send_message(bytes([n]))
    packets, events = wire(a, b)
    assert packets == [Messages([bytes([n]) for n in range(5)])]
    assert only(events, BpmuxMessageReceived) == [
        BpmuxMessageReceived(bytes([n])) for n in range(5)
    ]


def test_queued_requests_leave_as_one_requests_packet() -> None:
    a, b = pair()
    ids = [a.send_request(b"q%d" % n) for n in range(3)]
    packets, events = wire(a, b)
    assert packets == [Requests(ids[0], [b"q0", b"q1", b"q2"])]
    assert only(events, BpmuxRequestReceived) == [BpmuxRequestReceived(i, b"q%d" % n)
                                             for n, i in enumerate(ids)]  # fmt: skip


def test_queued_items_leave_as_one_inner_items_packet() -> None:
    a, b = pair()
    stream = a.open_stream(b"", credit=1000)
    shuttle(a, b)
    for n in range(4):
        b.send_item(stream, b"item%d" % n)
    packets, events = wire(b, a)
    assert packets == [InnerItems(stream, [b"item%d" % n for n in range(4)])]
    assert events == [ItemReceived(stream, b"item%d" % n) for n in range(4)]


def test_batching_is_configurable_and_bounded() -> None:
    a, b = pair(batching=False)
    a.send_message(b"x")
    a.send_message(b"y")
    packets, _ = wire(a, b)
    assert packets == [Message(b"x"), Message(b"y")]
    c, d = pair(max_batch=2)
    for n in range(5):
        c.send_message(bytes([n]))
    packets, _ = wire(c, d)
    assert [type(p).__name__ for p in packets] == ["Messages", "Messages", "Message"]


def test_a_batch_is_never_costlier_than_its_packets() -> None:
    """Two 248-byte messages: Messages needs a 3-byte total_length, so 1 + 3 + 2 * 250 =
    504 > 2 * 251 = 502 bytes -- they leave as two Message packets."""
    a, b = pair()
    a.send_message(bytes(248))
    a.send_message(bytes(248))
    before = a.top_level_credit
    packets, _ = wire(a, b)
    assert packets == [Message(bytes(248)), Message(bytes(248))]
    assert a.top_level_credit == before


def test_batching_charges_the_batch_not_its_parts() -> None:
    a, b = pair(auto_credit=False)
    granted = a.top_level_credit
    for n in range(3):
        a.send_message(b"m")
    assert a.top_level_credit == granted - 3 * len(Message(b"m").to_bytes())
    packets, _ = wire(a, b)
    batch = Messages([b"m"] * 3)
    assert packets == [batch]
    assert a.top_level_credit == granted - len(batch.to_bytes()) == b.peer_top_level_credit


def test_requests_batch_only_for_consecutive_ids() -> None:
    a, b = pair()
    first = a.send_request(b"a")
    a.send_message(b"between")
    second = a.send_request(b"b")
    packets, _ = wire(a, b)
    assert packets == [Request(first, b"a"), Message(b"between"), Request(second, b"b")]


def test_greedy_sink_and_duplex() -> None:
    a, b = pair(greedy=True)
    sink = a.open_sink(b"s", items=[b"now", b"also now"])
    duplex = a.open_duplex(b"d", credit=10, items=[b"hi"])
    _, events_b = shuttle(a, b)
    assert events_b == [
        InnerOpened(sink, InnerKind.SINK, b"s", False, True, 0, greedy=True),
        ItemReceived(sink, b"now"), ItemReceived(sink, b"also now"),
        InnerOpened(duplex, InnerKind.DUPLEX, b"d", True, True, 10, greedy=True),
        ItemReceived(duplex, b"hi")]  # fmt: skip
    b.grant_inner(sink, 20)
    shuttle(a, b)
    a.send_item(sink, b"later")  # further items use inner credit
    _, events_b = shuttle(a, b)
    assert events_b == [ItemReceived(sink, b"later")]


def test_close_both_sides_then_done() -> None:
    a, b = pair()
    req_id = a.send_request(b"q")
    a.send_close()
    events_a, events_b = shuttle(a, b)
    assert only(events_b, PeerClosed) == [PeerClosed()]
    with pytest.raises(IllegalSend):
        a.send_message(b"after close")
    b.send_message(b"b may still send")  # a's Close binds only a
    b.send_close()
    events_a, _ = shuttle(a, b)
    assert only(events_a, BpmuxMessageReceived, PeerClosed) == [
        BpmuxMessageReceived(b"b may still send"), PeerClosed()]  # fmt: skip
    assert not a.done
    b.respond(req_id, b"answer after both closes")
    events_a, _ = shuttle(a, b)
    assert events_a == [ResponseReceived(req_id, b"answer after both closes"), ConnectionDone()]
    assert a.receive_data(b"") == [ConnectionEnded(True)]


def test_cancel_all_both_sides_agree() -> None:
    a, b = pair()
    requests = [a.send_request(b"q%d" % n) for n in range(2)]
    stream = a.open_stream(b"", credit=50)
    duplex = a.open_duplex(b"", credit=50)
    sink = a.open_sink(b"")
    peer_sink = b.open_sink(b"")
    shuttle(a, b)
    a.cancel_all()
    assert a.open_requests() == ([], [])
    _, events_b = shuttle(a, b)
    # Every flow a receives on: its stream, its duplex's stream half, b's sink to a.
    assert events_b == [RequestCancelled(requests[0]), RequestCancelled(requests[1]),
                        InnerCancelled(peer_sink), InnerCancelled(stream),
                        InnerCancelled(duplex)]  # fmt: skip
    # What a still sends on is untouched: its sink and its half of the duplex.
    assert a.open_inner_ids() == sorted([duplex, sink])
    b.grant_inner(sink, 30)
    b.grant_inner(duplex, 30)
    shuttle(a, b)
    a.send_item(sink, b"ok")
    a.send_item(duplex, b"ok")
    _, events_b = shuttle(a, b)
    assert events_b == [ItemReceived(sink, b"ok"), ItemReceived(duplex, b"ok")]
    for cancelled in (stream, duplex):
        with pytest.raises(IllegalSend):
            b.send_item(cancelled, b"cancelled")
    with pytest.raises(IllegalSend):
        a.send_item(peer_sink, b"never ours")
