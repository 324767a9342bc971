"""Our asyncio stream client's frames against rstream 1.1.1's, command by command.

The same commands run twice against RabbitMQ 3.10.8, each time through a recording
proxy (``tests.support.rabbitmq_stream_capture.FrameCapture``): once with
``wirestream.runtime.rabbitmq_stream.aio`` and once with rstream (``load_balancer_mode=True`` so
that its leader connections go through the proxy too). Both runs use the same stream
name (one after the other: create, ..., delete) and the same references, so each client
frame is compared field by field through the generated frame classes' equality, after
normalising only what legitimately differs: correlation ids, publisher and subscription
ids (each checked consistent within its run first), the client properties of
PeerProperties and the properties of Subscribe. The broker's answers to both are
compared by kind and response code.

Commands: create stream (max-length-bytes), declare publisher with a reference, publish
3 raw messages and their confirms, query publisher sequence, subscribe from the first
offset with an initial credit, credit after a chunk, store offset, query offset,
unsubscribe, delete publisher, delete stream, close.

Differences found (each pinned by a test below):
* PeerProperties: we send product/version/platform/information, rstream
  connection_name/product/platform/version/license (other values too);
* rstream sends a Heartbeat as soon as a connection is open (its heartbeat task sends
  first and sleeps after); we send none before the heartbeat interval;
* with a reference, we ask QueryPublisherSequence before DeclarePublisher (ids continue
  after the stored sequence from the first send), rstream after it;
* rstream asks Metadata for the leader before it publishes and before it subscribes
  (then connects again through the load balancer); we use the connection we have;
* rstream spreads the commands over 6 connections (locators, a publishing and a
  subscribing connection); we use 1. Its StoreOffset/QueryOffset go on the consumer's
  locator connection, not the subscribing one;
* we end the connection with CloseRequest (code 1, reason ""); rstream 1.1.1 sends no
  CloseRequest at all: ``Client.close`` stops its heartbeat task first, after which
  ``BaseClient.close`` sees ``is_started`` False and skips the Close exchange, so its
  sockets just close (FIN);
* the broker sends MetadataUpdate (stream deleted) to rstream's consumer locator, still
  open when rstream deletes the stream; our single connection had already unsubscribed
  and deleted its publisher, and gets none.
Everything else is identical: SASL, Tune, Open, Create, DeclarePublisher,
QueryPublisherSequence, Publish (entry bytes too), Subscribe (offset spec, credit),
Credit (1 per chunk on both), StoreOffset, QueryOffset, Unsubscribe, DeletePublisher,
Delete, and the broker's answers to them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from rstream import (
    ConfirmationStatus,
    Consumer,
    ConsumerOffsetSpecification,
    MessageContext,
    OffsetType,
    Producer,
)
from rstream.exceptions import OffsetNotFound

from wirestream.generated.rabbitmq_stream.v1 import (
    CloseRequest,
    CloseResponse,
    CreateRequest,
    CreditRequest,
    DeclarePublisherRequest,
    DeletePublisherRequest,
    DeleteRequest,
    Deliver,
    Frame,
    Heartbeat,
    MetadataRequest,
    MetadataResponse,
    MetadataUpdate,
    OffsetSpecFirst,
    OpenRequest,
    OsirisChunk,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    Property,
    Publish,
    PublishConfirm,
    PublishedMessage,
    QueryOffsetRequest,
    QueryPublisherSequenceRequest,
    ResponseCode,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    SimpleEntry,
    StoreOffset,
    SubscribeRequest,
    Tune,
    UnsubscribeRequest,
    frame_bytes,
)
from wirestream.runtime.rabbitmq_stream.aio import connect
from tests.support.aio_support import run
from tests.support.rabbitmq_stream_capture import FrameCapture
from tests.support.rabbitmq_stream_client_support import HOST, URI, read, unique, until, uri

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

logging.getLogger("rstream").setLevel(logging.CRITICAL)  # teardown noise at ERROR

F = TypeVar("F", bound=Frame)

BODIES = [b"first raw body", b"second raw body", b"\x00\x01\x02 third"]
ARGUMENTS = {"max-length-bytes": 100_000_000}
INITIAL_CREDIT = 5  # neither client's default (10): the setting is what is seen


# --------------------------------------------------------------------------------------
# The two runs
# --------------------------------------------------------------------------------------


@dataclass
class Connection:
    """One proxied connection: its frames in order and how the client's side ended."""

    client: list[Frame]
    server: list[Frame]
    client_ended: str | None


@dataclass
class Run:
    """What one client sent and received for the whole scenario."""

    stream: str
    connections: list[Connection] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)

    def sent(self, frame_type: type[F]) -> list[F]:
        return [f for c in self.connections for f in c.client if isinstance(f, frame_type)]

    def received(self, frame_type: type[F]) -> list[F]:
        return [f for c in self.connections for f in c.server if isinstance(f, frame_type)]

    def connection_of(self, frame_type: type[Frame]) -> list[int]:
        """Indexes of the connections that carried a client frame of ``frame_type``."""
        return [
            i
            for i, c in enumerate(self.connections)
            if any(isinstance(f, frame_type) for f in c.client)
        ]


async def _record(cap: FrameCapture, result: Run) -> Run:
    """Once every socket is closed: the frames of every connection."""
    await cap.aclose()
    assert cap.errors == [], cap.errors  # every frame of both directions decoded
    result.connections = [
        Connection(list(c.client_frames), list(c.server_frames), c.client_ended)
        for c in cap.connections
    ]
    return result


async def _until_stored(query: Callable[[], Awaitable[int | None]]) -> int:
    """StoreOffset has no answer ('Expects response? No'): query the fresh stream's
    reference until an offset is stored (None: none yet)."""
    async with asyncio.timeout(5.0):
        while (offset := await query()) is None:
            await asyncio.sleep(0.01)
    return offset


async def _ours(stream: str, publisher_ref: str, consumer_ref: str) -> Run:
    result = Run(stream)
    async with FrameCapture() as cap:
        async with await connect(uri(cap.port), reconnect=False) as client:
            await client.create_stream(stream, ARGUMENTS)
            producer = await client.producer(stream, reference=publisher_ref, raw=True)
            await producer.send_many(BODIES)
            result.results["sequence"] = await client.query_publisher_sequence(
                publisher_ref, stream
            )
            consumer = await client.consumer(
                stream, "first", reference=consumer_ref, credit=INITIAL_CREDIT, raw=True
            )
            result.results["bodies"] = [m.body for m in await read(consumer, len(BODIES))]
            await cap.wait_for(lambda: bool(cap.frames_of(CreditRequest)))
            consumer.store_offset()  # the last message read: offset 2
            result.results["offset"] = await _until_stored(
                lambda: client.query_offset(consumer_ref, stream)
            )
            await consumer.close()  # Unsubscribe
            await producer.close()  # DeletePublisher
            await client.delete_stream(stream)
        return await _record(cap, result)


async def _rstream(stream: str, publisher_ref: str, consumer_ref: str) -> Run:
    result = Run(stream)
    confirmed: list[ConfirmationStatus] = []
    received: list[bytes] = []

    def on_message(body: bytes, context: MessageContext) -> None:
        received.append(body)

    async with FrameCapture() as cap:
        options: dict[str, Any] = dict(username="guest", password="guest")
        producer = Producer(HOST, cap.port, load_balancer_mode=True, **options)
        consumer = Consumer(HOST, cap.port, load_balancer_mode=True, **options)
        await producer.start()
        try:
            await producer.create_stream(stream, ARGUMENTS)
            # bytes are published raw (rstream wraps them in RawMessage)
            await producer.send_batch(
                stream, BODIES, publisher_name=publisher_ref, on_publish_confirm=confirmed.append
            )
            await until(lambda: len(confirmed) == len(BODIES))
            assert all(status.is_confirmed for status in confirmed)
            # rstream's Producer has no query_publisher_sequence: its Client has.
            locator = await producer.default_client
            result.results["sequence"] = await locator.query_publisher_sequence(
                stream=stream, reference=publisher_ref
            )
            subscription = await consumer.subscribe(
                stream,
                on_message,
                offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST),
                initial_credit=INITIAL_CREDIT,
                subscriber_name=consumer_ref,
            )
            await until(lambda: len(received) == len(BODIES))
            result.results["bodies"] = list(received)
            await cap.wait_for(lambda: bool(cap.frames_of(CreditRequest)))
            await consumer.store_offset(stream, consumer_ref, len(BODIES) - 1)

            async def query_offset() -> int | None:
                try:
                    return await consumer.query_offset(stream, consumer_ref)
                except OffsetNotFound:  # NO_OFFSET (0x13): nothing stored yet
                    return None

            result.results["offset"] = await _until_stored(query_offset)
            await consumer.unsubscribe(subscription)
            # delete_stream deletes the stream's publishers first (DeletePublisher)
            await producer.delete_stream(stream)
        finally:
            await consumer.close()
            await producer.close()
        return await _record(cap, result)


@pytest.fixture(scope="module")
def runs() -> tuple[Run, Run]:
    """Both clients through the same scenario, on the same stream name, one after the
    other (each creates and deletes it)."""
    stream = unique("ws-vs-rstream")
    references = (f"{stream}-publisher", f"{stream}-consumer")
    try:
        ours = run(_ours(stream, *references), timeout=20)
        theirs = run(_rstream(stream, *references), timeout=30)
    finally:  # a run that failed half-way leaves the stream: delete it, unrecorded
        run(_delete(stream))
    return ours, theirs


async def _delete(stream: str) -> None:
    async with await connect(URI, reconnect=False) as client:
        await client.delete_stream(stream, missing_ok=True)


@pytest.mark.peer
def test_both_clients_publish_read_back_and_store_the_same(runs: tuple[Run, Run]) -> None:
    """What the scenario did through each API: the sequence of the publisher reference
    after the confirms, the bodies read from the first offset, the offset stored."""
    ours, theirs = runs
    expected = {"sequence": 3, "bodies": BODIES, "offset": 2}
    assert ours.results == expected
    assert theirs.results == expected


# --------------------------------------------------------------------------------------
# Normalising what legitimately differs
# --------------------------------------------------------------------------------------

_NORMALISED = {"correlation_id": 0, "publisher_id": 0, "subscription_id": 0}


def _normalised(frame: F) -> F:
    """A copy with correlation, publisher and subscription ids set to 0, PeerProperties'
    client properties and Subscribe's properties emptied."""
    fields = {name: getattr(frame, name) for name in type(frame).__match_args__}
    fields.update({k: v for k, v in _NORMALISED.items() if k in fields})
    if isinstance(frame, PeerPropertiesRequest | PeerPropertiesResponse):
        fields["peer_properties"] = []
    if isinstance(frame, SubscribeRequest):
        fields["properties"] = []
    if isinstance(frame, Deliver):  # the chunk's timestamp is when the broker wrote it
        chunk = frame.chunk
        chunk_fields = {name: getattr(chunk, name) for name in OsirisChunk.__match_args__}
        fields["chunk"] = OsirisChunk(**{**chunk_fields, "timestamp": 0})
    return type(frame)(**fields)


def _same(ours: Run, theirs: Run, frame_type: type[F]) -> list[F]:
    """Our frames of ``frame_type`` equal rstream's once normalised; they are returned."""
    mine = [_normalised(f) for f in ours.sent(frame_type)]
    assert mine, f"we sent no {frame_type.__name__}"
    assert mine == [_normalised(f) for f in theirs.sent(frame_type)]
    return mine


def _one_id(*ids: int) -> None:
    """The ids a run used for one publisher (or subscription) are one id."""
    assert len(set(ids)) == 1, ids


# --------------------------------------------------------------------------------------
# Opening connections
# --------------------------------------------------------------------------------------


@pytest.mark.peer
def test_every_connection_opens_with_the_same_sasl_tune_and_open_frames(
    runs: tuple[Run, Run],
) -> None:
    """PeerProperties (client properties aside), SaslHandshake, SaslAuthenticate (PLAIN,
    '\\0guest\\0guest'), Tune (frame_max 1048576, heartbeat 60: the broker's values and
    both clients' defaults) and Open of vhost '/' are the same on every connection."""
    ours, theirs = runs
    expected = [
        PeerPropertiesRequest(),
        SaslHandshakeRequest(),
        SaslAuthenticateRequest(0, "PLAIN", b"\x00guest\x00guest"),
        Tune(1_048_576, 60),
        OpenRequest(0, "/"),
    ]
    for result in (ours, theirs):
        for connection in result.connections:
            assert [_normalised(f) for f in connection.client[:5]] == expected


@pytest.mark.peer
def test_peer_properties_differ_only_in_the_client_properties(runs: tuple[Run, Run]) -> None:
    """The difference normalised away elsewhere, pinned: which keys each client sends
    (rstream names every connection; we send connection_name only when given one)."""
    ours, theirs = runs
    [mine] = ours.sent(PeerPropertiesRequest)
    assert [p.key for p in mine.peer_properties] == [
        "product",
        "version",
        "platform",
        "information",
    ]
    assert dict((p.key, p.value) for p in mine.peer_properties)["product"] == "wirestream"
    for request in theirs.sent(PeerPropertiesRequest):
        properties = {p.key: p.value for p in request.peer_properties}
        assert list(properties) == ["connection_name", "product", "platform", "version", "license"]
        assert properties["product"] == "RabbitMQ Stream" and properties["version"] == "1.1.1"
    # the broker answers both with its own (same) properties
    [answer] = ours.received(PeerPropertiesResponse)
    for theirs_answer in theirs.received(PeerPropertiesResponse):
        assert theirs_answer.peer_properties == answer.peer_properties


@pytest.mark.peer
def test_rstream_sends_a_heartbeat_as_soon_as_a_connection_is_open_and_we_do_not(
    runs: tuple[Run, Run],
) -> None:
    """Spec (PROTOCOL.adoc, Heartbeat): 'Heartbeat => Key Version'; sent when nothing
    else was for the negotiated interval (60 s here). rstream's heartbeat task sends
    first and sleeps after, so each of its connections sends one Heartbeat at once;
    ours sends none in a run far shorter than 60 s."""
    ours, theirs = runs
    assert ours.sent(Heartbeat) == []
    for connection in theirs.connections:
        assert connection.client.count(Heartbeat()) == 1
        # just after the handshake (the task starts once Tune is sent)
        assert Heartbeat() in connection.client[4:6]


# --------------------------------------------------------------------------------------
# The commands
# --------------------------------------------------------------------------------------


@pytest.mark.peer
def test_create_request_is_the_same(runs: tuple[Run, Run]) -> None:
    """Spec: 'Create => Key Version CorrelationId Stream Arguments'; both send the
    max-length-bytes argument as the string '100000000'."""
    ours, theirs = runs
    assert _same(ours, theirs, CreateRequest) == [
        CreateRequest(0, ours.stream, [Property("max-length-bytes", "100000000")])
    ]


@pytest.mark.peer
def test_declare_publisher_is_the_same_but_we_query_the_sequence_before_it(
    runs: tuple[Run, Run],
) -> None:
    """DeclarePublisher with the reference is identical. Both also ask
    QueryPublisherSequence for the reference around it, in a different order by design:
    we ask first (the first publishing id follows the stored sequence), rstream after."""
    ours, theirs = runs
    reference = f"{ours.stream}-publisher"
    assert _same(ours, theirs, DeclarePublisherRequest) == [
        DeclarePublisherRequest(0, 0, reference, ours.stream)
    ]
    [mine] = [c.client for c in ours.connections]
    declare = mine.index(ours.sent(DeclarePublisherRequest)[0])
    assert isinstance(mine[declare - 1], QueryPublisherSequenceRequest)
    [their_connection] = [theirs.connections[i].client for i in theirs.connection_of(Publish)]
    declare = next(
        i for i, f in enumerate(their_connection) if isinstance(f, DeclarePublisherRequest)
    )
    assert isinstance(their_connection[declare + 1], QueryPublisherSequenceRequest)


@pytest.mark.peer
def test_query_publisher_sequence_requests_are_the_same(runs: tuple[Run, Run]) -> None:
    """Two each: the one around DeclarePublisher (answer 0) and the explicit one after
    the confirms (answer 3, the last publishing id)."""
    ours, theirs = runs
    request = QueryPublisherSequenceRequest(0, f"{ours.stream}-publisher", ours.stream)
    assert _same(ours, theirs, QueryPublisherSequenceRequest) == [request, request]


@pytest.mark.peer
def test_publish_frame_and_entry_bytes_are_the_same(runs: tuple[Run, Run]) -> None:
    """One Publish of 3 messages, publishing ids 1..3 (the reference's sequence was 0),
    each a SimpleEntry of the raw body: the same fields and the same bytes on the wire
    once the publisher id is normalised."""
    ours, theirs = runs
    for result in (ours, theirs):
        [declare] = result.sent(DeclarePublisherRequest)
        [delete] = result.sent(DeletePublisherRequest)
        [publish] = result.sent(Publish)
        [confirm] = result.received(PublishConfirm)
        _one_id(
            declare.publisher_id, publish.publisher_id, confirm.publisher_id, delete.publisher_id
        )
        assert [m.entry for m in publish.published_messages] == [SimpleEntry(b) for b in BODIES]
    expected = Publish(0, [PublishedMessage(i, SimpleEntry(b)) for i, b in enumerate(BODIES, 1)])
    assert _same(ours, theirs, Publish) == [expected]
    [mine], [their] = ours.sent(Publish), theirs.sent(Publish)
    assert frame_bytes(_normalised(mine)) == frame_bytes(_normalised(their))


@pytest.mark.peer
def test_publish_confirms_are_the_same(runs: tuple[Run, Run]) -> None:
    ours, theirs = runs
    mine = [_normalised(f) for f in ours.received(PublishConfirm)]
    assert mine == [_normalised(f) for f in theirs.received(PublishConfirm)]
    assert mine == [PublishConfirm(0, [1, 2, 3])]


@pytest.mark.peer
def test_subscribe_request_is_the_same_offset_spec_and_initial_credit(
    runs: tuple[Run, Run],
) -> None:
    """Spec: 'Subscribe => Key Version CorrelationId SubscriptionId Stream
    OffsetSpecification Credit Properties'. Offset 'first' and an initial credit of 5
    asked through each API give the same frame; neither sends properties (the consumer
    reference is only used by StoreOffset / QueryOffset, not sent as 'name')."""
    ours, theirs = runs
    assert _same(ours, theirs, SubscribeRequest) == [
        SubscribeRequest(0, 0, ours.stream, OffsetSpecFirst(), INITIAL_CREDIT, [])
    ]
    for result in (ours, theirs):
        [subscribe] = result.sent(SubscribeRequest)
        assert subscribe.properties == []


@pytest.mark.peer
def test_one_credit_is_granted_per_chunk_by_both(runs: tuple[Run, Run]) -> None:
    """Spec (Credit): 'Credit => uint16 // the number of chunks that can be sent'. Both
    give 1 credit back per chunk (Deliver) received: the same strategy, same frames."""
    ours, theirs = runs
    for result in (ours, theirs):
        [subscribe] = result.sent(SubscribeRequest)
        [unsubscribe] = result.sent(UnsubscribeRequest)
        delivers = result.received(Deliver)
        credits = result.sent(CreditRequest)
        assert len(credits) == len(delivers) >= 1
        _one_id(
            subscribe.subscription_id,
            unsubscribe.subscription_id,
            *(f.subscription_id for f in delivers),
            *(f.subscription_id for f in credits),
        )
    assert _same(ours, theirs, CreditRequest) == [CreditRequest(0, 1)] * len(ours.received(Deliver))


@pytest.mark.peer
def test_the_broker_delivers_the_same_chunk_to_both(runs: tuple[Run, Run]) -> None:
    """The stream was deleted and created again between the runs: the same 3 entries in
    one chunk at offset 0, same CRC (only the chunk's timestamp differs)."""
    ours, theirs = runs
    mine = [_normalised(f) for f in ours.received(Deliver)]
    assert mine == [_normalised(f) for f in theirs.received(Deliver)]
    assert [(d.chunk.chunk_first_offset, d.chunk.num_entries) for d in mine] == [(0, 3)]


@pytest.mark.peer
def test_store_offset_and_query_offset_are_the_same(runs: tuple[Run, Run]) -> None:
    """StoreOffset carries no id to normalise: the frames are equal as sent. QueryOffset
    is asked until the stored offset shows (StoreOffset has no answer), so each side may
    ask more than once: every one is the same request. rstream sends both on its
    consumer's locator connection, not on the subscribing one; we have one connection."""
    ours, theirs = runs
    reference = f"{ours.stream}-consumer"
    for result in (ours, theirs):
        assert result.sent(StoreOffset) == [StoreOffset(reference, ours.stream, 2)]
        queries = {repr(_normalised(f)) for f in result.sent(QueryOffsetRequest)}
        assert queries == {repr(QueryOffsetRequest(0, reference, ours.stream))}
    assert theirs.connection_of(StoreOffset) != theirs.connection_of(SubscribeRequest)
    assert ours.connection_of(StoreOffset) == ours.connection_of(SubscribeRequest) == [0]


@pytest.mark.peer
def test_unsubscribe_delete_publisher_and_delete_are_the_same(runs: tuple[Run, Run]) -> None:
    ours, theirs = runs
    assert _same(ours, theirs, UnsubscribeRequest) == [UnsubscribeRequest(0, 0)]
    assert _same(ours, theirs, DeletePublisherRequest) == [DeletePublisherRequest(0, 0)]
    assert _same(ours, theirs, DeleteRequest) == [DeleteRequest(0, ours.stream)]


@pytest.mark.peer
def test_we_close_with_close_request_and_rstream_closes_its_sockets_without_one(
    runs: tuple[Run, Run],
) -> None:
    """Spec (Close): 'Close => Key Version CorrelationId ClosingCode ClosingReason'. We
    send it (code 1 = OK, empty reason) and the broker answers OK. rstream 1.1.1 never
    does: ``Client.close`` stops the heartbeat task, then ``BaseClient.close`` only
    closes politely when ``is_started`` ('heartbeat_sender' in its tasks), now False;
    every one of its connections just ends with a FIN."""
    ours, theirs = runs
    assert [_normalised(f) for f in ours.sent(CloseRequest)] == [CloseRequest(0, 1, "")]
    assert [_normalised(f) for f in ours.received(CloseResponse)] == [
        CloseResponse(0, ResponseCode.OK)
    ]
    assert ours.connections[0].client[-1] == ours.sent(CloseRequest)[0]
    assert theirs.sent(CloseRequest) == []
    assert [c.client_ended for c in theirs.connections] == ["eof"] * len(theirs.connections)


@pytest.mark.peer
def test_rstream_asks_metadata_and_uses_six_connections_where_we_use_one(
    runs: tuple[Run, Run],
) -> None:
    """rstream locates the stream's leader (Metadata) before publishing and before
    subscribing, then connects again (through the load balancer); its Producer and
    Consumer open a locator for each job and close it when it holds no stream: create
    (0), leader of the publisher (1), publishing (2), sequence query and delete (3),
    consumer's locator: leader, offsets (4), subscribing (5). We use one connection."""
    ours, theirs = runs
    assert len(ours.connections) == 1 and ours.sent(MetadataRequest) == []
    assert len(theirs.connections) == 6
    assert [_normalised(f) for f in theirs.sent(MetadataRequest)] == [
        MetadataRequest(0, [ours.stream])
    ] * 2
    assert theirs.connection_of(MetadataRequest) == [1, 4]
    assert theirs.connection_of(Publish) == [2]
    assert theirs.connection_of(SubscribeRequest) == [5]


# --------------------------------------------------------------------------------------
# The broker's answers
# --------------------------------------------------------------------------------------


def _answers(result: Run) -> dict[str, Counter[tuple[str, int]]]:
    """For each request type: the kinds and response codes of the broker's answers
    (matched on the request's connection by correlation id)."""
    answers: dict[str, Counter[tuple[str, int]]] = {}
    for connection in result.connections:
        responses = {f.correlation_id: f for f in connection.server if hasattr(f, "correlation_id")}
        for request in connection.client:
            if not hasattr(request, "correlation_id"):
                continue
            answer = responses[request.correlation_id]
            if isinstance(answer, MetadataResponse):  # a code per stream, none overall
                code = answer.stream_metadata[0].response_code
            else:
                code = answer.response_code  # type: ignore[union-attr]
            kind = (type(answer).__name__, code)
            answers.setdefault(type(request).__name__, Counter())[kind] += 1
    return answers


@pytest.mark.peer
def test_the_broker_answers_both_with_the_same_kinds_and_codes(runs: tuple[Run, Run]) -> None:
    """Every request of both runs gets its response type with OK; the only request
    types that differ are rstream's Metadata and our Close. Unrequested server frames:
    Tune, PublishConfirm and Deliver for both, plus MetadataUpdate 'stream not
    available' (code 6) on rstream's consumer locator, still open when rstream deletes
    the stream; our connection had unsubscribed and deleted its publisher by then."""
    ours, theirs = runs
    mine, their = _answers(ours), _answers(theirs)
    assert set(mine) - set(their) == {"CloseRequest"}
    assert set(their) - set(mine) == {"MetadataRequest"}
    for request, kinds in mine.items():
        expected = request.replace("Request", "Response")
        assert set(kinds) == {(expected, ResponseCode.OK)}, request
        if request in their:
            assert set(their[request]) == set(kinds), request
    assert set(their["MetadataRequest"]) == {("MetadataResponse", ResponseCode.OK)}

    def unrequested(result: Run) -> list[str]:
        return sorted(
            {
                type(f).__name__
                for c in result.connections
                for f in c.server
                if not hasattr(f, "correlation_id")
            }
        )

    assert unrequested(ours) == ["Deliver", "PublishConfirm", "Tune"]
    assert unrequested(theirs) == ["Deliver", "MetadataUpdate", "PublishConfirm", "Tune"]
    assert theirs.received(MetadataUpdate) == [MetadataUpdate(6, ours.stream)]
    consumer_locator = theirs.connection_of(StoreOffset)
    assert [
        i
        for i, c in enumerate(theirs.connections)
        if any(isinstance(f, MetadataUpdate) for f in c.server)
    ] == consumer_locator
