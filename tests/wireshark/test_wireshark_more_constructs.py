"""The Wireshark target on what neither idl/ nor tests/idl_constructs has, with IDLs of
this test's own (and tests/idl_diff's toy, whose code is (frame_type, version)), proved
as tests/wireshark/test_wireshark_constructs.py proves the constructs: each IDL is generated
(Python and Lua) into a temporary package, frames go through the capture pcap writer
into tshark, and every frame tshark shows equals, field by field, what the generated
Python decoder returns, or shows the expert info of the error it raises.

- ``wsmask`` (framed by a header length field): ``transform: {xor: key}`` on bytes --
  the value is shown unmasked (from a data source of its own) where the masked bytes
  are, and the masked bytes themselves as ``<field>.masked`` (RFC 6455's masked "Hello"
  byte for byte); keys of 2 (little-endian), 4 and 8 bytes, a terminator found in the
  masked bytes, a NULL lenenc, ``forbid`` checked on the unmasked value;
  ``unknown: {policy: skip}`` with a three-part code (an UnknownFrame shown with its code
  as the codecs say it, ``(5, 1, 2)``, and its body); a three-part code ending in ``*``
  and a ``select:`` on one;
- ``wsphase`` (a length prefix): a code part from the context that is not the first
  (``[kind, ctx.phase]``), the phase replayed from the client/server machine, whose
  guards test a flag; a context value the client's frame sets that lays out the server's
  frames (both directions keep it);
- ``wsdelim`` (self-delimiting frames): a context value both directions keep, a varint
  code of 2**60 (no Lua number holds it), a closed enum of 64-bit values;
- the toy of ``tests/idl_diff/discriminator_changed_fields/new.yaml``: unknown frames
  with a two-part code and an ``ignore`` flag.
"""

from __future__ import annotations

import importlib
import random
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.protocols import ROOT, plain
from tests.wireshark.test_wireshark import dissected, error_kind, mutants
from tests.support.wireshark_support import Node, Pdu, as_shown, frame_plain, run_tshark
from wirestream.codegen.cli import generate_tree
from wirestream.runtime.capture.pcap import PcapngWriter
from wirestream.runtime.capture.protocols import CaptureProtocol
from wirestream.runtime.capture.reader import CaptureRecord
from wirestream.runtime.errors import DecodeError, EncodeError

PACKAGE = "ws_more_constructs_gen"  # the temporary package (unique: no clash with other tests)
PORT = 20779  # the server's port: the dissectors register none by default
T0 = 1_700_000_000 * 10**9
DRAWN = 40  # frames drawn from the strategies

WSMASK = """
wirestream: 1
protocol: wsmask
version: v1
title: Masks and long codes test protocol
byte_order: big
framing:
  length_field: length
  counts: after_header
header:
  fields:
    - word: u8
      bits:
        - {name: kind, width: 4}
        - {flags: 4}
    - {name: sub, type: u8}
    - {name: version, type: u16}
    - {name: length, type: u16}
  discriminator: [kind, sub, version]
  flags:
    fin: 0x8
unknown: {policy: skip}
frames:
  Masked:
    code: [1, 0, 1]
    fields:
      - {name: mask, type: u32}
      - {name: payload, type: bytes, length: rest, transform: {xor: mask}}   # WebSocket-style
  MaskedMore:
    code: [1, 1, 1]
    fields:
      - {name: key, type: u16le}
      - {name: wide, type: u64}
      - {name: short, type: bytes, length: u8, transform: {xor: key}}
      - {name: nul, type: bytes, terminator: 0, transform: {xor: key}}
      - {name: maybe, type: bytes, length: lenenc, nullable: true, transform: {xor: wide}}
      - {name: clean, type: bytes, length: u8, forbid: [0], transform: {xor: key}}
  Picky:
    code: [2, 7, 300]
    select: "remaining == 2"
    fields:
      - {name: value, type: u16}
"""

WSPHASE = """
wirestream: 1
protocol: wsphase
version: v1
title: Phases over a length prefix test protocol
framing:
  length_prefix: u32
header:
  fields:
    - word: u8
      bits:
        - {name: kind, width: 4}
        - {flags: 4}
  discriminator: [kind, ctx.phase]
  flags:
    more: 0x4
unknown: {policy: error}
context:
  phase:
    default: 1
    doc: what the receiver expects next (a Phase)
  width:
    default: 1
    doc: bytes of each reading, as the client's Hello said
    set_by: [Hello.width]
enums:
  Phase:
    type: u8
    values: {IDLE: 1, WAITING: 2, STREAMING: 3, SERVING: 4}
frames:
  Hello:
    code: [1, 4]
    sender: client
    fields:
      - {name: width, type: u8, min: 1}
  Accept:
    code: [2, 2]
    sender: server
    fields:
      - {name: streams, type: u16}
  Chunk:
    code: [2, 3]
    sender: server
    fields:
      - {name: reading, type: bytes, size: ctx.width}
  Done:
    code: [3, 3]
    sender: server
    fields: []
machines:
  session:
    doc: The client asks; the server accepts, and streams chunks when it says more.
    roles: [client, server]
    states:
      idle: nothing asked yet
      waiting: Hello sent
      streaming: chunks follow
      serving: (server) answering
    initial: {client: idle, server: serving}
    terminal: []
    transitions:
      - {role: client, from: idle, send: Hello, to: waiting}
      - {role: client, from: waiting, send: Hello, stay: true}
      - {role: client, from: waiting, receive: Accept, when: {more: true}, to: streaming}
      - {role: client, from: waiting, receive: Accept, when: {more: false}, stay: true}
      - {role: client, from: streaming, receive: Chunk, stay: true}
      - {role: client, from: streaming, receive: Done, to: waiting}
      - {role: server, from: serving, receive: Hello, stay: true}
      - {role: server, from: serving, send: [Accept, Chunk, Done], stay: true}
"""

WSDELIM = """
wirestream: 1
protocol: wsdelim
version: v1
title: Self-delimiting frames with context test protocol
framing:
  self_delimiting: true
header:
  fields:
    - {name: kind, type: varint}
  discriminator: kind
unknown: {policy: error}
context:
  size:
    default: 2
    doc: bytes of each value, as the client's Setup said
    set_by: [Setup.size]
enums:
  Big:
    type: u64
    values: {SMALL: 1, HUGE: 18446744073709551615}
frames:
  Setup:
    code: 1
    sender: client
    fields:
      - {name: size, type: u8}
  Value:
    code: 1152921504606846976   # 2**60
    sender: server
    fields:
      - {name: value, type: bytes, size: ctx.size}
      - {name: level, type: u64, enum: Big}
"""

TOY = ROOT / "tests" / "idl_diff" / "discriminator_changed_fields" / "new.yaml"


@dataclass
class Built:
    root: Path

    def codec(self, protocol: str, version: str = "v1") -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{protocol}.{version}")

    def lua(self, protocol: str, version: str = "v1") -> Path:
        return self.root / PACKAGE / "wireshark" / f"{protocol}_{version}.lua"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The IDLs above (and the toy) generated (Python + Lua) into a temporary package."""
    tree = tmp_path_factory.mktemp("idl")
    for name, text in (("wsmask", WSMASK), ("wsphase", WSPHASE), ("wsdelim", WSDELIM)):
        (tree / name).mkdir()
        (tree / name / "v1.yaml").write_text(text.lstrip(), encoding="utf-8")
    (tree / "toy").mkdir()
    shutil.copy(TOY, tree / "toy" / "v2.yaml")
    out = tmp_path_factory.mktemp("more_constructs")
    for rel, text in generate_tree(tree, PACKAGE, targets=("python", "wireshark")).items():
        path = out / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(out))
    try:
        yield Built(out)
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


# --- pcap files and what tshark shows -------------------------------------------------------


def record(connection: int, frame: bytes, n: int, sender: str = "client") -> CaptureRecord:
    return CaptureRecord(T0 + n * 1000, connection, "out" if sender == "client" else "in",
                         frame, "client")  # fmt: skip


def tshark_pdus(built: Built, protocol: str, records: list[CaptureRecord], path: Path, *,
                version: str = "v1", mss: int = 1460,
                desegment: bool = True) -> dict[tuple[int, str], list[Pdu]]:  # fmt: skip
    codec = built.codec(protocol, version)
    capture = CaptureProtocol.of(f"{protocol}/1", codec.__name__, "binary")
    with open(path, "wb") as out:
        with PcapngWriter(out, capture, server_port=PORT, mss=mss) as writer:
            for r in records:
                writer.add(r)
    proto = f"ws_{protocol}_{version}"
    pdus = run_tshark(path, proto, PORT, desegment=desegment, scripts=[built.lua(protocol, version)],
                      prefs={f"{proto}.tcp_port": str(PORT)})  # fmt: skip
    assert not [p for p in pdus if f"{proto}.dissector_error" in p.experts()]
    return dissected(pdus)


def fields(pdu: Pdu, proto: str, name: str) -> list[str]:
    """The values of every field ``<proto>.<name>`` the frame shows, wherever it is."""
    found: list[str] = []

    def walk(items: list[Node]) -> None:
        for node in items:
            if node.name == f"{proto}.{name}":
                found.append(node.value)
            walk(node.children)

    walk(pdu.tree)
    return found


def code_text(code: Any) -> str:
    """A frame code as the codecs' messages (and the dissectors' UnknownFrame) say it."""
    return str(tuple(code)) if isinstance(code, tuple) else str(code)


def assert_shows(pdu: Pdu, proto: str, frame: Any) -> None:
    """``pdu`` is ``frame`` (an UnknownFrame: its code and body, with the note that the
    receiver skips or ignores it), with no error."""
    name = type(frame).__name__
    assert pdu.errors() == [], f"packet {pdu.packet} ({name}): {pdu.errors()}"
    if name == "UnknownFrame":
        assert pdu.experts() == [f"{proto}.unknown_frame"], pdu.experts()
        assert fields(pdu, proto, "unknown_frame.code") == [code_text(frame.code)]
        body = fields(pdu, proto, "unknown_frame.body")
        assert [b.replace(":", "") for b in body] == [frame.body.hex()], body
        return
    want = as_shown(plain(frame))
    assert frame_plain(pdu, proto, name, want) == want, f"packet {pdu.packet}: {name}"


def drawn_wires(codec: ModuleType) -> list[bytes]:
    """The bytes of ``DRAWN`` frames the generated strategies draw (the same ones each run)
    that the codec encodes."""
    strategies = importlib.import_module(codec.__name__ + ".strategies")
    found: list[Any] = []

    @settings(max_examples=DRAWN, database=None, derandomize=True, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.one_of(strategies.masked(), strategies.masked_more(), strategies.picky()))
    def collect(drawn: tuple[Any, Any]) -> None:
        found.append(drawn[0])

    collect()
    out = []
    for frame in found:
        try:
            out.append(codec.encode(frame))
        except EncodeError:  # a masked value holding its terminator
            continue
    return out


# --- wsmask: masked bytes, unknown frames skipped, three-part codes ---------------------------


def mask_frames(c: ModuleType) -> list[bytes]:
    """Edge cases of the masks, codes and unknown frames, as bytes."""
    frames: list[Any] = [
        c.Masked(mask=0x37FA213D, payload=b"Hello"),  # RFC 6455 5.7: 7f 9f 4d 51 58 on the wire
        c.Masked(mask=0, payload=b"plain"),
        c.Masked(mask=0xFFFFFFFF, payload=b""),
        c.Masked(fin=True, mask=0x01020304, payload=bytes(range(256)) * 3),
        c.MaskedMore(key=0xFF00, wide=2**64 - 1, short=b"abc", nul=b"\x01\x02", maybe=None,
                     clean=b"x\xff"),
        c.MaskedMore(key=0x1234, wide=0x0102030405060708, short=b"", nul=b"", maybe=b"",
                     clean=b""),
        c.MaskedMore(key=0xABCD, wide=0x8000000000000001, short=b"\xcd" * 9,
                     nul=b"\x34\x12" * 3 + b"\x34", maybe=b"m" * 300, clean=b"\x12\x34"),
        c.Picky(value=0xBEEF),
        c.UnknownFrame((5, 1, 2), 0, b"\xaa\xbb"),
        c.UnknownFrame((2, 8, 300), 8, b""),
        c.UnknownFrame((15, 255, 65535), 1, b"u" * 70),
    ]  # fmt: skip
    out = [c.encode(frame) for frame in frames]
    # Picky's own code when its select: does not hold, and codes no frame has: skipped as
    # unknown frames (a '*' code needs a peeked last part, which this header has not)
    for version, body in ((9, b"\xff\x01"), (300, b"\x01\x02\x03"), (0, b"")):
        data = bytes([0x20, 7]) + version.to_bytes(2, "big") + len(body).to_bytes(2, "big") + body
        assert type(c.decode(data)).__name__ == "UnknownFrame"
        out.append(data)
    return out


def test_masked_bytes_show_the_value_where_the_masked_bytes_are(
    built: Built, tmp_path: Path
) -> None:
    """RFC 6455's example (5.7, a masked "Hello"): the tree shows the value unmasked as
    ``payload`` and the bytes on the wire as ``payload.masked``."""
    c = built.codec("wsmask")
    frame = c.Masked(mask=0x37FA213D, payload=b"Hello")
    data = c.encode(frame)
    assert data.endswith(bytes.fromhex("37fa213d7f9f4d5158"))
    pdus = tshark_pdus(built, "wsmask", [record(1, data, 0)], tmp_path / "rfc6455.pcapng")
    (pdu,) = pdus[(0, "client")]
    proto = "ws_wsmask_v1"
    assert fields(pdu, proto, "masked.payload.masked") == ["7f:9f:4d:51:58"]
    assert fields(pdu, proto, "masked.payload") == ["48:65:6c:6c:6f"]
    assert_shows(pdu, proto, c.decode(data))


def test_masks_codes_and_skipped_unknown_frames_dissect_as_decoded(
    built: Built, tmp_path: Path
) -> None:
    """Strategy-drawn and edge-case frames, each alone on a connection (64-byte
    segments), then all of them as one stream in segments of 1 to 7 bytes."""
    c = built.codec("wsmask")
    wires = drawn_wires(c) + mask_frames(c)
    frames = [c.decode(data) for data in wires]
    names = {type(f).__name__ for f in frames}
    assert names == {"Masked", "MaskedMore", "Picky", "UnknownFrame"}, names
    records = [record(n + 1, data, n) for n, data in enumerate(wires)]
    stream = b"".join(wires)
    rng = random.Random("wireshark:more:wsmask")
    pos = 0
    while pos < len(stream):
        size = rng.randint(1, 7)
        records.append(record(len(frames) + 1, stream[pos : pos + size], len(records)))
        pos += size
    pdus = tshark_pdus(built, "wsmask", records, tmp_path / "wsmask.pcapng", mss=64)
    assert sorted(pdus) == [(n, "client") for n in range(len(frames) + 1)]
    for n, frame in enumerate(frames):
        assert len(pdus[(n, "client")]) == 1, n
        assert_shows(pdus[(n, "client")][0], "ws_wsmask_v1", frame)
    whole = pdus[(len(frames), "client")]
    assert len(whole) == len(frames)
    for pdu, frame in zip(whole, frames):
        assert_shows(pdu, "ws_wsmask_v1", frame)


def test_forbid_and_terminators_of_masked_bytes_are_those_of_the_codec(
    built: Built, tmp_path: Path
) -> None:
    """``forbid`` holds for the unmasked value (a 0x00 on the wire is fine when it unmasks
    to something else; a 0x00 that unmasks from a masked byte is not), the terminator is
    looked for in the masked bytes; each case alone on a connection, without reassembly."""
    c = built.codec("wsmask")
    proto = "ws_wsmask_v1"

    def more(body: bytes) -> bytes:
        return bytes([0x11, 1, 0, 1]) + len(body).to_bytes(2, "big") + body

    head = b"\x34\x12" + bytes(8) + b"\x00"  # key 0x1234 (little-endian), wide 0, short b""
    cases: list[tuple[str, bytes, str | None]] = [
        ("a 0x00 on the wire unmasks to 0x34", more(head + b"\x00" + b"\xfb" + b"\x02\x00\x00"),
         None),
        ("0x34 on the wire unmasks to 0x00: forbidden", more(head + b"\x00" + b"\xfb"
                                                             + b"\x01\x34"), "invalid_value"),
        ("no terminator in the masked bytes", more(head + b"\x34\x12\x34"), "invalid_value"),
        ("a masked length past the frame", more(head + b"\x00\xfb\x05\x00"), "invalid_value"),
    ]  # fmt: skip
    for what, data, kind in cases:
        try:
            frame = c.decode(data)
        except DecodeError as error:
            assert error_kind(error) == kind, (what, error)
        else:
            assert kind is None, (what, frame)
    records = [record(n + 1, data, n) for n, (_, data, _) in enumerate(cases)]
    pdus = tshark_pdus(built, "wsmask", records, tmp_path / "forbid.pcapng", desegment=False)
    for n, (what, data, kind) in enumerate(cases):
        (pdu,) = pdus[(n, "client")]
        if kind is None:
            assert_shows(pdu, proto, c.decode(data))
            assert fields(pdu, proto, "masked_more.clean.masked") == ["00:00"], what
        else:
            assert pdu.errors() == [f"{proto}.{kind}"], (what, pdu.experts())


def test_mutated_masked_frames_dissect_exactly_as_the_python_decoder_decodes_or_refuses_them(
    built: Built, tmp_path: Path
) -> None:
    """Golden frames cut, changed, lengthened and shortened at random positions (a fixed
    seed), alone on a connection without reassembly: the first frame tshark shows is
    the one ``decode_at`` decodes, or shows the expert of the decoder's error."""
    c = built.codec("wsmask")
    rng = random.Random("wireshark:more:mutants")
    cases: list[tuple[bytes, Any]] = []
    for data in drawn_wires(c)[:25] + mask_frames(c):
        if len(data) > 300:
            continue
        for mutant in [m for _ in range(3) for m in mutants(data, rng)]:
            outcome: Any
            try:
                outcome = c.decode_at(mutant, 0, len(mutant))[0]
            except DecodeError as error:
                outcome = error_kind(error)
            cases.append((mutant, outcome))
    records = [record(n + 1, data, n) for n, (data, _) in enumerate(cases)]
    pdus = tshark_pdus(built, "wsmask", records, tmp_path / "mutants.pcapng", desegment=False)
    kinds = set()
    for n, (data, outcome) in enumerate(cases):
        got = pdus[(n, "client")]
        if isinstance(outcome, str):
            kinds.add(outcome)
            assert got[0].errors() == [f"ws_wsmask_v1.{outcome}"], (data.hex(), outcome)
        else:
            assert_shows(got[0], "ws_wsmask_v1", outcome)
    assert len(cases) > 200 and {"truncated", "invalid_value"} <= kinds, kinds


# --- wsphase: a context code part replayed from the machine, over a length prefix -------------


def test_a_phase_from_the_machine_tells_frames_of_one_kind_apart(
    built: Built, tmp_path: Path
) -> None:
    """Kind 2 is an Accept while the client waits and a Chunk while it streams: the
    dissector replays the session machine (an Accept with ``more`` set moves the client to
    streaming, a Done back) and lays out each Chunk by the width the client's Hello set;
    the Python decoder, given the phase and the width, decodes the same frames."""
    c = built.codec("wsphase")
    waiting, streaming, serving = c.Phase.WAITING, c.Phase.STREAMING, c.Phase.SERVING
    session = [
        ("client", c.Hello(width=3), serving),
        ("server", c.Accept(streams=1), waiting),  # more clear: the client keeps waiting
        ("server", c.Accept(streams=2, more=True), waiting),
        ("server", c.Chunk(reading=b"abc"), streaming),
        ("server", c.Chunk(reading=b"xyz", more=True), streaming),
        ("server", c.Done(), streaming),
        ("client", c.Hello(width=1), serving),
        ("server", c.Accept(streams=3, more=True), waiting),
        ("server", c.Chunk(reading=b"!"), streaming),
    ]
    records: list[CaptureRecord] = []
    expected: dict[str, list[tuple[Any, int]]] = {"client": [], "server": []}
    width = 1
    for n, (sender, frame, phase) in enumerate(session):
        data = c.encode(frame, c.Context(phase=phase, width=width))
        decoded = c.decode(data, c.Context(phase=phase, width=width))
        assert decoded == frame
        if isinstance(frame, c.Hello):
            width = frame.width
        records.append(record(1, data, n, sender))
        expected[sender].append((decoded, int(phase)))
    pdus = tshark_pdus(built, "wsphase", records, tmp_path / "phase.pcapng")
    proto = "ws_wsphase_v1"
    for sender, frames in expected.items():
        shown = pdus[(0, sender)]
        assert len(shown) == len(frames), sender
        for pdu, (frame, phase) in zip(shown, frames):
            assert_shows(pdu, proto, frame)
            assert fields(pdu, proto, "ctx.phase") == [str(phase)]


# --- wsdelim: context both directions keep on self-delimiting frames, 64-bit codes -----------


def test_self_delimiting_frames_keep_context_across_directions(
    built: Built, tmp_path: Path
) -> None:
    """The server's Value is as long as the client's Setup said (2 bytes before any);
    its code is 2**60 and its level a closed enum of 64-bit values (one beyond them is
    invalid); the server's direction again as one stream in segments of 1 to 7 bytes."""
    c = built.codec("wsdelim")
    big = c.Big
    flows: list[list[tuple[str, bytes, Any]]] = []

    def value(data: bytes, level: int, size: int) -> tuple[str, bytes, Any]:
        frame = c.Value(value=data, level=level)
        return ("server", c.encode(frame, c.Context(size=size)), frame)

    flows.append([value(b"ab", big.SMALL, 2), ("client", c.encode(c.Setup(size=5)), c.Setup(size=5)),
                  value(b"hello", big.HUGE, 5), value(b"world", big.SMALL, 5)])  # fmt: skip
    bad = c.encode(c.Value(value=b"abcd", level=big.SMALL), c.Context(size=4))
    bad = bad[:-1] + b"\x02"  # level 2: no Big
    with pytest.raises(DecodeError) as refused:
        c.decode(bad, c.Context(size=4))
    assert error_kind(refused.value) == "invalid_value"
    flows.append([("client", c.encode(c.Setup(size=4)), c.Setup(size=4)),
                  ("server", bad, "invalid_value")])  # fmt: skip
    records = [record(n + 1, data, 10 * n + i, sender)
               for n, flow in enumerate(flows) for i, (sender, data, _) in enumerate(flow)]  # fmt: skip
    # the first flow's server frames again, as one stream cut small (a Setup first)
    stream = b"".join(data for sender, data, _ in flows[0][1:] if sender == "server")
    records.append(record(len(flows) + 1, flows[0][1][1], 100, "client"))
    rng = random.Random("wireshark:more:wsdelim")
    pos = 0
    while pos < len(stream):
        size = rng.randint(1, 7)
        records.append(record(len(flows) + 1, stream[pos : pos + size], 101 + pos, "server"))
        pos += size
    pdus = tshark_pdus(built, "wsdelim", records, tmp_path / "delim.pcapng")
    proto = "ws_wsdelim_v1"
    for n, flow in enumerate(flows):
        for sender in ("client", "server"):
            wanted = [frame for who, _, frame in flow if who == sender]
            shown = pdus[(n, sender)]
            assert len(shown) == len(wanted), (n, sender)
            for pdu, frame in zip(shown, wanted):
                if isinstance(frame, str):
                    assert pdu.errors() == [f"{proto}.{frame}"], pdu.experts()
                else:
                    assert_shows(pdu, proto, frame)
    again = pdus[(len(flows), "server")]
    assert len(again) == 2
    for pdu, (_, _, frame) in zip(again, flows[0][2:]):
        assert_shows(pdu, proto, frame)
    assert fields(again[0], proto, "kind") == [str(2**60)]


# --- toy v2: unknown frames with a two-part code ------------------------------------------------


def test_unknown_frames_with_a_two_part_code_are_ignored_by_their_flag(
    built: Built, tmp_path: Path
) -> None:
    """(frame_type, version) codes: an unknown one with the ``ignore`` flag is an
    UnknownFrame (its code as the codecs say it, ``(9, 0)``); without the flag it is an
    unknown frame type, as the decoder says."""
    c = built.codec("toy", "v2")
    hello = c.encode(c.Hello(id=7, name="seven", extra=True))
    ignored = c.encode(c.UnknownFrame((9, 0), 0x80, b"xyz"))
    unknown = bytes.fromhex("0100") + b"\x03"  # Hello's frame_type with version 3, no flag
    with pytest.raises(DecodeError) as refused:
        c.decode(unknown)
    assert error_kind(refused.value) == "unknown_frame_type"
    records = [record(1, hello, 0), record(1, ignored, 1), record(1, hello, 2),
               record(2, unknown, 3)]  # fmt: skip
    pdus = tshark_pdus(built, "toy", records, tmp_path / "toy.pcapng", version="v2")
    proto = "ws_toy_v2"
    first = pdus[(0, "client")]
    assert len(first) == 3
    for pdu, data in zip(first, (hello, ignored, hello)):
        assert_shows(pdu, proto, c.decode(data))
    assert [p.errors() for p in pdus[(1, "client")]] == [[f"{proto}.unknown_frame_type"]]


def test_codes_no_lua_number_holds_key_the_decoder_tables_by_text(built: Built) -> None:
    """Three-part codes and a code of 2**60 key the tables by their parts' text; RabbitMQ's
    (key, version) and one-part codes stay numbers (the committed dissectors)."""
    assert '["1:0:1"] = {name = "Masked"' in built.lua("wsmask").read_text()
    assert '["1152921504606846976"] = {name = "Value"' in built.lua("wsdelim").read_text()
    assert '[0x10000] = {name = "Hello"' in built.lua("toy", "v2").read_text()
