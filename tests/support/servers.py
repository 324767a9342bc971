"""Real MQTT, PostgreSQL and MariaDB servers for the tests (tools/servers.sh), and how to reach them.

The session-scoped fixtures ``mosquitto_server``, ``postgresql_server`` and
``mariadb_server`` (made available to every module by tests/conftest.py) each give a
``Server`` that answers: on first use the fixture runs ``tools/servers.sh start NAME``
(a private instance from .servers/NAME/, loopback only) and at the end of the session
``tools/servers.sh stop NAME``. A server that already answered before the session (``make
servers``, another session) is used as it is and left running.

The fixtures never install anything (``SERVERS_NO_INSTALL=1``): ``make test`` installs the
Debian packages first (``make servers-installed``, a prerequisite of ``pytest``). Without
them a test FAILS with the reason and the way out (nothing skips). A server that is
installed but does not start FAILS the test with the script's output.

    def test_startup(postgresql_server: Server) -> None:
        with postgresql_server.connect() as sock:   # a connected TCP socket, 5 s timeout
            sock.sendall(startup_message(PG_SCRAM.user, PG_DATABASE))

What each server offers (tools/servers.sh says how it is set up):

* mosquitto 2.0.11: ``MQTT_PORT`` (18830) asks for ``MQTT_USER``/``MQTT_PASSWORD`` and
  refuses anonymous clients; ``MQTT_ANON_PORT`` (18831) takes anonymous clients.
* PostgreSQL 15: ``PG_PORT`` (15432), database ``PG_DATABASE``; one user per
  authentication method, ``PG_TRUST`` (trust), ``PG_MD5`` (md5), ``PG_SCRAM``
  (scram-sha-256), each may create tables and temporary tables; other users are rejected.
  SSL is off (an SSLRequest is answered ``N``).
* MariaDB 10.11: ``MARIADB_PORT`` (13306), database ``MARIADB_DATABASE``, user
  ``MARIADB_USER``/``MARIADB_PASSWORD`` (mysql_native_password, also over the socket
  ``MARIADB_SOCKET``); TLS is off (not offered, so never required).

The ports follow the same environment variables as the script (MOSQUITTO_PORT,
MOSQUITTO_ANON_PORT, POSTGRESQL_PORT, MARIADB_PORT).
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.support import shared_services

__all__ = [
    "HOST",
    "MARIADB_DATABASE",
    "MARIADB_PASSWORD",
    "MARIADB_PORT",
    "MARIADB_SOCKET",
    "MARIADB_USER",
    "MQTT_ANON_PORT",
    "MQTT_PASSWORD",
    "MQTT_PORT",
    "MQTT_USER",
    "PG_DATABASE",
    "PG_MD5",
    "PG_PORT",
    "PG_SCRAM",
    "PG_SOCKET_DIR",
    "PG_TRUST",
    "PG_USERS",
    "PORTS",
    "PgUser",
    "Server",
    "ServerStartError",
    "answers",
    "mariadb_server",
    "mosquitto_server",
    "postgresql_server",
    "raw_socket",
    "running",
    "stop",
]

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "tools" / "servers.sh"
SERVERS_DIR = ROOT / ".servers"
START_TIMEOUT = 120.0  # seconds for the script (its own waits end after 60 s per server)
STOP_TIMEOUT = 60.0
CONNECT_TIMEOUT = 5.0

HOST = "127.0.0.1"

MQTT_PORT = int(os.environ.get("MOSQUITTO_PORT", "18830"))
MQTT_ANON_PORT = int(os.environ.get("MOSQUITTO_ANON_PORT", "18831"))
MQTT_USER = "wsuser"
MQTT_PASSWORD = "wspass"

PG_PORT = int(os.environ.get("POSTGRESQL_PORT", "15432"))
PG_DATABASE = "wstest"
PG_SOCKET_DIR = SERVERS_DIR / "postgresql" / "sock"


class PgUser(NamedTuple):
    """A PostgreSQL login and the one method pg_hba.conf lets it use over TCP."""

    user: str
    password: str | None  # None: trust asks for no password
    method: str  # as in pg_hba.conf


PG_TRUST = PgUser("ws_trust", None, "trust")
PG_MD5 = PgUser("ws_md5", "md5pass", "md5")
PG_SCRAM = PgUser("ws_scram", "scrampass", "scram-sha-256")
PG_USERS = (PG_TRUST, PG_MD5, PG_SCRAM)

MARIADB_PORT = int(os.environ.get("MARIADB_PORT", "13306"))
MARIADB_DATABASE = "wstest"
MARIADB_USER = "wsuser"
MARIADB_PASSWORD = "wspass"
MARIADB_SOCKET = SERVERS_DIR / "mariadb" / "mariadb.sock"

PORTS = {"mosquitto": MQTT_PORT, "postgresql": PG_PORT, "mariadb": MARIADB_PORT}
_NOT_INSTALLED = 3  # tools/servers.sh's exit status for a missing package


class ServerStartError(RuntimeError):
    """``tools/servers.sh start`` failed; the message holds its output."""


@dataclass(frozen=True)
class Server:
    """A running server: where it listens (``host``, ``port``)."""

    name: str
    host: str
    port: int

    def connect(self, timeout: float = CONNECT_TIMEOUT, port: int | None = None) -> socket.socket:
        """A TCP socket connected to the server (``port``: another of its listeners),
        with ``timeout`` on every operation."""
        sock = socket.create_connection((self.host, port or self.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


def answers(port: int, host: str = HOST) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def raw_socket(name: str, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
    """A TCP socket connected to the server ``name`` (mosquitto, postgresql, mariadb),
    which must be running (use its fixture first)."""
    return Server(name, HOST, PORTS[name]).connect(timeout)


def _script(command: str, name: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SERVERS_NO_INSTALL": "1"}
    try:
        return subprocess.run(
            [str(SCRIPT), command, name],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise ServerStartError(
            f"tools/servers.sh {command} {name}: no end in {timeout} s"
        ) from error


def _missing(reason: str) -> None:
    """Fail with ``reason`` and the way out: a missing server is never a skip."""
    pytest.fail(
        f"{reason}\nThe server tests need Debian's mosquitto, postgresql-15 and mariadb-server: "
        "`make test` installs them (make servers-installed, as root).",
        pytrace=False,
    )


def _start(name: str) -> bool:
    """Start ``name``; True when this call started it (False: it already ran)."""
    done = _script("start", name, START_TIMEOUT)
    if done.returncode == _NOT_INSTALLED:
        _missing(done.stderr.strip() or f"{name} is not installed")
    if done.returncode != 0:
        raise ServerStartError(
            f"tools/servers.sh start {name} exited with {done.returncode}:\n"
            f"{done.stdout}{done.stderr}"
        )
    # another session may have started it between our check and the script's lock
    return "already running" not in done.stdout


def stop(name: str) -> None:
    """Stop the server ``name`` (``tools/servers.sh stop``)."""
    done = _script("stop", name, STOP_TIMEOUT)
    if done.returncode != 0:
        raise ServerStartError(f"tools/servers.sh stop {name}:\n{done.stdout}{done.stderr}")


def running(name: str) -> Iterator[Server]:
    """The server ``name``, started unless it answers already; stopped after the
    generator ends only when started here (the body of the session fixtures)."""
    port = PORTS[name]
    if answers(port):
        started = False
    else:
        try:
            started = shared_services.start(name, lambda: _start(name))
        except ServerStartError as error:
            pytest.fail(str(error), pytrace=False)
    try:
        yield Server(name, HOST, port)
    finally:
        if started:
            stop(name)


@pytest.fixture(scope="session")
def mosquitto_server() -> Iterator[Server]:
    """mosquitto on ``MQTT_PORT`` (login) and ``MQTT_ANON_PORT`` (anonymous)."""
    yield from running("mosquitto")


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[Server]:
    """PostgreSQL 15 on ``PG_PORT``: users ``PG_USERS``, database ``PG_DATABASE``."""
    yield from running("postgresql")


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[Server]:
    """MariaDB 10.11 on ``MARIADB_PORT``: ``MARIADB_USER``, database ``MARIADB_DATABASE``."""
    yield from running("mariadb")
