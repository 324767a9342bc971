// A minimal RSocket 1.0 requester over TCP built only on the generated TypeScript: the
// codec (frame classes, frameBytes, StreamDecoder) and the machines (the connection
// machine, one request-response / request-stream machine per stream), plus node:net.
// A demo of how little socket code the generated code leaves to write, not a library:
// no fragmentation, leases, resumption or keepalive timer (the SETUP asks for a
// keepalive interval longer than any test; the server's KEEPALIVEs are answered).
//
// Every frame goes through the machines the way runtime/rsocket/engine.py drives the
// Python ones: a request first through the connection machine (IllegalSend before SETUP
// or after close), then through its stream's machine; stream frames through the stream's
// machine only. A received frame first passes the connection machine (which follows
// establishment: stream frames confirm the SETUP), then, on a stream, that stream's
// machine: UnexpectedFrame when the peer breaks a rule, a frame the spec says to ignore
// is dropped, and a stream whose machine ends is forgotten.

import assert from "node:assert/strict";
import { Socket, connect } from "node:net";

import {
  Cancel,
  ErrorFrame,
  ErrorCode,
  Keepalive,
  Payload,
  RequestN,
  RequestResponse,
  RequestStream,
  Setup,
  StreamDecoder,
  frameBytes,
  type Frame,
} from "@wirestream/generated/rsocket/v1_0";
import { IGNORE } from "@wirestream/runtime";
import {
  ConnectionMachine,
  RequestResponseMachine,
  RequestStreamMachine,
} from "@wirestream/generated/rsocket/v1_0/machines";

/** An ERROR frame that ended a stream or the connection. */
export class RSocketError extends Error {
  constructor(
    readonly errorCode: number,
    readonly text: string,
  ) {
    super(`ERROR ${ErrorCode[errorCode] ?? errorCode}: ${text}`);
    this.name = "RSocketError";
  }
}

/** A promise that rejects when `ms` pass first: every wait here is bounded. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

type StreamMachine = RequestResponseMachine | RequestStreamMachine;

/** What a stream's owner is told: each PAYLOAD its machine let through, or the end. */
interface StreamSink {
  machine: StreamMachine;
  onPayload(frame: Payload): void;
  onError(error: Error): void;
}

const decodeText = (bytes: Uint8Array<ArrayBuffer>): string => new TextDecoder().decode(bytes);

export interface SetupOptions {
  keepaliveIntervalMs?: number;
  maxLifetimeMs?: number;
  metadataMimeType?: string;
  dataMimeType?: string;
}

export class Requester {
  readonly connection = new ConnectionMachine("client");
  private readonly decoder = new StreamDecoder();
  private readonly streams = new Map<number, StreamSink>();
  private nextStreamId = 1; // the client's streams are odd
  private failure: Error | null = null;
  /** Frames no live stream claimed, or that a machine said to ignore. */
  ignoredFrames = 0;

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer<ArrayBuffer>) => this.receiveData(chunk));
    socket.on("error", (error: Error) => this.fail(error));
    socket.on("close", () => this.fail(new Error("the connection closed")));
  }

  static async connect(port: number, host = "127.0.0.1", timeoutMs = 5_000): Promise<Requester> {
    const socket = connect({ port, host });
    socket.setNoDelay(true);
    const connected = new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    try {
      await within(connected, timeoutMs, `connecting to ${host}:${port}`);
    } catch (error) {
      socket.destroy();
      throw error;
    }
    return new Requester(socket);
  }

  /** SETUP on stream 0 (no lease, no resume). */
  setup(options: SetupOptions = {}): void {
    this.send(
      new Setup({
        majorVersion: 1,
        minorVersion: 0,
        keepaliveInterval: options.keepaliveIntervalMs ?? 60_000,
        maxLifetime: options.maxLifetimeMs ?? 180_000,
        metadataMimeType: options.metadataMimeType ?? "application/octet-stream",
        dataMimeType: options.dataMimeType ?? "application/octet-stream",
      }),
    );
  }

  /** REQUEST_RESPONSE: the one PAYLOAD that answers it. */
  requestResponse(data: Uint8Array<ArrayBuffer>, metadata: Uint8Array<ArrayBuffer> | null = null): Promise<Payload> {
    const streamId = this.nextStreamId;
    const frame = new RequestResponse({ streamId, metadata, data });
    const machine = new RequestResponseMachine("requester");
    let sink: StreamSink | undefined;
    const answer = new Promise<Payload>((resolve, reject) => {
      sink = { machine, onPayload: resolve, onError: reject };
    });
    assert.ok(sink !== undefined); // the executor ran synchronously
    this.open(frame, sink); // IllegalSend here, synchronously, as the machines say
    return answer;
  }

  /** REQUEST_STREAM with `initialN` credits; REQUEST_N and CANCEL on the handle. */
  requestStream(
    data: Uint8Array<ArrayBuffer>,
    initialN: number,
    metadata: Uint8Array<ArrayBuffer> | null = null,
  ): RequestedStream {
    const streamId = this.nextStreamId;
    const frame = new RequestStream({ streamId, initialRequestN: initialN, metadata, data });
    const stream = new RequestedStream(this, streamId, new RequestStreamMachine("requester"));
    this.open(frame, stream);
    return stream;
  }

  /** Send a frame on a stream through its machine (IllegalSend when it may not). */
  sendOnStream(streamId: number, machine: StreamMachine, frame: RequestN | Cancel): void {
    machine.send(frame);
    if (machine.terminated) {
      this.streams.delete(streamId);
    }
    this.write(frame);
  }

  close(): void {
    this.socket.destroy();
  }

  private open(frame: RequestResponse | RequestStream, sink: StreamSink): void {
    this.connection.send(frame); // IllegalSend before SETUP or after the connection closed
    sink.machine.send(frame);
    this.nextStreamId += 2;
    this.streams.set(frame.streamId, sink);
    this.write(frame);
  }

  private send(frame: Frame): void {
    this.connection.send(frame);
    this.write(frame);
  }

  private write(frame: Frame): void {
    if (this.failure !== null) {
      throw this.failure;
    }
    this.socket.write(frameBytes(frame));
  }

  private receiveData(chunk: Buffer<ArrayBuffer>): void {
    try {
      for (const frame of this.decoder.feed(chunk)) {
        this.receive(frame);
      }
    } catch (error) {
      // A frame we cannot decode, or one that breaks the machines (UnexpectedFrame).
      this.fail(error instanceof Error ? error : new Error(String(error)));
      this.socket.destroy();
    }
  }

  private receive(frame: Frame): void {
    const seen = this.connection.receive(frame); // UnexpectedFrame when illegal
    if (frame.streamId === 0) {
      if (seen === IGNORE) {
        this.ignoredFrames += 1;
      } else if (frame instanceof Keepalive && frame.respond) {
        this.send(new Keepalive({ respond: false, lastReceivedPosition: 0n }));
      } else if (frame instanceof ErrorFrame) {
        this.fail(new RSocketError(frame.errorCode, decodeText(frame.data)));
        this.socket.destroy();
      }
      return;
    }
    const stream = this.streams.get(frame.streamId);
    // "Receiving a CANCEL / an ERROR / a PAYLOAD on an unknown Stream ID ... MUST be
    // ignored" -- e.g. what was in flight when we cancelled.
    if (stream === undefined) {
      this.ignoredFrames += 1;
      return;
    }
    if (stream.machine.receive(frame) === IGNORE) {
      this.ignoredFrames += 1; // the spec says to ignore it here
      return;
    }
    if (stream.machine.terminated) {
      this.streams.delete(frame.streamId);
    }
    if (frame instanceof Payload) {
      stream.onPayload(frame);
    } else if (frame instanceof ErrorFrame) {
      stream.onError(new RSocketError(frame.errorCode, decodeText(frame.data)));
    }
  }

  private fail(error: Error): void {
    if (this.failure !== null) {
      return;
    }
    this.failure = error;
    for (const stream of this.streams.values()) {
      stream.onError(error);
    }
    this.streams.clear();
  }
}

/** A request-stream's items as they come, REQUEST_N and CANCEL. */
export class RequestedStream implements StreamSink {
  private readonly items: Payload[] = [];
  private waiter: (() => void) | null = null;
  private ended = false;
  private error: Error | null = null;

  constructor(
    private readonly requester: Requester,
    readonly streamId: number,
    readonly machine: RequestStreamMachine,
  ) {}

  onPayload(frame: Payload): void {
    if (frame.next) {
      this.items.push(frame);
    }
    if (frame.complete) {
      this.ended = true;
    }
    this.wake();
  }

  onError(error: Error): void {
    this.error = error;
    this.wake();
  }

  /** Items received and not yet taken. */
  get buffered(): number {
    return this.items.length;
  }

  /** The next item's data, or null once the stream completed; bounded by `timeoutMs`. */
  async next(timeoutMs = 5_000): Promise<Uint8Array<ArrayBuffer> | null> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        return item.data;
      }
      if (this.error !== null) {
        throw this.error;
      }
      if (this.ended) {
        return null;
      }
      await within(
        new Promise<void>((resolve) => {
          this.waiter = resolve;
        }),
        timeoutMs,
        `an item of stream ${this.streamId}`,
      );
    }
  }

  request(n: number): void {
    this.requester.sendOnStream(
      this.streamId,
      this.machine,
      new RequestN({ streamId: this.streamId, requestN: n }),
    );
  }

  cancel(): void {
    this.requester.sendOnStream(
      this.streamId,
      this.machine,
      new Cancel({ streamId: this.streamId }),
    );
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }
}
