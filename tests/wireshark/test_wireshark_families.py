"""The generated MQTT 5, PostgreSQL 3 and MySQL 10 dissectors against an oracle nobody here
wrote: tshark's own mqtt, pgsql and mysql dissectors, on real sessions.

Each test drives a real server (tests/support/servers.py: mosquitto, PostgreSQL 15, MariaDB 10.11)
with its reference client (paho-mqtt, pg8000, PyMySQL) through a relay that records both
directions (tests/support/relay_capture.py), writes the records with the capture pcap writer, and
runs tshark twice on the file:

- with our dissector (rendered from the IDL in idl/, loaded with ``-X lua_script``): every
  frame it shows is the frame the generated Python codec decodes from the same bytes,
  field by field, with no expert info (PostgreSQL: the first client frame and the one
  after the server's 'N' have the startup header; MySQL: the phase of each packet is the
  receiver's machine state, replayed with tests/mysql_support.Conversation, and the
  context both directions keep);
- with tshark's built-in dissector (Decode As on the server's port): frame by frame, the
  values both show agree (``Check``: our fields -> theirs, each side normalised), except
  where they differ for a reason the spec settles (``KNOWN``, asserted to still differ).

Our dissector also shows the same frames from the session cut into 64-byte segments.
About 10 s in all, most of it tshark and the servers' first start.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.mysql_support import Conversation, Cutter
from tests.support.protocols import ROOT, plain
from tests.support.relay_capture import Relay
from tests.support.servers import (
    MARIADB_DATABASE,
    MARIADB_PASSWORD,
    MARIADB_PORT,
    MARIADB_USER,
    MQTT_PASSWORD,
    MQTT_PORT,
    MQTT_USER,
    PG_DATABASE,
    PG_MD5,
    PG_PORT,
    PG_SCRAM,
    Server,
)
from tests.support.wireshark_support import (
    Node,
    Pdu,
    as_shown,
    frame_plain,
    nodes,
    run_tshark,
    snake,
    tshark,
)
from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.targets.wireshark.dissector import render_dissector
from wirestream.runtime.capture.protocols import CaptureProtocol

pytestmark = pytest.mark.server

TIMEOUT = 5.0


# --- sessions --------------------------------------------------------------------------------


def mqtt_session(port: int) -> None:
    """paho-mqtt (MQTT 5): login, a will, SUBSCRIBE with options, PUBLISH at QoS 0/1/2 with
    properties (each comes back), UNSUBSCRIBE, PINGREQ, DISCONNECT."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    received: list[object] = []
    all_back = threading.Event()
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="ws-oracle",
                         protocol=mqtt.MQTTv5)  # fmt: skip
    client.username_pw_set(MQTT_USER, MQTT_PASSWORD)
    client.will_set("ws/oracle/will", b"gone", qos=1)

    def on_message(_client: object, _data: object, message: object) -> None:
        received.append(message)
        if len(received) == 3:
            all_back.set()

    client.on_message = on_message
    connect = Properties(PacketTypes.CONNECT)
    connect.SessionExpiryInterval = 0
    client.connect("127.0.0.1", port, keepalive=30, clean_start=True, properties=connect)
    client.loop_start()
    try:
        subscribed = threading.Event()
        client.on_subscribe = lambda *args: subscribed.set()
        client.subscribe([("ws/oracle/t/#", mqtt.SubscribeOptions(qos=2)),
                          ("ws/oracle/x", mqtt.SubscribeOptions(qos=1, noLocal=True,
                                                                retainAsPublished=True))])  # fmt: skip
        assert subscribed.wait(TIMEOUT)
        publish = Properties(PacketTypes.PUBLISH)
        publish.ContentType = "text/plain"
        publish.UserProperty = [("key", "value")]
        publish.MessageExpiryInterval = 60
        for qos in (0, 1, 2):
            info = client.publish(f"ws/oracle/t/{qos}", f"payload {qos}".encode(), qos=qos,
                                  properties=publish)  # fmt: skip
            info.wait_for_publish(TIMEOUT)
        assert all_back.wait(TIMEOUT), f"{len(received)} messages came back"
        unsubscribed = threading.Event()
        client.on_unsubscribe = lambda *args: unsubscribed.set()
        client.unsubscribe("ws/oracle/x")
        assert unsubscribed.wait(TIMEOUT)
        client._send_pingreq()  # noqa: SLF001  (paho sends it on its own only when idle)
        time.sleep(0.2)
        client.disconnect()
    finally:
        client.loop_stop()


def pg_session(port: int) -> None:
    """pg8000 as an md5 user and as a SCRAM-SHA-256 user (each after SSLRequest and the
    server's 'N'): the extended query protocol with a parameter, a simple query that fails,
    COPY TO STDOUT, LISTEN/NOTIFY, Terminate."""
    import pg8000.native

    for user in (PG_MD5, PG_SCRAM):
        conn = pg8000.native.Connection(user.user, host="127.0.0.1", port=port,
                                        database=PG_DATABASE, password=user.password,
                                        timeout=TIMEOUT)  # fmt: skip
        try:
            rows = conn.run("SELECT 1 AS one, 'two' AS two, NULL AS three, :p::int AS four", p=4)
            assert rows == [[1, "two", None, 4]]
            with pytest.raises(pg8000.native.DatabaseError):
                conn.run("SELECT * FROM no_such_table")
            conn.run("COPY (SELECT 'a', 1) TO STDOUT", stream=io.BytesIO())
            conn.run("LISTEN ws_oracle")
            conn.run("NOTIFY ws_oracle, 'hello'")
        finally:
            conn.close()


def mysql_session(port: int) -> None:
    """PyMySQL: handshake (mysql_native_password, connect attributes), text result sets
    with a NULL, OK packets, an ERR, COM_PING, and (by hand on PyMySQL's connection, which
    has no server-side statements) COM_STMT_PREPARE, COM_STMT_EXECUTE with a binary result
    set, COM_STMT_CLOSE; COM_QUIT."""
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=port, user=MARIADB_USER,
                           password=MARIADB_PASSWORD, database=MARIADB_DATABASE,
                           connect_timeout=TIMEOUT, read_timeout=TIMEOUT)  # fmt: skip
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT 1 AS one, 'two' AS two, NULL AS three, 4.5 AS four")
            assert cursor.fetchall()[0][:3] == (1, "two", None)
            cursor.execute("CREATE TEMPORARY TABLE t (id INT PRIMARY KEY, name VARCHAR(20))")
            cursor.execute("INSERT INTO t VALUES (1, 'a'), (2, NULL)")
            cursor.execute("SELECT id, name FROM t ORDER BY id")
            assert cursor.fetchall() == ((1, "a"), (2, None))
            with pytest.raises(pymysql.err.ProgrammingError):
                cursor.execute("SELECT * FROM no_such_table")
        conn.ping(reconnect=False)
        # 3 columns, then 9: the NULL bitmap of a binary row is (columns + 9) / 8 bytes
        server_side_statement(conn, "SELECT id, name, ? AS p FROM t WHERE id >= ?")
        server_side_statement(conn, "SELECT id, name, ?, 3, 4, 5, 6, 7, 8 FROM t WHERE id >= ?")
    finally:
        conn.close()  # COM_QUIT


def server_side_statement(conn: Any, query: str) -> None:
    """COM_STMT_PREPARE (StmtPrepareOk, parameter definitions + EOF, columns + EOF),
    COM_STMT_EXECUTE with two parameters ('abc', 1: new types VAR_STRING and LONG) and
    its binary result set, COM_STMT_CLOSE, by hand on PyMySQL's connection."""
    conn._execute_command(0x16, query)  # noqa: SLF001
    ok = conn._read_packet().get_all_data()  # noqa: SLF001
    statement, columns, params = struct.unpack_from("<IHH", ok, 1)
    assert params == 2, params
    for _ in range((params + 1) + (columns + 1 if columns else 0)):
        conn._read_packet()  # noqa: SLF001
    values = b"\x00" + b"\x01" + bytes([0xFD, 0, 0x03, 0]) + b"\x03abc" + struct.pack("<i", 1)
    conn._next_seq_id = 0  # noqa: SLF001
    conn.write_packet(struct.pack("<BIBI", 0x17, statement, 0, 1) + values)
    count = conn._read_packet().get_all_data()[0]  # noqa: SLF001
    for _ in range(count + 1):
        conn._read_packet()  # noqa: SLF001
    while not conn._read_packet().is_eof_packet():  # noqa: SLF001
        pass
    conn._next_seq_id = 0  # noqa: SLF001
    conn.write_packet(struct.pack("<BI", 0x19, statement))  # COM_STMT_CLOSE: no answer


# --- the Python codec's frames -----------------------------------------------------------------


@dataclass
class Decoded:
    """One frame as the Python codec decoded it (``name`` "StartupAnswer": the server's
    one-byte answer to SSLRequest, ``frame`` its byte)."""

    name: str
    frame: Any


def replay_mqtt(relay: Relay) -> dict[tuple[int, str], list[Decoded]]:
    from wirestream.generated.mqtt.v5 import StreamDecoder

    out: dict[tuple[int, str], list[Decoded]] = {}
    decoders: dict[tuple[int, str], Any] = {}
    for record in relay.records:
        key = (record.connection_id, record.sender)
        decoder = decoders.setdefault(key, StreamDecoder())
        out.setdefault(key, []).extend(
            Decoded(type(f).__name__, f) for f in decoder.feed(record.frame)
        )
    return out


def replay_pg(relay: Relay) -> dict[tuple[int, str], list[Decoded]]:
    """Both directions in wire order: the client's first frame and the one after an 'N'
    are startup frames; auth_request follows the server's frames into both contexts."""
    from wirestream.generated.postgresql import v3

    out: dict[tuple[int, str], list[Decoded]] = {}
    connections: dict[int, dict[str, Any]] = {}
    for record in relay.records:
        conn = connections.get(record.connection_id)
        if conn is None:
            ctxs = {"client": v3.Context(), "server": v3.Context()}
            conn = {"ctx": ctxs, "answer": False,
                    "client": v3.StreamDecoder(ctx=ctxs["client"], sender="client", startup=True),
                    "server": v3.StreamDecoder(ctx=ctxs["server"], sender="server")}  # fmt: skip
            connections[record.connection_id] = conn
            for sender in ("client", "server"):

                def after(frame: Any, size: int, conn: dict[str, Any] = conn) -> None:
                    for ctx in conn["ctx"].values():
                        v3.track_context(frame, ctx)
                    if isinstance(frame, (v3.SslRequest, v3.GssencRequest)):
                        conn["answer"] = True

                conn[sender].after_frame = after
        key = (record.connection_id, record.sender)
        frames = out.setdefault(key, [])
        data = record.frame
        if record.sender == "server" and conn["answer"]:
            conn["answer"] = False
            frames.append(Decoded("StartupAnswer", data[0]))
            if data[:1] == b"N":
                conn["client"].expect_startup()
            data = data[1:]
        frames.extend(Decoded(type(f).__name__, f) for f in conn[record.sender].feed(data))
    return out


def replay_mysql(relay: Relay) -> dict[tuple[int, str], list[Decoded]]:
    """Both directions in wire order through both machines (the phase) and both contexts
    (tests/mysql_support)."""
    out: dict[tuple[int, str], list[Decoded]] = {}
    cutters: dict[int, dict[str, Cutter]] = {}
    for record in relay.records:
        if record.connection_id not in cutters:
            talk = Conversation()
            cutters[record.connection_id] = {
                "server": Cutter(talk.to_client, "server", talk.from_server),
                "client": Cutter(talk.to_server, "client", talk.from_client),
            }
        cutter = cutters[record.connection_id][record.sender]
        packets = cutter.feed(record.frame)
        out.setdefault((record.connection_id, record.sender), []).extend(
            Decoded(type(p.frame).__name__, p.frame) for p in packets
        )
    return out


# --- tshark's trees ----------------------------------------------------------------------------


def builtin_pdus(pcap: Path, proto: str, port: int) -> list[Pdu]:
    """Every PDU tshark's own dissector ``proto`` shows (Decode As on ``port``)."""
    command = [tshark(), "-n", "-r", str(pcap), "-T", "json", "-J", f"tcp {proto}",
               "-d", f"tcp.port=={port},{proto}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, timeout=120,
                          env={**os.environ, "LC_ALL": "C.UTF-8"})  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    pdus = []
    for number, packet in enumerate(json.loads(done.stdout, object_pairs_hook=list), 1):
        layers = dict(dict(packet)["_source"])["layers"]
        tcp = dict(next((value for key, value in layers if key == "tcp"), []))
        for key, value in layers:
            if key == proto:
                sender = "server" if int(tcp["tcp.srcport"]) == port else "client"
                pdus.append(Pdu(number, int(tcp["tcp.stream"]), sender, nodes(value)))
    return pdus


def pairs(items: list[Node]) -> list[tuple[str, str]]:
    """Every field of a tree, depth first, expert infos left out."""
    out: list[tuple[str, str]] = []
    for node in items:
        if node.name in ("_ws.expert", "_ws.malformed"):
            continue
        out.append((node.name, node.value))
        out.extend(pairs(node.children))
    return out


def by_direction(pdus: list[Pdu]) -> dict[tuple[int, str], list[Pdu]]:
    out: dict[tuple[int, str], list[Pdu]] = {}
    for pdu in pdus:
        out.setdefault((pdu.stream, pdu.sender), []).append(pdu)
    return out


# --- what both dissectors show ---------------------------------------------------------------


def integer(text: str) -> int:
    return int(text, 0)


def hexed(text: str) -> str:
    return text.replace(":", "").lower()


def text_hex(text: str) -> str:
    return text.encode("utf-8").hex()


def same(text: str) -> str:
    return text


@dataclass(frozen=True)
class Check:
    """Our fields (``ours``: names after ``<proto>.``) show what their field ``theirs``
    shows, value by value in tree order, each side through its normaliser."""

    ours: tuple[str, ...]
    theirs: str
    mine: Callable[[str], Any] = integer
    their: Callable[[str], Any] = integer
    absent: Any = None  # what tshark's dissector means by leaving the field out
    only: str | None = None  # the frame it applies to (tshark's field also names others)

    @property
    def name(self) -> str:
        return f"{'|'.join(self.ours)} ~ {self.theirs}"


def c(ours: str, theirs: str, mine: Callable[[str], Any] = integer,
      their: Callable[[str], Any] | None = None, absent: Any = None,
      only: str | None = None) -> Check:  # fmt: skip
    return Check(tuple(ours.split("|")), theirs, mine, their or mine, absent, only)


def utf8(text: str) -> str:
    return bytes.fromhex(hexed(text)).decode("utf-8")


S, H = same, hexed

MQTT_CHECKS = [
    c("packet_type", "mqtt.msgtype"),
    c("remaining_length", "mqtt.len"),
    c("publish.flags.dup", "mqtt.dupflag"),
    c("publish.flags.qos", "mqtt.qos"),
    c("publish.flags.retain", "mqtt.retain"),
    c("connect.protocol_version", "mqtt.ver"),
    c("connect.keep_alive", "mqtt.kalive"),
    c("connect.username_flag", "mqtt.conflag.uname"),
    c("connect.password_flag", "mqtt.conflag.passwd"),
    c("connect.will_retain", "mqtt.conflag.retain"),
    c("connect.will_qos", "mqtt.conflag.qos"),
    c("connect.will_flag", "mqtt.conflag.willflag"),
    c("connect.clean_start", "mqtt.conflag.cleansess"),
    c("connect.client_id", "mqtt.clientid", S),
    c("connect.will_topic", "mqtt.willtopic", S),
    c("connect.will_payload", "mqtt.willmsg", H),
    c("connect.username", "mqtt.username", S),
    c("connect.password", "mqtt.passwd", H, text_hex),
    c("connack.session_present", "mqtt.conack.flags.sp"),
    c("connack.reason_code", "mqtt.connack.reason_code"),
    c("publish.topic_name|subscription.topic_filter|unsubscribe.topic_filters", "mqtt.topic", S),
    c("publish.packet_id|puback.packet_id|pubrec.packet_id|pubrel.packet_id|pubcomp.packet_id"
      "|subscribe.packet_id|suback.packet_id|unsubscribe.packet_id|unsuback.packet_id",
      "mqtt.msgid"),
    c("publish.payload", "mqtt.msg", H),
    c("subscription.qos", "mqtt.subscription_options_qos"),
    c("subscription.no_local", "mqtt.subscription_options_nl"),
    c("subscription.retain_as_published", "mqtt.subscription_options_rap"),
    c("subscription.retain_handling", "mqtt.subscription_options_retain"),
    c("suback.reason_codes", "mqtt.suback.reason_code"),
    c("unsuback.reason_codes", "mqtt.unsuback.reason_code"),
    c("session_expiry_interval.id|topic_alias_maximum.id|receive_maximum.id|content_type.id"
      "|user_property.id|message_expiry_interval.id|payload_format_indicator.id"
      "|maximum_qos.id|retain_available.id|maximum_packet_size.id"
      "|wildcard_subscription_available.id|subscription_identifier_available.id"
      "|shared_subscription_available.id|assigned_client_identifier.id"
      "|server_keep_alive.id|subscription_identifier.id|topic_alias.id",
      "mqtt.property_id"),
    c("session_expiry_interval.value|topic_alias_maximum.value|receive_maximum.value"
      "|message_expiry_interval.value|maximum_packet_size.value|server_keep_alive.value"
      "|topic_alias.value", "mqtt.prop_number"),
    c("content_type.value", "mqtt.property.content_type", S),
    c("user_property.key", "mqtt.prop_key", S),
    c("user_property.value", "mqtt.prop_value", S),
]  # fmt: skip

PG_TYPES = {
    "SslRequest": "SSL request", "StartupMessage": "Startup message",
    "Authentication": "Authentication request", "Password": "Password message",
    "ParameterStatus": "Parameter status", "BackendKeyData": "Backend key data",
    "ReadyForQuery": "Ready for query", "Parse": "Parse", "Flush": "Flush", "Sync": "Sync",
    "ParseComplete": "Parse completion", "Describe": "Describe",
    "ParameterDescription": "Parameter description", "RowDescription": "Row description",
    "Bind": "Bind", "Execute": "Execute", "BindComplete": "Bind completion",
    "DataRow": "Data row", "CommandComplete": "Command completion", "Query": "Simple query",
    "ErrorResponse": "Error", "NoData": "No data", "CopyOutResponse": "CopyOut response",
    "CopyData": "Copy data", "CopyDone": "Copy completion",
    "NotificationResponse": "Notification", "Terminate": "Termination",
}  # fmt: skip
PG_SASL = {"Password message": ("SASLInitialResponse message", "SASLResponse message")}

PG_CHECKS = [
    c("length|startup.length", "pgsql.length"),
    c("query.query|parse.query", "pgsql.query", S),
    c("parse.statement|describe.name|bind.statement", "pgsql.statement", S),
    c("bind.portal|execute.portal", "pgsql.portal", S),
    c("execute.max_rows", "pgsql.returns"),
    c("parameter.name|parameter_status.name", "pgsql.parameter_name", S),
    c("parameter.value|parameter_status.value", "pgsql.parameter_value", S),
    c("authentication.auth_type", "pgsql.authtype"),
    c("authentication.salt", "pgsql.salt", H),
    c("authentication.mechanisms|password.mechanism", "pgsql.auth.sasl.mech", S),
    c("authentication.data|password.initial_response|password.data", "pgsql.auth.sasl.data", H),
    c("password.password", "pgsql.password", S),
    c("backend_key_data.process_id|notification_response.process_id", "pgsql.pid"),
    c("backend_key_data.secret_key", "pgsql.key"),
    c("ready_for_query.status", "pgsql.status"),
    c("command_complete.tag", "pgsql.tag", S),
    c("field_description.name", "pgsql.col.name", S),
    c("field_description.table_oid", "pgsql.oid.table"),
    c("field_description.type_oid|parameter_description.type_oids", "pgsql.oid.type"),
    c("field_description.type_modifier", "pgsql.col.typemod"),
    c("field_description.format|copy_out_response.format", "pgsql.format"),
    c("row_description.fields.count|data_row.values.count", "pgsql.field.count"),
    c("data_row.values|bind.parameters", "pgsql.val.data", H),
    c("data_row.values.length|bind.parameters.length|field_description.type_size",
      "pgsql.val.length"),
    c("copy_data.data", "pgsql.copydata", H),
    c("notification_response.channel", "pgsql.condition", S),
    c("notification_response.payload", "pgsql.text", S, only="NotificationResponse"),
]  # fmt: skip
# ErrorResponse/NoticeResponse: a field's code byte -> tshark's field for its value (55.8)
PG_ERROR_FIELDS = {"S": "pgsql.severity", "V": "pgsql.text", "C": "pgsql.code",
                   "M": "pgsql.message", "P": "pgsql.position", "F": "pgsql.file",
                   "L": "pgsql.line", "R": "pgsql.routine", "D": "pgsql.detail",
                   "H": "pgsql.hint"}  # fmt: skip

MYSQL_CHECKS = [
    c("payload_length", "mysql.packet_length"),
    c("sequence_id", "mysql.packet_number"),
    c("handshake_v10.protocol_version", "mysql.protocol"),
    c("handshake_v10.server_version", "mysql.version", S),
    c("handshake_v10.thread_id", "mysql.thread_id"),
    c("handshake_v10.capability_flags_1", "mysql.caps.server"),
    c("handshake_v10.capability_flags_2", "mysql.extcaps.server"),
    c("handshake_v10.status_flags|ok.status_flags|eof.status_flags", "mysql.server_status"),
    c("handshake_v10.auth_plugin_data_length", "mysql.auth_plugin.length"),
    c("handshake_v10.extended_capabilities", "mariadb.extcaps.server"),
    c("handshake_v10.auth_plugin_name", "mysql.auth_plugin", S),
    c("handshake_response41.client_flag", "mysql.caps.client", lambda v: int(v, 0) & 0xFFFF,
      integer),
    c("handshake_response41.client_flag", "mysql.extcaps.client", lambda v: int(v, 0) >> 16,
      integer),
    c("handshake_response41.max_packet_size", "mysql.max_packet"),
    c("handshake_response41.username", "mysql.user", S),
    c("handshake_response41.auth_response|handshake_response41.auth_response_short",
      "mysql.passwd", H),
    c("handshake_response41.database", "mysql.schema", S),
    c("handshake_response41.client_plugin_name", "mysql.client_auth_plugin", S),
    c("connect_attribute.key", "mysql.connattrs.name", S),
    c("connect_attribute.value", "mysql.connattrs.value", S),
    c("com_query.query|com_stmt_prepare.query", "mysql.query", S),
    c("ok.affected_rows", "mysql.affected_rows"),
    c("ok.last_insert_id", "mysql.insert_id", absent=[0]),  # shown when not 0
    c("ok.warnings|eof.warnings|stmt_prepare_ok.warning_count", "mysql.warnings"),
    c("err.error_code", "mysql.error_code"),
    c("err.sql_state", "mysql.sqlstate", S),
    c("err.error_message", "mysql.error.message", S),
    c("column_count.column_count|binary_column_count.column_count|stmt_prepare_ok.num_columns",
      "mysql.num_fields"),
    c("stmt_prepare_ok.statement_id|com_stmt_execute.statement_id|com_stmt_close.statement_id",
      "mysql.stmt_id"),
    c("stmt_prepare_ok.num_params", "mysql.num_params"),
    c("column_definition.schema", "mysql.field.db", S),
    c("column_definition.table", "mysql.field.table", S),
    c("column_definition.org_table", "mysql.field.org_table", S),
    c("column_definition.name", "mysql.field.name", S),
    c("column_definition.org_name", "mysql.field.org_name", S),
    c("column_definition.character_set", "mysql.field.charsetnr"),
    c("column_definition.column_length", "mysql.field.length"),
    c("column_definition.column_type|parameter_type.column_type", "mysql.field.type"),
    c("column_definition.column_flags", "mysql.field.flags"),
    c("column_definition.decimals", "mysql.field.decimals"),
    c("text_row.values|text_row.values.length", "mysql.row.text", utf8, same),
    c("binary_row.null_bitmap", "mysql.row.nullbuffer", H),
]  # fmt: skip

# Where tshark's dissector and ours disagree for a reason the spec settles: (family,
# check name) -> why.  Each is asserted to still differ, so a fix on either side shows.
KNOWN: dict[tuple[str, str], str] = {}


@dataclass
class Family:
    name: str
    protocol: str
    version: str
    builtin: str
    port: int
    session: Callable[[int], None]
    replay: Callable[[Relay], dict[tuple[int, str], list[Decoded]]]
    checks: list[Check]
    capture: str
    fixture: str
    found: dict[str, int] = field(default_factory=dict)

    @property
    def proto(self) -> str:
        return f"ws_{self.protocol}_{self.version}"


FAMILIES = [
    Family("mqtt", "mqtt", "v5", "mqtt", MQTT_PORT, mqtt_session, replay_mqtt, MQTT_CHECKS,
           "mqtt/5", "mosquitto_server"),
    Family("postgresql", "postgresql", "v3", "pgsql", PG_PORT, pg_session, replay_pg, PG_CHECKS,
           "postgresql/3", "postgresql_server"),
    Family("mysql", "mysql", "v10", "mysql", MARIADB_PORT, mysql_session, replay_mysql,
           MYSQL_CHECKS, "mysql/10", "mariadb_server"),
]  # fmt: skip


@dataclass
class Captured:
    family: Family
    pcap: Path
    lua: Path
    python: dict[tuple[int, str], list[Decoded]]  # keyed by tcp.stream
    ours: dict[tuple[int, str], list[Pdu]]
    theirs: dict[tuple[int, str], list[Pdu]]
    cut: dict[tuple[int, str], list[Pdu]]  # ours, from the session in 64-byte segments


@pytest.fixture(scope="module", params=FAMILIES, ids=[f.name for f in FAMILIES])
def captured(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Captured]:
    """A real session of the family through the relay, in a pcap, dissected both ways."""
    family: Family = request.param
    server: Server = request.getfixturevalue(family.fixture)
    out = tmp_path_factory.mktemp(family.name)
    idl = ROOT / "idl" / family.protocol / f"{family.version}.yaml"
    lua = out / f"{family.protocol}_{family.version}.lua"
    model = load_protocol(idl, str(idl.relative_to(ROOT)))
    lua.write_text(render_dissector(model), encoding="utf-8")
    FRAME_NAMES[family.proto] = {f"{family.proto}.{snake(f.name)}": f.name for f in model.frames}
    with Relay(server.port) as relay:
        family.session(relay.port)
    relay.close()
    codec = f"wirestream.generated.{family.protocol}.{family.version}"
    capture = CaptureProtocol(family.capture, codec, 0, "binary", True, True)
    pcap = out / "session.pcapng"
    relay.write(pcap, capture, family.port)
    streams = {
        n: index for index, n in enumerate(dict.fromkeys(r.connection_id for r in relay.records))
    }
    python = {
        (streams[conn], sender): frames for (conn, sender), frames in family.replay(relay).items()
    }
    ours = by_direction(run_tshark(pcap, family.proto, family.port, scripts=[lua],
                                   prefs={f"{family.proto}.tcp_port": str(family.port)}))  # fmt: skip
    theirs = by_direction(builtin_pdus(pcap, family.builtin, family.port))
    small = out / "small.pcapng"  # the same session in 64-byte segments
    relay.write(small, capture, family.port, mss=64)
    cut = by_direction(run_tshark(small, family.proto, family.port, scripts=[lua],
                                  prefs={f"{family.proto}.tcp_port": str(family.port)}))  # fmt: skip
    yield Captured(family, pcap, lua, python, ours, theirs, cut)


def test_our_dissector_shows_what_the_python_codec_decodes(captured: Captured) -> None:
    """Every frame of the session, in each direction, as the Python codec decodes it."""
    family, proto = captured.family, captured.family.proto
    assert sorted(captured.ours) == sorted(captured.python), "streams and directions differ"
    total = 0
    for key, frames in captured.python.items():
        pdus = captured.ours[key]
        names = [f.name for f in frames]
        assert [shown_name(p, proto) for p in pdus] == names, key
        for pdu, decoded in zip(pdus, frames):
            assert pdu.errors() == [], f"packet {pdu.packet} ({decoded.name}): {pdu.errors()}"
            if decoded.name == "StartupAnswer":
                values = [v for n, v in pairs(pdu.tree) if n == f"{proto}.startup_answer"]
                assert values == [str(decoded.frame)], f"packet {pdu.packet}"
                continue
            want = as_shown(plain(decoded.frame))
            assert frame_plain(pdu, proto, decoded.name, want) == want, f"packet {pdu.packet}"
        total += len(frames)
    assert total > 10, f"{family.name}: only {total} frames"


FRAME_NAMES: dict[str, dict[str, str]] = {}  # proto -> frame item field -> frame name


def shown_name(pdu: Pdu, proto: str) -> str:
    """The frame a PDU of ours shows (by its frame item), or "StartupAnswer"."""
    for name, _ in pairs(pdu.tree):
        if name == f"{proto}.startup_answer":
            return "StartupAnswer"
    frames = [FRAME_NAMES[proto][n.name] for n in pdu.tree if n.name in FRAME_NAMES[proto]]
    assert len(frames) == 1, f"packet {pdu.packet}: {[n.name for n in pdu.tree]}"
    return frames[0]


def test_our_dissector_reassembles_the_session_from_small_segments(captured: Captured) -> None:
    """The session cut into 64-byte TCP segments shows the same frames, field by field."""
    assert sorted(captured.cut) == sorted(captured.ours)
    for key, pdus in captured.ours.items():
        again = captured.cut[key]
        assert [pairs(p.tree) for p in again] == [pairs(p.tree) for p in pdus], key


def aligned(captured: Captured) -> Iterator[tuple[Pdu, Pdu]]:
    """Our PDUs and tshark's, one to one per direction (the server's one-byte answer to
    SSLRequest is no PDU of theirs)."""
    proto = captured.family.proto
    assert sorted(captured.theirs) == sorted(captured.ours), "streams and directions differ"
    for key, ours in captured.ours.items():
        ours = [p for p in ours if shown_name(p, proto) != "StartupAnswer"]
        theirs = captured.theirs[key]
        assert len(ours) == len(
            theirs
        ), f"{key}: we show {len(ours)} PDUs, tshark's {captured.family.builtin} {len(theirs)}"
        yield from zip(ours, theirs)


def values(pdu: Pdu, names: set[str], norm: Callable[[str], Any]) -> list[Any]:
    """The values of the fields ``names`` in tree order; where a ``.length`` field is among
    them, its -1 is NULL (as tshark's dissectors show it) and any other length is left out."""
    out = []
    for name, value in pairs(pdu.tree):
        if name not in names:
            continue
        if name.endswith(".length") and name[: -len(".length")] in names:
            if value == "-1":
                out.append("NULL")
            continue
        out.append(norm(value))
    return out


def test_tshark_builtin_dissector_agrees(captured: Captured) -> None:
    """Frame by frame, the values tshark's own dissector shows are ours (``KNOWN``: where
    it differs, and why)."""
    family, proto = captured.family, captured.family.proto
    differ: dict[str, list[str]] = {}
    compared: dict[str, int] = {}
    for ours, theirs in aligned(captured):
        name = shown_name(ours, proto)
        checks = list(family.checks)
        if family.name == "postgresql":
            their_type = [v for n, v in pairs(theirs.tree) if n == "pgsql.type"]
            expected = PG_TYPES.get(name, name)
            okay = [expected, *PG_SASL.get(expected, ())]
            if their_type[:1] and their_type[0] not in okay:
                differ.setdefault("message type", []).append(
                    f"packet {ours.packet}: {name} vs {their_type}"
                )
            compared["message type"] = compared.get("message type", 0) + 1
            check_pg_fields(ours, theirs, proto, differ, compared)
        for check in checks:
            if check.only is not None and check.only != name:
                continue
            mine = values(ours, {f"{proto}.{o}" for o in check.ours}, check.mine)
            got = values(theirs, {check.theirs}, check.their)
            if mine and not got and check.absent is not None:
                got = check.absent
            if not mine and not got:
                continue
            compared[check.name] = compared.get(check.name, 0) + 1
            if mine != got:
                differ.setdefault(check.name, []).append(
                    f"packet {ours.packet} ({name}): ours {mine} theirs {got}"
                )
    for (fam, check_name), why in KNOWN.items():
        if fam == family.name:
            assert check_name in differ, f"{check_name} agrees now: drop it from KNOWN ({why})"
            differ.pop(check_name)
    assert not differ, json.dumps(differ, indent=1)
    assert len(compared) >= 10, compared


def check_pg_fields(ours: Pdu, theirs: Pdu, proto: str, differ: dict[str, list[str]],
                    compared: dict[str, int]) -> None:  # fmt: skip
    """ErrorResponse/NoticeResponse: each field our tree shows (code, value) is the value
    tshark shows under the field's name."""
    codes = [chr(int(v, 0)) for n, v in pairs(ours.tree) if n == f"{proto}.field.code"]
    texts = [v for n, v in pairs(ours.tree) if n == f"{proto}.field.value"]
    their = pairs(theirs.tree)
    for code, text in zip(codes, texts):
        name = PG_ERROR_FIELDS.get(code)
        if name is None:
            continue
        compared[f"error field {code}"] = compared.get(f"error field {code}", 0) + 1
        if text not in [v for n, v in their if n == name]:
            differ.setdefault(f"error field {code}", []).append(
                f"packet {ours.packet}: {text!r} not in {name}"
            )
