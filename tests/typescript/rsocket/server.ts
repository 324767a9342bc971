// The TypeScript RSocket server (@wirestream/rsocket/node) answering as the Python demo
// responder does (wirestream/apps/demo_responder.py), for the Python client to test:
//   node tests/typescript/dist/rsocket/server.js URL [MTU] [LEASE_REQUESTS]
// (with LEASE_REQUESTS it grants leases of that many requests for a minute; with
// WIRESTREAM_SERVE_RESUME=1 it keeps resumable sessions)
// prints "listening on URL", then one line per fire-and-forget ("fire-and-forget: TEXT")
// and metadata push ("metadata-push: TEXT"); stops on SIGTERM or when stdin closes.

import {
  ApplicationError,
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
    },
    {
      limits: mtuArg !== undefined && mtuArg !== "-" ? { mtu: Number(mtuArg) } : {},
      ...(leaseArg !== undefined ? { lease: [60_000, Number(leaseArg)] as const } : {}),
      resume: process.env["WIRESTREAM_SERVE_RESUME"] === "1",
    },
  );
  process.stdout.write(`listening on ${server.url}\n`);
  const stop = (): void => {
    void server.close().then(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.stdin.on("end", stop);
  process.stdin.resume();
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
