/**
 * The live chart's script (`make demo LIVE=1` serves it, demo_live.py): the windows Spark
 * closes, read over RSocket-over-WebSocket from the demo's feed (`@wirestream/rsocket`,
 * its browser entry) and drawn as they come, by the static chart's own code (chart.ts).
 *
 * The feed is a request-stream; each item is JSON `{"windows": [...], "total": n,
 * "final": bool}`: the windows closed since the previous item (`total`: how many the
 * demo has published so far; `final`: its query has ended, the stream completes). The
 * page asks for a few items at a time and asks for more only as it has drawn what it
 * got (request-n follows consumption): a page that falls behind slows nobody down, and
 * the windows it missed arrive together in its next items.
 *
 * The page's root element says what it did, for a person and for the tests: `data-drawn`
 * (windows drawn), `data-updates` (items drawn), `data-state` (`live`, then `final` when
 * the demo's query has ended, or `closed` with the reason when the feed went away).
 */

import { connect, payload, text } from "@wirestream/rsocket";

import { drawChart, type ChartWindow } from "./chart.js";

interface FeedItem {
  windows: ChartWindow[];
  total: number;
  final: boolean;
}

/** Items asked for at a time: few, so a slow page holds little unread. */
const LIMIT_RATE = 4;

const root = document.documentElement;
const panels = document.getElementById("panels")!;
const status = document.getElementById("status")!;

function say(state: string, message: string): void {
  root.dataset["state"] = state;
  status.textContent = message;
}

async function follow(feed: string): Promise<void> {
  const windows = new Map<string, ChartWindow>();
  let updates = 0;
  say("connecting", `connecting to ${feed}`);
  const rs = await connect(feed);
  try {
    say("live", "live: waiting for Spark to close the first windows");
    for await (const item of rs.requestStream(payload("windows"), { limitRate: LIMIT_RATE })) {
      const update = JSON.parse(text(item)) as FeedItem;
      for (const w of update.windows) windows.set(`${w.symbol} ${w.start}`, w);
      updates += 1;
      drawChart(panels, [...windows.values()]);
      root.dataset["updates"] = String(updates);
      if (update.final) {
        say("final", `the demo's query has ended: ${windows.size} windows`);
      } else {
        const times = updates === 1 ? "1 update" : `${updates} updates`;
        say("live", `live: ${windows.size} windows so far (${times})`);
      }
    }
  } finally {
    await rs.close();
  }
}

const feed = root.dataset["feed"];
if (feed === undefined) {
  say("closed", "this page has no feed (data-feed): open it from `make demo LIVE=1`");
} else {
  follow(feed).catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    say("closed", `the feed has closed (the demo has stopped?): ${reason}`);
  });
}
