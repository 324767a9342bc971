"""rsocket-java (``io.rsocket`` 1.1.5, the RSocket reference implementation) as the other
end of our RSocket client and server.

Nothing here is a mock: the peer is rsocket-java's ``RSocketServer`` / ``RSocketConnector``
over its Netty TCP transport, in a JVM of its own (tests/support/java/rsocket: ``RSocketJavaPeer``,
built by ``make java-peers`` with Maven; the ``rsocket_java`` fixture builds it when it is
missing).  It speaks JSON lines on stdout and takes commands on stdin:

* ``await JavaServer.start(classpath, "--resume", "--lease-ttl-ms", "60000", ...)`` -- an
  rsocket-java server on 127.0.0.1 (``.port``, ``.url``); request-response echoes,
  request-stream answers the decimal N in its data with "0" .. "N-1";
  ``await server.stats()`` counts what its responder served.
* ``await JavaClient.start(classpath, "--port", p, "--resume", ...)`` -- an rsocket-java
  client connected to 127.0.0.1:p (``--resume-token HEX``: a fixed resume token) (``await client.channel(k)`` sends "0" .. "k-1" on a
  request-channel); ``await client.stream(n, rate)`` runs a request-stream
  and reports ``elements``, ``out_of_order`` (elements that were not the one after the
  previous), ``last``, ``elapsed_ms`` and ``error``; ``await client.request_responses(k)``
  reports ``ok``, ``rejected`` (ERROR[REJECTED] from the server), ``missing_lease`` (its
  own lease tracker refused: no LEASE allows a request now) and ``errors``.

Without Java or Maven the tests skip; under ``CI=true`` they fail instead (CI must run
them), as the broker and TypeScript tests do.  ``RSOCKET_JAVA_OPTS`` adds JVM options,
e.g. ``-Dorg.slf4j.simpleLogger.defaultLogLevel=debug`` (its log: the peer's ``.stderr``).
"""

from __future__ import annotations

import asyncio
import json
import os
from types import TracebackType
from typing import Any, Self

import pytest

from tests.support.java_peers import ROOT, java_classpath

__all__ = ["JavaClient", "JavaServer", "rsocket_java", "JAVA_DIR"]

JAVA_DIR = ROOT / "tests" / "support" / "java" / "rsocket"
MAIN = "wirestream.peer.RSocketJavaPeer"
START_TIMEOUT = 30.0  # a JVM start on a busy 2-core box


@pytest.fixture(scope="session")
def rsocket_java() -> str:
    """The classpath of the built peer (built once, by the Makefile's own rule)."""
    return java_classpath("rsocket")


class _JavaPeer:
    """One RSocketJavaPeer process: its first line, then one JSON answer per command."""

    def __init__(self, process: asyncio.subprocess.Process, first: dict[str, Any]) -> None:
        self.process = process
        self.first = first
        self.stderr: list[str] = []
        assert process.stderr is not None
        self._stderr_task = asyncio.ensure_future(self._collect(process.stderr))

    @classmethod
    async def _spawn(cls, classpath: str, mode: str, *options: str) -> Self:
        process = await asyncio.create_subprocess_exec(
            "java", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            *os.environ.get("RSOCKET_JAVA_OPTS", "").split(), "-cp", classpath, MAIN, mode, *options,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            first = await asyncio.wait_for(cls._line(process), START_TIMEOUT)
        except BaseException:
            process.kill()
            await process.wait()
            raise
        return cls(process, first)

    @staticmethod
    async def _line(process: asyncio.subprocess.Process) -> dict[str, Any]:
        assert process.stdout is not None
        line = await process.stdout.readline()
        if not line:
            assert process.stderr is not None
            error = (await process.stderr.read()).decode(errors="replace")
            raise AssertionError(f"rsocket-java peer ended without an answer:\n{error}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def _collect(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def command(self, line: str, timeout: float = 60.0) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        await self.process.stdin.drain()
        answer = await asyncio.wait_for(self._line(self.process), timeout)
        assert "failed" not in answer, f"{line!r}: {answer['failed']}\n" + "\n".join(self.stderr)
        return answer

    async def close(self) -> int:
        """Ask it to quit (killed after 10 s); its exit code."""
        process = self.process
        if process.returncode is None:
            assert process.stdin is not None
            try:
                process.stdin.write(b"quit\n")
                await process.stdin.drain()
                process.stdin.close()
            except (ConnectionError, OSError):
                pass
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()
        await self._stderr_task
        assert process.returncode is not None
        return process.returncode

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()


class JavaServer(_JavaPeer):
    @classmethod
    async def start(cls, classpath: str, *options: str) -> JavaServer:
        server = await cls._spawn(classpath, "server", *options)
        assert server.first.get("event") == "listening", server.first
        return server

    @property
    def port(self) -> int:
        return int(self.first["port"])

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    async def stats(self) -> dict[str, Any]:
        return await self.command("stats")


class JavaClient(_JavaPeer):
    @classmethod
    async def start(cls, classpath: str, port: int, *options: str) -> JavaClient:
        client = await cls._spawn(classpath, "client", "--port", str(port), *options)
        assert client.first.get("event") == "connected", client.first
        return client

    async def stream(self, n: int, rate: int = 256, timeout: float = 150.0) -> dict[str, Any]:
        return await self.command(f"stream {n} {rate}", timeout)

    async def channel(self, k: int, timeout: float = 60.0) -> dict[str, Any]:
        """A request-channel sending "0" .. "k-1"; the answers counted as ``stream``'s."""
        return await self.command(f"channel {k}", timeout)

    async def request_responses(self, k: int, timeout: float = 60.0) -> dict[str, Any]:
        return await self.command(f"rr {k}", timeout)

    async def wait_lease(self, ms: int) -> bool:
        answer = await self.command(f"wait-lease {ms}", ms / 1000 + 10)
        return bool(answer["available"])
