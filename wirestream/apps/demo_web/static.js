// Built by esbuild from wirestream/apps/demo_web/static.ts (make demo-web). DO NOT EDIT.
"use strict";
(() => {
  // wirestream/apps/demo_web/chart.ts
  var SVG = "http://www.w3.org/2000/svg";
  var W = 540;
  var PRICE_H = 190;
  var VOL_H = 60;
  var GAP = 18;
  var LEFT = 52;
  var RIGHT = 8;
  var TOP = 6;
  var MINUTE = 6e4;
  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    if (parent !== void 0) parent.appendChild(node);
    return node;
  }
  function label(parent, x, y, content, anchor = "start") {
    el("text", { x, y, class: "axis", "text-anchor": anchor }, parent).textContent = content;
  }
  function hhmm(ms) {
    return new Date(ms).toISOString().slice(11, 16);
  }
  function bySymbol(windows) {
    const groups = /* @__PURE__ */ new Map();
    for (const w of windows) {
      const rows = groups.get(w.symbol);
      if (rows === void 0) groups.set(w.symbol, [w]);
      else rows.push(w);
    }
    for (const rows of groups.values()) rows.sort((a, b) => a.start - b.start);
    return [...groups].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  }
  function panel(symbol, rows) {
    const t0 = rows[0].start;
    const t1 = rows[rows.length - 1].start + MINUTE;
    let lo = Infinity;
    let hi = -Infinity;
    let vmax = 0;
    let trades = 0;
    for (const r of rows) {
      lo = Math.min(lo, r.low);
      hi = Math.max(hi, r.high);
      vmax = Math.max(vmax, r.volume);
      trades += r.trades;
    }
    const span = hi - lo || 1;
    vmax = vmax || 1;
    const plotW = W - LEFT - RIGHT;
    const x = (ms) => LEFT + (ms - t0) / (t1 - t0) * plotW;
    const mid = (r) => x(r.start + MINUTE / 2);
    const y = (price) => TOP + (1 - (price - lo) / span) * PRICE_H;
    const volTop = TOP + PRICE_H + GAP;
    const figure = document.createElement("figure");
    const caption = document.createElement("figcaption");
    caption.textContent = symbol;
    const detail = document.createElement("span");
    detail.textContent = `${rows.length} windows, ${trades.toLocaleString("en")} trades`;
    caption.appendChild(detail);
    figure.appendChild(caption);
    const svg = el("svg", { viewBox: `0 0 ${W} ${volTop + VOL_H + 16}`, "data-symbol": symbol });
    for (const p of [lo, (lo + hi) / 2, hi]) {
      el("line", { x1: LEFT, x2: W - RIGHT, y1: y(p), y2: y(p), class: "grid" }, svg);
      label(svg, LEFT - 4, y(p) + 3, p.toFixed(2), "end");
    }
    const point = (r, price) => `${mid(r).toFixed(2)},${y(price).toFixed(2)}`;
    const upper = rows.map((r) => point(r, r.high));
    const lower = rows.map((r) => point(r, r.low)).reverse();
    el("polygon", { class: "band", points: upper.concat(lower).join(" ") }, svg);
    el("polyline", { class: "vwap", points: rows.map((r) => point(r, r.vwap)).join(" ") }, svg);
    const barW = Math.max(1, plotW / ((t1 - t0) / MINUTE) - 1);
    for (const r of rows) {
      const h = r.volume / vmax * VOL_H;
      const bar = el("rect", {
        class: "volume",
        x: (x(r.start) + 0.5).toFixed(2),
        y: (volTop + VOL_H - h).toFixed(2),
        width: barW.toFixed(2),
        height: h.toFixed(2)
      }, svg);
      el("title", {}, bar).textContent = `${hhmm(r.start)} VWAP ${r.vwap.toFixed(4)} low ${r.low} high ${r.high} volume ${r.volume}`;
    }
    label(svg, LEFT - 4, volTop + VOL_H, "0", "end");
    label(svg, LEFT - 4, volTop + 8, vmax.toLocaleString("en"), "end");
    label(svg, LEFT, volTop + VOL_H + 13, `${hhmm(t0)} UTC`);
    label(svg, W - RIGHT, volTop + VOL_H + 13, hhmm(t1), "end");
    figure.appendChild(svg);
    return figure;
  }
  function drawChart(panels, windows) {
    panels.replaceChildren(...bySymbol(windows).map(([symbol, rows]) => panel(symbol, rows)));
    document.documentElement.dataset["drawn"] = String(windows.length);
  }

  // wirestream/apps/demo_web/static.ts
  var data = document.getElementById("windows")?.textContent ?? "[]";
  drawChart(document.getElementById("panels"), JSON.parse(data));
})();
