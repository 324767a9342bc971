"""RSocket in a real browser: `@wirestream/rsocket`'s browser entry in headless Chromium.

A page (pages/rsocket_ws.ts) imports ``connect`` from ``@wirestream/rsocket`` as a web
developer would, is bundled by the pinned esbuild and runs in Debian's Chromium
(``make chromium``; driven by ``browser.ts``) over the browser's own WebSocket against
the Python server as a user starts it: ``wirestream rsocket serve --transport ws``. Each
test runs one scenario of the page; the page reports what its client saw, and the
server's ``--capture`` says what that client put on the wire and what the server did
(tests/support/rsocket_capture.py): credit honoured both ways, CANCEL read, RESUME
answered. Every wait is bounded (the page's by browser.ts, the processes' here).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.aio_support import run as run_async
from tests.support.rsocket_capture import (
    Seen,
    credit_excess,
    grants,
    items,
    read_capture,
    sent_after_cancel,
)
from tests.support.tcp_proxy import TcpProxy
from tests.support.typescript_support import ROOT, run
from wirestream.generated.rsocket.v1_0 import Resume, ResumeOk, Setup

PAGE = ROOT / "tests" / "typescript" / "pages" / "rsocket_ws.ts"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
BROWSER = ROOT / "tests" / "typescript" / "dist" / "browser.js"
STEP = 90.0  # seconds for a Chromium run or a server's start (a busy 2-core machine)


@pytest.fixture(scope="module")
def page(node: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with index.html and the page bundled for the browser (no Node module)."""
    folder = tmp_path_factory.mktemp("page")
    run([str(ESBUILD), str(PAGE), "--bundle", "--format=esm", "--platform=browser",
         f"--outfile={folder / 'page.js'}"], "esbuild pages/rsocket_ws.ts")  # fmt: skip
    (folder / "index.html").write_text(
        '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">'
        '<script type="module" src="page.js"></script>\n'
    )
    return folder


class Served:
    """``wirestream rsocket serve --transport ws --capture``: its port; ``stop()`` ends it
    (SIGTERM: it closes every connection and its capture) and returns what it captured."""

    def __init__(self, process: subprocess.Popen[str], port: int, capture: Path) -> None:
        self.process = process
        self.port = port
        self.capture = capture

    def stop(self) -> list[Seen]:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STEP)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        assert self.process.returncode == 0, self.process.returncode
        return read_capture(self.capture)


@contextmanager
def serving(tmp_path: Path, *options: str) -> Iterator[Served]:
    capture = tmp_path / "served.wscap"
    process = subprocess.Popen(
        [sys.executable, "-m", "wirestream", "rsocket", "serve", "--transport", "ws",
         "--host", "127.0.0.1", "--port", "0", "--capture", str(capture), *options],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the server's first act: bounded by its start
        found = re.search(r"listening on ws://[^\s]*:(\d+)", line)
        assert found is not None, f"the server did not say where it listens: {line!r}"
        yield Served(process, int(found.group(1)), capture)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def in_chromium(node: str, page: Path, port: int, scenario: str) -> Any:
    """Run ``scenario`` of the page against ws://127.0.0.1:``port``; what it reported."""
    url = f"index.html?url=ws://127.0.0.1:{port}&scenario={scenario}"
    report = json.loads(run([node, str(BROWSER), str(page), url], f"Chromium: {scenario}"))
    assert report["error"] is None and report["console"] == [], report
    return report["result"]


def test_request_response_from_chromium_echoes_data_and_metadata(
    node: str, page: Path, tmp_path: Path
) -> None:
    with serving(tmp_path) as server:
        result = in_chromium(node, page, server.port, "request_response")
        seen = server.stop()
    assert result == {"data": "hello from chromium", "metadata": "md-1"}
    setup = seen[0].frame
    assert isinstance(setup, Setup) and setup.keepalive_interval == 1_000


def test_chromium_stream_of_10000_never_outruns_the_credit_its_consumer_granted(
    node: str, page: Path, tmp_path: Path
) -> None:
    """10,000 items in order under limitRate 64 with a consumer that pauses: the page
    never held more than 64 unread, the server never sent an item beyond the credit
    read from the page, and the page granted credit as it consumed (REQUEST_N of at most
    64 at a time, not all of it up front)."""
    with serving(tmp_path) as server:
        result = in_chromium(node, page, server.port, "request_stream")
        seen = server.stop()
    assert (result["count"], result["inOrder"]) == (10_000, True)
    assert 0 < result["maxBuffered"] <= result["limitRate"] == 64
    sent = items(seen, 1, "server")
    assert sent == [b"%d" % i for i in range(10_000)]
    assert credit_excess(seen, 1, "server") <= 0
    granted = grants(seen, 1, "server")
    assert granted[0] == 64 and max(granted) <= 64 and sum(granted) >= 10_000
    assert len(granted) >= 10_000 // 64
    print(f"\nChromium: 10,000 items in {result['ms']} ms ({result['pausedMs']} ms paused)")


def test_chromium_channel_echoes_500_messages_each_side_within_its_credit(
    node: str, page: Path, tmp_path: Path
) -> None:
    """The page's 500 messages come back in order; the page sent its messages only as
    the server granted them, and the server its echoes only as the page did."""
    with serving(tmp_path) as server:
        result = in_chromium(node, page, server.port, "request_channel")
        seen = server.stop()
    assert result == {"count": 500, "same": True}
    assert len(items(seen, 1, "client")) == 499  # the first went in REQUEST_CHANNEL
    assert credit_excess(seen, 1, "client") <= 0
    assert credit_excess(seen, 1, "server") <= 0
    assert len(grants(seen, 1, "client")) >= 2  # the page had to wait for more credit


def test_chromium_break_and_abort_signal_send_cancel_and_the_server_stops(
    node: str, page: Path, tmp_path: Path
) -> None:
    """``break`` out of ``for await`` and an AbortSignal each cancel a million-item
    stream: the server read a CANCEL for each and sent nothing on it afterwards; the
    connection goes on."""
    with serving(tmp_path) as server:
        result = in_chromium(node, page, server.port, "cancel")
        seen = server.stop()
    assert result == {
        "broken": ["0", "1", "2", "3", "4"],
        "aborted": ["0", "1", "2"],
        "abortError": "enough",
        "after": "still-open",
        "open": 0,
    }
    for stream_id in (1, 3):
        assert sent_after_cancel(seen, stream_id) == [], stream_id
        assert credit_excess(seen, stream_id, "server") <= 0
        assert len(items(seen, stream_id, "server")) < 100


def test_chromium_resumes_after_the_server_side_cuts_and_loses_nothing(
    node: str, page: Path, tmp_path: Path
) -> None:
    """Resuming Operation: the page connects with ``resume: true`` through a proxy that
    resets both sockets twice during a 10,000-item stream (whatever is in flight is
    lost). The browser's WebSocket dials again, the server (``--resume``) answers each
    RESUME with the SETUP's token by RESUME_OK, and every item arrives once, in order."""
    with serving(tmp_path, "--resume") as server:
        result, accepted = run_async(resume_through_cuts(node, page, server.port), 2 * STEP)
        seen = server.stop()
    assert (result["count"], result["inOrder"]) == (10_000, True)
    assert result["answers"] == ["cut 1", "cut 1"]  # one live connection at each cut
    assert result["after"] == "after resuming"
    assert accepted == 3  # the first connection and one per resumption
    connections = list(dict.fromkeys(s.connection for s in seen))
    assert len(connections) == 3
    firsts = [[s.frame for s in seen if s.connection == c][:2] for c in connections]
    setup = firsts[0][0]
    assert isinstance(setup, Setup) and setup.resume_token is not None
    for resume, answer in firsts[1:]:
        assert isinstance(resume, Resume) and resume.resume_token == setup.resume_token
        assert isinstance(answer, ResumeOk)
    again = len(items(seen, 1, "server")) - 10_000
    print(f"\nChromium: resumed twice, 10,000 items in {result['ms']} ms, {again} resent")


async def resume_through_cuts(node: str, page: Path, port: int) -> tuple[Any, int]:
    """Chromium through a TcpProxy to the server: each ``cut`` signal of the page resets
    the proxied connections and is answered with how many there were. The report and
    how many connections the proxy accepted."""
    async with TcpProxy(port) as proxy:
        url = f"index.html?url=ws://127.0.0.1:{proxy.port}&scenario=resume"
        browser = await asyncio.create_subprocess_exec(
            node, str(BROWSER), str(page), url, cwd=ROOT,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert browser.stdin and browser.stdout and browser.stderr
        try:
            while True:
                out = await asyncio.wait_for(browser.stdout.readline(), STEP)
                if not out:  # it ended without a report
                    err = await asyncio.wait_for(browser.stderr.read(), STEP)
                    raise AssertionError(f"browser.js printed no report:\n{err.decode()}")
                line = json.loads(out)
                if line.get("signal") != "cut":
                    break
                browser.stdin.write(f"cut {proxy.cut()}\n".encode())
                await browser.stdin.drain()
            await asyncio.wait_for(browser.wait(), STEP)
        finally:
            if browser.returncode is None:
                browser.kill()
                await browser.wait()
        assert line["error"] is None and line["console"] == [], line
        return line["result"], proxy.accepted
