"""The real servers of tests/support/servers.py answer as the codec tests expect, seen through
each protocol's reference client (not our codecs) and through raw sockets.

* mosquitto 2.0.11 through paho-mqtt (MQTT 5): a login, QoS 0/1/2 publish and subscribe
  round trips; a wrong password, and an anonymous client, refused on the login
  listener; an anonymous client let in on the second listener.
* PostgreSQL 15 through pg8000: ws_trust, ws_md5 and ws_scram log in and may create
  tables; the raw first answer to each user's StartupMessage proves pg_hba.conf asks each
  for its own method (AuthenticationOk, MD5Password, SASL SCRAM-SHA-256); a wrong
  password is refused for md5 and scram (trust asks for none: any password logs in) and
  a user without a pg_hba.conf line is rejected.
* MariaDB 10.11 through PyMySQL: wsuser logs in over TCP and the socket; the raw
  greeting offers mysql_native_password and no TLS (and names the server
  "5.5.5-10.11.x-MariaDB...": the prefix MariaDB before 11 sends); a wrong password is
  refused.

The servers start on first use and stop at the end of the session (when the session
started them). A few seconds in all, every wait bounded.
"""

from __future__ import annotations

import queue
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import paho.mqtt.client as mqtt
import pg8000.native
import pymysql
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from tests.support.servers import (
    MARIADB_DATABASE,
    MARIADB_PASSWORD,
    MARIADB_SOCKET,
    MARIADB_USER,
    MQTT_ANON_PORT,
    MQTT_PASSWORD,
    MQTT_USER,
    PG_DATABASE,
    PG_MD5,
    PG_SCRAM,
    PG_TRUST,
    PG_USERS,
    PgUser,
    Server,
)

pytestmark = pytest.mark.server

TIMEOUT = 5.0  # seconds any one exchange may take


def recv_exactly(sock: Any, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {size} bytes")
        data += chunk
    return data


# --- MQTT 5: paho-mqtt ---------------------------------------------------------------------


class MqttClient:
    """A paho-mqtt MQTT 5 client driven by hand (``loop`` in ``until``: no thread), with
    what it received in queues."""

    def __init__(self, user: str | None = MQTT_USER, password: str | None = MQTT_PASSWORD):
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=f"ws-{uuid.uuid4().hex[:12]}",
            protocol=mqtt.MQTTv5,
            reconnect_on_failure=False,
        )
        if user is not None:
            self.client.username_pw_set(user, password)
        self.connack: queue.Queue[ReasonCode] = queue.Queue()
        self.subacks: queue.Queue[list[ReasonCode]] = queue.Queue()
        self.messages: queue.Queue[mqtt.MQTTMessage] = queue.Queue()
        self.disconnected = False
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message
        self.client.on_disconnect = self._on_disconnect

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        self.connack.put(reason)

    def _on_subscribe(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reasons: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        self.subacks.put(reasons)

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        self.messages.put(message)

    def _on_disconnect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        self.disconnected = True

    def until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} in {TIMEOUT} s")
            self.client.loop(timeout=0.05)

    def connect(self, server: Server, port: int | None = None) -> ReasonCode:
        """CONNECT and wait for the CONNACK: its reason code."""
        self.client.connect(server.host, port or server.port, keepalive=10)
        self.until(lambda: not self.connack.empty(), "CONNACK")
        return self.connack.get_nowait()

    def close(self) -> None:
        if self.client.is_connected():
            self.client.disconnect()
            self.until(lambda: self.disconnected, "disconnect")


@contextmanager
def mqtt_client(
    server: Server, port: int | None = None, **login: str | None
) -> Iterator[MqttClient]:
    client = MqttClient(**login)
    reason = client.connect(server, port)
    assert not reason.is_failure, f"CONNACK {reason}"
    try:
        yield client
    finally:
        client.close()


def test_mqtt5_login_publish_subscribe_qos_0_1_2(mosquitto_server: Server) -> None:
    topic = f"ws/test/{uuid.uuid4().hex}"
    with mqtt_client(mosquitto_server) as subscriber, mqtt_client(mosquitto_server) as publisher:
        subscriber.client.subscribe(f"{topic}/#", qos=2)
        subscriber.until(lambda: not subscriber.subacks.empty(), "SUBACK")
        assert [reason.value for reason in subscriber.subacks.get_nowait()] == [2]  # QoS 2
        infos = [
            publisher.client.publish(f"{topic}/q{qos}", f"payload {qos}".encode(), qos=qos)
            for qos in (0, 1, 2)
        ]
        publisher.until(lambda: all(info.is_published() for info in infos), "PUBACK/PUBCOMP")
        subscriber.until(lambda: subscriber.messages.qsize() >= 3, "3 messages")
        received = sorted(
            (message.topic, message.payload, message.qos)
            for message in (subscriber.messages.get_nowait() for _ in range(3))
        )
    assert received == [(f"{topic}/q{qos}", f"payload {qos}".encode(), qos) for qos in (0, 1, 2)]


@pytest.mark.parametrize(
    ("user", "password"), [(MQTT_USER, "wrong"), ("nobody", MQTT_PASSWORD), (None, None)]
)
def test_mqtt5_login_listener_refuses(
    mosquitto_server: Server, user: str | None, password: str | None
) -> None:
    client = MqttClient(user, password)
    try:
        reason = client.connect(mosquitto_server)
    finally:
        client.client.loop(timeout=0.05)
        client.client.disconnect()
    # 0x86 bad user name or password; 0x87 not authorized (the anonymous client)
    assert reason.is_failure and reason.value in (0x86, 0x87), str(reason)


def test_mqtt5_anonymous_listener(mosquitto_server: Server) -> None:
    with mqtt_client(mosquitto_server, MQTT_ANON_PORT, user=None):
        pass


def test_mqtt_raw_socket_connect(mosquitto_server: Server) -> None:
    """A hand-made MQTT 5 CONNECT (clean start, user name and password) on a raw socket."""

    def string(text: str) -> bytes:
        return struct.pack(">H", len(text)) + text.encode()

    body = (
        string("MQTT")
        + bytes([5, 0xC2])
        + struct.pack(">H", 10)
        + b"\x00"  # no properties
        + string("ws-raw")
        + string(MQTT_USER)
        + string(MQTT_PASSWORD)
    )
    with mosquitto_server.connect() as sock:
        sock.sendall(bytes([0x10, len(body)]) + body)
        fixed, length = recv_exactly(sock, 2)
        connack = recv_exactly(sock, length)
        sock.sendall(b"\xe0\x00")  # DISCONNECT
    assert fixed == 0x20 and connack[1] == 0x00, (fixed, connack)  # CONNACK, success


# --- PostgreSQL: pg8000 --------------------------------------------------------------------


def pg_connect(server: Server, login: PgUser, password: str | None) -> pg8000.native.Connection:
    return pg8000.native.Connection(
        login.user,
        host=server.host,
        port=server.port,
        database=PG_DATABASE,
        password=password,
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize("login", PG_USERS, ids=[login.method for login in PG_USERS])
def test_postgresql_login_and_tables(postgresql_server: Server, login: PgUser) -> None:
    connection = pg_connect(postgresql_server, login, login.password)
    try:
        assert connection.run("SELECT 1") == [[1]]
        assert connection.run("SELECT current_user") == [[login.user]]
        table = f"ws_{uuid.uuid4().hex[:12]}"
        connection.run(f"CREATE TEMP TABLE {table}_t (n int)")
        connection.run(f"CREATE TABLE {table} (n int)")
        connection.run(f"DROP TABLE {table}")
    finally:
        connection.close()


@pytest.mark.parametrize("login", [PG_MD5, PG_SCRAM], ids=["md5", "scram-sha-256"])
def test_postgresql_wrong_password_refused(postgresql_server: Server, login: PgUser) -> None:
    with pytest.raises(pg8000.native.DatabaseError) as refused:
        pg_connect(postgresql_server, login, "wrong").close()
    assert refused.value.args[0]["C"] == "28P01"  # invalid_password


def test_postgresql_trust_takes_any_password(postgresql_server: Server) -> None:
    connection = pg_connect(postgresql_server, PG_TRUST, "anything")
    connection.close()


def test_postgresql_unknown_user_rejected(postgresql_server: Server) -> None:
    with pytest.raises(pg8000.native.DatabaseError) as rejected:
        pg_connect(postgresql_server, PgUser("ws_nobody", None, "reject"), "x").close()
    assert rejected.value.args[0]["C"] == "28000"  # invalid_authorization_specification


def pg_first_answer(server: Server, user: str) -> tuple[bytes, bytes]:
    """The server's first message (type, body) after a raw v3 StartupMessage for ``user``."""
    params = b"user\0" + user.encode() + b"\0database\0" + PG_DATABASE.encode() + b"\0\0"
    with server.connect() as sock:
        sock.sendall(struct.pack(">ii", 8 + len(params), 196608) + params)
        kind, length = struct.unpack(">ci", recv_exactly(sock, 5))
        return kind, recv_exactly(sock, length - 4)


def test_postgresql_raw_socket_auth_methods(postgresql_server: Server) -> None:
    with postgresql_server.connect() as sock:  # SSLRequest: ssl=off answers N
        sock.sendall(struct.pack(">ii", 8, 80877103))
        assert recv_exactly(sock, 1) == b"N"
    assert pg_first_answer(postgresql_server, PG_TRUST.user) == (b"R", struct.pack(">i", 0))
    kind, body = pg_first_answer(postgresql_server, PG_MD5.user)
    assert (kind, body[:4], len(body)) == (b"R", struct.pack(">i", 5), 8)  # MD5Password + salt
    assert pg_first_answer(postgresql_server, PG_SCRAM.user) == (
        b"R",
        struct.pack(">i", 10) + b"SCRAM-SHA-256\0\0",  # SASL, one mechanism (no -PLUS: no TLS)
    )


# --- MariaDB: PyMySQL ----------------------------------------------------------------------


def test_mariadb_login_tcp_and_socket(mariadb_server: Server) -> None:
    for where in (
        {"host": mariadb_server.host, "port": mariadb_server.port},
        {"unix_socket": str(MARIADB_SOCKET)},
    ):
        connection = pymysql.connect(
            user=MARIADB_USER,
            password=MARIADB_PASSWORD,
            database=MARIADB_DATABASE,
            connect_timeout=TIMEOUT,
            read_timeout=TIMEOUT,
            write_timeout=TIMEOUT,
            **where,
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1, CURRENT_USER()")
                one, account = cursor.fetchone()
                cursor.execute("CREATE TEMPORARY TABLE t (n int)")
        finally:
            connection.close()
        host = "127.0.0.1" if "host" in where else "localhost"
        assert (one, account) == (1, f"{MARIADB_USER}@{host}")


def test_mariadb_wrong_password_refused(mariadb_server: Server) -> None:
    with pytest.raises(pymysql.err.OperationalError) as refused:
        pymysql.connect(
            host=mariadb_server.host,
            port=mariadb_server.port,
            user=MARIADB_USER,
            password="wrong",
            connect_timeout=TIMEOUT,
            read_timeout=TIMEOUT,
        )
    assert refused.value.args[0] == 1045  # ER_ACCESS_DENIED_ERROR


def test_mariadb_raw_socket_greeting(mariadb_server: Server) -> None:
    """The server speaks first: protocol 10, MariaDB, the default plugin, no TLS offer."""
    with mariadb_server.connect() as sock:
        header = recv_exactly(sock, 4)
        payload = recv_exactly(sock, int.from_bytes(header[:3], "little"))
    assert header[3] == 0 and payload[0] == 10  # sequence 0, protocol version 10
    version, rest = payload[1:].split(b"\0", 1)
    # MariaDB < 11 prefixes "5.5.5-" (old replicas read the first digit as the major)
    assert version.startswith(b"5.5.5-10.11.") and b"MariaDB" in version, version
    (capabilities,) = struct.unpack_from("<H", rest, 4 + 8 + 1)  # after id, scramble, filler
    assert not capabilities & 0x0800  # CLIENT_SSL: TLS not offered
    assert payload.rstrip(b"\0").endswith(b"mysql_native_password")
