// TypeScript RSocket clients: @wirestream/rsocket against rsocket-js 1.0.0-alpha.3, same run.
//
// Run: `make bench` (or `npx tsc -b && node bench/dist/rsocket_clients.js`). One Node
// process holds both clients; the server is a second Node process (this program with
// `--serve KIND`), the same one for both clients, so the frames on the wire are the same:
//   * request-stream throughput: STREAM_ITEMS items of 100 B data per stream, each client
//     granting 256 at first and more as half of it is consumed (our `limitRate: 256`;
//     rsocket-js's requestStream with the same request(n) arithmetic, by hand);
//   * request-response with 64 in flight: RR_REQUESTS requests of 100 B, a new one sent
//     as each answer arrives, so 64 are always outstanding;
//   * memory per idle connection: IDLE connections opened and set up (SETUP sent and a
//     request answered), then heap + external (after a forced GC) divided by IDLE; the
//     server's memory is not counted (another process).
// Beside each rate: this process's CPU time per item / request (process.cpuUsage), the
// client's own cost, which the rate hides when the server (or the machine's load) limits.
// Three servers are measured in turn: ours (@wirestream/rsocket/node `serve`), rsocket-js
// 1.0.0-alpha.3's RSocketServer, and a minimal hand-written responder ("wire": each
// stream's PAYLOAD frames encoded once, one write of a slice per REQUEST_N's worth, ~0.2 us
// of its CPU per item). Against "wire" the clients set the rate. Two more request-stream
// rows: ours with `.batches()` (arrays; the targets are on the per-item `for await`), and
// a "floor" that only splits frames and sends REQUEST_N, the least any client pays.
// Measured 2026-11-28 on a quiet machine (load 0.07), wire server, request-stream: ours
// 1,586,538 items/s (0.69 us CPU/item), rsocket-js 1,484,340 (0.72 us) = 1.07x (target 2x
// missed); .batches() 1.38x; floor 2.48x (0.28 us). Per item, every client pays ~0.2 us
// of REQUEST_N writes (one per 128 items, ~28 us of CPU per write on this VM); ours then
// ~0.09 us of `for await`, ~0.15 us of decode/machines/peer, ~0.05 us of collector:
// 2x over rsocket-js's synchronous onNext callback would leave ~0.05 us for all but the
// writes and the await (docs/typescript.md).
// Request-response (64 in flight) is 4.2x on wire, 2.8x on ours.
// Timing: the two clients interleaved in each of REPEATS rounds after a warm-up round; the
// best round is reported (the median beside it). Before timing, each client's answers are
// checked (the stream's count and item bytes, the echo). The exit status is 0 whatever the
// figures: a bench reports, `make test` checks.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import type { AddressInfo } from "node:net";
import * as net from "node:net";
import * as os from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import * as v8 from "node:v8";
import * as vm from "node:vm";

import {
  RequestN,
  RequestStream,
  Setup,
  frameBytes,
} from "@wirestream/generated/rsocket/v1_0";
import { connect, serve, type RSocketPayload, type RSocketPeer } from "@wirestream/rsocket/node";
import {
  RSocketConnector,
  RSocketServer,
  type OnExtensionSubscriber,
  type OnNextSubscriber,
  type OnTerminalSubscriber,
  type Payload,
  type RSocket,
} from "rsocket-core-1";
import { TcpClientTransport } from "rsocket-tcp-client-1";
import { TcpServerTransport } from "rsocket-tcp-server-1";

const REPEATS = 5;
const STREAM_ITEMS = 100_000;
const LIMIT_RATE = 256;
const RR_REQUESTS = 20_000;
const IN_FLIGHT = 64;
const IDLE = 500;
const TARGET = 2.0;

const ITEM = new Uint8Array(100).fill(0x64);
const ITEM_BUFFER = Buffer.from(ITEM);
const REQUEST = new Uint8Array(100).fill(0x72);
const REQUEST_BUFFER = Buffer.from(REQUEST);

type Subscriber = OnTerminalSubscriber & OnNextSubscriber & OnExtensionSubscriber;

// ----------------------------------------------------------------- the two servers

/** Our server: echo, and N items of ITEM for a request-stream whose data is N. */
async function serveOurs(): Promise<string> {
  const server = await serve("tcp://127.0.0.1:0", {
    requestResponse: (request) => request,
    requestStream: function* (request): Generator<RSocketPayload> {
      const count = Number(new TextDecoder().decode(request.data));
      for (let i = 0; i < count; i++) yield { data: ITEM, metadata: null };
    },
  });
  return server.url;
}

/** rsocket-js 1.0.0-alpha.3's server answering the same, items sent as REQUEST_N allows. */
async function serveRsocketJs(): Promise<string> {
  let address = (): AddressInfo => ({ address: "", family: "", port: 0 });
  const transport = new TcpServerTransport({
    listenOptions: { host: "127.0.0.1", port: 0 },
    socketCreator: (options) => {
      const server = new net.Server(options);
      address = () => server.address() as AddressInfo;
      // TCP_NODELAY, as our transport sets it: with Nagle on, rsocket-js's one write per
      // frame waits on the client's delayed ACK and the server, not a client, is measured.
      server.on("connection", (socket: net.Socket) => {
        socket.setNoDelay(true);
        // Its TcpDuplexConnection.close() drops its 'error' listener before socket.end():
        // a client's reset after that would end this process (an unhandled 'error').
        socket.on("error", () => {});
      });
      return server;
    },
  });
  const acceptor = {
    accept: async () => ({
      requestResponse(request: Payload, subscriber: Subscriber) {
        subscriber.onNext({ data: request.data }, true);
        return { cancel(): void {}, onExtension(): void {} };
      },
      requestStream(request: Payload, initialRequestN: number, subscriber: Subscriber) {
        const count = Number(request.data?.toString());
        let sent = 0;
        let credit = initialRequestN;
        let done = false;
        let scheduled = false;
        const pump = (): void => {
          scheduled = false;
          while (!done && credit > 0 && sent < count) {
            credit -= 1;
            sent += 1;
            subscriber.onNext({ data: ITEM_BUFFER }, sent === count);
          }
          if (sent === count) done = true;
        };
        const schedule = (): void => {
          if (!scheduled) {
            scheduled = true;
            setImmediate(pump);
          }
        };
        schedule();
        return {
          request(n: number): void {
            credit += n;
            schedule();
          },
          cancel(): void {
            done = true;
          },
          onExtension(): void {},
        };
      },
    }),
  };
  await new RSocketServer({ transport, acceptor }).bind();
  return `tcp://127.0.0.1:${address().port}`;
}

/**
 * The least a responder can do, over TCP: KEEPALIVE answered; REQUEST_RESPONSE echoed as
 * one PAYLOAD (N|C); REQUEST_STREAM's data is a count of ITEM payloads, sent as REQUEST_N
 * allows (the last with C), each batch one write of frames patched from a template;
 * CANCEL stops it. Other frames (SETUP, ...) are read and ignored.
 */
function serveWire(): Promise<string> {
  const PAYLOAD = 0x0a;
  const header = (streamId: number, type: number, flags: number, size: number): Buffer => {
    const frame = Buffer.allocUnsafe(3 + size);
    frame.writeUIntBE(size, 0, 3);
    frame.writeUInt32BE(streamId, 3);
    frame.writeUInt16BE((type << 10) | flags, 7);
    return frame;
  };
  const item = (streamId: number, last: boolean): Buffer => {
    const frame = header(streamId, PAYLOAD, last ? 0x60 : 0x20, 6 + ITEM.length);
    frame.set(ITEM, 9);
    return frame;
  };
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on("error", () => {});
    // Per stream, its items pre-encoded once (MAX_BATCH of them back to back): a batch
    // is one write of a slice of that, never rewritten, so its cost per item is ~0.
    const MAX_BATCH = 1024;
    const streams = new Map<number, { left: number; credit: number; frames: Buffer }>();
    let pending = Buffer.alloc(0);
    const pump = (streamId: number): void => {
      const stream = streams.get(streamId);
      if (stream === undefined) return;
      const size = 9 + ITEM.length;
      while (stream.credit > 0 && stream.left > 0) {
        const n = Math.min(stream.credit, stream.left, MAX_BATCH);
        stream.credit -= n;
        stream.left -= n;
        if (stream.left > 0) {
          socket.write(stream.frames.subarray(0, n * size));
        } else {
          const last = [stream.frames.subarray(0, (n - 1) * size), item(streamId, true)];
          socket.write(Buffer.concat(last));
        }
      }
      if (stream.left === 0) streams.delete(streamId);
    };
    socket.on("data", (chunk: Buffer) => {
      let buffer = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
      const out: Buffer[] = [];
      while (buffer.length >= 3 && buffer.length >= 3 + buffer.readUIntBE(0, 3)) {
        const size = buffer.readUIntBE(0, 3);
        const frame = buffer.subarray(3, 3 + size);
        buffer = buffer.subarray(3 + size);
        const streamId = frame.readUInt32BE(0) & 0x7fffffff;
        const word = frame.readUInt16BE(4);
        const type = word >> 10;
        const flags = word & 0x3ff;
        // Where the metadata length sits: after the header, or after REQUEST_STREAM's n.
        const at = type === 0x06 ? 10 : 6;
        const metadataLength = flags & 0x100 ? 3 + frame.readUIntBE(at, 3) : 0;
        if (type === 0x03 && flags & 0x80) {
          const keepalive = header(0, 0x03, 0, size);
          frame.copy(keepalive, 9, 6);
          out.push(keepalive);
        } else if (type === 0x04) {
          const data = frame.subarray(6 + metadataLength);
          const answer = header(streamId, PAYLOAD, 0x60, 6 + data.length);
          data.copy(answer, 9);
          out.push(answer);
        } else if (type === 0x06) {
          const credit = frame.readUInt32BE(6);
          const left = Number(frame.subarray(10 + metadataLength).toString());
          const frames = Buffer.concat(
            Array.from({ length: MAX_BATCH }, () => item(streamId, false)),
          );
          streams.set(streamId, { left, credit, frames });
          queueMicrotask(() => pump(streamId));
        } else if (type === 0x08) {
          const stream = streams.get(streamId);
          if (stream !== undefined) {
            stream.credit += frame.readUInt32BE(6);
            queueMicrotask(() => pump(streamId));
          }
        } else if (type === 0x09) {
          streams.delete(streamId);
        }
      }
      pending = Buffer.from(buffer);
      if (out.length > 0) socket.write(out.length === 1 ? out[0]! : Buffer.concat(out));
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve(`tcp://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

// ----------------------------------------------------------------- the two clients

interface Client {
  name: string;
  /** One request-stream of `count` items; resolves with the count received. */
  stream(count: number): Promise<number>;
  /** `total` request-responses, `inFlight` outstanding at a time. */
  requestResponses(total: number, inFlight: number): Promise<number>;
  close(): void;
}

function ours(rs: RSocketPeer, batches = false): Client {
  return {
    name: batches ? "ours, .batches() arrays" : "ours: @wirestream/rsocket",
    async stream(count) {
      let received = 0;
      if (batches) {
        const request = { data: new TextEncoder().encode(String(count)), metadata: null };
        const inbound = rs.requestStream(request, { limitRate: LIMIT_RATE });
        for await (const items of inbound.batches()) {
          for (const item of items) if (item.data.length === ITEM.length) received += 1;
        }
        return received;
      }
      for await (const item of rs.requestStream(
        { data: new TextEncoder().encode(String(count)), metadata: null },
        { limitRate: LIMIT_RATE },
      )) {
        if (item.data.length === ITEM.length) received += 1;
      }
      return received;
    },
    requestResponses(total, inFlight) {
      return new Promise((resolve, reject) => {
        let sent = 0;
        let answered = 0;
        const send = (): void => {
          sent += 1;
          rs.requestResponse({ data: REQUEST, metadata: null }).then((answer) => {
            if (answer.data.length === REQUEST.length) answered += 1;
            if (sent < total) send();
            else if (answered === total) resolve(answered);
          }, reject);
        };
        for (let i = 0; i < inFlight; i++) send();
      });
    },
    close: () => void rs.close(),
  };
}

function rsocketJs(rs: RSocket): Client {
  return {
    name: "rsocket-js 1.0.0-alpha.3",
    stream(count) {
      // The same request(n) arithmetic as our limitRate: LIMIT_RATE at first, and what
      // was consumed each time that reaches half of it.
      return new Promise((resolve, reject) => {
        let received = 0;
        let consumed = 0;
        const replenishAt = LIMIT_RATE / 2;
        const stream = rs.requestStream({ data: Buffer.from(String(count)) }, LIMIT_RATE, {
          onNext(item, isComplete) {
            if (item.data?.length === ITEM.length) received += 1;
            if (isComplete) {
              resolve(received);
              return;
            }
            consumed += 1;
            if (consumed >= replenishAt) {
              stream.request(consumed);
              consumed = 0;
            }
          },
          onComplete: () => resolve(received),
          onError: reject,
          onExtension: () => {},
        });
      });
    },
    requestResponses(total, inFlight) {
      return new Promise((resolve, reject) => {
        let sent = 0;
        let answered = 0;
        const send = (): void => {
          sent += 1;
          rs.requestResponse(
            { data: REQUEST_BUFFER },
            {
              onNext(answer) {
                if (answer.data?.length === REQUEST.length) answered += 1;
                if (sent < total) send();
                else if (answered === total) resolve(answered);
              },
              onComplete: () => {},
              onError: reject,
              onExtension: () => {},
            },
          );
        };
        for (let i = 0; i < inFlight; i++) send();
      });
    },
    close: () => rs.close(),
  };
}

/**
 * Not a client: the least any client must do per item, for reference (request-stream
 * only). One 'data' callback splits the frames of a chunk and counts the stream's
 * PAYLOADs -- no object, promise or check per item -- and sends REQUEST_N with the same
 * arithmetic as the clients (and answers KEEPALIVE). What is left is the socket's reads
 * and the REQUEST_N writes: the cost no client can go under, and the rate it allows.
 */
async function connectFloor(url: string): Promise<Client> {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ host: hostname, port: Number(port) });
  socket.setNoDelay(true);
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  const mime = "application/octet-stream";
  const setup = new Setup({
    keepaliveInterval: 20_000,
    maxLifetime: 90_000,
    metadataMimeType: mime,
    dataMimeType: mime,
  });
  socket.write(frameBytes(setup));
  let nextId = 1;
  return {
    name: "floor: frames counted, no API",
    stream(count) {
      const streamId = nextId;
      nextId += 2;
      return new Promise((resolve) => {
        let pending: Buffer = Buffer.alloc(0);
        let received = 0;
        let consumed = 0;
        const onData = (chunk: Buffer): void => {
          const buffer = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
          let at = 0;
          let complete = false;
          while (buffer.length - at >= 3) {
            const size = buffer.readUIntBE(at, 3);
            if (buffer.length - at < 3 + size) break;
            const word = buffer.readUInt16BE(at + 7);
            const type = word >> 10;
            if (type === 0x0a && (buffer.readUInt32BE(at + 3) & 0x7fffffff) === streamId) {
              if (word & 0x20 && size - 6 === ITEM.length) received += 1;
              complete ||= (word & 0x40) !== 0;
              consumed += 1;
              if (consumed >= LIMIT_RATE / 2 && !complete) {
                socket.write(frameBytes(new RequestN({ streamId, requestN: consumed })));
                consumed = 0;
              }
            } else if (type === 0x03 && word & 0x80) {
              const keepalive = Buffer.from(buffer.subarray(at, at + 3 + size));
              keepalive.writeUInt16BE(0x03 << 10, 7);
              socket.write(keepalive);
            }
            at += 3 + size;
          }
          pending = buffer.subarray(at);
          if (complete) {
            socket.off("data", onData);
            resolve(received);
          }
        };
        socket.on("data", onData);
        const data = new TextEncoder().encode(String(count));
        socket.write(frameBytes(new RequestStream({ streamId, initialRequestN: LIMIT_RATE, data })));
      });
    },
    requestResponses: () => Promise.reject(new Error("the floor measures request-stream only")),
    close: () => socket.end(),
  };
}

async function connectOurs(url: string, batches = false): Promise<Client> {
  return ours(await connect(url, { keepalive: 20_000 }), batches);
}

async function connectRsocketJs(url: string): Promise<Client> {
  const { hostname, port } = new URL(url);
  const connector = new RSocketConnector({
    setup: { keepAlive: 20_000, lifetime: 90_000 },
    // TCP_NODELAY, as our client sets it (the same socket for both clients).
    transport: new TcpClientTransport({
      connectionOptions: { host: hostname, port: Number(port), noDelay: true },
    }),
  });
  return rsocketJs(await connector.connect());
}

// ----------------------------------------------------------------- measuring

const gc = ((): (() => void) => {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
})();

interface Row {
  client: Client;
  rates: number[];
  /** This process's CPU time (user + system) per item or request, in microseconds. */
  cpu: number[];
}

function best(rates: number[]): number {
  return Math.max(...rates);
}

function median(rates: number[]): number {
  const sorted = [...rates].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Items (or answers) per second of wall time, and client CPU microseconds per item. */
async function timed(work: () => Promise<number>, expected: number): Promise<[number, number]> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  const done = await work();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  assert.equal(done, expected);
  return [done / seconds, (used.user + used.system) / done];
}

async function measure(rows: Row[], work: (client: Client) => Promise<number>, n: number) {
  for (const row of rows) await timed(() => work(row.client), n); // warm-up
  for (let round = 0; round < REPEATS; round++) {
    for (const row of rows) {
      const [rate, cpu] = await timed(() => work(row.client), n);
      row.rates.push(rate);
      row.cpu.push(cpu);
    }
  }
}

/** Heap + external bytes per connection for IDLE connections opened and set up. */
async function idleBytes(open: () => Promise<Client>): Promise<number> {
  await settle();
  const before = process.memoryUsage();
  const clients: Client[] = [];
  for (let i = 0; i < IDLE; i++) {
    const client = await open();
    assert.equal(await client.requestResponses(1, 1), 1);
    clients.push(client);
  }
  await settle();
  const after = process.memoryUsage();
  const bytes = after.heapUsed + after.external - (before.heapUsed + before.external);
  for (const client of clients) client.close();
  return bytes / IDLE;
}

/** Let closed sockets and timers go, then collect (twice: finalizers free more). */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
}

function startServer(kind: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--serve", kind], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      const found = /^listening on (\S+)/.exec(line);
      if (found === null) reject(new Error(`server ${kind}: ${line}`));
      else resolve({ child, url: found[1]! });
    });
    child.once("exit", (code) => reject(new Error(`server ${kind} exited (${code})`)));
  });
}

const count = (rate: number): string => Math.round(rate).toLocaleString("en-US");

function printTable(title: string, unit: string, rows: Row[]): void {
  console.log(`  ${title}`);
  const [, peer] = rows;
  for (const row of rows) {
    const ratio = row === peer ? "" : `${(best(row.rates) / best(peer!.rates)).toFixed(2)}x`;
    const cpu = Math.min(...row.cpu);
    const cpuRatio = row === peer ? "" : `${(Math.min(...peer!.cpu) / cpu).toFixed(2)}x`;
    console.log(
      `    ${row.client.name.padEnd(28)} ${count(best(row.rates)).padStart(10)} ${unit} ` +
        `(median ${count(median(row.rates)).padStart(9)}) ${ratio.padStart(6)}   ` +
        `client CPU ${cpu.toFixed(2).padStart(6)} us ${cpuRatio.padStart(6)}`,
    );
  }
}

async function benchServer(kind: string, summary: [string, number][]): Promise<void> {
  const { child, url } = await startServer(kind);
  try {
    // Idle memory first, before anything else has left garbage or closing sockets behind.
    const oursIdle = await idleBytes(() => connectOurs(url));
    const peerIdle = await idleBytes(() => connectRsocketJs(url));
    const clients = [await connectOurs(url), await connectRsocketJs(url)];
    const rows = (): Row[] => clients.map((client) => ({ client, rates: [], cpu: [] }));
    const server = {
      ours: "@wirestream/rsocket serve",
      "rsocket-js": "rsocket-js RSocketServer",
      wire: "a minimal hand-written responder",
    }[kind];
    console.log();
    console.log(`server: ${server} (${url}, its own Node process)`);
    // Our .batches() (arrays of what arrived, one await per array) on a row of its own:
    // the targets are for the per-item `for await` above it.
    const batchClient = await connectOurs(url, true);
    const floorClient = await connectFloor(url);
    const extra = [batchClient, floorClient];
    const streamRows = [...rows(), ...extra.map((client) => ({ client, rates: [], cpu: [] }))];
    await measure(streamRows, (c) => c.stream(STREAM_ITEMS), STREAM_ITEMS);
    const items = STREAM_ITEMS.toLocaleString("en-US");
    printTable(`request-stream, ${items} x 100 B, limitRate ${LIMIT_RATE}`, "items/s", streamRows);
    const rrRows = rows();
    await measure(rrRows, (c) => c.requestResponses(RR_REQUESTS, IN_FLIGHT), RR_REQUESTS);
    const requests = RR_REQUESTS.toLocaleString("en-US");
    printTable(`request-response, ${requests} x 100 B, ${IN_FLIGHT} in flight`, "req/s  ", rrRows);
    for (const client of [...clients, ...extra]) client.close();
    console.log(`  memory per idle connection (client side, heap + external, ${IDLE} connections)`);
    console.log(`    ${"ours: @wirestream/rsocket".padEnd(28)} ${count(oursIdle).padStart(10)} B`);
    console.log(`    ${"rsocket-js 1.0.0-alpha.3".padEnd(28)} ${count(peerIdle).padStart(10)} B`);
    const ratio = (r: Row[], i = 0): number => best(r[i]!.rates) / best(r[1]!.rates);
    const cpuRatio = (r: Row[]): number => Math.min(...r[1]!.cpu) / Math.min(...r[0]!.cpu);
    summary.push(
      [`request-stream throughput vs rsocket-js (${kind} server)`, ratio(streamRows)],
      [`  (request-stream with .batches() arrays, vs rsocket-js)`, ratio(streamRows, 2)],
      [`  (request-stream, the floor of any client, vs rsocket-js)`, ratio(streamRows, 3)],
      [`request-response, ${IN_FLIGHT} in flight, vs rsocket-js (${kind} server)`, ratio(rrRows)],
      [`  (client CPU per item, rsocket-js / ours, request-stream)`, cpuRatio(streamRows)],
      [`  (client CPU per request, rsocket-js / ours, request-response)`, cpuRatio(rrRows)],
    );
  } finally {
    child.kill();
  }
}

function load(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

async function main(): Promise<void> {
  const serveIndex = process.argv.indexOf("--serve");
  if (serveIndex !== -1) {
    const kind = process.argv[serveIndex + 1];
    const servers: Record<string, () => Promise<string>> = {
      ours: serveOurs,
      "rsocket-js": serveRsocketJs,
      wire: serveWire,
    };
    const url = await servers[kind ?? ""]!();
    process.stdout.write(`listening on ${url}\n`);
    return;
  }
  console.log(
    `wirestream TypeScript RSocket client benchmark -- Node ${process.version}, ` +
      `rsocket-js 1.0.0-alpha.3, TCP on 127.0.0.1, best of ${REPEATS} rounds; ` +
      `${os.cpus().length} cores, load average ${load()}`,
  );
  const summary: [string, number][] = [];
  // `node bench/dist/rsocket_clients.js wire` measures against the named servers only.
  const kinds = process.argv.slice(2).filter((arg) => !arg.startsWith("-"));
  for (const kind of kinds.length > 0 ? kinds : ["ours", "rsocket-js", "wire"]) {
    await benchServer(kind, summary);
  }
  console.log();
  console.log("Summary");
  console.log("-------");
  for (const [label, ratio] of summary) {
    // The targets are on throughput; the CPU lines say how much of it the client costs
    // (when the server is the bottleneck, throughput cannot tell the clients apart).
    const verdict = ratio >= TARGET ? "PASS" : "MISS";
    const target = label.startsWith(" ") ? "" : `target >= ${TARGET}x  ${verdict}`;
    console.log(`  ${label.padEnd(66)} ${ratio.toFixed(2).padStart(6)}x  ${target}`);
  }
  console.log(`  load average at the end: ${load()} (the machine is shared: figures move with it)`);
  process.exit(0);
}

main().catch((error: unknown) => {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`${text}\n`);
  process.exit(1);
});
