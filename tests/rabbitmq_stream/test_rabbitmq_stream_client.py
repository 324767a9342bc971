"""The asyncio stream client (``wirestream.runtime.rabbitmq_stream.aio``) against RabbitMQ 3.10.8.

One test per behaviour, each through the public client API, for every command 3.10.8
supports (PROTOCOL.adoc of rabbitmq-server v3.10.x, deps/rabbitmq_stream/docs):
PeerProperties, SaslHandshake, SaslAuthenticate, Tune, Open, Close, Heartbeat, Create,
Delete, Metadata, MetadataUpdate, DeclarePublisher, Publish, PublishConfirm,
PublishError, QueryPublisherSequence, DeletePublisher, Subscribe, Deliver, Credit,
StoreOffset, QueryOffset, Unsubscribe, Route, Partitions. Where the proof needs the
wire, the client talks through ``FrameCapture`` (a recording proxy) and the test reads
the decoded frames; the broker's own view comes from its CLI (tests/support/rabbitmq_broker_ctl.py,
about a second per call, so used sparingly).

Without a broker on 127.0.0.1:5552 the module SKIPS with the reason (FAILS under
CI=true). What 3.10.8 was seen doing is pinned by the tests and summed up here:

* creating an existing stream with the same arguments answers STREAM_ALREADY_EXISTS
  (0x05), with other arguments PRECONDITION_FAILED (0x11);
* Metadata answers a missing stream with STREAM_DOES_NOT_EXIST, leader reference 0xFFFF
  and no replicas; QueryOffset of an unknown reference answers 0x13 (NO_OFFSET, absent
  from the 3.10 table); QueryPublisherSequence of an unknown reference answers 0;
* PublishError: the only one 3.10.8 sends is PUBLISHER_DOES_NOT_EXIST (0x12), for a
  Publish naming a publisher id the connection has not declared (revoking the user's
  write permission after DeclarePublisher does not produce one: publishes still
  confirm). A Publish that crosses the MetadataUpdate of its stream gets one too;
* deleting a stream sends MetadataUpdate code 6 (STREAM_NOT_AVAILABLE) to connections
  with a publisher or subscription on it; a re-published (deduplicated) publishing id
  is confirmed and not stored again; Route of an unbound key answers no stream.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from datetime import datetime, timezone

import pytest

from wirestream.generated.rabbitmq_stream.v1 import (
    CloseRequest,
    CloseResponse,
    CompressionType,
    CreateRequest,
    CreditRequest,
    DeletePublisherRequest,
    DeletePublisherResponse,
    Deliver,
    Heartbeat,
    MetadataUpdate,
    OffsetSpecTimestamp,
    OpenRequest,
    OpenResponse,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    Publish,
    PublishConfirm,
    PublishedMessage,
    PublishError,
    PublishingError,
    QueryOffsetResponse,
    ResponseCode,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    SimpleEntry,
    StoreOffset,
    SubEntryBatch,
    SubscribeRequest,
    Tune,
    UnsubscribeRequest,
    UnsubscribeResponse,
    frame_bytes,
)
from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rabbitmq_stream.aio import Client, Producer, connect
from wirestream.runtime.rabbitmq_stream.amqp import (
    AmqpDecodeError,
    AmqpMessage,
    Properties,
    decode_body,
    decode_message,
    encode_body,
    encode_message,
)
from wirestream.runtime.rabbitmq_stream.errors import (
    AuthenticationError,
    PreconditionFailed,
    StreamAlreadyExists,
    StreamDoesNotExist,
    StreamNotAvailable,
    VirtualHostAccessFailure,
)
from tests.support import rabbitmq_broker_ctl as ctl
from tests.support.aio_support import assert_no_tasks_left, run
from tests.support.rabbitmq_stream_capture import FrameCapture
from tests.support.rabbitmq_stream_client_support import (
    URI,
    error_of,
    fresh_stream,
    read,
    unique,
    until,
    uri,
)

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")


def published(cap: FrameCapture, publisher_id: int) -> list[PublishedMessage]:
    """Every message the client published for ``publisher_id``, in wire order."""
    return [
        message
        for frame in cap.frames_of(Publish)
        if frame.publisher_id == publisher_id
        for message in frame.published_messages
    ]


def confirmed_ids(cap: FrameCapture, publisher_id: int) -> list[int]:
    return [
        pid
        for frame in cap.frames_of(PublishConfirm, "server")
        if frame.publisher_id == publisher_id
        for pid in frame.publishing_ids
    ]


async def publish_chunks(producer: Producer, chunks: Sequence[Sequence[bytes]]) -> None:
    """Publish each group and wait for its confirms before the next: the broker's
    writer is idle when each group arrives, so each becomes one chunk (tests that rely
    on it check the Deliver frames)."""
    for bodies in chunks:
        await (await producer.send_many(bodies))


# ======================================================================================
# Handshake: PeerProperties, SaslHandshake, SaslAuthenticate, Tune, Open; Close
# ======================================================================================


def test_handshake_follows_the_authentication_sequence_and_reports_rabbitmq_3_10_8() -> None:
    """PROTOCOL.adoc, Authentication: 'Once a client is connected to the server, it
    initiates an authentication sequence': Peer Properties Exchange, SASL Handshake,
    SASL Authenticate, Tune (from the server, answered), Open. 'SaslHandshake: the
    client asks about the SASL mechanisms the server supports. It can then pick one from
    the list the server returns.' The PeerPropertiesResponse names the broker."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client:
                assert client.is_open
                assert client.server_properties["product"] == "RabbitMQ"
                assert client.server_properties["version"] == "3.10.8"
                assert client.connection_properties["advertised_port"] == "5552"
        sent = [type(frame) for frame in cap.client_frames[:5]]
        assert sent == [
            PeerPropertiesRequest,
            SaslHandshakeRequest,
            SaslAuthenticateRequest,
            Tune,
            OpenRequest,
        ]
        answered = [type(frame) for frame in cap.server_frames[:5]]
        assert answered == [
            PeerPropertiesResponse,
            SaslHandshakeResponse,
            SaslAuthenticateResponse,
            Tune,
            OpenResponse,
        ]
        [mechanisms] = cap.frames_of(SaslHandshakeResponse, "server")
        assert "PLAIN" in mechanisms.mechanisms
        [authenticate] = cap.frames_of(SaslAuthenticateRequest)
        assert authenticate.mechanism == "PLAIN"
        assert authenticate.sasl_opaque_data == b"\0guest\0guest"
        codes = [getattr(response, "response_code", None) for response in cap.server_frames[:5]]
        assert codes == [ResponseCode.OK] * 3 + [None, ResponseCode.OK]  # Tune has none
        [properties] = cap.frames_of(PeerPropertiesRequest)
        sent_properties = {p.key: p.value for p in properties.peer_properties}
        assert sent_properties["product"] == "wirestream"

    run(main())


def test_tune_settles_on_the_smaller_frame_max_and_heartbeat_of_both_sides() -> None:
    """PROTOCOL.adoc, Authentication: 'Tune: the server sends a Tune frame to suggest
    some settings (max frame size, heartbeat). The client answers with a Tune frame with
    the settings he agrees on, possibly adjusted from the server's suggestions.' We
    propose frame_max 65536 and heartbeat 7, below 3.10.8's 1048576 and 60."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port), frame_max=65536, heartbeat=7) as client:
                assert (client.frame_max, client.heartbeat) == (65536, 7)
        assert cap.frames_of(Tune, "server") == [Tune(frame_max=1_048_576, heartbeat=60)]
        assert cap.frames_of(Tune) == [Tune(frame_max=65536, heartbeat=7)]

    run(main())


def test_tune_with_zero_proposals_takes_the_brokers_values() -> None:
    """PROTOCOL.adoc, Tune: 'FrameMax => uint32 // in bytes, 0 means no limit',
    'Heartbeat => uint32 // in seconds, 0 means no heartbeat'. Proposing 0 (no limit of
    our own) leaves the broker's values: the minimum where 0 is unbounded."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port), frame_max=0, heartbeat=0) as client:
                assert (client.frame_max, client.heartbeat) == (1_048_576, 60)
        assert cap.frames_of(Tune) == [Tune(frame_max=1_048_576, heartbeat=60)]

    run(main())


def test_connection_name_and_client_properties_are_listed_by_the_broker() -> None:
    """PROTOCOL.adoc, PeerProperties: 'PeerPropertiesRequest => Key Version
    PeerProperties'; the broker keeps them as the connection's client properties
    (``rabbitmq-streams list_stream_connections client_properties``)."""
    name = unique("ws-client-named")

    async def main() -> None:
        async with await connect(URI, connection_name=name):
            rows = await asyncio.to_thread(ctl.list_stream_connections)
        [row] = [r for r in rows if ctl.client_property(r, "connection_name") == name]
        assert ctl.client_property(row, "product") == "wirestream"
        assert (row["user"], row["vhost"]) == ("guest", "/")

    run(main())


def test_wrong_password_raises_authentication_error_and_leaves_no_task() -> None:
    """PROTOCOL.adoc, Response Codes: 'Authentication failure | 0x08'. connect() raises
    ``AuthenticationError`` (a wrong password is not retried) and leaves nothing running
    behind it: no reader, no recovery dialing the broker again."""

    async def main() -> None:
        error = await error_of(connect(uri(password="not-the-password"), timeout=5))
        assert isinstance(error, AuthenticationError), repr(error)
        assert error.code == ResponseCode.AUTHENTICATION_FAILURE
        assert re.search(r"authentication.fail", str(error), re.IGNORECASE), str(error)
        assert_no_tasks_left()

    run(main())


def test_unknown_virtual_host_raises_virtual_host_access_failure_and_leaves_no_task() -> None:
    """PROTOCOL.adoc, Authentication: 'Open: the client sends an Open frame to pick a
    virtual host to connect to. The server answers whether it accepts the access or
    not.' Refused: 'Virtual host access failure | 0x0c' -> ``VirtualHostAccessFailure``."""

    async def main() -> None:
        error = await error_of(connect(uri(vhost=unique("ws-no-such-vhost")), timeout=5))
        assert isinstance(error, VirtualHostAccessFailure), repr(error)
        assert error.code == ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE
        assert_no_tasks_left()

    run(main())


def test_close_sends_close_request_and_waits_for_the_close_response() -> None:
    """PROTOCOL.adoc, Commands: 'Close | Client & Server | 0x0016 | Yes' (expects a
    response): 'CloseRequest => Key Version CorrelationId ClosingCode ClosingReason',
    answered by 'CloseResponse => Key Version CorrelationId ResponseCode'."""

    async def main() -> None:
        async with FrameCapture() as cap:
            client = await connect(uri(cap.port))
            await client.close()
            assert client.closed and not client.is_open
            await cap.wait_for(lambda: cap.connections[0].server_ended is not None)
        [close] = cap.frames_of(CloseRequest)
        assert cap.client_frames[-1] == close
        assert close.closing_code == ResponseCode.OK
        assert cap.frames_of(CloseResponse, "server") == [
            CloseResponse(correlation_id=close.correlation_id, response_code=ResponseCode.OK)
        ]
        assert cap.frames_of(CloseRequest, "server") == []

    run(main())


# ======================================================================================
# Heartbeat
# ======================================================================================


def test_heartbeats_flow_both_ways_on_an_idle_connection_that_stays_usable() -> None:
    """PROTOCOL.adoc, Commands: 'Heartbeat | Client & Server | 0x0017 | No';
    Tune: 'Heartbeat => uint32 // in seconds'. With heartbeat=1 and nothing to say,
    both sides send Heartbeat frames and neither gives the other up."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port), heartbeat=1) as client:
                assert client.heartbeat == 1
                opened = len(cap.client_frames)
                await cap.wait_for(
                    lambda: len(cap.frames_of(Heartbeat)) >= 3
                    and len(cap.frames_of(Heartbeat, "server")) >= 3,
                    timeout=8.0,
                )
                idle = cap.client_frames[opened:]
                assert idle and all(isinstance(frame, Heartbeat) for frame in idle)
                assert await client.stream_exists(unique("ws-client-none")) is False
                assert client.connections == 1 and client.is_open

    run(main())


# ======================================================================================
# Create, Delete, Metadata
# ======================================================================================


def test_create_with_arguments_makes_a_stream_with_those_arguments() -> None:
    """PROTOCOL.adoc, Create: 'Create => Key Version CorrelationId Stream Arguments',
    'Argument => Key Value' (strings). The broker applies them as the queue's x-
    arguments, and Metadata then lists the stream with its leader."""
    arguments: dict[str, str | int] = {
        "max-length-bytes": 20_000_000,
        "max-age": "2h",
        "stream-max-segment-size-bytes": 1_000_000,
    }

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client:
                async with fresh_stream(client, arguments) as stream:
                    metadata = await client.metadata(stream)
                    listing = await asyncio.to_thread(
                        ctl.run_tool,
                        "rabbitmqctl",
                        "list_queues",
                        "name",
                        "arguments",
                        "--formatter",
                        "json",
                        "--silent",
                    )
        [create] = cap.frames_of(CreateRequest)
        assert {a.key: a.value for a in create.arguments} == {
            "max-length-bytes": "20000000",
            "max-age": "2h",
            "stream-max-segment-size-bytes": "1000000",
        }
        [meta] = metadata.streams
        assert (meta.stream, meta.response_code) == (stream, ResponseCode.OK)
        assert meta.leader_reference in {broker.reference for broker in metadata.brokers}
        [queue] = [q for q in json.loads(listing) if q["name"] == stream]
        assert {key: value for key, _type, value in queue["arguments"]} == {
            "x-queue-type": "stream",
            "x-max-length-bytes": 20_000_000,
            "x-max-age": "2h",
            "x-stream-max-segment-size-bytes": 1_000_000,
        }

    run(main())


def test_creating_an_existing_stream_raises_stream_already_exists_unless_exist_ok() -> None:
    """PROTOCOL.adoc, Response Codes: 'Stream already exists | 0x05' (3.10.8, same
    arguments); ``exist_ok=True`` accepts it."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            error = await error_of(client.create_stream(stream))
            assert isinstance(error, StreamAlreadyExists), repr(error)
            assert error.code == ResponseCode.STREAM_ALREADY_EXISTS
            await client.create_stream(stream, exist_ok=True)
            assert await client.stream_exists(stream)

    run(main())


def test_creating_an_existing_stream_with_other_arguments_is_precondition_failed() -> None:
    """3.10.8: a Create naming an existing stream with other arguments answers
    'Precondition failed | 0x11', not 'Stream already exists', so ``exist_ok`` does
    not hide it (the stream does not have what was asked)."""

    async def main() -> None:
        async with await connect(URI) as client:
            async with fresh_stream(client, {"max-age": "1h"}) as stream:
                error = await error_of(
                    client.create_stream(stream, {"max-age": "2h"}, exist_ok=True)
                )
                assert isinstance(error, PreconditionFailed), repr(error)
                assert error.code == ResponseCode.PRECONDITION_FAILED

    run(main())


def test_delete_removes_the_stream() -> None:
    """PROTOCOL.adoc, Delete: 'Delete => Key Version CorrelationId Stream'."""

    async def main() -> None:
        async with await connect(URI) as client:
            stream = unique("ws-client-delete")
            await client.create_stream(stream)
            assert await client.stream_exists(stream)
            await client.delete_stream(stream)
            assert not await client.stream_exists(stream)

    run(main())


def test_deleting_a_missing_stream_raises_stream_does_not_exist_unless_missing_ok() -> None:
    """PROTOCOL.adoc, Response Codes: 'Stream does not exist | 0x02'."""

    async def main() -> None:
        async with await connect(URI) as client:
            missing = unique("ws-client-missing")
            error = await error_of(client.delete_stream(missing))
            assert isinstance(error, StreamDoesNotExist), repr(error)
            assert error.code == ResponseCode.STREAM_DOES_NOT_EXIST
            await client.delete_stream(missing, missing_ok=True)
            assert client.is_open

    run(main())


def test_metadata_of_several_streams_answers_each_with_its_code_and_lists_the_brokers() -> None:
    """PROTOCOL.adoc, Metadata: 'MetadataResponse => Key Version CorrelationId [Broker]
    [StreamMetadata]', 'Broker => Reference Host Port', 'StreamMetadata => StreamName
    ResponseCode LeaderReference ReplicasReferences': one code per stream asked, a
    missing one included."""

    async def main() -> None:
        async with await connect(URI) as client:
            async with fresh_stream(client) as one, fresh_stream(client) as two:
                missing = unique("ws-client-missing")
                metadata = await client.metadata(one, missing, two)
                assert await client.stream_exists(one) and await client.stream_exists(two)
                assert not await client.stream_exists(missing)
                advertised = client.connection_properties
        by_name = {meta.stream: meta for meta in metadata.streams}
        assert set(by_name) == {one, two, missing}
        brokers = {broker.reference: broker for broker in metadata.brokers}
        for name in (one, two):
            assert by_name[name].response_code == ResponseCode.OK
            leader = brokers[by_name[name].leader_reference]
            assert (leader.host, str(leader.port)) == (
                advertised["advertised_host"],
                advertised["advertised_port"],
            )
        assert by_name[missing].response_code == ResponseCode.STREAM_DOES_NOT_EXIST
        assert by_name[missing].leader_reference == 0xFFFF
        assert by_name[missing].replicas_references == []

    run(main())


# ======================================================================================
# Producer: DeclarePublisher, Publish, PublishConfirm, PublishError,
# QueryPublisherSequence, DeletePublisher
# ======================================================================================


def test_send_returns_a_future_resolved_with_the_publishing_id_on_confirm() -> None:
    """PROTOCOL.adoc, Publish: 'PublishedMessage => PublishingId Message';
    PublishConfirm: 'PublishingIds => [uint64] // to correlate with the messages sent'."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                future = await producer.send(b"one")
                assert isinstance(future, asyncio.Future) and not future.done()
                assert await future == 1
                assert published(cap, producer.publisher_id) == [
                    PublishedMessage(1, SimpleEntry(encode_body(b"one")))
                ]
                assert confirmed_ids(cap, producer.publisher_id) == [1]

    run(main())


def test_send_wait_returns_once_the_broker_confirmed() -> None:
    """PROTOCOL.adoc, PublishConfirm (Server, 'Expects response? No'): the publishing
    ids the broker stored."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                assert await producer.send_wait(b"a") == 1
                assert confirmed_ids(cap, producer.publisher_id) == [1]
                assert await producer.send_wait(b"b") == 2
                assert confirmed_ids(cap, producer.publisher_id) == [1, 2]
                assert producer.unconfirmed == 0

    run(main())


def test_send_many_is_awaitable_and_gives_each_message_its_own_publishing_id() -> None:
    """PROTOCOL.adoc, Publish: 'PublishedMessages => [PublishedMessage]', one
    PublishingId each; every one is confirmed, and the stream holds them in order."""

    async def main() -> None:
        bodies = [b"many %d" % i for i in range(20)]
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                confirmation = await producer.send_many(bodies)
                assert confirmation.publishing_ids == list(range(1, 21))
                await confirmation
                assert (confirmation.confirmed, confirmation.errors) == (20, {})
                assert sorted(confirmed_ids(cap, producer.publisher_id)) == list(range(1, 21))
                async with await client.consumer(stream, "first") as consumer:
                    messages = await read(consumer, 20)
        assert [m.body for m in messages] == bodies
        assert [m.offset for m in messages] == list(range(20))

    run(main())


def test_next_run_hands_over_consecutive_records_a_chunk_at_a_time_mixed_with_async_for() -> None:
    """PROTOCOL.adoc, Deliver: a chunk's records in order.  ``next_run`` gives them as
    runs (first offset, chunk timestamp, records) of at most ``limit``, never across a
    chunk; ``async for`` continues where a run stopped, and the reverse."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            for first in range(0, 30, 10):  # three send_many: (usually) three chunks
                await (await producer.send_many([b"r%d" % i for i in range(first, first + 10)]))
            async with await client.consumer(stream, 3) as consumer:  # mid-chunk start
                runs = [await consumer.next_run(4)]
                singles = await read(consumer, 2)
                while sum(len(run[2]) for run in runs) + 2 < 27:
                    runs.append(await consumer.next_run(1000))
                with pytest.raises(ValueError):
                    await consumer.next_run(0)
        offsets: list[int] = []
        for first, timestamp, records in runs:
            assert timestamp > 0 and 0 < len(records)
            offsets.extend(range(first, first + len(records)))
            assert [decode_body(r) for r in records] == [
                b"r%d" % o for o in offsets[-len(records) :]
            ]
        assert runs[0][0] == 3 and len(runs[0][2]) <= 4
        assert [m.offset for m in singles] == [runs[0][0] + len(runs[0][2]) + i for i in (0, 1)]
        assert sorted(offsets + [m.offset for m in singles]) == list(range(3, 30))


def test_consumer_until_gives_no_credit_for_chunks_past_the_end_of_a_range_read() -> None:
    """Deliver is by whole chunk and credit keeps chunks in flight (PROTOCOL.adoc,
    Credit): a reader of [start, until) stops giving credit once the chunks on their way
    reach ``until``; without it the subscription pulls ``credit`` chunks more."""

    async def beyond(stream: str, until: int | None) -> int:
        async with await connect(URI) as client:
            async with await client.consumer(stream, 0, credit=10, until=until) as consumer:
                read = 0
                while read < 5_000:
                    read += len((await consumer.next_run(10_000))[2])
                await asyncio.sleep(0.5)  # what is in flight arrives
                return sum(len(run) for _, _, run in consumer._chunks) + read - 5_000

    async def main() -> tuple[int, int]:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            for first in range(0, 30_000, 1_000):  # a confirmed batch at a time: chunks
                await (await producer.send_many([b"%d" % i for i in range(first, first + 1_000)]))
            return await beyond(stream, 5_000), await beyond(stream, None)

    with_until, without = run(main())
    # How far past the end depends on how the broker cut the chunks (under load it
    # writes bigger ones: 1,600 records past it on a quiet box, 3,000 on a busy one), so
    # the rule is measured against the same read without ``until``.
    assert without >= 5_000 and with_until <= without // 2, (with_until, without)


def test_send_many_with_a_first_publishing_id_numbers_the_rest_after_it_across_windows() -> None:
    """``send_many(publishing_id=...)``: the given id, then one by one, also when the
    window (max_in_flight) splits the batch; an id not above the last one is refused
    before anything is queued (the Spark sink numbers rows this way)."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream, reference="many-ids", max_in_flight=7)
                first = await producer.send_many([b"a%d" % i for i in range(20)], publishing_id=100)
                assert first.publishing_ids == list(range(100, 120))
                second = await producer.send_many([b"b"] * 3, publishing_id=(1 << 32) | 1)
                await first
                await second
                assert second.publishing_ids == [(1 << 32) | 1, (1 << 32) | 2, (1 << 32) | 3]
                with pytest.raises(LocalProtocolError, match="does not follow"):
                    await producer.send_many([b"c"], publishing_id=(1 << 32) | 3)
                assert producer.unconfirmed == 0
                assert sorted(confirmed_ids(cap, producer.publisher_id)) == (
                    first.publishing_ids + second.publishing_ids
                )
                stored = await client.query_publisher_sequence("many-ids", stream)
                assert stored == (1 << 32) | 3

    run(main())


def test_send_batch_none_and_gzip_take_one_publishing_id_and_arrive_as_single_messages() -> None:
    """PROTOCOL.adoc, Deliver: 'NB: See the Osiris project for details on the
    structure of messages': a sub-entry batch (uncompressed or gzip) is one entry with
    one publishing id; its records are delivered as separate messages, in order."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                plain = await producer.send_batch([b"a", b"b", b"c"], compression="none")
                zipped = await producer.send_batch([b"d", b"e"], compression="gzip")
                assert (await plain, await zipped) == (1, 2)
                async with await client.consumer(stream, "first") as consumer:
                    messages = await read(consumer, 5)
        entries = published(cap, producer.publisher_id)
        assert [m.publishing_id for m in entries] == [1, 2]
        first, second = entries[0].entry, entries[1].entry
        assert isinstance(first, SubEntryBatch) and isinstance(second, SubEntryBatch)
        assert (first.compression, first.num_records) == (CompressionType.NONE, 3)
        assert (second.compression, second.num_records) == (CompressionType.GZIP, 2)
        assert [m.body for m in messages] == [b"a", b"b", b"c", b"d", b"e"]
        assert [m.offset for m in messages] == [0, 1, 2, 3, 4]

    run(main())


def test_publishing_ids_increase_per_publisher() -> None:
    """PROTOCOL.adoc, DeclarePublisher: 'PublisherId => uint8'; Publish: 'PublishingId
    => uint64'. Two publishers on one connection count their ids independently."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                one = await client.producer(stream)
                two = await client.producer(stream)
                assert one.publisher_id != two.publisher_id
                for body in (b"1a", b"1b", b"1c"):
                    await one.send_wait(body)
                for body in (b"2a", b"2b"):
                    await two.send_wait(body)
                assert await one.send_wait(b"1d") == 4
        assert [m.publishing_id for m in published(cap, one.publisher_id)] == [1, 2, 3, 4]
        assert [m.publishing_id for m in published(cap, two.publisher_id)] == [1, 2]
        assert confirmed_ids(cap, one.publisher_id) == [1, 2, 3, 4]
        assert confirmed_ids(cap, two.publisher_id) == [1, 2]

    run(main())


def test_explicit_publishing_ids_go_out_as_given_and_must_increase() -> None:
    """PROTOCOL.adoc, Publish: 'PublishingId => uint64' is the client's to choose; the
    client keeps them increasing (a lower one is refused before anything is sent)."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                assert await producer.send_wait(b"ten", publishing_id=10) == 10
                assert await producer.send_wait(b"next") == 11
                assert await producer.send_wait(b"twenty", publishing_id=20) == 20
                error = await error_of(producer.send(b"fifteen", publishing_id=15))
                assert isinstance(error, LocalProtocolError), repr(error)
        assert [m.publishing_id for m in published(cap, producer.publisher_id)] == [10, 11, 20]
        assert confirmed_ids(cap, producer.publisher_id) == [10, 11, 20]

    run(main())


def test_max_in_flight_holds_the_sixth_send_until_a_confirm_frees_the_window() -> None:
    """PROTOCOL.adoc, PublishConfirm: 'PublishingIds => [uint64] // to correlate with
    the messages sent'. With max_in_flight=5, five sends go out; the sixth waits while
    the broker cannot confirm anything (the proxy holds our bytes), and goes out only
    after confirms arrived."""

    async def main() -> None:
        order: list[str] = []
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream, max_in_flight=5)
                to_broker = cap.connections[0].client_side
                assert to_broker is not None and to_broker.transport is not None
                to_broker.transport.pause_reading()  # nothing reaches the broker
                futures = [await producer.send(b"in flight %d" % i) for i in range(5)]
                for future in futures:
                    future.add_done_callback(lambda f: order.append(f"confirm {f.result()}"))
                sixth = asyncio.create_task(producer.send(b"sixth"))
                sixth.add_done_callback(lambda _: order.append("sixth sent"))
                await client.flush()
                await until(lambda: client.engine.unconfirmed(producer.publisher_id) == 5)
                for _ in range(20):  # many loop turns: nothing can free the window
                    await asyncio.sleep(0)
                assert not sixth.done()
                assert producer.unconfirmed == 5
                assert client.engine.publish_capacity(producer.publisher_id) == 0
                to_broker.transport.resume_reading()
                last = await sixth
                assert await last == 6
                assert [await f for f in futures] == [1, 2, 3, 4, 5]
        assert order.index("sixth sent") > order.index("confirm 1")
        frames = [f for f in cap.frames_of(Publish) if f.publisher_id == producer.publisher_id]
        ids = [[m.publishing_id for m in frame.published_messages] for frame in frames]
        assert sum(ids, []) == [1, 2, 3, 4, 5, 6]
        assert ids[-1] == [6]  # its own frame, written after the window opened

    run(main())


def test_publish_error_for_an_undeclared_publisher_is_dropped_and_the_connection_goes_on() -> None:
    """PROTOCOL.adoc, PublishError: 'PublishError => Key Version [PublishingError]',
    'PublishingError => PublishingId Code'. 3.10.8 answers a Publish naming a publisher
    id the connection never declared with 'Publisher does not exist | 0x12'. Written
    raw on the client's transport for publisher 7 with the same publishing id as our
    producer's next message: the error is routed by publisher id (nobody's), the
    producer's own message is confirmed, and the connection stays open."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                assert producer.publisher_id != 7
                assert await producer.send_wait(b"first") == 1
                ignored = client.engine.ignored_frames
                stray = Publish(7, [PublishedMessage(2, SimpleEntry(encode_body(b"stray")))])
                client._driver.transport.write(frame_bytes(stray))  # type: ignore[union-attr]
                future = await producer.send(b"second")
                await cap.wait_for(lambda: bool(cap.frames_of(PublishError, "server")))
                assert await future == 2
                assert cap.frames_of(PublishError, "server") == [
                    PublishError(7, [PublishingError(2, ResponseCode.PUBLISHER_DOES_NOT_EXIST)])
                ]
                await until(lambda: client.engine.ignored_frames == ignored + 1)
                assert await producer.send_wait(b"third") == 3
                assert client.is_open and client.connections == 1
                async with await client.consumer(stream, "first") as consumer:
                    messages = await read(consumer, 3)
        assert [m.body for m in messages] == [b"first", b"second", b"third"]

    run(main())


def test_producer_close_flushes_then_deletes_the_publisher() -> None:
    """PROTOCOL.adoc, DeletePublisher: 'DeletePublisherRequest => Key Version
    CorrelationId PublisherId', answered by 'DeletePublisherResponse => ... ResponseCode'.
    Close waits for the outstanding confirm first; the producer is unusable after."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                future = await producer.send(b"last words")
                await producer.close()
                assert future.done() and future.result() == 1
                assert client.producers == {}
                error = await error_of(producer.send(b"too late"))
                assert isinstance(error, LocalProtocolError), repr(error)
        [delete] = cap.frames_of(DeletePublisherRequest)
        assert delete.publisher_id == producer.publisher_id
        assert cap.frames_of(DeletePublisherResponse, "server") == [
            DeletePublisherResponse(delete.correlation_id, ResponseCode.OK)
        ]

    run(main())


def test_query_publisher_sequence_gives_the_last_stored_publishing_id_of_a_reference() -> None:
    """PROTOCOL.adoc, QueryPublisherSequence: 'QueryPublisherRequest => Key Version
    CorrelationId PublisherReference Stream', 'QueryPublisherResponse => ... Sequence'.
    An unknown reference answers 0 (3.10.8)."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            reference = unique("ws-client-ref")
            producer = await client.producer(stream, reference=reference)
            await (await producer.send_many([b"seq %d" % i for i in range(7)]))
            await producer.close()
            assert await client.query_publisher_sequence(reference, stream) == 7
            assert await client.query_publisher_sequence(unique("ws-nobody"), stream) == 0

    run(main())


def test_a_producer_with_a_known_reference_continues_after_the_stored_sequence() -> None:
    """PROTOCOL.adoc, DeclarePublisher: 'PublisherReference => string // max 256
    characters'. A new producer with the reference of an earlier one starts its ids
    after what the broker stored for it (QueryPublisherSequence)."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            reference = unique("ws-client-ref")
            first = await client.producer(stream, reference=reference)
            await (await first.send_many([b"a", b"b", b"c"]))
            await first.close()
            second = await client.producer(stream, reference=reference)
            assert await second.send_wait(b"d") == 4
            async with await client.consumer(stream, "first") as consumer:
                messages = await read(consumer, 4)
        assert [m.body for m in messages] == [b"a", b"b", b"c", b"d"]

    run(main())


def test_republishing_stored_ids_under_the_same_reference_stores_nothing_and_confirms() -> None:
    """Deduplication: the broker keeps the last publishing id stored per publisher
    reference and drops (but confirms) a message whose id is not above it; 3.10.8 does
    so. A second producer with the same reference re-publishing ids 3..5 with explicit
    ids (an application re-sending after a crash) gets them confirmed, and the stream
    holds each message once."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            reference = unique("ws-client-dedup")
            first = await client.producer(stream, reference=reference)
            await (await first.send_many([b"m1", b"m2", b"m3", b"m4", b"m5"]))
            await first.close()
            second = await client.producer(stream, reference=reference)
            futures = [await second.send(b"again %d" % i, publishing_id=i) for i in (3, 4, 5)]
            assert await asyncio.gather(*futures) == [3, 4, 5]
            assert await second.send_wait(b"m6", publishing_id=6) == 6
            assert await client.query_publisher_sequence(reference, stream) == 6
            async with await client.consumer(stream, "first") as consumer:
                messages = await read(consumer, 6)
        assert [m.body for m in messages] == [b"m1", b"m2", b"m3", b"m4", b"m5", b"m6"]

    run(main())


# ======================================================================================
# Consumer: Subscribe (offset specifications), Deliver, Credit, StoreOffset,
# QueryOffset, Unsubscribe
# ======================================================================================


def test_offset_first_starts_at_the_first_message() -> None:
    """PROTOCOL.adoc, Subscribe: 'OffsetType => uint16 // 1 (first), 2 (last), 3 (next),
    4 (offset), 5 (timestamp)': first."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            await publish_chunks(producer, [[b"a0", b"a1"], [b"b0", b"b1", b"b2"]])
            async with await client.consumer(stream, "first") as consumer:
                messages = await read(consumer, 5)
        assert [(m.offset, m.body) for m in messages] == [
            (0, b"a0"),
            (1, b"a1"),
            (2, b"b0"),
            (3, b"b1"),
            (4, b"b2"),
        ]

    run(main())


def test_offset_last_starts_at_the_last_chunk() -> None:
    """PROTOCOL.adoc, Subscribe: '2 (last)': delivery starts with the last chunk of the
    stream (its first message), earlier chunks are not sent."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                await publish_chunks(
                    producer, [[b"a0", b"a1", b"a2"], [b"b0", b"b1", b"b2", b"b3"]]
                )
                async with await client.consumer(stream, "last") as consumer:
                    messages = await read(consumer, 4)
        assert [(m.offset, m.body) for m in messages] == [
            (3, b"b0"),
            (4, b"b1"),
            (5, b"b2"),
            (6, b"b3"),
        ]
        delivers = cap.frames_of(Deliver, "server")
        assert [d.chunk.chunk_first_offset for d in delivers] == [3]

    run(main())


def test_offset_next_delivers_only_messages_published_after_subscribing() -> None:
    """PROTOCOL.adoc, Subscribe: '3 (next)': what is stored already is skipped."""

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            await publish_chunks(producer, [[b"old 0", b"old 1", b"old 2"]])
            async with await client.consumer(stream, "next") as consumer:
                await publish_chunks(producer, [[b"new 0", b"new 1"]])
                messages = await read(consumer, 2)
        assert [(m.offset, m.body) for m in messages] == [(3, b"new 0"), (4, b"new 1")]

    run(main())


def test_offset_in_the_middle_of_a_chunk_starts_exactly_at_that_offset() -> None:
    """PROTOCOL.adoc, Subscribe: '4 (offset)', 'Offset => uint64 (for offset)'. The
    broker delivers whole chunks ('OsirisChunk => ... ChunkFirstOffset ...'): the chunk
    holding offset 8 starts at 5, and the client drops 5..7 so the first message is 8."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                chunks = [[b"a%d" % i for i in range(5)], [b"b%d" % i for i in range(10)]]
                await publish_chunks(producer, chunks)
                async with await client.consumer(stream, 8) as consumer:
                    messages = await read(consumer, 7)
        assert [m.offset for m in messages] == list(range(8, 15))
        assert [m.body for m in messages] == [b"b%d" % i for i in range(3, 10)]
        [deliver] = cap.frames_of(Deliver, "server")
        assert (deliver.chunk.chunk_first_offset, deliver.chunk.num_records) == (5, 10)

    run(main())


def test_timestamp_offset_starts_at_the_first_chunk_written_after_that_time() -> None:
    """PROTOCOL.adoc, Subscribe: '5 (timestamp)', 'Offset => ... int64 (for
    timestamp)'; Deliver: 'Timestamp => int64 // in milliseconds, since epoch'. A
    datetime between two publish batches starts at the second batch's chunk."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                await publish_chunks(producer, [[b"before 0", b"before 1", b"before 2"]])
                await asyncio.sleep(0.005)  # the clock moves on: distinct milliseconds
                between = datetime.now(timezone.utc)
                await asyncio.sleep(0.005)
                await publish_chunks(producer, [[b"after 0", b"after 1"]])
                async with await client.consumer(stream, "first") as everything:
                    await read(everything, 5)
                async with await client.consumer(stream, between) as consumer:
                    messages = await read(consumer, 2)
        mark = int(between.timestamp() * 1000)
        specs = [f.offset_specification for f in cap.frames_of(SubscribeRequest)]
        assert specs[-1] == OffsetSpecTimestamp(mark)
        before, after = cap.frames_of(Deliver, "server")[:2]
        assert before.chunk.timestamp < mark <= after.chunk.timestamp  # the premise
        assert [(m.offset, m.body) for m in messages] == [(3, b"after 0"), (4, b"after 1")]
        assert messages[0].timestamp == after.chunk.timestamp

    run(main())


def test_credit_bounds_what_an_idle_consumer_holds_and_is_granted_as_it_reads() -> None:
    """PROTOCOL.adoc, Subscribe: 'Credit => uint16'; Credit: 'Credit => uint16 // the
    number of chunks that can be sent'. A consumer with credit=1 and max_buffered=10
    that is not read stops granting once 10 messages wait: the broker holds the rest
    (no credit left), and Credit frames go out only as the application reads, so it
    never holds more than max_buffered plus one chunk.

    The messages are published 5 at a time, each batch confirmed before the next, so the
    broker mostly writes chunks of 5; under load it may cut one batch in two, so the
    checks count in chunks as delivered: one grant per chunk that arrived while fewer
    than 10 messages waited, none once 10 wait."""
    chunk = 5
    chunks = 8

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                await publish_chunks(
                    producer, [[b"%d.%d" % (c, i) for i in range(chunk)] for c in range(chunks)]
                )
                consumer = await client.consumer(stream, "first", credit=1, max_buffered=10)
                sid = consumer.subscription_id
                await until(lambda: consumer.buffered >= 10)
                await client.metadata(stream)  # a round trip: whatever was sent has arrived
                assert client.engine.credit_left(sid) == 0  # the broker may send nothing
                delivered = len(cap.frames_of(Deliver, "server"))
                # granted on each chunk but the one that filled the buffer
                assert len(cap.frames_of(CreditRequest)) == delivered - 1
                assert consumer.buffered == sum(
                    d.chunk.num_records for d in cap.frames_of(Deliver, "server")
                )
                held = [consumer.buffered]
                received = [await anext(consumer)]  # reading frees room: one Credit
                await cap.wait_for(lambda: len(cap.frames_of(CreditRequest)) == delivered)
                await until(lambda: len(cap.frames_of(Deliver, "server")) == delivered + 1)
                await client.metadata(stream)
                assert client.engine.credit_left(sid) == 0
                while len(received) < chunk * chunks:
                    held.append(consumer.buffered)
                    received.append(await anext(consumer))
                delivers = cap.frames_of(Deliver, "server")
                await cap.wait_for(lambda: len(cap.frames_of(CreditRequest)) >= len(delivers) - 1)
                await consumer.close()
        largest = max(d.chunk.num_records for d in delivers)
        assert max(held) <= 10 + largest
        assert [m.offset for m in received] == list(range(chunk * chunks))
        assert sum(d.chunk.num_records for d in delivers) == chunk * chunks
        [subscribe] = cap.frames_of(SubscribeRequest)
        assert subscribe.credit == 1
        assert all(f.credit == 1 for f in cap.frames_of(CreditRequest))

    run(main())


def test_a_chunk_arriving_with_the_subscribe_response_still_gives_its_credit_back() -> None:
    """PROTOCOL.adoc, Credit: 'Credit => uint16 // the number of chunks that can be
    sent'. 3.10.8 sends the first chunk right behind the SubscribeResponse; when both
    reach the client in one read (here: the proxy holds the broker's bytes until the
    broker reports that chunk sent), that chunk's credit must still be given back, or a
    consumer with credit=1 stalls after its first chunk."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                await publish_chunks(
                    producer, [[b"%d.%d" % (c, i) for i in range(5)] for c in range(3)]
                )
                from_broker = cap.connections[0].server_side
                assert from_broker is not None and from_broker.transport is not None
                from_broker.transport.pause_reading()
                subscribing = asyncio.create_task(
                    client.consumer(stream, "first", credit=1, max_buffered=100)
                )
                await cap.wait_for(lambda: bool(cap.frames_of(SubscribeRequest)))
                rows = await asyncio.to_thread(ctl.list_stream_consumers)
                [row] = [r for r in rows if r["stream"] == stream]
                assert row["credits"] == 0  # the premise: the first chunk is on its way
                from_broker.transport.resume_reading()
                consumer = await subscribing
                messages = await read(consumer, 15, timeout=5.0)
                await consumer.close()
        assert [m.offset for m in messages] == list(range(15))

    run(main())


def test_store_offset_then_query_offset_returns_it_and_an_unknown_reference_has_none() -> None:
    """PROTOCOL.adoc, StoreOffset: 'StoreOffset => Key Version Reference Stream Offset'
    ('Expects response? No'); QueryOffset: 'QueryOffsetResponse => Key Version
    CorrelationId ResponseCode Offset'. 3.10.8 answers an unknown reference with code
    0x13 (no offset): ``None``."""

    async def main() -> None:
        reference = unique("ws-client-tracking")
        nobody = unique("ws-client-nobody")
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                await publish_chunks(producer, [[b"t%d" % i for i in range(6)]])
                consumer = await client.consumer(stream, "first", reference=reference)
                await read(consumer, 5)
                consumer.store_offset()  # the last message read: offset 4
                assert await client.query_offset(reference, stream) == 4
                client.store_offset(reference, stream, 5)
                assert await client.query_offset(reference, stream) == 5
                assert await client.query_offset(nobody, stream) is None
                await consumer.close()
        assert cap.frames_of(StoreOffset) == [
            StoreOffset(reference, stream, 4),
            StoreOffset(reference, stream, 5),
        ]
        codes = [f.response_code for f in cap.frames_of(QueryOffsetResponse, "server")]
        assert codes == [ResponseCode.OK, ResponseCode.OK, ResponseCode.NO_OFFSET]

    run(main())


def test_consumer_close_unsubscribes_and_the_broker_forgets_the_consumer() -> None:
    """PROTOCOL.adoc, Unsubscribe: 'Unsubscribe => Key Version CorrelationId
    SubscriptionId' (expects a response); afterwards ``list_stream_consumers`` no
    longer shows the subscription."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                consumer = await client.consumer(stream, "first")
                before = await asyncio.to_thread(ctl.list_stream_consumers)
                await consumer.close()
                after = await asyncio.to_thread(ctl.list_stream_consumers)
                assert client.consumers == {}
                over = await error_of(anext(consumer))
                assert isinstance(over, StopAsyncIteration), repr(over)  # iteration is over
        assert [c["subscription_id"] for c in before if c["stream"] == stream] == [
            consumer.subscription_id
        ]
        assert [c for c in after if c["stream"] == stream] == []
        [unsubscribe] = cap.frames_of(UnsubscribeRequest)
        assert unsubscribe.subscription_id == consumer.subscription_id
        assert cap.frames_of(UnsubscribeResponse, "server") == [
            UnsubscribeResponse(unsubscribe.correlation_id, ResponseCode.OK)
        ]

    run(main())


def test_subscribing_to_a_missing_stream_raises_stream_does_not_exist_naming_it() -> None:
    """PROTOCOL.adoc, Response Codes: 'Stream does not exist | 0x02'. The error says
    which stream (a bare code does not tell the application what to fix), nothing of
    the subscription is left, and the connection goes on."""

    async def main() -> None:
        async with await connect(URI) as client:
            missing = unique("ws-client-missing")
            error = await error_of(client.consumer(missing, "first"))
            assert isinstance(error, StreamDoesNotExist), repr(error)
            assert client.consumers == {}
            assert client.is_open and not await client.stream_exists(missing)
            assert missing in str(error), str(error)

    run(main())


def test_deleting_the_stream_ends_the_consumer_and_fails_the_producer() -> None:
    """PROTOCOL.adoc, MetadataUpdate: 'MetadataInfo => Code Stream', 'Code => uint16 //
    code to identify the information', 'Stream => string // the stream implied'. 3.10.8
    sends code 6 ('Stream not available') when another connection deletes the stream:
    the consumer hands over what it already received, then its iteration raises
    ``StreamNotAvailable``; the producer's next sends and the send still in flight fail
    with ``StreamNotAvailable``; a Publish that crossed the update draws a PublishError
    (0x12) that is dropped; the connection stays open."""

    async def main() -> None:
        async with FrameCapture() as cap, await connect(URI) as admin:
            async with await connect(uri(cap.port)) as client:
                stream = unique("ws-client-doomed")
                await admin.create_stream(stream)
                producer = await client.producer(stream)
                consumer = await client.consumer(stream, "first")
                await publish_chunks(producer, [[b"kept 0", b"kept 1", b"kept 2"]])
                await until(lambda: consumer.buffered == 3)
                to_broker = cap.connections[0].client_side
                assert to_broker is not None and to_broker.transport is not None
                to_broker.transport.pause_reading()
                in_flight = await producer.send(b"in flight")
                await client.flush()
                await admin.delete_stream(stream)
                await cap.wait_for(lambda: bool(cap.frames_of(MetadataUpdate, "server")))
                assert cap.frames_of(MetadataUpdate, "server") == [
                    MetadataUpdate(ResponseCode.STREAM_NOT_AVAILABLE, stream)
                ]
                kept = await read(consumer, 3)
                ended = await error_of(anext(consumer))
                assert isinstance(ended, StreamNotAvailable), repr(ended)
                refused = await error_of(producer.send(b"after"))
                assert isinstance(refused, StreamNotAvailable), repr(refused)
                to_broker.transport.resume_reading()
                await cap.wait_for(lambda: bool(cap.frames_of(PublishError, "server")))
                assert cap.frames_of(PublishError, "server") == [
                    PublishError(
                        producer.publisher_id,
                        [PublishingError(4, ResponseCode.PUBLISHER_DOES_NOT_EXIST)],
                    )
                ]
                assert not await client.stream_exists(stream)
                assert client.is_open and client.connections == 1
                assert [m.body for m in kept] == [b"kept 0", b"kept 1", b"kept 2"]
                failed = await error_of(in_flight)
                assert isinstance(failed, StreamNotAvailable), repr(failed)

    run(main())


# ======================================================================================
# Message format: AMQP 1.0, raw
# ======================================================================================


def test_bodies_travel_as_one_amqp_data_section() -> None:
    """OASIS AMQP 1.0 part 3 §3.2.6 data: 'A data section contains opaque binary
    data' (descriptor amqp:data:binary, 0x00000000:0x00000075). What the producer
    publishes, and what the broker stores and delivers, is one such section."""

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream)
                await producer.send_wait(b"payload")
                async with await client.consumer(stream, "first") as consumer:
                    [message] = await read(consumer, 1)
        [entry] = published(cap, producer.publisher_id)
        assert isinstance(entry.entry, SimpleEntry)
        assert entry.entry.data == b"\x00\x53\x75\xa0\x07payload"
        assert decode_message(entry.entry.data) == AmqpMessage(body=b"payload")
        assert message.data == entry.entry.data
        assert message.amqp == AmqpMessage(body=b"payload")
        assert message.body == b"payload"

    run(main())


def test_an_amqp_message_with_properties_round_trips_through_the_broker() -> None:
    """AMQP 1.0 part 3 §3.2: 'header? delivery-annotations? message-annotations?
    properties? application-properties? body footer?'. The broker stores the bytes as
    sent; properties, application properties and annotations come back equal."""
    message = AmqpMessage(
        body=b"hello",
        message_annotations={"x-opt-origin": "ws-test"},
        properties=Properties(
            message_id="m-1",
            subject="greeting",
            content_type="text/plain",
            correlation_id=42,
            creation_time=1_700_000_000_000,
        ),
        application_properties={"colour": "blue", "count": 3, "urgent": True},
    )

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            await producer.send_wait(message)
            async with await client.consumer(stream, "first") as consumer:
                [received] = await read(consumer, 1)
        assert received.data == encode_message(message)
        assert received.amqp == message
        assert received.body == b"hello"

    run(main())


def test_raw_producer_and_consumer_carry_bytes_untouched() -> None:
    """PROTOCOL.adoc, Publish: 'Message => bytes'. ``raw=True`` sends the bytes as the
    entry and reads them back as stored; a non-raw consumer reports that they are not
    an AMQP message (a decode error, not garbage)."""
    raw = b"\xff\x00 not an amqp message \x00\x53\x75"

    async def main() -> None:
        async with FrameCapture() as cap:
            async with await connect(uri(cap.port)) as client, fresh_stream(client) as stream:
                producer = await client.producer(stream, raw=True)
                await producer.send_wait(raw)
                async with await client.consumer(stream, "first", raw=True) as consumer:
                    [message] = await read(consumer, 1)
                async with await client.consumer(stream, "first") as amqp_consumer:
                    [as_amqp] = await read(amqp_consumer, 1)
        assert published(cap, producer.publisher_id) == [PublishedMessage(1, SimpleEntry(raw))]
        assert (message.data, message.body) == (raw, raw)
        assert as_amqp.data == raw
        error = None
        try:
            as_amqp.body
        except AmqpDecodeError as decode_error:
            error = decode_error
        assert error is not None

    run(main())


@pytest.mark.peer
def test_messages_published_by_rstream_are_read_by_our_consumer() -> None:
    """rstream 1.1.1 publishes a raw body (bytes as they are) and an ``AMQPMessage``
    (AMQP 1.0 sections); our consumer reads the first untouched and decodes the second
    with its properties and application properties."""
    from rstream import AMQPMessage
    from rstream import Producer as RProducer
    from rstream import Properties as RProperties

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            rproducer = RProducer(
                "127.0.0.1", 5552, username="guest", password="guest", load_balancer_mode=True
            )
            await rproducer.start()
            try:
                await rproducer.send_wait(stream, b"rstream raw")
                await rproducer.send_wait(
                    stream,
                    AMQPMessage(
                        body=b"rstream amqp",
                        properties=RProperties(message_id="r-1"),
                        application_properties={"k": "v"},
                    ),
                )
            finally:
                await rproducer.close()
            async with await client.consumer(stream, "first", raw=True) as consumer:
                raw_message, amqp_message = await read(consumer, 2)
        assert raw_message.data == b"rstream raw"
        decoded = amqp_message.amqp
        assert decoded.body == b"rstream amqp"
        assert decoded.properties is not None and decoded.properties.message_id == "r-1"
        assert decoded.application_properties == {"k": "v"}

    run(main(), timeout=60)


@pytest.mark.peer
def test_messages_published_by_our_producer_are_read_by_rstream() -> None:
    """Our AMQP bodies, an ``AmqpMessage`` with properties, and a raw producer's bytes,
    as rstream 1.1.1 reads them (raw bytes, then its ``amqp_decoder``)."""
    from rstream import Consumer as RConsumer
    from rstream import ConsumerOffsetSpecification, MessageContext, OffsetType, amqp_decoder

    async def main() -> None:
        received: list[bytes] = []
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            await producer.send_wait(b"from wirestream")
            await producer.send_wait(
                AmqpMessage(
                    body=b"with properties",
                    properties=Properties(subject="s"),
                    application_properties={"k": "v"},
                )
            )
            raw = await client.producer(stream, raw=True)
            await raw.send_wait(b"raw from wirestream")

            def on_message(body: bytes, context: MessageContext) -> None:
                received.append(body)

            rconsumer = RConsumer(
                "127.0.0.1", 5552, username="guest", password="guest", load_balancer_mode=True
            )
            await rconsumer.start()
            try:
                await rconsumer.subscribe(
                    stream,
                    on_message,
                    offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST),
                )
                await until(lambda: len(received) == 3)
            finally:
                await rconsumer.close()
        plain, with_properties, raw_bytes = received
        assert amqp_decoder(plain).body == b"from wirestream"
        decoded = amqp_decoder(with_properties)
        assert decoded.body == b"with properties"
        assert decoded.properties.subject == b"s"  # rstream decodes strings as bytes
        assert decoded.application_properties == {b"k": b"v"}
        assert raw_bytes == b"raw from wirestream"

    run(main(), timeout=60)


# ======================================================================================
# Super streams: Route, Partitions
# ======================================================================================


def test_partitions_and_route_of_a_super_stream() -> None:
    """PROTOCOL.adoc, Partitions (experimental): 'PartitionsResponse => Key Version
    CorrelationId [Stream]'; Route (experimental): 'RouteQuery => Key Version
    CorrelationId RoutingKey SuperStream', 'RouteResponse => Key Version CorrelationId
    [Stream]'. ``add_super_stream NAME --partitions 3`` binds NAME-i with key "i"; an
    unbound key routes nowhere (3.10.8: an empty list)."""
    name = unique("ws-client-super")

    async def main() -> None:
        await asyncio.to_thread(ctl.add_super_stream, name, 3)
        try:
            async with await connect(URI) as client:
                partitions = await client.partitions(name)
                route = await client.route("1", name)
                unbound = await client.route("no-such-key", name)
        finally:
            await asyncio.to_thread(ctl.delete_super_stream, name)
        assert partitions == (f"{name}-0", f"{name}-1", f"{name}-2")
        assert route == (f"{name}-1",)
        assert unbound == ()

    run(main(), timeout=60)


def test_route_and_partitions_of_a_missing_super_stream_raise_stream_does_not_exist() -> None:
    """PROTOCOL.adoc, Response Codes: 'Stream does not exist | 0x02', for the super
    stream named in a Route or Partitions query."""

    async def main() -> None:
        async with await connect(URI) as client:
            missing = unique("ws-client-no-super")
            route = await error_of(client.route("1", missing))
            partitions = await error_of(client.partitions(missing))
            assert client.is_open
        assert isinstance(route, StreamDoesNotExist), repr(route)
        assert isinstance(partitions, StreamDoesNotExist), repr(partitions)

    run(main())


# ======================================================================================
# Volume
# ======================================================================================


def test_100_000_messages_come_back_once_each_in_order_with_contiguous_offsets() -> None:
    """PROTOCOL.adoc, Deliver: 'ChunkFirstOffset => uint64', 'NumRecords => uint32':
    offsets are contiguous across chunks. 100,000 bodies of 100 bytes, each carrying
    its index, are all confirmed and read back one by one."""
    count = 100_000

    def body(index: int) -> bytes:
        return b"%010d" % index + b"." * 90

    async def main() -> None:
        async with await connect(URI) as client, fresh_stream(client) as stream:
            producer = await client.producer(stream)
            started = time.monotonic()
            confirmation = await producer.send_many(body(i) for i in range(count))
            await confirmation
            assert confirmation.confirmed == count and not confirmation.errors
            assert confirmation.publishing_ids == list(range(1, count + 1))
            expected = 0
            async with await client.consumer(stream, "first") as consumer:
                async with asyncio.timeout(60):
                    async for message in consumer:
                        assert message.offset == expected, (message.offset, expected)
                        data = message.body
                        assert len(data) == 100 and data == body(expected), expected
                        expected += 1
                        if expected == count:
                            break
            assert expected == count
            assert time.monotonic() - started < 60

    run(main(), timeout=90)
