// One scenario of an rsocket-js 1.0.0-alpha.3 client (rsocket-core / rsocket-tcp-client /
// rsocket-websocket-client of that version) against a real server (our TypeScript one,
// tests/typescript/rsocket/server.ts), driven by tests/typescript/test_rsocket_js_interop.py:
//   node tests/typescript/rsocket_js1/dist/client.js URL SCENARIO
// prints one JSON object with what it saw. Exits non-zero with the error on stderr; every
// wait is bounded (WAIT_MS).

import {
  RSocketConnector,
  RSocketError,
  type Payload,
  type RSocket,
} from "rsocket-core-1";
import { TcpClientTransport } from "rsocket-tcp-client-1";
import { WebsocketClientTransport } from "rsocket-websocket-client-1";
import { WebSocket } from "ws";

const WAIT_MS = 30_000;
const [url, scenario] = process.argv.slice(2);

function within<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${WAIT_MS} ms`)), WAIT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function data(text: string, metadata?: string): Payload {
  return metadata === undefined
    ? { data: Buffer.from(text) }
    : { data: Buffer.from(text), metadata: Buffer.from(metadata) };
}

function requestResponse(rs: RSocket, payload: Payload): Promise<Payload> {
  return new Promise((resolve, reject) => {
    rs.requestResponse(payload, {
      onNext: (answer) => resolve(answer),
      onComplete: () => reject(new Error("completed with no payload")),
      onError: reject,
      onExtension: () => {},
    });
  });
}

function fireAndForget(rs: RSocket, payload: Payload): Promise<void> {
  return new Promise((resolve, reject) => {
    rs.fireAndForget(payload, { onComplete: resolve, onError: reject });
  });
}

const scenarios: Record<string, (rs: RSocket) => Promise<unknown>> = {
  async request_response(rs) {
    const answer = await requestResponse(rs, data("hello", "md"));
    return { data: answer.data?.toString(), metadata: answer.metadata?.toString() ?? null };
  },
  async request_stream_backpressure(rs) {
    // REQUEST_N 64 at first, 64 more each time 64 have arrived, with a pause every 1,000
    // (a slow consumer): the server may never be ahead of what was requested.
    const batch = 64;
    return new Promise((resolve, reject) => {
      let requested = batch;
      let count = 0;
      let inOrder = true;
      let maxAhead = 0; // items received beyond what was requested (0 if obeyed)
      let maxOutstanding = 0;
      const stream = rs.requestStream(data("10000"), batch, {
        onNext(item, isComplete) {
          if (item.data?.toString() !== String(count)) inOrder = false;
          count += 1;
          maxAhead = Math.max(maxAhead, count - requested);
          if (count % batch === 0) {
            const more = (): void => {
              requested += batch;
              maxOutstanding = Math.max(maxOutstanding, requested - count);
              stream.request(batch);
            };
            if (count % 1000 === 0) setTimeout(more, 1);
            else more();
          }
          if (isComplete) resolve({ count, inOrder, maxAhead, maxOutstanding, batch });
        },
        onComplete: () => resolve({ count, inOrder, maxAhead, maxOutstanding, batch }),
        onError: reject,
        onExtension: () => {},
      });
    });
  },
  async request_channel(rs) {
    // "c0" with the request, "c1".."c199" as the server's REQUEST_N allows, then complete;
    // the server echoes each.
    return new Promise((resolve, reject) => {
      const echoed: string[] = [];
      let next = 1;
      let credit = 0;
      let sentMax = 0;
      const total = 200;
      const send = (): void => {
        while (credit > 0 && next < total) {
          credit -= 1;
          channel.onNext(data(`c${next}`), false);
          next += 1;
          sentMax = next;
        }
        if (next === total) {
          next += 1;
          channel.onComplete();
        }
      };
      const done = (): void =>
        resolve({
          echoed: echoed.length,
          same: echoed.every((item, i) => item === `c${i}`),
          sent: sentMax,
        });
      const channel = rs.requestChannel(data("c0"), 16, false, {
        onNext(item, isComplete) {
          echoed.push(item.data?.toString() ?? "");
          if (echoed.length % 16 === 0) channel.request(16);
          if (isComplete) done();
        },
        onComplete: done,
        onError: reject,
        onExtension: () => {},
        request(n) {
          credit += n;
          send();
        },
        cancel() {
          next = total + 1;
        },
      });
    });
  },
  async fire_and_forget(rs) {
    await fireAndForget(rs, data("fnf-from-rsocket-js"));
    const answer = await requestResponse(rs, data("after"));
    return { after: answer.data?.toString() };
  },
  async metadata_push(rs) {
    // rsocket-js 1.0.0-alpha.3's requester has no METADATA_PUSH: RSocketRequester.
    // metadataPush throws "Method not implemented." (RSocketSupport.js) and sends nothing.
    let thrown = "";
    try {
      rs.metadataPush(Buffer.from("push-from-rsocket-js"), {
        onComplete: () => {},
        onError: () => {},
      });
    } catch (error) {
      thrown = (error as Error).message;
    }
    const answer = await requestResponse(rs, data("after"));
    return { thrown, after: answer.data?.toString() };
  },
  async cancel(rs) {
    // A million-item stream, REQUEST_N 8, CANCEL after 5: the server stops and the
    // connection answers at once.
    const got = await new Promise<string[]>((resolve, reject) => {
      const items: string[] = [];
      const stream = rs.requestStream(data("1000000"), 8, {
        onNext(item) {
          items.push(item.data?.toString() ?? "");
          if (items.length === 5) {
            stream.cancel();
            resolve(items);
          }
        },
        onComplete: () => reject(new Error("a million items completed")),
        onError: reject,
        onExtension: () => {},
      });
    });
    const answer = await requestResponse(rs, data("still-open"));
    return { got, after: answer.data?.toString() };
  },
  async application_error(rs) {
    return new Promise((resolve) => {
      rs.requestStream(data("not a number"), 4, {
        onNext: () => resolve({ error: "onNext" }),
        onComplete: () => resolve({ error: "onComplete" }),
        onError(error) {
          // An RSocketError, but of the rsocket-core copy nested under the transport
          // package (npm cannot share it with the aliased one), so not `instanceof`
          // ours; and rsocket-js is compiled to ES5, so its name is "Error".
          const code = (error as RSocketError).code;
          resolve({ code: typeof code === "number" ? code : null, message: error.message });
        },
        onExtension: () => {},
      });
    });
  },
};

async function main(): Promise<void> {
  const run = scenarios[scenario ?? ""];
  if (url === undefined || run === undefined) {
    throw new Error(`usage: client.js URL (${Object.keys(scenarios).join("|")})`);
  }
  const target = new URL(url);
  const transport =
    target.protocol === "ws:"
      ? new WebsocketClientTransport({
          url,
          // Node 20 has no global WebSocket without a flag: the ws package's, which has
          // the browser API rsocket-websocket-client uses.
          wsCreator: (address) => new WebSocket(address) as unknown as globalThis.WebSocket,
        })
      : new TcpClientTransport({
          connectionOptions: { host: target.hostname, port: Number(target.port) },
        });
  const connector = new RSocketConnector({
    setup: { keepAlive: 1_000, lifetime: 30_000 },
    transport,
  });
  const rs = await within(connector.connect(), "connecting");
  const result = await within(run(rs), scenario!);
  rs.close();
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
