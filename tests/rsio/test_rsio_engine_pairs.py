"""wirestream.runtime.rsio: two engines back to back, every interaction in both encodings and both
directions, and a property over demand.

"The protocol is fully bidirectional; either party can act in the --> direction."
(seeds 000/001, The Reactive Streams core protocol)
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.generated.rsio.v0.machines import ConnectionState, SubscriptionState
from wirestream.runtime.errors import DemandExceeded
from wirestream.runtime.rsio import (
    RsioConnectionClosed,
    DemandReceived,
    ElementReceived,
    GoodbyeReceived,
    RsioConfig,
    RsioConnection,
    SubscribeReceived,
    SubscriptionCancelled,
    SubscriptionCompleted,
    SubscriptionFailed,
    SubscriptionStarted,
)
from tests.support.engine_pair import shuttle

ENCODINGS = ["binary", "msgpack"]
DIRECTIONS = ["client_subscribes", "server_subscribes"]


def sides(encoding: str, direction: str,
          config: RsioConfig | None = None) -> tuple[RsioConnection, RsioConnection]:  # fmt: skip
    """(subscriber side, publisher side), connected."""
    client = RsioConnection("client", encoding=encoding, config=config)  # type: ignore[arg-type]
    server = RsioConnection("server", encoding=encoding, config=config)  # type: ignore[arg-type]
    client.initiate_connection()
    shuttle(client, server)
    return (client, server) if direction == "client_subscribes" else (server, client)


def exchange(sub: RsioConnection, pub: RsioConnection) -> tuple[list[object], list[object]]:
    """Shuttle; returns (subscriber side's events, publisher side's events)."""
    return shuttle(sub, pub)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_subscribe_request_onnext_complete(encoding: str, direction: str) -> None:
    """subscribe -> subscribed -> request -> onNext* -> onComplete."""
    sub, pub = sides(encoding, direction)
    sid = sub.subscribe("numbers", initial_demand=1)
    assert exchange(sub, pub)[1] == [SubscribeReceived(sid, "numbers", 1)]
    pub.accept(sid)
    pub.send_next(sid, b"one")
    assert exchange(sub, pub)[0] == [SubscriptionStarted(sid, 0), ElementReceived(sid, b"one")]
    sub.request(sid, 2)
    assert exchange(sub, pub)[1] == [DemandReceived(sid, 2)]
    assert pub.offer(sid, [b"two", b"three", b"four"]) == 2
    pub.complete(sid)
    assert exchange(sub, pub)[0] == [ElementReceived(sid, b"two"), ElementReceived(sid, b"three"),
                                     SubscriptionCompleted(sid)]  # fmt: skip
    assert sub.subscription_state(sid) is pub.publication_state(sid) is SubscriptionState.IDLE


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_onerror_path(encoding: str, direction: str) -> None:
    """'<-- onError(subscriber: Id, error: String)'"""
    sub, pub = sides(encoding, direction)
    sid = sub.subscribe("p", initial_demand=5)
    exchange(sub, pub)
    pub.accept(sid)
    pub.send_next(sid, b"x")
    pub.error(sid, "disk on fire")
    assert exchange(sub, pub)[0] == [SubscriptionStarted(sid, 0), ElementReceived(sid, b"x"),
                                     SubscriptionFailed(sid, "disk on fire")]  # fmt: skip


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_cancel_path(encoding: str, direction: str) -> None:
    """'--> cancel(subscriber: Id)'; elements in flight after it are dropped (RS §2.8)."""
    sub, pub = sides(encoding, direction)
    sid = sub.subscribe("p", initial_demand=5)
    exchange(sub, pub)
    pub.accept(sid)
    exchange(sub, pub)
    pub.send_next(sid, b"in flight")
    sub.cancel(sid)
    events_sub, events_pub = exchange(sub, pub)
    assert events_sub == []
    assert events_pub == [SubscriptionCancelled(sid, "cancelled by the subscriber")]
    assert pub.publication_state(sid) is SubscriptionState.IDLE
    assert sub.subscription_state(sid) is SubscriptionState.CANCELLED
    again = sub.subscribe("p2", initial_demand=1)  # the cancelled Id is reused
    assert again == sid
    exchange(sub, pub)
    pub.accept(sid)
    pub.send_next(sid, b"new")
    assert exchange(sub, pub)[0] == [SubscriptionStarted(sid, 0), ElementReceived(sid, b"new")]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_packed_path(encoding: str, direction: str) -> None:
    """'Packed messaging': fixed-size elements packed within demand."""
    sub, pub = sides(encoding, direction)
    sid = sub.subscribe("ints", initial_demand=10)
    exchange(sub, pub)
    pub.accept(sid, element_size=4)
    elements = [i.to_bytes(4, "big") for i in range(7)]
    assert pub.offer(sid, elements) == 7
    pub.complete(sid)
    events = exchange(sub, pub)[0]
    assert events == [SubscriptionStarted(sid, 4), *(ElementReceived(sid, e) for e in elements),
                      SubscriptionCompleted(sid)]  # fmt: skip


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_split_path(encoding: str, direction: str) -> None:
    """'Split messaging': large elements cross as parts and arrive whole."""
    sub, pub = sides(encoding, direction, RsioConfig(max_part_size=1000))
    sid = sub.subscribe("blobs", initial_demand=2)
    exchange(sub, pub)
    pub.accept(sid)
    big = bytes(range(256)) * 40
    pub.send_next(sid, big)
    pub.send_next(sid, b"small")
    events = exchange(sub, pub)[0]
    assert events == [SubscriptionStarted(sid, 0), ElementReceived(sid, big),
                      ElementReceived(sid, b"small")]  # fmt: skip


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_both_directions_at_once_then_goodbye(encoding: str) -> None:
    """Both peers subscribe to each other on one connection; goodbye ends both."""
    client, server = sides(encoding, "client_subscribes")
    up = client.subscribe("up", initial_demand=1)
    down = server.subscribe("down", initial_demand=1)
    shuttle(client, server)
    client.accept(down)
    server.accept(up)
    client.send_next(down, b"c->s")
    server.send_next(up, b"s->c")
    events_client, events_server = shuttle(client, server)
    assert ElementReceived(up, b"s->c") in events_client
    assert ElementReceived(down, b"c->s") in events_server
    client.close("bye")
    events_client, events_server = shuttle(client, server)
    assert events_server[0] == GoodbyeReceived("bye")
    assert isinstance(events_server[-1], RsioConnectionClosed)
    assert client.state is server.state is ConnectionState.CLOSED


# --- property: demand -------------------------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("request"), st.integers(min_value=1, max_value=5)),
        st.tuples(st.just("offer"), st.integers(min_value=0, max_value=6)),
        st.tuples(st.just("send_next"), st.just(1)),
        st.tuples(st.just("shuttle"), st.just(0)),
        st.tuples(st.just("deliver_to_publisher"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=120, deadline=None)
@given(ops=ops, encoding=st.sampled_from(ENCODINGS), element_size=st.sampled_from([0, 2]),
       initial=st.integers(min_value=0, max_value=3), split=st.booleans())  # fmt: skip
def test_publisher_never_sends_more_than_requested(ops: list[tuple[str, int]], encoding: str,
                                                   element_size: int, initial: int,
                                                   split: bool) -> None:  # fmt: skip
    """RS §1.1: 'The total number of onNext´s signalled by a Publisher to a Subscriber
    MUST be less than or equal to the total number of elements requested by that
    Subscriber´s Subscription at all times.' -- under any interleaving of request, offer,
    send_next and partial delivery, with packing and splitting: the publisher refuses
    (DemandExceeded) instead of exceeding, and the subscriber never sees a violation."""
    config = RsioConfig(max_part_size=1 if split else None)
    sub, pub = sides(encoding, "client_subscribes", config)
    sid = sub.subscribe("p", initial_demand=initial)
    shuttle(sub, pub)
    pub.accept(sid, element_size=element_size)
    requested, received, published_count = initial, 0, 0
    element = b"xy"
    for op, n in ops:
        if op == "request":
            sub.request(sid, n)
            requested += n
        elif op == "offer":
            taken = pub.offer(sid, [element] * n)
            assert taken <= n
            published_count += taken
        elif op == "send_next":
            before = pub.available_demand(sid)
            try:
                pub.send_next(sid, element)
                published_count += 1
            except DemandExceeded:
                assert before == 0
        elif op == "deliver_to_publisher":
            data = sub.data_to_send()
            if data:  # b"" would be EOF
                pub.receive_data(data)
        events, _ = shuttle(sub, pub) if op == "shuttle" else ([], [])
        received += sum(isinstance(e, ElementReceived) for e in events)
        assert not any(isinstance(e, SubscriptionFailed) for e in events)
        assert published_count <= requested
        assert received <= requested
    events, _ = shuttle(sub, pub)
    received += sum(isinstance(e, ElementReceived) for e in events)
    assert not any(isinstance(e, SubscriptionFailed) for e in events)
    assert received == published_count <= requested
    assert sub.outstanding_demand(sid) == requested - received
