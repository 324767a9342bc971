"""The chart `make demo` ends with (wirestream/apps/demo_chart.py), loaded in headless
Chromium (Debian's, ``make chromium``; tests/typescript/browser.ts) and read back from
the DOM: one panel per symbol, as many VWAP points, band points and volume bars as
windows written, every VWAP inside its low..high band, nothing loaded from elsewhere.

The windows are the ticker's first 200,000 trades (the demo's data, deterministic),
windowed as the demo's Spark query does by ``windows_from_ticks``. The README's
screenshot is this page; regenerate it with

    WIRESTREAM_CHART_SCREENSHOT=docs/images/demo-chart.png \\
        .venv/bin/python -m pytest tests/project/test_demo_chart.py
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from tests.support.typescript_support import ROOT, run
from wirestream.apps.demo_chart import Window, windows_from_ticks, write_chart
from wirestream.apps.ticker import SYMBOLS, ticks

BROWSER = ROOT / "tests" / "typescript" / "dist" / "browser.js"
PROBE = Path(__file__).parent / "chart_probe.js"
TRADES = 200_000


def test_windows_from_ticks_match_the_trades() -> None:
    """The test's windows account for the trades of every closed minute (Spark's own
    windows are compared with them in tests/spark/test_demo.py)."""
    payloads = list(ticks(20_000))
    windows = windows_from_ticks(payloads)
    assert {w.symbol for w in windows} == set(SYMBOLS)
    assert all(w.low <= w.vwap <= w.high for w in windows)
    assert 0 < sum(w.trades for w in windows) < len(payloads)
    starts = sorted({w.start for w in windows})
    assert all((b - a).total_seconds() % 60 == 0 for a, b in zip(starts, starts[1:]))


def test_the_chart_draws_every_window(node: str, tmp_path: Path) -> None:
    windows: list[Window] = windows_from_ticks(ticks(TRADES))
    page = write_chart(windows, tmp_path / "windows.html", f"wirestream demo: {TRADES:,} trades")
    args = [node, str(BROWSER), str(tmp_path), page.name, "--evaluate", str(PROBE)]
    screenshot = os.environ.get("WIRESTREAM_CHART_SCREENSHOT")
    if screenshot:
        args += ["--screenshot", str(ROOT / screenshot)]
    report = json.loads(run(args, "the chart in Chromium"))
    assert report["error"] is None and report["console"] == [], report
    drawn = report["result"]
    assert drawn["external"] == [], "the chart must be self-contained"
    assert drawn["drawn"] == str(len(windows))
    per_symbol = Counter(w.symbol for w in windows)
    panels = {panel["symbol"]: panel for panel in drawn["panels"]}
    assert sorted(panels) == sorted(per_symbol)
    for symbol, count in per_symbol.items():
        panel = panels[symbol]
        assert panel["vwapPoints"] == count and panel["volumeBars"] == count, panel
        assert panel["bandPoints"] == 2 * count, panel
        assert panel["vwapInsideBand"], panel
        assert panel["vwapBox"][0] > 400 and panel["vwapBox"][1] > 10, panel  # a line, drawn
        assert panel["bandArea"] > 0, panel
    assert sum(panel["vwapPoints"] for panel in drawn["panels"]) == len(windows)
