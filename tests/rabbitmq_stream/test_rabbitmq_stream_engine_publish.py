"""RabbitMQ stream client engine: streams, publishers, publishing and confirms."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.generated.rabbitmq_stream.v1 import (
    DeclarePublisherRequest,
    DeletePublisherResponse,
    MetadataUpdate,
    Publish,
    PublishConfirm,
    PublishedMessage,
    PublishError,
    PublishingError,
    ResponseCode,
    StoreOffset,
    SimpleEntry,
    SubEntryBatch,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import PublisherState, SubscriptionState
from wirestream.runtime.errors import DemandExceeded, IllegalSend
from wirestream.runtime.rabbitmq_stream import (
    ChunkDelivered,
    ClientConnection,
    MessageReceived,
    MessageTooLarge,
    MetadataChanged,
    MetadataReceived,
    PreconditionFailed,
    PublishAbandoned,
    PublishConfirmed,
    PublisherClosed,
    PublisherDeclared,
    PublisherDeleted,
    PublisherSequence,
    PublishErrored,
    PublishingIdNotIncreasing,
    RequestFailed,
    StreamAlreadyExists,
    StreamCreated,
    StreamDeleted,
    StreamDoesNotExist,
    SubscriptionClosed,
)
from wirestream.runtime.rabbitmq_stream.chunk import decode_entries
from wirestream.runtime.rabbitmq_stream.publish_frames import (
    encode_publish,
    encode_publish_v2,
    entry_fits,
)
from tests.support.engine_pair import shuttle
from tests.support.rabbitmq_stream_test_broker import TestBroker, open_pair, with_stream


def _declared(publisher_id: int = 0, **options: Any) -> tuple[ClientConnection, TestBroker]:
    client, broker = with_stream()
    client.declare_publisher(publisher_id, "s", **options)
    events, _ = shuttle(client, broker)
    assert isinstance(events[0], PublisherDeclared)
    return client, broker


# --- streams -------------------------------------------------------------------------------


def test_create_stream_with_arguments_then_delete() -> None:
    """Create: 'Create => Key Version CorrelationId Stream Arguments'; Delete: 'Delete =>
    Key Version CorrelationId Stream'."""
    client, broker = open_pair()
    created = client.create_stream("s", {"max-length-bytes": "1000000", "max-age": "1h"})
    events, _ = shuttle(client, broker)
    assert events == [StreamCreated(created, "s")]
    request = broker.frames[-1]
    assert {p.key: p.value for p in request.arguments} == {"max-length-bytes": "1000000",
                                                           "max-age": "1h"}  # fmt: skip
    deleted = client.delete_stream("s")
    events, _ = shuttle(client, broker)
    assert events[0] == StreamDeleted(deleted, "s")


def test_create_existing_stream_gets_typed_error() -> None:
    """Response codes: 'Stream already exists 0x05' -> ``StreamAlreadyExists``."""
    client, broker = with_stream()
    cid = client.create_stream("s")
    (event,) = shuttle(client, broker)[0]
    assert isinstance(event, RequestFailed) and event.correlation_id == cid
    assert isinstance(event.error, StreamAlreadyExists) and event.command == "CreateRequest"


def test_delete_unknown_stream_gets_typed_error() -> None:
    """Response codes: 'Stream does not exist 0x02' -> ``StreamDoesNotExist``."""
    client, broker = open_pair()
    client.delete_stream("nope")
    (event,) = shuttle(client, broker)[0]
    assert isinstance(event, RequestFailed) and isinstance(event.error, StreamDoesNotExist)


def test_metadata_per_stream_codes() -> None:
    """Metadata: 'MetadataResponse => Key Version CorrelationId [Broker]
    [StreamMetadata]', a ResponseCode per stream and none at the top."""
    client, broker = with_stream()
    cid = client.metadata(["s", "nope"])
    (event,) = shuttle(client, broker)[0]
    assert isinstance(event, MetadataReceived) and event.correlation_id == cid
    assert [m.response_code for m in event.streams] == [ResponseCode.OK,
                                                        ResponseCode.STREAM_DOES_NOT_EXIST]  # fmt: skip
    assert event.brokers[0].port == 5552


# --- publishers ----------------------------------------------------------------------------


def test_declare_publish_confirm_roundtrip() -> None:
    """PublishConfirm: 'PublishingIds => [uint64] // to correlate with the messages
    sent': each publishing id is resolved by its confirm."""
    client, broker = _declared(publisher_id=3)
    ids = client.publish(3, [b"a", b"b", b"c"])
    assert ids == [1, 2, 3] and client.unconfirmed(3) == 3
    events, _ = shuttle(client, broker)
    assert events == [PublishConfirmed(3, (1, 2, 3))]
    assert client.unconfirmed(3) == 0
    stored = broker.streams["s"].chunks[0]
    assert [e.data for e in decode_entries(stored.data)] == [b"a", b"b", b"c"]


def test_publisher_reference_sent_and_over_256_refused() -> None:
    """DeclarePublisher: 'PublisherReference => string // max 256 characters'; an empty
    string means no reference (3.10.8 reads <<"">> as undefined)."""
    client, broker = with_stream()
    client.declare_publisher(0, "s", "app-1")
    client.declare_publisher(1, "s")
    shuttle(client, broker)
    declares = [f for f in broker.frames if isinstance(f, DeclarePublisherRequest)]
    assert [d.publisher_reference for d in declares] == ["app-1", ""]
    with pytest.raises(ValueError, match="256"):
        client.declare_publisher(2, "s", "x" * 257)


def test_publish_before_declare_refused_locally() -> None:
    """3.10.8: Publish for an undeclared publisher id gets PublishError 18 (publisher does
    not exist) for every message: the client's table refuses it before it is sent."""
    client, broker = with_stream()
    with pytest.raises(IllegalSend, match="not declared"):
        client.publish(0, [b"x"])
    client.declare_publisher(0, "s")
    with pytest.raises(IllegalSend, match="not declared"):
        client.publish(0, [b"x"])  # declaring: wait for DeclarePublisherResponse OK
    assert client.publisher_state(0) is PublisherState.DECLARING


def test_declare_duplicate_publisher_id_refused_locally() -> None:
    """3.10.8: DeclarePublisher with an id in use gets 17 (precondition failed)."""
    client, broker = _declared()
    with pytest.raises(IllegalSend, match="in use"):
        client.declare_publisher(0, "s")


def test_declare_refused_frees_the_id() -> None:
    """3.10.8 DeclarePublisher codes: 2 stream does not exist, ... -> the id is free."""
    client, broker = open_pair()
    cid = client.declare_publisher(0, "nope")
    (event,) = shuttle(client, broker)[0]
    assert event == RequestFailed(cid, "DeclarePublisherRequest", event.error)
    assert isinstance(event.error, StreamDoesNotExist)
    assert client.publisher_state(0) is PublisherState.FREE
    broker.add_stream("nope")
    client.declare_publisher(0, "nope")
    assert isinstance(shuttle(client, broker)[0][0], PublisherDeclared)


def test_publish_beyond_window_refused_locally() -> None:
    """3.10.8 stops reading a connection at 50,000 unconfirmed messages with no frame
    to say so: the client bounds its unconfirmed messages per publisher (a
    ``wirestream.runtime.flow.Window``); a publish beyond it is refused whole, nothing is sent."""
    client, broker = _declared(max_in_flight=3)
    broker.confirm = False
    client.publish(0, [b"a", b"b"])
    with pytest.raises(DemandExceeded):
        client.publish(0, [b"c", b"d"])
    assert client.unconfirmed(0) == 2 and client.publish_capacity(0) == 1
    client.publish(0, [b"c"])
    shuttle(client, broker)
    assert len(broker.streams["s"].chunks) == 2  # the refused batch never left


def test_confirm_reopens_window() -> None:
    """Each confirmed (or errored) publishing id gives its place in the window back."""
    client, broker = _declared(max_in_flight=2)
    client.publish(0, [b"a", b"b"])
    assert client.publish_capacity(0) == 0
    shuttle(client, broker)
    assert client.publish_capacity(0) == 2
    client.publish(0, [b"c", b"d"])


def test_publish_error_resolves_id_with_typed_error() -> None:
    """PublishError: 'PublishingError => PublishingId Code', 'Code => uint16 // code to
    identify the problem': the id is resolved, with a typed error."""
    client, broker = _declared()
    broker.refuse_publishing_ids = {2: ResponseCode.PRECONDITION_FAILED}
    client.publish(0, [b"a", b"b", b"c"])
    events, _ = shuttle(client, broker)
    assert events[0] == PublishConfirmed(0, (1, 3))
    assert isinstance(events[1], PublishErrored) and events[1].publishing_id == 2
    assert isinstance(events[1].error, PreconditionFailed)
    assert client.unconfirmed(0) == 0 and client.publish_capacity(0) == 10_000


def test_publishing_id_resolved_once() -> None:
    """Each publishing id gets at most one outcome: a second confirm for it is
    dropped (counted in ``ignored_outcomes``)."""
    client, broker = _declared()
    client.publish(0, [b"a"])
    shuttle(client, broker)
    again = frame_bytes(PublishConfirm(0, [1])) + frame_bytes(
        PublishError(0, [PublishingError(1, ResponseCode.INTERNAL_ERROR)])
    )
    assert client.receive_data(again) == []
    assert client.ignored_outcomes == 2 and client.publish_capacity(0) == 10_000


def test_confirm_for_undeclared_publisher_ignored() -> None:
    """Late outcomes for a publisher that is gone are ignored (the publisher table's
    free rows: 3.10.8 may still have some in flight)."""
    client, _ = open_pair()
    assert client.receive_data(frame_bytes(PublishConfirm(9, [1, 2]))) == []
    assert client.ignored_frames == 1 and client.ignored_outcomes == 2


def test_publishing_ids_strictly_increase() -> None:
    """Deduplication needs strictly increasing publishing ids per publisher: explicit
    ids that do not increase are refused locally; automatic ones continue."""
    client, broker = _declared()
    assert client.publish(0, [b"a", b"b"], publishing_ids=[10, 20]) == [10, 20]
    with pytest.raises(PublishingIdNotIncreasing):
        client.publish(0, [b"c"], publishing_ids=[20])
    with pytest.raises(PublishingIdNotIncreasing):
        client.publish(0, [b"c", b"d"], publishing_ids=[30, 25])
    assert client.publish(0, [b"c"]) == [21]


def test_client_never_sends_frame_over_frame_max() -> None:
    """Tune: 'FrameMax => uint32 // in bytes'; 'Frame too large 0x0e': a batch of
    messages is split into Publish frames that each fit the negotiated frame_max."""
    client, broker = with_stream(broker=TestBroker(frame_max=200))
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    client.publish(0, [bytes(50)] * 10)
    data = client.data_to_send()
    sizes, pos = [], 0
    while pos < len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        sizes.append(size + 4)
        pos += 4 + size
    assert len(sizes) > 1 and max(sizes) <= 200
    broker.receive_data(data)
    published = [f for f in broker.frames if isinstance(f, Publish)]
    assert sum(len(f.published_messages) for f in published) == 10


def test_message_over_frame_max_refused() -> None:
    """A message that does not fit one frame of frame_max is refused locally."""
    client, broker = with_stream(broker=TestBroker(frame_max=100))
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    with pytest.raises(MessageTooLarge):
        client.publish(0, [bytes(100)])
    assert client.unconfirmed(0) == 0 and client.publish_capacity(0) == 10_000


def test_publish_batch_is_one_sub_entry_with_one_publishing_id() -> None:
    """A sub-entry batch (3.10.8 reader: <<PublishingId:64, 1:1, CompressionType:3, ...>>)
    carries many messages under one publishing id, confirmed once."""
    client, broker = _declared()
    pid = client.publish_batch(0, [b"x", b"y", b"z"])
    events, _ = shuttle(client, broker)
    assert events == [PublishConfirmed(0, (pid,))]
    (entry,) = decode_entries(broker.streams["s"].chunks[0].data)
    assert isinstance(entry, SubEntryBatch) and entry.num_records == 3


def test_delete_publisher_abandons_unconfirmed() -> None:
    """DeletePublisher: 'DeletePublisherResponse => Key Version CorrelationId
    ResponseCode'; 3.10.8 drops the confirms of a deleted publisher, so ids still
    unconfirmed are abandoned."""
    client, broker = _declared()
    broker.confirm = False
    client.publish(0, [b"a", b"b"])
    cid = client.delete_publisher(0)
    events, _ = shuttle(client, broker)
    assert events == [PublishAbandoned(0, (1, 2), "publisher deleted"), PublisherDeleted(cid, 0)]
    assert client.publisher_state(0) is PublisherState.FREE
    with pytest.raises(IllegalSend):
        client.publish(0, [b"c"])


def test_delete_unknown_publisher_refused_locally() -> None:
    """3.10.8 answers 18 (publisher does not exist) to deleting an unknown id; the
    client's table refuses to send it."""
    client, _ = open_pair()
    with pytest.raises(IllegalSend, match="not declared"):
        client.delete_publisher(4)


def test_delete_publisher_response_18_still_frees_the_id() -> None:
    """3.10.8: DeletePublisher answers OK, or 18 when the publisher is already gone;
    both leave the id free."""
    client, broker = _declared()
    cid = client.delete_publisher(0)
    client.data_to_send()
    events = client.receive_data(
        frame_bytes(DeletePublisherResponse(cid, ResponseCode.PUBLISHER_DOES_NOT_EXIST))
    )
    assert events == [PublisherDeleted(cid, 0)]


def test_query_publisher_sequence_zero_when_none() -> None:
    """QueryPublisherSequence: 'Sequence => uint64'; 3.10.8 answers OK with 0 when the
    reference has nothing stored. The next id to use is sequence + 1."""
    client, broker = with_stream()
    client.query_publisher_sequence("app", "s")
    (event,) = shuttle(client, broker)[0]
    assert event == PublisherSequence(event.correlation_id, "app", "s", 0)
    client.declare_publisher(0, "s", "app")
    shuttle(client, broker)
    client.publish(0, [b"a", b"b"])
    shuttle(client, broker)
    cid = client.query_publisher_sequence("app", "s")
    (event,) = shuttle(client, broker)[0]
    assert event == PublisherSequence(cid, "app", "s", 2)


def test_metadata_update_closes_publishers_and_subscriptions_of_stream() -> None:
    """MetadataUpdate: 'MetadataInfo => Code Stream', 'Stream => string // the stream
    implied'; 3.10.8 removes the stream's publishers and subscriptions, then sends code
    6. Publishers on other streams are untouched."""
    client, broker = _declared()
    broker.add_stream("t")
    client.declare_publisher(1, "t")
    client.subscribe(0, "s")
    shuttle(client, broker)
    broker.confirm = False
    client.publish(0, [b"a"])
    client.delete_stream("s")
    events, _ = shuttle(client, broker)
    events = [e for e in events if not isinstance(e, (MessageReceived, ChunkDelivered))]
    assert isinstance(events[0], StreamDeleted)
    assert events[1:] == [MetadataChanged("s", ResponseCode.STREAM_NOT_AVAILABLE),
                          PublishAbandoned(0, (1,), "stream metadata changed"),
                          PublisherClosed(0, "s", ResponseCode.STREAM_NOT_AVAILABLE),
                          SubscriptionClosed(0, ResponseCode.STREAM_NOT_AVAILABLE)]  # fmt: skip
    assert client.publisher_state(0) is PublisherState.FREE
    assert client.subscription_state(0) is SubscriptionState.FREE
    assert client.publisher_state(1) is PublisherState.DECLARED


def test_metadata_update_leaves_pending_declare_to_its_response() -> None:
    """A MetadataUpdate for a publisher still declaring is ignored by its table: the
    DeclarePublisherResponse decides."""
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    client.data_to_send()
    assert client.receive_data(frame_bytes(MetadataUpdate(6, "s"))) == [MetadataChanged("s", 6)]
    assert client.publisher_state(0) is PublisherState.DECLARING


def test_store_offset_expects_no_response() -> None:
    """Commands: StoreOffset 'Expects response? No': it takes no correlation id and
    leaves nothing outstanding."""
    client, broker = with_stream()
    client.store_offset("c", "s", 42)
    assert client.outstanding_requests == {}
    shuttle(client, broker)
    assert broker.frames[-1] == StoreOffset("c", "s", 42)


def test_publish_expects_no_response() -> None:
    """Commands: Publish 'Expects response? No': outcomes come as PublishConfirm /
    PublishError by publishing id, not by correlation id."""
    client, broker = _declared()
    client.publish(0, [b"a"])
    assert client.outstanding_requests == {}


@settings(max_examples=60, deadline=None)
@given(
    window=st.integers(1, 8),
    steps=st.lists(st.tuples(st.sampled_from(["publish", "confirm", "error"]),
                             st.integers(1, 5)), max_size=40),
)  # fmt: skip
def test_unconfirmed_never_exceed_window(window: int, steps: list[tuple[str, int]]) -> None:
    """Property: whatever the interleaving of publishes and broker outcomes, the
    unconfirmed publishing ids never exceed the window, and the window's capacity is
    exactly window - unconfirmed."""
    client, broker = _declared(max_in_flight=window)
    broker.confirm = False
    outstanding: list[int] = []
    for action, n in steps:
        if action == "publish":
            if n <= window - len(outstanding):
                outstanding += client.publish(0, [b"m"] * n)
            else:
                with pytest.raises(DemandExceeded):
                    client.publish(0, [b"m"] * n)
        elif outstanding:
            done, outstanding = outstanding[:n], outstanding[n:]
            frame = (PublishConfirm(0, done) if action == "confirm"
                     else PublishError(0, [PublishingError(i, 0x10) for i in done]))  # fmt: skip
            client.receive_data(frame_bytes(frame))
        assert client.unconfirmed(0) == len(outstanding) <= window
        assert client.publish_capacity(0) == window - len(outstanding)


@given(
    st.lists(st.binary(max_size=300), max_size=40),
    st.sampled_from([0, 64, 200, 1000]),
    st.integers(min_value=1, max_value=2**40),
)
def test_publish_bytes_equal_the_generated_encoding(
    messages: list[bytes], frame_max: int, first_id: int
) -> None:
    """The engine writes Publish frames of simple entries directly (its hot path); the
    bytes are exactly the generated codec's for the same frames, split at frame_max
    ('Publish => Key Version PublisherId PublishedMessages')."""
    client, _ = _declared(0, max_in_flight=100, first_publishing_id=first_id)
    client.data_to_send()
    client.frame_max = frame_max
    fits = all(13 + 12 + len(m) <= (frame_max or 2**32) for m in messages)
    if not fits:
        with pytest.raises(MessageTooLarge):
            client.publish(0, messages)
        assert client.data_to_send() == b"" and client.unconfirmed(0) == 0
        return
    ids = client.publish(0, messages)
    assert ids == list(range(first_id, first_id + len(messages)))
    expected: list[bytes] = []
    batch: list[PublishedMessage] = []
    for pid, message in zip(ids, messages):
        entry = PublishedMessage(pid, SimpleEntry(message))
        if frame_max and batch and len(frame_bytes(Publish(0, [*batch, entry]))) > frame_max:
            expected.append(frame_bytes(Publish(0, batch)))
            batch = []
        batch.append(entry)
    if batch:
        expected.append(frame_bytes(Publish(0, batch)))
    assert client.data_to_send() == b"".join(expected)


def test_publishing_id_beyond_uint64_refused() -> None:
    """'PublishingId => uint64': an explicit id that does not fit is refused locally,
    nothing sent."""
    client, _ = _declared(0)
    client.data_to_send()
    with pytest.raises(PublishingIdNotIncreasing):
        client.publish(0, [b"x"], publishing_ids=[2**64])
    assert client.data_to_send() == b""


@pytest.mark.parametrize("filtered", [False, True])
@given(frame_max=st.integers(64, 4096), size=st.integers(0, 4200),
       value=st.none() | st.text(max_size=20))  # fmt: skip
@settings(max_examples=200, deadline=None)
def test_entry_fits_says_what_the_publish_encoders_refuse(
    filtered: bool, frame_max: int, size: int, value: str | None
) -> None:
    """The producer refuses a message alone with ``entry_fits`` before it joins a frame:
    it must say exactly what ``encode_publish`` / ``encode_publish_v2`` refuse."""
    message = bytes(size)
    try:
        if filtered:
            encode_publish_v2(frame_max, 1, [1], [message], [value])
        else:
            encode_publish(frame_max, 1, [1], [message])
        refused = False
    except MessageTooLarge:
        refused = True
    assert entry_fits(frame_max, size, value, filtered) is not refused
