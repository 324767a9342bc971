"""wirestream.runtime.rsio: packed (fixed-size) and split elements.

Seeds 000/001 "Packed messaging" and "Split messaging"; the `split_element` machine of
idl/rsio/v0.yaml.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import ConnectionState, SubscriptionState
from wirestream.runtime.errors import (
    DecodeError,
    DemandExceeded,
    IllegalSend,
    PeerExceededDemand,
    UnexpectedFrame,
)
from wirestream.runtime.rsio import (
    ElementReceived,
    IncompleteSplitElement,
    PeerElementSizeError,
    ReassemblyLimitExceeded,
    RsioConfig,
    RsioConnection,
    SubscriptionFailed,
    SubscriptionStarted,
)
from tests.support.engine_pair import shuttle

ENCODINGS = ["binary", "msgpack"]


def connected(encoding: str = "binary", **config: object) -> tuple[RsioConnection, RsioConnection]:
    settings_ = RsioConfig(**config)  # type: ignore[arg-type]
    client = RsioConnection("client", encoding=encoding, config=settings_)  # type: ignore[arg-type]
    server = RsioConnection("server", encoding=encoding, config=settings_)  # type: ignore[arg-type]
    client.initiate_connection()
    shuttle(client, server)
    return client, server


def frames(
    data: bytes, ctx: rsio.Context | None = None, encoding: str = "binary"
) -> list[rsio.Frame]:
    if encoding == "msgpack":
        return rsio.MsgpackStreamDecoder(ctx=ctx).feed(data)
    return rsio.StreamDecoder(ctx=ctx).feed(data)


def wire(*items: rsio.Frame, ctx: rsio.Context | None = None) -> bytes:
    return b"".join(rsio.encode(frame, ctx) for frame in items)


def stream(demand: int, element_size: int = 0, encoding: str = "binary",
           **config: object) -> tuple[RsioConnection, RsioConnection, int]:  # fmt: skip
    """Client subscribed to server, accepted with ``element_size``; bytes drained."""
    client, server = connected(encoding, **config)
    sid = client.subscribe("p", initial_demand=demand)
    shuttle(client, server)
    server.accept(sid, element_size=element_size)
    shuttle(client, server)
    return client, server, sid


def subscriber(demand: int, element_size: int = 0, **config: object) -> tuple[RsioConnection, int]:
    """A client whose subscription the raw peer accepted."""
    client, _ = connected("binary", **config)
    sid = client.subscribe("p", initial_demand=demand)
    client.data_to_send()
    client.receive_data(wire(rsio.Subscribed(sid, element_size)))
    return client, sid


# --- packed ---------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_publisher_packs_fixed_size_elements_when_demand_allows(encoding: str) -> None:
    """'the publisher can optionally declare that all stream elements will have a fixed
    size ... The publisher can then send not just onNext messages but also onNextPacked
    messages' / 'It also can't be done if the client doesn't provide enough demand.'"""
    client, server, sid = stream(3, element_size=2, encoding=encoding)
    assert server.offer(sid, [b"aa", b"bb", b"cc", b"dd"]) == 3  # demand is 3
    data = server.data_to_send()
    sent = frames(data, rsio.Context({sid: 2}), encoding)
    assert sent == [rsio.OnNextPacked(sid, [b"aa", b"bb", b"cc"])]
    events = client.receive_data(data)
    assert events == [ElementReceived(sid, e) for e in (b"aa", b"bb", b"cc")]


def test_packing_can_be_turned_off_and_batches_are_bounded() -> None:
    """Packing is optional ('can optionally declare'); batches are at most max_pack."""
    _, server, sid = stream(5, element_size=1, pack=False)
    server.offer(sid, [b"a", b"b"])
    assert [type(f) for f in frames(server.data_to_send(), rsio.Context({sid: 1}))] == [
        rsio.OnNext,
        rsio.OnNext,
    ]
    _, server, sid = stream(5, element_size=1, max_pack=2)
    server.offer(sid, [b"a", b"b", b"c"])
    sent = frames(server.data_to_send(), rsio.Context({sid: 1}))
    assert sent == [rsio.OnNextPacked(sid, [b"a", b"b"]), rsio.OnNext(sid, b"c")]


def test_onnextpacked_refused_when_element_size_zero() -> None:
    """onNextPacked needs 'subscribed.elementSize ... greater than zero' (send side)."""
    _, server, sid = stream(5, element_size=0)
    with pytest.raises(IllegalSend, match="fixed-size"):
        server.send_packed(sid, [b"a", b"b"])
    assert server.offer(sid, [b"a", b"b"]) == 2  # variable size: plain onNext
    assert [type(f) for f in frames(server.data_to_send())] == [rsio.OnNext, rsio.OnNext]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_onnextpacked_on_variable_stream_is_protocol_error(encoding: str) -> None:
    """Receive side of the same rule: onNextPacked on a variable-size stream is refused by
    the codec (it cannot even be decoded) or by the `subscription` machine (state
    `active`, not `active_fixed`) and ends the connection with goodbye."""
    for packed in ([b"a"], []):
        client, server, sid = stream(5, element_size=0, encoding=encoding)
        frame = rsio.OnNextPacked(sid, packed)
        data = (
            rsio.encode_msgpack(frame)
            if encoding == "msgpack"
            else rsio.encode(frame, rsio.Context({sid: 1}))
        )
        with pytest.raises((DecodeError, UnexpectedFrame)):
            client.receive_data(data)
        assert client.closed
        assert [type(f) for f in frames(client.data_to_send(), encoding=encoding)] == [rsio.Goodbye]


def test_onnextpacked_consumes_count_demand() -> None:
    """'onNextPacked(subscriber: Id, count: varint, messages: count * elementSize bytes)':
    count elements, so count onNext signals against demand (RS §1.1)."""
    client, sid = subscriber(3, element_size=1)
    client.receive_data(wire(rsio.OnNextPacked(sid, [b"a", b"b"]), ctx=rsio.Context({sid: 1})))
    assert client.outstanding_demand(sid) == 1
    _, server, sid = stream(2, element_size=1)
    with pytest.raises(DemandExceeded):
        server.send_packed(sid, [b"a", b"b", b"c"])
    assert server.data_to_send() == b""


def test_onnextpacked_beyond_demand_is_violation() -> None:
    """RS §1.1 for a packed message: more elements than requested -> cancel + onError."""
    client, sid = subscriber(2, element_size=1)
    events = client.receive_data(
        wire(rsio.OnNextPacked(sid, [b"a", b"b", b"c"]), ctx=rsio.Context({sid: 1}))
    )
    assert len(events) == 1 and isinstance(events[0], SubscriptionFailed)
    assert isinstance(events[0].cause, PeerExceededDemand)
    assert frames(client.data_to_send()) == [rsio.Cancel(sid)]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_subscribed_and_fixed_size_elements_in_one_chunk_decode(encoding: str) -> None:
    """'In fixed-size mode, the onNext.element field is not length-prefixed': the size
    from subscribed applies to the very next message, even in the same read."""
    client, server = connected(encoding)
    sid = client.subscribe("p", initial_demand=4)
    shuttle(client, server)
    server.accept(sid, element_size=3)
    server.send_next(sid, b"abc")
    server.send_packed(sid, [b"def", b"ghi"])
    server.complete(sid)
    events = client.receive_data(server.data_to_send())
    assert events[0] == SubscriptionStarted(sid, 3)
    assert events[1:4] == [ElementReceived(sid, e) for e in (b"abc", b"def", b"ghi")]


# --- split ------------------------------------------------------------------------------


def test_split_sends_parts_then_one_last_part() -> None:
    """'When an element is split, the publisher will send one or more onNextPart
    messages, followed by a single onNextLastPart'"""
    _, server, sid = stream(2, max_part_size=4)
    server.send_next(sid, b"0123456789")
    server.send_next(sid, b"0123")  # not longer than a part: plain onNext
    assert frames(server.data_to_send()) == [
        rsio.OnNextPart(sid, 0, b"0123"),
        rsio.OnNextPart(sid, 0, b"4567"),
        rsio.OnNextLastPart(sid, 0, b"89"),
        rsio.OnNext(sid, b"0123"),
    ]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_subscriber_reassembles_split_element(encoding: str) -> None:
    """'Publishers MAY split elements; subscribers MUST support this.' / 'The subscriber's
    driver will typically join the parts transparently and deliver a single message to
    the application.'"""
    client, server, sid = stream(1, encoding=encoding, max_part_size=3)
    element = bytes(range(20))
    server.send_next(sid, element)
    events, _ = shuttle(client, server)
    assert events == [ElementReceived(sid, element)]


def test_parts_joined_in_arrival_order_and_interleaved_elements() -> None:
    """'element is an Id assigned by the Publisher; messages with the same element value,
    in the same stream, will be joined by the Subscriber. The order of the parts is that
    in which they were sent and received' (several elements may be in progress at once;
    each is delivered when its last part arrives -- decision)."""
    client, sid = subscriber(3)
    events = client.receive_data(wire(
        rsio.OnNextPart(sid, 1, b"a1"),
        rsio.OnNextPart(sid, 2, b"b1"),
        rsio.OnNext(sid, b"whole"),
        rsio.OnNextPart(sid, 1, b"a2"),
        rsio.OnNextLastPart(sid, 2, b"b2"),
        rsio.OnNextLastPart(sid, 1, b"a3"),
    ))  # fmt: skip
    assert events == [ElementReceived(sid, b"whole"), ElementReceived(sid, b"b1b2"),
                      ElementReceived(sid, b"a1a2a3")]  # fmt: skip


def test_split_element_costs_one_demand() -> None:
    """RS §1.1 counts elements: a split element is one onNext, charged when it starts."""
    client, sid = subscriber(1)
    client.receive_data(wire(rsio.OnNextPart(sid, 0, b"x")))
    assert client.outstanding_demand(sid) == 0
    events = client.receive_data(
        wire(rsio.OnNextPart(sid, 0, b"y"), rsio.OnNextLastPart(sid, 0, b"z"))
    )
    assert events == [ElementReceived(sid, b"xyz")]
    events = client.receive_data(wire(rsio.OnNextPart(sid, 7, b"x")))  # no demand left
    assert isinstance(events[0], SubscriptionFailed)
    assert isinstance(events[0].cause, PeerExceededDemand)


def test_lone_last_part_accepted_as_whole_element() -> None:
    """'one or more onNextPart messages, followed by a single onNextLastPart': we never
    send a lone last part, but accept one as a one-part element (decision: lenient)."""
    client, sid = subscriber(1)
    assert client.receive_data(wire(rsio.OnNextLastPart(sid, 0, b"all"))) == [
        ElementReceived(sid, b"all")
    ]


def test_split_fixed_size_total_must_match() -> None:
    """'indicates the fixed size of the elements that will be published in this stream':
    a split element of a fixed-size stream joins to exactly elementSize bytes."""
    client, sid = subscriber(2, element_size=4)
    ok = client.receive_data(
        wire(rsio.OnNextPart(sid, 0, b"ab"), rsio.OnNextLastPart(sid, 0, b"cd"))
    )
    assert ok == [ElementReceived(sid, b"abcd")]
    bad = client.receive_data(
        wire(rsio.OnNextPart(sid, 0, b"ab"), rsio.OnNextLastPart(sid, 0, b"c"))
    )
    assert isinstance(bad[0], SubscriptionFailed) and isinstance(bad[0].cause, PeerElementSizeError)
    assert frames(client.data_to_send()) == [rsio.Cancel(sid)]


def test_oncomplete_with_partial_element_fails_subscription() -> None:
    """'followed by a single onNextLastPart': onComplete before it leaves an element
    unfinished; the subscription ends in error instead of completing."""
    client, sid = subscriber(1)
    events = client.receive_data(wire(rsio.OnNextPart(sid, 0, b"x"), rsio.OnComplete(sid)))
    assert isinstance(events[0], SubscriptionFailed)
    assert isinstance(events[0].cause, IncompleteSplitElement)
    assert client.subscription_state(sid) is SubscriptionState.IDLE


def test_cancel_drops_partial_elements() -> None:
    """RS §2.8 after cancel: parts still in flight are dropped, and so is what we had."""
    client, sid = subscriber(2)
    client.receive_data(wire(rsio.OnNextPart(sid, 0, b"x" * 100)))
    assert client.reassembly_bytes == 100
    client.cancel(sid)
    assert client.reassembly_bytes == 0
    assert client.receive_data(wire(rsio.OnNextLastPart(sid, 0, b"y"))) == []


def test_reassembly_cap() -> None:
    """Memory is bounded: a split element over max_element_size (or all unfinished ones
    over max_reassembly_bytes) fails its subscription with ReassemblyLimitExceeded and a
    cancel; the connection goes on."""
    client, sid = subscriber(5, max_element_size=8)
    events = client.receive_data(
        wire(rsio.OnNextPart(sid, 0, b"12345"), rsio.OnNextPart(sid, 0, b"6789"))
    )
    assert len(events) == 1 and isinstance(events[0], SubscriptionFailed)
    assert isinstance(events[0].cause, ReassemblyLimitExceeded)
    assert frames(client.data_to_send()) == [rsio.Cancel(sid)]
    assert client.state is ConnectionState.OPEN
    client, sid = subscriber(5, max_element_size=8, max_reassembly_bytes=10)
    events = client.receive_data(
        wire(rsio.OnNextPart(sid, 0, b"123456"), rsio.OnNextPart(sid, 1, b"123456"))
    )
    assert isinstance(events[0], SubscriptionFailed)
    assert isinstance(events[0].cause, ReassemblyLimitExceeded)


@settings(max_examples=60, deadline=None)
@given(
    element=st.binary(min_size=0, max_size=300),
    part_size=st.integers(min_value=1, max_value=64),
    encoding=st.sampled_from(ENCODINGS),
    chunk=st.integers(min_value=1, max_value=17),
)
def test_split_reassembly_round_trips_any_sizes(element: bytes, part_size: int, encoding: str,
                                                 chunk: int) -> None:  # fmt: skip
    """Any element, any part size, delivered in reads of any size: exactly one element,
    byte for byte ('The subscriber's driver will typically join the parts transparently
    and deliver a single message to the application.')."""
    client, server, sid = stream(1, encoding=encoding, max_part_size=part_size)
    server.send_next(sid, element)
    data = server.data_to_send()
    events = []
    for start in range(0, len(data), chunk):
        events += client.receive_data(data[start : start + chunk])
    assert events == [ElementReceived(sid, element)]
    assert client.reassembly_bytes == 0
