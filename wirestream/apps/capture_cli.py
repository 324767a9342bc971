"""``wirestream capture ...``: read captures from a shell.

    wirestream capture decode FILE... [--format text|json] [--protocol P] [--port N] [--midstream]
    wirestream capture stats FILE... [--format text|json] [--protocol P] [--port N] [--midstream]
    wirestream capture to-pcap FILE... OUT [--port N] [--mss N]

FILE is a ``.wscap`` capture file, the path a ``CaptureWriter`` was given (then every file
of that rotated capture, oldest first: ``caps/rsocket.wscap`` reads
``caps/rsocket.000000.wscap``, ...), or a pcap / pcapng file of TCP traffic (tcpdump's,
Wireshark's, ``to-pcap``'s), told apart by their first bytes.  A pcap does not say which
protocol it carries: ``--protocol`` (``rsocket/1.0``, ``rabbitmq_stream/1``, ...) and
``--port`` (the server's; default the protocol's well-known port, 0 = every TCP
connection) say it, except for files ``to-pcap`` wrote, which name both.

``decode`` prints one line per frame, decoded by the protocol's generated codec:
``text``: time, connection id, sender, frame type and fields (bytes as UTF-8 text when
they are, else ``0x`` + hex; long values shortened); ``json``: one object per line with
every field in full (``time``, ``timestamp_ns``, ``connection_id``, ``direction``,
``side``, ``sender``, ``frame_type``, ``length``, ``frame``: the fields; bytes as UTF-8
text, or under the field's name plus ``_hex`` when not UTF-8).  A frame that does not
decode is a ``MALFORMED`` line with the error and its first bytes.

``stats`` counts connections, frames and bytes per frame type and sender, the time span,
and for pcaps the packets and what the capture lacked (gaps, missed starts, ...).

``to-pcap`` writes a pcapng file of synthesized TCP connections for Wireshark
(``wirestream.runtime.capture.pcap``); ``--port`` is the server port shown (default: the
protocol's well-known port, which Reactive Streams and BPMUX do not have).

Exit codes: 0 done; 1 a frame did not decode, a file is corrupt, or a pcap lacks bytes
of its streams (each problem is a line on stderr; ``stats`` counts them); 2 usage error (no such file, an unknown
protocol, a pcap without ``--protocol``); 130 interrupted.
"""

from __future__ import annotations

import argparse
import datetime
import enum
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from wirestream.apps.cli_common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    error,
    port,
    positive,
    text,
)
from wirestream.runtime.capture import (
    CaptureProtocol,
    CaptureRecord,
    capture_files,
    get_protocol,
    iter_records,
    read_header,
)
from wirestream.runtime.capture.format import CaptureError
from wirestream.runtime.capture import native
from wirestream.runtime.capture.pcap import (
    DEFAULT_MSS,
    PcapReader,
    is_pcap,
    pcap_raw_records,
    write_pcapng,
)
from wirestream.runtime.capture.tcp_streams import Problem
from wirestream.runtime.errors import EncodeError, ProtocolError

__all__ = ["add_commands", "run", "arun", "frame_fields", "frame_type_name"]

FORMATS: Final = ("text", "json")
TEXT_BYTES: Final = 48
"""Bytes of a value shown in a text line; longer values are cut (``json`` shows all)."""
SHOWN_PROBLEMS: Final = 20


# ====================================================================== frames as data


def frame_type_name(frame: Any) -> str:
    """The frame type as the frame log spells it (``REQUEST_RESPONSE``, ``PUBLISH``): the
    frame's name, not its code's, which two frames can share -- PostgreSQL's Close and
    CommandComplete ('C' from each side), a draft RabbitMQ Stream request and its response
    (one key) -- and which named a client's Close ``COMMAND_COMPLETE`` here until
    2026-11-28 (the native ``stats`` found it: ``tests/native/test_native_capture_stats.py``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", type(frame).__name__).upper()


def _is_struct(value: Any) -> bool:
    return hasattr(type(value), "__match_args__") and not isinstance(value, tuple)


def _json_value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (bytes, bytearray, memoryview)):
        return text(bytes(value))
    if _is_struct(value):
        return frame_fields(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return repr(value)


def frame_fields(frame: Any) -> dict[str, Any]:
    """A decoded frame's (or struct's) fields as JSON values, by the names the generated
    class matches on (``__match_args__``): bytes as UTF-8 text, or under ``<name>_hex``
    when not UTF-8; enums by name; nested structs as objects."""
    fields: dict[str, Any] = {}
    for name in type(frame).__match_args__:
        value = getattr(frame, name)
        if isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            try:
                fields[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                fields[f"{name}_hex"] = raw.hex()
            continue
        fields[name] = _json_value(value)
    return fields


def _short(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            shown = json.dumps(raw.decode("utf-8")[:TEXT_BYTES])
        except UnicodeDecodeError:
            shown = "0x" + raw[:TEXT_BYTES].hex()
        return shown if len(raw) <= TEXT_BYTES else f"{shown}...({len(raw)} bytes)"
    if _is_struct(value):
        inner = " ".join(f"{n}={_short(getattr(value, n))}" for n in type(value).__match_args__)
        return "{" + inner + "}"
    if isinstance(value, (list, tuple)):
        items = [_short(item) for item in value[:8]]
        more = f", ...({len(value)} items)" if len(value) > 8 else ""
        return "[" + ", ".join(items) + more + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def _time(timestamp_ns: int) -> str:
    seconds, nanos = divmod(timestamp_ns, 1_000_000_000)
    try:
        when = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"@{timestamp_ns}ns"
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos:09d}Z"


# ====================================================================== input files


class UsageError(Exception):
    """A command-line mistake found while opening the input (exit 2)."""


@dataclass
class Source:
    """The records of the FILE arguments, with what their reading found."""

    protocol: CaptureProtocol
    paths: list[Path]
    kind: str  # "wscap" or "pcap"
    readers: list[PcapReader] = field(default_factory=list)

    def records(self) -> Iterator[tuple[Path, CaptureRecord]]:
        if not self.readers:
            for path in self.paths:
                for record in iter_records(path):
                    yield path, record
            return
        for reader in self.readers:
            for record in reader:
                yield Path(reader.path), record

    def problems(self) -> list[tuple[Path, Problem]]:
        return [(Path(r.path), p) for r in self.readers for p in r.problems]

    def problem_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reader in self.readers:
            for kind, n in reader.problem_counts.items():
                counts[kind] = counts.get(kind, 0) + n
        return counts


def _expand(names: Sequence[str]) -> list[Path]:
    paths: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_file():
            paths.append(path)
            continue
        family = capture_files(path)  # the rotated files of a CaptureWriter's path
        if not family:
            raise UsageError(f"{name}: no such file (nor files {path.stem}.NNNNNN{path.suffix})")
        paths.extend(family)
    return paths


def open_source(args: argparse.Namespace) -> Source:
    """The FILE arguments as one source of records of one protocol."""
    paths = _expand(args.files)
    wanted: CaptureProtocol | None = None
    if getattr(args, "protocol_name", None):
        try:
            wanted = get_protocol(args.protocol_name)
        except ValueError as unknown:
            raise UsageError(str(unknown)) from None
    pcaps = [is_pcap(path) for path in paths]
    if any(pcaps) and not all(pcaps):
        raise UsageError("give either capture files or pcap files, not both")
    if all(pcaps):
        readers = []
        for path in paths:
            try:
                reader = PcapReader(path, wanted, server_port=getattr(args, "port", None),
                                    midstream=getattr(args, "midstream", False))  # fmt: skip
            except ValueError as problem:
                raise UsageError(f"{problem} (--protocol, --port)") from None
            if wanted is None:
                wanted = reader.protocol
            elif reader.protocol is not wanted:
                raise UsageError(f"{path} holds {reader.protocol.name}, not {wanted.name}")
            readers.append(reader)
        assert wanted is not None
        return Source(wanted, paths, "pcap", readers)
    for path in paths:
        held = get_protocol(read_header(path).protocol)
        if wanted is None:
            wanted = held
        elif held is not wanted:
            raise UsageError(f"{path} holds {held.name}, not {wanted.name}")
    assert wanted is not None
    return Source(wanted, paths, "wscap")


# ====================================================================== commands


def _decode(source: Source, args: argparse.Namespace, out: TextIO) -> int:
    decoder = source.protocol.record_decoder()
    malformed = 0
    for path, record in source.records():
        sender = record.sender
        line: dict[str, Any] = {
            "time": _time(record.timestamp_ns),
            "timestamp_ns": record.timestamp_ns,
            "connection_id": record.connection_id,
            "direction": record.direction,
            "side": record.side,
            "sender": sender,
        }
        try:
            frame = decoder.decode(record.frame, record.connection_id, record.direction, sender)
        except ProtocolError as problem:
            malformed += 1
            frame = None
            line |= {"frame_type": "MALFORMED", "length": len(record.frame),
                     "error": str(problem), "frame_hex": record.frame[:64].hex(),
                     "file": str(path), "offset": record.offset}  # fmt: skip
        if frame is not None:
            line |= {"frame_type": frame_type_name(frame), "length": len(record.frame)}
        if args.format == "json":
            if frame is not None:
                line["frame"] = frame_fields(frame)
            out.write(json.dumps(line) + "\n")
            continue
        head = f"{line['time']} {record.connection_id:#x} {sender:<6} {line['frame_type']}"
        if frame is None:
            out.write(f"{head} {line['error']} ({record.frame[:16].hex()})\n")
        else:
            fields = " ".join(
                f"{name}={_short(getattr(frame, name))}" for name in type(frame).__match_args__
            )
            out.write(f"{head} {fields}\n")
    out.flush()
    _report_problems(source)
    if malformed:
        plural = "s" if malformed != 1 else ""
        error(f"{malformed} frame{plural} did not decode as {source.protocol.name}")
    return EXIT_FAILED if malformed or source.problem_counts() else EXIT_OK


def _report_problems(source: Source) -> None:
    problems = source.problems()
    for path, problem in problems[:SHOWN_PROBLEMS]:
        where = "" if problem.connection_id is None else f" connection {problem.connection_id:#x}"
        who = "" if problem.sender is None else f" from the {problem.sender}"
        error(f"{path}: offset {problem.offset}:{where}{who}: {problem.kind}: {problem.detail}")
    total = sum(source.problem_counts().values())
    if total > SHOWN_PROBLEMS:
        error(f"... {total - SHOWN_PROBLEMS} more problems (see: wirestream capture stats)")


def collect_stats(source: Source) -> dict[str, Any]:
    """The ``stats`` of a source, as the JSON output shows them: counted by the Rust
    extension where it decodes the protocol (``native.available``), else here."""
    if native.available(source.protocol.name):
        stats = _native_counts(source)
    else:
        stats = _python_counts(source)
    return _stats_of(source, stats)


def _native_counts(source: Source) -> dict[str, Any]:
    """``_python_counts``' figures, counted by ``native.count_records`` (the same frame
    types, senders, connections and order; ``tests/native/test_native_capture_stats.py``)."""
    records = None
    if source.readers:
        records = (record for reader in source.readers for record in pcap_raw_records(reader))
    paths = () if source.readers else source.paths
    frames, size, malformed, span, kinds, conns = native.count_records(
        source.protocol.name, paths, records
    )
    types: dict[str, dict[str, dict[str, int]]] = {}
    for kind, by_server, n, kind_bytes in kinds:
        sender = "server" if by_server else "client"
        types.setdefault(kind, {})[sender] = {"frames": n, "bytes": kind_bytes}
    connections = {
        cid: {"connection_id": cid, "side": "server" if server_side else "client",
              "frames": n, "bytes": conn_bytes, "first": first, "last": last}
        for cid, server_side, n, conn_bytes, first, last in conns
    }  # fmt: skip
    first, last = span if span is not None else (None, None)
    return {"frames": frames, "bytes": size, "malformed": malformed, "first": first,
            "last": last, "types": types, "connections": connections}  # fmt: skip


def _python_counts(source: Source) -> dict[str, Any]:
    """Each record decoded by the generated Python codec and counted."""
    decoder = source.protocol.record_decoder()
    connections: dict[int, dict[str, Any]] = {}
    types: dict[str, dict[str, dict[str, int]]] = {}
    first = last = None
    frames = total_bytes = malformed = 0
    for _, record in source.records():
        sender = record.sender
        try:
            decoded = decoder.decode(record.frame, record.connection_id, record.direction, sender)
            kind = frame_type_name(decoded)
        except ProtocolError:
            kind = "MALFORMED"
            malformed += 1
        size = len(record.frame)
        frames += 1
        total_bytes += size
        when = record.timestamp_ns
        first = when if first is None else min(first, when)
        last = when if last is None else max(last, when)
        by_sender = types.setdefault(kind, {})
        counts = by_sender.setdefault(sender, {"frames": 0, "bytes": 0})
        counts["frames"] += 1
        counts["bytes"] += size
        conn = connections.setdefault(
            record.connection_id,
            {"connection_id": record.connection_id, "side": record.side, "frames": 0,
             "bytes": 0, "first": when, "last": when},
        )  # fmt: skip
        conn["frames"] += 1
        conn["bytes"] += size
        conn["first"], conn["last"] = min(conn["first"], when), max(conn["last"], when)
    return {"frames": frames, "bytes": total_bytes, "malformed": malformed, "first": first,
            "last": last, "types": types, "connections": connections}  # fmt: skip


def _stats_of(source: Source, counts: dict[str, Any]) -> dict[str, Any]:
    first, last = counts["first"], counts["last"]
    types, connections = counts["types"], counts["connections"]
    stats: dict[str, Any] = {
        "files": [str(path) for path in source.paths],
        "protocol": source.protocol.name,
        "connections": len(connections),
        "frames": counts["frames"],
        "bytes": counts["bytes"],
        "malformed": counts["malformed"],
        "first": None if first is None else _time(first),
        "last": None if last is None else _time(last),
        "duration_s": 0.0 if first is None or last is None else (last - first) / 1e9,
        "frame_types": {kind: types[kind] for kind in sorted(types)},
        "per_connection": [
            conn | {"first": _time(conn["first"]), "last": _time(conn["last"])}
            for conn in connections.values()
        ],
    }
    if source.kind == "pcap":
        stats["pcap"] = {
            "packets": sum(r.packets for r in source.readers),
            "tcp_segments": sum(r.segments for r in source.readers),
            "server_port": source.readers[0].server_port,
            "tcp_connections": sum(r.connections for r in source.readers),
            "problems": source.problem_counts(),
            "problem_details": [
                {"file": str(path)} | problem._asdict()
                for path, problem in source.problems()[:SHOWN_PROBLEMS]
            ],
        }
    return stats


def _stats(source: Source, args: argparse.Namespace, out: TextIO) -> int:
    stats = collect_stats(source)
    if args.format == "json":
        out.write(json.dumps(stats, indent=2) + "\n")
    else:
        out.write(f"protocol     {stats['protocol']}\n")
        out.write(f"connections  {stats['connections']}\n")
        out.write(f"frames       {stats['frames']} ({stats['bytes']} bytes; "
                  f"{stats['malformed']} malformed)\n")  # fmt: skip
        out.write(f"time         {stats['first']} .. {stats['last']} "
                  f"({stats['duration_s']:.6f} s)\n")  # fmt: skip
        if "pcap" in stats:
            pcap = stats["pcap"]
            problems = ", ".join(f"{k} {n}" for k, n in pcap["problems"].items()) or "none"
            out.write(f"packets      {pcap['packets']} ({pcap['tcp_segments']} TCP segments; "
                      f"server port {pcap['server_port']}; problems: {problems})\n")  # fmt: skip
        if stats["frame_types"]:
            width = max(len(kind) for kind in stats["frame_types"])
            out.write(f"\n{'frame type':<{width}}  {'sender':<6}  {'frames':>8}  {'bytes':>12}\n")
            for kind, senders in stats["frame_types"].items():
                for sender, counts in sorted(senders.items()):
                    out.write(f"{kind:<{width}}  {sender:<6}  {counts['frames']:>8}  "
                              f"{counts['bytes']:>12}\n")  # fmt: skip
    out.flush()
    _report_problems(source)
    return EXIT_FAILED if stats["malformed"] or source.problem_counts() else EXIT_OK


def _to_pcap(args: argparse.Namespace) -> int:
    *names, out = args.files
    if not names:
        raise UsageError("to-pcap needs a capture FILE and the OUT file")
    paths = _expand(names)
    if any(is_pcap(path) for path in paths):
        raise UsageError("to-pcap reads capture (.wscap) files; this one is a pcap already")
    try:
        frames = write_pcapng(paths, out, server_port=args.port, mss=args.mss)
    except ValueError as problem:
        if isinstance(problem, EncodeError):
            raise
        raise UsageError(f"{problem} (--port)") from None
    print(f"wrote {frames} frames to {out}", file=sys.stderr, flush=True)
    return EXIT_OK


# ====================================================================== parser and runner


def _pcap_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--protocol", dest="protocol_name", metavar="P",
                        help="the protocol a pcap carries: rsocket/1.0, rsocket/0.2, "
                             "rabbitmq_stream/1, rsio/0, rsio/0+msgpack, bpmux/rel (capture "
                             "files name theirs)")  # fmt: skip
    parser.add_argument("--port", type=port, metavar="N",
                        help="pcaps: the server port (default: the one a to-pcap file names, "
                             "else the protocol's well-known port; 0: every TCP connection)")  # fmt: skip
    parser.add_argument("--midstream", action="store_true",
                        help="pcaps: also read a connection whose start was not captured, and "
                             "on after a gap, from the next segment")  # fmt: skip


def add_commands(protocols: Any) -> None:
    """Add ``capture`` and its sub-commands to the top-level sub-parsers."""
    capture = protocols.add_parser(
        "capture", help="captures and pcaps: decode, stats, to-pcap",
        description="Read capture files (.wscap, written by a tap: capture=CaptureWriter(...)) "
        "and pcap/pcapng files of TCP traffic.",
        epilog="examples:\n"
        "  wirestream capture decode out/session.wscap | head\n"
        "  wirestream capture decode out/session.wscap --format json | jq .frame_type\n"
        "  wirestream capture stats caps/rabbitmq.wscap          # every rotated file\n"
        "  wirestream capture to-pcap out/session.wscap session.pcapng\n"
        "  tcpdump -i any -w prod.pcap 'tcp port 5552'\n"
        "  wirestream capture decode prod.pcap --protocol rabbitmq_stream/1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    commands = capture.add_subparsers(dest="command", metavar="COMMAND", required=True)
    raw = argparse.RawDescriptionHelpFormatter

    decode = commands.add_parser(
        "decode", help="print every frame, decoded (text or JSON lines)",
        description="Print one line per frame, decoded by the protocol's generated codec.",
        epilog="examples:\n"
        "  wirestream capture decode out/session.wscap\n"
        "  wirestream capture decode out/session.wscap --format json\n"
        "  wirestream capture decode prod.pcapng --protocol rsocket/1.0 --port 7000",
        formatter_class=raw,
    )  # fmt: skip
    decode.add_argument("files", metavar="FILE", nargs="+",
                        help="capture files (or a CaptureWriter's path), or pcap files")  # fmt: skip
    decode.add_argument("--format", choices=FORMATS, default="text",
                        help="text lines (default) or JSON lines with every field")  # fmt: skip
    _pcap_options(decode)

    stats = commands.add_parser(
        "stats", help="connections, frames and bytes per type and sender, time span",
        description="Count what a capture holds; for pcaps also packets and what is missing.",
        epilog="examples:\n"
        "  wirestream capture stats out/session.wscap\n"
        "  wirestream capture stats prod.pcap --protocol rabbitmq_stream/1 --format json",
        formatter_class=raw,
    )  # fmt: skip
    stats.add_argument("files", metavar="FILE", nargs="+",
                       help="capture files (or a CaptureWriter's path), or pcap files")  # fmt: skip
    stats.add_argument("--format", choices=FORMATS, default="text")
    _pcap_options(stats)

    to_pcap = commands.add_parser(
        "to-pcap", help="write a capture as a pcapng file for Wireshark",
        description="Write the capture's connections as TCP connections of a pcapng file "
        "(synthesized handshakes, segments, checksums; nanosecond times).",
        epilog="examples:\n"
        "  wirestream capture to-pcap out/session.wscap session.pcapng\n"
        "  wirestream capture to-pcap caps/bpmux.wscap bpmux.pcapng --port 9000\n"
        "  wireshark session.pcapng",
        formatter_class=raw,
    )  # fmt: skip
    to_pcap.add_argument("files", metavar="FILE", nargs="+",
                         help="capture files (or a CaptureWriter's path), then the OUT file")  # fmt: skip
    to_pcap.add_argument("--port", type=port, metavar="N",
                         help="the server port in the pcap (default: the protocol's "
                              "well-known port: rsocket 7878, rabbitmq_stream 5552)")  # fmt: skip
    to_pcap.add_argument("--mss", type=positive, default=DEFAULT_MSS, metavar="BYTES",
                         help=f"largest TCP segment payload (default {DEFAULT_MSS})")  # fmt: skip


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one parsed ``wirestream capture`` command; its exit code."""
    stream = sys.stdout if out is None else out
    try:
        if args.command == "to-pcap":
            return _to_pcap(args)
        source = open_source(args)
        if args.command == "decode":
            return _decode(source, args, stream)
        return _stats(source, args, stream)
    except BrokenPipeError:
        return EXIT_OK  # `wirestream capture decode ... | head`: the reader has seen enough
    except UsageError as mistake:
        error(str(mistake))
        return EXIT_USAGE
    except CaptureError as corrupt:
        error(str(corrupt))
        return EXIT_FAILED
    except EncodeError as unfit:
        error(f"cannot write the pcap: {unfit}")
        return EXIT_FAILED
    except OSError as failed:
        error(f"{failed.filename or ''}: {failed.strerror or failed}")
        return EXIT_FAILED


async def arun(args: argparse.Namespace) -> int:
    """``run`` for ``wirestream.apps.cli.amain`` (which awaits every command)."""
    return run(args)
