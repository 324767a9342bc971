"""RabbitMQ stream client engine: subscriptions, chunks, credit, offsets."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.generated.rabbitmq_stream.v1 import (
    CompressionType,
    CreditRequest,
    CreditResponse,
    Deliver,
    DeliverV2,
    OffsetSpecFirst,
    OffsetSpecLast,
    OffsetSpecNext,
    OffsetSpecOffset,
    OffsetSpecTimestamp,
    OsirisChunk,
    ResponseCode,
    SimpleEntry,
    SubEntryBatch,
    SubscribeRequest,
    UnsubscribeResponse,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import SubscriptionState
from wirestream.runtime.errors import (
    IllegalSend,
    InvalidGrant,
    LocalProtocolError,
    PeerExceededDemand,
)
from wirestream.runtime.errors import UnexpectedFrame
from wirestream.runtime.rabbitmq_stream import (
    BatchTooLarge,
    ChunkCrcMismatch,
    ChunkDelivered,
    ChunkFailed,
    ChunkSkipped,
    ClientConnection,
    CreditOnConsumption,
    MalformedChunk,
    MessageReceived,
    NoOffset,
    OffsetQueried,
    RequestFailed,
    StreamDoesNotExist,
    Subscribed,
    SubscriptionClosed,
    SubscriptionIdAlreadyExists,
    Unsubscribed,
    UnsupportedCompression,
    chunk_records,
    decode_entries,
)
from tests.support.engine_pair import shuttle
from tests.support.rabbitmq_stream_test_broker import (
    TestBroker,
    osiris_chunk,
    sub_entry,
    with_stream,
)


def _messages(events: list[Any]) -> list[tuple[int, bytes]]:
    return [(e.offset, e.message) for e in events if isinstance(e, MessageReceived)]


def _stream_with(chunks: list[list[bytes]], **options: Any) -> tuple[ClientConnection, TestBroker]:
    """An open pair whose stream 's' holds one chunk per list of messages."""
    client, broker = with_stream(**options)
    stream, offset = broker.streams["s"], 0
    for messages in chunks:
        stream.chunks.append(osiris_chunk(offset, [SimpleEntry(m) for m in messages]))
        offset += len(messages)
    stream.next_offset = offset
    return client, broker


def _active(subscription_id: int = 0, credit: int = 0) -> tuple[ClientConnection, TestBroker]:
    """An active subscription (nothing to deliver yet) with ``credit``."""
    client, broker = with_stream()
    client.subscribe(subscription_id, "s", OffsetSpecFirst(), credit=credit)
    shuttle(client, broker)
    return client, broker


def _deliver(subscription_id: int, chunk: OsirisChunk) -> bytes:
    return frame_bytes(Deliver(subscription_id, chunk))


# --- subscribe / deliver / credit / unsubscribe --------------------------------------------


def test_subscribe_deliver_credit_unsubscribe() -> None:
    """Subscribe: 'Subscribe => Key Version CorrelationId SubscriptionId Stream
    OffsetSpecification Credit Properties'; Deliver carries one chunk; Credit adds
    chunks; Unsubscribe ends it."""
    client, broker = _stream_with([[b"a", b"b"], [b"c"], [b"d", b"e"]])
    cid = client.subscribe(1, "s", OffsetSpecFirst(), credit=1, properties={"name": "x"})
    events, _ = shuttle(client, broker)
    assert events[0] == Subscribed(cid, 1)
    assert _messages(events) == [(0, b"a"), (1, b"b")]
    assert client.credit_left(1) == 0
    client.credit(1, 5)
    events, _ = shuttle(client, broker)
    assert _messages(events) == [(2, b"c"), (3, b"d"), (4, b"e")]
    assert [e.chunk_id for e in events if isinstance(e, ChunkDelivered)] == [2, 3]
    assert client.credit_left(1) == 3
    ucid = client.unsubscribe(1)
    assert client.subscription_state(1) is SubscriptionState.UNSUBSCRIBING
    events, _ = shuttle(client, broker)
    assert events == [Unsubscribed(ucid, 1)]
    assert client.subscription_state(1) is SubscriptionState.FREE
    request = next(f for f in broker.frames if isinstance(f, SubscribeRequest))
    assert request.credit == 1 and request.properties[0].key == "name"


@pytest.mark.parametrize(
    "spec, expected",
    [(OffsetSpecFirst(), [0, 1, 2, 3]), (OffsetSpecLast(), [2, 3]), (OffsetSpecNext(), []),
     (OffsetSpecOffset(3), [3]), (OffsetSpecTimestamp(0), [0, 1, 2, 3])],
)  # fmt: skip
def test_offset_specification_types(spec: Any, expected: list[int]) -> None:
    """Subscribe: 'OffsetType => uint16 // 1 (first), 2 (last), 3 (next), 4 (offset), 5
    (timestamp)', 'Offset => uint64 (for offset) | int64 (for timestamp)'."""
    client, broker = _stream_with([[b"a", b"b"], [b"c", b"d"]])
    client.subscribe(0, "s", spec, credit=10)
    events, _ = shuttle(client, broker)
    assert [offset for offset, _ in _messages(events)] == expected
    sent = next(f for f in broker.frames if isinstance(f, SubscribeRequest))
    assert sent.offset_specification == spec


def test_offset_subscription_drops_records_before_offset() -> None:
    """Delivery is by whole chunk, so with type 4 the first chunk can start before the
    offset asked for: the records below it are dropped (rstream ``_filter_messages``);
    record offset = chunk first offset + index."""
    client, broker = _stream_with([[b"a", b"b", b"c", b"d"], [b"e"]])
    client.subscribe(0, "s", OffsetSpecOffset(2), credit=10)
    events, _ = shuttle(client, broker)
    assert _messages(events) == [(2, b"c"), (3, b"d"), (4, b"e")]
    chunk = next(e for e in events if isinstance(e, ChunkDelivered))
    assert (chunk.chunk_id, chunk.num_records, chunk.messages) == (0, 4, 2)


def test_subscribe_with_zero_credit_delivers_nothing_until_credit() -> None:
    """'Credit => uint16 // the number of chunks that can be sent': at 0 nothing is
    sent (3.10.8 send_chunks stops at 0)."""
    client, broker = _stream_with([[b"a"], [b"b"]])
    client.subscribe(0, "s", OffsetSpecFirst(), credit=0)
    events, _ = shuttle(client, broker)
    assert _messages(events) == [] and client.credit_left(0) == 0
    client.credit(0, 1)
    assert _messages(shuttle(client, broker)[0]) == [(0, b"a")]


def test_each_deliver_consumes_one_credit() -> None:
    """Credit is counted in chunks: one Deliver (one chunk, whatever its size) costs one."""
    client, _ = _active(credit=2)
    big = osiris_chunk(0, [SimpleEntry(b"x")] * 50)
    client.receive_data(_deliver(0, big))
    assert client.credit_left(0) == 1


def test_credit_frame_adds_credit() -> None:
    """Credit: 'Credit => Key Version SubscriptionId Credit' adds to what is left."""
    client, broker = _active(credit=2)
    client.credit(0, 3)
    assert client.credit_left(0) == 5
    shuttle(client, broker)
    assert broker.frames[-1] == CreditRequest(0, 3)
    assert broker.subscriptions[0].credit == 5


def test_deliver_without_credit_is_protocol_error() -> None:
    """Decision from the broker's behaviour: 3.10.8 never sends a chunk without credit
    (send_chunks stops at 0), so a Deliver beyond the credit is the broker's
    violation (``PeerExceededDemand``) and memory stays bounded by the credit."""
    client, _ = _active(credit=1)
    client.receive_data(_deliver(0, osiris_chunk(0, [SimpleEntry(b"a")])))
    with pytest.raises(PeerExceededDemand):
        client.receive_data(_deliver(0, osiris_chunk(1, [SimpleEntry(b"b")])))


def test_deliver_for_unknown_subscription_is_protocol_error() -> None:
    """A chunk for a subscription id that is not subscribed breaks the subscription
    table (free: 'a chunk for a subscription that is not active')."""
    client, _ = _active()
    with pytest.raises(UnexpectedFrame, match="not active"):
        client.receive_data(_deliver(7, osiris_chunk(0, [SimpleEntry(b"a")])))


def test_deliver_before_subscribe_ok_is_protocol_error() -> None:
    """3.10.8: SubscribeResponse OK is written before the first chunk."""
    client, _ = with_stream()
    client.subscribe(0, "s", credit=5)
    with pytest.raises(UnexpectedFrame):
        client.receive_data(_deliver(0, osiris_chunk(0, [SimpleEntry(b"a")])))


def test_deliver_during_unsubscribe_accepted() -> None:
    """Chunks written before the broker read the UnsubscribeRequest still arrive; none
    after the UnsubscribeResponse."""
    client, _ = _active(credit=5)
    cid = client.unsubscribe(0)
    events = client.receive_data(_deliver(0, osiris_chunk(0, [SimpleEntry(b"a")])))
    assert _messages(events) == [(0, b"a")]
    client.receive_data(frame_bytes(UnsubscribeResponse(cid, ResponseCode.OK)))
    with pytest.raises(UnexpectedFrame):
        client.receive_data(_deliver(0, osiris_chunk(1, [SimpleEntry(b"b")])))


def test_credit_before_subscribe_ok_refused_locally() -> None:
    """Decision: no credit before SubscribeResponse OK (3.10.8 would answer
    CreditResponse 4, the subscription not existing yet)."""
    client, _ = with_stream()
    client.subscribe(0, "s")
    with pytest.raises(IllegalSend, match="not active"):
        client.credit(0, 1)
    with pytest.raises(IllegalSend, match="no such subscription"):
        client.credit(9, 1)


def test_subscribe_with_active_id_refused_locally() -> None:
    """3.10.8: Subscribe with an id in use gets 3 (subscription id already exists)."""
    client, _ = _active()
    with pytest.raises(IllegalSend, match="in use"):
        client.subscribe(0, "s")


def test_subscribe_refused_frees_id_with_typed_error() -> None:
    """3.10.8 Subscribe codes: 2 stream does not exist, 3 id already exists, ..."""
    client, broker = with_stream()
    cid = client.subscribe(0, "missing")
    (event,) = shuttle(client, broker)[0]
    assert isinstance(event, RequestFailed) and event.correlation_id == cid
    assert isinstance(event.error, StreamDoesNotExist)
    assert client.subscription_state(0) is SubscriptionState.FREE
    assert SubscriptionIdAlreadyExists(3).name == "SUBSCRIPTION_ID_ALREADY_EXISTS"


def test_credit_response_only_on_error_closes_active_subscription() -> None:
    """Credit: 'NB: the server sent a response only in case of problem, e.g. crediting an
    unknown subscription.' For an active subscription it means the broker no longer
    knows it."""
    client, _ = _active(credit=1)
    code = ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST
    events = client.receive_data(frame_bytes(CreditResponse(code, 0)))
    assert events == [SubscriptionClosed(0, code)]
    assert client.subscription_state(0) is SubscriptionState.FREE


def test_credit_response_for_unknown_subscription_ignored() -> None:
    """A CreditResponse for a subscription that is gone needs nothing (table: ignore)."""
    client, _ = _active()
    code = ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST
    assert client.receive_data(frame_bytes(CreditResponse(code, 5))) == []
    assert client.ignored_frames == 1


def test_credit_beyond_outstanding_limit_refused() -> None:
    """'Credit => uint16': one grant is 1..65535, and the engine keeps its outstanding
    credit within 65535 so its count never falls below the broker's."""
    client, _ = _active(credit=65_000)
    with pytest.raises(InvalidGrant):
        client.credit(0, 0)
    with pytest.raises(InvalidGrant):
        client.credit(0, 1000)
    client.credit(0, 535)
    assert client.credit_left(0) == 65_535


# --- chunks --------------------------------------------------------------------------------


def test_gzip_sub_entry_batch_delivered() -> None:
    """A sub-entry batch (<<1:1, CompType:3, ...>>, gzip = 1) holds NumRecs size-prefixed
    records; each gets its own offset."""
    client, broker = with_stream()
    stream = broker.streams["s"]
    stream.chunks.append(osiris_chunk(0, [SimpleEntry(b"a"), sub_entry([b"b", b"c", b"d"]),
                                          sub_entry([b"e"], compression=0)]))  # fmt: skip
    client.subscribe(0, "s", OffsetSpecFirst(), credit=1)
    events, _ = shuttle(client, broker)
    assert _messages(events) == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")]


def test_published_batches_read_back() -> None:
    """Back to back: messages published as simple entries and gzip batches come back
    in order with consecutive offsets."""
    client, broker = with_stream()
    client.declare_publisher(0, "s")
    client.subscribe(1, "s", OffsetSpecFirst(), credit=CreditOnConsumption(1))
    shuttle(client, broker)
    client.publish(0, [b"one", b"two"])
    client.publish_batch(0, [b"three", b"four"], CompressionType.GZIP)
    client.publish_batch(0, [b"five"], CompressionType.NONE)
    received: list[tuple[int, bytes]] = []
    for _ in range(3):
        events, _ = shuttle(client, broker)
        received += _messages(events)
        client.chunk_consumed(1)
    received += _messages(shuttle(client, broker)[0])
    assert received == [(0, b"one"), (1, b"two"), (2, b"three"), (3, b"four"), (4, b"five")]


def test_crc_mismatch_is_precise_chunk_error() -> None:
    """'ChunkCrc => int32': the CRC-32 of the entries (osiris ``erlang:crc32(EData)``).
    A mismatch is a ``ChunkCrcMismatch`` for that chunk; its credit is spent."""
    client, _ = _active(credit=2)
    good = osiris_chunk(0, [SimpleEntry(b"a")])
    bad = osiris_chunk(0, [SimpleEntry(b"a")], crc=good.chunk_crc ^ 1)
    (event,) = client.receive_data(_deliver(0, bad))
    assert isinstance(event, ChunkFailed) and isinstance(event.error, ChunkCrcMismatch)
    assert client.credit_left(0) == 1 and client.is_open


def test_unsupported_compression_is_precise_error() -> None:
    """A batch whose 'CompType:3' is none of the five codecs (5..7; 0 none .. 4 zstd are
    all decoded: tests/rabbitmq_stream/test_rabbitmq_stream_compression.py): ``UnsupportedCompression``.
    """
    client, _ = _active(credit=1)
    chunk = osiris_chunk(0, [SubEntryBatch(CompressionType.NONE, 1, 5, b"\x00\x00\x00\x01a")])
    chunk.data = bytes([0x80 | 5 << 4]) + chunk.data[1:]  # compression type 5
    chunk.chunk_crc = zlib.crc32(chunk.data)
    (event,) = client.receive_data(_deliver(0, chunk))
    assert isinstance(event, ChunkFailed) and isinstance(event.error, UnsupportedCompression)


@pytest.mark.parametrize(
    "entries, header",
    [([SubEntryBatch(CompressionType.GZIP, 1, 5, b"not gzip")], {}),
     ([SubEntryBatch(CompressionType.NONE, 2, 5, b"\x00\x00\x00\x01a")], {}),
     ([SubEntryBatch(CompressionType.NONE, 1, 6, b"\x00\x00\x00\x09ab")], {}),
     ([SimpleEntry(b"a")], {"num_records": 2}),
     ([SimpleEntry(b"a")], {"num_entries": 3})],
)  # fmt: skip
def test_malformed_chunk_is_precise_error(entries: list[Any], header: dict[str, int]) -> None:
    """Entries that contradict their headers or the chunk's ('NumEntries',
    'NumRecords') are a ``MalformedChunk``."""
    chunk = osiris_chunk(0, entries)
    for name, value in header.items():
        setattr(chunk, name, value)
    with pytest.raises(MalformedChunk):
        chunk_records(chunk)


@pytest.mark.parametrize(
    "data",
    [bytes.fromhex("00000014") + b"only ten b",  # a simple entry claims 20 bytes, 10 follow
     bytes.fromhex("7fffffff") + b"x",  # 2 GiB claimed on a 5-byte chunk: no allocation
     bytes.fromhex("800001000000050000ffff") + b"abc",  # a batch claims 65535 bytes
     bytes.fromhex("0000"),  # ends inside an entry header
     bytes.fromhex("80000100000005")],  # ends inside a sub-entry batch header
)  # fmt: skip
def test_entry_overrunning_data_length_is_malformed_chunk(data: bytes) -> None:
    """'Message => EntryTypeAndSize' and 'DataLength => uint32' contradict: an entry's
    size runs past the chunk data. A precise ``MalformedChunk`` (the chunk fails as a
    ``ChunkFailed`` event), never an over-read or an allocation sized by the peer."""
    chunk = osiris_chunk(0, [SimpleEntry(b"a")])
    chunk.data = data
    chunk.chunk_crc = zlib.crc32(data)
    with pytest.raises(MalformedChunk):
        chunk_records(chunk)
    with pytest.raises(MalformedChunk):
        decode_entries(data)


@given(st.lists(st.one_of(
    st.builds(SimpleEntry, st.binary(max_size=40)),
    st.builds(lambda records: sub_entry(records), st.lists(st.binary(max_size=20), min_size=1,
                                                          max_size=5)))))  # fmt: skip
def test_entries_round_trip_through_chunk_data(entries: list[Any]) -> None:
    """The chunk's data is the entries in osiris' layout: encoding then decoding gives
    them back, and ``chunk_records`` yields every record in order."""
    chunk = osiris_chunk(0, entries)
    assert decode_entries(chunk.data) == entries
    expected: list[bytes] = []
    for entry in entries:
        if isinstance(entry, SimpleEntry):
            expected.append(entry.data)
        else:
            expected.extend(chunk_records(osiris_chunk(0, [entry])))
    assert chunk_records(chunk) == expected


def test_batch_over_limit_is_not_inflated() -> None:
    """Memory is bounded: a batch declaring more than ``max_batch_size`` uncompressed
    bytes is refused before inflation (``BatchTooLarge``)."""
    chunk = osiris_chunk(0, [sub_entry([bytes(2000)])])
    with pytest.raises(BatchTooLarge):
        chunk_records(chunk, max_batch_size=1000)


def test_non_user_chunk_skipped_and_credit_counted() -> None:
    """'ChunkType => int8 // 0: user, 1: tracking delta, 2: tracking snapshot': only user
    chunks hold messages; others are skipped but cost their credit."""
    client, _ = _active(credit=2)
    events = client.receive_data(_deliver(0, osiris_chunk(5, [SimpleEntry(b"t")], chunk_type=1)))
    assert events == [ChunkSkipped(0, 5, 1)] and client.credit_left(0) == 1


def test_deliver_v2_carries_committed_chunk_id() -> None:
    """Deliver version 2: 'Deliver => Key Version SubscriptionId CommittedOffset
    OsirisChunk'."""
    client, _ = _active(credit=1)
    events = client.receive_data(
        frame_bytes(DeliverV2(0, 77, osiris_chunk(0, [SimpleEntry(b"a")])))
    )
    assert events[-1] == ChunkDelivered(0, 0, 1, 1, events[-1].timestamp, 77)


# --- credit strategy -----------------------------------------------------------------------


def test_credit_strategy_grants_one_per_consumed_chunk() -> None:
    """Like the Java client: initial credit N, then one credit back per chunk the
    application consumed, so at most N chunks are ever delivered and not consumed."""
    client, broker = _stream_with([[b"%d" % i] for i in range(10)])
    client.subscribe(0, "s", OffsetSpecFirst(), credit=CreditOnConsumption(3))
    events, _ = shuttle(client, broker)
    assert len(_messages(events)) == 3
    assert len(_messages(shuttle(client, broker)[0])) == 0  # nothing consumed: nothing more
    client.chunk_consumed(0, 2)
    events, _ = shuttle(client, broker)
    assert [o for o, _ in _messages(events)] == [3, 4]
    credits = [f.credit for f in broker.frames if isinstance(f, CreditRequest)]
    assert credits == [2]  # what was consumed, in one grant


def test_credit_strategy_bounds_and_defaults() -> None:
    """Subscribe's 'Credit => uint16': the initial credit is 1..65535 (10 by default, the
    Java client's); one chunk consumed at a time by default; credit comes back every
    ``low_tide`` chunks, within the initial credit."""
    message = r"^the initial credit must be 1\.\.65535 \(Subscribe's Credit is a uint16\)$"
    for bad in (0, 65536):
        with pytest.raises(ValueError, match=message):
            CreditOnConsumption(bad)
    assert CreditOnConsumption(65535).initial == 65535
    assert CreditOnConsumption().initial == 10
    strategy = CreditOnConsumption(10, low_tide=4)
    assert [strategy.consumed() for _ in range(4)] == [0, 0, 0, 4]
    with pytest.raises(ValueError, match="low_tide must not exceed batch"):
        CreditOnConsumption(2, low_tide=5)


def test_chunk_consumed_more_than_delivered_refused() -> None:
    """The application cannot consume chunks it was not given."""
    client, broker = _stream_with([[b"a"]])
    client.subscribe(0, "s", OffsetSpecFirst(), credit=CreditOnConsumption(2))
    shuttle(client, broker)
    client.chunk_consumed(0)
    with pytest.raises(LocalProtocolError):
        client.chunk_consumed(0)
    client2, _ = _active()
    with pytest.raises(LocalProtocolError, match="no credit strategy"):
        client2.chunk_consumed(0)


def test_failed_chunk_counts_as_consumed_for_strategy() -> None:
    """A chunk the application never sees (failed or skipped) gives its credit back."""
    client, broker = with_stream()
    client.subscribe(0, "s", OffsetSpecFirst(), credit=CreditOnConsumption(1))
    shuttle(client, broker)
    client.receive_data(_deliver(0, osiris_chunk(0, [SimpleEntry(b"a")], crc=1)))
    assert client.credit_left(0) == 1


def test_skipped_chunk_gives_its_credit_back() -> None:
    """'ChunkType => int8 // 0: user, 1: tracking delta, 2: tracking snapshot': a tracking
    chunk is skipped, never handed to the application, so nobody will consume it: with a
    ``CreditOnConsumption`` strategy the engine gives its credit back itself (as the Java
    client does), or a consumer with ``CreditOnConsumption(1)`` stalls behind it."""
    client, broker = with_stream()
    stream = broker.streams["s"]
    stream.chunks += [
        osiris_chunk(0, [SimpleEntry(b"t")], chunk_type=1),
        osiris_chunk(1, [SimpleEntry(b"after the tracking chunk")]),
    ]
    stream.next_offset = 2
    client.subscribe(0, "s", OffsetSpecFirst(), credit=CreditOnConsumption(1))
    events, _ = shuttle(client, broker)
    assert ChunkSkipped(0, 0, 1) in events
    assert _messages(events) == [(1, b"after the tracking chunk")]
    assert [f.credit for f in broker.frames if isinstance(f, CreditRequest)] == [1]


@settings(max_examples=60, deadline=None)
@given(
    initial=st.integers(0, 5),
    steps=st.lists(st.tuples(st.sampled_from(["deliver", "credit"]), st.integers(1, 4)),
                   max_size=40),
)  # fmt: skip
def test_chunk_credit_never_negative(initial: int, steps: list[tuple[str, int]]) -> None:
    """Property: with a broker that honours credit (3.10.8), the engine's chunk credit is
    never negative and always equals granted minus delivered; a chunk beyond it would
    be refused."""
    client, broker = with_stream()
    stream = broker.streams["s"]
    client.subscribe(0, "s", OffsetSpecFirst(), credit=initial)
    shuttle(client, broker)
    granted, delivered = initial, 0
    for action, n in steps:
        if action == "credit":
            client.credit(0, n)
            granted += n
        else:
            for _ in range(n):
                offset = stream.next_offset
                stream.chunks.append(osiris_chunk(offset, [SimpleEntry(b"m")]))
                stream.next_offset += 1
            broker.deliver_all()  # as osiris' offset listener wakes 3.10.8 up
        shuttle(client, broker)
        delivered = min(granted, len(stream.chunks))
        assert 0 <= client.credit_left(0) == granted - delivered


# --- offsets -------------------------------------------------------------------------------


def test_store_and_query_offset() -> None:
    """StoreOffset: 'StoreOffset => Key Version Reference Stream Offset'; QueryOffset:
    'QueryOffsetResponse => Key Version CorrelationId ResponseCode Offset'."""
    client, broker = with_stream()
    client.store_offset("consumer-1", "s", 1234)
    cid = client.query_offset("consumer-1", "s")
    (event,) = shuttle(client, broker)[0]
    assert event == OffsetQueried(cid, "consumer-1", "s", 1234)


def test_query_offset_no_offset_is_code_19() -> None:
    """3.10.8 answers QueryOffset for a reference with nothing stored with code 0x13
    (no offset) -> ``NoOffset``."""
    client, broker = with_stream()
    client.query_offset("nobody", "s")
    (event,) = shuttle(client, broker)[0]
    assert isinstance(event, RequestFailed) and isinstance(event.error, NoOffset)
    assert event.error.code == 0x13
