"""The generated Wireshark dissectors (generated/wireshark/*.lua), run by the real tshark,
show what the Python decoders decode.

Frames go into pcapng files through the capture pcap writer
(``wirestream.runtime.capture.pcap``), as TCP connections; tshark dissects each file once
with all six dissectors loaded (``tests.support.wireshark_support``), and every frame it shows is
compared field by field with the Python decoder's frame (``RecordDecoder``, the reader of
captures): golden vectors (each in its own connection, cut into 64-byte segments so the
dissectors reassemble them), malformed vectors (an expert-info error named after the
Python error, never a Lua error) and real sessions (the RSocket demo responder, the
RabbitMQ broker, Reactive Streams, BPMUX), recorded with the capture tap.

About 25 s in all: one tshark run per file (half a second to two and a half for the
thousand-odd mutated frames of a version), the sessions a fraction of a second each.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.aio_support import run
from tests.support.protocols import IDL, VERSIONS, Version, context, plain
from tests.support.wireshark_support import (
    Pdu,
    as_shown,
    frame_plain,
    proto_name,
    run_tshark,
    snake,
    tshark,
)
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.plan.codec import plan_codec
from wirestream.codegen.targets.wireshark.dissector import DEFAULT_PORTS, render_dissector
from wirestream.runtime.capture import CaptureWriter, capture_files, get_protocol, iter_records
from wirestream.runtime.capture.pcap import WELL_KNOWN_PORTS, PcapngWriter
from wirestream.runtime.capture.protocols import CaptureProtocol
from wirestream.runtime.capture.reader import CaptureRecord
from wirestream.runtime import errors
from wirestream.runtime.errors import DecodeError

T0 = 1_700_000_000 * 10**9


def alone(version: Version) -> bool:
    """Whether a frame of ``version`` dissects on a connection of its own: not when the
    dissector follows the conversation to tell a frame (PostgreSQL's startup frames, MySQL's
    phase: tests/wireshark/test_wireshark_families.py proves those, and MQTT, on real sessions)."""
    plan = plan_codec(load_protocol(version.idl, str(version.idl)))
    return plan.startup is None and all(kind == "field" for kind, _, _ in plan.key_parts)


ALONE = [v for v in VERSIONS if alone(v) and v.vectors()]  # MQTT: no vectors (a session)
IDS = [v.id for v in ALONE]
WITH_ERRORS = [v for v in ALONE if v.vectors("_errors")]


def capture_protocol(version: Version) -> CaptureProtocol:
    """The capture protocol of ``version``: registered, or made from its codec."""
    name = f"{version.protocol}/{version.version}"
    try:
        return get_protocol(name)
    except ValueError:
        return CaptureProtocol.of(name, version.codec().__name__, "binary")


def server_port(version: Version) -> tuple[int, dict[str, str]]:
    """The port the test's server uses and the preferences tshark needs for it: the
    dissector's default port where it has one, else one set by its preference."""
    default = DEFAULT_PORTS.get((version.protocol, version.version))
    if default:
        return default, {}
    port = 20000 + VERSIONS.index(version)
    return port, {f"{proto_name(version)}.tcp_port": str(port)}


def write_pcap(version: Version, records: list[CaptureRecord], path: Path,
               mss: int = 1460) -> int:  # fmt: skip
    port, _ = server_port(version)
    with open(path, "wb") as out:
        with PcapngWriter(out, capture_protocol(version), server_port=port,
                          mss=mss) as writer:  # fmt: skip
            for record in records:
                writer.add(record)
    return port


def record(connection: int, sender: str, frame: bytes, n: int) -> CaptureRecord:
    """A frame the client side recorded: out when it sent it, in when the server did."""
    return CaptureRecord(T0 + n * 1000, connection, "out" if sender == "client" else "in",
                         frame, "client")  # fmt: skip


def expected_frames(
    version: Version, records: list[CaptureRecord]
) -> dict[tuple[int, str], list[Any]]:
    """What the Python decoder makes of each connection's frames, per (TCP stream index,
    sender): the pcap writer numbers streams in the order connections first appear."""
    decoder = capture_protocol(version).record_decoder()
    streams: dict[int, int] = {}
    out: dict[tuple[int, str], list[Any]] = {}
    for r in records:
        stream = streams.setdefault(r.connection_id, len(streams))
        frame = decoder.decode(r.frame, r.connection_id, r.direction, r.sender)
        out.setdefault((stream, r.sender), []).append(frame)
    return out


def dissected(pdus: list[Pdu]) -> dict[tuple[int, str], list[Pdu]]:
    out: dict[tuple[int, str], list[Pdu]] = {}
    for pdu in pdus:
        out.setdefault((pdu.stream, pdu.sender), []).append(pdu)
    return out


def assert_dissected_as_decoded(version: Version, records: list[CaptureRecord],
                                pcap: Path, **write: Any) -> int:  # fmt: skip
    """tshark shows every frame of ``records`` as the Python decoder decodes it, with no
    expert info but the note on ignored unknown frames; the number of frames."""
    port = write_pcap(version, records, pcap, **write)
    proto = proto_name(version)
    shown = dissected(run_tshark(pcap, proto, port, prefs=server_port(version)[1]))
    expected = expected_frames(version, records)
    assert sorted(shown) == sorted(expected), "streams and directions differ"
    for key, frames in expected.items():
        pdus = shown[key]
        assert len(pdus) == len(frames), f"{key}: {len(pdus)} frames shown, {len(frames)} decoded"
        for pdu, frame in zip(pdus, frames):
            name = type(frame).__name__
            want = as_shown(plain(frame))
            assert pdu.errors() == [], f"packet {pdu.packet} ({name}): {pdu.errors()}"
            assert frame_plain(pdu, proto, name, want) == want, f"packet {pdu.packet}: {name}"
    return sum(len(frames) for frames in expected.values())


# --- golden vectors ----------------------------------------------------------------------


def context_frames(version: Version, ctx: dict[str, Any] | None) -> list[bytes]:
    """Frames that announce ``ctx`` (a vector's decode context) as a peer would: for each
    value, the frame of its ``set_by`` rule (rsio: Subscribed(subscriber, element_size))."""
    if not ctx:
        return []
    codec = version.codec()
    model = {c.name: c for c in load_protocol(version.idl, str(version.idl)).context}
    frames = []
    for name, values in ctx.items():
        value = model[name]
        frame_name, field = value.set_by[0]
        assert value.keyed_by is not None
        for key, amount in values.items():
            cls = getattr(codec, frame_name)
            frames.append(codec.encode(cls(**{value.keyed_by: key, field: amount})))
    return frames


def vector_sender(version: Version, vector: dict[str, Any]) -> str:
    """Who sends a vector's frame: the vector's ``sender``, else the side whose frame has
    the code (RabbitMQ codes mean different frames from each side), else the client."""
    if "sender" in vector:
        return str(vector["sender"])
    codec = version.codec()
    if not codec.NEEDS_SENDER or len(vector["hex"]) < 8:
        return "client"
    code = (int(vector["hex"][:4], 16), int(vector["hex"][4:8], 16))
    for member in codec.FrameType:
        if member.value == code:
            for cls in vars(codec).values():
                if getattr(cls, "FRAME_TYPE", None) is member:
                    return "server" if cls.SENDER == "server" else "client"
    return "client"


@pytest.mark.parametrize("version", ALONE, ids=IDS)
def test_every_golden_vector_dissects_to_what_the_python_decoder_returns(
    version: Version, tmp_path: Path
) -> None:
    records: list[CaptureRecord] = []
    for index, vector in enumerate(version.vectors(), 1):
        sender = vector_sender(version, vector)
        for frame in [*context_frames(version, vector.get("ctx")), bytes.fromhex(vector["hex"])]:
            records.append(record(index, sender, frame, len(records)))
    # 64-byte segments: every vector longer than that is reassembled across segments
    shown = assert_dissected_as_decoded(version, records, tmp_path / "vectors.pcapng", mss=64)
    assert shown == len(records) >= len(version.vectors()) > 0


@pytest.mark.parametrize("version", WITH_ERRORS, ids=[v.id for v in WITH_ERRORS])
def test_every_malformed_vector_is_an_expert_error_named_after_the_python_error(
    version: Version, tmp_path: Path
) -> None:
    """Each malformed vector alone on a connection, read without TCP reassembly (so a
    frame cut short is shown cut short, not waited for): the dissector shows the expert
    error of the Python decoder's error class (Truncated -> .truncated, ...).  A stream
    of self-delimiting frames has no end of frame: its trailing bytes are the start of
    the next frame, whose error shows instead; an empty vector is no bytes at all."""
    vectors = version.vectors("_errors")
    codec = version.codec()
    delimited = codec.LENGTH_PREFIX_SIZE == 0
    # no header length either (MQTT's is one): a frame's end is where its decoding ends
    self_delimiting = (
        delimited and plan_codec(load_protocol(version.idl, str(version.idl))).frame_length is None
    )
    records: list[CaptureRecord] = []
    cases: list[tuple[int, str, int, dict[str, Any]]] = []  # stream, sender, frames before
    for vector in vectors:
        if delimited and not vector["hex"]:
            continue
        sender = vector_sender(version, vector)
        connection = len(cases) + 1
        before = context_frames(version, vector.get("ctx"))
        for frame in [*before, bytes.fromhex(vector["hex"])]:
            records.append(record(connection, sender, frame, len(records)))
        cases.append((len(cases), sender, len(before), vector))
    port = write_pcap(version, records, tmp_path / "errors.pcapng")
    proto = proto_name(version)
    shown = dissected(run_tshark(tmp_path / "errors.pcapng", proto, port, desegment=False,
                                 prefs=server_port(version)[1]))  # fmt: skip
    for stream, sender, before, vector in cases:
        pdus = shown.get((stream, sender), [])
        assert all(not pdu.errors() for pdu in pdus[:before]), vector["name"]
        rest = pdus[before:]
        kind = f"{proto}.{error_kind(getattr(errors, vector['error'])(''))}"
        if self_delimiting and vector["error"] == "TrailingBytes":
            assert rest and not rest[0].errors(), vector["name"]
            assert any(pdu.errors() for pdu in rest[1:]), vector["name"]
        else:
            assert len(rest) == 1, f"{vector['name']}: {len(rest)} frames shown"
            assert rest[0].errors() == [kind], f"{vector['name']}: {rest[0].experts()}"


# --- mutated vectors: the dissector and the decoder agree ---------------------------------

ERROR_CLASSES = (
    "Truncated",
    "TrailingBytes",
    "NonCanonical",
    "RuleViolation",
    "InvalidValue",
    "UnknownFrameType",
    "FrameTooLarge",
)


def error_kind(error: Exception) -> str:
    """The expert a decoder error shows as: its nearest class the dissector names
    (InvalidString is an InvalidValue)."""
    name = next(c.__name__ for c in type(error).__mro__ if c.__name__ in ERROR_CLASSES)
    return snake(name)


def mutants(data: bytes, rng: random.Random) -> list[bytes]:
    """Cut short, one byte changed, one byte added, one byte dropped."""
    out = [data[: rng.randrange(len(data))] for _ in range(2)] if data else []
    for _ in range(3):
        if data:
            at = rng.randrange(len(data))
            out.append(data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :])
    out.append(data + bytes([rng.randrange(256)]))
    if len(data) > 1:
        at = rng.randrange(len(data))
        out.append(data[:at] + data[at + 1 :])
    return [m for m in out if m]


@pytest.mark.parametrize("version", ALONE, ids=IDS)
def test_mutated_vectors_dissect_exactly_as_the_python_decoder_decodes_or_refuses_them(
    version: Version, tmp_path: Path
) -> None:
    """Every golden vector, cut, changed, lengthened and shortened at random positions
    (a fixed seed: the same mutants each run), alone on a connection and read without
    reassembly: where the decoder decodes the dissector shows the same frame with no
    error, where it refuses the dissector shows the expert of the decoder's error --
    never a Lua error (.dissector_error).  Self-delimiting frames are compared up to the
    first frame (what follows it is the next frame on a stream)."""
    codec = version.codec()
    delimited = codec.LENGTH_PREFIX_SIZE == 0
    rng = random.Random(f"wireshark:{version.id}")
    records: list[CaptureRecord] = []
    cases: list[tuple[int, str, int, Any]] = []  # stream, sender, frames before, outcome
    for vector in version.vectors():
        sender = vector_sender(version, vector)
        before = context_frames(version, vector.get("ctx"))
        for data in [m for _ in range(3) for m in mutants(bytes.fromhex(vector["hex"]), rng)]:
            ctx = context(codec, vector.get("ctx"))
            outcome: Any
            try:
                if delimited:
                    outcome = codec.decode_at(data, 0, len(data), ctx, sender)[0]
                else:
                    outcome = codec.decode(data, ctx, sender)
            except DecodeError as error:
                outcome = error_kind(error)
            connection = len(cases) + 1
            for frame in [*before, data]:
                records.append(record(connection, sender, frame, len(records)))
            cases.append((len(cases), sender, len(before), outcome))
    port = write_pcap(version, records, tmp_path / "mutants.pcapng")
    proto = proto_name(version)
    shown = dissected(run_tshark(tmp_path / "mutants.pcapng", proto, port, desegment=False,
                                 prefs=server_port(version)[1]))  # fmt: skip
    assert not [p for pdus in shown.values() for p in pdus
                if f"{proto}.dissector_error" in p.experts()]  # fmt: skip
    for stream, sender, before, outcome in cases:
        pdus = shown[(stream, sender)][before:]
        assert pdus if delimited else len(pdus) == 1, (stream, outcome)
        if isinstance(outcome, str):
            assert pdus[0].errors() == [f"{proto}.{outcome}"], (pdus[0].packet, outcome)
        else:
            name, want = type(outcome).__name__, as_shown(plain(outcome))
            assert pdus[0].errors() == [], (pdus[0].packet, name, pdus[0].errors())
            assert frame_plain(pdus[0], proto, name, want) == want, (pdus[0].packet, name)
    assert len(cases) > 300


def test_after_a_malformed_self_delimiting_frame_the_direction_is_shown_out_of_step(
    tmp_path: Path,
) -> None:
    """With reassembly, as a stream decoder: a BPMUX frame the codec refuses (a
    non-canonical VarU64) cannot be skipped, so what follows it in that direction is
    not dissected (an expert warning), while the other direction goes on."""
    version = Version("bpmux", "rel")
    codec = version.codec()
    request, close = codec.encode(codec.Request(1, b"abc")), codec.encode(codec.Close())
    frames = [("client", request), ("client", bytes.fromhex("00f805")),
              ("server", close), ("client", request), ("server", close)]  # fmt: skip
    records = [record(1, sender, frame, n) for n, (sender, frame) in enumerate(frames)]
    port = write_pcap(version, records, tmp_path / "broken.pcapng")
    proto = proto_name(version)
    shown = dissected(run_tshark(tmp_path / "broken.pcapng", proto, port,
                                 prefs=server_port(version)[1]))  # fmt: skip
    client = [pdu.experts() for pdu in shown[(0, "client")]]
    assert client == [[], [f"{proto}.non_canonical"], [f"{proto}.out_of_step"]]
    assert [pdu.experts() for pdu in shown[(0, "server")]] == [[], []]


# --- real sessions -----------------------------------------------------------------------


def session_records(folder: Path) -> list[CaptureRecord]:
    records = [r for path in capture_files(folder / "cap.wscap") for r in iter_records(path)]
    assert records
    return records


def test_a_real_rsocket_session_of_the_demo_responder_dissects_as_decoded(tmp_path: Path) -> None:
    from wirestream.apps.demo_responder import EchoResponder
    from wirestream.runtime.rsocket import connect, serve

    async def outbound() -> AsyncIterator[bytes]:
        for word in (b"one", b"two", b"three"):
            yield word

    async def main() -> None:
        with CaptureWriter(tmp_path / "cap.wscap", "rsocket/1.0") as capture:
            async with await serve("tcp://127.0.0.1:0", EchoResponder()) as server:
                async with connect(server.url, capture=capture) as rs:
                    assert (await rs.request_response(b"ping", b"meta")).data == b"ping"
                    big = bytes(range(256)) * 40  # 10 KiB: several TCP segments
                    assert (await rs.request_response(big)).data == big
                    got = [p.data async for p in rs.request_stream(b"20", limit_rate=4)]
                    assert got == [b"%d" % n for n in range(20)]
                    echoed = [p.data async for p in rs.request_channel(b"go", outbound=outbound())]
                    assert echoed[0] == b"go"
                    await rs.fire_and_forget(b"bye", b"m")
                    await rs.metadata_push(b"pushed")
                    with pytest.raises(Exception):
                        [p async for p in rs.request_stream(b"not a count")]

    run(main())
    records = session_records(tmp_path)
    version = Version("rsocket", "v1_0")
    shown = assert_dissected_as_decoded(version, records, tmp_path / "session.pcapng")
    assert shown == len(records) > 40


@pytest.mark.usefixtures("rabbitmq_broker")
def test_a_real_rabbitmq_publish_consume_session_with_the_broker_dissects_as_decoded(
    tmp_path: Path,
) -> None:
    from tests.support.rabbitmq_stream_client_support import PORT, fresh_stream, uri
    from wirestream.runtime.rabbitmq_stream.aio import connect

    async def main() -> None:
        with CaptureWriter(tmp_path / "cap.wscap", "rabbitmq_stream/1") as capture:
            client = await connect(uri(PORT), capture=capture, reconnect=False)
            async with client:
                async with fresh_stream(client, prefix="ws-wireshark") as stream:
                    producer = await client.producer(stream)
                    messages = [b"m%d" % n for n in range(10)] + [b"x" * 5000]
                    await asyncio.gather(*[await producer.send(m) for m in messages])
                    await producer.close()
                    got: list[bytes] = []
                    consumer = await client.consumer(stream, offset="first")
                    async with asyncio.timeout(20):
                        async for message in consumer:
                            got.append(message.body)
                            if len(got) == len(messages):
                                break
                    await consumer.close()
                    assert got == messages

    run(main())
    records = session_records(tmp_path)
    names = {type(get_protocol("rabbitmq_stream/1").record_decoder().decode(
        r.frame, sender=r.sender)).__name__ for r in records}  # fmt: skip
    assert {"PeerPropertiesRequest", "Publish", "PublishConfirm", "Deliver"} <= names
    version = Version("rabbitmq_stream", "v1")
    assert assert_dissected_as_decoded(version, records, tmp_path / "session.pcapng") == len(
        records
    )


def test_a_real_rsio_session_with_fixed_size_elements_dissects_as_decoded(tmp_path: Path) -> None:
    """Fixed-size elements decode only with what Subscribed announced: the dissector
    keeps that context per TCP stream and direction, as the decoder does."""
    from wirestream.runtime import rsio

    async def ints(args: str) -> AsyncIterator[bytes]:
        for n in range(300):
            yield n.to_bytes(4, "big")

    async def words(args: str) -> AsyncIterator[bytes]:
        for word in (b"a", b"bb", b"c" * 3000):
            yield word

    async def main() -> None:
        publishers: dict[str, Any] = {"ints": rsio.Publisher(ints, element_size=4),
                                      "words": words}  # fmt: skip
        with CaptureWriter(tmp_path / "cap.wscap", "rsio/0") as capture:
            async with await rsio.serve("tcp://127.0.0.1:0", publishers=publishers,
                                        packed=True) as server:  # fmt: skip
                async with await rsio.connect(server.url, capture=capture) as peer:
                    assert len([e async for e in peer.subscribe("ints", limit_rate=64)]) == 300
                    got = [e async for e in peer.subscribe("words")]
                    assert got == [b"a", b"bb", b"c" * 3000]

    run(main())
    records = session_records(tmp_path)
    version = Version("rsio", "v0")
    assert assert_dissected_as_decoded(version, records, tmp_path / "session.pcapng") == len(
        records
    )


def test_a_real_bpmux_session_dissects_as_decoded(tmp_path: Path) -> None:
    from wirestream.runtime.bpmux import aio as bpmux

    class Upper(bpmux.Handler):
        async def on_request(self, data: bytes) -> bytes:
            return data.upper()

        async def on_stream(self, data: bytes, writer: Any) -> AsyncIterator[bytes]:
            for n in range(int(data)):
                yield b"item %d" % n

    async def main() -> None:
        with CaptureWriter(tmp_path / "cap.wscap", "bpmux/rel") as capture:
            async with bpmux.serve("tcp://127.0.0.1:0", Upper()) as server:
                async with bpmux.connect(server.url, capture=capture) as peer:
                    assert await peer.request(b"abc") == b"ABC"
                    assert await peer.request(b"x" * 3000) == b"X" * 3000
                    stream = await peer.open_stream(b"25")
                    assert [item async for item in stream] == [b"item %d" % n for n in range(25)]

    run(main())
    records = session_records(tmp_path)
    version = Version("bpmux", "rel")
    assert assert_dissected_as_decoded(version, records, tmp_path / "session.pcapng") == len(
        records
    )


# --- names ---------------------------------------------------------------------------------


def test_dissector_names_clash_with_no_dissector_wireshark_has() -> None:
    listed = subprocess.run([tshark(), "-G", "protocols"], capture_output=True, timeout=60,
                            check=True).stdout.decode()  # fmt: skip
    builtin = {line.split("\t")[2] for line in listed.splitlines() if line.count("\t") >= 2}
    assert builtin and not {proto_name(v) for v in VERSIONS} & builtin


def test_a_frame_named_like_a_field_of_the_dissector_gets_a_name_of_its_own(tmp_path: Path) -> None:
    """A frame called Length would be ws_rsocket_v1_0.length, the transport's length
    prefix; one called Flags the flags' namespace: each is named with a trailing _ (the
    prefix and the flags keep their names), and the rest of the dissector is as before."""
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    spec["frames"]["Length"] = {"code": 0x10, "fields": [{"name": "size", "type": "u8"}]}
    spec["frames"]["Flags"] = {"code": 0x11, "fields": []}
    path = tmp_path / "v1_0.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    lua = render_dissector(load_protocol(path, "idl/rsocket/v1_0.yaml"))
    assert 'ProtoField.none("ws_rsocket_v1_0.length_", "Length"' in lua
    assert 'ProtoField.uint8("ws_rsocket_v1_0.length_.size", "Size"' in lua
    assert 'ProtoField.none("ws_rsocket_v1_0.flags_", "Flags"' in lua
    assert 'ProtoField.uint24("ws_rsocket_v1_0.length", "Frame length"' in lua
    assert 'key = "length_", decode = frame.Length}' in lua


def test_default_ports_are_the_pcap_writers_well_known_ports_one_version_each() -> None:
    assert {protocol for protocol, _ in DEFAULT_PORTS} == set(WELL_KNOWN_PORTS)
    for (protocol, _), port in DEFAULT_PORTS.items():
        assert WELL_KNOWN_PORTS[protocol] == port
