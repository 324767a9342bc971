/**
 * The connection half of the RSocket peer (twin of runtime/rsocket/peer_connection.py): a
 * transport driving an RSocketEngine -- output and timers, establishment, leases, closing,
 * and resumption (a client dials again and RESUMEs; a server keeps the session and hands
 * it to the connection that resumes it). `RSocketPeer` (peer.ts) adds the streams.
 */

import type { Bytes } from "./bytes.js";
import {
  ConnectionLost,
  FrameTimeout,
  HandshakeTimeout,
  IdleTimeout,
  ProtocolError,
  StreamCancelled,
} from "@wirestream/runtime";
import { ErrorCode } from "@wirestream/generated/rsocket/v1_0";
import { ConnectionState } from "@wirestream/generated/rsocket/v1_0/machines";

import { RSocketEngine, type Limits } from "./engine.js";
import { SetupRejected } from "./errors.js";
import type { Event, SetupInfo } from "./events.js";
import type { Transport } from "./transport.js";

const decoder = new TextDecoder();
const encoder = new TextEncoder();

export interface PeerOptions {
  limitRate?: number;
  /** (client) Dial a new transport to resume a resumable session on; null: no resumption. */
  reconnect?: (() => Promise<Transport>) | null;
  /** Milliseconds a lost session may take to resume before it ends (default 30 000). */
  resumeTimeout?: number;
  /** Milliseconds without a whole frame from the peer before the connection ends
   * (IdleTimeout; default: never). */
  idleTimeout?: number | null;
  /** Milliseconds a frame the peer began may take to complete (FrameTimeout; default
   * 60 000; null: never). */
  frameTimeout?: number | null;
  /** Milliseconds from now until the peer's first whole frame is due (HandshakeTimeout
   * ends the connection otherwise; default: not due). */
  firstFrameTimeout?: number | null;
  /** The limits a resumed engine keeps. */
  limits?: Limits;
  /** (server) Keep a resumable session when its transport is lost, for `resumeTimeout`. */
  keepSessions?: boolean;
  /** (server) The peer whose session a RESUME on this connection continued. */
  sessionOwner?: (token: Bytes) => PeerConnection | null;
}

/** What a peer that handed its connection over keeps as its transport: nothing. */
const DETACHED: Transport = {
  start: () => {},
  send: () => {},
  close: () => {},
};

/** The connection of a peer; see RSocketPeer. */
export abstract class PeerConnection {
  /** The connection's engine (a new one after each resumption). */
  engine: RSocketEngine;
  /** The transport is lost and a resumption is under way: commands wait for it. */
  parked = false;
  /** Resolves when the connection is over (rejects never; see `error`). */
  readonly closed: Promise<void>;
  /** Why the connection ended (null while open, or after a clean close). */
  error: Error | null = null;
  protected transport: Transport;
  protected readonly reconnect: (() => Promise<Transport>) | null;
  protected readonly resumeTimeout: number;
  protected readonly limits: Limits | undefined;
  protected deferred: (() => void)[] = [];
  protected resumedWaiters: (() => void)[] = [];
  protected attempt: { resolve: () => void; reject: (error: Error) => void } | null = null;
  protected readonly keepSessions: boolean;
  protected readonly sessionOwner: ((token: Bytes) => PeerConnection | null) | null;
  protected expiry: ReturnType<typeof setTimeout> | null = null;
  protected ended = false;
  protected resolveClosed: () => void = () => {};
  protected timer: ReturnType<typeof setTimeout> | null = null;
  /** When the armed `timer` fires. */
  protected timerAt = 0;
  protected flushQueued = false;
  protected readonly idleTimeout: number | null;
  protected readonly frameTimeout: number | null;
  /** When the last whole frame arrived, and when the one still arriving began. */
  protected lastFrameAt = now();
  protected frameStartedAt: number | null = null;
  /** When the peer's first whole frame is due (null: not due, or it came). */
  protected firstFrameDue: number | null;
  protected readonly firstFrameTimeout: number | null;
  protected leaseWaiters: (() => void)[] = [];
  protected establishedWaiters: (() => void)[] = [];

  constructor(engine: RSocketEngine, transport: Transport, options: PeerOptions = {}) {
    this.engine = engine;
    this.transport = transport;
    this.reconnect = options.reconnect ?? null;
    this.resumeTimeout = options.resumeTimeout ?? 30_000;
    this.limits = options.limits;
    this.keepSessions = options.keepSessions ?? false;
    this.idleTimeout = options.idleTimeout ?? null;
    this.frameTimeout = options.frameTimeout === undefined ? 60_000 : options.frameTimeout;
    this.sessionOwner = options.sessionOwner ?? null;
    this.firstFrameTimeout = options.firstFrameTimeout ?? null;
    this.firstFrameDue = this.firstFrameTimeout === null ? null : now() + this.firstFrameTimeout;
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    this.attach(transport);
  }

  protected attach(transport: Transport): void {
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

  // ================================================================ what the streams half does

  /** An event of a stream (or METADATA_PUSH, a request). */
  protected abstract onStreamEvent(event: Event): void;
  /** The connection ended with `error`: every stream waiting ends with it. */
  protected abstract failStreams(error: Error): void;
  /** The session resumed: publishers waiting for the transport go on. */
  protected abstract wakeStreams(): void;

  // ================================================================ connection

  /** Wait until requests may be sent: the SETUP is out and, with leasing, a LEASE came. */
  protected async ready(signal?: AbortSignal): Promise<void> {
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

  /** Whether a request may go out at once (what `ready` would not wait for). */
  protected sendsNow(): boolean {
    return !this.ended && !this.parked && this.engine.state !== ConnectionState.AWAITING_LEASE;
  }

  /** Resolves once the peer confirmed the SETUP (client) or it was accepted (server). */
  async established(signal?: AbortSignal): Promise<void> {
    const state = this.engine.state;
    if (state === ConnectionState.ESTABLISHED) return;
    this.checkOpen();
    await this.waitFor(this.establishedWaiters, signal);
    this.checkOpen();
  }

  protected waitFor(waiters: (() => void)[], signal?: AbortSignal): Promise<void> {
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

  protected checkOpen(): void {
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
    // A server that never had the SETUP has no connection to end with an ERROR (and the
    // silent peer may not be an RSocket client at all): it only drops the transport.
    const unestablished = this.engine.role === "server" && this.engine.setup === null;
    if (!this.engine.closed && !unestablished) {
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

  protected flushNow(): void {
    if (this.ended) return;
    const frames = this.engine.dataToSend();
    if (frames.length > 0) {
      this.transport.send(frames);
    }
    this.schedule();
  }

  /**
   * Arm the timer for the earliest deadline (the engine's keepalive, idle, frame). A timer
   * already armed for no later than that stays: it is called after every read and write,
   * and a clearTimeout + setTimeout pair each time was a visible cost per read; a timer
   * that fires before anything is due finds nothing to do and arms the next one.
   */
  protected schedule(): void {
    const deadline = this.ended ? null : this.nextDeadline();
    if (deadline === null) {
      if (this.timer !== null) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      return;
    }
    if (this.timer !== null) {
      if (this.timerAt <= deadline) return;
      clearTimeout(this.timer);
    }
    this.timerAt = deadline;
    this.timer = setTimeout(() => this.onTimer(), Math.max(0, deadline - now()));
  }

  private idleDeadline(): number | null {
    return this.idleTimeout !== null && !this.parked ? this.lastFrameAt + this.idleTimeout : null;
  }

  private frameDeadline(): number | null {
    return this.frameTimeout !== null && this.frameStartedAt !== null && !this.parked
      ? this.frameStartedAt + this.frameTimeout
      : null;
  }

  private nextDeadline(): number | null {
    const earliest = (a: number | null, b: number | null): number | null =>
      a === null ? b : b === null ? a : Math.min(a, b);
    const limits = earliest(this.idleDeadline(), this.frameDeadline());
    return earliest(this.engine.getTimer(), earliest(this.firstFrameDue, limits));
  }

  private onTimer(): void {
    this.timer = null;
    if (this.ended) return;
    const at = now();
    if (this.firstFrameDue !== null && at >= this.firstFrameDue) {
      const limit = this.firstFrameTimeout! / 1000;
      this.abort(new HandshakeTimeout(`no frame from the peer within ${limit} s`, limit));
      return;
    }
    const frame = this.frameDeadline();
    if (frame !== null && at >= frame) {
      const limit = this.frameTimeout! / 1000;
      this.abort(new FrameTimeout(`a frame begun ${limit} s ago is not complete`, limit));
      return;
    }
    const idle = this.idleDeadline();
    if (idle !== null && at >= idle) {
      const limit = this.idleTimeout! / 1000;
      this.abort(new IdleTimeout(`no whole frame from the peer for ${limit} s`, limit));
      return;
    }
    this.onEvents(this.engine.handleTimer(at));
    this.flushNow();
  }

  protected receive(chunk: Bytes): void {
    if (this.ended) return;
    let events: Event[];
    const before = this.engine.framesReceived;
    const at = now();
    try {
      events = this.engine.receiveData(chunk, at);
      // The limits count whole frames (bytes of an unfinished one do not reset the idle
      // clock) and how long the one still arriving has taken.
      const buffered = this.engine.bufferedBytes > 0;
      if (this.engine.framesReceived > before) {
        this.firstFrameDue = null;
        this.lastFrameAt = at;
        this.frameStartedAt = buffered ? at : null;
      } else if (buffered) {
        this.frameStartedAt ??= at;
      }
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

  protected transportClosed(error: Error | null): void {
    if (this.ended) return;
    this.onEvents(this.engine.receiveData(new Uint8Array(0), now()));
    if (this.parked) return; // a resumable session: resumeSession() dials again
    this.finish(error ?? this.error ?? new ConnectionLost("the transport closed", "eof"));
  }

  protected onEvents(events: readonly Event[]): void {
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
        case "LeaseReceived":
          this.wakeAll(this.leaseWaiters);
          break;
        case "KeepaliveReceived":
          break;
        default:
          this.onStreamEvent(event);
      }
    }
  }

  // ================================================================ resumption

  /** The transport was lost under a resumable session: dial again and RESUME (client). */
  protected park(): void {
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
  protected handOver(rest: readonly Event[]): boolean {
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
  protected takeOver(engine: RSocketEngine, transport: Transport, rest: readonly Event[]): void {
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

  protected async resumeSession(): Promise<void> {
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
  protected resumed(): void {
    this.parked = false;
    if (this.expiry !== null) {
      clearTimeout(this.expiry);
      this.expiry = null;
    }
    this.attempt?.resolve();
    for (const run of this.deferred.splice(0)) {
      this.command(run);
    }
    this.wakeStreams(); // publishers go on
    this.wakeAll(this.resumedWaiters);
    this.flush();
  }

  protected wakeAll(waiters: (() => void)[]): void {
    for (const wake of waiters.splice(0)) wake();
  }

  protected finishSoon(error: Error | null): void {
    // Let the ERROR (or the last frames) that the engine queued go out first.
    queueMicrotask(() => {
      this.flushNow();
      this.finish(error);
    });
  }

  protected finish(error: Error | null): void {
    if (this.ended) return;
    this.flushNowQuietly();
    this.ended = true;
    this.error = error;
    if (this.timer !== null) clearTimeout(this.timer);
    const ending = error ?? new ConnectionLost("the connection is closed", "closed");
    this.failStreams(ending);
    this.wakeAll(this.leaseWaiters);
    this.wakeAll(this.establishedWaiters);
    this.wakeAll(this.resumedWaiters);
    this.deferred = [];
    this.attempt?.reject(ending);
    if (this.expiry !== null) clearTimeout(this.expiry);
    this.transport.close();
    this.resolveClosed();
  }

  protected flushNowQuietly(): void {
    const frames = this.engine.dataToSend();
    if (frames.length > 0) this.transport.send(frames);
  }

  /** Whether the stream is still open in the engine. */
  isOpen(streamId: number): boolean {
    return !this.ended && this.engine.openStreams.has(streamId);
  }
}

export function now(): number {
  return performance.now();
}
