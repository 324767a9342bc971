"""Codec throughput of the MQTT 5, PostgreSQL 3.0 and MySQL 10 codecs against the maintained
pure-Python client libraries, each on that library's own message mix, in one process.

Run: ``python -m bench.families`` (``make bench``). Target: ours >= 2x theirs, for decode
and for encode, on each family's mix (every variant's ratio is printed too).

What each side runs (both get the same wire bytes / the same Python values; nothing does
I/O; where a library's function ends by handing bytes to a socket or a queue, that socket
or queue is a stub -- the builtin ``len`` for ``sock.write`` / ``sock.sendall``, a
``lambda *a: 0`` for paho's ``_packet_queue`` -- and our encoders hand their bytes to the
same stub):

MQTT 5 PUBLISH, paho-mqtt 2.2.0 (topic of 20 characters, 100 B payload; QoS 0 and QoS 1,
each without properties and with two: Message Expiry Interval and Content Type):

* decode, ours: ``wirestream.generated.mqtt.v5.decode(packet)``, the whole packet (fixed
  header included) -> a ``Publish`` with the topic as str and the properties decoded;
* decode, paho: ``paho.mqtt._packet.decode_publish(command, body, MQTTv5)``, the parse
  ``Client._handle_publish`` starts with (body = the bytearray after the fixed header, as
  ``Client._packet_read`` leaves it in ``_in_packet["packet"]``; paho reads the fixed
  header byte by byte from the socket, so it is not part of its figure). The target ratio
  is against this, the least work paho does for an incoming PUBLISH;
* decode, info: ``Client._handle_publish()`` on a prepared ``_in_packet`` with
  ``_handle_on_message`` and ``_send_puback`` stubbed (no callback, no PUBACK), no logger:
  decode_publish + paho's ``MQTTMessage`` + its log call + timestamp; and ours
  ``StreamDecoder.feed`` over 100 packets at a time (per packet);
* encode, ours: ``encode(Publish(qos=, topic_name=, packet_id=, properties=, payload=))``
  from the values ``Client._send_publish`` takes (the property list built beforehand, as
  paho's ``Properties`` object is); info: ``encode(frame)`` of a frame built beforehand;
* encode, paho: ``Client._send_publish(mid, topic_bytes, payload, qos, False, False, None,
  properties)`` with ``_packet_queue`` stubbed (paho's build of the packet; the topic comes
  already encoded, as ``publish()`` passes it).

PostgreSQL 3.0, pg8000 1.31.6:

* decode: DataRow in text format, three row shapes: one int8 (``count(*)``); int4, text,
  bool; int8, int4, text, varchar, numeric, float8, bool and a NULL text. pg8000's
  ``CoreConnection.handle_DATA_ROW(body, context)`` (body after the type byte and length;
  the context prepared as ``handle_ROW_DESCRIPTION`` leaves it) splits the row and runs
  each column's converter, appending the row to ``context.rows``. The target row compares
  the same work: ours is ``wirestream.runtime.postgresql.rows.RowDecoder.decode(message)``
  (the decoder made once from the column types, as pg8000's context is) + the append;
  it gives the values pg8000 gives, of the same types (checked). Labelled ``[native]``
  when ``wirestream.runtime._native`` is built (the split and conversion in Rust, the
  Python path deciding any row it does not find exactly right), ``[Python: no _native]``
  when not. Info rows: ``RowDecoder.python_decode`` (the pure-Python path: the generated
  decoder + ``wirestream.runtime.rows.convert``); ours ``decode(message,
  sender="server")`` + pg8000's own ``PG_TYPES`` converters on ``bytes.decode()`` of each
  value + the append (the earlier target row); ours decode only (values as bytes); and
  the protocol-level parse to str: pg8000 with every column typed text (its converter
  ``string_in``) against ours decode + ``bytes.decode()`` per value;
* encode, per query, the messages pg8000 writes (``_flush`` calls and every read left out):
  ``run(sql)`` = ``send_QUERY``: Query; ``run(sql, params)`` = ``execute_unnamed``'s writes:
  Parse, Flush, Sync, Describe, Flush, Sync, Bind, Flush, Execute, Flush, Sync;
  ``PreparedStatement.run`` = ``execute_named``'s writes: Bind, Flush, Execute, Flush, Sync.
  pg8000's functions are called in the order those methods call them; the parameters are
  given as the text ``make_params`` produces (not timed on either side). Ours makes each
  message with its frame class's ``pack`` from the same str values (``[native]`` where the
  extension is built: codegen/targets/rust/py_pack.py), and, as pg8000 does with its
  FLUSH_MSG, SYNC_MSG and EXECUTE_MSG, makes Flush, Sync and ``Execute("", 0)`` once
  beforehand (with ``pack``). Info: the same frames built as objects, each ``encode()``d.

MySQL 10, PyMySQL 1.2.4:

* decode: text result-set rows, the same three shapes (BIGINT; INT, VARCHAR, TINYINT;
  BIGINT, INT, VARCHAR, VARCHAR, DECIMAL, DOUBLE, TINYINT, NULL VARCHAR). PyMySQL's
  ``MySQLResult._read_row_from_packet(packet)`` on a fresh ``MysqlPacket(payload)``
  (made outside the timing; converters set up as ``_get_descriptions`` does) -> a tuple of
  converted values; ours ``wirestream.runtime.mysql.rows.TextRowDecoder.decode(packet)``
  (header included; the decoder made once from the column types) -> the same tuple, of
  the same types (checked), ``[native]`` or ``[Python: no _native]`` as for PostgreSQL.
  Info rows: ``TextRowDecoder.python_decode``; ours ``decode(packet, ctx)``
  (``ctx.phase = TEXT_ROWS``, ``ctx.column_count`` set) + PyMySQL's decode/converter per
  column (the earlier target row); and as for PostgreSQL (PyMySQL with every column a
  utf8 VARCHAR);
* encode: COM_QUERY for three statements; PyMySQL ``Connection._execute_command(
  COM_QUERY, sql)`` (``defer_connect=True``, ``_sock.sendall`` stubbed) against ours
  ``ComQuery.pack(query=sql)`` (``[native]`` as above); both from the str. Info:
  ``encode(ComQuery(query=sql))``.

Before timing, each pair is checked to produce identical bytes / equal values; any
difference is printed as a WARNING and listed in the summary.

Timing: ``time.perf_counter`` around a plain loop ``for args in calls: fn(*args)`` over a
list prepared beforehand, garbage collector off, best of REPEATS; the contenders of one
variant alternate within each repeat (so load on the machine hits both). A family's "mix"
is the rate over its variants in equal numbers: count / sum(1 / rate).
"""

from __future__ import annotations

import gc
import importlib.metadata
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import wirestream.generated.mqtt.v5 as mq
import wirestream.generated.mysql.v10 as my
import wirestream.generated.postgresql.v3 as pg
from wirestream.runtime.mysql.rows import TextRowDecoder, native_text_row
from wirestream.runtime.postgresql.rows import RowDecoder, native_data_row

REPEATS = 15
LOOP_SECONDS = 0.03  # each timed loop makes about this many calls (found by a short run)
MIN_CALLS, MAX_CALLS = 20, 200_000
TARGET = 2.0

Calls = Callable[[int], list[tuple[Any, ...]]]  # n -> the argument tuples of n calls

warnings: list[str] = []


def _version(distribution: str) -> str:
    """The installed version (pymysql.__version__ is a MySQLdb-compatible "2.2.8")."""
    return importlib.metadata.version(distribution)


def _load() -> str:
    """The 1-minute load average against the CPUs: other work on the machine slows
    every contender (the ratios less than the rates: contenders alternate)."""
    return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def warn(message: str) -> None:
    warnings.append(message)
    print(f"WARNING: {message}", file=sys.stderr)


class _NullSocket:
    """Stands for a connected socket: takes bytes and drops them (``len`` is the cheapest
    callable of one argument)."""

    write = staticmethod(len)
    sendall = staticmethod(len)

    def settimeout(self, timeout: float | None) -> None:
        pass

    def close(self) -> None:
        pass


class _Capture(_NullSocket):
    """A socket stub that keeps what is written (for the byte checks)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.write = self.sendall = self.parts.append  # type: ignore[assignment]

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        return data


# --------------------------------------------------------------------------------------
# harness
# --------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str  # e.g. "ours   decode(packet)"
    fn: Callable[..., object]
    calls: Calls  # the argument tuples of one timed loop, made before it
    ops_per_call: int = 1
    baseline: str | None = None  # the contender this one's ratio is printed against
    rate: float = 0.0


@dataclass
class Variant:
    name: str
    contenders: list[Contender] = field(default_factory=list)

    def rate(self, name: str) -> float:
        return next(c.rate for c in self.contenders if c.name == name)


def same(args: tuple[Any, ...]) -> Calls:
    """Calls with the same arguments."""
    return lambda n: [args] * n


def _loop(fn: Callable[..., object], calls: list[tuple[Any, ...]]) -> float:
    start = time.perf_counter()
    for args in calls:
        fn(*args)
    return time.perf_counter() - start


def _calls_per_loop(contender: Contender) -> int:
    """Enough calls for a timed loop of about LOOP_SECONDS."""
    per_call = min(_loop(contender.fn, contender.calls(50)) for _ in range(3)) / 50
    return max(MIN_CALLS, min(MAX_CALLS, int(LOOP_SECONDS / max(per_call, 1e-9))))


def measure(variants: Sequence[Variant]) -> None:
    """Best-of-REPEATS rate (ops/s) of every contender; contenders alternate per repeat."""
    best: dict[int, float] = {}
    counts = {id(c): _calls_per_loop(c) for v in variants for c in v.contenders}
    gc_was_enabled = gc.isenabled()
    try:
        for repeat in range(REPEATS):
            for variant in variants:
                order = variant.contenders
                if repeat % 2:
                    order = order[::-1]
                for contender in order:
                    calls = contender.calls(counts[id(contender)])
                    gc.collect()
                    gc.disable()
                    elapsed = _loop(contender.fn, calls)
                    gc.enable()
                    key = id(contender)
                    best[key] = min(best.get(key, float("inf")), elapsed)
                    del calls
    finally:
        if gc_was_enabled:
            gc.enable()
        else:
            gc.disable()
    for variant in variants:
        for contender in variant.contenders:
            key = id(contender)
            contender.rate = counts[key] * contender.ops_per_call / best[key]


def mix_rate(variants: Sequence[Variant], name: str) -> float:
    return len(variants) / sum(1.0 / v.rate(name) for v in variants)


@dataclass
class Verdict:
    label: str
    ratio: float
    worst: float
    worst_variant: str


def report(
    title: str,
    variants: Sequence[Variant],
    ours: str,
    theirs: str,
    label: str,
) -> Verdict:
    """Print one operation's table (codec.py's layout, ops instead of frames) and its
    verdict on the mix: ours/theirs >= TARGET."""
    print()
    print(title)
    header = f"  {'variant':<16} {'implementation':<52} {'ops/s':>11} {'us/op':>8} {'ratio':>8}"
    print(header)
    print("  " + "-" * (len(header) - 2))
    names = [c.name for c in variants[0].contenders]
    baselines = {c.name: c.baseline for c in variants[0].contenders}
    rows: list[tuple[str, str, float, float | None]] = []
    for variant in variants:
        for contender in variant.contenders:
            base = None if contender.baseline is None else variant.rate(contender.baseline)
            rows.append((variant.name, contender.name, contender.rate, base))
    for name in names:
        base_name = baselines[name]
        base = None if base_name is None else mix_rate(variants, base_name)
        rows.append(("mix", name, mix_rate(variants, name), base))
    previous = ""
    for variant_name, name, rate, base in rows:
        ratio = "" if base is None else f"{rate / base:.2f}x"
        shown = variant_name if variant_name != previous else ""
        previous = variant_name
        print(f"  {shown:<16} {name:<52} {rate:>11,.0f} {1e6 / rate:>8.3f} {ratio:>8}")
    ratios = [(v.rate(ours) / v.rate(theirs), v.name) for v in variants]
    worst, worst_name = min(ratios)
    mixed = mix_rate(variants, ours) / mix_rate(variants, theirs)
    verdict = "PASS" if mixed >= TARGET else "MISS"
    print(
        f"  {label}: mix {mixed:.2f}x, lowest {worst:.2f}x ({worst_name}); "
        f"target >= {TARGET:g}x  {verdict}"
    )
    return Verdict(label, mixed, worst, worst_name)


# --------------------------------------------------------------------------------------
# MQTT 5 PUBLISH vs paho-mqtt
# --------------------------------------------------------------------------------------

TOPIC = "sensors/room-42/temp"  # 20 characters
PAYLOAD = bytes(range(100))
MID = 7


def bench_mqtt() -> list[Verdict]:
    from paho.mqtt import _packet
    from paho.mqtt.client import Client
    from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties as _Properties

    Properties: Any = _Properties

    v5 = MQTTProtocolVersion.MQTTv5
    client: Any = Client(CallbackAPIVersion.VERSION2, protocol=v5)
    client._sock = _NullSocket()  # _send_publish refuses to build without a socket
    queued: list[bytes] = []

    def capture_queue(command: int, packet: bytearray, mid: int, qos: int, info: Any) -> int:
        queued.append(bytes(packet))
        return 0

    def stub_queue(*args: Any) -> int:
        return 0

    client._handle_on_message = lambda message: None
    client._send_puback = lambda mid: 0

    def ours_publish(
        topic: str, packet_id: int | None, payload: bytes, qos: mq.QoS, props: list[Any]
    ) -> bytes:
        return mq.encode(
            mq.Publish(
                qos=qos, topic_name=topic, packet_id=packet_id, properties=props, payload=payload
            )
        )

    paho_dec = "paho   _packet.decode_publish(cmd, body, v5)"
    paho_enc = "paho   Client._send_publish(...), queue stubbed"
    decode_variants: list[Variant] = []
    encode_variants: list[Variant] = []
    for qos in (0, 1):
        for with_props in (False, True):
            name = f"qos{qos}" + (" + 2 props" if with_props else "")
            ours_props: list[Any] = []
            paho_props = None
            if with_props:
                ours_props = [
                    mq.MessageExpiryInterval(value=3600),
                    mq.ContentType(value="text/plain"),
                ]
                paho_props = Properties(PacketTypes.PUBLISH)
                paho_props.MessageExpiryInterval = 3600
                paho_props.ContentType = "text/plain"
            packet_id = MID if qos else None
            frame = mq.Publish(
                qos=mq.QoS(qos),
                topic_name=TOPIC,
                packet_id=packet_id,
                properties=ours_props,
                payload=PAYLOAD,
            )
            wire = mq.encode(frame)
            send_args = (MID, TOPIC.encode(), PAYLOAD, qos, False, False, None, paho_props)
            client._packet_queue = capture_queue
            client._send_publish(*send_args)
            client._packet_queue = stub_queue
            if queued.pop() != wire:
                warn(f"MQTT PUBLISH {name}: ours encode != paho _send_publish")
            header_size = 2 if wire[1] < 0x80 else 3
            command, body = wire[0], bytearray(wire[header_size:])
            theirs = _packet.decode_publish(command, body, v5)
            ours = mq.decode(wire)
            assert isinstance(ours, mq.Publish)
            props = theirs.properties
            if (
                ours != frame
                or theirs.topic.decode() != ours.topic_name
                or (theirs.qos, theirs.mid or None, theirs.payload) != (qos, packet_id, PAYLOAD)
                or getattr(props, "MessageExpiryInterval", None) != (3600 if with_props else None)
                or getattr(props, "ContentType", None) != ("text/plain" if with_props else None)
            ):
                warn(f"MQTT PUBLISH {name}: our decode and paho decode_publish disagree")
            in_packet = {"command": command, "packet": body}

            def handle_calls(n: int, in_packet: dict[str, Any] = in_packet) -> list[tuple[()]]:
                client._in_packet = in_packet
                return [()] * n

            stream = wire * 100
            decode_variants.append(
                Variant(
                    name,
                    [
                        Contender("ours   decode(packet)", mq.decode, same((wire,)), 1, paho_dec),
                        Contender(paho_dec, _packet.decode_publish, same((command, body, v5))),
                        Contender(
                            "paho   Client._handle_publish() (info)",
                            client._handle_publish,
                            handle_calls,
                            1,
                            paho_dec,
                        ),
                        Contender(
                            "ours   StreamDecoder.feed, 100 a call (info)",
                            mq.StreamDecoder().feed,
                            same((stream,)),
                            100,
                            paho_dec,
                        ),
                    ],
                )
            )
            ours_args = (TOPIC, packet_id, PAYLOAD, mq.QoS(qos), ours_props)
            encode_variants.append(
                Variant(
                    name,
                    [
                        Contender(
                            "ours   encode(Publish(...)) from the values",
                            ours_publish,
                            same(ours_args),
                            1,
                            paho_enc,
                        ),
                        Contender(paho_enc, client._send_publish, same(send_args)),
                        Contender(
                            "ours   encode(frame), frame built before (info)",
                            mq.encode,
                            same((frame,)),
                            1,
                            paho_enc,
                        ),
                    ],
                )
            )
    measure(decode_variants)
    measure(encode_variants)
    client._sock = None
    version = _version("paho-mqtt")
    dec = report(
        f"MQTT 5 PUBLISH ({len(TOPIC)}-char topic, {len(PAYLOAD)} B payload) decode vs "
        f"paho-mqtt {version}, best of {REPEATS}",
        decode_variants,
        decode_variants[0].contenders[0].name,
        decode_variants[0].contenders[1].name,
        "MQTT decode ours/paho decode_publish",
    )
    enc = report(
        f"MQTT 5 PUBLISH encode vs paho-mqtt {version}, best of {REPEATS}",
        encode_variants,
        encode_variants[0].contenders[0].name,
        encode_variants[0].contenders[1].name,
        "MQTT encode ours/paho _send_publish",
    )
    return [dec, enc]


# --------------------------------------------------------------------------------------
# PostgreSQL 3.0 vs pg8000
# --------------------------------------------------------------------------------------

# (type name, value as the server sends it in text format)
PG_ROWS: dict[str, list[tuple[str, str | None]]] = {
    "1 col": [("int8", "1048576")],
    "3 cols": [("int4", "42"), ("text", "alice"), ("bool", "t")],
    "8 cols + NULL": [
        ("int8", "9007199254740993"),
        ("int4", "42"),
        ("text", "Alice Example"),
        ("varchar", "alice@example.com"),
        ("numeric", "1234.56"),
        ("float8", "0.875"),
        ("bool", "t"),
        ("text", None),
    ],
}

PG_OIDS = {"int8": 20, "int4": 23, "text": 25, "varchar": 1043, "numeric": 1700,
           "float8": 701, "bool": 16}  # fmt: skip
PG_PATH = "[native]" if native_data_row is not None else "[Python: no _native]"
MY_PATH = "[native]" if native_text_row is not None else "[Python: no _native]"
PACK_PATH = "[native]" if "builtin" in type(my.ComQuery.pack).__name__ else "[Python: no _native]"

PG_SQL = "SELECT id, name, email, balance FROM accounts WHERE id = 42"
PG_SQL_PARAMS = "SELECT id, name, email, balance FROM accounts WHERE id = $1 AND active = $2"
PG_PARAMS = ("42", "true")  # what pg8000's make_params makes of (42, True)
PG_STATEMENT = "pg8000_statement_0"


def bench_postgresql() -> list[Verdict]:
    from pg8000 import converters
    from pg8000.core import NULL_BYTE, SYNC_MSG, Context, CoreConnection, _write

    oid = {
        "int8": converters.BIGINT,
        "int4": converters.INTEGER,
        "text": converters.TEXT,
        "varchar": converters.VARCHAR,
        "numeric": converters.NUMERIC,
        "float8": converters.FLOAT,
        "bool": converters.BOOLEAN,
    }
    # A connection without its __init__ (which logs in): the attributes handle_DATA_ROW and
    # the send_* methods use, as __init__ sets them.
    conn: Any = object.__new__(CoreConnection)
    conn._client_encoding = "utf8"
    conn.pg_types = dict(converters.PG_TYPES)
    capture = _Capture()
    conn._sock = capture

    # ---- decode ----
    theirs_name = "pg8000 handle_DATA_ROW(body, context)"
    theirs_text_name = "pg8000 handle_DATA_ROW, every column text (info)"
    decode_variants: list[Variant] = []
    for name, columns in PG_ROWS.items():
        values = [None if v is None else v.encode() for _, v in columns]
        wire = pg.encode(pg.DataRow(values=values))
        body = wire[5:]
        funcs = [conn.pg_types[oid[t]] for t, _ in columns]
        context = Context(None, columns=[{} for _ in columns], input_funcs=funcs)
        text_context = Context(
            None, columns=[{} for _ in columns], input_funcs=[converters.string_in] * len(funcs)
        )
        conn.handle_DATA_ROW(body, context)
        conn.handle_DATA_ROW(body, text_context)
        decoder = RowDecoder.from_types([PG_OIDS[t] for t, _ in columns])
        decoded: list[list[Any]] = []
        ours_decoded(decoder.decode, wire, decoded)
        ours_decoded(decoder.python_decode, wire, decoded)
        if decoded != [context.rows[-1]] * 2 or any(
            type(a) is not type(b) for row in decoded for a, b in zip(row, context.rows[-1])
        ):
            warn(f"PostgreSQL DataRow {name}: RowDecoder's values and pg8000's differ")
        ours_rows: list[list[Any]] = []
        ours_row(wire, funcs, ours_rows)
        ours_text_rows: list[list[Any]] = []
        ours_text_row(wire, ours_text_rows)
        if ours_rows != context.rows or ours_text_rows != text_context.rows:
            warn(f"PostgreSQL DataRow {name}: our rows and pg8000's differ")
        if pg.decode(wire, None, "server") != pg.DataRow(values=values):
            warn(f"PostgreSQL DataRow {name}: our decode does not read back the row")

        def ours_calls(n: int, wire: bytes = wire, funcs: Any = funcs) -> list[tuple[Any, ...]]:
            return [(wire, funcs, [])] * n  # one rows list per loop, as pg8000's context.rows

        def decoder_calls(
            n: int, read: Callable[[bytes], Any] = decoder.decode, wire: bytes = wire
        ) -> list[tuple[Any, ...]]:
            return [(read, wire, [])] * n

        def python_calls(
            n: int, read: Callable[[bytes], Any] = decoder.python_decode, wire: bytes = wire
        ) -> list[tuple[Any, ...]]:
            return [(read, wire, [])] * n

        def ours_text_calls(n: int, wire: bytes = wire) -> list[tuple[Any, ...]]:
            return [(wire, [])] * n

        def pg8000_calls(n: int, ctx: Any = context) -> list[tuple[Any, ...]]:
            ctx.rows = []
            return [(body, ctx)] * n

        def pg8000_text_calls(n: int, ctx: Any = text_context) -> list[tuple[Any, ...]]:
            ctx.rows = []
            return [(body, ctx)] * n

        decode_variants.append(
            Variant(
                name,
                [
                    Contender(
                        f"ours   RowDecoder.decode(message) + append {PG_PATH}",
                        ours_decoded,
                        decoder_calls,
                        1,
                        theirs_name,
                    ),
                    Contender(theirs_name, conn.handle_DATA_ROW, pg8000_calls),
                    Contender(
                        "ours   RowDecoder.python_decode + append (info)",
                        ours_decoded,
                        python_calls,
                        1,
                        theirs_name,
                    ),
                    Contender(
                        "ours   decode() + pg8000's converters + append (info)",
                        ours_row,
                        ours_calls,
                        1,
                        theirs_name,
                    ),
                    Contender(
                        "ours   decode() only, values as bytes (info)",
                        pg.decode,
                        same((wire, None, "server")),
                        1,
                        theirs_name,
                    ),
                    Contender(
                        "ours   decode() + str per value + append (info)",
                        ours_text_row,
                        ours_text_calls,
                        1,
                        theirs_text_name,
                    ),
                    Contender(theirs_text_name, conn.handle_DATA_ROW, pg8000_text_calls),
                ],
            )
        )

    # ---- encode ----
    def pg8000_simple(sql: str) -> None:
        conn.send_QUERY(sql)

    def pg8000_unnamed(statement: str, params: tuple[str | None, ...]) -> None:
        # execute_unnamed's writes, in its order (its _flush() calls and its reads --
        # handle_messages -- left out; make_params done beforehand)
        conn.send_PARSE(NULL_BYTE, statement, ())
        _write(conn._sock, SYNC_MSG)
        conn.send_DESCRIBE_STATEMENT(NULL_BYTE)
        _write(conn._sock, SYNC_MSG)
        conn.send_BIND(NULL_BYTE, params)
        conn.send_EXECUTE()
        _write(conn._sock, SYNC_MSG)

    def pg8000_named(statement_name_bin: bytes, params: tuple[str | None, ...]) -> None:
        # execute_named's writes
        conn.send_BIND(statement_name_bin, params)
        conn.send_EXECUTE()
        _write(conn._sock, SYNC_MSG)

    statement_bin = PG_STATEMENT.encode("ascii") + NULL_BYTE
    ours_fns = ours_pg_writers(capture)
    checks: dict[str, Any] = {
        "simple": ((pg8000_simple, (PG_SQL,)), (ours_fns["simple"], (PG_SQL,))),
        "unnamed": (
            (pg8000_unnamed, (PG_SQL_PARAMS, PG_PARAMS)),
            (ours_fns["unnamed"], (PG_SQL_PARAMS, PG_PARAMS)),
        ),
        "named": (
            (pg8000_named, (statement_bin, PG_PARAMS)),
            (ours_fns["named"], (PG_STATEMENT, PG_PARAMS)),
        ),
    }
    frame_fns = ours_pg_frame_writers(capture)
    for kind, ((theirs_fn, theirs_args), (ours_fn, ours_args)) in checks.items():
        theirs_fn(*theirs_args)
        theirs_bytes = capture.take()
        ours_fn(*ours_args)
        if capture.take() != theirs_bytes:
            warn(f"PostgreSQL {kind} query: our messages' bytes != pg8000's")
        frame_fns[kind](*ours_args)
        if capture.take() != theirs_bytes:
            warn(f"PostgreSQL {kind} query: our frames' bytes != pg8000's")
    conn._sock = _NullSocket()
    ours_fns = ours_pg_writers(conn._sock)
    frame_fns = ours_pg_frame_writers(conn._sock)
    labels = {
        "simple": "Query",
        "unnamed": "Parse..Sync, 11",
        "named": "Bind..Sync, 5",
    }
    theirs_name = "pg8000 send_QUERY / execute_unnamed / _named writes"
    encode_variants: list[Variant] = []
    for kind, ((theirs_fn, theirs_args), (_, ours_args)) in checks.items():
        encode_variants.append(
            Variant(
                labels[kind],
                [
                    Contender(
                        f"ours   Frame.pack(values) of each message {PACK_PATH}",
                        ours_fns[kind],
                        same(ours_args),
                        1,
                        theirs_name,
                    ),
                    Contender(theirs_name, theirs_fn, same(theirs_args)),
                    Contender(
                        "ours   encode(Frame(values)) of each (info)",
                        frame_fns[kind],
                        same(ours_args),
                        1,
                        theirs_name,
                    ),
                ],
            )
        )

    measure(decode_variants)
    measure(encode_variants)
    version = _version("pg8000")
    dec = report(
        f"PostgreSQL DataRow (text format) decode to Python values vs pg8000 {version}, "
        f"best of {REPEATS}",
        decode_variants,
        decode_variants[0].contenders[0].name,
        decode_variants[0].contenders[1].name,
        "PostgreSQL decode ours/pg8000 handle_DATA_ROW",
    )
    enc = report(
        f"PostgreSQL per-query messages encode vs pg8000 {version}, best of {REPEATS}",
        encode_variants,
        encode_variants[0].contenders[0].name,
        encode_variants[0].contenders[1].name,
        "PostgreSQL encode ours/pg8000 send_*",
    )
    print(
        "  (op = one query's messages: run(sql) = Query; run(sql, params) = execute_unnamed's"
        " 11 messages; PreparedStatement.run = execute_named's 5. pg8000 writes Flush, Sync"
        " and Execute from bytes made at import; ours too, with pack)"
    )
    return [dec, enc]


def ours_decoded(read: Callable[[bytes], Any], data: bytes, rows: list[Any]) -> None:
    """A row read by ``RowDecoder`` / ``TextRowDecoder``, appended as pg8000 does."""
    rows.append(read(data))


def ours_row(data: bytes, funcs: list[Callable[[str], Any]], rows: list[list[Any]]) -> None:
    """A DataRow to Python values with pg8000's converters, appended as pg8000 does."""
    frame: Any = pg.decode(data, None, "server")
    rows.append([None if v is None else f(v.decode()) for f, v in zip(funcs, frame.values)])


def ours_text_row(data: bytes, rows: list[list[Any]]) -> None:
    frame: Any = pg.decode(data, None, "server")
    rows.append([None if v is None else v.decode() for v in frame.values])


def ours_pg_writers(sock: Any) -> dict[str, Callable[..., None]]:
    """What pg8000 writes per query, each message by its frame class's ``pack`` (native
    where built) into ``sock``."""
    statement_target = pg.Target.STATEMENT
    query, parse, bind, describe = pg.Query.pack, pg.Parse.pack, pg.Bind.pack, pg.Describe.pack
    # the messages of one value each, made once, as pg8000 makes FLUSH_MSG, SYNC_MSG and
    # EXECUTE_MSG at import
    flush, sync, execute = pg.Flush.pack(), pg.Sync.pack(), pg.Execute.pack("", 0)

    def simple(sql: str) -> None:
        sock.write(query(sql))

    def unnamed(statement: str, params: tuple[str | None, ...]) -> None:
        write = sock.write
        write(parse("", statement))
        write(flush)
        write(sync)
        write(describe(statement_target, ""))
        write(flush)
        write(sync)
        write(bind("", "", None, [None if p is None else p.encode() for p in params]))
        write(flush)
        write(execute)
        write(flush)
        write(sync)

    def named(statement: str, params: tuple[str | None, ...]) -> None:
        write = sock.write
        write(bind("", statement, None, [None if p is None else p.encode() for p in params]))
        write(flush)
        write(execute)
        write(flush)
        write(sync)

    return {"simple": simple, "unnamed": unnamed, "named": named}


def ours_pg_frame_writers(sock: Any) -> dict[str, Callable[..., None]]:
    """The same messages as frame objects, each encoded (``encode(Frame(...))``)."""
    encode = pg.encode
    statement_target = pg.Target.STATEMENT

    def simple(sql: str) -> None:
        sock.write(encode(pg.Query(query=sql)))

    def unnamed(statement: str, params: tuple[str | None, ...]) -> None:
        write = sock.write
        write(encode(pg.Parse(statement="", query=statement, parameter_types=[])))
        write(encode(pg.Flush()))
        write(encode(pg.Sync()))
        write(encode(pg.Describe(target=statement_target, name="")))
        write(encode(pg.Flush()))
        write(encode(pg.Sync()))
        values = [None if p is None else p.encode() for p in params]
        write(encode(pg.Bind(portal="", statement="", parameters=values)))
        write(encode(pg.Flush()))
        write(encode(pg.Execute(portal="", max_rows=0)))
        write(encode(pg.Flush()))
        write(encode(pg.Sync()))

    def named(statement: str, params: tuple[str | None, ...]) -> None:
        write = sock.write
        values = [None if p is None else p.encode() for p in params]
        write(encode(pg.Bind(portal="", statement=statement, parameters=values)))
        write(encode(pg.Flush()))
        write(encode(pg.Execute(portal="", max_rows=0)))
        write(encode(pg.Flush()))
        write(encode(pg.Sync()))

    return {"simple": simple, "unnamed": unnamed, "named": named}


# --------------------------------------------------------------------------------------
# MySQL 10 vs PyMySQL
# --------------------------------------------------------------------------------------

MY_ROWS: dict[str, list[tuple[str, str | None]]] = {
    "1 col": [("LONGLONG", "1048576")],
    "3 cols": [("LONG", "42"), ("VAR_STRING", "alice"), ("TINY", "1")],
    "8 cols + NULL": [
        ("LONGLONG", "9007199254740993"),
        ("LONG", "42"),
        ("VAR_STRING", "Alice Example"),
        ("VAR_STRING", "alice@example.com"),
        ("NEWDECIMAL", "1234.56"),
        ("DOUBLE", "0.875"),
        ("TINY", "1"),
        ("VAR_STRING", None),
    ],
}

MY_SQL = {
    "SELECT 1": "SELECT 1",
    "point SELECT": "SELECT id, name, email, balance FROM accounts WHERE id = 42",
    "INSERT": (
        "INSERT INTO events (id, account_id, kind, amount, currency, note, created_at) VALUES "
        "(9007199254740993, 42, 'deposit', 1234.56, 'EUR', 'monthly salary, March', "
        "'2026-03-01 09:30:00')"
    ),
}


def bench_mysql() -> list[Verdict]:
    from pymysql import converters
    from pymysql.connections import TEXT_TYPES, Connection, MySQLResult
    from pymysql.constants import COMMAND, FIELD_TYPE
    from pymysql.protocol import MysqlPacket

    conn: Any = Connection(defer_connect=True)  # never connects
    capture = _Capture()
    conn._sock = capture
    conn._current_timeout = conn._write_timeout  # as connect() leaves them
    encoding = conn.encoding

    def pymysql_converters(types: list[str]) -> list[tuple[str | None, Any]]:
        """MySQLResult.converters as _get_descriptions sets them (use_unicode, no binary
        charset)."""
        out: list[tuple[str | None, Any]] = []
        for type_name in types:
            field_type = getattr(FIELD_TYPE, type_name)
            column_encoding = encoding if field_type in TEXT_TYPES else "ascii"
            converter = conn.decoders.get(field_type)
            if converter is converters.through:
                converter = None
            out.append((column_encoding, converter))
        return out

    # ---- decode ----
    decode_variants: list[Variant] = []
    for name, columns in MY_ROWS.items():
        values = [None if v is None else v.encode() for _, v in columns]
        ctx = my.Context(phase=my.Phase.TEXT_ROWS, column_count=len(columns))
        wire = my.encode(my.TextRow(sequence_id=2, values=values), ctx)
        payload = wire[4:]
        result: Any = MySQLResult(conn)
        result.converters = pymysql_converters([t for t, _ in columns])
        text_result: Any = MySQLResult(conn)
        text_result.converters = pymysql_converters(["VAR_STRING"] * len(columns))
        convs = result.converters
        theirs = result._read_row_from_packet(MysqlPacket(payload, encoding))
        theirs_text = text_result._read_row_from_packet(MysqlPacket(payload, encoding))
        if ours_my_row(wire, ctx, convs) != theirs or ours_my_text_row(wire, ctx) != theirs_text:
            warn(f"MySQL TextRow {name}: our row and PyMySQL's differ")
        if my.decode(wire, ctx) != my.TextRow(sequence_id=2, values=values):
            warn(f"MySQL TextRow {name}: our decode does not read back the row")
        if name.startswith("8") and not isinstance(theirs[4], Decimal):
            warn("MySQL TextRow: DECIMAL did not convert to Decimal")
        decoder = TextRowDecoder.from_types([getattr(FIELD_TYPE, t) for t, _ in columns])
        for read in (decoder.decode, decoder.python_decode):
            row = read(wire)
            if row != theirs or any(type(a) is not type(b) for a, b in zip(row, theirs)):
                warn(f"MySQL TextRow {name}: TextRowDecoder's values and PyMySQL's differ")

        def packets(n: int, payload: bytes = payload) -> list[tuple[Any, ...]]:
            return [(MysqlPacket(payload, encoding),) for _ in range(n)]

        decode_variants.append(
            Variant(
                name,
                [
                    Contender(
                        f"ours   TextRowDecoder.decode(packet) {MY_PATH}",
                        decoder.decode,
                        same((wire,)),
                    ),
                    Contender(
                        "PyMySQL MySQLResult._read_row_from_packet(packet)",
                        result._read_row_from_packet,
                        packets,
                    ),
                    Contender(
                        "ours   TextRowDecoder.python_decode (info)",
                        decoder.python_decode,
                        same((wire,)),
                    ),
                    Contender(
                        "ours   decode() + PyMySQL's decode/converters (info)",
                        ours_my_row,
                        same((wire, ctx, convs)),
                    ),
                    Contender(
                        "ours   decode() only, values as bytes (info)",
                        my.decode,
                        same((wire, ctx)),
                    ),
                    Contender(
                        "ours   decode() + str per value (info)",
                        ours_my_text_row,
                        same((wire, ctx)),
                    ),
                    Contender(
                        "PyMySQL _read_row_from_packet, all VARCHAR (info)",
                        text_result._read_row_from_packet,
                        packets,
                    ),
                ],
            )
        )
    for v in decode_variants:
        for c in v.contenders[:5]:
            c.baseline = v.contenders[1].name if c is not v.contenders[1] else None
        v.contenders[5].baseline = v.contenders[6].name

    # ---- encode ----
    def ours_pack(sql: str, sock: Any = capture) -> None:
        sock.sendall(my.ComQuery.pack(query=sql))

    def ours_frame(sql: str, sock: Any = capture) -> None:
        sock.sendall(my.encode(my.ComQuery(query=sql)))

    for name, sql in MY_SQL.items():
        conn._execute_command(COMMAND.COM_QUERY, sql)
        theirs_bytes = capture.take()
        for ours in (ours_pack, ours_frame):
            ours(sql)
            if capture.take() != theirs_bytes:
                warn(f"MySQL COM_QUERY {name}: {ours.__name__} != PyMySQL _execute_command")
    conn._sock = sock = _NullSocket()

    def ours_pack_null(sql: str) -> None:
        sock.sendall(my.ComQuery.pack(query=sql))

    def ours_frame_null(sql: str) -> None:
        sock.sendall(my.encode(my.ComQuery(query=sql)))

    encode_variants = [
        Variant(
            name,
            [
                Contender(
                    f"ours   ComQuery.pack(query=sql) {PACK_PATH}",
                    ours_pack_null,
                    same((sql,)),
                ),
                Contender(
                    "PyMySQL Connection._execute_command(COM_QUERY, sql)",
                    conn._execute_command,
                    same((COMMAND.COM_QUERY, sql)),
                ),
                Contender(
                    "ours   encode(ComQuery(query=sql)) (info)",
                    ours_frame_null,
                    same((sql,)),
                ),
            ],
        )
        for name, sql in MY_SQL.items()
    ]
    for v in encode_variants:
        v.contenders[0].baseline = v.contenders[2].baseline = v.contenders[1].name

    measure(decode_variants)
    measure(encode_variants)
    conn._sock = None
    version = _version("PyMySQL")
    dec = report(
        f"MySQL text result-set rows decode to Python values vs PyMySQL {version}, "
        f"best of {REPEATS}",
        decode_variants,
        decode_variants[0].contenders[0].name,
        decode_variants[0].contenders[1].name,
        "MySQL decode ours/PyMySQL _read_row_from_packet",
    )
    enc = report(
        f"MySQL COM_QUERY encode vs PyMySQL {version}, best of {REPEATS}",
        encode_variants,
        encode_variants[0].contenders[0].name,
        encode_variants[0].contenders[1].name,
        "MySQL encode ours/PyMySQL _execute_command",
    )
    return [dec, enc]


def ours_my_row(data: bytes, ctx: my.Context, convs: list[tuple[str, Any]]) -> tuple[Any, ...]:
    """A text row to Python values as PyMySQL's _read_row_from_packet makes them."""
    frame: Any = my.decode(data, ctx)
    return tuple(
        [
            None if v is None else (v.decode(e) if f is None else f(v.decode(e)))
            for (e, f), v in zip(convs, frame.values)
        ]
    )


def ours_my_text_row(data: bytes, ctx: my.Context) -> tuple[Any, ...]:
    frame: Any = my.decode(data, ctx)
    return tuple([None if v is None else v.decode() for v in frame.values])


def main() -> int:
    started = time.perf_counter()
    print(
        f"wirestream family codec benchmark -- Python {sys.version.split()[0]}, "
        f"best of {REPEATS}, ops/s (higher is better); ratio = ours / theirs; "
        f"{_load()} at the start"
    )
    verdicts = bench_mqtt() + bench_postgresql() + bench_mysql()
    print()
    print("Summary (target: ours >= 2x theirs on the family's mix)")
    print("-------")
    for v in verdicts:
        verdict = "PASS" if v.ratio >= TARGET else "MISS"
        print(
            f"  {v.label:<50} mix {v.ratio:>5.2f}x  lowest {v.worst:>5.2f}x "
            f"({v.worst_variant})  {verdict}"
        )
    if warnings:
        print(f"  {len(warnings)} WARNING(s):")
        for message in warnings:
            print(f"    - {message}")
    else:
        print("  byte-identical output and equal decoded values for every pair checked")
    print(f"  total time {time.perf_counter() - started:.1f} s; {_load()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
