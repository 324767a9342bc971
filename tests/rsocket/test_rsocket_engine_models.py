"""Two RSocket engines back to back: the four interaction models and METADATA_PUSH,
with their complete / error / cancel paths, fragmentation round trips and request-n
flow control, in both protocol versions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.runtime.errors import DemandExceeded, IllegalSend, InvalidGrant
from wirestream.runtime.flow import RSOCKET_MAX_N
from wirestream.runtime.rsocket import (
    ErrorReceived,
    InteractionModel,
    MetadataPushReceived,
    PayloadReceived,
    RequestNReceived,
    RequestReceived,
    StreamCanceled,
    StreamCompleted,
    UnknownStream,
)
from tests.support.engine_pair import shuttle
from tests.rsocket.test_rsocket_engine_helpers import VERSIONS, decode_all, of_type, pair, v

pytestmark = pytest.mark.parametrize("version", VERSIONS)


def test_request_response_round_trip(version: str) -> None:
    """Request Response: 'RQ -> RS: REQUEST_RESPONSE', 'RS -> RQ: PAYLOAD with COMPLETE'."""
    c, s, _, _ = pair(version)
    sid = c.request_response(b"ping", b"m")
    _, events_s = shuttle(c, s)
    assert events_s == [RequestReceived(sid, InteractionModel.REQUEST_RESPONSE, b"ping", b"m", 0)]
    s.send_next(sid, b"pong", b"rm", complete=True)
    events_c, _ = shuttle(c, s)
    assert events_c == [PayloadReceived(sid, b"pong", b"rm", True), StreamCompleted(sid)]
    assert not c.open_streams and not s.open_streams


def test_request_response_error_path(version: str) -> None:
    """Request Response: 'Upon receiving a COMPLETE or ERROR, the stream is terminated on
    the Requester.'"""
    c, s, _, _ = pair(version)
    sid = c.request_response(b"x")
    shuttle(c, s)
    s.send_error(sid, v(version).application_error, "boom")
    events_c, _ = shuttle(c, s)
    assert events_c == [ErrorReceived(sid, v(version).application_error, b"boom")]
    assert not c.open_streams and not s.open_streams


def test_request_response_no_response_after_cancel(version: str) -> None:
    """Request Response: 'Upon receiving a CANCEL, the stream is terminated on the
    Responder and the response SHOULD not be sent.'"""
    c, s, _, _ = pair(version)
    sid = c.request_response(b"x")
    shuttle(c, s)
    c.cancel(sid)
    _, events_s = shuttle(c, s)
    assert events_s == [StreamCanceled(sid)]
    with pytest.raises(UnknownStream):
        s.send_next(sid, b"late", complete=True)


def test_request_response_answer_must_complete(version: str) -> None:
    """'Upon sending a response, the stream is terminated on the Responder': the one
    response carries C."""
    c, s, _, _ = pair(version)
    sid = c.request_response(b"x")
    shuttle(c, s)
    with pytest.raises(IllegalSend):
        s.send_next(sid, b"not final")


def test_fire_and_forget_terminates_on_send_and_receive(version: str) -> None:
    """Request Fire-n-Forget: 'Upon reception, the stream is terminated by the Responder.
    Upon being sent, the stream is terminated by the Requester.'"""
    c, s, _, _ = pair(version)
    sid = c.fire_and_forget(b"f", b"m")
    assert sid not in c.open_streams
    _, events_s = shuttle(c, s)
    assert events_s == [RequestReceived(sid, InteractionModel.FIRE_AND_FORGET, b"f", b"m", 0)]
    assert not s.open_streams
    with pytest.raises(UnknownStream):
        s.send_next(sid, b"no answer", complete=True)


def test_request_stream_items_complete_and_credit(version: str) -> None:
    """Request Stream: 'RS -> RQ: PAYLOAD*', then COMPLETE; REQUEST_N adds credit."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"q", initial_n=2)
    _, events_s = shuttle(c, s)
    assert events_s == [RequestReceived(sid, InteractionModel.REQUEST_STREAM, b"q", None, 2)]
    s.send_next(sid, b"1")
    s.send_next(sid, b"2")
    with pytest.raises(DemandExceeded):
        s.send_next(sid, b"3")
    c.request(sid, 3)
    events_c, events_s = shuttle(c, s)
    assert events_s == [RequestNReceived(sid, 3)]
    assert [e.data for e in of_type(events_c, PayloadReceived)] == [b"1", b"2"]
    s.send_next(sid, b"3")
    s.send_complete(sid)
    events_c, _ = shuttle(c, s)
    assert events_c == [PayloadReceived(sid, b"3", None, False), StreamCompleted(sid)]
    assert not c.open_streams and not s.open_streams


def test_request_stream_cancel_and_error(version: str) -> None:
    """'Upon sending a CANCEL, the stream is terminated on the Requester.' / 'Upon sending
    a COMPLETE or ERROR, the stream is terminated on the Responder.'"""
    c, s, _, _ = pair(version)
    canceled = c.request_stream(b"a", initial_n=5)
    failed = c.request_stream(b"b", initial_n=5)
    shuttle(c, s)
    c.cancel(canceled)
    s.send_error(failed, v(version).rejected, b"no")
    events_c, events_s = shuttle(c, s)
    assert events_s == [StreamCanceled(canceled)]
    assert events_c == [ErrorReceived(failed, v(version).rejected, b"no")]
    assert not c.open_streams and not s.open_streams


def test_channel_both_directions(version: str) -> None:
    """Request Channel: both sides send items and REQUEST_N; each side completes."""
    c, s, _, _ = pair(version)
    sid = c.request_channel(b"c0", initial_n=2)
    _, events_s = shuttle(c, s)
    assert events_s == [RequestReceived(sid, InteractionModel.REQUEST_CHANNEL, b"c0", None, 2)]
    s.request(
        sid, 2
    )  # "a Responder MUST respond to an initial REQUEST_CHANNEL frame with a REQUEST_N"
    s.send_next(sid, b"s1")
    events_c, _ = shuttle(c, s)
    assert events_c == [RequestNReceived(sid, 2), PayloadReceived(sid, b"s1", None, False)]
    c.send_next(sid, b"c1")
    c.send_next(sid, b"c2", complete=True)
    _, events_s = shuttle(c, s)
    assert events_s == [
        PayloadReceived(sid, b"c1", None, False),
        PayloadReceived(sid, b"c2", None, True),
        StreamCompleted(sid),
    ]
    s.send_next(sid, b"s2", complete=True)
    events_c, _ = shuttle(c, s)
    assert events_c == [PayloadReceived(sid, b"s2", None, True), StreamCompleted(sid)]
    assert not c.open_streams and not s.open_streams


def test_channel_cancel_and_error(version: str) -> None:
    """Request Channel: 'Upon receiving a CANCEL, the stream is terminated on the
    Responder'; an ERROR terminates it on both sides."""
    c, s, _, _ = pair(version)
    canceled = c.request_channel(b"a")
    failed = c.request_channel(b"b")
    shuttle(c, s)
    c.cancel(canceled)
    s.send_error(failed, v(version).application_error, b"bad")
    events_c, events_s = shuttle(c, s)
    assert events_s == [StreamCanceled(canceled)]
    assert events_c == [ErrorReceived(failed, v(version).application_error, b"bad")]
    assert not c.open_streams and not s.open_streams


def test_metadata_push_round_trip(version: str) -> None:
    """METADATA_PUSH: 'Metadata MUST be scoped to the connection by setting Stream ID to 0.'"""
    c, s, _, _ = pair(version)
    c.metadata_push(b"hello")
    s.metadata_push(b"back")
    events_c, events_s = shuttle(c, s)
    assert events_s == [MetadataPushReceived(b"hello")]
    assert events_c == [MetadataPushReceived(b"back")]


def test_server_can_be_requester(version: str) -> None:
    """'A connection has at most 2 Requesters. One in each direction.': even server ids."""
    c, s, _, _ = pair(version)
    sid = s.request_response(b"from server")
    assert sid % 2 == 0
    events_c, _ = shuttle(c, s)
    assert of_type(events_c, RequestReceived)[0].stream_id == sid
    c.send_next(sid, b"ok", complete=True)
    _, events_s = shuttle(c, s)
    assert events_s == [PayloadReceived(sid, b"ok", None, True), StreamCompleted(sid)]


def test_request_n_credits_accumulate(version: str) -> None:
    """Flow Control: 'Credits are cumulative ... sending request(3) and request(2)
    accumulates to a value of 5'."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    c.request(sid, 3)
    c.request(sid, 2)
    shuttle(c, s)
    for i in range(6):
        s.send_next(sid, b"%d" % i)
    with pytest.raises(DemandExceeded):
        s.send_next(sid, b"7")


def test_request_n_must_be_positive_and_has_no_unbounded_value(version: str) -> None:
    """REQUEST_N: 'Only positive values are allowed'; '...this explicitly does NOT follow
    rule number 17': demand saturates at 2^31-1 and still counts down."""
    c, s, _, _ = pair(version)
    with pytest.raises(InvalidGrant):
        c.request_stream(b"", initial_n=0)
    sid = c.request_stream(b"", initial_n=RSOCKET_MAX_N)
    shuttle(c, s)
    with pytest.raises(InvalidGrant):
        c.request(sid, 0)
    c.request(sid, 5)  # saturates
    shuttle(c, s)
    window = s.open_streams[sid].outbound
    assert window is not None and window.available == RSOCKET_MAX_N
    s.send_next(sid, b"x")
    assert window.available == RSOCKET_MAX_N - 1


# --- fragmentation ------------------------------------------------------------------

MTU = 64


@settings(max_examples=60, deadline=None)
@given(
    metadata=st.one_of(st.none(), st.binary(max_size=300)),
    data=st.binary(max_size=600),
    mtu=st.integers(min_value=64, max_value=400),
    model=st.sampled_from(["response", "stream", "channel", "fnf"]),
)
def test_fragmented_messages_reassemble_exactly(version: str, metadata: bytes | None,
                                                data: bytes, mtu: int, model: str) -> None:  # fmt: skip
    """Fragmentation And Reassembly: any payload size versus any MTU reassembles to the
    same message, and no frame on the wire exceeds the MTU."""
    c, s, _, _ = pair(version, client={"mtu": mtu}, server={"mtu": mtu})
    opener = {
        "response": c.request_response,
        "stream": c.request_stream,
        "channel": c.request_channel,
        "fnf": c.fire_and_forget,
    }[model]
    sid = opener(data, metadata)
    out = c.data_to_send()
    assert all(len(f.to_bytes()) <= mtu for f in decode_all(version, out))
    events_s = s.receive_data(out)
    (request,) = of_type(events_s, RequestReceived)
    assert (request.data, request.metadata) == (data, metadata)
    if model == "fnf":
        return
    s.send_next(sid, data, metadata, complete=True)
    out = s.data_to_send()
    assert all(len(f.to_bytes()) <= mtu for f in decode_all(version, out))
    (item,) = of_type(c.receive_data(out), PayloadReceived)
    assert (item.data, item.metadata, item.complete) == (data, metadata, True)


# --- flow control property ------------------------------------------------------------

actions = st.lists(
    st.tuples(st.sampled_from(["grant", "send", "send_many"]), st.integers(1, 5)), max_size=40
)


@settings(max_examples=60, deadline=None)
@given(initial=st.integers(1, 4), steps=actions)
def test_never_more_in_flight_than_granted(version: str, initial: int,
                                           steps: list[tuple[str, int]]) -> None:  # fmt: skip
    """'The Requester and the Responder MUST respect the reactive-streams semantics':
    under any interleaving of grants and sends, the responder never gets more items out
    than the requester granted, and the requester receives exactly what was sent."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=initial)
    shuttle(c, s)
    granted, sent, received = initial, 0, 0
    for action, amount in steps:
        if action == "grant":
            c.request(sid, amount)
            granted += amount
        else:
            for _ in range(amount if action == "send_many" else 1):
                try:
                    s.send_next(sid, b"i")
                    sent += 1
                except DemandExceeded:
                    break
        events_c, _ = shuttle(c, s)
        received += len(of_type(events_c, PayloadReceived))
        assert sent <= granted
        assert received == sent
    assert sid in c.open_streams  # no stream error ever happened
