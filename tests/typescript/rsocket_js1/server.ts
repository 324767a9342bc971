// An rsocket-js 1.0.0-alpha.3 server (rsocket-core / rsocket-tcp-server /
// rsocket-websocket-server of that version, npm aliases *-1 beside rsocket-core 0.0.27)
// answering as the Python demo responder does, for the TypeScript client (client.ts) to
// test in tests/typescript/test_rsocket_js_interop.py:
//   node tests/typescript/rsocket_js1/dist/server.js (tcp|ws)
// prints "listening on URL", then one line per event it saw: "fire-and-forget: TEXT",
// "metadata-push: TEXT", "cancelled: EMITTED" (a stream cancelled after EMITTED items),
// "max-outstanding: N" (when a stream ends: the most items it was ever allowed to send
// ahead, i.e. the REQUEST_N credit the client granted); stops when stdin closes.

import type { AddressInfo } from "node:net";
import * as net from "node:net";

import {
  ErrorCodes,
  RSocketError,
  RSocketServer,
  type Cancellable,
  type OnExtensionSubscriber,
  type OnNextSubscriber,
  type OnTerminalSubscriber,
  type Payload,
  type Requestable,
} from "rsocket-core-1";
import { TcpServerTransport } from "rsocket-tcp-server-1";
import { WebsocketServerTransport, type SocketFactory } from "rsocket-websocket-server-1";
import { WebSocketServer } from "ws";

type Subscriber = OnTerminalSubscriber & OnNextSubscriber & OnExtensionSubscriber;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Items "0".."count-1", sent only as the requester's REQUEST_N allows. */
function countingStream(
  count: number,
  initialRequestN: number,
  subscriber: Subscriber,
): Requestable & Cancellable & OnExtensionSubscriber {
  let credit = initialRequestN;
  let maxCredit = credit;
  let next = 0;
  let done = false;
  let scheduled = false;
  const pump = (): void => {
    scheduled = false;
    // Batches, so a cancel (read between them) can stop an endless stream.
    let batch = 0;
    while (!done && credit > 0 && next < count && batch < 256) {
      credit -= 1;
      const last = next === count - 1;
      subscriber.onNext({ data: Buffer.from(String(next)) }, last);
      next += 1;
      batch += 1;
      if (last) {
        done = true;
        say(`max-outstanding: ${maxCredit}`);
      }
    }
    if (!done && count === 0) {
      done = true;
      subscriber.onComplete();
    }
    if (!done && credit > 0 && !scheduled) {
      scheduled = true;
      setImmediate(pump);
    }
  };
  setImmediate(pump);
  return {
    request(n: number): void {
      credit += n;
      maxCredit = Math.max(maxCredit, credit);
      if (!scheduled) {
        scheduled = true;
        setImmediate(pump);
      }
    },
    cancel(): void {
      done = true;
      say(`cancelled: ${next}`);
    },
    onExtension(): void {},
  };
}

const acceptor = {
  accept: async () => ({
    fireAndForget(payload: Payload): Cancellable {
      say(`fire-and-forget: ${payload.data?.toString() ?? ""}`);
      return { cancel(): void {} };
    },
    requestResponse(
      payload: Payload,
      subscriber: Subscriber,
    ): Cancellable & OnExtensionSubscriber {
      setImmediate(() =>
        subscriber.onNext({ data: payload.data, metadata: payload.metadata }, true),
      );
      return { cancel(): void {}, onExtension(): void {} };
    },
    requestStream(
      payload: Payload,
      initialRequestN: number,
      subscriber: Subscriber,
    ): Requestable & Cancellable & OnExtensionSubscriber {
      const raw = payload.data?.toString().trim() ?? "";
      if (!/^[0-9]+$/.test(raw)) {
        setImmediate(() =>
          subscriber.onError(
            new RSocketError(
              ErrorCodes.APPLICATION_ERROR,
              "request-stream data must be a decimal count",
            ),
          ),
        );
        return { request(): void {}, cancel(): void {}, onExtension(): void {} };
      }
      return countingStream(Number(raw), initialRequestN, subscriber);
    },
    requestChannel(
      payload: Payload,
      initialRequestN: number,
      isCompleted: boolean,
      subscriber: Subscriber & Requestable & Cancellable,
    ): Subscriber & Requestable & Cancellable {
      // An echo: each inbound item goes back out once the requester has credit for it.
      const queue: Payload[] = [{ data: payload.data, metadata: payload.metadata }];
      let credit = initialRequestN;
      let inboundDone = isCompleted;
      let finished = false;
      const flush = (): void => {
        while (!finished && credit > 0 && queue.length > 0) {
          credit -= 1;
          subscriber.onNext(queue.shift()!, false);
        }
        if (!finished && inboundDone && queue.length === 0) {
          finished = true;
          subscriber.onComplete();
        }
      };
      let received = 0;
      setImmediate(() => {
        if (!isCompleted) subscriber.request(32);
        flush();
      });
      return {
        onNext(item: Payload, isComplete: boolean): void {
          queue.push({ data: item.data, metadata: item.metadata });
          received += 1;
          if (isComplete) inboundDone = true;
          else if (received % 16 === 0) subscriber.request(16); // never more than 32 ahead
          flush();
        },
        onComplete(): void {
          inboundDone = true;
          flush();
        },
        onError(): void {
          finished = true;
        },
        onExtension(): void {},
        request(n: number): void {
          credit += n;
          flush();
        },
        cancel(): void {
          finished = true;
          say("cancelled: channel");
        },
      };
    },
    metadataPush(metadata: Buffer): void {
      say(`metadata-push: ${metadata.toString()}`);
    },
  }),
};

async function main(): Promise<void> {
  const kind = process.argv[2] ?? "tcp";
  let address = (): AddressInfo => ({ address: "", family: "", port: 0 });
  const transport =
    kind === "ws"
      ? new WebsocketServerTransport({
          host: "127.0.0.1",
          port: 0,
          wsCreator: (options) => {
            const server = new WebSocketServer(options);
            address = () => server.address() as AddressInfo;
            // ws 8.18.3's Server, where rsocket-websocket-server's types name its ws 8.2.3.
            return server as unknown as ReturnType<SocketFactory>;
          },
        })
      : new TcpServerTransport({
          listenOptions: { host: "127.0.0.1", port: 0 },
          socketCreator: (options) => {
            const server = new net.Server(options);
            address = () => server.address() as AddressInfo;
            // rsocket-js 1.0.0-alpha.3's TcpDuplexConnection.close() takes its 'error'
            // listener off the socket before socket.end(): a reset from the peer after
            // that (a client process exiting with bytes unread) is an unhandled 'error'
            // event, which ends the whole server process. Ours stays up.
            server.on("connection", (socket: net.Socket) => socket.on("error", () => {}));
            return server;
          },
        });
  const closeable = await new RSocketServer({ transport, acceptor }).bind();
  say(`listening on ${kind}://127.0.0.1:${address().port}`);
  process.stdin.on("end", () => {
    closeable.close();
    process.exit(0);
  });
  process.stdin.resume();
}

main().catch((error: unknown) => {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`${text}\n`);
  process.exit(1);
});
