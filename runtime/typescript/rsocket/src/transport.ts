/**
 * What the peer needs of a transport, and the browser's WebSocket as one.
 *
 * The engine speaks RSocket's byte-stream framing (each frame behind a 24-bit length,
 * as on TCP); a message transport (WebSocket: "one frame per message", no prefix)
 * strips the prefix when sending and adds it when receiving.
 */

import type { Bytes } from "./bytes.js";
import { ConnectionLost, TransportTimeout } from "@wirestream/runtime";

/** Where a transport delivers what it receives. */
export interface TransportSink {
  /** Bytes in RSocket's length-prefixed framing. */
  data(chunk: Bytes): void;
  /** The transport ended (null: cleanly). Called once. */
  closed(error: Error | null): void;
}

export interface Transport {
  /** Start delivering to `sink` (called once, before anything is sent). */
  start(sink: TransportSink): void;
  /** Send frames, each with its 3-byte length prefix. */
  send(frames: readonly Bytes[]): void;
  /** Close the transport; `sink.closed` follows. */
  close(): void;
}

/** A frame received as one message, in the engine's length-prefixed framing. */
export function withPrefix(message: Bytes): Bytes {
  const out = new Uint8Array(message.length + 3);
  out[0] = message.length >>> 16;
  out[1] = message.length >>> 8;
  out[2] = message.length;
  out.set(message, 3);
  return out;
}

/** A WebSocket as a transport: the DOM's (browsers, Node >= 22) or anything shaped like it. */
export class BrowserWebSocketTransport implements Transport {
  private sink: TransportSink | null = null;
  private ended = false;

  constructor(private readonly socket: WebSocket) {
    socket.binaryType = "arraybuffer";
  }

  /** Open `url`; rejects with TransportTimeout after `timeout` ms, ConnectionLost on failure. */
  static open(url: string, timeout = 10_000): Promise<BrowserWebSocketTransport> {
    const Ctor = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
    if (Ctor === undefined) {
      return Promise.reject(
        new ConnectionLost(
          "no WebSocket in this environment (Node: use @wirestream/rsocket/node)",
          "unsupported",
        ),
      );
    }
    const socket = new Ctor(url);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.close();
        reject(new TransportTimeout(`connecting to ${url} took longer than ${timeout} ms`));
      }, timeout);
      socket.onopen = () => {
        clearTimeout(timer);
        socket.onerror = null;
        resolve(new BrowserWebSocketTransport(socket));
      };
      socket.onerror = () => {
        clearTimeout(timer);
        reject(new ConnectionLost(`cannot connect to ${url}`, "refused"));
      };
    });
  }

  start(sink: TransportSink): void {
    this.sink = sink;
    this.socket.onmessage = (event: MessageEvent) => {
      const data: unknown = event.data;
      if (data instanceof ArrayBuffer) {
        sink.data(withPrefix(new Uint8Array(data)));
      } else {
        this.fail(
          new ConnectionLost("a text WebSocket message (RSocket frames are binary)", "protocol"),
        );
      }
    };
    this.socket.onclose = () => this.fail(null);
    this.socket.onerror = () => this.fail(new ConnectionLost("WebSocket error", "reset"));
  }

  send(frames: readonly Bytes[]): void {
    if (this.ended) {
      return;
    }
    for (const frame of frames) {
      this.socket.send(frame.subarray(3));
    }
  }

  close(): void {
    this.socket.close();
    this.fail(null);
  }

  private fail(error: Error | null): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    this.sink?.closed(error);
  }
}
