"""The Wireshark target over every construct of the IDL beyond the seed protocols
(tests/idl_constructs: byte order, f32/f64, vbi/zigzag/lenenc, NUL-terminated strings,
bool bits and presence by them, ``if:`` conditions and ``more``, multi-bit flag values,
fixed flags, rules, framing by a header length field, bytes masked with an earlier key),
proved as tests/wireshark/test_wireshark.py proves the committed dissectors: the IDL is generated
(Python and Lua) into a temporary package, frames go through the capture pcap writer into
one tshark run per file, and every frame tshark shows equals, field by field, what the
generated Python decoder returns, or shows the expert info of the error it raises.

- golden frames: drawn from the generated hypothesis strategies (derandomized: the same
  frames each run) and edge cases (NaN payloads and signs, infinities, signed zero,
  denormals; vbi lengths at 1/2/3-byte boundaries; lenenc at each form's bounds and
  NULL; absent ``more`` fields; RFC 6455's masked "Hello"), each frame on its own
  connection in 64-byte segments, and all of them again as one stream cut into 1..7-byte
  segments (headers cut inside their vbi length), both reassembled by the dissector;
- malformed frames (no reassembly): an expert named after the Python error class;
- mutated frames (no reassembly): the dissector decodes what the decoder decodes and
  refuses what it refuses, with the same error;
- the stream: a malformed body is skipped (the header said where it ends), a malformed
  header leaves the direction out of step, a declared length above the limit is
  ``frame_too_large``.

Floats are compared as Wireshark 4.0 shows them (``%.6g`` for binary32, ``%.15g`` for
binary64, ``nan``/``-nan``): the JSON carries no more digits.
"""

from __future__ import annotations

import importlib
import math
import random
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.support.protocols import ROOT
from tests.wireshark.test_wireshark import dissected, mutants
from tests.support.wireshark_support import Pdu, as_shown, frame_plain, run_tshark, snake
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.cli import generate_tree
from wirestream.codegen.plan.codec import CodecPlan, plan_codec
from wirestream.runtime import _support
from wirestream.runtime.capture.pcap import PcapngWriter
from wirestream.runtime.capture.protocols import CaptureProtocol
from wirestream.runtime.capture.reader import CaptureRecord
from wirestream.runtime.errors import DecodeError

IDL_TREE = ROOT / "tests" / "idl_constructs"
IDL_FILE = IDL_TREE / "constructs" / "v1.yaml"
PACKAGE = "ws_constructs_gen"  # the temporary package (unique: no clash with other tests)
PROTO = "ws_constructs_v1"
PORT = 20777  # the server's port: the dissector registers none by default
PREFS = {f"{PROTO}.tcp_port": str(PORT)}
T0 = 1_700_000_000 * 10**9
DRAWN = 60  # frames drawn from the strategies
# The experts a Python error shows as: its nearest class the dissector names.
ERROR_CLASSES = ("Truncated", "TrailingBytes", "NonCanonical", "RuleViolation", "InvalidValue",
                 "UnknownFrameType", "FrameTooLarge")  # fmt: skip


@dataclass
class Built:
    codec: ModuleType
    strategies: ModuleType
    capture: CaptureProtocol
    lua: Path
    plan: CodecPlan

    @property
    def floats(self) -> dict[str, dict[str, int]]:
        """record -> its float attributes -> their bits (32, 64)."""
        return {
            record.name: {a.name: a.float.bits for a in record.attrs if a.float is not None}
            for record in [*self.plan.frames, *self.plan.structs]
        }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """tests/idl_constructs generated (Python + Lua) into a temporary package."""
    out = tmp_path_factory.mktemp("constructs")
    files = generate_tree(IDL_TREE, PACKAGE, targets=("python", "wireshark"))
    for rel, text in files.items():
        path = out / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(out))
    try:
        codec = importlib.import_module(f"{PACKAGE}.constructs.v1")
        strategies = importlib.import_module(f"{PACKAGE}.constructs.v1.strategies")
        capture = CaptureProtocol.of("constructs/1", codec.__name__, "binary")
        plan = plan_codec(load_protocol(IDL_FILE, str(IDL_FILE.relative_to(ROOT))))
        yield Built(codec, strategies, capture, out / PACKAGE / "wireshark" / "constructs_v1.lua",
                    plan)  # fmt: skip
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


# --- frames as tshark shows them -----------------------------------------------------------


def float_text(value: float | None, bits: int) -> str | None:
    """A float as Wireshark 4.0 shows it: printf's %.6g (binary32) or %.15g (binary64)."""
    if value is None:
        return None
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return ("%.6g" if bits == 32 else "%.15g") % value


def shown(built: Built, value: Any) -> Any:
    """A decoded frame or struct as plain values (tests.support.protocols.plain) with its floats
    as Wireshark shows them."""
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()}
    if value is None or isinstance(value, (bool, str)):
        return as_shown(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, list):
        return [shown(built, item) for item in value]
    floats = built.floats.get(type(value).__name__, {})
    return {
        name: (
            float_text(getattr(value, name), floats[name])
            if name in floats
            else shown(built, getattr(value, name))
        )
        for name in type(value).__match_args__
    }


def assert_shows(built: Built, pdu: Pdu, frame: Any) -> None:
    name = type(frame).__name__
    want = shown(built, frame)
    assert pdu.errors() == [], f"packet {pdu.packet} ({name}): {pdu.errors()}"
    assert frame_plain(pdu, PROTO, name, want) == want, f"packet {pdu.packet}: {name}"


def error_kind(error: Exception) -> str:
    return snake(next(c.__name__ for c in type(error).__mro__ if c.__name__ in ERROR_CLASSES))


# --- pcap files ------------------------------------------------------------------------------


def record(connection: int, frame: bytes, n: int, sender: str = "client") -> CaptureRecord:
    return CaptureRecord(T0 + n * 1000, connection, "out" if sender == "client" else "in",
                         frame, "client")  # fmt: skip


def tshark_pdus(built: Built, records: list[CaptureRecord], path: Path, *, mss: int = 1460,
                desegment: bool = True) -> dict[tuple[int, str], list[Pdu]]:  # fmt: skip
    with open(path, "wb") as out:
        with PcapngWriter(out, built.capture, server_port=PORT, mss=mss) as writer:
            for r in records:
                writer.add(r)
    pdus = run_tshark(path, PROTO, PORT, desegment=desegment, prefs=PREFS, scripts=[built.lua])
    assert not [p for p in pdus if f"{PROTO}.dissector_error" in p.experts()]
    return dissected(pdus)


# --- golden frames -----------------------------------------------------------------------------


def drawn_frames(built: Built) -> list[Any]:
    """``DRAWN`` frames of the generated strategies, the same ones each run."""
    found: list[Any] = []

    @settings(max_examples=DRAWN, database=None, derandomize=True, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(built.strategies.frames())
    def collect(drawn: tuple[Any, Any]) -> None:
        found.append(drawn[0])

    collect()
    return found


def f64(hex_bits: str) -> float:
    """The binary64 of big-endian ``hex_bits``."""
    value: float = struct.unpack(">d", bytes.fromhex(hex_bits))[0]
    return value


def edge_frames(built: Built) -> list[Any]:
    c = built.codec
    Numbers, Texts, Pair, Level = c.Numbers, c.Texts, c.Pair, c.Level
    out: list[Any] = []
    # floats: NaN payloads (signalling, quiet) and signs, infinities, zeros, denormals
    for e_bits, f_bits in [
        (0x7FA00001, "7ff0000000000001"), (0xFFC00000, "fff8000000000000"),
        (0x7F800000, "7ff0000000000000"), (0xFF800000, "fff0000000000000"),
        (0x80000000, "8000000000000000"), (0x00000001, "0000000000000001"),
        (0x7F7FFFFF, "7fefffffffffffff"), (0x3DCCCCCD, "3fb999999999999a"),
    ]:  # fmt: skip
        out.append(Numbers(e=_support.f32_from_bits(e_bits), f=f64(f_bits)))
    # integers at their bounds; lenenc at each form's edges; zigzag and varint extremes
    for i in [0, 250, 251, 0xFFFF, 0x10000, 0xFFFFFF, 0x1000000, 2**64 - 1]:
        out.append(Numbers(i=i, g=-(2**63), h=2**64 - 1, d=-(2**63), b=2**32 - 1, c=2**24 - 1))
    out.append(Numbers(urgent=True, level=Level.HIGH, a=0xFFFE, g=2**63 - 1, h=128, j=0xFFFF))
    out.append(Numbers(level=Level.MID, g=-1, h=127, j=0))
    # presence: by a bool bit (name), by `more` (reason, tail); NULL and empty lenenc bytes
    out.append(Texts())  # blob NULL, no name, no pairs, nothing more
    out.append(Texts(secure=True, name="", blob=b"", reason=0))
    out.append(Texts(name="\u00e9t\u00e9 \U0001f600", blob=b"\xfb" * 251,
                     pairs=[Pair("k", "v"), Pair("", "\x00")], reason=255, tail=b""))  # fmt: skip
    out.append(Texts(blob=b"\x00" * 250, reason=1, tail=b"\x00\xff" * 100))
    # vbi lengths at the 1/2 and 2/3-byte boundaries (the body: the bits, the blob with
    # its lenenc length, the pairs' count)
    for body in (127, 128, 16383, 16384):
        blob = body - 3 if body - 3 < 0xFB else body - 5
        frame = Texts(blob=b"b" * blob)
        assert len(c.encode(frame)) == 1 + (1 if body < 128 else 2 if body < 16384 else 3) + body
        out.append(frame)
    out.append(c.Empty())
    # masked bytes (transform: {xor: mask}): RFC 6455 5.7's masked "Hello", no bytes, a
    # mask of 0, bytes past 127 (a two-byte vbi length)
    out.append(c.Masked(mask=0x37FA213D, masked=b"Hello"))
    out.append(c.Masked(mask=0xFFFFFFFF, masked=b""))
    out.append(c.Masked(mask=0, masked=b"\x00clear"))
    out.append(c.Masked(mask=0x01020304, masked=bytes(range(200))))
    return out


def test_golden_frames_dissect_to_what_the_python_decoder_returns(
    built: Built, tmp_path: Path
) -> None:
    """Each frame alone on a connection (64-byte segments), then all of them as one stream
    in segments of 1 to 7 bytes: every frame is shown as decoded, none with an error."""
    codec = built.codec
    frames = drawn_frames(built) + edge_frames(built)
    assert {type(f).__name__ for f in frames} == {"Numbers", "Texts", "Empty", "Masked"}
    records = [record(n + 1, codec.encode(frame), n) for n, frame in enumerate(frames)]
    stream = b"".join(codec.encode(frame) for frame in frames)
    rng = random.Random("wireshark:constructs:stream")
    pos, cuts = 0, set()
    while pos < len(stream):
        pos += rng.randint(1, 7)
        cuts.add(min(pos, len(stream)))
    inside_vbi, at = 0, 0  # segments that end inside a frame's vbi length
    for frame in frames:
        data = codec.encode(frame)
        after_vbi = _support.read_vbi(data, 1, len(data))[1]
        if after_vbi > 2:  # whatever the frames drawn, one cut inside each long vbi
            cuts.add(at + 2)
        inside_vbi += len(cuts & set(range(at + 2, at + after_vbi)))
        at += len(data)
    assert inside_vbi > 0
    pos = 0
    for cut in sorted(cuts):
        records.append(record(len(frames) + 1, stream[pos:cut], len(records)))
        pos = cut
    pdus = tshark_pdus(built, records, tmp_path / "golden.pcapng", mss=64)
    assert sorted(pdus) == [(n, "client") for n in range(len(frames) + 1)]
    for n, frame in enumerate(frames):
        assert len(pdus[(n, "client")]) == 1, n
        decoded = codec.decode(codec.encode(frame))
        assert_shows(built, pdus[(n, "client")][0], decoded)
    whole = pdus[(len(frames), "client")]
    assert len(whole) == len(frames)
    for pdu, frame in zip(whole, frames):
        assert_shows(built, pdu, codec.decode(codec.encode(frame)))


# --- malformed frames -------------------------------------------------------------------------


def malformed(built: Built) -> list[tuple[str, bytes, str]]:
    """(what, bytes, the expert the Python decoder's error shows as)."""
    c = built.codec
    numbers = c.encode(c.Numbers(a=1, i=5))
    body = numbers[2:]  # after kind+flags and a one-byte vbi length
    assert numbers[1] == len(body)
    tbody = c.encode(c.Texts(name="ab", blob=b"xyz", reason=1, tail=b"t"))[2:]
    at_g = 2 + 4 + 15 + 8  # g's offset in the body; h and i follow (one byte each here)

    def frame(first: int, body: bytes, length: bytes | None = None) -> bytes:
        vbi = _support.write_vbi(len(body)) if length is None else length
        return bytes([first]) + vbi + body

    def numbers_with(tail: bytes) -> bytes:  # Numbers from g on replaced by ``tail``
        return frame(0x11, body[:at_g] + tail)

    cases = [
        ("vbi length overlong", frame(0x11, body, b"\xa2\x00"), "non_canonical"),
        ("vbi length of 5 bytes", frame(0x11, body, b"\x80\x80\x80\x80\x01"), "invalid_value"),
        ("vbi length cut short", bytes([0x11, 0x80]), "truncated"),
        ("declared length too short", frame(0x11, body, bytes([len(body) - 3])), "invalid_value"),
        ("declared length too long", frame(0x11, body, bytes([len(body) + 3])), "truncated"),
        ("declared length too long for Empty", frame(0x30, b"\x00\x00"), "trailing_bytes"),
        ("unknown frame type", frame(0x51, b""), "unknown_frame_type"),
        ("Masked without its whole mask", frame(0x40, b"\x01\x02"), "invalid_value"),
        ("fixed flag bit clear", frame(0x10, body), "invalid_value"),
        ("level 3 is no Level", frame(0x17, body + b"\x00\x00"), "invalid_value"),
        ("rule a != 0xFFFF broken", frame(0x11, b"\xff\xff" + body[2:]), "rule_violation"),
        ("j missing at level 1", frame(0x13, body), "invalid_value"),
        ("zigzag g overlong", numbers_with(b"\x80\x00\x00\x05"), "non_canonical"),
        ("varint h overlong", numbers_with(b"\x00\x85\x00\x05"), "non_canonical"),
        ("lenenc i 0xFC not minimal", numbers_with(b"\x00\x00\xfc\x05\x00"), "non_canonical"),
        ("lenenc i 0xFD not minimal", numbers_with(b"\x00\x00\xfd\xff\xff\x00"), "non_canonical"),
        ("lenenc i 0xFE not minimal", numbers_with(b"\x00\x00\xfe" + bytes([255] * 3 + [0] * 5)),
         "non_canonical"),
        ("lenenc i NULL (no number)", numbers_with(b"\x00\x00\xfb"), "invalid_value"),
        ("lenenc i 0xFF", numbers_with(b"\x00\x00\xff"), "invalid_value"),
        ("lenenc i cut inside", numbers_with(b"\x00\x00\xfe\x00\x00"), "invalid_value"),
        ("name without its terminator", frame(0x20, b"\x80abc"), "invalid_value"),
        ("name not UTF-8", frame(0x20, b"\x80\xff\x00" + tbody[4:]), "invalid_value"),
        ("blob lenenc not minimal", frame(0x20, b"\x00\xfc\x03\x00xyz\x00"), "non_canonical"),
        ("blob longer than the frame", frame(0x20, b"\x00\x09xyz\x00"), "invalid_value"),
        ("tail cut short", frame(0x20, tbody[:-1]), "invalid_value"),
        ("pair cut short", frame(0x20, b"\x00\xfb\x01\x00\x01k"), "invalid_value"),
    ]  # fmt: skip
    for what, data, kind in cases:  # the Python decoder refuses each, as said
        with pytest.raises(DecodeError) as refused:
            c.decode(data)
        assert error_kind(refused.value) == kind, (what, refused.value)
    return cases


def test_malformed_frames_show_the_expert_of_the_python_error(built: Built, tmp_path: Path) -> None:
    """Each malformed frame alone on a connection, without reassembly (a frame cut short
    is shown cut short): exactly the expert of the Python decoder's error.  The frame
    shown first is the one compared: where the header's length ends before the bytes
    do, the dissector goes on with the next frame there."""
    cases = malformed(built)
    records = [record(n + 1, data, n) for n, (_, data, _) in enumerate(cases)]
    pdus = tshark_pdus(built, records, tmp_path / "malformed.pcapng", desegment=False)
    for n, (what, _, kind) in enumerate(cases):
        got = pdus.get((n, "client"), [])
        assert got, f"{what}: nothing shown"
        assert got[0].errors() == [f"{PROTO}.{kind}"], f"{what}: {got[0].experts()}"


def test_mutated_frames_dissect_exactly_as_the_python_decoder_decodes_or_refuses_them(
    built: Built, tmp_path: Path
) -> None:
    """Golden frames cut, changed, lengthened and shortened at random positions (a fixed
    seed), alone on a connection without reassembly: the first frame tshark shows is
    the one the decoder decodes (``decode_at``: what follows it is the next frame of
    the stream), or shows the expert of the decoder's error."""
    codec = built.codec
    rng = random.Random("wireshark:constructs:mutants")
    cases: list[tuple[bytes, Any]] = []
    for frame in drawn_frames(built)[:40] + edge_frames(built):
        data = codec.encode(frame)
        if len(data) > 300:
            continue
        for mutant in [m for _ in range(3) for m in mutants(data, rng)]:
            outcome: Any
            try:
                outcome = codec.decode_at(mutant, 0, len(mutant))[0]
            except DecodeError as error:
                outcome = error_kind(error)
            cases.append((mutant, outcome))
    records = [record(n + 1, data, n) for n, (data, _) in enumerate(cases)]
    pdus = tshark_pdus(built, records, tmp_path / "mutants.pcapng", desegment=False)
    kinds = set()
    for n, (data, outcome) in enumerate(cases):
        got = pdus[(n, "client")]
        if isinstance(outcome, str):
            kinds.add(outcome)
            assert got[0].errors() == [f"{PROTO}.{outcome}"], (got[0].packet, data.hex(), outcome)
        else:
            assert_shows(built, got[0], outcome)
    assert len(cases) > 300 and {"truncated", "non_canonical", "invalid_value"} <= kinds


# --- the stream ---------------------------------------------------------------------------------


def test_a_malformed_body_is_skipped_and_a_malformed_header_stops_the_direction(
    built: Built, tmp_path: Path
) -> None:
    """With reassembly: the header says where a frame ends, so after a frame whose body
    is malformed the next one is dissected; after a malformed header (an overlong vbi)
    or a declared length above the limit the rest of that direction is out of step,
    while the other direction goes on."""
    c = built.codec
    good, empty = c.encode(c.Numbers(a=7, level=c.Level.MID, j=9)), c.encode(c.Empty())
    broken_rule = c.encode(c.Numbers(a=1))
    broken_rule = broken_rule[:2] + b"\xff\xff" + broken_rule[4:]
    overlong = b"\x30\x80\x00"
    too_large = b"\x30\xff\xff\xff\x7f"  # 268,435,455 bytes declared: above MAX_FRAME_SIZE
    flows = [
        [("client", good), ("client", broken_rule + good), ("server", empty), ("client", good)],
        [("client", good), ("client", overlong), ("server", empty), ("client", good)],
        [("client", too_large), ("client", good), ("server", empty)],
    ]
    records = [
        record(n + 1, data, len(flows) * i + n, sender)
        for n, flow in enumerate(flows)
        for i, (sender, data) in enumerate(flow)
    ]
    pdus = tshark_pdus(built, records, tmp_path / "stream.pcapng")
    experts = {key: [p.errors() for p in got] for key, got in pdus.items()}
    rule, step = f"{PROTO}.rule_violation", f"{PROTO}.out_of_step"
    assert experts[(0, "client")] == [[], [rule], [], []]
    assert experts[(1, "client")] == [[], [f"{PROTO}.non_canonical"], [step]]
    assert experts[(2, "client")] == [[f"{PROTO}.frame_too_large"], [step]]
    assert experts[(0, "server")] == experts[(1, "server")] == experts[(2, "server")] == [[]]
    assert_shows(built, pdus[(0, "client")][2], c.decode(good))
