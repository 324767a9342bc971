"""A small sans-I/O RabbitMQ stream BROKER for the client engine's tests.

It drives the *server* role of the same generated machines the client drives
(``wirestream.generated.rabbitmq_stream.v1.machines``), so the tables are exercised from both
sides, and behaves like RabbitMQ 3.10.8 where the tests need it: one chunk per Publish
frame (real Osiris chunks built with the generated codec, CRC-32 over the entry
bytes), chunks sent only while the subscription has credit, CreditResponse only on
error, MetadataUpdate after a stream is deleted, CloseRequest 13 on a frame it does
not expect. Knobs (``challenge``, ``refuse_publishing_ids``, ...) script the odd cases.
With ``version`` "3.13.0" it also answers CreateSuperStream / DeleteSuperStream as 3.13
does; super streams (``add_super_stream``) answer Partitions and Route either way.
``serve`` runs one over TCP for the asyncio client.
Not a broker: no persistence, no clustering, one connection.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from wirestream.generated.rabbitmq_stream.v1 import (
    Broker,
    CloseRequest,
    CloseResponse,
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
    Entry,
    Frame,
    Heartbeat,
    MetadataRequest,
    MetadataResponse,
    MetadataUpdate,
    OffsetSpecFirst,
    OffsetSpecLast,
    OffsetSpecNext,
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
    StoreOffset,
    StreamDecoder,
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
    ConnectionState,
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


@dataclass
class _Subscription:
    machine: SubscriptionMachine
    stream: str
    credit: int
    next_chunk: int


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
                 challenge: bytes | None = None, version: str = "3.10.8") -> None:  # fmt: skip
        self.users = {"guest": "guest"} if users is None else users
        self.mechanisms = list(mechanisms)
        self.frame_max, self.heartbeat, self.vhosts = frame_max, heartbeat, vhosts
        self.challenge = challenge  # first SaslAuthenticate answered with a challenge
        self.version = version  # PeerProperties "version"; 3.13+ has super stream commands
        # super stream -> (partition stream, binding key) in x-stream-partition-order
        self.super_streams: dict[str, list[tuple[str, str]]] = {}
        self.connection = ConnectionMachine(SERVER)
        self.decoder = StreamDecoder(sender="client")
        self.out = bytearray()
        self.frames: list[Any] = []  # everything received
        self.streams: dict[str, _Stream] = {}
        self.publishers: dict[int, _Publisher] = {}
        self.subscriptions: dict[int, _Subscription] = {}
        self.offsets: dict[tuple[str, str], int] = {}
        self.sequences: dict[tuple[str, str], int] = {}
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
            props = [Property("advertised_host", "localhost"), Property("advertised_port", "5552")]
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
        self.send(update, *machines)

    def on_metadata(self, frame: MetadataRequest) -> None:
        brokers = [Broker(0, "localhost", 5552)]
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

    def on_publish(self, frame: Publish) -> None:
        publisher = self.publishers.get(frame.publisher_id)
        if publisher is None:
            machine = PublisherMachine(SERVER)
            machine.receive(frame)  # ignored by the table: answer PublishError 18
            errors = [PublishingError(m.publishing_id, ResponseCode.PUBLISHER_DOES_NOT_EXIST)
                      for m in frame.published_messages]  # fmt: skip
            self.send(PublishError(frame.publisher_id, errors), machine)
            return
        publisher.machine.receive(frame)
        stored = [m for m in frame.published_messages
                  if m.publishing_id not in self.refuse_publishing_ids]  # fmt: skip
        refused = [m for m in frame.published_messages
                   if m.publishing_id in self.refuse_publishing_ids]  # fmt: skip
        if stored:
            stream = self.streams[publisher.stream]
            chunk = osiris_chunk(stream.next_offset, [m.entry for m in stored])
            stream.chunks.append(chunk)
            stream.next_offset += chunk.num_records
            if publisher.reference:
                key = (publisher.reference, publisher.stream)
                self.sequences[key] = max(m.publishing_id for m in stored)
            if self.confirm:
                ids = [m.publishing_id for m in stored]
                self.send(PublishConfirm(frame.publisher_id, ids), publisher.machine)
        if refused:
            errors = [PublishingError(m.publishing_id, self.refuse_publishing_ids[m.publishing_id])
                      for m in refused]  # fmt: skip
            self.send(PublishError(frame.publisher_id, errors), publisher.machine)
        self.deliver_all()

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
        self.send(SubscribeResponse(frame.correlation_id, ResponseCode.OK), machine)
        subscription = _Subscription(machine, stream_name, frame.credit,
                                     self.first_chunk(stream, frame.offset_specification))  # fmt: skip
        self.subscriptions[frame.subscription_id] = subscription
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
        """3.10.8 send_chunks: one Deliver per chunk while credit lasts."""
        for sid, subscription in self.subscriptions.items():
            if subscription.machine.state is not SubscriptionState.ACTIVE:
                continue
            stream = self.streams.get(subscription.stream)
            if stream is None:
                continue
            while subscription.credit > 0 and subscription.next_chunk < len(stream.chunks):
                chunk = stream.chunks[subscription.next_chunk]
                self.send(Deliver(sid, chunk), subscription.machine)
                subscription.next_chunk += 1
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


@asynccontextmanager
async def serve(
    make: Callable[[], TestBroker] = TestBroker,
) -> AsyncIterator[tuple[int, list[TestBroker]]]:
    """A TCP server on 127.0.0.1 whose every connection is a fresh ``make()`` broker:
    yields the port and the brokers made so far (for the asyncio ``Client``)."""
    brokers: list[TestBroker] = []
    tasks: set[asyncio.Task[None]] = set()

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        broker = make()
        brokers.append(broker)
        try:
            while data := await reader.read(65536):
                broker.receive_data(data)
                writer.write(broker.data_to_send())
                await writer.drain()
                if broker.connection.state is ConnectionState.CLOSED:
                    break
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(session(reader, writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], brokers
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def open_pair(broker: TestBroker | None = None, **client_options: Any) -> tuple[Any, TestBroker]:
    """A client engine and a TestBroker that completed the handshake."""
    from wirestream.runtime.rabbitmq_stream import ClientConnection, ConnectionOpened
    from tests.engine_pair import shuttle

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
