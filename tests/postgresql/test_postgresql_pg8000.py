"""Byte identity of the generated PostgreSQL v3 codec with pg8000 1.31.6 and the real server.

pg8000 (pure Python; its messages are built by hand in pg8000/core.py) talks to the real
PostgreSQL 15 through ``InspectingProxy``, a small TCP proxy of ours on loopback. The proxy
cuts both directions into messages with our ``StreamDecoder``s (pg8000's side starts with
``startup=True``; pg8000 sends an SSLRequest first, the server answers the single byte 'N',
the proxy passes it on and calls ``expect_startup`` for the StartupMessage that follows) and
for every message, both ways, before forwarding the bytes unchanged:

* decodes the raw span on its own to the same frame and re-encodes it byte for byte
  (``encode(decode(raw)) == raw``);
* runs a client-role and a server-role ``ConnectionMachine`` over the exchange, in the
  order the proxy saw it (each side's bytes are checked before they are forwarded, so that
  order is causal);
* keeps the frames, so the test can compare them with what pg8000 was asked to send (query
  text, parameters, startup parameters) and with the values pg8000 returned.

The randomized test lets hypothesis choose parameters (ints, text with any Unicode, bytes,
None) and a text literal in the query itself; pg8000 sends them as an extended query (Parse,
Describe, Bind, Execute, each with Flush or Sync), and its returned row must equal the
DataRow our decoder saw, converted by the RowDescription's type OIDs.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from typing import Any

import pg8000.native
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.inspecting_proxy import InspectingProxy, ProxiedLink, inspected
from tests.support.servers import PG_DATABASE, PG_MD5, PG_SCRAM, PG_TRUST, PgUser, Server
from tests.postgresql.test_postgresql_server import BYTEA, INT8, TEXT, md5_password
from wirestream.generated.postgresql.v3 import (
    Authentication,
    AuthType,
    Bind,
    CancelRequest,
    CommandComplete,
    Context,
    CopyData,
    CopyDone,
    CopyInResponse,
    CopyOutResponse,
    DataRow,
    Describe,
    ErrorResponse,
    Execute,
    Flush,
    Frame,
    GssencRequest,
    NoticeResponse,
    NotificationResponse,
    Parameter,
    Parse,
    Password,
    Query,
    ReadyForQuery,
    RowDescription,
    SslRequest,
    StartupMessage,
    StreamDecoder,
    Sync,
    Target,
    Terminate,
    decode,
    decode_startup,
    encode,
    track_context,
)
from wirestream.generated.postgresql.v3.machines import ConnectionMachine, ConnectionState

pytestmark = pytest.mark.server

Proxy = InspectingProxy["Link"]

TIMEOUT = 5.0  # seconds: pg8000's socket timeout, the proxy's sockets, every wait here
STARTUP_FRAMES = (StartupMessage, SslRequest, GssencRequest, CancelRequest)


class Direction:
    """One direction of a link: cuts its bytes into (frame, raw message) pairs."""

    def __init__(self, decoder: StreamDecoder) -> None:
        self.decoder = decoder
        decoder.after_frame = lambda frame, size: self._sizes.append(size)
        self._sizes: list[int] = []
        self._pending = bytearray()
        self.bytes = 0

    def cut(self, data: bytes) -> list[tuple[Frame, bytes]]:
        self._pending += data
        frames = self.decoder.feed(data)
        assert len(frames) == len(self._sizes)
        out = []
        for frame, size in zip(frames, self._sizes):
            out.append((frame, bytes(self._pending[:size])))
            del self._pending[:size]
        self._sizes.clear()
        assert len(self._pending) == self.decoder.buffered
        self.bytes += sum(len(raw) for _, raw in out)
        return out


class Link(ProxiedLink):
    """One proxied connection: pg8000's socket, the server's, and what went each way."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        super().__init__(client, server)
        self.ctx = Context()  # auth_request, from the server's Authentication messages
        self.upstream = Direction(StreamDecoder(ctx=self.ctx, sender="client", startup=True))
        self.downstream = Direction(StreamDecoder(ctx=self.ctx, sender="server"))
        self.client_machine = ConnectionMachine("client")
        self.server_machine = ConnectionMachine("server")
        self.client_frames: list[Frame] = []
        self.server_frames: list[Frame] = []
        self.ssl_answers: list[bytes] = []
        self._ssl_answer_next = False

    def on_client_data(self, data: bytes) -> None:
        for frame, raw in self.upstream.cut(data):
            if isinstance(frame, STARTUP_FRAMES):
                assert decode_startup(raw, self.ctx) == frame, raw
            else:
                assert decode(raw, self.ctx, sender="client") == frame, raw
            assert encode(frame, self.ctx) == raw, (frame, raw)
            self.client_machine.send(frame)
            self.server_machine.receive(frame)
            if isinstance(frame, SslRequest):
                self._ssl_answer_next = True
            self.client_frames.append(frame)
        self.server.sendall(data)

    def on_server_data(self, data: bytes) -> None:
        if self._ssl_answer_next:  # one byte, not a message
            answer, data = data[:1], data[1:]
            assert answer == b"N", answer
            self.ssl_answers.append(answer)
            self._ssl_answer_next = False
            self.upstream.decoder.expect_startup()
            self.client.sendall(answer)
        for frame, raw in self.downstream.cut(data):
            assert decode(raw, self.ctx, sender="server") == frame, raw
            assert encode(frame, self.ctx) == raw, (frame, raw)
            if isinstance(frame, Authentication):
                track_context(frame, self.ctx)
            self.server_machine.send(frame)
            self.client_machine.receive(frame)
            assert self.client_machine.state is self.server_machine.state
            self.server_frames.append(frame)
        if data:
            self.client.sendall(data)


@pytest.fixture(scope="module")
def proxy(postgresql_server: Server) -> Iterator[Proxy]:
    p = InspectingProxy(postgresql_server, Link, name="pg-proxy", timeout=TIMEOUT)
    try:
        yield p
        p.check()
    finally:
        p.close()


def connect(proxy: Proxy, user: PgUser = PG_TRUST) -> tuple[Any, Link]:
    count = len(proxy.links)
    with inspected(proxy):
        con = pg8000.native.Connection(
            user.user,
            host="127.0.0.1",
            port=proxy.port,
            database=PG_DATABASE,
            password=user.password,
            application_name="ws-pg8000",
            timeout=TIMEOUT,
        )
    assert len(proxy.links) == count + 1
    return con, proxy.links[-1]


def close(proxy: Proxy, con: Any, link: Link) -> None:
    with inspected(proxy):
        con.close()  # Terminate
        assert link.ended.wait(TIMEOUT)
    assert link.client_frames[-1] == Terminate()
    assert link.client_machine.state is link.server_machine.state is ConnectionState.CLOSED


def kinds(frames: list[Frame]) -> list[str]:
    return [type(frame).__name__ for frame in frames]


# --- logins -------------------------------------------------------------------------------


@pytest.mark.parametrize("user", [PG_TRUST, PG_MD5, PG_SCRAM], ids=lambda user: user.method)
def test_pg8000_login_byte_identical(proxy: Proxy, user: PgUser) -> None:
    con, link = connect(proxy, user)
    with inspected(proxy):
        assert con.run("SELECT current_user") == [[user.user]]
    close(proxy, con, link)
    # pg8000 asks for SSL first (ssl_context=None: "if the server offers it"); 'N', then
    # the StartupMessage with what pg8000 was given
    assert link.ssl_answers == [b"N"]
    assert link.client_frames[:2] == [
        SslRequest(),
        StartupMessage(
            [
                Parameter("user", user.user),
                Parameter("database", PG_DATABASE),
                Parameter("application_name", "ws-pg8000"),
            ]
        ),
    ]
    passwords = [frame for frame in link.client_frames if isinstance(frame, Password)]
    requests = [frame for frame in link.server_frames if isinstance(frame, Authentication)]
    if user.method == "trust":
        assert passwords == [] and requests == [Authentication(AuthType.OK)]
    elif user.method == "md5":
        assert requests[0].salt is not None and user.password is not None
        assert passwords == [Password(md5_password(user.user, user.password, requests[0].salt))]
    else:
        assert [r.auth_type for r in requests] == [
            AuthType.SASL,
            AuthType.SASL_CONTINUE,
            AuthType.SASL_FINAL,
            AuthType.OK,
        ]
        first, final = passwords
        assert first.mechanism == "SCRAM-SHA-256"
        assert first.initial_response is not None
        assert first.initial_response.startswith(f"n,,n={user.user},r=".encode())
        assert final.data is not None and final.data.startswith(b"c=biws,r=")
    assert Query("SELECT current_user") in link.client_frames


def test_pg8000_session_byte_identical(proxy: Proxy) -> None:
    """Simple and extended queries, an error, COPY both ways, a notice, LISTEN/NOTIFY."""
    con, link = connect(proxy, PG_MD5)
    with inspected(proxy):
        assert con.run("SELECT 1 AS a; SELECT 'x' AS b") == [[1], ["x"]]  # rows of both
        with pytest.raises(pg8000.native.DatabaseError):
            con.run("SELECT 1/0")
        assert isinstance(link.server_frames[-2], ErrorResponse)
        assert con.run("SELECT :n::int8 * 2 AS d, :t::text AS t", n=21, t="h\u00e9") == [
            [42, "h\u00e9"]
        ]
        con.run("CREATE TEMP TABLE ws_pg8000 (id int4, name text)")
        con.run("COPY ws_pg8000 FROM STDIN", stream=io.BytesIO(b"1\tone\n2\ttwo\n"))
        out = io.BytesIO()
        con.run("COPY ws_pg8000 TO STDOUT", stream=out)
        assert out.getvalue() == b"1\tone\n2\ttwo\n"
        con.run("DO $$ BEGIN RAISE NOTICE 'hi'; END $$")
        assert con.notices[-1][b"M"] == b"hi"
        con.run("LISTEN ws_pg8000_channel")
        con.run("NOTIFY ws_pg8000_channel, 'payload'")
        assert con.notifications[-1][1:] == ("ws_pg8000_channel", "payload")
    close(proxy, con, link)
    seen = set(kinds(link.server_frames))
    assert {
        "CopyInResponse",
        "CopyOutResponse",
        "CopyData",
        "CopyDone",
        "NoticeResponse",
        "NotificationResponse",
        "ErrorResponse",
        "ParameterDescription",
        "ParseComplete",
        "BindComplete",
    } <= seen
    assert {"Parse", "Describe", "Bind", "Execute", "Flush", "Sync", "CopyData", "CopyDone"} <= set(
        kinds(link.client_frames)
    )
    copied = [f for f in link.client_frames if isinstance(f, CopyData)]
    assert b"".join(f.data for f in copied) == b"1\tone\n2\ttwo\n"
    assert CopyOutResponse in map(type, link.server_frames)
    assert CopyInResponse in map(type, link.server_frames)
    assert CopyDone() in link.client_frames
    assert any(isinstance(f, NoticeResponse) for f in link.server_frames)
    assert any(isinstance(f, NotificationResponse) for f in link.server_frames)
    assert link.upstream.bytes > 0 and link.downstream.bytes > 0


# --- randomized: pg8000's parameters and values against our decoder ------------------------

# any character but NUL (PostgreSQL text cannot hold it) and surrogates (not UTF-8)
TEXT_CHARACTERS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
value = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.text(TEXT_CHARACTERS, max_size=30),
    st.binary(max_size=30),
    st.none(),
)
literal = st.text(TEXT_CHARACTERS, max_size=20)
CAST = {int: "int8", str: "text", bytes: "bytea", type(None): "text"}


def as_sent(v: object) -> bytes | None:
    """How pg8000 sends ``v`` (text format: its converters' *_out)."""
    if v is None:
        return None
    if isinstance(v, bytes):
        return b"\\x" + v.hex().encode()
    return str(v).encode()


def as_read(raw: bytes | None, type_oid: int) -> object:
    """A text-format DataRow value as Python, by the column's type."""
    if raw is None:
        return None
    text = raw.decode()
    if type_oid == INT8:
        return int(text)
    if type_oid == BYTEA:
        assert text.startswith("\\x")
        return bytes.fromhex(text[2:])
    assert type_oid == TEXT
    return text


@pytest.fixture(scope="module")
def pg8000_link(proxy: Proxy) -> Iterator[tuple[Any, Link]]:
    con, link = connect(proxy, PG_SCRAM)
    yield con, link
    close(proxy, con, link)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(value, max_size=5), lit=literal)
def test_pg8000_random_queries_byte_identical(
    pg8000_link: tuple[Any, Link], proxy: Proxy, values: list[object], lit: str
) -> None:
    con, link = pg8000_link
    columns = [f"CAST(:p{i} AS {CAST[type(v)]}) AS c{i}" for i, v in enumerate(values)]
    quoted = lit.replace("'", "''")
    sql = "SELECT " + ", ".join([*columns, f"'{quoted}'::text AS lit"])
    sent, received = len(link.client_frames), len(link.server_frames)
    with inspected(proxy):
        rows = con.run(sql, **{f"p{i}": v for i, v in enumerate(values)})
    assert rows == [[*values, lit]]
    ours = link.client_frames[sent:]
    theirs = link.server_frames[received:]
    # what pg8000 sent decodes to what it was asked
    if values:
        statement = "SELECT " + ", ".join(
            [*(f"CAST(${i + 1} AS {CAST[type(v)]}) AS c{i}" for i, v in enumerate(values))]
            + [f"'{quoted}'::text AS lit"]
        )
        assert ours == [
            Parse("", statement, []),
            Flush(),
            Sync(),
            Describe(Target.STATEMENT, ""),
            Flush(),
            Sync(),
            Bind("", "", [], [as_sent(v) for v in values], []),
            Flush(),
            Execute("", 0),
            Flush(),
            Sync(),
        ]
    else:
        assert ours == [Query(sql)]
    # the values pg8000 returned are those of the DataRow our decoder saw
    description = [f for f in theirs if isinstance(f, RowDescription)][-1]
    data_rows = [f for f in theirs if isinstance(f, DataRow)]
    assert len(data_rows) == 1
    decoded = [
        as_read(raw, field.type_oid) for raw, field in zip(data_rows[0].values, description.fields)
    ]
    assert decoded == rows[0]
    assert theirs[-2] == CommandComplete("SELECT 1")
    assert isinstance(theirs[-1], ReadyForQuery)
