"""The RabbitMQ broker of the broker tests (tools/broker.sh), started for the test session.

The session-scoped fixture ``rabbitmq_broker`` (made available to every module by
tests/conftest.py) works as tests/support/servers.py's server fixtures do: when nothing answers on
the stream port (5552) and its TLS port (5551), its first use runs ``tools/broker.sh
start`` (a private node from .broker/, loopback only) and the end of the session runs
``tools/broker.sh stop``. A broker that already answered (``make broker``, another
checkout, another session) is used as it is and left running.

The fixture never installs anything (``BROKER_NO_INSTALL=1``): ``make test`` installs
Debian's rabbitmq-server first (``make broker-installed``, a prerequisite of ``pytest``).
A missing package, or a broker that does not start, FAILS every test that needs it with
the reason and the way out; nothing skips.

A module whose tests all need the broker says so once:

    pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

and a single test or fixture takes ``rabbitmq_broker`` as an argument. Each such test is
marked ``broker`` (tests/conftest.py), so ``-m "not broker"`` leaves them out.

``BROKER_DIR`` is the folder of the node that answers (its ``env.sh`` for the CLI tools,
``tls/`` for the certificates): ``WIRESTREAM_BROKER_DIR`` when set, else this checkout's
``.broker`` when a node was started from it, else the folder of the node running on this
machine (another checkout's, e.g. the main checkout's while a git worktree runs its tests),
else this checkout's ``.broker`` (where ``start`` puts it).
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import shared_services

__all__ = [
    "BROKER_DIR",
    "HOST",
    "STREAM_PORT",
    "TLS_PORT",
    "Broker",
    "BrokerStartError",
    "answers",
    "rabbitmq_broker",
    "stop",
]

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "tools" / "broker.sh"
HOST = "127.0.0.1"
STREAM_PORT = int(os.environ.get("WIRESTREAM_STREAM_PORT", "5552"))
TLS_PORT = int(os.environ.get("WIRESTREAM_TLS_PORT", "5551"))
START_TIMEOUT = 240.0  # seconds: the script waits up to 120 s for 5552, then 30 s for TLS
STOP_TIMEOUT = 60.0
_NOT_INSTALLED = 3  # tools/broker.sh's exit status for a missing rabbitmq-server


def _running_node_dir() -> Path | None:
    """The folder of a RabbitMQ node running on this machine (from its environment:
    ``RABBITMQ_CONFIG_FILE`` is ``<folder>/rabbitmq``), if one can be read."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"beam" not in (proc / "cmdline").read_bytes():
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for entry in environ:
            if entry.startswith(b"RABBITMQ_CONFIG_FILE="):
                folder = Path(os.fsdecode(entry.split(b"=", 1)[1])).parent
                if (folder / "env.sh").is_file():
                    return folder
    return None


def _broker_dir() -> Path:
    configured = os.environ.get("WIRESTREAM_BROKER_DIR")
    if configured:
        return ROOT / configured  # an absolute path as is
    own = ROOT / ".broker"
    if (own / "env.sh").is_file():
        return own
    return _running_node_dir() or own


BROKER_DIR = _broker_dir()


class BrokerStartError(RuntimeError):
    """``tools/broker.sh start`` failed; the message holds its output."""


@dataclass(frozen=True)
class Broker:
    """The running broker: stream port, stream-over-TLS port, its folder."""

    host: str
    port: int
    tls_port: int
    folder: Path

    def uri(self, user: str = "guest", password: str = "guest", vhost: str = "%2f") -> str:
        return f"rabbitmq-stream://{user}:{password}@{self.host}:{self.port}/{vhost}"


def answers(port: int, host: str = HOST) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _script(command: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BROKER_NO_INSTALL": "1"}
    try:
        return subprocess.run(
            [str(SCRIPT), command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise BrokerStartError(f"tools/broker.sh {command}: no end in {timeout} s") from error


def _start() -> bool:
    """Start the broker; True when this call started it (False: it already ran)."""
    done = _script("start", START_TIMEOUT)
    if done.returncode == _NOT_INSTALLED:
        raise BrokerStartError(
            f"{done.stderr.strip() or 'rabbitmq-server is not installed'}\n"
            "The broker tests need Debian's rabbitmq-server: `make test` installs it "
            "(make broker-installed, as root)."
        )
    if done.returncode != 0:
        raise BrokerStartError(
            f"tools/broker.sh start exited with {done.returncode}:\n{done.stdout}{done.stderr}"
        )
    # another session may have started it between our check and the script's own
    return "already listening" not in done.stdout


@pytest.fixture(scope="session")
def rabbitmq_broker() -> Iterator[Broker]:
    """RabbitMQ with the stream plugin on ``STREAM_PORT`` and stream over TLS on
    ``TLS_PORT``; started unless both answer, stopped at the end only when started here."""
    started = False
    if not (answers(STREAM_PORT) and answers(TLS_PORT)):
        try:
            started = shared_services.start("broker", _start)
        except BrokerStartError as error:
            pytest.fail(str(error), pytrace=False)
    try:
        yield Broker(HOST, STREAM_PORT, TLS_PORT, BROKER_DIR)
    finally:
        if started:
            stop()


def stop() -> None:
    """Stop the broker (``tools/broker.sh stop``)."""
    done = _script("stop", STOP_TIMEOUT)
    if done.returncode != 0:
        raise BrokerStartError(f"tools/broker.sh stop:\n{done.stdout}{done.stderr}")
