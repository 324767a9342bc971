/**
 * The demo's chart, drawn as inline SVG: per symbol one panel, the VWAP of each one-minute
 * window as a line inside the band of its low and high, and its volume as bars underneath.
 *
 * The one drawing code of both pages (wirestream/apps/demo_chart.py): the static chart
 * `make demo` writes (static.ts, which draws the windows embedded in the file) and the
 * live page `make demo LIVE=1` serves (live.ts, which redraws as windows arrive).
 * tests/project/chart_probe.js reads back what it drew.
 */

/** One closed window, as demo_chart.py's `window_json` writes it (`start`: epoch ms). */
export interface ChartWindow {
  symbol: string;
  start: number;
  trades: number;
  volume: number;
  vwap: number;
  low: number;
  high: number;
}

const SVG = "http://www.w3.org/2000/svg";
const W = 540;
const PRICE_H = 190;
const VOL_H = 60;
const GAP = 18;
const LEFT = 52;
const RIGHT = 8;
const TOP = 6;
const MINUTE = 60_000;

function el(name: string, attrs: Record<string, string | number>, parent?: Element): SVGElement {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (parent !== undefined) parent.appendChild(node);
  return node;
}

function label(parent: Element, x: number, y: number, content: string, anchor = "start"): void {
  el("text", { x, y, class: "axis", "text-anchor": anchor }, parent).textContent = content;
}

function hhmm(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

/** The windows by symbol (symbols in order), each symbol's windows by start. */
function bySymbol(windows: readonly ChartWindow[]): [string, ChartWindow[]][] {
  const groups = new Map<string, ChartWindow[]>();
  for (const w of windows) {
    const rows = groups.get(w.symbol);
    if (rows === undefined) groups.set(w.symbol, [w]);
    else rows.push(w);
  }
  for (const rows of groups.values()) rows.sort((a, b) => a.start - b.start);
  return [...groups].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

function panel(symbol: string, rows: readonly ChartWindow[]): HTMLElement {
  const t0 = rows[0]!.start;
  const t1 = rows[rows.length - 1]!.start + MINUTE;
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
  const x = (ms: number): number => LEFT + ((ms - t0) / (t1 - t0)) * plotW;
  const mid = (r: ChartWindow): number => x(r.start + MINUTE / 2);
  const y = (price: number): number => TOP + (1 - (price - lo) / span) * PRICE_H;
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
  const point = (r: ChartWindow, price: number): string =>
    `${mid(r).toFixed(2)},${y(price).toFixed(2)}`;
  const upper = rows.map((r) => point(r, r.high));
  const lower = rows.map((r) => point(r, r.low)).reverse();
  el("polygon", { class: "band", points: upper.concat(lower).join(" ") }, svg);
  el("polyline", { class: "vwap", points: rows.map((r) => point(r, r.vwap)).join(" ") }, svg);
  const barW = Math.max(1, plotW / ((t1 - t0) / MINUTE) - 1);
  for (const r of rows) {
    const h = (r.volume / vmax) * VOL_H;
    const bar = el("rect", {
      class: "volume",
      x: (x(r.start) + 0.5).toFixed(2),
      y: (volTop + VOL_H - h).toFixed(2),
      width: barW.toFixed(2),
      height: h.toFixed(2),
    }, svg);
    el("title", {}, bar).textContent =
      `${hhmm(r.start)} VWAP ${r.vwap.toFixed(4)} low ${r.low} high ${r.high} volume ${r.volume}`;
  }
  label(svg, LEFT - 4, volTop + VOL_H, "0", "end");
  label(svg, LEFT - 4, volTop + 8, vmax.toLocaleString("en"), "end");
  label(svg, LEFT, volTop + VOL_H + 13, `${hhmm(t0)} UTC`);
  label(svg, W - RIGHT, volTop + VOL_H + 13, hhmm(t1), "end");
  figure.appendChild(svg);
  return figure;
}

/** Draw `windows` into `panels` (replacing what was there); the page's root element
 * says how many it drew (`data-drawn`), which the tests read. */
export function drawChart(panels: HTMLElement, windows: readonly ChartWindow[]): void {
  panels.replaceChildren(...bySymbol(windows).map(([symbol, rows]) => panel(symbol, rows)));
  document.documentElement.dataset["drawn"] = String(windows.length);
}
