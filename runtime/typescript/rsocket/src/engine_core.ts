/**
 * The state every part of the RSocket engine shares, and the plumbing under them (twin of
 * runtime/rsocket/engine_core.py): the connection machine, the open streams, credit,
 * leases, keepalive and resumption state, output queues and time; queueing frames (with
 * fragmentation) and ending streams. The per-stream behaviour is `StreamEngine`
 * (stream_engine.ts), the connection's `RSocketEngine` (engine.ts): the class to use.
 */

import type { Bytes } from "./bytes.js";
import {
  Cancel,
  ErrorCode,
  ErrorFrame,
  Keepalive,
  MAX_FRAME_SIZE,
  Payload,
  RequestChannel,
  RequestFnf,
  RequestN,
  RequestResponse,
  RequestStream,
  Setup,
  StreamDecoder,
  frameBytes,
  type Frame,
} from "@wirestream/generated/rsocket/v1_0";
import {
  ConnectionMachine,
  ConnectionState,
  FragmentsMachine,
  FragmentsState,
  RequestChannelMachine,
  RequestFnfMachine,
  RequestResponseMachine,
  RequestStreamMachine,
  type StreamRequesterHandlers,
  type StreamResponderHandlers,
} from "@wirestream/generated/rsocket/v1_0/machines";
import {
  IGNORE,
  InvalidGrant,
  RemoteProtocolError,
  type BoundHandlers,
  type FrameClass,
  type StateMachine,
} from "@wirestream/runtime";
import type { Event, InteractionModel, SetupInfo } from "./events.js";
import { NoLease, UnknownStream } from "./errors.js";
import { MIN_MTU, Reassembly, fragment, type Message } from "./fragmentation.js";
import { KeepaliveTimer } from "./keepalive.js";
import { ResumeLog, type ResumableSession } from "./resume.js";

/** request-n and lease counts are 31-bit; 2^31-1 means unbounded. */
export const MAX_N = 0x7fffffff;
export const FIXED_PART_MAX = 16;
export const EMPTY = new Uint8Array(0);
const NO_EXTENSIONS: ReadonlySet<number> = new Set();
const utf8 = new TextEncoder();

/** What the client's SETUP says (times in milliseconds, as on the wire). */
export interface ClientSetup {
  keepaliveInterval?: number;
  maxLifetime?: number;
  metadataMimeType?: string;
  dataMimeType?: string;
  metadata?: Bytes | null;
  data?: Bytes;
  lease?: boolean;
  /** Ask for a resumable session with this token (the R flag). */
  resumeToken?: Bytes | null;
}

/** Sizes and limits either side keeps (Python's Limits). */
export interface Limits {
  /** The largest frame we send (without the length prefix); larger messages are fragmented. */
  mtu?: number;
  /** The largest frame we accept. */
  maxFrameSize?: number;
  /** The largest fragmented message we reassemble. */
  maxReassemblySize?: number;
  /** Streams the peer may have open at once; more are answered ERROR[REJECTED]. */
  maxStreams?: number | null;
  /** Bytes of sent frames kept for retransmission in a resumable session (default 1 MiB). */
  resumeBufferSize?: number;
}

/** Server hook: null accepts the SETUP, [errorCode, message] rejects it. */
export type SetupPolicy = (setup: SetupInfo) => readonly [number, string] | null;

export interface EngineOptions {
  setup?: ClientSetup;
  limits?: Limits;
  setupPolicy?: SetupPolicy;
  /** (server) Whether this server grants leases (a SETUP with L is refused otherwise). */
  leasing?: boolean;
  /** EXT extended types the application understands. */
  extensions?: Iterable<number>;
  /** (server) The session a RESUME's token names (null: unknown); without it, a SETUP
   * asking for resumption is refused with REJECTED_SETUP and a RESUME with REJECTED_RESUME. */
  resumeLookup?: (token: Bytes) => ResumableSession | null;
}

/** Request-n credit one way of a stream; MAX_N is unbounded ("2^31-1 ... unbounded"). */
export class Credit {
  constructor(public value = 0) {}

  grant(n: number, remote = false): void {
    if (!Number.isInteger(n) || n < 1 || n > MAX_N) {
      if (remote) {
        return; // the codec refuses n < 1 on decode; nothing else reaches here
      }
      throw new InvalidGrant(`request-n must be 1..${MAX_N}, not ${n}`);
    }
    this.value = Math.min(MAX_N, this.value + n);
  }

  /** Take one item of credit; false when there is none. */
  take(): boolean {
    if (this.value === MAX_N) {
      return true;
    }
    if (this.value < 1) {
      return false;
    }
    this.value -= 1;
    return true;
  }
}

/** One open stream: its model's machine and bookkeeping. */
export class Stream {
  /** A request the application knows of (ours, or the peer's once whole). */
  opened: boolean;
  /** Credit we granted the peer (items it may still send us). */
  inbound: Credit | null = null;
  /** Credit the peer granted us (items we may still send). */
  outbound: Credit | null = null;
  sendFragments: FragmentsMachine | null = null;
  receiveFragments: FragmentsMachine | null = null;
  reassembly: Reassembly | null = null;

  constructor(
    readonly streamId: number,
    readonly model: InteractionModel,
    readonly role: "requester" | "responder",
    readonly machine: StateMachine<string>,
    public handlers: BoundHandlers,
  ) {
    this.opened = role === "requester";
  }
}

export type StreamMachineClass = {
  new (role: "requester" | "responder"): StateMachine<string>;
  bindRequester(h: StreamRequesterHandlers): BoundHandlers;
  bindResponder(h: StreamResponderHandlers): BoundHandlers;
};

export const MACHINES: Readonly<Record<InteractionModel, StreamMachineClass>> = {
  request_response: RequestResponseMachine,
  fire_and_forget: RequestFnfMachine,
  request_stream: RequestStreamMachine,
  request_channel: RequestChannelMachine,
};

export function modelOf(frame: Frame): InteractionModel | null {
  if (frame instanceof RequestResponse) return "request_response";
  if (frame instanceof RequestFnf) return "fire_and_forget";
  if (frame instanceof RequestStream) return "request_stream";
  if (frame instanceof RequestChannel) return "request_channel";
  return null;
}

/** The frames that advance implied positions (Resuming Operation, Implied Position). */
export function movesPosition(frame: Frame): boolean {
  return (
    frame.streamId !== 0 &&
    (frame instanceof Payload ||
      frame instanceof RequestN ||
      frame instanceof Cancel ||
      frame instanceof ErrorFrame ||
      modelOf(frame) !== null)
  );
}

export function isMessage(frame: Frame): frame is Message {
  return frame instanceof Payload || modelOf(frame) !== null;
}

/** What a resumed engine takes over from the one that lost its transport. */
export interface AdoptedState {
  readonly streams: Map<number, Stream>;
  readonly nextId: () => number;
}

/** A stream frame's handler context: the stream and the events of this call. */
export type StreamContext = [Stream, Event[]];
/** A connection frame's handler context: the state before the frame, and the events. */
export type ConnectionContext = [ConnectionState, Event[]];

/** Apply `frame` to `machine`, then its bound handler with the context (the stream or the
 * state before, and the events); false when the machine ignored it. Two fixed context
 * arguments, not a rest parameter: this runs once per frame received. */
export function dispatch(
  machine: StateMachine<string>,
  handlers: BoundHandlers,
  frame: Frame,
  subject: unknown,
  events: Event[],
): boolean {
  if (machine.receive(frame) === IGNORE) {
    return false;
  }
  const handler = handlers.get(frame.constructor as FrameClass);
  if (handler !== undefined) {
    handler(frame, subject, events);
  }
  return true;
}

/** Grant budgets of LEASE frames, both ways (twin of runtime/rsocket/lease.py). */
export class Leases {
  required = false;
  private forUs: { left: number; expires: number } | null = null;
  private forPeer: { left: number; expires: number } | null = null;

  restart(required: boolean): void {
    this.required = required;
    this.forUs = this.forPeer = null;
  }

  received(ttl: number, n: number, now: number): void {
    this.forUs = { left: n, expires: now + ttl };
  }

  sent(ttl: number, n: number, now: number): void {
    this.forPeer = { left: n, expires: now + ttl };
  }

  checkRequest(now: number): void {
    const lease = this.forUs;
    // "When a LEASE expires due to time, the value of the Number of Requests that a
    // Requester may make is implicitly 0."
    if (lease === null || now >= lease.expires || lease.left < 1) {
      throw new NoLease(
        "no valid LEASE: 'The Requester MUST NOT send more than Number of Requests specified " +
          "in the LEASE frame within the Time-To-Live value in the LEASE.'",
      );
    }
  }

  spendRequest(): void {
    if (this.forUs !== null) {
      this.forUs.left -= 1;
    }
  }

  admit(now: number): boolean {
    const lease = this.forPeer;
    if (lease === null || now >= lease.expires || lease.left < 1) {
      return false;
    }
    lease.left -= 1;
    return true;
  }
}

export function setupInfo(frame: Setup): SetupInfo {
  return {
    majorVersion: frame.majorVersion,
    minorVersion: frame.minorVersion,
    keepaliveInterval: frame.keepaliveInterval,
    maxLifetime: frame.maxLifetime,
    metadataMimeType: frame.metadataMimeType,
    dataMimeType: frame.dataMimeType,
    metadata: frame.metadata,
    data: frame.data,
    lease: frame.lease,
    resumeToken: frame.resumeToken,
  };
}

/** One RSocket connection's state and plumbing (see `RSocketEngine`). */
export abstract class EngineCore {
  readonly role: "client" | "server";
  /** Frames dropped because the spec says to ignore them. */
  ignoredFrames = 0;
  framesReceived = 0;

  protected readonly conn: ConnectionMachine;
  /** The bound handlers of a stream of `model` where we play `role` (StreamEngine's). */
  protected abstract handlersFor(
    role: "requester" | "responder",
    model: InteractionModel,
  ): BoundHandlers;
  protected readonly decoder: StreamDecoder;
  protected readonly mtu: number;
  protected readonly maxReassembly: number;
  protected readonly maxStreams: number | null;
  protected readonly setupPolicy: SetupPolicy | null;
  protected readonly leasing: boolean;
  protected readonly extensions: ReadonlySet<number>;
  protected streams = new Map<number, Stream>();
  /** Streams aborted while a fragmented message was arriving: until its last fragment. */
  /** (Made on first use, as `extensions` is shared when empty: an idle connection's size
   * is what a client with many connections pays per connection.) */
  protected discarding: Map<number, FragmentsMachine> | null = null;
  protected nextId: number;
  protected outConnection: Bytes[] = [];
  protected outStreams: Bytes[] = [];
  protected now = 0;
  protected setupInForce: SetupInfo | null = null;
  protected readonly leases = new Leases();
  protected readonly keepalive = new KeepaliveTimer();
  protected readonly resumeBufferSize: number;
  protected sizes: number[] = [];
  protected readonly resumeLookup: ((token: Bytes) => ResumableSession | null) | null;
  protected log: ResumeLog | null = null;
  protected resumeToken: Bytes | null = null;
  protected resumeForbidden = false;
  protected closingEvent: { errorCode: number; message: Bytes; byPeer: boolean } | null = null;

  constructor(role: "client" | "server", options: EngineOptions = {}) {
    if (role === "server" && options.setup !== undefined) {
      throw new RangeError("only a client sends SETUP: a server takes no setup");
    }
    if (
      role === "client" &&
      (options.setupPolicy !== undefined ||
        options.leasing === true ||
        options.resumeLookup !== undefined)
    ) {
      throw new RangeError("setupPolicy, resumeLookup and leasing are a server's options");
    }
    this.resumeLookup = options.resumeLookup ?? null;
    this.role = role;
    const limits = options.limits ?? {};
    if (limits.mtu !== undefined && limits.mtu < MIN_MTU) {
      throw new RangeError(`mtu must be at least ${MIN_MTU}`);
    }
    this.mtu = Math.min(limits.mtu ?? MAX_FRAME_SIZE, MAX_FRAME_SIZE);
    this.maxReassembly = limits.maxReassemblySize ?? 16 * 1024 * 1024;
    this.maxStreams = limits.maxStreams ?? null;
    this.decoder = new StreamDecoder({ maxFrameSize: limits.maxFrameSize ?? MAX_FRAME_SIZE });
    // Each frame's size on the wire, for implied positions: counted as the frame is
    // handled (a SETUP that asks for resumption comes in the same read as what follows).
    this.decoder.afterFrame = (_frame, size) => {
      this.sizes.push(size);
    };
    this.resumeBufferSize = limits.resumeBufferSize ?? 1024 * 1024;
    this.setupPolicy = options.setupPolicy ?? null;
    this.leasing = options.leasing ?? false;
    this.extensions =
      options.extensions === undefined ? NO_EXTENSIONS : new Set(options.extensions);
    this.nextId = role === "client" ? 1 : 2;
    this.conn = new ConnectionMachine(role);
    if (role === "client") {
      const s = options.setup ?? {};
      for (const mime of [s.metadataMimeType, s.dataMimeType]) {
        if (mime !== undefined && mime.endsWith("\0")) {
          throw new RangeError(
            `the MIME type ${JSON.stringify(mime)} is null terminated (the spec says MUST NOT)`,
          );
        }
      }
      this.setupInForce = {
        majorVersion: 1,
        minorVersion: 0,
        keepaliveInterval: s.keepaliveInterval ?? 20_000,
        maxLifetime: s.maxLifetime ?? 90_000,
        metadataMimeType: s.metadataMimeType ?? "application/octet-stream",
        dataMimeType: s.dataMimeType ?? "application/octet-stream",
        metadata: s.metadata ?? null,
        data: s.data ?? EMPTY,
        lease: s.lease ?? false,
        resumeToken: s.resumeToken ?? null,
      };
    }
  }

  // ================================================================ public state

  /** The `connection` machine's state. */
  get state(): ConnectionState {
    return this.conn.state;
  }

  get closed(): boolean {
    return this.conn.terminated;
  }

  /** A graceful close is under way (ERROR[CONNECTION_CLOSE] sent or received). */
  get closing(): boolean {
    return this.conn.state === ConnectionState.CLOSING;
  }

  get setup(): SetupInfo | null {
    return this.setupInForce;
  }

  get openStreams(): ReadonlyMap<number, Stream> {
    return this.streams;
  }

  /** The stream's machine state (UnknownStream when it is not open). */
  streamState(streamId: number): string {
    return this.get(streamId).machine.state;
  }

  /** Credit the peer granted us on a stream (items we may send now; MAX_N: unbounded). */
  outboundCredit(streamId: number): number {
    return this.get(streamId).outbound?.value ?? 0;
  }

  /** Bytes received of a frame that is not complete yet. */
  get bufferedBytes(): number {
    return this.decoder.buffered;
  }

  // ================================================================ output / time

  /** Every frame queued since the last call, each with its 3-byte length prefix
   * (stream-0 frames first: "Frames with Stream ID 0 SHOULD have a higher priority"). */
  dataToSend(): Bytes[] {
    if (this.outConnection.length === 0 && this.outStreams.length === 0) {
      return [];
    }
    const out = this.outConnection.concat(this.outStreams);
    this.outConnection = [];
    this.outStreams = [];
    return out;
  }

  /** When `handleTimer` should next be called (null: no deadline). */
  getTimer(): number | null {
    if (this.conn.terminated || this.setupInForce === null) {
      return null;
    }
    if (this.drained()) {
      return this.now;
    }
    return this.keepalive.deadline();
  }

  /** Send the client's periodic KEEPALIVE and report a silent peer. */
  handleTimer(now: number): Event[] {
    this.now = now;
    const events: Event[] = [];
    if (this.conn.terminated || this.setupInForce === null) {
      return events;
    }
    if (this.finishDrain(events)) {
      return events;
    }
    if (this.keepalive.sendDue(now)) {
      const frame = new Keepalive({ respond: true, lastReceivedPosition: this.position() });
      if (this.conn.allowsSend(frame)) {
        this.conn.send(frame);
        this.emit(frame);
      }
    }
    const silent = this.keepalive.dead(now);
    if (silent !== null) {
      events.push({ type: "ConnectionDead", silentFor: silent });
    }
    return events;
  }

  /** The implied position KEEPALIVE carries ("Set to all 0s when not supported"). */
  protected position(): bigint {
    return this.log !== null ? BigInt(this.log.receivedPosition) : 0n;
  }

  // ================================================================ plumbing

  protected ignoredOn(stream: Stream, frame: Frame): void {
    this.ignoredFrames += 1;
    if (!stream.opened && modelOf(frame) !== null) {
      this.streams.delete(stream.streamId); // the request meant to open it is dropped
    }
  }

  /** Run a fragment through `fragments`; the reassembled message once whole. */
  protected receiveFragment(stream: Stream, frame: Message, events: Event[]): Message | null {
    let machine = stream.receiveFragments;
    if (machine === null) {
      machine = stream.receiveFragments = new FragmentsMachine("receiver", FragmentsState.WHOLE);
    }
    const outcome = machine.receive(frame);
    if (outcome === IGNORE) {
      this.ignoredFrames += 1;
      return null;
    }
    let pending = stream.reassembly;
    try {
      if (outcome !== FragmentsState.WHOLE) {
        if (pending === null) {
          pending = stream.reassembly = new Reassembly(this.maxReassembly, frame);
        }
        pending.add(frame.metadata, frame.data);
        return null;
      }
      if (pending === null) {
        return frame; // one frame (F with C: "implicitly ignores the F flag")
      }
      pending.add(frame.metadata, frame.data);
    } catch (error) {
      if (!(error instanceof RemoteProtocolError)) {
        throw error;
      }
      stream.reassembly = null;
      this.abortStream(stream, ErrorCode.INVALID, error.message, events, stream.opened);
      if (machine.state !== FragmentsState.WHOLE) {
        (this.discarding ??= new Map()).set(stream.streamId, machine);
      }
      return null;
    }
    stream.reassembly = null;
    return pending.whole(frame);
  }

  protected newStream(
    streamId: number,
    model: InteractionModel,
    role: "requester" | "responder",
  ): Stream {
    return new Stream(
      streamId,
      model,
      role,
      new MACHINES[model](role),
      this.handlersFor(role, model),
    );
  }

  protected get(streamId: number): Stream {
    const stream = this.streams.get(streamId);
    if (stream === undefined) {
      throw new UnknownStream(`stream ${streamId} is not open`);
    }
    return stream;
  }

  protected emit(frame: Frame): void {
    // frameBytes returns a view of the runtime's pool that no later encode touches.
    const wire = frameBytes(frame);
    if (frame.streamId === 0) {
      this.outConnection.push(wire);
    } else {
      this.outStreams.push(wire);
      if (this.log !== null && movesPosition(frame)) {
        this.log.sent(wire);
      }
    }
  }

  /** Queue a whole message, fragmented when it exceeds the MTU. */
  protected transmit(stream: Stream, frame: Message, opening = false): void {
    const md = frame.metadata;
    const body = frame.data.length + (md !== null ? md.length + 3 : 0);
    if (body + FIXED_PART_MAX <= this.mtu) {
      this.emit(frame);
      return;
    }
    const pieces = fragment(frame, this.mtu);
    if (pieces === null) {
      this.emit(frame);
      return;
    }
    let machine = stream.sendFragments;
    if (machine === null) {
      machine = stream.sendFragments = new FragmentsMachine(
        "sender",
        opening ? FragmentsState.IDLE : FragmentsState.WHOLE,
      );
    }
    for (const piece of pieces) {
      machine.send(piece);
      this.emit(piece);
    }
  }

  protected terminateStreams(events: Event[], errorCode: number, why: string): void {
    for (const streamId of this.streams.keys()) {
      events.push({ type: "StreamAborted", streamId, errorCode, why });
    }
    this.streams.clear();
  }

  /** End a stream whose peer broke a rule, with the frame its machine allows: ERROR
   * (responder, channel) or CANCEL (a request-response/stream requester). */
  protected abortStream(
    stream: Stream,
    errorCode: number,
    why: string,
    events: Event[],
    notify: boolean,
  ): void {
    const error = new ErrorFrame({
      streamId: stream.streamId,
      errorCode,
      data: utf8.encode(why).subarray(0, 1024),
    });
    if (stream.machine.allowsSend(error)) {
      stream.machine.send(error);
      this.emit(error);
    } else {
      const cancel = new Cancel({ streamId: stream.streamId });
      if (stream.machine.allowsSend(cancel)) {
        stream.machine.send(cancel);
        this.emit(cancel);
      }
    }
    this.streams.delete(stream.streamId);
    if (notify) {
      events.push({ type: "StreamAborted", streamId: stream.streamId, errorCode, why });
    }
  }

  protected drained(): boolean {
    return (
      this.closingEvent !== null &&
      this.streams.size === 0 &&
      this.conn.state === ConnectionState.CLOSING
    );
  }

  /** End a graceful close whose last stream has ended (closing -> closed is no frame). */
  protected finishDrain(events: Event[]): boolean {
    if (!this.drained() || this.closingEvent === null) {
      return false;
    }
    this.conn.state = ConnectionState.CLOSED;
    events.push({
      type: "ConnectionClosed",
      ...this.closingEvent,
      graceful: true,
      resumable: false,
    });
    return true;
  }
}
