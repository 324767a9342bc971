"""The chart `make demo` ends with: its windows as one self-contained HTML page.

Per symbol, one panel: the VWAP of each one-minute window as a line inside the band of
its low and high, and the window's volume as bars underneath. Everything is in the file
(the windows as JSON, the script that draws them as inline SVG, the styles): no CDN, no
server, it opens from disk. ``make demo`` writes it next to its Parquet output
(``out/demo/<source>/windows.html``) and prints its path; tests/project/test_demo_chart.py
loads it in headless Chromium and counts what it drew.
"""

from __future__ import annotations

import datetime
import html
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from wirestream.apps.demo_web import script

__all__ = [
    "Window",
    "render_chart",
    "render_live_page",
    "window_json",
    "windows_from_rows",
    "windows_from_ticks",
    "write_chart",
]


@dataclass(frozen=True, slots=True)
class Window:
    """One closed one-minute window of one symbol, as the demo's Parquet holds it."""

    symbol: str
    start: datetime.datetime
    trades: int
    volume: int
    vwap: float
    low: float
    high: float


def windows_from_rows(rows: Iterable[Any]) -> list[Window]:
    """The demo's Parquet rows (Spark ``Row``s: window_start, symbol, trades, volume,
    vwap, low, high), by symbol and time; Spark's naive local times made UTC."""
    found = [Window(row.symbol, row.window_start.astimezone(datetime.timezone.utc),
                    int(row.trades), int(row.volume), float(row.vwap), float(row.low),
                    float(row.high)) for row in rows]  # fmt: skip
    return sorted(found, key=lambda w: (w.symbol, w.start))


def windows_from_ticks(payloads: Iterable[bytes], watermark: float = 10.0) -> list[Window]:
    """The windows the demo's Spark query makes of the ticker's msgpack trades, computed
    here (one minute per symbol by event time; a window counts once the final watermark,
    the latest event time less ``watermark`` seconds, has passed its end): the chart
    test's data with no Spark to start. tests/spark/test_demo.py checks it against
    Spark's."""
    sums: dict[tuple[str, datetime.datetime], list[float]] = {}
    latest: datetime.datetime | None = None
    for payload in payloads:
        tick = msgpack.unpackb(payload, timestamp=3)
        ts = tick["ts"]
        latest = ts if latest is None else max(latest, ts)
        start = ts.replace(second=0, microsecond=0)
        qty, price = tick["qty"], tick["price"]
        acc = sums.setdefault((tick["symbol"], start), [0, 0, 0.0, price, price])
        acc[0] += 1
        acc[1] += qty
        acc[2] += price * qty
        acc[3] = min(acc[3], price)
        acc[4] = max(acc[4], price)
    if latest is None:
        return []
    closed = latest - datetime.timedelta(seconds=watermark)
    minute = datetime.timedelta(minutes=1)
    return sorted(
        (Window(symbol, start, int(a[0]), int(a[1]), a[2] / a[1], a[3], a[4])
         for (symbol, start), a in sums.items() if start + minute <= closed),
        key=lambda w: (w.symbol, w.start),
    )  # fmt: skip


def window_json(window: Window) -> dict[str, Any]:
    """A window as both pages' script reads it (chart.ts ``ChartWindow``): ``start`` in
    epoch milliseconds, VWAP rounded to 6 places."""
    return {"symbol": window.symbol, "start": int(window.start.timestamp() * 1000),
            "trades": window.trades, "volume": window.volume, "vwap": round(window.vwap, 6),
            "low": window.low, "high": window.high}  # fmt: skip


def render_chart(windows: Sequence[Window], title: str) -> str:
    """The static page: the windows as JSON in the page, drawn by its inline script
    (demo_web/static.js, built from chart.ts: the live page's drawing code too)."""
    return _page(title, [window_json(w) for w in windows], "static.js", feed=None)


def render_live_page(title: str, feed: str) -> str:
    """The live page (demo_live.py serves it): no windows yet, the feed's WebSocket URL
    on its root element, and the script that follows the feed and draws what arrives
    (demo_web/live.js: chart.ts's drawing and ``@wirestream/rsocket``'s client)."""
    return _page(title, [], "live.js", feed=feed)


def write_chart(windows: Sequence[Window], path: Path, title: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_chart(windows, title), encoding="utf-8")
    return path


def _page(title: str, data: list[dict[str, Any]], bundle: str, feed: str | None) -> str:
    # JSON inside <script>: "</" would end the element, so it is escaped.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    root = "" if feed is None else f' data-feed="{html.escape(feed)}"'
    # One pass, so nothing a value holds is read as a placeholder.
    values = {"title": html.escape(title), "windows": payload, "script": script(bundle),
              "feed": root}  # fmt: skip
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values[m.group(1)], _PAGE)


_PAGE = """<!doctype html>
<html lang="en"{{feed}}>
<head>
<meta charset="utf-8">
<title>{{title}}</title>
<link rel="icon" href="data:,">
<style>
  body { font: 13px/1.4 "DejaVu Sans", system-ui, sans-serif; margin: 24px; color: #222;
         background: #fff; }
  h1 { font-size: 18px; margin: 0 0 4px; }
  p.note { margin: 0 0 16px; color: #666; }
  p.note:empty { display: none; }
  .panels { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr));
            gap: 16px; }
  figure { margin: 0; border: 1px solid #ddd; border-radius: 4px; padding: 8px; }
  figcaption { font-weight: bold; margin-bottom: 4px; }
  figcaption span { font-weight: normal; color: #666; margin-left: 8px; }
  svg { display: block; width: 100%; height: auto; }
  .band { fill: #9ecae1; fill-opacity: 0.45; stroke: none; }
  .vwap { fill: none; stroke: #08519c; stroke-width: 1.5; }
  .volume { fill: #bdbdbd; }
  .axis { fill: #666; font-size: 10px; }
  .grid { stroke: #eee; }
  .legend .band-key { fill: #9ecae1; fill-opacity: 0.45; }
  .legend .vwap-key { stroke: #08519c; stroke-width: 2; }
  .legend .volume-key { fill: #bdbdbd; }
</style>
</head>
<body>
<h1>{{title}}</h1>
<p class="note">One-minute event-time windows per symbol:
<svg class="legend" width="420" height="14" style="display:inline;vertical-align:middle">
<line class="vwap-key" x1="0" y1="7" x2="18" y2="7"/><text x="22" y="11">VWAP</text>
<rect class="band-key" x="64" y="1" width="18" height="12"/><text x="86" y="11">low..high</text>
<rect class="volume-key" x="158" y="1" width="18" height="12"/><text x="180" y="11">volume</text>
</svg></p>
<p class="note" id="status"></p>
<div class="panels" id="panels"></div>
<script type="application/json" id="windows">{{windows}}</script>
<script>
{{script}}</script>
</body>
</html>
"""
