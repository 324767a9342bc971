"""wirestream.runtime.capture.pcap: captures to pcapng and pcap/pcapng files back to records.

The writer's output is checked by reading it back and by tshark (every checksum and
sequence number as Wireshark sees them); the reader by hand-made TCP connections
(``tests.support.pcap_support``) in every file variant and link type, with the faults real
captures hold (retransmissions, overlaps, reordering, holes, snap lengths, a capture
that starts mid-connection), and by real traffic captured on the loopback interface by
Wireshark's dumpcap.  Each test takes well under a second except the dumpcap ones
(about 3 s each: the capture process's start and stop).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.aio_support import run
from tests.support.pcap_support import (
    TCP_ACK,
    TCP_FIN,
    TCP_PSH,
    TCP_RST,
    TCP_SYN,
    Flow,
    frames_stream,
    link,
    write_pcap,
    write_pcapng,
)
from wirestream.apps.demo_responder import EchoResponder
from wirestream.runtime.capture import CaptureRecord, CaptureWriter, capture_files, iter_records
from wirestream.runtime.capture.pcap import (
    ACK_EVERY,
    PcapError,
    PcapngWriter,
    PcapReader,
    described_capture,
    is_pcap,
    iter_pcap_records,
    write_pcapng as capture_to_pcapng,
)
from wirestream.runtime.capture.pcap_files import MAX_PACKET_BYTES, iter_packets
from wirestream.runtime.capture.tcp_segments import Segment, parse_segment
from wirestream.runtime.errors import EncodeError
from wirestream.runtime.rsocket import connect as rsocket_connect
from wirestream.runtime.rsocket import serve as rsocket_serve

T0 = 1_700_000_000_123_456_789
SUBPROCESS_TIMEOUT = 60


def rows(records: list[CaptureRecord]) -> list[tuple[int, int, str, str, bytes]]:
    return [(r.timestamp_ns, r.connection_id, r.direction, r.side, r.frame) for r in records]


def make_capture(folder: Path, name: str, records: list[tuple[int, int, str, str, bytes]]) -> Path:
    with CaptureWriter(folder / "cap.wscap", name, max_file_bytes=None) as writer:
        for when, connection, direction, side, frame in records:
            writer.record(connection, direction, frame, side=side,  # type: ignore[arg-type]
                          timestamp_ns=when)  # fmt: skip
    return writer.files[0]


def pcapng_packets(path: Path) -> list[Segment]:
    segments = []
    for packet in iter_packets(path):
        parsed = parse_segment(packet.linktype, packet.data, packet.original_length)
        assert isinstance(parsed, Segment)
        segments.append(parsed)
    return segments


# --- the writer ----------------------------------------------------------------------

capture_rows = st.lists(
    st.tuples(
        st.integers(0, 2**63),
        st.integers(1, 4),
        st.sampled_from(["in", "out"]),
        st.sampled_from(["client", "server"]),
        st.binary(max_size=3000),
    ),
    max_size=20,
)


@settings(max_examples=40, deadline=None)
@given(capture_rows, st.sampled_from(["rsocket/1.0", "rabbitmq_stream/1"]))
def test_a_capture_read_back_from_its_pcapng_is_the_capture(
    tmp_path_factory: pytest.TempPathFactory, records: list[Any], name: str
) -> None:
    """Record for record: time, connection id, direction, tapped side, frame bytes --
    whatever the frames' sizes (segmentation) and the connections' interleaving."""
    # a connection is tapped on one side only: the side of its first record
    sides: dict[int, str] = {}
    records = [(t, c, d, sides.setdefault(c, s), f) for t, c, d, s, f in records]
    folder = tmp_path_factory.mktemp("cap")
    capture = make_capture(folder, name, records)
    frames = capture_to_pcapng(capture, folder / "cap.pcapng", mss=536)
    assert frames == len(records)
    assert rows(list(iter_pcap_records(folder / "cap.pcapng"))) == records


def test_the_pcapng_names_the_protocol_and_port_so_reading_it_needs_neither(
    tmp_path: Path,
) -> None:
    capture = make_capture(tmp_path, "rabbitmq_stream/1", [(T0, 7, "out", "client", b"x")])
    capture_to_pcapng(capture, tmp_path / "c.pcapng", server_port=15552)
    assert described_capture(tmp_path / "c.pcapng") == ("rabbitmq_stream/1", 15552)
    reader = PcapReader(tmp_path / "c.pcapng")
    assert reader.protocol.name == "rabbitmq_stream/1" and reader.server_port == 15552
    assert [r.frame for r in reader] == [b"x"]


def test_frames_travel_from_their_sender_behind_the_transport_framing(tmp_path: Path) -> None:
    """An ``in`` record of a client-tapped connection came from the server: it goes from
    the server port, and its bytes on the wire are the 3-byte length and the frame."""
    capture = make_capture(tmp_path, "rsocket/1.0", [
        (T0, 1, "out", "client", b"\x00\x00\x00\x00\x04\x00hello"),
        (T0 + 1, 1, "in", "client", b"\x00\x00\x00\x01\x04\x00world!"),
    ])  # fmt: skip
    capture_to_pcapng(capture, tmp_path / "c.pcapng")
    data = [s for s in pcapng_packets(tmp_path / "c.pcapng") if s.payload]
    assert [(s.sport, s.dport) for s in data] == [(49152, 7878), (7878, 49152)]
    assert data[0].payload == b"\x00\x00\x0b" + b"\x00\x00\x00\x00\x04\x00hello"
    assert data[1].payload == b"\x00\x00\x0c" + b"\x00\x00\x00\x01\x04\x00world!"


def test_self_delimiting_frames_go_without_a_prefix(tmp_path: Path) -> None:
    capture = make_capture(tmp_path, "bpmux/rel", [(T0, 1, "out", "client", b"\x01\x02")])
    capture_to_pcapng(capture, tmp_path / "c.pcapng", server_port=9000)
    data = [s for s in pcapng_packets(tmp_path / "c.pcapng") if s.payload]
    assert [s.payload for s in data] == [b"\x01\x02"]


def test_large_frames_are_cut_into_mss_segments_whose_sequence_numbers_follow_the_bytes(
    tmp_path: Path,
) -> None:
    frame = bytes(range(256)) * 40  # 10240 bytes
    capture = make_capture(tmp_path, "rsocket/1.0", [(T0, 1, "out", "client", frame)])
    capture_to_pcapng(capture, tmp_path / "c.pcapng", mss=1000)
    segments = pcapng_packets(tmp_path / "c.pcapng")
    syn, synack, ack, *data, fin1, fin2, last = segments
    assert (syn.flags, synack.flags, ack.flags) == (TCP_SYN, TCP_SYN | TCP_ACK, TCP_ACK)
    assert synack.ack == syn.seq + 1 and ack.ack == synack.seq + 1
    assert [len(s.payload) for s in data] == [1000] * 10 + [243]
    expected = syn.seq + 1
    for segment in data:
        assert segment.seq == expected % 2**32 and segment.ack == synack.seq + 1
        expected += len(segment.payload)
    assert b"".join(s.payload for s in data) == len(frame).to_bytes(3, "big") + frame
    assert [s.flags & TCP_PSH for s in data] == [0] * 10 + [TCP_PSH]
    assert fin1.flags == fin2.flags == TCP_FIN | TCP_ACK and fin1.seq == expected % 2**32


def test_a_long_one_way_run_is_acknowledged_by_the_receiver(tmp_path: Path) -> None:
    frame = bytes(4 * ACK_EVERY)  # acknowledged after each ACK_EVERY, rounded up to segments
    capture = make_capture(tmp_path, "rsocket/1.0", [(T0, 1, "out", "client", frame)])
    capture_to_pcapng(capture, tmp_path / "c.pcapng")
    acks = [s for s in pcapng_packets(tmp_path / "c.pcapng")[3:-3] if s.sport == 7878]
    assert len(acks) == 3 and all(not s.payload and s.flags == TCP_ACK for s in acks)


def test_a_frame_longer_than_the_length_prefix_can_say_is_refused(tmp_path: Path) -> None:
    capture = make_capture(tmp_path, "rsocket/1.0", [(T0, 1, "out", "client", bytes(1 << 24))])
    with pytest.raises(EncodeError, match="3-byte length prefix"):
        capture_to_pcapng(capture, tmp_path / "c.pcapng")


def test_a_protocol_without_a_well_known_port_needs_one(tmp_path: Path) -> None:
    capture = make_capture(tmp_path, "bpmux/rel", [(T0, 1, "out", "client", b"\x01")])
    with pytest.raises(ValueError, match="no well-known port"):
        capture_to_pcapng(capture, tmp_path / "c.pcapng")


def test_many_connections_get_distinct_client_endpoints(tmp_path: Path) -> None:
    with open(tmp_path / "c.pcapng", "wb") as out, PcapngWriter(out, "rsocket/1.0") as writer:
        for n in range(16385):
            writer.add(CaptureRecord(T0, n, "out", b"x"))
    syns = [s for s in pcapng_packets(tmp_path / "c.pcapng") if s.flags == TCP_SYN]
    assert len({(s.src, s.sport) for s in syns}) == 16385
    assert (syns[-1].src, syns[-1].sport) == (bytes([127, 0, 1, 1]), 49152)


def test_tshark_finds_no_checksum_sequence_or_window_problem(tmp_path: Path) -> None:
    """Wireshark's own TCP analysis of a written file: nothing above a note (the notes
    are the connections' closing), with checksum validation on."""
    tshark = shutil.which("tshark")
    assert tshark, "tshark is not installed (make test installs Debian's tshark)"
    capture = make_capture(tmp_path, "rsocket/1.0", [
        (T0, 1, "out", "client", b"a" * 50),
        (T0 + 5, 2, "in", "server", b"b" * 300_000),
        (T0 + 9, 1, "in", "client", b"c" * 5000),
        (T0 + 12, 2, "out", "server", b"d" * 7),
    ])  # fmt: skip
    capture_to_pcapng(capture, tmp_path / "c.pcapng")
    result = subprocess.run(
        [tshark, "-n", "-r", str(tmp_path / "c.pcapng"), "-o", "tcp.check_checksum:TRUE",
         "-o", "ip.check_checksum:TRUE", "-Y", "_ws.expert.severity >= warning || "
         "tcp.checksum.status == 0 || ip.checksum.status == 0", "-T", "fields", "-e",
         "frame.number", "-e", "_ws.expert.message"],
        capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    streams = subprocess.run(
        [tshark, "-n", "-r", str(tmp_path / "c.pcapng"), "-q", "-z", "conv,tcp"],
        capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
    )  # fmt: skip
    assert "127.0.0.1:49152" in streams.stdout and "127.0.0.1:49153" in streams.stdout


# --- the reader: streams -------------------------------------------------------------

FRAMES = [b"first frame", b"x" * 2500, b"third", b"y" * 700]
STREAM = frames_stream(FRAMES)


def read(tmp_path: Path, packets: list[bytes], *, linktype: int = 101,
         **options: Any) -> tuple[list[CaptureRecord], PcapReader]:  # fmt: skip
    path = tmp_path / "t.pcapng"
    write_pcapng(path, [(T0 + k, link(linktype, p)) for k, p in enumerate(packets)], linktype)
    reader = PcapReader(path, "rsocket/1.0", **options)
    return list(reader), reader


def test_segments_become_the_frames_they_carry_in_both_directions(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake() + flow.send("client", STREAM, 1000)
    packets += flow.send("server", frames_stream([b"answer"])) + flow.close()
    records, reader = read(tmp_path, packets)
    assert [(r.frame, r.direction, r.sender) for r in records] == [
        *((f, "out", "client") for f in FRAMES),
        (b"answer", "in", "server"),
    ]
    assert {r.connection_id for r in records} == {1} and reader.problems == []
    # a frame's time is the time of the packet that completed it
    assert records[1].timestamp_ns == T0 + 3 + 2  # the third data segment
    assert reader.connections == 1 and reader.packets == len(packets)


def test_retransmissions_and_overlaps_add_only_bytes_not_seen_yet(tmp_path: Path) -> None:
    flow = Flow()
    data = flow.send("client", STREAM, 500)
    overlap = flow.packet("client", 250, STREAM[250:1250])
    packets = flow.handshake() + data[:3] + [data[1], overlap, data[0]] + data[3:]
    records, reader = read(tmp_path, packets)
    assert [r.frame for r in records] == FRAMES and reader.problems == []


def test_out_of_order_segments_wait_for_the_hole_to_be_filled(tmp_path: Path) -> None:
    flow = Flow()
    data = flow.send("client", STREAM, 300)
    packets = flow.handshake() + data[:2] + data[5:1:-1] + data[6:]
    records, reader = read(tmp_path, packets)
    assert [r.frame for r in records] == FRAMES and reader.problems == []


def test_a_hole_past_the_wait_bound_is_a_gap_that_stops_the_direction(tmp_path: Path) -> None:
    flow = Flow()
    data = flow.send("client", STREAM, 300)
    replies = flow.send("server", frames_stream([b"still read"]))
    packets = flow.handshake() + data[:1] + data[2:] + replies
    records, reader = read(tmp_path, packets, max_pending_segments=4)
    assert [r.frame for r in records] == [FRAMES[0], b"still read"]  # the frame before the hole
    (gap,) = reader.problems
    assert (gap.kind, gap.sender, gap.missing, gap.connection_id) == ("gap", "client", 300, 1)


def test_with_midstream_frames_are_cut_again_after_a_gap(tmp_path: Path) -> None:
    flow = Flow()
    head = flow.send("client", frames_stream([b"a" * 100]))
    lost = flow.send("client", frames_stream([b"lost"]))
    tail = flow.send("client", frames_stream(FRAMES), 300)
    packets = flow.handshake() + head + tail  # "lost" never came: its segment is the hole
    records, reader = read(tmp_path, packets, midstream=True, max_pending_segments=2)
    assert [r.frame for r in records] == [b"a" * 100, *FRAMES]
    assert [(p.kind, p.missing) for p in reader.problems] == [("gap", len(lost[0]) - 40)]


def test_a_hole_never_filled_is_reported_at_the_end(tmp_path: Path) -> None:
    flow = Flow()
    data = flow.send("client", STREAM, 300)
    records, reader = read(tmp_path, flow.handshake() + data[:1] + data[2:])
    assert [r.frame for r in records] == [FRAMES[0]]
    assert [(p.kind, p.missing) for p in reader.problems] == [("gap", 300)]


def test_a_segment_cut_by_the_snap_length_is_a_gap(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake() + flow.send("client", STREAM, 1000)
    path = tmp_path / "t.pcap"
    # the second data segment captured with 100 of its bytes (a 140-byte snap length)
    cut = [p if k != 4 else p[:140] for k, p in enumerate(packets)]
    write_pcap(path, [(T0 + k, p) for k, p in enumerate(cut)], 101,
               original=[len(p) for p in packets])  # fmt: skip
    reader = PcapReader(path, "rsocket/1.0")
    assert [r.frame for r in reader] == [FRAMES[0]]
    assert [(p.kind, p.missing) for p in reader.problems] == [("gap", 900)]


def test_a_connection_whose_start_was_not_captured_is_reported_not_guessed(
    tmp_path: Path,
) -> None:
    flow = Flow()
    flow.handshake()
    packets = flow.send("client", STREAM) + flow.send("server", frames_stream([b"r"]))
    records, reader = read(tmp_path, packets)
    assert records == []
    assert [(p.kind, p.sender) for p in reader.problems] == [
        ("start-missed", "client"),
        ("start-missed", "server"),
    ]


def test_with_midstream_the_client_is_the_side_not_on_the_server_port(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.send("server", frames_stream([b"r"])) + flow.send("client", STREAM)
    records, reader = read(tmp_path, packets, midstream=True)
    assert [(r.frame, r.sender, r.direction) for r in records] == [
        (b"r", "server", "in"),
        *((f, "client", "out") for f in FRAMES),
    ]


def test_the_client_is_the_syn_sender_whatever_the_ports(tmp_path: Path) -> None:
    """Port 0 reads every connection; the SYN says who the client is, even when the
    client's port is the lower one."""
    flow = Flow(client_port=80, server_port=40000)
    packets = flow.handshake() + flow.send("client", STREAM)
    records, _ = read(tmp_path, packets, server_port=0)
    assert [(r.frame, r.sender) for r in records] == [(f, "client") for f in FRAMES]


def test_a_syn_ack_alone_tells_both_stream_starts(tmp_path: Path) -> None:
    flow = Flow()
    _, synack, ack = flow.handshake()
    packets = [synack, ack] + flow.send("client", STREAM) + flow.send("server", STREAM)
    records, reader = read(tmp_path, packets)
    assert [r.sender for r in records] == ["client"] * 4 + ["server"] * 4
    assert reader.problems == []


def test_a_missing_syn_ack_is_recovered_from_the_clients_ack(tmp_path: Path) -> None:
    flow = Flow()
    syn, _, ack = flow.handshake()
    records, reader = read(tmp_path, [syn, ack] + flow.send("server", STREAM))
    assert [r.frame for r in records] == FRAMES and reader.problems == []


def test_sequence_numbers_wrap_around(tmp_path: Path) -> None:
    flow = Flow(client_isn=2**32 - 700)
    records, reader = read(tmp_path, flow.handshake() + flow.send("client", STREAM, 300))
    assert [r.frame for r in records] == FRAMES and reader.problems == []


def test_a_new_syn_on_the_same_addresses_is_a_new_connection(tmp_path: Path) -> None:
    first, second = Flow(), Flow(client_isn=77777)
    packets = first.handshake() + first.send("client", STREAM)  # never closed
    packets += second.handshake() + second.send("client", frames_stream([b"again"]))
    packets += [first.packet("client", 0, STREAM[:100])]  # a late retransmission: dropped
    records, reader = read(tmp_path, packets)
    assert [(r.connection_id, r.frame) for r in records] == [
        *((1, f) for f in FRAMES),
        (2, b"again"),
    ]
    assert reader.connections == 2


def test_a_retransmitted_syn_is_not_a_new_connection(tmp_path: Path) -> None:
    flow = Flow()
    syn, synack, ack = flow.handshake()
    records, reader = read(tmp_path, [syn, syn, synack, ack] + flow.send("client", STREAM))
    assert [r.frame for r in records] == FRAMES and reader.connections == 1


def test_a_reset_ends_the_connection_and_reports_the_unfinished_frame(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake() + flow.send("client", STREAM[:-10])
    packets.append(flow.packet("server", 0, b"", TCP_RST | TCP_ACK))
    records, reader = read(tmp_path, packets)
    assert [r.frame for r in records] == FRAMES[:3]
    assert [(p.kind, p.missing) for p in reader.problems] == [("incomplete-frame", 693)]


def test_bytes_that_are_not_frames_end_the_direction_as_the_tap_ends_it(tmp_path: Path) -> None:
    """A length past the limit: the bytes from there are one last record (as the tap
    records them) and the direction is reported unframed."""
    flow = Flow(server_port=5552)
    stream = frames_stream([b"ok"], 4) + b"\xff" * 8
    packets = flow.handshake() + flow.send("client", stream)
    path = tmp_path / "t.pcapng"
    write_pcapng(path, [(T0, p) for p in packets], 101)
    reader = PcapReader(path, "rabbitmq_stream/1")
    assert [r.frame for r in reader] == [b"ok", b"\xff" * 8]
    assert [p.kind for p in reader.problems] == ["unframed"]


def test_other_tcp_traffic_and_other_packets_are_skipped(tmp_path: Path) -> None:
    web = Flow(client_port=50001, server_port=443)
    flow = Flow()
    packets = web.handshake() + web.send("client", b"GET / HTTP/1.1\r\n\r\n")
    packets += flow.handshake() + flow.send("client", STREAM)
    udp = bytes.fromhex("4500001c000000004011000001020304050607080035003500080000")
    records, reader = read(tmp_path, packets + [udp])
    assert [r.frame for r in records] == FRAMES and reader.connections == 1
    assert reader.packets == len(packets) + 1 and reader.segments == len(packets)


def test_a_fragment_is_reported_as_a_malformed_packet(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake() + flow.send("client", STREAM)
    fragment = bytearray(packets[-1])
    fragment[6] |= 0x20  # more fragments
    records, reader = read(tmp_path, packets[:-1] + [bytes(fragment)])
    assert [p.kind for p in reader.problems][:1] == ["malformed-packet"]
    assert "fragment" in reader.problems[0].detail


def test_out_of_order_waiting_is_bounded_in_bytes(tmp_path: Path) -> None:
    flow = Flow()
    data = flow.send("client", bytes(3) + bytes(200_000), 1000)  # one 200 KB frame
    packets = flow.handshake() + data[1:]  # the first segment never comes
    records, reader = read(tmp_path, packets, max_pending_bytes=50_000)
    assert records == []
    assert [(p.kind, p.missing) for p in reader.problems] == [("gap", 1000)]


# --- the reader: files and link types ------------------------------------------------


def flow_packets() -> list[bytes]:
    flow = Flow()
    return flow.handshake() + flow.send("client", STREAM, 700) + flow.close()


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("nano", [False, True])
def test_classic_pcap_in_either_byte_order_and_resolution(
    tmp_path: Path, big_endian: bool, nano: bool
) -> None:
    path = tmp_path / "t.pcap"
    stamps = [T0 + k * 1_000_003 for k in range(len(flow_packets()))]
    write_pcap(path, list(zip(stamps, flow_packets())), 101, big_endian=big_endian, nano=nano)
    assert is_pcap(path)
    records = list(PcapReader(path, "rsocket/1.0"))
    assert [r.frame for r in records] == FRAMES
    exact = stamps if nano else [s // 1000 * 1000 for s in stamps]
    assert [p.timestamp_ns for p in iter_packets(path)] == exact


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("tsresol", [6, 9, 0x80 | 30])
@pytest.mark.parametrize("block", ["epb", "pb"])
def test_pcapng_in_either_byte_order_with_any_time_resolution(
    tmp_path: Path, big_endian: bool, tsresol: int, block: str
) -> None:
    path = tmp_path / "t.pcapng"
    stamps = [T0 + k * 1_000_003 for k in range(len(flow_packets()))]
    write_pcapng(path, list(zip(stamps, flow_packets())), 101, big_endian=big_endian,
                 tsresol=tsresol, tsoffset=1000, block=block, sections=2)  # fmt: skip
    assert [r.frame for r in PcapReader(path, "rsocket/1.0")] == FRAMES
    times = [p.timestamp_ns for p in iter_packets(path)]
    tolerance = {6: 1000, 9: 0}.get(tsresol, 1)
    assert all(abs(t - s) <= tolerance for t, s in zip(times, stamps)), (times, stamps)


def test_simple_packet_blocks_are_read(tmp_path: Path) -> None:
    path = tmp_path / "t.pcapng"
    write_pcapng(path, [(0, p) for p in flow_packets()], 101, block="spb")
    assert [r.frame for r in PcapReader(path, "rsocket/1.0")] == FRAMES


LINKS = [1, 0x8100, 101, 12, 14, 113, 276, 0, 108]


@pytest.mark.parametrize("linktype", LINKS)
@pytest.mark.parametrize("ipv6", [False, True])
def test_every_link_type_and_ip_version(tmp_path: Path, linktype: int, ipv6: bool) -> None:
    flow = Flow(ipv6=ipv6)
    packets = flow.handshake() + flow.send("client", STREAM, 700) + flow.close()
    file_type = 1 if linktype == 0x8100 else linktype
    path = tmp_path / "t.pcap"
    write_pcap(path, [(T0, link(linktype, p)) for p in packets], file_type)
    assert [r.frame for r in PcapReader(path, "rsocket/1.0")] == FRAMES


@pytest.mark.parametrize("linktype,ipv6", [(228, False), (229, True)])
def test_raw_ipv4_and_ipv6_link_types(tmp_path: Path, linktype: int, ipv6: bool) -> None:
    flow = Flow(ipv6=ipv6)
    path = tmp_path / "t.pcap"
    write_pcap(path, [(T0, p) for p in flow.handshake() + flow.send("client", STREAM)], linktype)
    assert [r.frame for r in PcapReader(path, "rsocket/1.0")] == FRAMES


def test_null_loopback_in_the_other_hosts_byte_order(tmp_path: Path) -> None:
    flow = Flow()
    path = tmp_path / "t.pcap"
    packets = flow.handshake() + flow.send("client", STREAM)
    write_pcap(path, [(T0, link(0, p, order="big")) for p in packets], 0)
    assert [r.frame for r in PcapReader(path, "rsocket/1.0")] == FRAMES


def test_ethernet_padding_is_not_payload(tmp_path: Path) -> None:
    flow = Flow()
    packets = flow.handshake() + flow.send("client", frames_stream([b"a"]))
    path = tmp_path / "t.pcap"
    write_pcap(path, [(T0, link(1, p) + b"\0" * 6) for p in packets], 1)
    assert [r.frame for r in PcapReader(path, "rsocket/1.0")] == [b"a"]


def test_editcap_s_classic_pcap_of_a_written_pcapng_reads_the_same(tmp_path: Path) -> None:
    """Wireshark's own converter writes the classic formats (micro- and nanosecond)."""
    editcap = shutil.which("editcap")
    assert editcap, "editcap is not installed (make test installs Debian's tshark)"
    records = [(T0, 1, "out", "client", b"a" * 3000), (T0 + 1000, 1, "in", "client", b"b")]
    capture = make_capture(tmp_path, "rsocket/1.0", records)
    capture_to_pcapng(capture, tmp_path / "c.pcapng")
    for kind in ("pcap", "nsecpcap"):
        out = tmp_path / f"c.{kind}"
        subprocess.run([editcap, "-F", kind, str(tmp_path / "c.pcapng"), str(out)],
                       check=True, timeout=SUBPROCESS_TIMEOUT, capture_output=True)  # fmt: skip
        got = list(PcapReader(out, "rsocket/1.0"))
        assert [(r.direction, r.frame) for r in got] == [("out", b"a" * 3000), ("in", b"b")]
        if kind == "nsecpcap":
            assert [r.timestamp_ns for r in got] == [T0, T0 + 1000]


# --- the reader: corrupt files -------------------------------------------------------


def test_not_a_pcap_file_is_an_error_at_offset_0(tmp_path: Path) -> None:
    path = tmp_path / "x.pcap"
    path.write_bytes(b"GET / HTTP/1.1\r\n")
    assert not is_pcap(path)
    with pytest.raises(PcapError, match="offset 0: not a pcap or pcapng file"):
        list(PcapReader(path, "rsocket/1.0"))


def test_a_pcap_without_a_protocol_asks_for_one(tmp_path: Path) -> None:
    path = tmp_path / "t.pcap"
    write_pcap(path, [], 1)
    with pytest.raises(ValueError, match="does not say which protocol"):
        PcapReader(path)


def small_files(tmp_path: Path) -> list[Path]:
    flow = Flow()
    packets = [(T0, link(1, p)) for p in flow.handshake() + flow.send("client", STREAM, 900)]
    write_pcap(tmp_path / "a.pcap", packets, 1)
    write_pcapng(tmp_path / "a.pcapng", packets, 1)
    write_pcapng(tmp_path / "b.pcapng", packets, 1, big_endian=True)
    return [tmp_path / "a.pcap", tmp_path / "a.pcapng", tmp_path / "b.pcapng"]


def test_a_file_cut_anywhere_reads_to_its_cut_or_fails_naming_the_offset(
    tmp_path: Path,
) -> None:
    """Every truncation of each file variant either ends cleanly at a packet boundary or
    raises ``PcapError`` -- never IndexError or struct.error."""
    for path in small_files(tmp_path):
        data = path.read_bytes()
        cut = tmp_path / ("cut" + path.suffix)
        cut.write_bytes(data)
        for size in reversed(range(len(data))):
            os.truncate(cut, size)  # far cheaper than writing each cut afresh
            try:
                list(PcapReader(cut, "rsocket/1.0"))
            except PcapError as error:
                assert error.path == str(cut) and 0 <= error.offset < max(size, 1)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_corrupt_bytes_give_records_or_a_pcap_error_only(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    folder = tmp_path_factory.mktemp("corrupt")
    paths = small_files(folder)
    path = data.draw(st.sampled_from(paths))
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] = data.draw(st.integers(0, 255))
    path.write_bytes(bytes(raw))
    try:
        list(PcapReader(path, "rsocket/1.0", midstream=data.draw(st.booleans())))
    except PcapError:
        pass


def test_an_oversized_packet_length_is_an_error_not_an_allocation(tmp_path: Path) -> None:
    path = tmp_path / "t.pcap"
    write_pcap(path, [(T0, b"x" * 10)], 1)
    raw = bytearray(path.read_bytes())
    struct.pack_into("<I", raw, 24 + 8, 0xFFFFFFF0)
    path.write_bytes(bytes(raw))
    with pytest.raises(PcapError, match=f"offset 24: .*limit is {MAX_PACKET_BYTES}"):
        list(iter_packets(path))


def test_a_pcapng_block_whose_trailing_length_differs_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.pcapng"
    write_pcapng(path, [(T0, b"x" * 10)], 1)
    raw = bytearray(path.read_bytes())
    raw[-4] ^= 0x04
    path.write_bytes(bytes(raw))
    with pytest.raises(PcapError, match="trailing copy"):
        list(iter_packets(path))


def test_a_huge_unknown_pcapng_block_is_skipped_by_length_not_read(tmp_path: Path) -> None:
    path = tmp_path / "t.pcapng"
    write_pcapng(path, [(T0, link(1, p)) for p in flow_packets()], 1)
    raw = path.read_bytes()
    huge = 1 << 30  # a custom block that says 1 GiB: the file ends first
    blob = struct.pack("<II", 0x0BAD, huge)
    path.write_bytes(raw + blob)
    with pytest.raises(PcapError, match="runs .* past the end of the file"):
        list(iter_packets(path))


def test_a_packet_of_an_undescribed_interface_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.pcapng"
    write_pcapng(path, [(T0, b"x" * 12)], 1)
    raw = bytearray(path.read_bytes())
    epb = raw.rfind(struct.pack("<I", 6))
    struct.pack_into("<I", raw, epb + 8, 3)
    path.write_bytes(bytes(raw))
    with pytest.raises(PcapError, match="interface 3, but the section describes 1"):
        list(iter_packets(path))


# --- real traffic, captured by dumpcap -----------------------------------------------


class Dumpcap:
    """Wireshark's capture engine on the loopback interface (or ``any``) for one port,
    writing ``path`` in ``file_format`` (pcapng or pcap); stopped with SIGINT."""

    def __init__(self, path: Path, port: int, interface: str = "lo",
                 file_format: str = "pcapng", linktype: str | None = None) -> None:  # fmt: skip
        dumpcap = shutil.which("dumpcap")
        assert dumpcap, "dumpcap is not installed (make test installs Debian's tshark)"
        command = [dumpcap, "-q", "-i", interface, "-f", f"tcp port {port}", "-w", str(path)]
        if file_format == "pcap":
            command.append("-P")
        if linktype:
            command += ["-y", linktype]
        self.command = command
        self.path = path

    def __enter__(self) -> Dumpcap:
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 20
        assert self.process.stderr is not None
        # dumpcap says "Capturing on ..." once its filter is in place (or why it cannot)
        ready, _, _ = select.select([self.process.stderr], [], [], 20)
        if not ready:
            self.process.kill()
            self.process.communicate()
            raise AssertionError("dumpcap said nothing within 20 s")
        line = self.process.stderr.readline()
        if "Capturing on" not in line:
            self.process.kill()
            _, rest = self.process.communicate(timeout=20)
            raise AssertionError(f"dumpcap cannot capture: {line}{rest}")
        while not self.path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.3)  # the last packets reach the capture buffer
        self.process.send_signal(signal.SIGINT)
        try:
            _, err = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            raise
        assert self.process.returncode == 0, err


def rsocket_session(folder: Path, port: int) -> list[CaptureRecord]:
    """A real RSocket session with the demo responder on 127.0.0.1:``port``, tapped on
    the client side; returns the tap's records."""

    async def main() -> None:
        with CaptureWriter(folder / "tap.wscap", "rsocket/1.0") as capture:
            async with await rsocket_serve(f"tcp://127.0.0.1:{port}", EchoResponder()):
                async with rsocket_connect(f"tcp://127.0.0.1:{port}", capture=capture) as rs:
                    assert (await rs.request_response(b"ping")).data == b"ping"
                    got = [p.data async for p in rs.request_stream(b"20", limit_rate=3)]
                    assert len(got) == 20
                    big = b"z" * 200_000  # many segments on the wire
                    assert (await rs.request_response(big)).data == big

    run(main())
    return [r for path in capture_files(folder / "tap.wscap") for r in iter_records(path)]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("interface,file_format,linktype,number", [
    ("lo", "pcapng", None, 1),  # Ethernet with zero addresses
    ("lo", "pcap", None, 1),
    ("any", "pcapng", "LINUX_SLL2", 276),
    ("any", "pcap", "LINUX_SLL", 113),
])  # fmt: skip
def test_a_real_session_captured_by_dumpcap_reads_as_the_taps_records(
    tmp_path: Path, interface: str, file_format: str, linktype: str | None, number: int
) -> None:
    """The frames, directions and senders the reader finds in the kernel's packets are
    those the tap recorded inside the client (times differ: the tap stamps a frame when
    the engine sees it, the capture when the kernel does)."""
    port = free_port()
    path = tmp_path / f"real.{file_format}"
    with Dumpcap(path, port, interface, file_format, linktype):
        tapped = rsocket_session(tmp_path, port)
    assert {p.linktype for p in iter_packets(path)} == {number}
    reader = PcapReader(path, "rsocket/1.0", server_port=port)
    got = list(reader)
    assert reader.problems == []
    assert [(r.direction, r.frame) for r in got] == [(r.direction, r.frame) for r in tapped]
    assert {r.connection_id for r in got} == {1}
    assert all(abs(a.timestamp_ns - b.timestamp_ns) < 5 * 10**9 for a, b in zip(got, tapped))


# --- self-delimiting protocols -------------------------------------------------------


def test_bpmux_and_rsio_sessions_round_trip_through_pcapng(tmp_path: Path) -> None:
    """Frames that delimit themselves are cut again by decoding (BPMUX), with the
    connection's context where element sizes were announced earlier (Reactive Streams'
    packed fixed-size elements, in both encodings)."""
    from wirestream.runtime import rsio
    from wirestream.runtime.bpmux import aio as bpmux

    class Upper(bpmux.Handler):
        async def on_request(self, data: bytes) -> bytes:
            return data.upper()

    async def ints(args: str) -> Any:
        for n in range(300):
            yield n.to_bytes(4, "big")

    async def sessions() -> None:
        with CaptureWriter(tmp_path / "b.wscap", "bpmux/rel") as capture:
            async with bpmux.serve("tcp://127.0.0.1:0", Upper(), capture=capture) as server:
                async with bpmux.connect(server.url, capture=capture) as peer:
                    assert await peer.request(b"x" * 5000) == b"X" * 5000
        for encoding, name in (("binary", "rsio/0"), ("msgpack", "rsio/0+msgpack")):
            with CaptureWriter(tmp_path / f"{encoding}.wscap", name) as capture:
                publishers = {"ints": rsio.Publisher(ints, element_size=4)}
                async with await rsio.serve("tcp://127.0.0.1:0", publishers=publishers,
                                            encoding=encoding, packed=True,  # type: ignore[arg-type]
                                            capture=capture) as server:  # fmt: skip
                    async with await rsio.connect(server.url, capture=capture,
                                                  encoding=encoding) as peer:  # type: ignore[arg-type]  # fmt: skip
                        got = [e async for e in peer.subscribe("ints", limit_rate=64)]
                        assert len(got) == 300

    run(sessions())
    for stem in ("b", "binary", "msgpack"):
        (capture,) = capture_files(tmp_path / f"{stem}.wscap")
        capture_to_pcapng(capture, tmp_path / f"{stem}.pcapng", server_port=9000, mss=500)
        expected = rows(list(iter_records(capture)))
        reader = PcapReader(tmp_path / f"{stem}.pcapng")
        assert rows(list(reader)) == expected and len(expected) > 5
        assert reader.problems == []
