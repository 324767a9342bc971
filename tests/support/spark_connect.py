"""A Spark Connect server for the tests, started from the installed PySpark.

``ConnectServer.start`` runs PySpark's own ``bin/spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer`` -- what ``sbin/start-connect-
server.sh`` runs, minus its daemonizing, so the PID we hold is the server's JVM
(spark-submit and spark-class ``exec`` into it) -- on ``local[2]``, bound to 127.0.0.1
(the gRPC port, the driver and its block manager), its Python workers running this
interpreter with this checkout first on their path, so they import the wirestream under
test.  Ready means its log says on which port the gRPC service started (Spark moves to the
next port if the chosen one was taken meanwhile) and that port answers; ``stop`` ends the
JVM by its PID (SIGTERM, SIGKILL after a grace period).  Every wait has a deadline; a
server that exits or never gets ready fails with the end of its log.

The session-scoped fixtures ``connect_server`` (the running server) and ``spark_connect``
(a Connect client session on it, wirestream's data sources registered) are made available
to every module by tests/conftest.py.  A Connect client has no SparkContext, so it lives in
the test process beside the classic session of the ``spark`` fixture.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT = 240.0  # a JVM and a SparkContext on a busy 2-core box: ~15 s idle
STOP_TIMEOUT = 60.0
STARTED = re.compile(r"Spark Connect server started at: [^\s:]+:(\d+)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass
class ConnectServer:
    process: subprocess.Popen[bytes]
    log: Path
    port: int = 0

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, folder: Path, master: str = "local[2]") -> ConnectServer:
        import pyspark

        spark_home = Path(pyspark.__file__).parent
        log = folder / "connect-server.log"
        python_path = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(python_path),
        }
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)  # a server, not a client
        env.pop("SPARK_REMOTE", None)
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(free_port()),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
        }
        command = [str(spark_home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
                   "--name", "wirestream-tests-connect", "--master", master]  # fmt: skip
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        with open(log, "wb") as out:
            # Its own session: a ^C at the terminal reaches pytest, whose fixture stops
            # the server in order, rather than the JVM directly.
            process = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # fmt: skip
        server = cls(process, log)
        try:
            server.port = server._wait_ready(time.monotonic() + START_TIMEOUT)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_ready(self, deadline: float) -> int:
        port = 0
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the Spark Connect server exited with {self.process.returncode} before "
                    f"it was ready; the end of its log:\n{self.tail()}"
                )
            if not port and (started := STARTED.search(self._read_log())):
                port = int(started.group(1))
            if port and answers(port):
                return port
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Spark Connect server was not ready within {START_TIMEOUT:.0f} s; "
                    f"the end of its log:\n{self.tail()}"
                )
            time.sleep(0.25)

    def _read_log(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self._read_log().splitlines()[-lines:])

    def stop(self) -> None:
        """End the JVM by its PID: SIGTERM runs Spark's shutdown hooks (the SparkContext
        stops, its Python workers end); SIGKILL if that takes over ``STOP_TIMEOUT``."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_TIMEOUT)


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    server = ConnectServer.start(tmp_path_factory.mktemp("spark-connect"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark_connect(connect_server: ConnectServer) -> Iterator["SparkSession"]:
    """A Spark Connect client session on the test server, wirestream's sources registered."""
    from wirestream.runtime.spark import session

    spark = session(connect_server.url)
    try:
        yield spark
    finally:
        spark.stop()
