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

import type { Bytes } from "./bytes.js";
import { ErrorCode } from "@wirestream/generated/rsocket/v1_0";

import { ProtocolError, StreamCancelled } from "@wirestream/runtime";

import { MAX_N, RSocketEngine } from "./engine.js";
import { EMPTY } from "./engine_core.js";
import { ApplicationError, StreamError } from "./errors.js";
import type { Event, EventOf } from "./events.js";
import { Inbound, type RSocketPayload } from "./streams.js";
import type { Transport } from "./transport.js";
import { PeerConnection, now, type PeerOptions } from "./peer_connection.js";

export type { PeerOptions };

const decoder = new TextDecoder();
export const DEFAULT_LIMIT_RATE = 256;

type Source = AsyncIterable<RSocketPayload> | Iterable<RSocketPayload>;

/** What a peer answers the other side's requests with; a missing method rejects them. */
export interface RSocketHandler {
  /** `signal` aborts when the requester cancels. Declared without that parameter
   * (`(request) => ...`), the handler is passed a signal that never aborts: making an
   * AbortSignal costs ~10 us in Node 20, most of what answering a request costs. */
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
  metadataPush?(metadata: Bytes): Promise<void> | void;
  /** The EXT extended types `onExt` understands: the engine hands those to it, and
   * refuses any other EXT without the I flag (as Python's `RSocketHandler.extensions`). */
  readonly extensions?: Iterable<number>;
  /** An EXT frame of one of `extensions` (`streamId` 0: the connection's); runs to its end
   * like fire-and-forget (what it throws is dropped, as there is no one to answer). */
  onExt?(extendedType: number, payload: RSocketPayload, streamId: number): Promise<void> | void;
}

export interface StreamOptions {
  /** Items granted at first and kept outstanding as they are consumed (default 256). */
  limitRate?: number;
  signal?: AbortSignal;
}

/** How one stream's events reach whoever waits on it. */
interface StreamSide {
  payload(item: RSocketPayload, complete: boolean): void;
  complete(): void;
  error(error: Error): void;
  canceled(): void;
  requestN(): void;
}

function streamError(errorCode: number, data: Bytes): StreamError {
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

export class RSocketPeer extends PeerConnection {
  private readonly handler: RSocketHandler;
  private readonly limitRate: number;
  private readonly sides = new Map<number, StreamSide>();

  constructor(
    engine: RSocketEngine,
    transport: Transport,
    handler: RSocketHandler = {},
    options: PeerOptions = {},
  ) {
    super(engine, transport, options);
    this.handler = handler;
    this.limitRate = options.limitRate ?? DEFAULT_LIMIT_RATE;
  }

  // ================================================================ requester

  requestResponse(
    request: RSocketPayload,
    options: { signal?: AbortSignal } = {},
  ): Promise<RSocketPayload> {
    const signal = options.signal;
    // Ready now (the common case: established, not resuming, no lease awaited): sent at
    // once, without an async function's frame and an awaited promise per request.
    if (signal === undefined && this.sendsNow()) {
      try {
        return this.sendRequestResponse(request, undefined);
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new ProtocolError(String(error)));
      }
    }
    return this.ready(signal).then(() => this.sendRequestResponse(request, signal));
  }

  private sendRequestResponse(
    request: RSocketPayload,
    signal: AbortSignal | undefined,
  ): Promise<RSocketPayload> {
    const streamId = this.engine.requestResponse(request.data, request.metadata, now());
    this.flush();
    return new Promise<RSocketPayload>((resolve, reject) => {
      this.sides.set(streamId, new AnswerSide(this, streamId, resolve, reject, signal));
    });
  }

  /** (AnswerSide) The request-response on `streamId` was aborted by its signal. */
  abandon(streamId: number): void {
    if (this.sides.delete(streamId)) {
      this.command(() => this.engine.cancel(streamId));
    }
  }

  /** (AnswerSide) The request-response on `streamId` has its answer. */
  settled(streamId: number): void {
    this.sides.delete(streamId);
  }

  async fireAndForget(request: RSocketPayload): Promise<void> {
    await this.ready();
    this.engine.fireAndForget(request.data, request.metadata, now());
    this.flush();
  }

  async metadataPush(metadata: Bytes): Promise<void> {
    this.checkOpen();
    this.engine.metadataPush(metadata);
    this.flush();
  }

  /** Send an EXT frame; `ignore` sets its I flag ("Can the frame be ignored if not
   * understood?"), default true; `streamId` 0 is the connection's. */
  async sendExt(
    extendedType: number,
    data: Bytes = EMPTY,
    options: { metadata?: Bytes | null; streamId?: number; ignore?: boolean } = {},
  ): Promise<void> {
    await this.ready();
    this.engine.sendExt(
      extendedType,
      data,
      options.metadata ?? null,
      options.ignore ?? true,
      options.streamId ?? 0,
    );
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
      pump = new OutboundPump(this, streamId, iterate(outbound), new LazyAbort());
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
    const controller = new LazyAbort();
    const fail = (error: unknown): void => {
      if (!this.engine.openStreams.has(streamId) || controller.aborted) {
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
        const respond = handler.requestResponse;
        // Only a handler that takes the signal gets one of its own (see RSocketHandler).
        const signal = respond.length >= 2 ? controller.signal : neverAborted();
        Promise.resolve()
          .then(() => respond.call(handler, request, signal))
          .then(
            (answer) => {
              this.sides.delete(streamId);
              if (!controller.aborted && this.engine.openStreams.has(streamId)) {
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
    controller: LazyAbort,
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

  // ================================================================ events

  /** The events of streams (and METADATA_PUSH): to whoever waits on each. */
  protected onStreamEvent(event: Event): void {
    switch (event.type) {
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
      case "ExtReceived": {
        const onExt = this.handler.onExt;
        if (onExt !== undefined) {
          const item: RSocketPayload = { data: event.data, metadata: event.metadata };
          void Promise.resolve()
            .then(() => onExt.call(this.handler, event.extendedType, item, event.streamId))
            .catch(() => {});
        }
        break;
      }
      case "MetadataPushReceived": {
        const push = this.handler.metadataPush;
        if (push !== undefined) {
          void Promise.resolve()
            .then(() => push.call(this.handler, event.metadata))
            .catch(() => {});
        }
        break;
      }
      default:
        break;
    }
  }

  protected failStreams(error: Error): void {
    for (const side of this.sides.values()) side.error(error);
    this.sides.clear();
  }

  protected wakeStreams(): void {
    for (const side of this.sides.values()) side.requestN();
  }
}

/**
 * An AbortController whose AbortSignal is made only when something asks for it: Node
 * 20 takes ~10 us to make one, more than the rest of answering a request-response.
 */
class LazyAbort {
  aborted = false;
  private controller: AbortController | null = null;
  private reason: unknown = undefined;

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

let never: AbortSignal | null = null;

/** The signal a request-response handler that takes none is passed (it never aborts). */
function neverAborted(): AbortSignal {
  return (never ??= new AbortController().signal);
}

/** The side of one request-response: its promise's resolvers (one object per request,
 * not five closures). */
class AnswerSide implements StreamSide {
  private readonly onAbort: (() => void) | null = null;

  constructor(
    private readonly peer: RSocketPeer,
    private readonly streamId: number,
    private readonly resolve: (answer: RSocketPayload) => void,
    private readonly reject: (error: Error) => void,
    private readonly signal: AbortSignal | undefined,
  ) {
    if (signal !== undefined) {
      const onAbort = (): void => {
        peer.abandon(streamId);
        reject(
          signal.reason instanceof Error
            ? signal.reason
            : new StreamCancelled("the request was aborted"),
        );
      };
      this.onAbort = onAbort;
      signal.addEventListener("abort", onAbort, { once: true });
    }
  }

  payload(item: RSocketPayload): void {
    this.done();
    this.resolve(item);
  }

  complete(): void {
    this.done();
    this.resolve({ data: new Uint8Array(0), metadata: null });
  }

  error(error: Error): void {
    this.done();
    this.reject(error);
  }

  canceled(): void {}

  requestN(): void {}

  private done(): void {
    if (this.onAbort !== null) this.signal?.removeEventListener("abort", this.onAbort);
    this.peer.settled(this.streamId);
  }
}

/** Items a publisher sends without waiting before it lets timers and I/O run. */
const YIELD_EVERY = 256;

/** Resolves once pending I/O had its turn: Node's setImmediate (after the poll phase),
 * else (browsers) a zero-delay timer. */
function yieldToIo(): Promise<void> {
  const immediate = (globalThis as { setImmediate?: (run: () => void) => unknown }).setImmediate;
  return new Promise((resolve) => {
    if (immediate !== undefined) immediate(resolve);
    else setTimeout(resolve, 0);
  });
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
    private readonly controller: LazyAbort,
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
    let sent = 0;
    try {
      for (;;) {
        while (
          !this.stopped &&
          peer.isOpen(streamId) &&
          (peer.parked || peer.engine.outboundCredit(streamId) < 1)
        ) {
          sent = 0; // waiting for credit lets I/O run: the count starts again
          await new Promise<void>((resolve) => {
            this.waiter = resolve;
          });
        }
        if (this.stopped || !peer.isOpen(streamId)) return;
        // A synchronous source (a generator) is not awaited: the items its credit allows
        // are sent in one go and leave in one transport write (flush() coalesces per
        // microtask); an `await` per item made that a write, and a syscall, per item.
        const next = this.source.next();
        const result = isPromise(next) ? await next : next;
        if (this.stopped || this.controller.aborted || !peer.isOpen(streamId)) return;
        if (result.done === true) {
          peer.command(() => peer.engine.sendComplete(streamId));
          return;
        }
        const item = result.value;
        peer.command(() => peer.engine.sendNext(streamId, item.data, item.metadata));
        sent += 1;
        if (sent >= YIELD_EVERY) {
          // A source that never waits, under a large grant, would run in microtasks only:
          // let the transport write and read (a CANCEL, say) between batches. Not
          // setTimeout(0): Node makes that at least 1 ms, which capped a stream at
          // YIELD_EVERY items per millisecond.
          sent = 0;
          await yieldToIo();
        }
      }
    } catch (error) {
      if (this.stopped || !peer.isOpen(streamId)) return;
      const code = error instanceof StreamError ? error.errorCode : ErrorCode.APPLICATION_ERROR;
      const message = error instanceof Error ? error.message : String(error);
      peer.command(() => peer.engine.sendError(streamId, code, message));
    }
  }
}

function isPromise<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

export { MAX_N };
