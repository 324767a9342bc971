"""`make demo LIVE=1` (wirestream/apps/demo_live.py): the demo's windows drawn live in
headless Chromium (Debian's, ``make chromium``; tests/typescript/browser.ts), fed over
RSocket-over-WebSocket to the page's ``@wirestream/rsocket`` client.

- The feed's rules, on its iterator (the runtime pulls it only under the page's credit):
  a subscriber that does not ask gets nothing and holds nothing; when it asks again it
  gets everything it missed, in items of at most ``chunk`` windows; a history that
  overflowed resumes it at its oldest window; ``finish`` ends every stream with ``final``.
- The page, against the feed served in this process: it draws every window published,
  over several updates, with the static chart's drawing (chart_probe.js reads both).
- The demo itself (a subprocess, Spark and all, as ``make demo LIVE=1`` starts it): the
  page loaded while Spark runs draws exactly the windows written to Parquet (the static
  chart's), and SIGINT ends the demo within a deadline with nothing left running.
- The committed bundles are what their TypeScript sources build.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.aio_support import run as run_async
from tests.support.typescript_support import ROOT, run
from wirestream.apps import demo_web
from wirestream.apps.demo_chart import Window, windows_from_ticks
from wirestream.apps.demo_live import LiveChart, WindowFeed
from wirestream.apps.ticker import ticks
from wirestream.runtime.spark.background import BackgroundLoop

BROWSER = ROOT / "tests" / "typescript" / "dist" / "browser.js"
PROBE = Path(__file__).parent / "chart_probe.js"
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
STOP_DEADLINE = 45.0  # seconds from SIGINT to the demo's exit (its own deadline is 30)


def test_the_committed_page_scripts_are_built_from_their_sources(node: str, tmp_path: Path) -> None:
    """Like generated code: `make demo-web` must have been run after any change to
    demo_web/*.ts or the @wirestream packages the live page bundles."""
    for built in demo_web.bundle(ESBUILD, tmp_path):
        committed = demo_web.FOLDER / built.name
        assert committed.read_bytes() == built.read_bytes(), f"{built.name} is stale: make demo-web"


# ---------------------------------------------------------------- the feed's rules


def items(feed: WindowFeed) -> AsyncIterator[dict[str, Any]]:
    async def decoded() -> AsyncIterator[dict[str, Any]]:
        async for item in feed.follow():
            yield json.loads(item)

    return decoded()


def windows(first: int, count: int) -> list[dict[str, Any]]:
    return [{"symbol": "ACME", "start": 60_000 * i} for i in range(first, first + count)]


def starts(item: dict[str, Any]) -> list[int]:
    return [w["start"] // 60_000 for w in item["windows"]]


def test_a_subscriber_that_falls_behind_gets_what_it_missed_when_it_asks() -> None:
    async def scenario() -> None:
        feed = WindowFeed(chunk=4)
        follower = items(feed)
        feed.publish(windows(0, 2))
        first = await follower.__anext__()
        assert starts(first) == [0, 1] and first["total"] == 2 and not first["final"]
        # It asks for nothing while three batches are published: publishing never waits.
        for n in range(3):
            feed.publish(windows(2 + 3 * n, 3))
        # It asks again: everything it missed, in items of at most `chunk` windows.
        caught_up = [await follower.__anext__() for _ in range(3)]
        assert [starts(item) for item in caught_up] == [[2, 3, 4, 5], [6, 7, 8, 9], [10]]
        assert {item["total"] for item in caught_up} == {11}
        # Up to date: the next item waits for news.
        pending = asyncio.ensure_future(follower.__anext__())
        await asyncio.sleep(0.05)
        assert not pending.done()
        feed.finish()
        last = await pending
        assert last == {"windows": [], "total": 11, "final": True}
        with pytest.raises(StopAsyncIteration):
            await follower.__anext__()

    run_async(scenario())


def test_a_subscriber_behind_an_overflowed_history_resumes_at_its_oldest_window() -> None:
    async def scenario() -> None:
        feed = WindowFeed(max_history=5, chunk=100)
        follower = items(feed)
        feed.publish(windows(0, 1))
        assert starts(await follower.__anext__()) == [0]
        feed.publish(windows(1, 8))  # 9 published, the 5 latest kept
        item = await follower.__anext__()
        assert starts(item) == [4, 5, 6, 7, 8] and item["total"] == 9

    run_async(scenario())


def test_a_page_connecting_after_the_end_gets_the_history_and_final_at_once() -> None:
    async def scenario() -> None:
        feed = WindowFeed(chunk=3)
        feed.publish(windows(0, 5))
        feed.finish()
        seen = [item async for item in items(feed)]
        assert [starts(item) for item in seen] == [[0, 1, 2], [3, 4]]
        assert [item["final"] for item in seen] == [False, True]

    run_async(scenario())


# ---------------------------------------------------------------- the page


def live_probe(tmp_path: Path) -> Path:
    """chart_probe.js (what the static chart's test reads) once the live page has
    drawn its final update, with the page's state and update count."""
    probe = tmp_path / "live_probe.js"
    probe.write_text(
        "(async () => {\n"
        "  const root = document.documentElement;\n"
        "  const deadline = Date.now() + 240000;\n"
        '  while (!["final", "closed"].includes(root.dataset.state) && Date.now() < deadline)\n'
        "    await new Promise((resolve) => setTimeout(resolve, 100));\n"
        f"  const drawn = {PROBE.read_text().strip()};\n"
        "  const status = document.getElementById('status').textContent;\n"
        "  return { ...drawn, state: root.dataset.state ?? null, status,\n"
        "           updates: Number(root.dataset.updates ?? 0) };\n"
        "})()\n"
    )
    return probe


def in_chromium(node: str, url: str, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [node, str(BROWSER), str(tmp_path), url, "--evaluate", str(live_probe(tmp_path))],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "WIRESTREAM_BROWSER_TIMEOUT_MS": "300000"},
    )  # fmt: skip


def report_of(browser: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    try:
        out, err = browser.communicate(timeout=timeout)
    finally:
        if browser.poll() is None:
            browser.kill()
            browser.wait()
    lines = out.strip().splitlines()
    assert lines, f"Chromium reported nothing (exit {browser.returncode}): {err}"
    report: dict[str, Any] = json.loads(lines[-1])
    assert report["error"] is None and report["console"] == [], report
    result: dict[str, Any] = report["result"]
    return result


def assert_draws(drawn: dict[str, Any], windows: list[Window]) -> None:
    """The page drew exactly ``windows``: per symbol as many VWAP points, band points and
    volume bars (the static chart's test's checks)."""
    assert drawn["external"] == [], "the page must be self-contained"
    assert drawn["drawn"] == str(len(windows))
    per_symbol = Counter(w.symbol for w in windows)
    panels = {panel["symbol"]: panel for panel in drawn["panels"]}
    assert sorted(panels) == sorted(per_symbol)
    for symbol, count in per_symbol.items():
        panel = panels[symbol]
        assert panel["vwapPoints"] == count and panel["volumeBars"] == count, panel
        assert panel["bandPoints"] == 2 * count, panel
        assert panel["vwapInsideBand"], panel


def test_the_live_page_draws_every_window_the_feed_publishes(node: str, tmp_path: Path) -> None:
    """The page in Chromium against the feed served here; the windows are published in
    four batches once it follows them (as the demo publishes each micro-batch's)."""
    every = windows_from_ticks(ticks(40_000))
    background = BackgroundLoop("live chart test")
    chart = LiveChart(background, "live chart test")
    try:
        browser = in_chromium(node, chart.url, tmp_path)
        deadline = time.monotonic() + 90
        while chart.followers == 0 and browser.poll() is None:
            assert time.monotonic() < deadline, "the page never followed the feed"
            time.sleep(0.1)
        quarter = len(every) // 4 + 1
        for n in range(4):
            time.sleep(0.5)  # the page draws each batch as it arrives
            assert chart.publish(every[: quarter * (n + 1)]) == len(every[quarter * n : quarter * (n + 1)])  # fmt: skip
        chart.finish()
        drawn = report_of(browser, 120)
    finally:
        chart.close()
        background.close()
    assert drawn["state"] == "final", drawn["status"]
    assert drawn["updates"] >= 2, drawn  # it drew as the windows came
    assert_draws(drawn, every)


# ---------------------------------------------------------------- the demo


class Demo:
    """``python -m wirestream.apps.demo --live`` (what ``make demo LIVE=1`` runs) on a
    small run, in a process group of its own (what is left of it is findable); its
    output is read as it comes (``wait_for``)."""

    def __init__(self, out: Path, ticks: int = 30_000, batch: int = 6_000) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "wirestream.apps.demo", "--live", "--ticks", str(ticks),
             "--batch", str(batch), "--out", str(out), "--timeout", "400"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._news = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._news:
                self.lines.append(line)
                self._news.notify_all()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._news:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found
                left = deadline - time.monotonic()
                assert left > 0 and self.process.poll() is None, f"no {pattern!r}: {self.output}"
                self._news.wait(min(left, 1.0))

    def interrupt(self) -> int:
        """SIGINT (Ctrl-C); the exit code, once the demo and every process of its group
        have ended, within STOP_DEADLINE (Spark's JVM ends before the demo returns, its
        Python workers as the JVM's pipes close)."""
        started = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(STOP_DEADLINE)
        while left_of(self.process.pid) and time.monotonic() - started < STOP_DEADLINE:
            time.sleep(0.2)
        assert left_of(self.process.pid) == [], self.output
        return code

    def kill(self) -> None:
        """Whatever is left of it (a failed test's cleanup)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def test_make_demo_live_draws_every_window_written_and_stops_on_ctrl_c(
    node: str, tmp_path: Path
) -> None:
    """The page, loaded as soon as the demo prints its URL (before Spark is up), draws
    the windows the demo wrote (the static chart's, read from Parquet by Spark), and the
    demo serves it on until SIGINT (Ctrl-C), which ends it with nothing left running."""
    demo = Demo(tmp_path / "out")
    try:
        url = demo.wait_for(r"live chart: (http://\S+)", 120).group(1)
        drawn = report_of(in_chromium(node, url, tmp_path), 480)
        demo.wait_for(r"the live chart stays at", 60)
        # While it serves the page, Spark (its JVM, their Python workers) has gone.
        deadline = time.monotonic() + STOP_DEADLINE
        while len(left_of(demo.process.pid)) > 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(left_of(demo.process.pid)) == 1, left_of(demo.process.pid)
        code = demo.interrupt()
    finally:
        demo.kill()
    assert code == 0, demo.output  # the run had ended: Ctrl-C only stopped the page's servers
    written = static_windows(tmp_path / "out" / "rsocket" / "windows.html")
    assert written, demo.output
    assert drawn["state"] == "final", (drawn["status"], demo.output)
    assert_draws(drawn, written)


def test_ctrl_c_while_spark_runs_stops_the_demo_cleanly(tmp_path: Path) -> None:
    """SIGINT mid-run (after the first micro-batch): the query is stopped, the servers
    and Spark closed, the demo exits 130 in time, nothing of it left running.  Thirty
    batches to go: the run is still going when the signal lands."""
    demo = Demo(tmp_path / "out", ticks=300_000, batch=10_000)
    try:
        demo.wait_for(r"batch +\d+: +[1-9][\d,]* trades", 300)
        code = demo.interrupt()
    finally:
        demo.kill()
    assert code == 130, demo.output
    assert "stopped (Ctrl-C)" in demo.output, demo.output


INTERRUPTED = """
import os, signal, sys, time
from wirestream.apps.demo import Interrupts
interrupts = Interrupts(deadline=float(sys.argv[1]))
print("ready", flush=True)
interrupts.stop.wait(60)  # the first Ctrl-C: a stop that never finishes
print("stopping", flush=True)
time.sleep(60)
print("not ended", flush=True)
"""


@pytest.mark.parametrize("how", ["a second Ctrl-C", "the deadline"])
def test_a_stop_that_hangs_is_ended_by_a_second_ctrl_c_or_the_deadline(how: str) -> None:
    """The demo's Ctrl-C handling (``Interrupts``) on a stop that never ends: the first
    SIGINT only asks to stop; a second one ends the process at once, and without one the
    deadline does (1 s here), both with exit code 130."""
    deadline = "1" if how == "the deadline" else "60"
    process = subprocess.Popen([sys.executable, "-c", INTERRUPTED, deadline], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        process.send_signal(signal.SIGINT)
        said = [process.stdout.readline() for _ in range(3)]  # the handler's note first
        assert said[-1] == "stopping\n", said
        started = time.monotonic()
        if how == "a second Ctrl-C":
            process.send_signal(signal.SIGINT)
        code = process.wait(30)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert code == 130
    assert took < 20, took
    assert process.stdout.read() == ""  # it never got past the hang
    why = "a second Ctrl-C" if how == "a second Ctrl-C" else "still stopping after 1 s"
    assert f"{why}: exiting now" in process.stderr.read()


def left_of(group: int) -> list[str]:
    """Processes still in the process group ``group`` (the demo's: Spark's JVM, its
    Python workers): their command lines."""
    left = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:
                left.append((stat.parent / "cmdline").read_text().replace("\0", " ")[:200])
        except (OSError, IndexError, ValueError):
            continue  # it ended while being read
    return left


def static_windows(page: Path) -> list[Window]:
    """The windows the static chart holds: what the demo read back from its Parquet."""
    import datetime

    found = re.search(r'<script type="application/json" id="windows">(.*?)</script>', page.read_text())  # fmt: skip
    assert found is not None
    utc = datetime.timezone.utc
    return [Window(w["symbol"], datetime.datetime.fromtimestamp(w["start"] / 1000, utc),
                   w["trades"], w["volume"], w["vwap"], w["low"], w["high"])
            for w in json.loads(found.group(1))]  # fmt: skip
