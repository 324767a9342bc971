/**
 * The per-stream half of the RSocket engine (twin of runtime/rsocket/stream_engine.py):
 * the requests we open and the commands on a stream (`sendNext`, `request`, `cancel` ...),
 * and the stream frames received once the stream's machine let them through
 * (`onStream<Frame>`, the `Stream*Handlers` interfaces of the generated machines) --
 * requests with their lease and stream limits, items with their request-n credit.
 */

import type { Bytes } from "./bytes.js";
import {
  Cancel,
  ErrorCode,
  ErrorFrame,
  Payload,
  RequestChannel,
  RequestFnf,
  RequestN,
  RequestResponse,
  RequestStream,
} from "@wirestream/generated/rsocket/v1_0";
import {
  RequestChannelState,
  type StreamRequesterHandlers,
  type StreamResponderHandlers,
} from "@wirestream/generated/rsocket/v1_0/machines";
import {
  DemandExceeded,
  InvalidGrant,
  PeerExceededDemand,
  type BoundHandlers,
} from "@wirestream/runtime";
import type { InteractionModel } from "./events.js";
import { NoNewRequests, StreamIdsExhausted } from "./errors.js";
import { type Request } from "./fragmentation.js";
import {
  MAX_N,
  EMPTY,
  Credit,
  type StreamMachineClass,
  MACHINES,
  type StreamContext,
  EngineCore,
} from "./engine_core.js";

const utf8 = new TextEncoder();

/** Stream commands and the `onStream*` handlers (see `RSocketEngine`). */
export abstract class StreamEngine
  extends EngineCore
  implements StreamRequesterHandlers, StreamResponderHandlers
{
  /** Each (role, model)'s bound handlers, bound on first use: a connection that only ever
   * makes request-responses binds one table of the eight (each a Map of closures), which
   * keeps an idle connection small. */
  private readonly bound: Record<
    "requester" | "responder",
    Partial<Record<InteractionModel, BoundHandlers>>
  > = {
    requester: {},
    responder: {},
  };

  protected handlersFor(
    streamRole: "requester" | "responder",
    model: InteractionModel,
  ): BoundHandlers {
    const cache = this.bound[streamRole];
    let handlers = cache[model];
    if (handlers === undefined) {
      const cls: StreamMachineClass = MACHINES[model];
      handlers = streamRole === "requester" ? cls.bindRequester(this) : cls.bindResponder(this);
      cache[model] = handlers;
    }
    return handlers;
  }

  // ================================================================ requests

  requestResponse(data: Bytes, metadata: Bytes | null = null, now?: number): number {
    return this.open("request_response", new RequestResponse({ data, metadata }), null, null, now);
  }

  fireAndForget(data: Bytes, metadata: Bytes | null = null, now?: number): number {
    return this.open("fire_and_forget", new RequestFnf({ data, metadata }), null, null, now);
  }

  /** Open a stream and grant the responder `initialN` items (1..2^31-1). */
  requestStream(
    data: Bytes,
    metadata: Bytes | null = null,
    initialN = MAX_N,
    now?: number,
  ): number {
    const inbound = new Credit();
    inbound.grant(initialN);
    const frame = new RequestStream({ data, metadata, initialRequestN: initialN });
    return this.open("request_stream", frame, inbound, null, now);
  }

  /** Open a channel whose first message is (data, metadata); more may follow once the
   * responder grants REQUEST_N. */
  requestChannel(
    data: Bytes,
    metadata: Bytes | null = null,
    initialN = MAX_N,
    complete = false,
    now?: number,
  ): number {
    const inbound = new Credit();
    inbound.grant(initialN);
    const frame = new RequestChannel({ data, metadata, initialRequestN: initialN, complete });
    return this.open("request_channel", frame, inbound, new Credit(), now);
  }

  protected open(
    model: InteractionModel,
    frame: Request,
    inbound: Credit | null,
    outbound: Credit | null,
    now?: number,
  ): number {
    if (now !== undefined) {
      this.now = now;
    }
    if (this.closing) {
      throw new NoNewRequests(
        "the connection is closing (ERROR[CONNECTION_CLOSE]): 'New requests MAY not be accepted'",
      );
    }
    this.conn.send(frame); // IllegalSend before SETUP, while awaiting a LEASE, after close
    if (this.leases.required) {
      this.leases.checkRequest(this.now);
    }
    const streamId = this.allocateId();
    frame.streamId = streamId;
    const stream = this.newStream(streamId, model, "requester");
    stream.machine.send(frame);
    if (this.leases.required) {
      this.leases.spendRequest();
    }
    stream.inbound = inbound;
    stream.outbound = outbound;
    if (!stream.machine.terminated) {
      this.streams.set(streamId, stream);
    }
    this.transmit(stream, frame, true);
    return streamId;
  }

  protected allocateId(): number {
    let id = this.nextId;
    while (this.streams.has(id)) {
      id += 2;
    }
    if (id > MAX_N) {
      throw new StreamIdsExhausted(
        "every stream id of this side is spent: 'a new connection MUST be established'",
      );
    }
    this.nextId = id + 2;
    return id;
  }

  // ================================================================ stream commands

  /** Send one item (PAYLOAD with N, plus C when `complete`); needs the peer's credit
   * (DemandExceeded otherwise), except for a request-response answer. */
  sendNext(
    streamId: number,
    data: Bytes,
    metadata: Bytes | null = null,
    complete = false,
  ): void {
    const stream = this.get(streamId);
    const frame = new Payload({ streamId, data, metadata, next: true, complete });
    const outbound = stream.outbound;
    if (outbound !== null && outbound.value < 1) {
      throw new DemandExceeded(`stream ${streamId}: the peer has not requested more items`);
    }
    stream.machine.send(frame);
    outbound?.take();
    this.transmit(stream, frame);
    if (stream.machine.terminated) {
      this.streams.delete(streamId);
    }
  }

  /** Complete our side of the stream (PAYLOAD with only C). */
  sendComplete(streamId: number): void {
    const stream = this.get(streamId);
    const frame = new Payload({ streamId, complete: true });
    stream.machine.send(frame);
    this.transmit(stream, frame);
    if (stream.machine.terminated) {
      this.streams.delete(streamId);
    }
  }

  /** End the stream with ERROR (a stream error code: APPLICATION_ERROR, REJECTED ...). */
  sendError(streamId: number, errorCode: number, message: string | Bytes = EMPTY): void {
    const stream = this.get(streamId);
    const data = typeof message === "string" ? utf8.encode(message) : message;
    const frame = new ErrorFrame({ streamId, errorCode, data });
    stream.machine.send(frame);
    this.emit(frame);
    this.streams.delete(streamId);
  }

  /** Grant the peer `n` more items (REQUEST_N); credits add up, capped at 2^31-1. Nothing
   * is sent once the peer has completed its side of a channel. */
  request(streamId: number, n: number): void {
    const stream = this.get(streamId);
    if (
      stream.machine.state === RequestChannelState.HALF_CLOSED_REMOTE &&
      stream.model === "request_channel"
    ) {
      return;
    }
    const frame = new RequestN({ streamId, requestN: n });
    if (stream.inbound === null) {
      stream.machine.send(frame); // IllegalSend where the model has no REQUEST_N
      return;
    }
    if (!Number.isInteger(n) || n < 1 || n > MAX_N) {
      throw new InvalidGrant(`request-n must be 1..${MAX_N}, not ${n}`);
    }
    stream.machine.send(frame);
    stream.inbound.grant(n);
    this.emit(frame);
  }

  /** (requester) Cancel the stream: "Upon sending a CANCEL, the stream is terminated". */
  cancel(streamId: number): void {
    const stream = this.get(streamId);
    const frame = new Cancel({ streamId });
    stream.machine.send(frame);
    this.emit(frame);
    this.streams.delete(streamId);
  }

  // ================================================================ onStream<Frame>

  /** A whole request the stream's machine took: the lease, the stream cap, then the application. */
  protected onRequest(frame: Request, ...context: unknown[]): void {
    const [stream, events] = context as StreamContext;
    stream.opened = true;
    const machine = stream.machine;
    let refusal: string | null = null;
    if (this.closing) {
      refusal = "the connection is closing (ERROR[CONNECTION_CLOSE])";
    } else if (this.leases.required && !this.leases.admit(this.now)) {
      refusal = "request exceeds the LEASE";
    } else if (
      this.maxStreams !== null &&
      !machine.terminated &&
      this.peerStreams() > this.maxStreams
    ) {
      refusal = `too many streams (limit ${this.maxStreams})`;
    }
    if (refusal !== null) {
      if (machine.terminated) {
        this.streams.delete(stream.streamId); // fire-and-forget: "MAY not be processed"
        return;
      }
      this.abortStream(stream, ErrorCode.REJECTED, refusal, events, false);
      return;
    }
    let n = 0;
    let complete = false;
    if (frame instanceof RequestStream) {
      n = frame.initialRequestN;
      stream.outbound = new Credit(Math.min(n, MAX_N));
    } else if (frame instanceof RequestChannel) {
      n = frame.initialRequestN;
      complete = frame.complete;
      stream.outbound = new Credit(Math.min(n, MAX_N));
      stream.inbound = new Credit();
    }
    events.push({
      type: "RequestReceived",
      streamId: stream.streamId,
      model: stream.model,
      data: frame.data,
      metadata: frame.metadata,
      initialN: n,
      complete,
    });
    if (machine.terminated) {
      this.streams.delete(stream.streamId);
    }
  }

  protected peerStreams(): number {
    let count = 0;
    for (const stream of this.streams.values()) {
      if (stream.role === "responder") count += 1;
    }
    return count;
  }

  onStreamRequestResponse(frame: RequestResponse, ...context: unknown[]): void {
    this.onRequest(frame, ...context);
  }

  onStreamRequestFnf(frame: RequestFnf, ...context: unknown[]): void {
    this.onRequest(frame, ...context);
  }

  onStreamRequestStream(frame: RequestStream, ...context: unknown[]): void {
    this.onRequest(frame, ...context);
  }

  onStreamRequestChannel(frame: RequestChannel, ...context: unknown[]): void {
    this.onRequest(frame, ...context);
  }

  onStreamPayload(frame: Payload, ...context: unknown[]): void {
    const [stream, events] = context as StreamContext;
    const terminated = stream.machine.terminated;
    // "If a PAYLOAD for a REQUEST_RESPONSE is received that does not have a COMPLETE flag
    // set, the implementation MUST assume it is set": the machine ended the stream.
    const complete = frame.complete || terminated;
    if (frame.next) {
      const inbound = stream.inbound;
      if (inbound !== null && !inbound.take()) {
        // "The Requester and the Responder MUST respect the reactive-streams semantics".
        const error = new PeerExceededDemand(
          `stream ${stream.streamId}: the peer sent more items than requested`,
        );
        this.abortStream(stream, ErrorCode.INVALID, error.message, events, true);
        return;
      }
      events.push({
        type: "PayloadReceived",
        streamId: stream.streamId,
        data: frame.data,
        metadata: frame.metadata,
        complete,
      });
    }
    if (complete) {
      events.push({ type: "StreamCompleted", streamId: stream.streamId });
    }
    if (terminated) {
      this.streams.delete(stream.streamId);
    }
  }

  onStreamError(frame: ErrorFrame, ...context: unknown[]): void {
    const [stream, events] = context as StreamContext;
    events.push({
      type: "ErrorReceived",
      streamId: stream.streamId,
      errorCode: frame.errorCode,
      data: frame.data,
    });
    if (stream.machine.terminated) {
      this.streams.delete(stream.streamId);
    }
  }

  onStreamCancel(frame: Cancel, ...context: unknown[]): void {
    const [stream, events] = context as StreamContext;
    void frame;
    events.push({ type: "StreamCanceled", streamId: stream.streamId });
    if (stream.machine.terminated) {
      this.streams.delete(stream.streamId);
    }
  }

  onStreamRequestN(frame: RequestN, ...context: unknown[]): void {
    const [stream, events] = context as StreamContext;
    if (stream.outbound === null) {
      this.ignoredFrames += 1;
      return;
    }
    // "Credits are cumulative" (saturating at 2^31-1).
    stream.outbound.grant(frame.requestN, true);
    events.push({ type: "RequestNReceived", streamId: stream.streamId, n: frame.requestN });
  }
}
