/**
 * `connect(url, options)`: an RSocket client over a Transport (the browser's WebSocket
 * here; TCP and Node's WebSocket in `@wirestream/rsocket/node`).
 */

import type { Bytes } from "./bytes.js";
import { ConnectionLost } from "@wirestream/runtime";

import { RSocketEngine, type Limits } from "./engine.js";
import { EMPTY } from "./engine_core.js";
import { ResumeNotAllowed } from "./errors.js";
import { RSocketPeer, type RSocketHandler } from "./peer.js";
import { BrowserWebSocketTransport, type Transport } from "./transport.js";

export interface ConnectOptions {
  /** Milliseconds between our KEEPALIVE frames (SETUP's Time Between KEEPALIVE Frames). */
  keepalive?: number;
  /** Milliseconds of silence after which the server is assumed dead. */
  maxLifetime?: number;
  /** Set the SETUP's L flag: requests wait for the server's LEASE, and we grant it one. */
  lease?: boolean;
  /** Make the session survive a lost transport: dial again and RESUME (random token). */
  resume?: boolean;
  /** Milliseconds a lost session may take to resume (default 30 000). */
  resumeTimeout?: number;
  metadataMimeType?: string;
  dataMimeType?: string;
  setupData?: Bytes;
  setupMetadata?: Bytes | null;
  /** Answers the server's requests to us. */
  handler?: RSocketHandler;
  /** Items granted at first on each stream (default 256). */
  limitRate?: number;
  limits?: Limits;
  /** Milliseconds to open the transport. */
  timeout?: number;
  /** Milliseconds, past one keepalive interval, by which the server's first frame is due
   * (HandshakeTimeout ends the connection otherwise; default 10 000, Python's; null: never).
   * The server owes nothing before the answer to our first KEEPALIVE (no SETUP_OK in
   * RSocket), hence the interval on top. */
  handshakeTimeout?: number | null;
  /** Milliseconds without a whole frame from the server before the connection ends
   * (IdleTimeout; default: never). */
  idleTimeout?: number | null;
  /** Milliseconds a frame the server began may take (FrameTimeout; default 60 000). */
  frameTimeout?: number | null;
}

/**
 * A client engine and peer over an open transport; the SETUP is sent at once. `dial`
 * opens another transport to the same server (for `resume`).
 */
export function startClient(
  transport: Transport,
  options: ConnectOptions = {},
  dial: (() => Promise<Transport>) | null = null,
): RSocketPeer {
  const resume = options.resume === true;
  if (resume && dial === null) {
    transport.close();
    throw new ResumeNotAllowed("resume needs a way to dial the server again");
  }
  const engine = new RSocketEngine("client", {
    setup: {
      keepaliveInterval: options.keepalive ?? 20_000,
      maxLifetime: options.maxLifetime ?? 90_000,
      metadataMimeType: options.metadataMimeType ?? "application/octet-stream",
      dataMimeType: options.dataMimeType ?? "application/octet-stream",
      data: options.setupData ?? EMPTY,
      metadata: options.setupMetadata ?? null,
      lease: options.lease ?? false,
      resumeToken: resume ? crypto.getRandomValues(new Uint8Array(16)) : null,
    },
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
    // the EXT types our handler's onExt takes (others without the I flag end the connection)
    ...(options.handler?.extensions !== undefined
      ? { extensions: options.handler.extensions }
      : {}),
  });
  const peer = new RSocketPeer(engine, transport, options.handler ?? {}, {
    ...(options.limitRate !== undefined ? { limitRate: options.limitRate } : {}),
    ...(options.resumeTimeout !== undefined ? { resumeTimeout: options.resumeTimeout } : {}),
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
    reconnect: resume ? dial : null,
    ...(options.idleTimeout !== undefined ? { idleTimeout: options.idleTimeout } : {}),
    ...(options.frameTimeout !== undefined ? { frameTimeout: options.frameTimeout } : {}),
    firstFrameTimeout: firstFrameDue(options),
  });
  engine.connect(performance.now());
  if (options.lease === true) {
    // "The client-side Responder MUST send a LEASE frame after a SETUP frame with the L
    // flag set": an unbounded one, renewed by nobody (its TTL is 2^31-1 ms).
    peer.sendLease(0x7fffffff, 0x7fffffff);
  }
  peer.flush();
  return peer;
}

/** When the server's first frame is due, in ms from now (null: never): the handshake limit
 * plus one keepalive interval (no keepalives: not due), as Python's client. */
function firstFrameDue(options: ConnectOptions): number | null {
  const handshake = options.handshakeTimeout === undefined ? 10_000 : options.handshakeTimeout;
  const interval = options.keepalive ?? 20_000;
  return handshake === null || interval === 0 ? null : handshake + interval;
}

/** Connect to `url` (ws:// or wss://) with the environment's WebSocket and send SETUP. */
export async function connect(url: string, options: ConnectOptions = {}): Promise<RSocketPeer> {
  const scheme = url.split(":", 1)[0]!.toLowerCase();
  if (scheme !== "ws" && scheme !== "wss") {
    throw new ConnectionLost(
      `${scheme}: is not a browser transport (ws, wss); Node: @wirestream/rsocket/node`,
      "unsupported",
    );
  }
  const dial = (): Promise<Transport> => BrowserWebSocketTransport.open(url, options.timeout);
  return startClient(await dial(), options, dial);
}
