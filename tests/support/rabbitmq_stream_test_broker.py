"""A small sans-I/O RabbitMQ stream BROKER for the client engine's tests.

It drives the *server* role of the same generated machines the client drives
(``wirestream.generated.rabbitmq_stream.v1.machines``), so the tables are exercised from both
sides, and behaves like RabbitMQ 3.10.8 where the tests need it: one chunk per Publish
frame (real Osiris chunks built with the generated codec, CRC-32 over the entry
bytes), chunks sent only while the subscription has credit, CreditResponse only on
error, MetadataUpdate after a stream is deleted, CloseRequest 13 on a frame it does
not expect. Knobs (``challenge``, ``refuse_publishing_ids``, ...) script the odd cases.
Not a broker: no persistence, no clustering.

``version="3.13.0"`` (any version from 3.11.0) makes it a newer broker, as
rabbit_stream_reader 3.13.0 behaves (read in rabbitmq-server v3.13.0): it claims that
version in PeerProperties, answers ExchangeCommandVersions with 3.13's command list
(publish 1..2 from 3.13.0, 1..1 on 3.11/3.12; rabbit_stream_utils command_versions())
and delivers Deliver version 2 (with the committed chunk id) once the client advertised
deliver ..2; it answers StreamStats (first_chunk_id, committed_chunk_id), stores
Publish v2 filter values per chunk and skips chunks a subscription's ``filter.N`` /
``match-unfiltered`` properties exclude (the chunk's bloom filter, exact here: a chunk
matches when it holds one of the values, or an unfiltered message and match-unfiltered
is true; its other messages still reach the client, as bloom false positives do), and
runs single-active-consumer groups (vhost, stream, ``name``): the first subscriber of a
group is asked ``ConsumerUpdate active=1`` after its SubscribeResponse and gets chunks
only once it answered, from the offset it answered (none: its Subscribe's); later ones
are passive and get nothing; when the active one leaves, the next is activated (the
3.13.0 rabbit_stream_sac_coordinator rules for a group outside a super stream; groups on
super stream partitions are handled the same way here). A 3.10 broker answers the 3.11+
commands with CloseRequest 13 (unknown frame), and ignores the newer subscription
properties. ``BrokerState`` (streams, offsets, sequences, groups) can be shared by the
brokers of several connections (``tests.support.rabbitmq_stream_test_broker_server`` serves
them over TCP).

With ``version`` "3.13.0" it also answers CreateSuperStream / DeleteSuperStream as 3.13
does; super streams (``add_super_stream``) answer Partitions and Route either way.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from wirestream.generated.rabbitmq_stream.v1 import (
    Broker,
    CloseRequest,
    CloseResponse,
    CommandVersion,
    ConsumerUpdateRequest,
    ConsumerUpdateResponse,
    CreateRequest,
    CreateResponse,
    CreateSuperStreamRequest,
    CreateSuperStreamResponse,
    CreditRequest,
    CreditResponse,
    DeclarePublisherRequest,
    DeclarePublisherResponse,
    DeletePublisherRequest,
    DeletePublisherResponse,
    DeleteRequest,
    DeleteResponse,
    DeleteSuperStreamRequest,
    DeleteSuperStreamResponse,
    Deliver,
    DeliverV2,
    Entry,
    ExchangeCommandVersionsRequest,
    ExchangeCommandVersionsResponse,
    Frame,
    Heartbeat,
    MetadataRequest,
    MetadataResponse,
    MetadataUpdate,
    OffsetSpecFirst,
    OffsetSpecLast,
    OffsetSpecNext,
    OffsetSpecNone,
    OffsetSpecOffset,
    OffsetSpecTimestamp,
    OpenRequest,
    OpenResponse,
    OsirisChunk,
    PartitionsRequest,
    PartitionsResponse,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    Property,
    Publish,
    PublishConfirm,
    PublishError,
    PublishingError,
    PublishV2,
    QueryOffsetRequest,
    QueryOffsetResponse,
    QueryPublisherSequenceRequest,
    QueryPublisherSequenceResponse,
    ResponseCode,
    RouteRequest,
    RouteResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    SimpleEntry,
    Statistic,
    StoreOffset,
    StreamDecoder,
    StreamStatsRequest,
    StreamStatsResponse,
    StreamMetadata,
    SubEntryBatch,
    SubscribeRequest,
    SubscribeResponse,
    Tune,
    UnsubscribeRequest,
    UnsubscribeResponse,
    encode,
    frame_bytes,
)
from wirestream.generated.rabbitmq_stream.v1.machines import (
    ConnectionMachine,
    PublisherMachine,
    PublisherState,
    SubscriptionMachine,
    SubscriptionState,
)
from wirestream.runtime.machine import IGNORE, StateMachine
from wirestream.runtime.rabbitmq_stream.chunk import encode_entries

SERVER = "server"
DELIVER_HEADER = 5  # key, version, subscription id (encode() has no size prefix)
OSIRIS_HEADER = 48


def osiris_chunk(first_offset: int, entries: list[Entry], *, timestamp: int = 1_700_000_000_000,
                 chunk_type: int = 0, crc: int | None = None) -> OsirisChunk:  # fmt: skip
    """A chunk as osiris writes it; the CRC is computed over the encoded entry bytes
    (unless ``crc`` forces a value), independently of the client's own computation."""
    records = sum(1 if isinstance(e, SimpleEntry) else e.num_records for e in entries)
    chunk = OsirisChunk(chunk_type=chunk_type, num_entries=len(entries), num_records=records,
                        timestamp=timestamp, epoch=1, chunk_first_offset=first_offset,
                        data=encode_entries(entries))  # fmt: skip
    body = encode(Deliver(0, chunk))[DELIVER_HEADER + OSIRIS_HEADER :]
    chunk.chunk_crc = zlib.crc32(body) if crc is None else crc
    return chunk


@dataclass
class _Stream:
    chunks: list[OsirisChunk] = field(default_factory=list)
    next_offset: int = 0
    # per chunk: the Publish v2 filter values of its messages, and whether one had none
    filters: list[tuple[frozenset[str], bool]] = field(default_factory=list)


@dataclass
class _Subscription:
    machine: SubscriptionMachine
    stream: str
    credit: int
    next_chunk: int
    spec: Any = None  # the Subscribe's offset specification
    filter_values: frozenset[str] | None = None  # filter.N (3.13+)
    match_unfiltered: bool = False
    group: tuple[str, str] | None = None  # (stream, name) of a single-active-consumer
    delivering: bool = True  # False: a passive consumer, or one asked and not answered yet

    def wants(self, values: frozenset[str], unfiltered: bool) -> bool:
        """The chunk's bloom filter test (osiris, 3.13): no filter takes everything."""
        if self.filter_values is None:
            return True
        return bool(self.filter_values & values) or (self.match_unfiltered and unfiltered)


@dataclass
class BrokerState:
    """What the connections of one broker share."""

    streams: dict[str, _Stream] = field(default_factory=dict)
    offsets: dict[tuple[str, str], int] = field(default_factory=dict)
    sequences: dict[tuple[str, str], int] = field(default_factory=dict)
    # single-active-consumer groups: (stream, name) -> [(broker, subscription id)], in
    # registration order; the active one is the one whose broker says delivering/asked.
    groups: dict[tuple[str, str], list[tuple[TestBroker, int]]] = field(default_factory=dict)
    # super stream -> (partition stream, binding key) in x-stream-partition-order
    super_streams: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


# rabbit_stream_utils:command_versions() of 3.13.0 (publish 1..1 before 3.13)
_COMMANDS_3_13 = [(0x01, 1, 1), (0x02, 1, 2), (0x05, 1, 1), (0x06, 1, 1), (0x07, 1, 1),
                  (0x09, 1, 1), (0x0A, 1, 1), (0x0B, 1, 1), (0x0C, 1, 1), (0x0D, 1, 1),
                  (0x0E, 1, 1), (0x0F, 1, 1), (0x16, 1, 1), (0x17, 1, 1), (0x18, 1, 1),
                  (0x19, 1, 1), (0x1C, 1, 1), (0x1D, 1, 1), (0x1E, 1, 1)]  # fmt: skip


_NO_FILTER: tuple[frozenset[str], bool] = (frozenset(), True)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("-")[0].split(".")[:3])


@dataclass
class _Publisher:
    machine: PublisherMachine
    stream: str
    reference: str


class TestBroker:
    """The broker side of one connection. ``receive_data``/``data_to_send`` like the
    client; ``frames`` logs every frame it received."""

    __test__ = False  # not a pytest class

    def __init__(self, *, users: dict[str, str] | None = None, mechanisms: tuple[str, ...] = ("PLAIN",),
                 frame_max: int = 1_048_576, heartbeat: int = 60, vhosts: tuple[str, ...] = ("/",),
                 challenge: bytes | None = None, version: str = "3.10.8",
                 state: BrokerState | None = None, advertised_host: str = "localhost",
                 advertised_port: int = 5552) -> None:  # fmt: skip
        self.version = version
        self.newer = _version(version) >= (3, 11, 0)  # the 3.11+ commands exist
        self.state = BrokerState() if state is None else state
        self.advertised_host, self.advertised_port = advertised_host, advertised_port
        self.deliver_version = 1  # 2 once the client advertised deliver ..2 (3.11+)
        self.next_correlation_id = 1  # the broker's own requests (ConsumerUpdate)
        self.consumer_updates: dict[int, tuple[int, bool]] = {}  # cid -> (sid, active)
        self.users = {"guest": "guest"} if users is None else users
        self.mechanisms = list(mechanisms)
        self.frame_max, self.heartbeat, self.vhosts = frame_max, heartbeat, vhosts
        self.challenge = challenge  # first SaslAuthenticate answered with a challenge
        self.super_streams = self.state.super_streams
        self.connection = ConnectionMachine(SERVER)
        self.decoder = StreamDecoder(sender="client")
        self.out = bytearray()
        self.frames: list[Any] = []  # everything received
        self.streams: dict[str, _Stream] = self.state.streams
        self.publishers: dict[int, _Publisher] = {}
        self.subscriptions: dict[int, _Subscription] = {}
        self.offsets: dict[tuple[str, str], int] = self.state.offsets
        self.sequences: dict[tuple[str, str], int] = self.state.sequences
        self.refuse_publishing_ids: dict[int, int] = {}  # publishing id -> error code
        self.confirm = True  # send PublishConfirm for stored messages
        self.tuned: Tune | None = None
        self.handlers: dict[type, str] = {  # frame -> method name (patchable)
            PeerPropertiesRequest: "on_peer_properties",
            SaslHandshakeRequest: "on_sasl_handshake",
            SaslAuthenticateRequest: "on_sasl_authenticate",
            Tune: "on_tune",
            OpenRequest: "on_open",
            CloseRequest: "on_close_request",
            CloseResponse: "on_nothing",
            Heartbeat: "on_nothing",
            CreateRequest: "on_create",
            DeleteRequest: "on_delete",
            MetadataRequest: "on_metadata",
            DeclarePublisherRequest: "on_declare_publisher",
            Publish: "on_publish",
            DeletePublisherRequest: "on_delete_publisher",
            QueryPublisherSequenceRequest: "on_query_publisher_sequence",
            SubscribeRequest: "on_subscribe",
            CreditRequest: "on_credit",
            UnsubscribeRequest: "on_unsubscribe",
            StoreOffset: "on_store_offset",
            QueryOffsetRequest: "on_query_offset",
            PartitionsRequest: "on_partitions",
            RouteRequest: "on_route",
            CreateSuperStreamRequest: "on_create_super_stream",
            DeleteSuperStreamRequest: "on_delete_super_stream",
            ExchangeCommandVersionsRequest: "on_exchange_command_versions",
            StreamStatsRequest: "on_stream_stats",
            PublishV2: "on_publish_v2",
            ConsumerUpdateResponse: "on_consumer_update_response",
        }

    # --- I/O ---------------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        data = bytes(self.out)
        self.out.clear()
        return data

    def receive_data(self, data: bytes) -> list[Any]:
        for frame in self.decoder.feed(data):
            self.frames.append(frame)
            if self.connection.receive(frame) is IGNORE:
                continue
            getattr(self, self.handlers[type(frame)])(frame)
        return []

    def send(self, frame: Frame, *machines: StateMachine[Any]) -> None:
        for machine in (self.connection, *machines):
            machine.send(frame)
        self.out += frame_bytes(frame)

    def send_raw(self, data: bytes) -> None:
        """Bytes that bypass the machines (to script a misbehaving broker)."""
        self.out += data

    def on_nothing(self, frame: object) -> None:
        pass

    # --- handshake ---------------------------------------------------------------------

    def on_peer_properties(self, frame: PeerPropertiesRequest) -> None:
        props = [Property("product", "TestBroker"), Property("version", self.version)]
        self.send(PeerPropertiesResponse(frame.correlation_id, ResponseCode.OK, props))

    def on_sasl_handshake(self, frame: SaslHandshakeRequest) -> None:
        self.send(
            SaslHandshakeResponse(frame.correlation_id, ResponseCode.OK, list(self.mechanisms))
        )

    def on_sasl_authenticate(self, frame: SaslAuthenticateRequest) -> None:
        cid = frame.correlation_id
        if self.challenge is not None:
            self.send(SaslAuthenticateResponse(cid, ResponseCode.SASL_CHALLENGE, [self.challenge]))
            self.challenge = None
            return
        ok = frame.mechanism == "EXTERNAL" and "EXTERNAL" in self.mechanisms
        if frame.mechanism == "PLAIN":
            _, user, password = (frame.sasl_opaque_data or b"\0\0").split(b"\0", 2)
            ok = self.users.get(user.decode()) == password.decode()
        code = ResponseCode.OK if ok else ResponseCode.AUTHENTICATION_FAILURE
        self.send(SaslAuthenticateResponse(cid, code, []))
        if ok:
            self.send(Tune(self.frame_max, self.heartbeat))

    def on_tune(self, frame: Tune) -> None:
        self.tuned = frame

    def on_open(self, frame: OpenRequest) -> None:
        if frame.virtual_host in self.vhosts:
            props = [Property("advertised_host", self.advertised_host),
                     Property("advertised_port", str(self.advertised_port))]  # fmt: skip
            self.send(OpenResponse(frame.correlation_id, ResponseCode.OK, props))
        else:
            code = ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE
            self.send(OpenResponse(frame.correlation_id, code, []))

    # --- connection ------------------------------------------------------------------------

    def on_close_request(self, frame: CloseRequest) -> None:
        self.send(CloseResponse(frame.correlation_id, ResponseCode.OK))

    def close(self, code: int = ResponseCode.OK, reason: str = "bye") -> None:
        self.send(CloseRequest(1, code, reason))

    def heartbeat_now(self) -> None:
        self.send(Heartbeat())

    # --- streams ---------------------------------------------------------------------------

    def add_stream(self, name: str) -> None:
        self.streams[name] = _Stream()

    def on_create(self, frame: CreateRequest) -> None:
        name = frame.stream or ""
        if name in self.streams:
            code = ResponseCode.STREAM_ALREADY_EXISTS
        else:
            self.streams[name] = _Stream()
            code = ResponseCode.OK
        self.send(CreateResponse(frame.correlation_id, code))

    def on_delete(self, frame: DeleteRequest) -> None:
        name = frame.stream or ""
        if name not in self.streams:
            self.send(DeleteResponse(frame.correlation_id, ResponseCode.STREAM_DOES_NOT_EXIST))
            return
        del self.streams[name]
        self.send(DeleteResponse(frame.correlation_id, ResponseCode.OK))
        self.stream_gone(name)

    def stream_gone(self, name: str) -> None:
        """3.10.8: remove the stream's publishers and subscriptions, then MetadataUpdate 6."""
        update = MetadataUpdate(ResponseCode.STREAM_NOT_AVAILABLE, name)
        machines: list[StateMachine[Any]] = []
        for pid, publisher in list(self.publishers.items()):
            if publisher.stream == name and publisher.machine.state is PublisherState.DECLARED:
                machines.append(publisher.machine)
                del self.publishers[pid]
        for sid, subscription in list(self.subscriptions.items()):
            if (
                subscription.stream == name
                and subscription.machine.state is SubscriptionState.ACTIVE
            ):
                machines.append(subscription.machine)
                del self.subscriptions[sid]
                if subscription.group is not None:
                    self.state.groups.pop(subscription.group, None)
        self.send(update, *machines)

    def on_metadata(self, frame: MetadataRequest) -> None:
        brokers = [Broker(0, self.advertised_host, self.advertised_port)]
        metadata = []
        for name in frame.streams:
            if name in self.streams:
                metadata.append(StreamMetadata(name, ResponseCode.OK, 0, []))
            else:
                metadata.append(
                    StreamMetadata(name, ResponseCode.STREAM_DOES_NOT_EXIST, 0xFFFF, [])
                )
        self.send(MetadataResponse(frame.correlation_id, brokers, metadata))

    # --- super streams ---------------------------------------------------------------------

    def add_super_stream(self, name: str, partitions: Sequence[tuple[str, str]]) -> None:
        """Super stream ``name``: (partition stream, binding key) pairs, in order."""
        for stream, _ in partitions:
            self.streams[stream] = _Stream()
        self.super_streams[name] = list(partitions)

    def _unknown_command(self, frame: Any) -> bool:
        """Before 3.13 the command does not exist: 3.10.8 closes the connection with
        CloseRequest 13 (unknown frame) for a command key it does not know."""
        if tuple(int(part) for part in self.version.split(".")[:2]) >= (3, 13):
            return False
        self.close(ResponseCode.UNKNOWN_FRAME, "unknown frame")
        return True

    def on_create_super_stream(self, frame: CreateSuperStreamRequest) -> None:
        if self._unknown_command(frame):
            return
        name = frame.name or ""
        streams = [stream or "" for stream in frame.partitions]
        keys = [key or "" for key in frame.binding_keys]
        if not streams or len(streams) != len(keys):
            code = ResponseCode.PRECONDITION_FAILED  # 3.13: {validation_failed, _}
        elif name in self.super_streams or any(stream in self.streams for stream in streams):
            code = ResponseCode.STREAM_ALREADY_EXISTS  # {reference_already_exists, _}
        else:
            self.add_super_stream(name, list(zip(streams, keys)))
            code = ResponseCode.OK
        self.send(CreateSuperStreamResponse(frame.correlation_id, code))

    def on_delete_super_stream(self, frame: DeleteSuperStreamRequest) -> None:
        if self._unknown_command(frame):
            return
        partitions = self.super_streams.pop(frame.name or "", None)
        if partitions is None:
            code = ResponseCode.STREAM_DOES_NOT_EXIST
            self.send(DeleteSuperStreamResponse(frame.correlation_id, code))
            return
        self.send(DeleteSuperStreamResponse(frame.correlation_id, ResponseCode.OK))
        for stream, _ in partitions:
            if self.streams.pop(stream, None) is not None:
                self.stream_gone(stream)

    def on_partitions(self, frame: PartitionsRequest) -> None:
        partitions = self.super_streams.get(frame.super_stream or "")
        cid = frame.correlation_id
        if partitions is None:
            self.send(PartitionsResponse(cid, ResponseCode.STREAM_DOES_NOT_EXIST, []))
        else:
            streams: list[str | None] = [stream for stream, _ in partitions]
            self.send(PartitionsResponse(cid, ResponseCode.OK, streams))

    def on_route(self, frame: RouteRequest) -> None:
        partitions = self.super_streams.get(frame.super_stream or "")
        cid = frame.correlation_id
        if partitions is None:
            self.send(RouteResponse(cid, ResponseCode.STREAM_DOES_NOT_EXIST, []))
        else:  # a direct exchange: every partition bound with exactly that key
            streams: list[str | None] = [s for s, key in partitions if key == frame.routing_key]
            self.send(RouteResponse(cid, ResponseCode.OK, streams))

    # --- publishers ------------------------------------------------------------------------

    def on_declare_publisher(self, frame: DeclarePublisherRequest) -> None:
        machine = PublisherMachine(SERVER)
        machine.receive(frame)
        stream = frame.stream or ""
        code = ResponseCode.OK if stream in self.streams else ResponseCode.STREAM_DOES_NOT_EXIST
        self.send(DeclarePublisherResponse(frame.correlation_id, code), machine)
        if code == ResponseCode.OK:
            self.publishers[frame.publisher_id] = _Publisher(
                machine, stream, frame.publisher_reference or ""
            )

    def on_publish(self, frame: Publish | PublishV2) -> None:
        if isinstance(frame, PublishV2):
            entries = [(m.publishing_id, SimpleEntry(m.message or b""), m.filter_value)
                       for m in frame.published_messages]  # fmt: skip
        else:
            entries = [(m.publishing_id, m.entry, None) for m in frame.published_messages]
        publisher = self.publishers.get(frame.publisher_id)
        if publisher is None:
            machine = PublisherMachine(SERVER)
            machine.receive(frame)  # ignored by the table: answer PublishError 18
            errors = [PublishingError(m.publishing_id, ResponseCode.PUBLISHER_DOES_NOT_EXIST)
                      for m in frame.published_messages]  # fmt: skip
            self.send(PublishError(frame.publisher_id, errors), machine)
            return
        publisher.machine.receive(frame)
        stored = [e for e in entries if e[0] not in self.refuse_publishing_ids]
        refused = [e for e in entries if e[0] in self.refuse_publishing_ids]
        if stored:
            stream = self.streams[publisher.stream]
            chunk = osiris_chunk(stream.next_offset, [entry for _, entry, _ in stored])
            stream.chunks.append(chunk)
            values = frozenset(value for _, _, value in stored if value is not None)
            stream.filters.append((values, any(value is None for _, _, value in stored)))
            stream.next_offset += chunk.num_records
            if publisher.reference:
                key = (publisher.reference, publisher.stream)
                self.sequences[key] = max(pid for pid, _, _ in stored)
            if self.confirm:
                ids = [pid for pid, _, _ in stored]
                self.send(PublishConfirm(frame.publisher_id, ids), publisher.machine)
        if refused:
            errors = [PublishingError(pid, self.refuse_publishing_ids[pid])
                      for pid, _, _ in refused]  # fmt: skip
            self.send(PublishError(frame.publisher_id, errors), publisher.machine)
        self.deliver_all()

    def on_publish_v2(self, frame: PublishV2) -> None:
        if not self.newer:
            self.unknown_frame(frame)
            return
        self.on_publish(frame)

    def on_delete_publisher(self, frame: DeletePublisherRequest) -> None:
        publisher = self.publishers.pop(frame.publisher_id, None)
        if publisher is None:
            # Not declared: the table refuses Delete from free (the client's own table
            # would have refused to send it): answer 18 as 3.10.8 does, machine-less.
            self.out += frame_bytes(
                DeletePublisherResponse(frame.correlation_id, ResponseCode.PUBLISHER_DOES_NOT_EXIST)
            )
            return
        publisher.machine.receive(frame)
        self.send(DeletePublisherResponse(frame.correlation_id, ResponseCode.OK), publisher.machine)

    def on_query_publisher_sequence(self, frame: QueryPublisherSequenceRequest) -> None:
        key = (frame.publisher_reference or "", frame.stream or "")
        sequence = self.sequences.get(key, 0)
        self.send(QueryPublisherSequenceResponse(frame.correlation_id, ResponseCode.OK, sequence))

    # --- subscriptions ---------------------------------------------------------------------

    def on_subscribe(self, frame: SubscribeRequest) -> None:
        existing = self.subscriptions.get(frame.subscription_id)
        machine = existing.machine if existing else SubscriptionMachine(SERVER)
        if existing is not None:
            self.send(
                SubscribeResponse(frame.correlation_id, ResponseCode.SUBSCRIPTION_ID_ALREADY_EXISTS)
            )
            return
        machine.receive(frame)
        stream_name = frame.stream or ""
        stream = self.streams.get(stream_name)
        if stream is None:
            code = ResponseCode.STREAM_DOES_NOT_EXIST
            self.send(SubscribeResponse(frame.correlation_id, code), machine)
            return
        props = {p.key or "": p.value or "" for p in frame.properties} if self.newer else {}
        single_active = props.get("single-active-consumer") == "true"
        if single_active and not props.get("name"):
            # 3.13.0: 'a single active consumer must have a name'
            code = ResponseCode.PRECONDITION_FAILED
            self.send(SubscribeResponse(frame.correlation_id, code), machine)
            return
        self.send(SubscribeResponse(frame.correlation_id, ResponseCode.OK), machine)
        spec = frame.offset_specification
        subscription = _Subscription(machine, stream_name, frame.credit,
                                     self.first_chunk(stream, spec), spec)  # fmt: skip
        filters = [value for key, value in sorted(props.items()) if key.startswith("filter.")]
        if filters:
            subscription.filter_values = frozenset(filters)
            subscription.match_unfiltered = props.get("match-unfiltered") == "true"
        self.subscriptions[frame.subscription_id] = subscription
        if single_active:
            subscription.group = (stream_name, props["name"])
            subscription.delivering = False
            members = self.state.groups.setdefault(subscription.group, [])
            members.append((self, frame.subscription_id))
            if len(members) == 1:  # the first of its group is the active one
                self.consumer_update(frame.subscription_id, True)
        self.deliver_all()

    @staticmethod
    def first_chunk(stream: _Stream, spec: object) -> int:
        chunks = stream.chunks
        if isinstance(spec, OffsetSpecFirst):
            return 0
        if isinstance(spec, OffsetSpecLast):
            return max(0, len(chunks) - 1)
        if isinstance(spec, OffsetSpecNext):
            return len(chunks)
        if isinstance(spec, OffsetSpecOffset):
            for index, chunk in enumerate(chunks):
                if chunk.chunk_first_offset + chunk.num_records > spec.offset:
                    return index
            return len(chunks)
        assert isinstance(spec, OffsetSpecTimestamp)
        for index, chunk in enumerate(chunks):
            if chunk.timestamp >= spec.timestamp:
                return index
        return len(chunks)

    def deliver_all(self) -> None:
        """3.10.8 send_chunks: one Deliver per chunk while credit lasts (3.11+: Deliver
        version 2 once negotiated; chunks the subscription's filter excludes are skipped
        without costing credit; passive single active consumers get nothing)."""
        for sid, subscription in self.subscriptions.items():
            if subscription.machine.state is not SubscriptionState.ACTIVE:
                continue
            if not subscription.delivering:
                continue
            stream = self.streams.get(subscription.stream)
            if stream is None:
                continue
            while subscription.credit > 0 and subscription.next_chunk < len(stream.chunks):
                index = subscription.next_chunk
                chunk = stream.chunks[index]
                subscription.next_chunk += 1
                # chunks a test appended by hand carry no filter values
                filters = stream.filters[index] if index < len(stream.filters) else _NO_FILTER
                if not subscription.wants(*filters):
                    continue
                if self.deliver_version == 2:
                    committed = stream.chunks[-1].chunk_first_offset
                    self.send(DeliverV2(sid, committed, chunk), subscription.machine)
                else:
                    self.send(Deliver(sid, chunk), subscription.machine)
                subscription.credit -= 1

    def on_credit(self, frame: CreditRequest) -> None:
        subscription = self.subscriptions.get(frame.subscription_id)
        if subscription is None:
            machine = SubscriptionMachine(SERVER)
            machine.receive(frame)  # ignored by the table: answer CreditResponse 4
            code = ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST
            self.send(CreditResponse(code, frame.subscription_id), machine)
            return
        subscription.machine.receive(frame)
        subscription.credit += frame.credit
        self.deliver_all()

    def on_unsubscribe(self, frame: UnsubscribeRequest) -> None:
        subscription = self.subscriptions.pop(frame.subscription_id, None)
        if subscription is None:
            self.out += frame_bytes(
                UnsubscribeResponse(
                    frame.correlation_id, ResponseCode.SUBSCRIPTION_ID_DOES_NOT_EXIST
                )
            )
            return
        subscription.machine.receive(frame)
        self.send(UnsubscribeResponse(frame.correlation_id, ResponseCode.OK), subscription.machine)
        self.leave_group(frame.subscription_id, subscription)

    # --- single active consumer (3.11+) ---------------------------------------------------

    def consumer_update(self, subscription_id: int, active: bool) -> int:
        """Send ConsumerUpdate to one of this connection's subscriptions (also to script
        a step down: ``active=False``); nothing is delivered to it until it answered."""
        subscription = self.subscriptions[subscription_id]
        subscription.delivering = False
        cid = self.next_correlation_id
        self.next_correlation_id += 1
        self.consumer_updates[cid] = (subscription_id, active)
        self.send(ConsumerUpdateRequest(cid, subscription_id, int(active)), subscription.machine)
        return cid

    def on_consumer_update_response(self, frame: ConsumerUpdateResponse) -> None:
        """3.13.0 reader: an active subscription starts its reader at the answered
        offset (none: its Subscribe's specification), then sends chunks."""
        sid, active = self.consumer_updates.pop(frame.correlation_id, (None, False))
        subscription = self.subscriptions.get(sid) if sid is not None else None
        if subscription is None or not active:
            return
        spec = frame.offset_specification
        if isinstance(spec, OffsetSpecNone):
            spec = subscription.spec
        stream = self.streams.get(subscription.stream)
        if stream is not None:
            subscription.next_chunk = self.first_chunk(stream, spec)
        subscription.delivering = True
        self.deliver_all()

    def leave_group(self, subscription_id: int, subscription: _Subscription) -> None:
        """The subscription is gone: when it was its group's active one (asked active
        last), the next one in registration order is activated."""
        if subscription.group is None:
            return
        members = self.state.groups.get(subscription.group, [])
        was_first = bool(members) and members[0] == (self, subscription_id)
        members[:] = [m for m in members if m != (self, subscription_id)]
        if was_first and members:
            broker, sid = members[0]
            broker.consumer_update(sid, True)
        if not members:
            self.state.groups.pop(subscription.group, None)

    def connection_lost(self) -> None:
        """The client's transport ended: its subscriptions leave their groups."""
        for sid, subscription in list(self.subscriptions.items()):
            del self.subscriptions[sid]
            self.leave_group(sid, subscription)

    # --- 3.11+ commands --------------------------------------------------------------------

    def unknown_frame(self, frame: object) -> None:
        """What 3.10.8 does with a command it lacks: CloseRequest 13 (unknown frame)."""
        self.send(CloseRequest(self.next_correlation_id, ResponseCode.UNKNOWN_FRAME,
                               "unknown frame"))  # fmt: skip
        self.next_correlation_id += 1

    def on_exchange_command_versions(self, frame: ExchangeCommandVersionsRequest) -> None:
        if not self.newer:
            self.unknown_frame(frame)
            return
        for command in frame.commands:
            if command.key == 0x0008 and command.max_version >= 2:
                self.deliver_version = 2  # 3.13.0 reader: {deliver, _, 2}
        publish_max = 2 if _version(self.version) >= (3, 13, 0) else 1
        commands = [CommandVersion(key, low, publish_max if key == 0x02 else high)
                    for key, low, high in _COMMANDS_3_13
                    if key < 0x1D or publish_max == 2]  # fmt: skip
        self.send(ExchangeCommandVersionsResponse(frame.correlation_id, ResponseCode.OK, commands))

    def on_stream_stats(self, frame: StreamStatsRequest) -> None:
        if not self.newer:
            self.unknown_frame(frame)
            return
        stream = self.streams.get(frame.stream or "")
        if stream is None:
            code = ResponseCode.STREAM_DOES_NOT_EXIST
            self.send(StreamStatsResponse(frame.correlation_id, code, []))
            return
        first = stream.chunks[0].chunk_first_offset if stream.chunks else -1
        committed = stream.chunks[-1].chunk_first_offset if stream.chunks else -1
        stats = [Statistic("first_chunk_id", first), Statistic("committed_chunk_id", committed)]
        self.send(StreamStatsResponse(frame.correlation_id, ResponseCode.OK, stats))

    # --- offsets ---------------------------------------------------------------------------

    def on_store_offset(self, frame: StoreOffset) -> None:
        self.offsets[(frame.reference or "", frame.stream or "")] = frame.offset

    def on_query_offset(self, frame: QueryOffsetRequest) -> None:
        key = (frame.reference or "", frame.stream or "")
        if key in self.offsets:
            self.send(QueryOffsetResponse(frame.correlation_id, ResponseCode.OK, self.offsets[key]))
        else:
            self.send(QueryOffsetResponse(frame.correlation_id, ResponseCode.NO_OFFSET, 0))


def sub_entry(messages: list[bytes], compression: int = 1) -> SubEntryBatch:
    """A sub-entry batch built here (not with the client's helper): gzip or none."""
    import gzip

    raw = b"".join(len(m).to_bytes(4, "big") + m for m in messages)
    data = gzip.compress(raw) if compression == 1 else raw
    return SubEntryBatch(compression=compression, num_records=len(messages),
                         uncompressed_length=len(raw), data=data)  # fmt: skip


def open_pair(broker: TestBroker | None = None, **client_options: Any) -> tuple[Any, TestBroker]:
    """A client engine and a TestBroker that completed the handshake."""
    from wirestream.runtime.rabbitmq_stream import ClientConnection, ConnectionOpened
    from tests.support.engine_pair import shuttle

    client = ClientConnection(**client_options)
    broker = TestBroker() if broker is None else broker
    client.initiate_connection()
    events, _ = shuttle(client, broker)
    assert any(isinstance(event, ConnectionOpened) for event in events), events
    return client, broker


def with_stream(name: str = "s", broker: TestBroker | None = None,
                **client_options: Any) -> tuple[Any, TestBroker]:  # fmt: skip
    """An open pair whose broker has stream ``name``."""
    client, broker = open_pair(broker, **client_options)
    broker.add_stream(name)
    return client, broker
