"""A Spark standalone cluster for the tests: one master and two workers, each its own JVM.

Started from the installed PySpark (``<pyspark>/bin/spark-class``, SPARK_HOME = the
pyspark package folder), loopback only, on free ports; each worker offers 1 core and
1 GiB, so an application gets two executors, one per worker, each a
``CoarseGrainedExecutorBackend`` JVM the worker forks.  Work and log folders live in a
temporary folder.  ``start_cluster`` waits (with a deadline) until the master's web UI
lists both workers ALIVE; on leaving, every JVM it started -- and any executor a worker
left behind -- is stopped by PID (SIGTERM, then SIGKILL after a grace period), also when
a test failed or the start timed out.

The driver cannot live in the test process (one SparkContext per process, and the test
session already has its ``local[2,4]`` one), so it runs as a subprocess, once for all the
cluster tests (a session and its executors take tens of seconds to start):
``ClusterDriver`` starts ``python -m tests.support.spark_cluster_driver`` with the venv's Python
(``PYSPARK_PYTHON`` too: executors run the same interpreter), sends it scenarios and
reads the JSON lines it prints, each with a deadline.

The tests look at the processes from outside, through /proc: ``executors()`` lists the
executor JVMs under each worker, ``broker_clients()`` the processes holding a TCP
connection to a port (which of them are an executor's descendants).

    with start_cluster(tmp_path) as cluster, cluster_driver(cluster) as driver:
        command = driver.run("capture", "--folder", str(folder))
        event = driver.next_event("done", command, timeout=120)
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

__all__ = [
    "ROOT",
    "SPARK_HOME",
    "ClusterError",
    "ClusterDriver",
    "Executor",
    "SparkCluster",
    "broker_clients",
    "broker_connected",
    "cluster_driver",
    "descendants",
    "free_port",
    "start_cluster",
]

ROOT = Path(__file__).resolve().parent.parent.parent
SPARK_HOME = Path(pyspark.__file__).resolve().parent
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"
DAEMON_MEMORY = "256m"  # the master's and workers' own heaps: they only coordinate
START_TIMEOUT = 120.0  # seconds until both workers are ALIVE (JVM starts are slow on 2 cores)
STOP_GRACE = 15.0  # seconds a JVM gets after SIGTERM before SIGKILL


class ClusterError(RuntimeError):
    """The cluster did not start (the message quotes the end of the JVM's log)."""


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[1])  # field 4, after the "(comm)"


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def descendants(root: int) -> set[int]:
    """The PIDs under ``root`` (children, grandchildren, ...), as /proc shows them now."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        parent = _ppid(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _kill_if_still(processes: dict[int, list[str]]) -> None:
    """SIGKILL each PID that still runs the same command line (not a reused PID)."""
    for pid, command in processes.items():
        if command and _cmdline(pid) == command:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _socket_inodes(port: int) -> set[str]:
    """Inodes of the established TCP connections to 127.0.0.1:``port`` (/proc/net/tcp)."""
    remote = f"0100007F:{port:04X}"
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[2] == remote and fields[3] == "01":  # 01: ESTABLISHED
            inodes.add(fields[9])
    return inodes


def broker_connected(port: int) -> bool:
    """Whether any process holds a connection to 127.0.0.1:``port`` now (one read of
    /proc/net/tcp: cheap enough to poll)."""
    return bool(_socket_inodes(port))


def broker_clients(port: int, among: set[int]) -> set[int]:
    """Which of the PIDs ``among`` hold a connection to 127.0.0.1:``port`` now."""
    sockets = {f"socket:[{inode}]" for inode in _socket_inodes(port)}
    holders = set()
    for pid in among:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue  # gone, or a file descriptor closed under us
        if sockets.intersection(links):
            holders.add(pid)
    return holders


@dataclass(frozen=True)
class Executor:
    pid: int  # the CoarseGrainedExecutorBackend JVM
    worker: int  # index of the worker that forked it
    app_id: str
    executor_id: str


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1] if name in command else ""


@dataclass
class SparkCluster:
    base: Path
    master_port: int
    web_port: int
    master: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def env(self) -> dict[str, str]:
        """The environment of every process of the cluster, the driver's included."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP="127.0.0.1",  # bind loopback, and no "resolves to a loopback" WARN
            SPARK_LOG_DIR=str(self.base / "logs"),
            SPARK_CONF_DIR=str(self.base / "conf"),
            SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
            # The master and workers only coordinate: the quick JIT tier and the serial
            # collector leave the two cores to the driver and the executors.
            SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            SPARK_NO_DAEMONIZE="1",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            # The executors' Python workers import wirestream from this checkout (they
            # start in the worker's work folder, where `import wirestream` would find the
            # venv's install, or nothing).
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        )
        return env

    def state(self) -> dict[str, Any]:
        """The master's view (its web UI's /json/)."""
        url = f"http://127.0.0.1:{self.web_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as answer:
            state: dict[str, Any] = json.load(answer)
        return state

    def jvms(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in [self.master, *self.workers] if p is not None]

    def executors(self) -> list[Executor]:
        """The executor JVMs the workers run now."""
        found = []
        by_pid = {worker.pid: index for index, worker in enumerate(self.workers)}
        for pid in _pids():
            worker = by_pid.get(_ppid(pid) or -1)
            command = _cmdline(pid)
            if worker is None or not any("CoarseGrainedExecutorBackend" in c for c in command):
                continue
            found.append(Executor(pid, worker, _option(command, "--app-id"),
                                  _option(command, "--executor-id")))  # fmt: skip
        return found

    def wait_for_executors(
        self, count: int, app_id: str | None = None, timeout: float = 60.0
    ) -> list[Executor]:
        deadline = time.monotonic() + timeout
        while True:
            running = [e for e in self.executors() if app_id is None or e.app_id == app_id]
            if len(running) >= count:
                return running
            if time.monotonic() > deadline:
                raise AssertionError(f"{count} executor(s) expected, running: {running}")
            time.sleep(0.2)

    def log_tail(self, path: Path, lines: int = 30) -> str:
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop every JVM this cluster started, and the executors under the workers."""
        doomed = {e.pid: _cmdline(e.pid) for e in self.executors()}
        for process in self.jvms():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)  # a worker stops its executors itself
        for process in self.jvms():
            try:
                process.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_GRACE)
        _kill_if_still(doomed)  # normally gone with their worker


def _spark_class(cluster: SparkCluster, log: Path, *args: str) -> subprocess.Popen[bytes]:
    cluster.logs.append(log)
    with log.open("wb") as out:
        # spark-class ends in `exec java ...`: the PID is the JVM's.
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=cluster.env(),
            cwd=cluster.base,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_alive(cluster: SparkCluster, deadline: float, workers: int) -> None:
    """Until the master is ALIVE with ``workers`` workers ALIVE (a JVM exiting, or the
    deadline, fails with the logs' tails)."""
    while True:
        for process, log in zip(cluster.jvms(), cluster.logs):
            if process.poll() is not None:
                raise ClusterError(
                    f"{log.name}: the JVM exited ({process.returncode}):\n"
                    f"{cluster.log_tail(log)}"
                )
        try:
            state = cluster.state()
            if state.get("status") == "ALIVE" and state.get("aliveworkers") == workers:
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass  # not listening yet
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {log.name}\n{cluster.log_tail(log)}" for log in cluster.logs)
            raise ClusterError(f"the cluster was not up in time:\n{tails}")
        time.sleep(0.5)


@contextmanager
def start_cluster(base: Path, timeout: float = START_TIMEOUT) -> Iterator[SparkCluster]:
    """A master and ``WORKERS`` workers, up (both workers ALIVE), stopped on exit."""
    cluster = SparkCluster(base, master_port=free_port(), web_port=free_port())
    (base / "conf").mkdir(parents=True, exist_ok=True)
    (base / "conf" / "spark-defaults.conf").write_text(
        "spark.master.rest.enabled false\n"  # no submission server on port 6066
        # A port taken between free_port() and the bind fails the start at once, with
        # the log, instead of the master moving to the next port and the workers waiting.
        "spark.port.maxRetries 0\n"
    )
    try:
        cluster.master = _spark_class(
            cluster, base / "master.log", "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(cluster.master_port),
            "--webui-port", str(cluster.web_port),
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        # Workers started before the master listens back off for seconds between tries.
        _wait_alive(cluster, deadline, workers=0)
        for index in range(WORKERS):
            work = base / f"worker-{index}"
            work.mkdir(exist_ok=True)
            cluster.workers.append(
                _spark_class(
                    cluster, base / f"worker-{index}.log", "org.apache.spark.deploy.worker.Worker",
                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                    "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY,
                    "--work-dir", str(work), cluster.url,
                )  # fmt: skip
            )
        _wait_alive(cluster, deadline, workers=WORKERS)
        yield cluster
    finally:
        cluster.stop()


# ---------------------------------------------------------------------- the driver process


class ClusterDriver:
    """``python -m tests.support.spark_cluster_driver`` against ``cluster``: one SparkSession (so
    one application, its executors launched once) running the scenarios ``run`` sends.
    Its stdout is JSON lines (events); stderr (Spark's log) goes to a file quoted on
    failure.  ``stop`` ends it (stdin closed, then by PID if need be)."""

    def __init__(self, cluster: SparkCluster, timeout: float = 180.0) -> None:
        self.cluster = cluster
        self.log = cluster.base / "driver.log"
        env = cluster.env()
        env["WIRESTREAM_SPARK_MASTER"] = cluster.url
        with self.log.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-u", "-m", "tests.support.spark_cluster_driver"],
                env=env,
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._commands = 0
        try:
            self.session = self.next_event("session", None, timeout)
        except BaseException:
            self.stop()
            raise
        self.pid: int = self.session["driver_pid"]
        self.app_id: str = self.session["app_id"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self._events.put(json.loads(line))
            except ValueError:
                pass  # not ours (a library printing to stdout)
        self._events.put(None)  # end of output

    def run(self, *argv: str) -> int:
        """Start a scenario; returns its id, for ``next_event``."""
        self._commands += 1
        assert self.process.stdin is not None
        line = json.dumps({"id": self._commands, "argv": list(argv)}) + "\n"
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()
        return self._commands

    def next_event(self, kind: str, command: int | None, timeout: float = 120.0) -> dict[str, Any]:
        """The next event of ``kind`` from scenario ``command`` (others are skipped: what
        an earlier, failed test's scenario still said); fails when the scenario fails, the
        driver ends, or nothing comes in time."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = self._events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {kind} from the driver in {timeout} s:\n"
                                     f"{self.cluster.log_tail(self.log)}") from None  # fmt: skip
            if event is None:
                self._events.put(None)
                raise AssertionError(f"the driver ended before {kind}:\n"
                                     f"{self.cluster.log_tail(self.log, 60)}")  # fmt: skip
            if event.get("command") != command:
                continue
            if event.get("event") == "error":
                raise AssertionError(f"the driver failed: {event['message']}")
            if event.get("event") == kind:
                return event

    def stop(self) -> None:
        # The driver's JVM (its child) exits when the driver does; made sure of by PID.
        left = {pid: _cmdline(pid) for pid in descendants(self.process.pid)}
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()  # the driver stops its session and exits
            except OSError:
                pass
        try:
            self.process.wait(STOP_GRACE * 2)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_GRACE)
        _kill_if_still(left)
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def cluster_driver(cluster: SparkCluster) -> Iterator[ClusterDriver]:
    driver = ClusterDriver(cluster)
    try:
        yield driver
    finally:
        driver.stop()
