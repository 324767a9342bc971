// One scenario of the TypeScript RSocket client (@wirestream/rsocket/node) against a real
// server, driven by tests/typescript/test_rsocket_interop.py:
//   node tests/typescript/dist/rsocket/client.js URL SCENARIO [MTU]
// WIRESTREAM_TLS_CA: a PEM file the tls:// server's certificate is checked against.
// WIRESTREAM_BROWSER_WS=1 connects with the browser entry (`@wirestream/rsocket`'s
// `connect` on the global WebSocket: node --experimental-websocket on Node 20).
// prints one JSON object with what it saw (the pytest side asserts on it and on what the
// server saw). Exits non-zero with the error on stderr; every wait is bounded (WAIT_MS).

import { readFileSync } from "node:fs";

import { connect as browserConnect } from "@wirestream/rsocket";
import {
  ACCEPT_MIME_TYPES,
  APPLICATION_JSON,
  AUTHENTICATION,
  COMPOSITE_METADATA,
  CaptureWriter,
  DATA_MIME_TYPE,
  ROUTING,
  TEXT_PLAIN,
  connect,
  encodeAcceptMimeTypes,
  encodeComposite,
  encodeDataMimeType,
  encodeRoute,
  encodeSimpleAuth,
  NoLease,
  route,
  payload,
  text,
  type RSocketHandler,
  type RSocketPayload,
  type RSocketPeer,
  StreamError,
} from "@wirestream/rsocket/node";

const WAIT_MS = 30_000;
const [url, scenario, mtuArg] = process.argv.slice(2);

function within<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function hex(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : Buffer.from(bytes).toString("hex");
}

async function* numbered(from: number, to: number): AsyncGenerator<RSocketPayload> {
  for (let i = from; i < to; i++) {
    yield payload(`item-${i}`);
  }
}

/** The "ext" scenario's handler: it takes EXT 0x101 (and records each). */
const extGot: Array<{ type: number; data: string; metadata: string | null; stream: number }> =
  [];
let extArrived: () => void = () => {};
const extArrival = new Promise<void>((resolve) => (extArrived = resolve));
const EXT_HANDLER: RSocketHandler = {
  extensions: [0x101],
  onExt(type, item, streamId) {
    extGot.push({ type, data: text(item), metadata: hex(item.metadata), stream: streamId });
    extArrived();
  },
};

const scenarios: Record<string, (rs: RSocketPeer) => Promise<unknown>> = {
  /** EXT both ways: ours (I flag clear: the server must take it), then the server's. */
  async ext(rs) {
    const data = new TextEncoder().encode("ext-from-typescript");
    await rs.sendExt(0x100, data, { metadata: new TextEncoder().encode("m"), ignore: false });
    const answer = await rs.requestResponse(payload("after-ext"));
    await within(extArrival, "the server's EXT");
    return { answer: text(answer), got: extGot };
  },
  async request_response(rs) {
    const answer = await rs.requestResponse(payload("hello", "md-1"));
    return { data: text(answer), metadata: hex(answer.metadata) };
  },
  async request_stream_backpressure(rs) {
    const limitRate = 64;
    const stream = rs.requestStream(payload("10000"), { limitRate });
    let count = 0;
    let inOrder = true;
    let maxBuffered = 0;
    for await (const item of stream) {
      if (text(item) !== String(count)) inOrder = false;
      count += 1;
      maxBuffered = Math.max(maxBuffered, stream.buffered);
      if (count % 1000 === 0) {
        await new Promise((resolve) => setTimeout(resolve, 1)); // a slow consumer
      }
    }
    return { count, inOrder, maxBuffered, limitRate };
  },
  async request_channel(rs) {
    const echoes: string[] = [];
    for await (const item of rs.requestChannel(payload("item-0"), numbered(1, 500), {
      limitRate: 16,
    })) {
      echoes.push(text(item));
    }
    const expected = Array.from({ length: 500 }, (_, i) => `item-${i}`);
    return { count: echoes.length, same: JSON.stringify(echoes) === JSON.stringify(expected) };
  },
  async fire_and_forget(rs) {
    await rs.fireAndForget(payload("fnf-from-typescript"));
    // A request after it: the server has handled the FNF frame by the time it answers.
    const answer = await rs.requestResponse(payload("after"));
    return { after: text(answer) };
  },
  async metadata_push(rs) {
    await rs.metadataPush(new TextEncoder().encode("push-from-typescript"));
    const answer = await rs.requestResponse(payload("after"));
    return { after: text(answer) };
  },
  async metadata_push_then_request(rs) {
    // For peers that may drop the connection on METADATA_PUSH (rsocket-js 1.0.0-alpha.3):
    // what a request after it got, and how the connection ended.
    await rs.metadataPush(new TextEncoder().encode("push-from-typescript"));
    let after: string | null = null;
    let requestError: string | null = null;
    try {
      after = text(await rs.requestResponse(payload("after")));
    } catch (error) {
      requestError = (error as Error).message;
    }
    return { after, requestError, connectionError: rs.error?.message ?? null };
  },
  async cancel(rs) {
    const got: string[] = [];
    for await (const item of rs.requestStream(payload("1000000"), { limitRate: 8 })) {
      got.push(text(item));
      if (got.length === 5) break; // CANCEL
    }
    const controller = new AbortController();
    const aborted: string[] = [];
    let abortError = "";
    try {
      for await (const item of rs.requestStream(payload("1000000"), {
        limitRate: 4,
        signal: controller.signal,
      })) {
        aborted.push(text(item));
        if (aborted.length === 3) controller.abort(new Error("enough"));
      }
    } catch (error) {
      abortError = (error as Error).message;
    }
    const answer = await rs.requestResponse(payload("still-open"));
    return { got, aborted, abortError, after: text(answer), open: rs.engine.openStreams.size };
  },
  async fragmentation(rs) {
    const data = new Uint8Array(10_000).map((_, i) => i % 251);
    const metadata = new Uint8Array(1_000).map((_, i) => (i * 7) % 256);
    const answer = await rs.requestResponse({ data, metadata });
    const stream: string[] = [];
    for await (const item of rs.requestChannel({ data, metadata: null }, null, { limitRate: 2 })) {
      stream.push(hex(item.data) === hex(data) ? "same" : "different");
    }
    return {
      data: hex(answer.data) === hex(data),
      metadata: hex(answer.metadata) === hex(metadata),
      channel: stream,
    };
  },
  async lease(rs) {
    // The server granted 3 requests for a minute (its LEASE, awaited before the first).
    const answers: string[] = [];
    for (let i = 0; i < 3; i++) {
      answers.push(text(await rs.requestResponse(payload(`leased-${i}`))));
    }
    let fourth = "";
    try {
      await rs.requestResponse(payload("one too many"));
    } catch (error) {
      fourth = (error as Error).name;
    }
    return { answers, fourth, isNoLease: fourth === NoLease.name };
  },
  async handshake_timeout(rs) {
    // A silent server: our first KEEPALIVE (100 ms) goes unanswered; the first frame was due
    // at 100 + 200 ms.
    const started = performance.now();
    try {
      await rs.requestResponse(payload("anyone?"));
      return { error: null };
    } catch (error) {
      const e = error as Error & { limit?: number };
      const afterMs = Math.round(performance.now() - started);
      return { error: e.name, limit: e.limit ?? null, afterMs };
    }
  },
  async first_frame_in_time(rs) {
    // A real server answers our first KEEPALIVE: the connection outlives the deadline.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const answer = await rs.requestResponse(payload("still here"));
    return { answer: text(answer), error: rs.error?.name ?? null };
  },
  async idle_timeout(rs) {
    // Nothing is asked of the server and our KEEPALIVE is a minute away: no frame comes.
    const started = performance.now();
    await rs.closed;
    const error = rs.error as (Error & { limit?: number }) | null;
    const afterMs = Math.round(performance.now() - started);
    return { error: error?.name ?? null, limit: error?.limit ?? null, afterMs };
  },
  async keepalive_dead_peer(rs) {
    // The pytest side stops the server process (SIGSTOP) once this line is out.
    process.stdout.write("ready\n");
    const started = performance.now();
    await rs.closed;
    const error = rs.error as (Error & { reason?: string }) | null;
    return {
      error: error?.name ?? null,
      reason: error?.reason ?? null,
      message: error?.message ?? null,
      afterMs: Math.round(performance.now() - started),
    };
  },
  async resume(rs) {
    // 20,000 items (WIRESTREAM_RESUME_TOTAL) while the pytest side cuts the connection
    // (through its proxy) each time a "cut" line is out: every item arrives once, in order.
    const total = Number(process.env["WIRESTREAM_RESUME_TOTAL"] ?? "20000");
    const cuts = new Set([Math.floor(total / 10), Math.floor(total / 2)]);
    let count = 0;
    let inOrder = true;
    for await (const item of rs.requestStream(payload(String(total)), { limitRate: 256 })) {
      if (text(item) !== String(count)) inOrder = false;
      count += 1;
      if (cuts.has(count)) {
        process.stdout.write("cut\n");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    const after = text(await rs.requestResponse(payload("after resuming")));
    return { count, inOrder, after };
  },
  async graceful_close(rs) {
    // ERROR[CONNECTION_CLOSE] while a stream is open: it runs to its end, then the
    // connection closes; a request after the close began is refused locally.
    let count = 0;
    let closing: Promise<void> | null = null;
    let refused = "";
    for await (const item of rs.requestStream(payload("2000"), { limitRate: 50 })) {
      if (text(item) !== String(count)) break;
      count += 1;
      if (count === 100) {
        closing = rs.close(20_000);
        try {
          await rs.requestResponse(payload("too late"));
        } catch (error) {
          refused = (error as Error).name;
        }
      }
    }
    await closing;
    return { count, refused, error: rs.error?.message ?? null, state: rs.engine.state };
  },
  async routing(rs) {
    // Composite metadata with a routing entry, to the Python Router's "shout" route.
    const answer = await rs.requestResponse(payload("hello", route("shout")));
    let unrouted = "";
    try {
      await rs.requestResponse(payload("x", route("nowhere")));
    } catch (error) {
      unrouted = (error as Error).message;
    }
    return { answer: text(answer), unrouted };
  },
  async auth_metadata(rs) {
    // Authentication.md and PerStreamDataMimeTypesDefinition.md: simple credentials, the
    // data's MIME type and the accepted ones, beside a route, to the Python Router's
    // "whoami" (which decodes them with Python's metadata module).
    const metadata = encodeComposite([
      [ROUTING, encodeRoute("whoami")],
      [AUTHENTICATION, encodeSimpleAuth("alice", "s3cret")],
      [DATA_MIME_TYPE, encodeDataMimeType(APPLICATION_JSON)],
      [ACCEPT_MIME_TYPES, encodeAcceptMimeTypes([TEXT_PLAIN, "application/x.custom"])],
    ]);
    const answer = await rs.requestResponse(payload("{}", metadata));
    return { answer: text(answer) };
  },
  async application_error(rs) {
    try {
      for await (const _ of rs.requestStream(payload("not a number"))) {
        void _;
      }
      return { error: null };
    } catch (error) {
      const e = error as StreamError;
      return { error: e.name, code: e.errorCode, message: e.message };
    }
  },
};

/** Options a scenario connects with (besides the MTU). */
const CONNECT: Record<
  string,
  {
    lease?: boolean;
    keepalive?: number;
    maxLifetime?: number;
    resume?: boolean;
    metadataMimeType?: string;
    idleTimeout?: number;
    handshakeTimeout?: number;
    handler?: RSocketHandler;
  }
> = {
  ext: { handler: EXT_HANDLER },
  lease: { lease: true },
  keepalive_dead_peer: { keepalive: 200, maxLifetime: 1_000 },
  resume: { resume: true },
  idle_timeout: { keepalive: 60_000, idleTimeout: 500 },
  handshake_timeout: { keepalive: 100, handshakeTimeout: 200 },
  first_frame_in_time: { keepalive: 100, handshakeTimeout: 200 },
  routing: { metadataMimeType: COMPOSITE_METADATA },
  auth_metadata: { metadataMimeType: COMPOSITE_METADATA },
};

async function main(): Promise<void> {
  const run = scenarios[scenario ?? ""];
  if (url === undefined || run === undefined) {
    throw new Error(`usage: client.js URL (${Object.keys(scenarios).join("|")}) [MTU]`);
  }
  const limits = mtuArg !== undefined ? { mtu: Number(mtuArg) } : {};
  // WIRESTREAM_TLS_CA: the PEM file of the certificate authority a tls:// server's is from
  const ca = process.env["WIRESTREAM_TLS_CA"];
  const tls = ca !== undefined ? { tls: { ca: readFileSync(ca) } } : {};
  // WIRESTREAM_CAPTURE: record the connection's frames to capture files of that name
  const capturePath = process.env["WIRESTREAM_CAPTURE"];
  const capture = capturePath !== undefined ? new CaptureWriter(capturePath) : undefined;
  const options = {
    keepalive: 1_000,
    limits,
    ...tls,
    ...(capture !== undefined ? { capture } : {}),
    ...CONNECT[scenario!],
  };
  const dial = process.env["WIRESTREAM_BROWSER_WS"] === "1" ? browserConnect : connect;
  const rs = await within(dial(url, options), "connecting");
  const result = await within(run(rs), scenario!);
  if (scenario !== "keepalive_dead_peer" && scenario !== "idle_timeout") {
    await within(rs.close(), "closing");
  }
  capture?.close();
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
