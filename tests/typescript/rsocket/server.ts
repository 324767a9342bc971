// The TypeScript RSocket server (@wirestream/rsocket/node) answering as the Python demo
// responder does (wirestream/apps/demo_responder.py), for the Python client to test:
//   node tests/typescript/dist/rsocket/server.js URL [MTU] [LEASE_REQUESTS]
// (with LEASE_REQUESTS it grants leases of that many requests for a minute; with
// WIRESTREAM_SERVE_RESUME=1 it keeps resumable sessions; a tls:// URL takes its PEM files
// from WIRESTREAM_TLS_CERT and WIRESTREAM_TLS_KEY; with WIRESTREAM_CAPTURE=PATH it records
// every frame to capture files of that name); "closed: ERROR_NAME" (or
// "closed: cleanly") when a connection ends, and "refused: N" (connections beyond
// maxConnections) when it stops
// prints "listening on URL", then one line per fire-and-forget ("fire-and-forget: TEXT")
// and metadata push ("metadata-push: TEXT") and EXT of extended type 0x100 ("ext: 0x100 TEXT
// stream N"); stops on SIGTERM or when stdin closes.

import { readFileSync } from "node:fs";

import {
  ApplicationError,
  CaptureWriter,
  payload,
  serve,
  text,
  type RSocketPayload,
} from "@wirestream/rsocket/node";

const [url, mtuArg, leaseArg] = process.argv.slice(2);

async function* count(n: number): AsyncGenerator<RSocketPayload> {
  for (let i = 0; i < n; i++) {
    yield payload(String(i));
  }
}

async function* echo(
  first: RSocketPayload,
  rest: AsyncIterable<RSocketPayload>,
): AsyncGenerator<RSocketPayload> {
  yield first;
  for await (const item of rest) {
    yield item;
  }
}

async function main(): Promise<void> {
  // WIRESTREAM_SERVE_LIMITS: JSON of handshakeTimeout, idleTimeout, frameTimeout (ms),
  // maxConnections.
  const limits = JSON.parse(process.env["WIRESTREAM_SERVE_LIMITS"] ?? "{}") as {
    handshakeTimeout?: number;
    idleTimeout?: number;
    frameTimeout?: number;
    maxConnections?: number;
  };
  // WIRESTREAM_CAPTURE: record every connection's frames to capture files of that name
  const capturePath = process.env["WIRESTREAM_CAPTURE"];
  const capture = capturePath !== undefined ? new CaptureWriter(capturePath) : undefined;
  const server = await serve(
    url ?? "tcp://127.0.0.1:0",
    {
      requestResponse: (request) => request,
      fireAndForget: (request) => {
        process.stdout.write(`fire-and-forget: ${text(request)}\n`);
      },
      requestStream: (request) => {
        const raw = text(request).trim();
        if (!/^[0-9]+$/.test(raw)) {
          throw new ApplicationError(
            `request-stream data must be a decimal count, not ${JSON.stringify(raw.slice(0, 40))}`,
          );
        }
        return count(Number(raw));
      },
      requestChannel: (first, inbound) => echo(first, inbound),
      metadataPush: (metadata) => {
        process.stdout.write(`metadata-push: ${new TextDecoder().decode(metadata)}\n`);
      },
      extensions: [0x100],
      onExt: (type, item, streamId) => {
        process.stdout.write(`ext: 0x${type.toString(16)} ${text(item)} stream ${streamId}\n`);
      },
    },
    {
      limits: mtuArg !== undefined && mtuArg !== "-" ? { mtu: Number(mtuArg) } : {},
      ...(leaseArg !== undefined ? { lease: [60_000, Number(leaseArg)] as const } : {}),
      resume: process.env["WIRESTREAM_SERVE_RESUME"] === "1",
      // WIRESTREAM_TLS_CERT / _KEY: PEM files, for a tls:// URL
      ...(process.env["WIRESTREAM_TLS_CERT"] !== undefined
        ? {
            tls: {
              cert: readFileSync(process.env["WIRESTREAM_TLS_CERT"]),
              key: readFileSync(process.env["WIRESTREAM_TLS_KEY"] ?? ""),
            },
          }
        : {}),
      ...limits,
      ...(capture !== undefined ? { capture } : {}),
      onConnection: (peer) => {
        void peer.closed.then(() => {
          capture?.flush(); // what the connection carried is on disk once it has ended
          process.stdout.write(`closed: ${peer.error?.name ?? "cleanly"}\n`);
        });
      },
    },
  );
  process.stdout.write(`listening on ${server.url}\n`);
  const stop = (): void => {
    process.stdout.write(`refused: ${server.refused}\n`);
    void server.close().then(() => {
      capture?.close();
      process.exit(0);
    });
  };
  process.on("SIGTERM", stop);
  process.stdin.on("end", stop);
  process.stdin.resume();
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
