// A web page's RSocket client: `@wirestream/rsocket`'s browser entry (its `connect` on the
// page's own WebSocket), bundled by esbuild as a web developer's page would be and run in
// headless Chromium by test_browser_rsocket.py against `wirestream rsocket serve
// --transport ws`. `index.html?url=ws://...&scenario=NAME` runs one scenario and sets
// `window.wirestreamResult` to what it saw; the test also reads the server's capture,
// which says what the page's client put on the wire.

import { connect, payload, text, type RSocketPayload, type RSocketPeer } from "@wirestream/rsocket";

declare global {
  interface Window {
    wirestreamResult?: unknown;
    wirestreamError?: string;
    /** browser.ts: tell the test `what`, resolve with its answer. */
    wirestreamSignal(what: string): Promise<string>;
  }
}

const query = new URLSearchParams(location.search);
const utf8 = new TextDecoder();

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function* numbered(from: number, to: number): AsyncGenerator<RSocketPayload> {
  for (let i = from; i < to; i++) yield payload(`item-${i}`);
}

/** `total` items in order, every one once: what the stream scenarios check as they go. */
class Tally {
  count = 0;
  inOrder = true;

  see(item: RSocketPayload): void {
    if (text(item) !== String(this.count)) this.inOrder = false;
    this.count += 1;
  }
}

const scenarios: Record<string, (rs: RSocketPeer) => Promise<unknown>> = {
  async request_response(rs) {
    const answer = await rs.requestResponse(payload("hello from chromium", "md-1"));
    const metadata = answer.metadata === null ? null : utf8.decode(answer.metadata);
    return { data: text(answer), metadata };
  },

  async request_stream(rs) {
    // 10,000 items under a limit rate of 64, read by a consumer that stops for 20 ms
    // every 1,000: the server must wait for each REQUEST_N (the test checks its capture).
    const limitRate = 64;
    const stream = rs.requestStream(payload("10000"), { limitRate });
    const tally = new Tally();
    let maxBuffered = 0;
    let pausedMs = 0;
    const started = performance.now();
    for await (const item of stream) {
      tally.see(item);
      maxBuffered = Math.max(maxBuffered, stream.buffered);
      if (tally.count % 1000 === 0) {
        const before = performance.now();
        await sleep(20);
        pausedMs += performance.now() - before;
      }
    }
    const ms = Math.round(performance.now() - started);
    return { ...tally, maxBuffered, limitRate, ms, pausedMs: Math.round(pausedMs) };
  },

  async request_channel(rs) {
    // 500 messages out (the first opens the channel, the rest go as the server grants
    // REQUEST_N), each echoed back under our own limit rate of 16.
    const echoes: string[] = [];
    const channel = rs.requestChannel(payload("item-0"), numbered(1, 500), { limitRate: 16 });
    for await (const item of channel) echoes.push(text(item));
    const expected = Array.from({ length: 500 }, (_, i) => `item-${i}`);
    return { count: echoes.length, same: echoes.join() === expected.join() };
  },

  async cancel(rs) {
    // Two endless (a million-item) streams: `break` after 5 items, an AbortSignal after 3;
    // each sends CANCEL. A request afterwards shows the connection goes on.
    const broken: string[] = [];
    for await (const item of rs.requestStream(payload("1000000"), { limitRate: 8 })) {
      broken.push(text(item));
      if (broken.length === 5) break;
    }
    const controller = new AbortController();
    const aborted: string[] = [];
    let abortError = "";
    try {
      const stream = rs.requestStream(payload("1000000"), {
        limitRate: 4,
        signal: controller.signal,
      });
      for await (const item of stream) {
        aborted.push(text(item));
        if (aborted.length === 3) controller.abort(new Error("enough"));
      }
    } catch (error) {
      abortError = (error as Error).message;
    }
    const after = text(await rs.requestResponse(payload("still-open")));
    return { broken, aborted, abortError, after, open: rs.engine.openStreams.size };
  },

  async resume(rs) {
    // 10,000 items while the test cuts the connection (its proxy resets both sockets) at
    // items 2,000 and 6,000: the signal goes out and the items keep flowing, so the cut
    // lands mid-stream; by 500 items later the test has answered (the cut is done).
    const cutAt = new Map([[2000, 2500], [6000, 6500]]);
    const tally = new Tally();
    const answers: string[] = [];
    let pending: Promise<string> | null = null;
    let waitAt = -1;
    const started = performance.now();
    for await (const item of rs.requestStream(payload("10000"), { limitRate: 256 })) {
      tally.see(item);
      if (cutAt.has(tally.count)) {
        pending = window.wirestreamSignal("cut");
        waitAt = cutAt.get(tally.count)!;
      }
      if (tally.count === waitAt) answers.push(await pending!);
    }
    const ms = Math.round(performance.now() - started);
    const after = text(await rs.requestResponse(payload("after resuming")));
    return { ...tally, answers, after, ms };
  },
};

/** Options a scenario connects with. */
const OPTIONS: Record<string, { resume?: boolean }> = { resume: { resume: true } };

async function main(): Promise<void> {
  const url = query.get("url");
  const name = query.get("scenario") ?? "";
  const scenario = scenarios[name];
  if (url === null || scenario === undefined) {
    throw new Error(`usage: ?url=ws://...&scenario=(${Object.keys(scenarios).join("|")})`);
  }
  const rs = await connect(url, { keepalive: 1_000, timeout: 10_000, ...OPTIONS[name] });
  const result = await scenario(rs);
  await rs.close();
  window.wirestreamResult = result;
}

main().catch((error: unknown) => {
  window.wirestreamError = error instanceof Error ? (error.stack ?? error.message) : String(error);
});
