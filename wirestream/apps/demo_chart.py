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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

__all__ = ["Window", "render_chart", "windows_from_rows", "windows_from_ticks", "write_chart"]


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


def render_chart(windows: Sequence[Window], title: str) -> str:
    """The page: the windows as JSON in the page, drawn by its inline script."""
    data = [{"symbol": w.symbol, "start": int(w.start.timestamp() * 1000), "trades": w.trades,
             "volume": w.volume, "vwap": round(w.vwap, 6), "low": w.low, "high": w.high}
            for w in windows]  # fmt: skip
    # JSON inside <script>: "</" would end the element, so it is escaped.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE.replace("{{title}}", html.escape(title)).replace("{{windows}}", payload)


def write_chart(windows: Sequence[Window], path: Path, title: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_chart(windows, title), encoding="utf-8")
    return path


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{title}}</title>
<link rel="icon" href="data:,">
<style>
  body { font: 13px/1.4 "DejaVu Sans", system-ui, sans-serif; margin: 24px; color: #222;
         background: #fff; }
  h1 { font-size: 18px; margin: 0 0 4px; }
  p.note { margin: 0 0 16px; color: #666; }
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
<div class="panels" id="panels"></div>
<script type="application/json" id="windows">{{windows}}</script>
<script>
"use strict";
(() => {
  const SVG = "http://www.w3.org/2000/svg";
  const W = 540, PRICE_H = 190, VOL_H = 60, GAP = 18, LEFT = 52, RIGHT = 8, TOP = 6;
  const windows = JSON.parse(document.getElementById("windows").textContent);
  const bySymbol = new Map();
  for (const w of windows) {
    if (!bySymbol.has(w.symbol)) bySymbol.set(w.symbol, []);
    bySymbol.get(w.symbol).push(w);
  }
  const el = (name, attrs, parent) => {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  };
  const text = (parent, x, y, content, anchor) => {
    el("text", { x, y, class: "axis", "text-anchor": anchor || "start" }, parent).textContent = content;
  };
  const hhmm = (ms) => new Date(ms).toISOString().slice(11, 16);
  const minute = 60000;
  const panels = document.getElementById("panels");
  for (const [symbol, rows] of [...bySymbol].sort((a, b) => a[0] < b[0] ? -1 : 1)) {
    rows.sort((a, b) => a.start - b.start);
    const t0 = rows[0].start, t1 = rows[rows.length - 1].start + minute;
    const lo = Math.min(...rows.map((r) => r.low)), hi = Math.max(...rows.map((r) => r.high));
    const span = hi - lo || 1;
    const vmax = Math.max(...rows.map((r) => r.volume)) || 1;
    const plotW = W - LEFT - RIGHT;
    const x = (ms) => LEFT + ((ms - t0) / (t1 - t0)) * plotW;
    const mid = (r) => x(r.start + minute / 2);
    const y = (price) => TOP + (1 - (price - lo) / span) * PRICE_H;
    const volTop = TOP + PRICE_H + GAP;
    const figure = document.createElement("figure");
    const caption = document.createElement("figcaption");
    const trades = rows.reduce((n, r) => n + r.trades, 0);
    caption.textContent = symbol;
    const detail = document.createElement("span");
    detail.textContent = `${rows.length} windows, ${trades.toLocaleString("en")} trades`;
    caption.appendChild(detail);
    figure.appendChild(caption);
    const svg = el("svg", { viewBox: `0 0 ${W} ${volTop + VOL_H + 16}`, "data-symbol": symbol });
    for (const p of [lo, (lo + hi) / 2, hi]) {
      el("line", { x1: LEFT, x2: W - RIGHT, y1: y(p), y2: y(p), class: "grid" }, svg);
      text(svg, LEFT - 4, y(p) + 3, p.toFixed(2), "end");
    }
    const upper = rows.map((r) => `${mid(r).toFixed(2)},${y(r.high).toFixed(2)}`);
    const lower = rows.map((r) => `${mid(r).toFixed(2)},${y(r.low).toFixed(2)}`).reverse();
    el("polygon", { class: "band", points: upper.concat(lower).join(" ") }, svg);
    el("polyline", { class: "vwap",
                     points: rows.map((r) => `${mid(r).toFixed(2)},${y(r.vwap).toFixed(2)}`).join(" ") }, svg);
    const barW = Math.max(1, plotW / ((t1 - t0) / minute) - 1);
    for (const r of rows) {
      const h = (r.volume / vmax) * VOL_H;
      el("rect", { class: "volume", x: (x(r.start) + 0.5).toFixed(2), y: (volTop + VOL_H - h).toFixed(2),
                   width: barW.toFixed(2), height: h.toFixed(2) }, svg)
        .appendChild(document.createElementNS(SVG, "title")).textContent =
          `${hhmm(r.start)} VWAP ${r.vwap.toFixed(4)} low ${r.low} high ${r.high} volume ${r.volume}`;
    }
    text(svg, LEFT - 4, volTop + VOL_H, "0", "end");
    text(svg, LEFT - 4, volTop + 8, vmax.toLocaleString("en"), "end");
    text(svg, LEFT, volTop + VOL_H + 13, `${hhmm(t0)} UTC`);
    text(svg, W - RIGHT, volTop + VOL_H + 13, hhmm(t1), "end");
    figure.appendChild(svg);
    panels.appendChild(figure);
  }
  document.documentElement.dataset.drawn = String(windows.length);
})();
</script>
</body>
</html>
"""
