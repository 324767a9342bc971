"""RabbitMQ's Java stream client (``com.rabbitmq:stream-client`` 1.11.0, the reference
implementation of the stream protocol) as the other client on the same broker.

Nothing here is a mock: each program in tests/support/java/rabbitmq (package
``wirestream.rabbitmq``, built by ``make java-peers`` with Maven; the ``rabbitmq_java``
fixture builds it when it is stale) is a ``main`` that uses the Java client's public API
(its ``Environment``, producers, consumers and codecs) and prints one JSON object per
line on stdout; bytes travel as base64. Run one with

    answers = run_java(rabbitmq_java, "Hello", URI)            # -> [{"ok": True, ...}]
    answers = await run_java_async(rabbitmq_java, "Hello", URI)  # inside an event loop

A program that exits non-zero fails the test with its stderr. ``RABBITMQ_JAVA_OPTS`` adds
JVM options, e.g. ``-Dorg.slf4j.simpleLogger.defaultLogLevel=debug``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from typing import Any

import pytest

from tests.support.java_peers import java_classpath

__all__ = ["rabbitmq_java", "run_java", "run_java_async", "java_command", "RUN_TIMEOUT"]

PACKAGE = "wirestream.rabbitmq"
RUN_TIMEOUT = 180.0  # seconds: a JVM start plus a broker round trip on a busy 2-core box


@pytest.fixture(scope="session")
def rabbitmq_java() -> str:
    """The classpath of the built peer (built once, by the Makefile's own rule)."""
    return java_classpath("rabbitmq")


def java_command(classpath: str, program: str, *args: str) -> list[str]:
    """The command line of one program (class ``wirestream.rabbitmq.<program>``)."""
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            *os.environ.get("RABBITMQ_JAVA_OPTS", "").split(),
            "-cp", classpath, f"{PACKAGE}.{program}", *args]  # fmt: skip


def _answers(program: str, code: int | None, out: bytes, err: bytes) -> list[dict[str, Any]]:
    if code != 0:
        raise AssertionError(
            f"{program} exited with {code}:\n{err.decode(errors='replace')}"
            f"\nstdout:\n{out.decode(errors='replace')}"
        )
    return [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]


def run_java(
    classpath: str, program: str, *args: str, stdin: bytes | None = None,
    timeout: float = RUN_TIMEOUT,
) -> list[dict[str, Any]]:  # fmt: skip
    """Run one program to its end; its JSON lines."""
    done = subprocess.run(java_command(classpath, program, *args), input=stdin,
                          capture_output=True, timeout=timeout, check=False)  # fmt: skip
    return _answers(program, done.returncode, done.stdout, done.stderr)


async def run_java_async(
    classpath: str, program: str, *args: str, stdin: bytes | None = None,
    timeout: float = RUN_TIMEOUT,
) -> list[dict[str, Any]]:  # fmt: skip
    """``run_java`` without blocking the event loop (our client runs beside it)."""
    process = await asyncio.create_subprocess_exec(
        *java_command(classpath, program, *args), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), timeout)
    except BaseException:
        process.kill()
        await process.wait()
        raise
    return _answers(program, process.returncode, out, err)
