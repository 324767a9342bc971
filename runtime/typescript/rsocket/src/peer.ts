/**
 * RSocket over any Transport: the peer `connect` and `serve` return (twin of
 * runtime/rsocket/aio.py and peer_connection.py). Either side is requester and responder
 * at once. The sans-I/O RSocketEngine keeps every protocol rule; this maps its events to
 * what applications await:
 *
 * - `await peer.requestResponse(p)`; `await peer.fireAndForget(p)`; `await peer.metadataPush(m)`;
 * - `for await (const p of peer.requestStream(p, { limitRate: 64 }))`: REQUEST_N follows
 *   consumption, `break` sends CANCEL, an AbortSignal cancels;
 * - `peer.requestChannel(first, outbound, ...)`: both directions under request-n;
 * - inbound requests run the RSocketHandler's methods; stream publishers are pulled only
 *   while the requester's REQUEST_N allows.
 *
 * Times are milliseconds of `performance.now()`; every wait ends (a signal, the
 * connection's end, or a timeout).
 */

import { ErrorCode } from "@wirestream/generated/rsocket/v1_0";
import { ConnectionState } from "@wirestream/generated/rsocket/v1_0/machines";
import { ConnectionLost, ProtocolError, StreamCancelled } from "@wirestream/runtime";

import { MAX_N, RSocketEngine, type Limits } from "./engine.js";
import { ApplicationError, SetupRejected, StreamError } from "./errors.js";
import type { Event, EventOf, SetupInfo } from "./events.js";
import { Inbound, type RSocketPayload } from "./streams.js";
import type { Transport } from "./transport.js";

const decoder = new TextDecoder();
const encoder = new TextEncoder();
export const DEFAULT_LIMIT_RATE = 256;

type Source = AsyncIterable<RSocketPayload> | Iterable<RSocketPayload>;

/** What a peer answers the other side's requests with; a missing method rejects them. */
export interface RSocketHandler {
  requestResponse?(
    request: RSocketPayload,
    signal: AbortSignal,
  ): Promise<RSocketPayload> | RSocketPayload;
  fireAndForget?(request: RSocketPayload): Promise<void> | void;
  requestStream?(request: RSocketPayload, signal: AbortSignal): Source;
  requestChannel?(
    first: RSocketPayload,
    inbound: AsyncIterable<RSocketPayload>,
    signal: AbortSignal,
  ): Source;
  metadataPush?(metadata: Uint8Array): Promise<void> | void;
}

export interface StreamOptions {
  /** Items granted at first and kept outstanding as they are consumed (default 256). */
  limitRate?: number;
  signal?: AbortSignal;
}

export interface PeerOptions {
  limitRate?: number;
  /** (client) Dial a new transport to resume a resumable session on; null: no resumption. */
  reconnect?: (() => Promise<Transport>) | null;
  /** Milliseconds a lost session may take to resume before it ends (default 30 000). */
  resumeTimeout?: number;
  /** The limits a resumed engine keeps. */
  limits?: Limits;
  /** (server) Keep a resumable session when its transport is lost, for `resumeTimeout`. */
  keepSessions?: boolean;
  /** (server) The peer whose session a RESUME on this connection continued. */
  sessionOwner?: (token: Uint8Array) => RSocketPeer | null;
}

/** What a peer that handed its connection over keeps as its transport: nothing. */
const DETACHED: Transport = {
  start: () => {},
  send: () => {},
  close: () => {},
};

/** How one stream's events reach whoever waits on it. */
interface StreamSide {
  payload(item: RSocketPayload, complete: boolean): void;
  complete(): void;
  error(error: Error): void;
  canceled(): void;
  requestN(): void;
}

function streamError(errorCode: number, data: Uint8Array): StreamError {
  const message = decoder.decode(data);
  return errorCode === ErrorCode.APPLICATION_ERROR
    ? new ApplicationError(message)
    : new StreamError(errorCode, message);
}

function iterate(source: Source): AsyncIterator<RSocketPayload> | Iterator<RSocketPayload> {
  if (Symbol.asyncIterator in source) {
    return source[Symbol.asyncIterator]();
  }
  return source[Symbol.iterator]();
}

export class RSocketPeer {
  /** The connection's engine (a new one after each resumption). */
  engine: RSocketEngine;
  /** The transport is lost and a resumption is under way: commands wait for it. */
  parked = false;
  /** Resolves when the connection is over (rejects never; see `error`). */
  readonly closed: Promise<void>;
  /** Why the connection ended (null while open, or after a clean close). */
  error: Error | null = null;
  private transport: Transport;
  private readonly reconnect: (() => Promise<Transport>) | null;
  private readonly resumeTimeout: number;
  private readonly limits: Limits | undefined;
  private deferred: (() => void)[] = [];
  private resumedWaiters: (() => void)[] = [];
  private attempt: { resolve: () => void; reject: (error: Error) => void } | null = null;
  private readonly keepSessions: boolean;
  private readonly sessionOwner: ((token: Uint8Array) => RSocketPeer | null) | null;
  private expiry: ReturnType<typeof setTimeout> | null = null;
  private readonly handler: RSocketHandler;
  private readonly limitRate: number;
  private readonly sides = new Map<number, StreamSide>();
  private ended = false;
  private resolveClosed: () => void = () => {};
  private timer: ReturnType<typeof setTimeout> | null = null;
  private flushQueued = false;
  private leaseWaiters: (() => void)[] = [];
  private establishedWaiters: (() => void)[] = [];

  constructor(
    engine: RSocketEngine,
    transport: Transport,
    handler: RSocketHandler = {},
    options: PeerOptions = {},
  ) {
    this.engine = engine;
    this.transport = transport;
    this.handler = handler;
    this.limitRate = options.limitRate ?? DEFAULT_LIMIT_RATE;
    this.reconnect = options.reconnect ?? null;
    this.resumeTimeout = options.resumeTimeout ?? 30_000;
    this.limits = options.limits;
    this.keepSessions = options.keepSessions ?? false;
    this.sessionOwner = options.sessionOwner ?? null;
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    this.attach(transport);
  }

  private attach(transport: Transport): void {
    this.transport = transport;
    // A transport that was replaced delivers nothing more.
    transport.start({
      data: (chunk) => {
        if (transport === this.transport) this.receive(chunk);
      },
      closed: (error) => {
        if (transport === this.transport) this.transportClosed(error);
      },
    });
  }

  /** The SETUP in force (ours on a client, the client's on a server). */
  get setup(): SetupInfo | null {
    return this.engine.setup;
  }

  // ================================================================ requester

  async requestResponse(
    request: RSocketPayload,
    options: { signal?: AbortSignal } = {},
  ): Promise<RSocketPayload> {
    await this.ready(options.signal);
    const streamId = this.engine.requestResponse(request.data, request.metadata, now());
    this.flush();
    return new Promise<RSocketPayload>((resolve, reject) => {
      const signal = options.signal;
      const onAbort = (): void => {
        if (this.sides.delete(streamId)) {
          this.command(() => this.engine.cancel(streamId));
        }
        reject(
          signal?.reason instanceof Error
            ? signal.reason
            : new StreamCancelled("the request was aborted"),
        );
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = (): void => {
        signal?.removeEventListener("abort", onAbort);
        this.sides.delete(streamId);
      };
      this.sides.set(streamId, {
        payload: (item) => {
          done();
          resolve(item);
        },
        complete: () => {
          done();
          resolve({ data: new Uint8Array(0), metadata: null });
        },
        error: (error) => {
          done();
          reject(error);
        },
        canceled: () => {},
        requestN: () => {},
      });
    });
  }

  async fireAndForget(request: RSocketPayload): Promise<void> {
    await this.ready();
    this.engine.fireAndForget(request.data, request.metadata, now());
    this.flush();
  }

  async metadataPush(metadata: Uint8Array): Promise<void> {
    this.checkOpen();
    this.engine.metadataPush(metadata);
    this.flush();
  }

  /** The responder's items, as they are consumed (REQUEST_N follows consumption). */
  requestStream(request: RSocketPayload, options: StreamOptions = {}): Inbound {
    const inbound = new Inbound(options.limitRate ?? this.limitRate, options.signal);
    void this.open(inbound, options.signal, () =>
      this.engine.requestStream(request.data, request.metadata, inbound.limitRate, now()),
    );
    return inbound;
  }

  /**
   * A channel: `first` opens it, `outbound` follows as the responder grants REQUEST_N
   * (null: our side completes with the first message); the responder's items come back.
   */
  requestChannel(
    first: RSocketPayload,
    outbound: Source | null,
    options: StreamOptions = {},
  ): Inbound {
    const inbound = new Inbound(options.limitRate ?? this.limitRate, options.signal);
    void this.open(
      inbound,
      options.signal,
      () =>
        this.engine.requestChannel(
          first.data,
          first.metadata,
          inbound.limitRate,
          outbound === null,
          now(),
        ),
      outbound,
    );
    return inbound;
  }

  private async open(
    inbound: Inbound,
    signal: AbortSignal | undefined,
    send: () => number,
    outbound: Source | null = null,
  ): Promise<void> {
    let streamId: number;
    try {
      await this.ready(signal);
      streamId = send();
    } catch (error) {
      inbound.fail(error instanceof Error ? error : new ProtocolError(String(error)));
      return;
    }
    this.flush();
    let pump: OutboundPump | null = null;
    inbound.owner = {
      request: (n) =>
        this.command(() => {
          if (this.engine.openStreams.has(streamId)) this.engine.request(streamId, n);
        }),
      cancel: () => {
        pump?.stop();
        if (this.sides.delete(streamId) && this.engine.openStreams.has(streamId)) {
          this.command(() => this.engine.cancel(streamId));
        }
      },
    };
    if (outbound !== null) {
      pump = new OutboundPump(this, streamId, iterate(outbound), new AbortController());
    }
    this.sides.set(streamId, {
      payload: (item, complete) => {
        inbound.push(item);
        if (complete) this.endSide(streamId, pump, () => inbound.complete());
      },
      complete: () => this.endSide(streamId, pump, () => inbound.complete()),
      error: (error) => {
        pump?.stop();
        this.sides.delete(streamId);
        inbound.fail(error);
      },
      canceled: () => pump?.stop(), // the responder cancelled our half of the channel
      requestN: () => pump?.wake(),
    });
    void pump?.run();
  }

  private endSide(streamId: number, pump: OutboundPump | null, end: () => void): void {
    if (!this.engine.openStreams.has(streamId) && pump === null) {
      this.sides.delete(streamId);
    } else if (!this.engine.openStreams.has(streamId)) {
      pump?.stop();
      this.sides.delete(streamId);
    }
    end();
  }

  // ================================================================ responder

  private onRequest(event: EventOf<"RequestReceived">): void {
    const handler = this.handler;
    const request: RSocketPayload = { data: event.data, metadata: event.metadata };
    const streamId = event.streamId;
    const controller = new AbortController();
    const fail = (error: unknown): void => {
      if (!this.engine.openStreams.has(streamId) || controller.signal.aborted) {
        return;
      }
      const code = error instanceof StreamError ? error.errorCode : ErrorCode.APPLICATION_ERROR;
      const message = error instanceof Error ? error.message : String(error);
      this.command(() => this.engine.sendError(streamId, code, message));
    };
    const missing = (what: string): void => fail(new ApplicationError(`no handler for ${what}`));
    switch (event.model) {
      case "fire_and_forget":
        if (handler.fireAndForget !== undefined) {
          void Promise.resolve()
            .then(() => handler.fireAndForget?.(request))
            .catch(() => {});
        }
        return;
      case "request_response": {
        this.sides.set(streamId, this.responderSide(controller, null, null));
        if (handler.requestResponse === undefined) {
          missing("request-response");
          this.sides.delete(streamId);
          return;
        }
        Promise.resolve()
          .then(() => handler.requestResponse!(request, controller.signal))
          .then(
            (answer) => {
              this.sides.delete(streamId);
              if (!controller.signal.aborted && this.engine.openStreams.has(streamId)) {
                this.command(() =>
                  this.engine.sendNext(streamId, answer.data, answer.metadata, true),
                );
              }
            },
            (error: unknown) => {
              this.sides.delete(streamId);
              fail(error);
            },
          );
        return;
      }
      case "request_stream":
      case "request_channel": {
        let inbound: Inbound | null = null;
        if (event.model === "request_channel") {
          inbound = new Inbound(this.limitRate);
          if (event.complete) {
            inbound.complete();
          } else {
            inbound.owner = {
              request: (n) =>
                this.command(() => {
                  if (this.engine.openStreams.has(streamId)) this.engine.request(streamId, n);
                }),
              cancel: () => {},
            };
            this.command(() => this.engine.request(streamId, inbound!.limitRate));
          }
        }
        let source: Source;
        try {
          if (inbound !== null) {
            if (handler.requestChannel === undefined)
              throw new ApplicationError("no handler for request-channel");
            source = handler.requestChannel(request, inbound, controller.signal);
          } else {
            if (handler.requestStream === undefined)
              throw new ApplicationError("no handler for request-stream");
            source = handler.requestStream(request, controller.signal);
          }
        } catch (error) {
          fail(error);
          return;
        }
        const pump = new OutboundPump(this, streamId, iterate(source), controller);
        this.sides.set(streamId, this.responderSide(controller, pump, inbound));
        void pump.run();
        return;
      }
    }
  }

  private responderSide(
    controller: AbortController,
    pump: OutboundPump | null,
    inbound: Inbound | null,
  ): StreamSide {
    return {
      payload: (item, complete) => {
        inbound?.push(item);
        if (complete) inbound?.complete();
      },
      complete: () => inbound?.complete(),
      error: (error) => {
        inbound?.fail(error);
        controller.abort(error);
        pump?.stop();
      },
      canceled: () => {
        inbound?.fail(new StreamCancelled("the requester cancelled"));
        controller.abort(new StreamCancelled("the requester cancelled"));
        pump?.stop();
      },
      requestN: () => pump?.wake(),
    };
  }

  // ================================================================ connection

  /** Wait until requests may be sent: the SETUP is out and, with leasing, a LEASE came. */
  private async ready(signal?: AbortSignal): Promise<void> {
    this.checkOpen();
    signal?.throwIfAborted();
    while (this.parked) {
      await this.waitFor(this.resumedWaiters, signal);
      this.checkOpen();
    }
    if (this.engine.state === ConnectionState.AWAITING_LEASE) {
      await this.waitFor(this.leaseWaiters, signal);
      this.checkOpen();
    }
  }

  /** Resolves once the peer confirmed the SETUP (client) or it was accepted (server). */
  async established(signal?: AbortSignal): Promise<void> {
    const state = this.engine.state;
    if (state === ConnectionState.ESTABLISHED) return;
    this.checkOpen();
    await this.waitFor(this.establishedWaiters, signal);
    this.checkOpen();
  }

  private waitFor(waiters: (() => void)[], signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void =>
        reject(signal?.reason instanceof Error ? signal.reason : new StreamCancelled("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
      waiters.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  private checkOpen(): void {
    if (this.ended) {
      throw this.error ?? new ConnectionLost("the connection is closed", "closed");
    }
  }

  /** Grant the peer's requester `numberOfRequests` requests for `ttl` ms. */
  sendLease(ttl: number, numberOfRequests: number): void {
    this.command(() => this.engine.sendLease(ttl, numberOfRequests, null, now()));
  }

  /**
   * Close: gracefully (ERROR[CONNECTION_CLOSE], the open streams run to their end, within
   * `grace` ms) or, with `grace` 0, at once (ERROR[CONNECTION_ERROR]).
   */
  async close(grace = 5_000): Promise<void> {
    if (this.ended) {
      return this.closed;
    }
    if (
      grace > 0 &&
      (this.engine.state === ConnectionState.ESTABLISHED ||
        this.engine.state === ConnectionState.SETUP_SENT ||
        this.engine.state === ConnectionState.AWAITING_LEASE)
    ) {
      try {
        this.onEvents(this.engine.closeGracefully(encoder.encode("closing")));
        this.flush();
        const timer = setTimeout(
          () => this.abort(new ConnectionLost("the graceful close took too long", "closed")),
          grace,
        );
        await this.closed;
        clearTimeout(timer);
        return;
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
      }
    }
    if (!this.engine.closed) {
      this.onEvents(this.engine.close(ErrorCode.CONNECTION_ERROR, encoder.encode("closed")));
    }
    this.finish(null);
    return this.closed;
  }

  /** End the connection now with `error` (ERROR[CONNECTION_ERROR] if it is still open). */
  abort(error: Error): void {
    if (this.ended) return;
    if (!this.engine.closed) {
      try {
        this.engine.close(
          ErrorCode.CONNECTION_ERROR,
          encoder.encode(error.message).subarray(0, 1024),
        );
      } catch {
        // the machine refused (e.g. before SETUP): nothing to tell the peer
      }
    }
    this.finish(error);
  }

  // ================================================================ plumbing

  /** Run an engine command, then send what it queued. */
  command(run: () => void): void {
    if (this.ended) return;
    if (this.parked) {
      this.deferred.push(run); // run on the resumed engine, after its retransmission
      return;
    }
    try {
      run();
    } catch (error) {
      if (error instanceof ProtocolError) {
        this.abort(error);
        return;
      }
      throw error;
    }
    this.flush();
  }

  /** Send what the engine queued (coalesced to one transport write per microtask). */
  flush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      this.flushNow();
    });
  }

  private flushNow(): void {
    if (this.ended) return;
    const frames = this.engine.dataToSend();
    if (frames.length > 0) {
      this.transport.send(frames);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.ended) return;
    const deadline = this.engine.getTimer();
    if (deadline === null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        if (this.ended) return;
        this.onEvents(this.engine.handleTimer(now()));
        this.flushNow();
      },
      Math.max(0, deadline - now()),
    );
  }

  private receive(chunk: Uint8Array): void {
    if (this.ended) return;
    let events: Event[];
    try {
      events = this.engine.receiveData(chunk, now());
    } catch (error) {
      if (error instanceof ProtocolError) {
        const queued = (error as ProtocolError & { events?: Event[] }).events ?? [];
        this.onEvents(queued);
        this.flushNow();
        this.finish(error);
        return;
      }
      throw error;
    }
    this.onEvents(events);
    this.flush();
  }

  private transportClosed(error: Error | null): void {
    if (this.ended) return;
    this.onEvents(this.engine.receiveData(new Uint8Array(0), now()));
    if (this.parked) return; // a resumable session: resumeSession() dials again
    this.finish(error ?? this.error ?? new ConnectionLost("the transport closed", "eof"));
  }

  private onEvents(events: readonly Event[]): void {
    for (let index = 0; index < events.length; index++) {
      const event = events[index]!;
      if (event.type === "ConnectionResumed" && this.handOver(events.slice(index + 1))) {
        return;
      }
      switch (event.type) {
        case "ConnectionEstablished":
          this.wakeAll(this.establishedWaiters);
          break;
        case "ConnectionRejected": {
          const message = decoder.decode(event.message);
          this.error = new SetupRejected(event.errorCode, message);
          if (this.attempt !== null) {
            this.attempt.reject(this.error);
            break;
          }
          this.finishSoon(this.error);
          break;
        }
        case "ConnectionClosing":
          break;
        case "ConnectionClosed":
          if (event.resumable && (this.reconnect !== null || this.keepSessions)) {
            this.park();
            break;
          }
          if (!event.graceful && event.byPeer && event.errorCode !== null) {
            const message = decoder.decode(event.message);
            this.error = new ConnectionLost(
              `the peer closed the connection: ERROR[0x${event.errorCode.toString(16)}] ${message}`,
              "closed",
            );
          }
          this.finishSoon(event.graceful ? null : this.error);
          break;
        case "ConnectionResumed":
          this.resumed();
          break;
        case "ConnectionDead":
          // SETUP, Max Lifetime: "Time ... that a client will allow a server to not respond
          // to a KEEPALIVE before it is assumed to be dead."
          this.abort(
            new ConnectionLost(
              `no KEEPALIVE for ${(event.silentFor / 1000).toFixed(1)} s: peer assumed dead`,
              "keepalive",
            ),
          );
          break;
        case "RequestReceived":
          this.onRequest(event);
          break;
        case "PayloadReceived":
          this.sides
            .get(event.streamId)
            ?.payload({ data: event.data, metadata: event.metadata }, event.complete);
          break;
        case "StreamCompleted":
          this.sides.get(event.streamId)?.complete();
          break;
        case "ErrorReceived":
          this.sides.get(event.streamId)?.error(streamError(event.errorCode, event.data));
          this.sides.delete(event.streamId);
          break;
        case "StreamCanceled":
          this.sides.get(event.streamId)?.canceled();
          if (!this.engine.openStreams.has(event.streamId)) this.sides.delete(event.streamId);
          break;
        case "RequestNReceived":
          this.sides.get(event.streamId)?.requestN();
          break;
        case "StreamAborted":
          this.sides.get(event.streamId)?.error(new StreamError(event.errorCode, event.why));
          this.sides.delete(event.streamId);
          break;
        case "MetadataPushReceived": {
          const push = this.handler.metadataPush;
          if (push !== undefined) {
            void Promise.resolve()
              .then(() => push.call(this.handler, event.metadata))
              .catch(() => {});
          }
          break;
        }
        case "LeaseReceived":
          this.wakeAll(this.leaseWaiters);
          break;
        case "KeepaliveReceived":
          break;
      }
    }
  }

  // ================================================================ resumption

  /** The transport was lost under a resumable session: dial again and RESUME (client). */
  private park(): void {
    if (this.attempt !== null) {
      this.attempt.reject(new ConnectionLost("the transport closed while resuming", "eof"));
      return;
    }
    if (this.parked) return;
    this.parked = true;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.reconnect === null) {
      // (server) The client dials again: keep the session for it until the timeout.
      this.expiry = setTimeout(() => {
        const timeout = this.resumeTimeout;
        this.finish(new ConnectionLost(`not resumed within ${timeout} ms`, "resume-timeout"));
      }, this.resumeTimeout);
      return;
    }
    void this.resumeSession();
  }

  /**
   * (server) This new connection's RESUME continued another peer's session: that peer
   * takes over the engine and transport (its handlers and publishers go on), this one
   * ends quietly. False when this peer is the session's own.
   */
  private handOver(rest: readonly Event[]): boolean {
    if (this.engine.role !== "server" || this.sessionOwner === null) return false;
    const owner = this.sessionOwner(this.engine.session().token);
    if (owner === null || owner === this) return false;
    const { engine, transport } = this;
    this.transport = DETACHED;
    this.ended = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.resolveClosed();
    owner.takeOver(engine, transport, rest);
    return true;
  }

  /** (server) Continue on `engine` and `transport` (a resumed connection). */
  private takeOver(engine: RSocketEngine, transport: Transport, rest: readonly Event[]): void {
    if (this.expiry !== null) {
      clearTimeout(this.expiry);
      this.expiry = null;
    }
    const previous = this.transport;
    this.engine = engine;
    this.attach(transport);
    previous.close(); // a connection the server had not seen end yet
    this.flushNow(); // RESUME_OK and the retransmission
    this.resumed();
    this.onEvents(rest);
  }

  private async resumeSession(): Promise<void> {
    const reconnect = this.reconnect!;
    const deadline = now() + this.resumeTimeout;
    let delay = 5;
    let last: Error = new ConnectionLost(
      `not resumed within ${this.resumeTimeout} ms`,
      "resume-timeout",
    );
    while (!this.ended && now() < deadline) {
      let transport: Transport;
      try {
        transport = await reconnect();
      } catch (error) {
        last = error instanceof Error ? error : last;
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 1_000);
        continue;
      }
      if (this.ended) {
        transport.close();
        return;
      }
      let session;
      try {
        session = this.engine.session();
      } catch (error) {
        transport.close();
        this.finish(error instanceof Error ? error : last);
        return;
      }
      this.engine = RSocketEngine.resume(session, now(), this.limits);
      const outcome = new Promise<void>((resolve, reject) => {
        this.attempt = { resolve, reject };
      });
      this.attach(transport);
      this.flushNow();
      try {
        await outcome;
        return;
      } catch (error) {
        last = error instanceof Error ? error : last;
        if (
          error instanceof SetupRejected ||
          (error instanceof ProtocolError && !(error instanceof ConnectionLost))
        ) {
          break;
        }
      } finally {
        this.attempt = null;
      }
    }
    this.parked = false;
    this.finish(last);
  }

  /** RESUME_OK: the retransmission is queued; commands held meanwhile run now. */
  private resumed(): void {
    this.parked = false;
    if (this.expiry !== null) {
      clearTimeout(this.expiry);
      this.expiry = null;
    }
    this.attempt?.resolve();
    for (const run of this.deferred.splice(0)) {
      this.command(run);
    }
    for (const side of this.sides.values()) side.requestN(); // publishers go on
    this.wakeAll(this.resumedWaiters);
    this.flush();
  }

  private wakeAll(waiters: (() => void)[]): void {
    for (const wake of waiters.splice(0)) wake();
  }

  private finishSoon(error: Error | null): void {
    // Let the ERROR (or the last frames) that the engine queued go out first.
    queueMicrotask(() => {
      this.flushNow();
      this.finish(error);
    });
  }

  private finish(error: Error | null): void {
    if (this.ended) return;
    this.flushNowQuietly();
    this.ended = true;
    this.error = error;
    if (this.timer !== null) clearTimeout(this.timer);
    const ending = error ?? new ConnectionLost("the connection is closed", "closed");
    for (const side of this.sides.values()) side.error(ending);
    this.sides.clear();
    this.wakeAll(this.leaseWaiters);
    this.wakeAll(this.establishedWaiters);
    this.wakeAll(this.resumedWaiters);
    this.deferred = [];
    this.attempt?.reject(ending);
    if (this.expiry !== null) clearTimeout(this.expiry);
    this.transport.close();
    this.resolveClosed();
  }

  private flushNowQuietly(): void {
    const frames = this.engine.dataToSend();
    if (frames.length > 0) this.transport.send(frames);
  }

  /** Whether the stream is still open in the engine. */
  isOpen(streamId: number): boolean {
    return !this.ended && this.engine.openStreams.has(streamId);
  }
}

/**
 * Pulls items from a source only while the peer's REQUEST_N credit allows, and sends
 * them (a responder's stream, or a requester's channel half); completes or errors the
 * stream at the source's end.
 */
class OutboundPump {
  private waiter: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly peer: RSocketPeer,
    private readonly streamId: number,
    private readonly source: AsyncIterator<RSocketPayload> | Iterator<RSocketPayload>,
    private readonly controller: AbortController,
  ) {}

  wake(): void {
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      waiter();
    }
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.wake();
    void Promise.resolve(this.source.return?.()).catch(() => {});
  }

  async run(): Promise<void> {
    const { peer, streamId } = this;
    try {
      for (;;) {
        while (
          !this.stopped &&
          peer.isOpen(streamId) &&
          (peer.parked || peer.engine.outboundCredit(streamId) < 1)
        ) {
          await new Promise<void>((resolve) => {
            this.waiter = resolve;
          });
        }
        if (this.stopped || !peer.isOpen(streamId)) return;
        const result = await this.source.next();
        if (this.stopped || this.controller.signal.aborted || !peer.isOpen(streamId)) return;
        if (result.done === true) {
          peer.command(() => peer.engine.sendComplete(streamId));
          return;
        }
        const item = result.value;
        peer.command(() => peer.engine.sendNext(streamId, item.data, item.metadata));
      }
    } catch (error) {
      if (this.stopped || !peer.isOpen(streamId)) return;
      const code = error instanceof StreamError ? error.errorCode : ErrorCode.APPLICATION_ERROR;
      const message = error instanceof Error ? error.message : String(error);
      peer.command(() => peer.engine.sendError(streamId, code, message));
    }
  }
}

function now(): number {
  return performance.now();
}

export { MAX_N };
