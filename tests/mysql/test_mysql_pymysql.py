"""Byte identity of the generated MySQL codec with PyMySQL 1.2.4 and the real MariaDB 10.11.

PyMySQL (pure Python; its packets are built by hand in pymysql/connections.py and read in
pymysql/protocol.py) talks to MariaDB through ``InspectingProxy``, a small TCP proxy of ours
on loopback. The proxy cuts both directions into packets with our ``StreamDecoder``s
(tests/support/mysql_support.py: ``Cutter``) and, for every packet both ways, before it forwards the
bytes unchanged:

* runs a client-role and a server-role ``ConnectionMachine`` over the exchange, in the order
  the proxy saw it (each side's bytes are checked before they are forwarded, so that order
  is causal); PyMySQL's packets decode in the server machine's phase, MariaDB's in the
  client machine's (``ctx.phase = Phase[state.name.upper()]``), ``track_context`` seeing
  both directions;
* proves ``encode(decode(raw, ctx), ctx) == raw`` in the context the packet was decoded in;
* keeps the packets, so the test can compare them with what PyMySQL was asked to send
  (user, database, capability flags, query text) and with the values PyMySQL returned.

The randomized test lets hypothesis choose the parameters of ``cursor.execute(sql, params)``
(ints, text with any Unicode, bytes, None), which PyMySQL escapes into the query's
literals; PyMySQL's fetched row must equal the TextRow our decoder saw.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from typing import Any

import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymysql.constants import CLIENT

from tests.support.mysql_support import (
    CLIENT_CONNECT_ATTRS,
    CLIENT_CONNECT_WITH_DB,
    CLIENT_PLUGIN_AUTH,
    CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
    CLIENT_PROTOCOL_41,
    CLIENT_SECURE_CONNECTION,
    CLIENT_TRANSACTIONS,
    TIMEOUT,
    Conversation,
    Cutter,
    Packet,
    check_byte_identity,
    native_password,
)
from tests.support.inspecting_proxy import InspectingProxy, ProxiedLink, inspected
from tests.support.servers import MARIADB_DATABASE, MARIADB_PASSWORD, MARIADB_USER, Server
from wirestream.generated.mysql.v10 import (
    ColumnCount,
    ColumnDefinition,
    ComInitDb,
    ComPing,
    ComQuery,
    ComQuit,
    Eof,
    Err,
    Frame,
    HandshakeResponse41,
    HandshakeV10,
    Ok,
    TextRow,
)
from wirestream.generated.mysql.v10.machines import ConnectionState

pytestmark = pytest.mark.server

Proxy = InspectingProxy["Link"]

UTF8MB4_GENERAL_CI = 45


class Link(ProxiedLink):
    """One proxied connection: PyMySQL's socket, the server's, and what went each way."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        super().__init__(client, server)
        self.conversation = Conversation()
        self.from_client = Cutter(
            self.conversation.to_server, "client", self.conversation.from_client
        )
        self.from_server = Cutter(
            self.conversation.to_client, "server", self.conversation.from_server
        )
        self.packets: list[Packet] = []
        self.lock = threading.Lock()

    def _keep(self, packets: list[Packet]) -> None:
        for packet in packets:
            check_byte_identity(packet)
        with self.lock:
            self.packets.extend(packets)

    def on_client_data(self, data: bytes) -> None:
        self._keep(self.from_client.feed(data))
        self.server.sendall(data)

    def on_server_data(self, data: bytes) -> None:
        self._keep(self.from_server.feed(data))
        self.client.sendall(data)

    def snapshot(self) -> list[Packet]:
        with self.lock:
            return list(self.packets)


@pytest.fixture(scope="module")
def proxy(mariadb_server: Server) -> Iterator[Proxy]:
    p = InspectingProxy(mariadb_server, Link, name="mysql-proxy", timeout=TIMEOUT)
    try:
        yield p
        p.check()
    finally:
        p.close()


def connect(proxy: Proxy, **kwargs: Any) -> tuple[Any, Link]:
    count = len(proxy.links)
    with inspected(proxy):
        con = pymysql.connect(
            host="127.0.0.1",
            port=proxy.port,
            user=MARIADB_USER,
            password=MARIADB_PASSWORD,
            database=MARIADB_DATABASE,
            connect_timeout=TIMEOUT,
            read_timeout=TIMEOUT,
            write_timeout=TIMEOUT,
            **kwargs,
        )
    assert len(proxy.links) == count + 1
    return con, proxy.links[-1]


def close(proxy: Proxy, con: Any, link: Link) -> None:
    with inspected(proxy):
        con.close()  # COM_QUIT
        assert link.ended.wait(TIMEOUT)
    assert link.snapshot()[-1].frame == ComQuit(sequence_id=0)
    assert link.conversation.client.state is ConnectionState.CLOSED
    assert link.conversation.server.state is ConnectionState.CLOSED


def frames_of(packets: list[Packet], sender: str | None = None) -> list[Frame]:
    return [p.frame for p in packets if sender is None or p.sender == sender]


def text_rows(packets: list[Packet]) -> list[list[bytes | None]]:
    return [p.frame.values for p in packets if isinstance(p.frame, TextRow)]


# --- a whole PyMySQL session ----------------------------------------------------------------


def test_pymysql_session_byte_identical(proxy: Proxy) -> None:
    """Login (HandshakeResponse41 as PyMySQL builds it: user, database, capability flags,
    connect attributes, the native password token), queries of several types, an error, an
    INSERT, COM_PING, COM_INIT_DB, COM_QUIT: every packet both ways byte-identical, and what
    PyMySQL sent decodes to what it was asked."""
    con, link = connect(proxy, program_name="ws-pymysql")
    with inspected(proxy):
        cur = con.cursor()
        cur.execute("SELECT 1, 'h\u00e9llo', NULL, 1.5, CAST(2.5 AS DOUBLE), DATE('2024-02-29')")
        assert cur.fetchall() == ((1, "h\u00e9llo", None, Decimal("1.5"), 2.5, date(2024, 2, 29)),)
        with pytest.raises(pymysql.err.ProgrammingError) as error:
            cur.execute("SELECT * FROM no_such_table")
        cur.execute("CREATE TEMPORARY TABLE pm (id INT AUTO_INCREMENT PRIMARY KEY, v BLOB)")
        insert = cur.mogrify("INSERT INTO pm (v) VALUES (%s), (%s)", (b"\x00\xff", None))
        cur.execute("INSERT INTO pm (v) VALUES (%s), (%s)", (b"\x00\xff", None))
        inserted = (cur.rowcount, cur.lastrowid)
        cur.execute("SELECT seq, REPEAT('z', seq) FROM seq_1_to_400")
        many = cur.fetchall()
        con.ping(reconnect=False)
        con.select_db(MARIADB_DATABASE)
    close(proxy, con, link)
    packets = link.snapshot()
    sent = frames_of(packets, "client")
    received = frames_of(packets, "server")

    greeting = received[0]
    assert isinstance(greeting, HandshakeV10)
    assert greeting.server_version == con.server_version
    assert greeting.thread_id == con.server_thread_id[0]
    response = sent[0]
    assert isinstance(response, HandshakeResponse41)
    assert response.username == MARIADB_USER
    assert response.database == MARIADB_DATABASE
    assert response.client_flag == con.client_flag
    for flag in (
        CLIENT_PROTOCOL_41,
        CLIENT_SECURE_CONNECTION,
        CLIENT_PLUGIN_AUTH,
        CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
        CLIENT_CONNECT_ATTRS,
        CLIENT_CONNECT_WITH_DB,
        CLIENT_TRANSACTIONS,
    ):
        assert response.client_flag & flag, hex(flag)
    assert response.client_flag == CLIENT.CAPABILITIES | CLIENT.CONNECT_WITH_DB
    assert response.max_packet_size == 2**24 - 1
    assert response.character_set == UTF8MB4_GENERAL_CI
    assert response.extended_capabilities == 0
    assert greeting.auth_plugin_data_2 is not None
    scramble = greeting.auth_plugin_data_1 + greeting.auth_plugin_data_2[:12]
    assert con.salt == scramble
    assert response.auth_response == native_password(MARIADB_PASSWORD.encode(), scramble)
    assert response.client_plugin_name == "mysql_native_password"
    assert response.attributes is not None
    assert {a.key: a.value for a in response.attributes} == con._connect_attrs
    assert con._connect_attrs["program_name"] == "ws-pymysql"
    assert isinstance(received[1], Ok)

    queries = [f.query for f in sent if isinstance(f, ComQuery)]
    assert queries[-5:] == [
        "SELECT 1, 'h\u00e9llo', NULL, 1.5, CAST(2.5 AS DOUBLE), DATE('2024-02-29')",
        "SELECT * FROM no_such_table",
        "CREATE TEMPORARY TABLE pm (id INT AUTO_INCREMENT PRIMARY KEY, v BLOB)",
        insert,
        "SELECT seq, REPEAT('z', seq) FROM seq_1_to_400",
    ]
    assert insert == "INSERT INTO pm (v) VALUES (X'00ff'), (NULL)"
    assert sent[-3:] == [ComPing(sequence_id=0), ComInitDb(sequence_id=0, schema=MARIADB_DATABASE),
                         ComQuit(sequence_id=0)]  # fmt: skip

    errs = [f for f in received if isinstance(f, Err)]
    assert len(errs) == 1
    assert error.value.args == (errs[0].error_code, errs[0].error_message)
    assert errs[0].sql_state == "42S02"
    oks = [f for f in received if isinstance(f, Ok)]
    assert (oks[-3].affected_rows, oks[-3].last_insert_id) == inserted == (2, 1)
    rows = text_rows(packets)
    assert rows[0] == [b"1", "h\u00e9llo".encode(), None, b"1.5", b"2.5", b"2024-02-29"]
    assert rows[-400:] == [[str(n).encode(), b"z" * n] for n in range(1, 401)]
    assert [tuple(r) for r in many] == [(n, "z" * n) for n in range(1, 401)]
    assert len(packets) > 400


def test_pymysql_login_packets_match_its_request(proxy: Proxy) -> None:
    """What PyMySQL sends first, byte for byte, is what our codec encodes from the fields it
    decodes: the HandshakeResponse41 and the first COM_QUERY as PyMySQL wrote them."""
    con, link = connect(proxy, autocommit=False, init_command="SET @ws := 1")
    with inspected(proxy):
        cur = con.cursor()
        cur.execute("SELECT @ws")
        assert cur.fetchall() == ((1,),)
    close(proxy, con, link)
    packets = link.snapshot()
    first = packets[1]
    assert first.sender == "client" and isinstance(first.frame, HandshakeResponse41)
    assert first.raw[3] == 1  # the sequence id goes on from the greeting's 0
    queries = [p.frame.query for p in packets if isinstance(p.frame, ComQuery)]
    assert "SET @ws := 1" in queries
    assert queries[-1] == "SELECT @ws"
    assert queries[:3] == ["SET NAMES utf8mb4", "SET @ws := 1", "SET AUTOCOMMIT = 0"]
    # every ComQuery PyMySQL sent is a 0x03 byte and the query's bytes, sequence id 0
    for packet in packets:
        if isinstance(packet.frame, ComQuery):
            assert packet.raw[3:5] == b"\x00\x03"
            assert packet.raw[5:] == packet.frame.query.encode()


def test_pymysql_wrong_password_err_byte_identical(proxy: Proxy) -> None:
    """A wrong password: MariaDB's ERR 1045 reaches PyMySQL byte for byte (its exception
    carries the decoded code and message); both machines end closed."""
    count = len(proxy.links)
    with pytest.raises(pymysql.err.OperationalError) as error:
        pymysql.connect(
            host="127.0.0.1",
            port=proxy.port,
            user=MARIADB_USER,
            password="not-" + MARIADB_PASSWORD,
            database=MARIADB_DATABASE,
            connect_timeout=TIMEOUT,
            read_timeout=TIMEOUT,
            write_timeout=TIMEOUT,
        )
    proxy.check()
    link = proxy.links[count]
    assert link.ended.wait(TIMEOUT)
    proxy.check()
    frames = frames_of(link.snapshot())
    assert [type(f) for f in frames] == [HandshakeV10, HandshakeResponse41, Err]
    err = frames[2]
    assert isinstance(err, Err) and err.sql_state == "28000"
    assert error.value.args == (err.error_code, err.error_message) == (1045, err.error_message)
    assert link.conversation.client.state is ConnectionState.CLOSED
    assert link.conversation.server.state is ConnectionState.CLOSED


# --- randomized -----------------------------------------------------------------------------

VALUES = st.one_of(
    st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1),
    st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40),
    st.binary(max_size=300),
    st.none(),
)


@pytest.fixture(scope="module")
def session(proxy: Proxy) -> Iterator[tuple[Any, Link]]:
    con, link = connect(proxy)
    try:
        yield con, link
    finally:
        close(proxy, con, link)


def expected_text(value: object) -> bytes | None:
    """How MariaDB writes the literal PyMySQL made of ``value`` in a text row."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return str(value).encode()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(params=st.lists(VALUES, min_size=1, max_size=6))
def test_random_query_parameters_byte_identical(
    session: tuple[Any, Link], proxy: Proxy, params: list[object]
) -> None:
    """cursor.execute(sql, params) with random ints, strings, bytes and None: every packet
    both ways byte-identical; the ComQuery carries PyMySQL's escaped query; PyMySQL's
    fetched row equals the TextRow our decoder saw (and the values asked for)."""
    con, link = session
    sql = "SELECT " + ", ".join(f"%s AS c{i}" for i in range(len(params)))
    before = len(link.snapshot())
    with inspected(proxy):
        cur = con.cursor()
        expected_query = cur.mogrify(sql, params)
        cur.execute(sql, params)
        fetched = cur.fetchall()
        cur.close()
    packets = link.snapshot()[before:]
    frames = [p.frame for p in packets]
    assert frames[0] == ComQuery(sequence_id=0, query=expected_query)
    assert isinstance(frames[1], ColumnCount) and frames[1].column_count == len(params)
    columns = frames[2 : 2 + len(params)]
    assert all(isinstance(c, ColumnDefinition) for c in columns)
    assert [c.name for c in columns] == [f"c{i}" for i in range(len(params))]  # type: ignore
    assert isinstance(frames[2 + len(params)], Eof) and isinstance(frames[-1], Eof)
    rows = text_rows(packets)
    assert rows == [[expected_text(v) for v in params]]
    assert len(fetched) == 1
    assert list(fetched[0]) == params
    assert link.conversation.client.state is ConnectionState.READY
