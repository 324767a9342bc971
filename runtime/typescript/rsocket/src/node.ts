/**
 * @wirestream/rsocket/node: RSocket over Node's TCP, TLS and Unix domain sockets (client
 * and server: `tcp://host:port`, `tls://host:port`, `unix:///path/to/socket`, the URLs of
 * the Python runtime) and WebSocket (client and server, with the `ws` package: Node 20 has
 * no WebSocket server and its client is behind a flag).
 *
 * ```ts
 * import { connect, serve } from "@wirestream/rsocket/node";
 * const server = await serve("tcp://127.0.0.1:0", { requestResponse: (p) => p });
 * const rs = await connect(server.url, { keepalive: 20_000 });
 * ```
 */

import type { Bytes } from "./bytes.js";
import * as net from "node:net";
import * as tls from "node:tls";

import { ConnectionLost, HandshakeTimeout, TransportTimeout } from "@wirestream/runtime";
import { WebSocket, WebSocketServer, type RawData } from "ws";

import { tap, type CaptureWriter } from "./capture.js";
import { startClient, type ConnectOptions } from "./connect.js";
import { RSocketEngine, type Limits, type SetupPolicy } from "./engine.js";
import { ApplicationError } from "./errors.js";
import type { SetupInfo } from "./events.js";
import { RSocketPeer, type RSocketHandler } from "./peer.js";
import type { RSocketPayload } from "./streams.js";
import { withPrefix, type Transport, type TransportSink } from "./transport.js";

export * from "./index.js";
export {
  CaptureWriter,
  CapturedTransport,
  DEFAULT_MAX_FILE_BYTES,
  captureFiles,
  tap,
  type CaptureOptions,
} from "./capture.js";

/** A TCP socket as a transport: frames behind their 24-bit length, as RSocket over TCP. */
export class TcpTransport implements Transport {
  private ended = false;
  private sink: TransportSink | null = null;

  constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
  }

  start(sink: TransportSink): void {
    this.sink = sink;
    this.socket.on("data", (chunk: Buffer) => sink.data(view(chunk)));
    this.socket.on("error", (error: Error) => this.end(new ConnectionLost(error.message, "reset")));
    this.socket.on("close", () => this.end(null));
  }

  send(frames: readonly Bytes[]): void {
    if (this.ended || this.socket.destroyed) return;
    if (frames.length === 1) {
      this.socket.write(frames[0]!);
    } else {
      this.socket.write(Buffer.concat(frames));
    }
  }

  close(): void {
    this.socket.end();
    this.end(null);
  }

  private end(error: Error | null): void {
    if (this.ended) return;
    this.ended = true;
    this.sink?.closed(error);
  }
}

/** A `ws` WebSocket as a transport: one frame per binary message, no length prefix. */
export class NodeWebSocketTransport implements Transport {
  private ended = false;
  private sink: TransportSink | null = null;

  constructor(private readonly socket: WebSocket) {
    socket.binaryType = "nodebuffer";
  }

  start(sink: TransportSink): void {
    this.sink = sink;
    this.socket.on("message", (data: RawData, isBinary: boolean) => {
      if (!isBinary) {
        this.socket.close(1003, "RSocket frames are binary");
        this.end(
          new ConnectionLost("a text WebSocket message (RSocket frames are binary)", "protocol"),
        );
        return;
      }
      const message = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      sink.data(withPrefix(message));
    });
    this.socket.on("error", (error: Error) => this.end(new ConnectionLost(error.message, "reset")));
    this.socket.on("close", () => this.end(null));
  }

  send(frames: readonly Bytes[]): void {
    if (this.ended || this.socket.readyState !== WebSocket.OPEN) return;
    for (const frame of frames) {
      this.socket.send(frame.subarray(3), { binary: true });
    }
  }

  close(): void {
    this.socket.close();
    this.end(null);
  }

  private end(error: Error | null): void {
    if (this.ended) return;
    this.ended = true;
    this.sink?.closed(error);
  }
}

function parse(url: string): { scheme: string; host: string; port: number; path: string } {
  const parsed = new URL(url);
  const scheme = parsed.protocol.replace(/:$/, "").toLowerCase();
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  // unix:///tmp/x.sock (as Python's endpoints): the socket's path, no host or port
  const path = scheme === "unix" ? decodeURIComponent(parsed.host + parsed.pathname) : "";
  if (scheme === "unix" && path === "") {
    throw new ConnectionLost(`${url}: a unix URL needs a path (unix:///tmp/x.sock)`, "unsupported");
  }
  return {
    scheme,
    host,
    port: Number(parsed.port || (scheme === "wss" ? 443 : scheme === "ws" ? 80 : 7878)),
    path,
  };
}

/** A socket connecting (TCP, TLS or Unix) as the transport once it is connected. */
function dialSocket(
  socket: net.Socket,
  event: "connect" | "secureConnect",
  url: string,
  settle: (error: Error | null, transport?: Transport) => void,
): () => void {
  socket.once(event, () => {
    socket.removeAllListeners("error");
    settle(null, new TcpTransport(socket));
  });
  socket.once("error", (error) =>
    settle(new ConnectionLost(`cannot connect to ${url}: ${error.message}`, "refused")),
  );
  return () => socket.destroy();
}

/** Open a transport to `url`: tcp://host:port, tls://host:port (`tlsOptions`: Node's, e.g.
 * `ca` for a private certificate authority; the server's name is checked against the
 * host), unix:///path, ws:// or wss://. */
export function openTransport(
  url: string,
  timeout = 10_000,
  tlsOptions: tls.ConnectionOptions = {},
): Promise<Transport> {
  const { scheme, host, port, path } = parse(url);
  return new Promise<Transport>((resolve, reject) => {
    let settled = false;
    const settle = (error: Error | null, transport?: Transport): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error !== null) reject(error);
      else resolve(transport!);
    };
    let abandon = (): void => {};
    const timer = setTimeout(() => {
      abandon();
      settle(new TransportTimeout(`connecting to ${url} took longer than ${timeout} ms`));
    }, timeout);
    if (scheme === "tcp") {
      abandon = dialSocket(net.connect({ host, port }), "connect", url, settle);
    } else if (scheme === "tls") {
      // SNI only for names (RFC 6066, 3: "Literal IPv4 and IPv6 addresses are not permitted")
      const servername = net.isIP(host) === 0 ? { servername: host } : {};
      const socket = tls.connect({ host, port, ...servername, ...tlsOptions });
      abandon = dialSocket(socket, "secureConnect", url, settle);
    } else if (scheme === "unix") {
      abandon = dialSocket(net.connect({ path }), "connect", url, settle);
    } else if (scheme === "ws" || scheme === "wss") {
      const socket = new WebSocket(url);
      abandon = () => socket.terminate();
      socket.once("open", () => {
        socket.removeAllListeners("error");
        settle(null, new NodeWebSocketTransport(socket));
      });
      socket.once("error", (error: Error) =>
        settle(new ConnectionLost(`cannot connect to ${url}: ${error.message}`, "refused")),
      );
    } else {
      settle(
        new ConnectionLost(
          `unsupported transport ${scheme}: (tcp, tls, unix, ws, wss)`,
          "unsupported",
        ),
      );
    }
  });
}

/** What `connect` takes in Node: the options of every transport, and TLS's. */
export interface NodeConnectOptions extends ConnectOptions {
  /** For tls:// URLs: Node's TLS options (`ca`, `cert`/`key` for a client certificate,
   * `rejectUnauthorized`...); the default verifies the server against the system's CAs. */
  tls?: tls.ConnectionOptions;
  /** Record every frame of the connection (each transport, resumed ones too) to this
   * capture, as the client side. */
  capture?: CaptureWriter;
}

/** Connect to `url` (tcp://, tls://, unix://, ws://, wss://) and send SETUP. */
export async function connect(url: string, options: NodeConnectOptions = {}): Promise<RSocketPeer> {
  const dial = async (): Promise<Transport> =>
    tap(await openTransport(url, options.timeout, options.tls), options.capture, "client");
  return startClient(await dial(), options, dial);
}

/** A handler, or one per connection made from the accepted SETUP. */
export type HandlerFactory =
  | RSocketHandler
  | ((setup: SetupInfo | null, peer: RSocketPeer) => RSocketHandler);

export interface ServeOptions {
  limits?: Limits;
  setupPolicy?: SetupPolicy;
  /** Grant leases `[ttlMs, requests]` to clients whose SETUP asks for them (renewed at half
   * the TTL); without it such a SETUP is refused with UNSUPPORTED_SETUP. */
  lease?: readonly [number, number];
  limitRate?: number;
  /** Milliseconds a connection may take to send its SETUP (default 10 000; 0: never). */
  handshakeTimeout?: number;
  /** Keep the sessions of clients that negotiated resumption when their transport is
   * lost, for `resumeTimeout` ms (default 30 000), and continue them on a RESUME. */
  resume?: boolean;
  resumeTimeout?: number;
  /** Milliseconds without a whole frame before a connection is dropped (IdleTimeout). */
  idleTimeout?: number | null;
  /** Milliseconds a begun frame may take (FrameTimeout; default 60 000; null: never). */
  frameTimeout?: number | null;
  /** Connections open at once (default 4096; 0: no limit); more are closed at once. */
  maxConnections?: number;
  /** Called with each accepted connection's peer (its `closed` and `error` say how it ended). */
  onConnection?: (peer: RSocketPeer) => void;
  /** EXT extended types the connections' handlers take (`onExt`), besides those a handler
   * object declares itself (`RSocketHandler.extensions`): a handler factory's connections
   * are set up before it is called, so it declares them here. */
  extensions?: Iterable<number>;
  /** For tls:// URLs (required there): Node's TLS server options, at least `key` and `cert`. */
  tls?: tls.TlsOptions;
  /** Record every frame of every connection to this capture, as the server side. */
  capture?: CaptureWriter;
}

function hex(bytes: Bytes): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export interface Server {
  /** Where it listens: tcp://host:port, tls://host:port, unix:///path or ws://host:port. */
  readonly url: string;
  readonly port: number;
  /** The connections open now. */
  readonly peers: ReadonlySet<RSocketPeer>;
  /** Connections closed at once because `maxConnections` were open. */
  readonly refused: number;
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

/** Serve RSocket on `url` (tcp://host:port, tls://host:port, unix:///path or
 * ws://host:port; port 0 picks one). */
export async function serve(
  url: string,
  handler: HandlerFactory,
  options: ServeOptions = {},
): Promise<Server> {
  const { scheme, host, port, path } = parse(url);
  if (scheme === "tls" && (options.tls?.key === undefined || options.tls.cert === undefined)) {
    throw new ConnectionLost("serving tls:// needs options.tls with its key and cert", "unsupported");
  }
  const peers = new Set<RSocketPeer>();
  /** Resumable sessions by token: the peer that owns each. */
  const sessions = new Map<string, RSocketPeer>();
  const resume = options.resume ?? false;
  const maxConnections = options.maxConnections ?? 4096;
  const extensions = new Set<number>(options.extensions ?? []);
  if (typeof handler !== "function") for (const type of handler.extensions ?? []) extensions.add(type);
  let refused = 0;
  const accept = (accepted: Transport): void => {
    if (maxConnections > 0 && peers.size >= maxConnections) {
      refused += 1; // the limit of Python's serve: closed before anything is read
      accepted.close();
      return;
    }
    const transport = tap(accepted, options.capture, "server");
    const engine = new RSocketEngine("server", {
      ...(resume
        ? {
            resumeLookup: (token: Bytes) => {
              const owner = sessions.get(hex(token));
              return owner === undefined ? null : owner.engine.session();
            },
          }
        : {}),
      ...(options.limits !== undefined ? { limits: options.limits } : {}),
      ...(options.setupPolicy !== undefined ? { setupPolicy: options.setupPolicy } : {}),
      leasing: options.lease !== undefined,
      ...(extensions.size > 0 ? { extensions } : {}),
    });
    // The connection's handler, made from its SETUP when the first request needs it
    // (requests may arrive in the same read as the SETUP).
    let made: RSocketHandler | null = null;
    const current = (): RSocketHandler =>
      (made ??= typeof handler === "function" ? handler(engine.setup, peer) : handler);
    const missing = (what: string): never => {
      throw new ApplicationError(`no handler for ${what}`);
    };
    const requestResponse = (p: RSocketPayload, s: AbortSignal) => {
      const h = current();
      return h.requestResponse === undefined
        ? missing("request-response")
        : h.requestResponse(p, s);
    };
    // The peer passes a signal of its own only to a handler declared with that parameter
    // (RSocketHandler.requestResponse): the proxy declares what the handler does.
    Object.defineProperty(requestResponse, "length", {
      get: () => current().requestResponse?.length ?? 2,
    });
    const proxy: RSocketHandler = {
      requestResponse,
      fireAndForget: (p) => current().fireAndForget?.(p),
      requestStream: (p, s) => {
        const h = current();
        return h.requestStream === undefined ? missing("request-stream") : h.requestStream(p, s);
      },
      requestChannel: (p, i, s) => {
        const h = current();
        return h.requestChannel === undefined
          ? missing("request-channel")
          : h.requestChannel(p, i, s);
      },
      metadataPush: (m) => current().metadataPush?.(m),
      onExt: (type, p, streamId) => current().onExt?.(type, p, streamId),
    };
    const peer = new RSocketPeer(engine, transport, proxy, {
      ...(options.limitRate !== undefined ? { limitRate: options.limitRate } : {}),
      ...(options.resumeTimeout !== undefined ? { resumeTimeout: options.resumeTimeout } : {}),
      keepSessions: resume,
      ...(options.idleTimeout !== undefined ? { idleTimeout: options.idleTimeout } : {}),
      ...(options.frameTimeout !== undefined ? { frameTimeout: options.frameTimeout } : {}),
      sessionOwner: (token) => sessions.get(hex(token)) ?? null,
    });
    peers.add(peer);
    options.onConnection?.(peer);
    const handshake = options.handshakeTimeout ?? 10_000;
    const timer =
      handshake > 0
        ? setTimeout(() => {
            if (engine.setup === null) {
              const limit = handshake / 1000;
              peer.abort(new HandshakeTimeout(`no SETUP within ${limit} s`, limit));
            }
          }, handshake)
        : null;
    let renew: ReturnType<typeof setInterval> | null = null;
    void peer.established().then(
      () => {
        if (timer !== null) clearTimeout(timer);
        const token = engine.setup?.resumeToken ?? null;
        if (resume && token !== null) {
          const key = hex(token);
          sessions.set(key, peer);
          void peer.closed.then(() => {
            if (sessions.get(key) === peer) sessions.delete(key);
          });
        }
        if (options.lease !== undefined && engine.setup?.lease === true) {
          const [ttl, requests] = options.lease;
          peer.sendLease(ttl, requests);
          renew = setInterval(
            () => peer.sendLease(ttl, requests),
            Math.max(1, Math.floor(ttl / 2)),
          );
        }
      },
      () => {},
    );
    void peer.closed.then(() => {
      if (timer !== null) clearTimeout(timer);
      if (renew !== null) clearInterval(renew);
      peers.delete(peer);
    });
  };
  if (scheme === "tcp" || scheme === "tls" || scheme === "unix") {
    const server =
      scheme === "tls"
        ? tls.createServer(options.tls ?? {}, (socket) => accept(new TcpTransport(socket)))
        : net.createServer((socket) => accept(new TcpTransport(socket)));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      if (scheme === "unix") server.listen(path, () => resolve());
      else server.listen(port, host, () => resolve());
    });
    const bound = scheme === "unix" ? 0 : (server.address() as net.AddressInfo).port;
    return {
      url: scheme === "unix" ? `unix://${path}` : `${scheme}://${host}:${bound}`,
      port: bound,
      peers,
      get refused() {
        return refused;
      },
      close: async () => {
        await Promise.all([...peers].map((peer) => peer.close(0)));
        // (a Unix server's socket file: Node removes it on close)
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }
  if (scheme === "ws") {
    const server = new WebSocketServer({ host, port });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.once("listening", () => resolve());
    });
    server.on("connection", (socket: WebSocket) => accept(new NodeWebSocketTransport(socket)));
    const bound = (server.address() as net.AddressInfo).port;
    return {
      url: `ws://${host}:${bound}`,
      port: bound,
      peers,
      get refused() {
        return refused;
      },
      close: async () => {
        await Promise.all([...peers].map((peer) => peer.close(0)));
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }
  throw new ConnectionLost(`cannot serve ${scheme}: (tcp, tls, unix, ws)`, "unsupported");
}

/** A socket's Buffer as the byte view the engine takes (no copy): Node reads sockets into
 * ordinary ArrayBuffers, never shared ones, so the narrower type holds. */
function view(chunk: Buffer): Bytes {
  return new Uint8Array(chunk.buffer as ArrayBuffer, chunk.byteOffset, chunk.byteLength);
}
