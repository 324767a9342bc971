"""The client engine and the features newer than RabbitMQ 3.10, against the scripted
broker claiming 3.13.0 (or 3.10.8/3.12.0): ExchangeCommandVersions, StreamStats, Deliver
v2, Publish v2 with filter values and filtered subscriptions, single active consumer
(ConsumerUpdate). The same rules on the real 3.10.8 broker: test_rabbitmq_stream_
features_live.py; the bytes against the Java client's: test_rabbitmq_stream_features_java.py.
Under a second."""

from __future__ import annotations

from typing import Any

import pytest

from wirestream.generated.rabbitmq_stream.v1 import (
    CommandVersion,
    ConsumerUpdateResponse,
    ExchangeCommandVersionsRequest,
    ExchangeCommandVersionsResponse,
    OffsetSpecFirst,
    OffsetSpecNone,
    OffsetSpecOffset,
    PeerPropertiesResponse,
    Property,
    PublishedMessageV2,
    PublishV2,
    ResponseCode,
    StreamStatsRequest,
    frame_bytes,
)
from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.rabbitmq_stream import (
    ChunkDelivered,
    ClientConnection,
    ConnectionOpened,
    ConsumerUpdateRequested,
    Feature,
    MessageReceived,
    PublishConfirmed,
    RequestFailed,
    StreamDoesNotExist,
    StreamStatsReceived,
    Subscribed,
    Unsubscribed,
    UnsupportedByBroker,
)
from wirestream.runtime.rabbitmq_stream.features import (
    BrokerFeatures,
    parse_version,
    wants_command_versions,
)
from tests.support.engine_pair import shuttle
from tests.support.rabbitmq_stream_test_broker import TestBroker, open_pair

SAC = {"name": "app", "single-active-consumer": "true"}


def newer(version: str = "3.13.0", **options: Any) -> tuple[ClientConnection, TestBroker]:
    client, broker = open_pair(TestBroker(version=version), **options)
    broker.add_stream("s")
    return client, broker


def declared(client: ClientConnection, broker: TestBroker) -> None:
    client.declare_publisher(0, "s")
    shuttle(client, broker)


def messages(events: list[Any]) -> list[bytes]:
    return [event.message for event in events if isinstance(event, MessageReceived)]


# --- ExchangeCommandVersions ------------------------------------------------------------


def test_a_3_11_or_later_broker_is_sent_exactly_javas_command_versions() -> None:
    """Client.java maybeExchangeCommandVersions: a 'version' of 3.11.0 or more gets
    ExchangeCommandVersions with the server-initiated commands the client handles,
    which for Java 1.11.0 is Deliver 1..2 alone (the bytes recorded from it:
    test_rabbitmq_stream_features_java.py)."""
    client, broker = newer()
    [request] = [f for f in broker.frames if isinstance(f, ExchangeCommandVersionsRequest)]
    assert request.commands == [CommandVersion(0x0008, 1, 2)]
    assert broker.deliver_version == 2
    assert client.features.version == "3.13.0" and client.features.exchanged
    assert client.features.commands[0x0002] == (1, 2)


def test_the_connection_opens_only_once_the_versions_are_answered() -> None:
    client = ClientConnection()
    broker = TestBroker(version="3.13.0")
    broker.handlers[ExchangeCommandVersionsRequest] = "on_nothing"  # hold the answer
    client.initiate_connection()
    events, _ = shuttle(client, broker)
    assert not any(isinstance(event, ConnectionOpened) for event in events)
    assert client.outstanding_requests == {5: "ExchangeCommandVersionsRequest"}
    answer = ExchangeCommandVersionsResponse(5, ResponseCode.OK, [CommandVersion(0x1C, 1, 1)])
    [opened] = client.receive_data(frame_bytes(answer))
    assert isinstance(opened, ConnectionOpened)
    assert client.features.supports("stream_stats")
    assert not client.features.supports("filtering")


def test_a_3_10_broker_is_never_sent_the_newer_commands() -> None:
    """3.10.8 answers ExchangeCommandVersions with CloseRequest 13 (unknown frame): after
    Open nothing more goes out, and every newer feature says no."""
    client, broker = open_pair()
    assert not any(isinstance(f, ExchangeCommandVersionsRequest) for f in broker.frames)
    assert client.data_to_send() == b""
    assert client.features == BrokerFeatures("3.10.8")
    assert not any(client.features.supports(feature) for feature in Feature)


def test_an_unparsable_version_counts_as_new_enough_as_in_java() -> None:
    """Utils.java is3_11_OrMore: 'Unable to parse broker version' -> true."""
    assert wants_command_versions("unknown") and wants_command_versions(None)
    assert not wants_command_versions("3.10.8")
    assert wants_command_versions("3.11.0") and wants_command_versions("4.0.5+2.g1")
    assert parse_version("3.13.0-rc.2") == (3, 13, 0)


def test_a_refused_exchange_opens_the_connection_without_newer_features() -> None:
    """Java logs 'Exchange command versions returned error' and goes on with none."""
    broker = TestBroker(version="3.13.0")
    broker.on_exchange_command_versions = lambda frame: broker.send(  # type: ignore[method-assign]
        ExchangeCommandVersionsResponse(frame.correlation_id, ResponseCode.INTERNAL_ERROR, [])
    )
    client, _ = open_pair(broker)
    assert not client.features.exchanged
    with pytest.raises(UnsupportedByBroker):
        client.stream_stats("s")


def test_each_feature_follows_javas_reading_of_the_answer() -> None:
    """Client.java: stream stats iff StreamStats is listed, filtering iff Publish goes to
    version 2, super stream management iff CreateSuperStream is listed; single active
    consumer and Deliver v2 come with any 3.11+ answer."""
    answer = BrokerFeatures.from_answer("3.12.1", [(0x02, 1, 1), (0x1C, 1, 1)])
    assert answer.supports(Feature.STREAM_STATS) and answer.supports("deliver_v2")
    assert answer.supports("single_active_consumer")
    assert not answer.supports("filtering") and not answer.supports("super_stream_management")
    full = BrokerFeatures.from_answer("3.13.0", [(0x02, 1, 2), (0x1D, 1, 1)])
    assert full.supports("filtering") and full.supports("super_stream_management")


def test_UnsupportedByBroker_names_the_feature_the_broker_version_and_the_version_needed() -> None:
    with pytest.raises(UnsupportedByBroker) as info:
        BrokerFeatures("3.10.8").require("single_active_consumer")
    assert "single active consumer" in str(info.value)
    assert "RabbitMQ 3.11.0 or later" in str(info.value)
    assert "the broker is RabbitMQ 3.10.8" in str(info.value)
    assert (info.value.feature, info.value.broker_version, info.value.since) == (
        "single_active_consumer",
        "3.10.8",
        "3.11.0",
    )
    assert isinstance(info.value, LocalProtocolError)
    # a broker new enough whose answer lacks it (3.13 with the feature flag off)
    lacking = BrokerFeatures.from_answer("3.13.0", [(0x02, 1, 1)])
    with pytest.raises(UnsupportedByBroker, match="answer does not offer it"):
        lacking.require(Feature.FILTERING)


# --- StreamStats -------------------------------------------------------------------------


def test_stream_stats_returns_the_brokers_statistics() -> None:
    client, broker = newer()
    declared(client, broker)
    client.publish(0, [b"1", b"2"])
    shuttle(client, broker)
    client.publish(0, [b"3"])
    shuttle(client, broker)
    cid = client.stream_stats("s")
    events, _ = shuttle(client, broker)
    assert events == [StreamStatsReceived(cid, "s", {"first_chunk_id": 0, "committed_chunk_id": 2})]


def test_stream_stats_of_a_missing_stream_fails_with_its_code() -> None:
    client, broker = newer()
    cid = client.stream_stats("missing")
    [failed], _ = shuttle(client, broker)
    assert isinstance(failed, RequestFailed) and failed.correlation_id == cid
    assert isinstance(failed.error, StreamDoesNotExist)


def test_stream_stats_on_3_10_raises_before_sending() -> None:
    client, broker = open_pair()
    with pytest.raises(UnsupportedByBroker, match="StreamStats needs RabbitMQ 3.11.0"):
        client.stream_stats("s")
    assert client.data_to_send() == b"" and client.outstanding_requests == {}


# --- Publish v2, filtered subscriptions ---------------------------------------------------


def test_publish_filtered_writes_publish_v2_with_null_for_no_value() -> None:
    """PROTOCOL.adoc Publish v2 'FilterValue => string'; no value = the null string
    (int16 -1), as Java writes it."""
    client, broker = newer()
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    ids = client.publish_filtered(0, [b"x", b"y"], ["eu", None])
    data = client.data_to_send()
    assert data == frame_bytes(
        PublishV2(0, [PublishedMessageV2(1, "eu", b"x"), PublishedMessageV2(2, None, b"y")])
    )
    assert b"\xff\xff" in data  # the null filter value
    assert client.unconfirmed(0) == 2
    events = client.receive_data(broker.receive_data(data) or broker.data_to_send())
    assert events == [PublishConfirmed(0, tuple(ids))]


def test_publish_filtered_splits_at_frame_max() -> None:
    client, broker = newer(frame_max=200)
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    client.publish_filtered(0, [b"m" * 100] * 3, ["a", "b", "c"])
    data = client.data_to_send()
    sizes = []
    while data:
        size = int.from_bytes(data[:4], "big")
        sizes.append(4 + size)
        data = data[4 + size :]
    assert len(sizes) == 3 and max(sizes) <= 200


def test_publish_filtered_on_a_broker_without_publish_v2_raises_before_sending() -> None:
    for version in ("3.10.8", "3.12.0"):
        client, broker = open_pair(TestBroker(version=version))
        broker.add_stream("s")
        client.declare_publisher(0, "s")
        shuttle(client, broker)
        with pytest.raises(UnsupportedByBroker, match=f"RabbitMQ 3.13.0 or later; the broker is RabbitMQ {version}"):  # fmt: skip
            client.publish_filtered(0, [b"x"], ["a"])
        assert client.data_to_send() == b"" and client.unconfirmed(0) == 0


def test_a_filtered_subscription_gets_only_the_chunks_with_its_values() -> None:
    """The broker filters whole chunks (bloom filter): a chunk without the value never
    comes; a chunk holding it comes whole, other values included (hence Java's
    required post filter); match-unfiltered adds the chunks with unfiltered messages."""
    client, broker = newer()
    client.declare_publisher(0, "s")
    shuttle(client, broker)
    for batch, values in (([b"b1"], ["b"]), ([b"a1", b"b2"], ["a", "b"]), ([b"n1"], [None])):
        client.publish_filtered(0, batch, values)
        shuttle(client, broker)
    props = {"filter.0": "a", "match-unfiltered": "false"}
    client.subscribe(1, "s", OffsetSpecFirst(), properties=props)
    events, _ = shuttle(client, broker)
    assert messages(events) == [b"a1", b"b2"]
    client.subscribe(2, "s", OffsetSpecFirst(), properties={**props, "match-unfiltered": "true"})
    events, _ = shuttle(client, broker)
    assert messages(events) == [b"a1", b"b2", b"n1"]


def test_a_filtered_subscription_on_3_10_raises_before_sending() -> None:
    """3.10.8 ignores the filter.N properties: the consumer would get everything."""
    client, broker = open_pair()
    with pytest.raises(UnsupportedByBroker, match="filtering"):
        client.subscribe(1, "s", properties={"filter.0": "a"})
    assert client.data_to_send() == b""


# --- Deliver v2 ---------------------------------------------------------------------------


def test_a_3_11_broker_delivers_version_2_with_the_committed_chunk_id() -> None:
    client, broker = newer()
    declared(client, broker)
    client.publish(0, [b"1"])
    shuttle(client, broker)
    client.publish(0, [b"2"])
    shuttle(client, broker)
    client.subscribe(1, "s", OffsetSpecFirst())
    events, _ = shuttle(client, broker)
    chunks = [e for e in events if isinstance(e, ChunkDelivered)]
    assert [c.committed_chunk_id for c in chunks] == [1, 1]
    client_310, broker_310 = open_pair()
    broker_310.add_stream("s")
    declared(client_310, broker_310)
    client_310.publish(0, [b"1"])
    client_310.subscribe(1, "s", OffsetSpecFirst())
    events, _ = shuttle(client_310, broker_310)
    [chunk] = [e for e in events if isinstance(e, ChunkDelivered)]
    assert chunk.committed_chunk_id is None  # Deliver v1


# --- single active consumer --------------------------------------------------------------


def test_the_first_single_active_consumer_is_asked_and_gets_chunks_once_it_answered() -> None:
    client, broker = newer()
    declared(client, broker)
    client.publish(0, [b"0", b"1", b"2"])
    shuttle(client, broker)
    cid = client.subscribe(1, "s", OffsetSpecFirst(), properties=SAC)
    events, _ = shuttle(client, broker)
    assert events[0] == Subscribed(cid, 1)
    [update] = events[1:]
    assert isinstance(update, ConsumerUpdateRequested) and update.active
    assert client.consumer_active(1)
    assert messages(events) == []  # nothing before the answer
    client.answer_consumer_update(update.correlation_id, OffsetSpecOffset(1))
    events, _ = shuttle(client, broker)
    # the chunk holding offset 1 comes whole; offset 0 is dropped as for Subscribe
    assert messages(events) == [b"1", b"2"]
    [response] = [f for f in broker.frames if isinstance(f, ConsumerUpdateResponse)]
    assert response == ConsumerUpdateResponse(
        update.correlation_id, ResponseCode.OK, OffsetSpecOffset(1)
    )


def test_a_passive_consumer_gets_nothing_until_the_active_one_leaves() -> None:
    client, broker = newer()
    declared(client, broker)
    client.publish(0, [b"0"])
    client.subscribe(1, "s", OffsetSpecFirst(), properties=SAC)
    events, _ = shuttle(client, broker)
    [first] = [e for e in events if isinstance(e, ConsumerUpdateRequested)]
    client.answer_consumer_update(first.correlation_id, None)  # none: its own spec
    client.subscribe(2, "s", OffsetSpecFirst(), properties=SAC)
    events, _ = shuttle(client, broker)
    assert [e.subscription_id for e in events if isinstance(e, MessageReceived)] == [1]
    assert not any(isinstance(e, ConsumerUpdateRequested) for e in events)
    assert client.consumer_active(1) and not client.consumer_active(2)
    client.publish(0, [b"1"])
    events, _ = shuttle(client, broker)
    assert [e.subscription_id for e in events if isinstance(e, MessageReceived)] == [1]
    client.unsubscribe(1)
    events, _ = shuttle(client, broker)
    [takeover] = [e for e in events if isinstance(e, ConsumerUpdateRequested)]
    assert (takeover.subscription_id, takeover.active) == (2, True)
    client.answer_consumer_update(takeover.correlation_id, OffsetSpecOffset(1))
    events, _ = shuttle(client, broker)
    assert [(e.subscription_id, e.offset) for e in events if isinstance(e, MessageReceived)] == [
        (2, 1)
    ]


def test_a_consumer_stepped_down_answers_none_and_gets_no_more_chunks() -> None:
    client, broker = newer()
    client.declare_publisher(0, "s")
    client.subscribe(1, "s", OffsetSpecFirst(), properties=SAC)
    events, _ = shuttle(client, broker)
    [update] = [e for e in events if isinstance(e, ConsumerUpdateRequested)]
    client.answer_consumer_update(update.correlation_id, None)
    shuttle(client, broker)
    broker.consumer_update(1, False)
    [down] = client.receive_data(broker.data_to_send())
    assert down == ConsumerUpdateRequested(down.correlation_id, 1, False)
    assert not client.consumer_active(1)
    client.answer_consumer_update(down.correlation_id, None)
    client.publish(0, [b"late"])
    events, _ = shuttle(client, broker)
    assert messages(events) == []
    [*_, response] = [f for f in broker.frames if isinstance(f, ConsumerUpdateResponse)]
    assert response.offset_specification == OffsetSpecNone()


def test_a_consumer_update_while_unsubscribing_is_answered_by_the_engine() -> None:
    client, broker = newer()
    client.subscribe(1, "s", properties=SAC)
    events, _ = shuttle(client, broker)
    [update] = [e for e in events if isinstance(e, ConsumerUpdateRequested)]
    client.answer_consumer_update(update.correlation_id, None)
    shuttle(client, broker)
    client.unsubscribe(1)
    broker.consumer_update(1, True)  # crosses the UnsubscribeRequest
    events = client.receive_data(broker.data_to_send())
    assert events == []
    events, _ = shuttle(client, broker)
    assert isinstance(events[0], Unsubscribed)
    [*_, response] = [f for f in broker.frames if isinstance(f, ConsumerUpdateResponse)]
    assert response.offset_specification == OffsetSpecNone()


def test_answering_a_consumer_update_nobody_asked_is_refused() -> None:
    client, _ = newer()
    with pytest.raises(LocalProtocolError, match="no ConsumerUpdate with correlation id 9"):
        client.answer_consumer_update(9, None)


def test_a_single_active_consumer_on_3_10_raises_before_sending() -> None:
    """3.10.8 ignores single-active-consumer: the consumer would silently be an ordinary one."""
    client, _ = open_pair()
    with pytest.raises(UnsupportedByBroker, match="broker is RabbitMQ 3.10.8"):
        client.subscribe(1, "s", properties=SAC)
    assert client.data_to_send() == b""


def test_the_broker_refuses_a_single_active_consumer_without_name() -> None:
    client, broker = newer()
    client.subscribe(1, "s", properties={"single-active-consumer": "true"})
    [failed], _ = shuttle(client, broker)
    assert isinstance(failed, RequestFailed)
    assert failed.error is not None and failed.error.code == ResponseCode.PRECONDITION_FAILED


def test_stream_stats_is_refused_by_a_3_10_broker_with_unknown_frame() -> None:
    """Why the check comes first: the scripted 3.10.8 closes the connection (code 13)
    on StreamStats, as the real one does (test_rabbitmq_stream_features_live.py)."""
    broker = TestBroker()
    client, _ = open_pair(broker)
    broker.receive_data(frame_bytes(StreamStatsRequest(99, "s")))
    assert broker.out[4:8] == b"\x00\x16\x00\x01"  # CloseRequest
    assert int.from_bytes(broker.data_to_send()[12:14], "big") == ResponseCode.UNKNOWN_FRAME


def test_peer_properties_without_version_still_exchange() -> None:
    """No 'version' server property: Java's parser fails and it exchanges anyway."""
    broker = TestBroker(version="3.13.0")
    broker.on_peer_properties = lambda frame: broker.send(  # type: ignore[method-assign]
        PeerPropertiesResponse(frame.correlation_id, ResponseCode.OK, [Property("product", "x")])
    )
    client, _ = open_pair(broker)
    assert client.features.exchanged and client.features.version is None
