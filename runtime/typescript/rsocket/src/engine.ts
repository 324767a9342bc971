/**
 * The sans-I/O RSocket 1.0 engine: one connection, either role (twin of
 * runtime/rsocket/engine.py, engine_core.py and stream_engine.py). No sockets, no clocks:
 * `receiveData(bytes, now) -> Event[]`, commands that queue frames (`requestStream(...)
 * -> streamId`, `sendNext`, `request`, `cancel` ...), `dataToSend()`, and time passed in
 * (`getTimer()`, `handleTimer(now)`; milliseconds).
 *
 * Every frame sent or received goes through the generated machines
 * (`@wirestream/generated/rsocket/v1_0/machines`): stream 0 through the `connection`
 * machine, then `onConnection<Frame>`; a stream's frames through its interaction model's
 * machine, then `onStream<Frame>`, reached only through the machine's typed binder
 * (`bindClient`, `bindResponder` ...: tsc checks this class has every handler). F-flag
 * sequences pass the `fragments` machine. What the tables cannot say is here: request-n
 * credit, lease budgets, keepalive timing, stream ids, fragmenting and reassembly.
 *
 * Peer violations: a stream-level one ends the stream with the frame its machine allows
 * (ERROR, else CANCEL) and reports StreamAborted; a connection-level one queues
 * ERROR[INVALID_SETUP] (first frame) or ERROR[CONNECTION_ERROR], closes, and throws the
 * RemoteProtocolError from `receiveData` (`dataToSend()` still yields the ERROR).
 */

import {
  Cancel,
  ErrorCode,
  Error as ErrorFrame,
  Ext,
  Keepalive,
  Lease,
  MAX_FRAME_SIZE,
  MetadataPush,
  Payload,
  RequestChannel,
  RequestFnf,
  RequestN,
  RequestResponse,
  RequestStream,
  Resume,
  ResumeOk,
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
  RequestChannelState,
  RequestFnfMachine,
  RequestResponseMachine,
  RequestStreamMachine,
  type ConnectionClientHandlers,
  type ConnectionServerHandlers,
  type StreamRequesterHandlers,
  type StreamResponderHandlers,
} from "@wirestream/generated/rsocket/v1_0/machines";
import {
  DecodeError,
  DemandExceeded,
  IGNORE,
  InvalidGrant,
  LocalProtocolError,
  PeerExceededDemand,
  RemoteProtocolError,
  type BoundHandlers,
  type FrameClass,
  type StateMachine,
} from "@wirestream/runtime";

import {
  NoLease,
  NoNewRequests,
  ResumeNotAllowed,
  ResumePositionLost,
  StreamIdsExhausted,
  UnknownStream,
  UnsupportedExtension,
} from "./errors.js";
import type { Event, InteractionModel, SetupInfo } from "./events.js";
import { MIN_MTU, Reassembly, fragment, type Message, type Request } from "./fragmentation.js";
import { KeepaliveTimer } from "./keepalive.js";
import { ResumeLog, type ResumableSession } from "./resume.js";

/** request-n and lease counts are 31-bit; 2^31-1 means unbounded. */
export const MAX_N = 0x7fffffff;
const FIXED_PART_MAX = 16;
const EMPTY = new Uint8Array(0);
const utf8 = new TextEncoder();

/** What the client's SETUP says (times in milliseconds, as on the wire). */
export interface ClientSetup {
  keepaliveInterval?: number;
  maxLifetime?: number;
  metadataMimeType?: string;
  dataMimeType?: string;
  metadata?: Uint8Array | null;
  data?: Uint8Array;
  lease?: boolean;
  /** Ask for a resumable session with this token (the R flag). */
  resumeToken?: Uint8Array | null;
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
  resumeLookup?: (token: Uint8Array) => ResumableSession | null;
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

type StreamMachineClass = {
  new (role: "requester" | "responder"): StateMachine<string>;
  bindRequester(h: StreamRequesterHandlers): BoundHandlers;
  bindResponder(h: StreamResponderHandlers): BoundHandlers;
};

const MACHINES: Readonly<Record<InteractionModel, StreamMachineClass>> = {
  request_response: RequestResponseMachine,
  fire_and_forget: RequestFnfMachine,
  request_stream: RequestStreamMachine,
  request_channel: RequestChannelMachine,
};

function modelOf(frame: Frame): InteractionModel | null {
  if (frame instanceof RequestResponse) return "request_response";
  if (frame instanceof RequestFnf) return "fire_and_forget";
  if (frame instanceof RequestStream) return "request_stream";
  if (frame instanceof RequestChannel) return "request_channel";
  return null;
}

/** The frames that advance implied positions (Resuming Operation, Implied Position). */
function movesPosition(frame: Frame): boolean {
  return (
    frame.streamId !== 0 &&
    (frame instanceof Payload ||
      frame instanceof RequestN ||
      frame instanceof Cancel ||
      frame instanceof ErrorFrame ||
      modelOf(frame) !== null)
  );
}

function isMessage(frame: Frame): frame is Message {
  return frame instanceof Payload || modelOf(frame) !== null;
}

/** What a resumed engine takes over from the one that lost its transport. */
interface AdoptedState {
  readonly streams: Map<number, Stream>;
  readonly nextId: () => number;
}

/** A stream frame's handler context: the stream and the events of this call. */
type StreamContext = [Stream, Event[]];
/** A connection frame's handler context: the state before the frame, and the events. */
type ConnectionContext = [ConnectionState, Event[]];

/** Apply `frame` to `machine`, then its bound handler; false when the machine ignored it. */
function dispatch(
  machine: StateMachine<string>,
  handlers: BoundHandlers,
  frame: Frame,
  ...context: unknown[]
): boolean {
  if (machine.receive(frame) === IGNORE) {
    return false;
  }
  const handler = handlers.get(frame.constructor as FrameClass);
  if (handler !== undefined) {
    handler(frame, ...context);
  }
  return true;
}

/** Grant budgets of LEASE frames, both ways (twin of runtime/rsocket/lease.py). */
class Leases {
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

function setupInfo(frame: Setup): SetupInfo {
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

/**
 * One RSocket 1.0 connection. A client's `setup` is what its SETUP says; a server's
 * options are `setupPolicy` and `leasing`; `limits` bound what either side sends,
 * accepts and reassembles.
 */
export class RSocketEngine
  implements
    ConnectionClientHandlers,
    ConnectionServerHandlers,
    StreamRequesterHandlers,
    StreamResponderHandlers
{
  readonly role: "client" | "server";
  /** Frames dropped because the spec says to ignore them. */
  ignoredFrames = 0;
  framesReceived = 0;

  private readonly conn: ConnectionMachine;
  private readonly connHandlers: BoundHandlers;
  private readonly streamHandlers: Record<
    "requester" | "responder",
    Record<InteractionModel, BoundHandlers>
  >;
  private readonly decoder: StreamDecoder;
  private readonly mtu: number;
  private readonly maxReassembly: number;
  private readonly maxStreams: number | null;
  private readonly setupPolicy: SetupPolicy | null;
  private readonly leasing: boolean;
  private readonly extensions: ReadonlySet<number>;
  private streams = new Map<number, Stream>();
  /** Streams aborted while a fragmented message was arriving: until its last fragment. */
  private readonly discarding = new Map<number, FragmentsMachine>();
  private nextId: number;
  private outConnection: Uint8Array[] = [];
  private outStreams: Uint8Array[] = [];
  private now = 0;
  private setupInForce: SetupInfo | null = null;
  private readonly leases = new Leases();
  private readonly keepalive = new KeepaliveTimer();
  private readonly resumeBufferSize: number;
  private sizes: number[] = [];
  private readonly resumeLookup: ((token: Uint8Array) => ResumableSession | null) | null;
  private log: ResumeLog | null = null;
  private resumeToken: Uint8Array | null = null;
  private resumeForbidden = false;
  private closingEvent: { errorCode: number; message: Uint8Array; byPeer: boolean } | null = null;

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
    this.extensions = new Set(options.extensions ?? []);
    this.nextId = role === "client" ? 1 : 2;
    this.conn = new ConnectionMachine(role);
    this.connHandlers =
      role === "client" ? ConnectionMachine.bindClient(this) : ConnectionMachine.bindServer(this);
    const bind = (
      streamRole: "requester" | "responder",
    ): Record<InteractionModel, BoundHandlers> => {
      const out: Partial<Record<InteractionModel, BoundHandlers>> = {};
      for (const [model, cls] of Object.entries(MACHINES) as [
        InteractionModel,
        StreamMachineClass,
      ][]) {
        out[model] = streamRole === "requester" ? cls.bindRequester(this) : cls.bindResponder(this);
      }
      return out as Record<InteractionModel, BoundHandlers>;
    };
    this.streamHandlers = { requester: bind("requester"), responder: bind("responder") };
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

  // ================================================================ output / time

  /** Every frame queued since the last call, each with its 3-byte length prefix
   * (stream-0 frames first: "Frames with Stream ID 0 SHOULD have a higher priority"). */
  dataToSend(): Uint8Array[] {
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

  // ================================================================ connection commands

  /** (client) Queue the SETUP: "Immediately upon successful connection, the client MUST
   * send either a SETUP or RESUME frame with Stream ID of 0". */
  connect(now = 0): void {
    const setup = this.setupInForce;
    if (this.role !== "client" || setup === null) {
      throw new RangeError("only a client sends SETUP");
    }
    this.now = now;
    const frame = new Setup({
      lease: setup.lease,
      keepaliveInterval: setup.keepaliveInterval,
      maxLifetime: setup.maxLifetime,
      metadataMimeType: setup.metadataMimeType,
      dataMimeType: setup.dataMimeType,
      metadata: setup.metadata,
      data: setup.data,
      resumeToken: setup.resumeToken,
    });
    this.conn.send(frame);
    this.emit(frame);
    if (setup.resumeToken !== null) {
      this.log = new ResumeLog(this.resumeBufferSize);
      this.resumeToken = setup.resumeToken;
    }
    this.leases.restart(setup.lease);
    this.keepalive.start(now, setup.keepaliveInterval, setup.maxLifetime, true);
  }

  /** KEEPALIVE with R (the server "MAY" initiate one "upon application request"). */
  sendKeepalive(data: Uint8Array = EMPTY): void {
    const frame = new Keepalive({ respond: true, lastReceivedPosition: this.position(), data });
    this.conn.send(frame);
    this.emit(frame);
  }

  metadataPush(metadata: Uint8Array): void {
    const frame = new MetadataPush({ metadata });
    this.conn.send(frame);
    this.emit(frame);
  }

  /** Grant the peer's requester `numberOfRequests` requests for `ttl` ms. */
  sendLease(
    ttl: number,
    numberOfRequests: number,
    metadata: Uint8Array | null = null,
    now?: number,
  ): void {
    if (now !== undefined) {
      this.now = now;
    }
    const frame = new Lease({ ttl, numberOfRequests, metadata });
    this.conn.send(frame);
    this.emit(frame);
    this.leases.sent(ttl, numberOfRequests, this.now);
  }

  /** Queue an EXT frame; `ignore` sets the I flag. */
  sendExt(
    extendedType: number,
    data: Uint8Array = EMPTY,
    metadata: Uint8Array | null = null,
    ignore = true,
  ): void {
    const frame = new Ext({ extendedType, data, metadata, ignore });
    this.conn.send(frame);
    this.emit(frame);
  }

  /**
   * End the connection at once with ERROR on stream 0 (CONNECTION_ERROR by default).
   * CONNECTION_CLOSE waits for the open streams: with that code this is
   * `closeGracefully` when no stream is open, a LocalProtocolError while one is.
   */
  close(errorCode: number = ErrorCode.CONNECTION_ERROR, message: Uint8Array = EMPTY): Event[] {
    if (errorCode === ErrorCode.CONNECTION_CLOSE && !this.closing) {
      if (this.streams.size > 0) {
        throw new LocalProtocolError(
          "ERROR[CONNECTION_CLOSE] waits for the open streams: use closeGracefully(), or " +
            "CONNECTION_ERROR to end them now",
        );
      }
      return this.closeGracefully(message);
    }
    const frame = new ErrorFrame({ streamId: 0, errorCode, data: message });
    this.conn.send(frame);
    this.emit(frame);
    const events: Event[] = [];
    this.terminateStreams(events, errorCode, "connection closed");
    events.push({
      type: "ConnectionClosed",
      errorCode,
      message,
      byPeer: false,
      graceful: false,
      resumable: false,
    });
    return events;
  }

  /**
   * Begin a graceful close: ERROR[CONNECTION_CLOSE], after which "Sender or Receiver of
   * this frame MUST wait for outstanding streams to terminate before closing the
   * connection. New requests MAY not be accepted." ConnectionClosed(graceful) follows
   * once no stream is left.
   */
  closeGracefully(message: Uint8Array = EMPTY): Event[] {
    const code = ErrorCode.CONNECTION_CLOSE;
    const frame = new ErrorFrame({ streamId: 0, errorCode: code, data: message });
    this.conn.send(frame); // IllegalSend before SETUP, after close, or if already closing
    this.emit(frame);
    this.closingEvent = { errorCode: code, message, byPeer: false };
    const events: Event[] = [{ type: "ConnectionClosing", ...this.closingEvent }];
    this.finishDrain(events);
    return events;
  }

  // ================================================================ requests

  requestResponse(data: Uint8Array, metadata: Uint8Array | null = null, now?: number): number {
    return this.open("request_response", new RequestResponse({ data, metadata }), null, null, now);
  }

  fireAndForget(data: Uint8Array, metadata: Uint8Array | null = null, now?: number): number {
    return this.open("fire_and_forget", new RequestFnf({ data, metadata }), null, null, now);
  }

  /** Open a stream and grant the responder `initialN` items (1..2^31-1). */
  requestStream(
    data: Uint8Array,
    metadata: Uint8Array | null = null,
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
    data: Uint8Array,
    metadata: Uint8Array | null = null,
    initialN = MAX_N,
    complete = false,
    now?: number,
  ): number {
    const inbound = new Credit();
    inbound.grant(initialN);
    const frame = new RequestChannel({ data, metadata, initialRequestN: initialN, complete });
    return this.open("request_channel", frame, inbound, new Credit(), now);
  }

  private open(
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

  private allocateId(): number {
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
    data: Uint8Array,
    metadata: Uint8Array | null = null,
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
  sendError(streamId: number, errorCode: number, message: string | Uint8Array = EMPTY): void {
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

  // ================================================================ receiving

  /** Feed bytes from the transport (an empty array: EOF); the events they cause. `now`:
   * the caller's clock in milliseconds. */
  receiveData(data: Uint8Array, now?: number): Event[] {
    if (now !== undefined) {
      this.now = now;
    }
    const events: Event[] = [];
    if (data.length === 0) {
      this.onEof(events);
      return events;
    }
    if (this.conn.terminated) {
      return events; // "all frames will be ignored"
    }
    let frames: Frame[];
    let failure: DecodeError | null = null;
    this.sizes = [];
    try {
      frames = this.decoder.feed(data);
    } catch (error) {
      if (!(error instanceof DecodeError)) {
        throw error;
      }
      frames = error.frames as Frame[];
      failure = error;
    }
    this.framesReceived += frames.length;
    try {
      const sizes = this.sizes;
      for (let index = 0; index < frames.length; index++) {
        const frame = frames[index]!;
        if (this.log !== null && movesPosition(frame)) {
          this.log.received(sizes[index]!);
        }
        this.handleFrame(frame, events);
      }
    } catch (error) {
      if (error instanceof RemoteProtocolError) {
        this.failConnection(error, events);
      }
      throw error;
    }
    if (failure !== null) {
      this.failConnection(failure, events);
    }
    this.finishDrain(events);
    return events;
  }

  /** A connection-level peer violation: queue the prescribed ERROR, close, throw. */
  private failConnection(error: RemoteProtocolError, events: Event[]): never {
    const firstFrame = this.role === "server" && this.conn.state === ConnectionState.NEW;
    const errorCode = firstFrame ? ErrorCode.INVALID_SETUP : ErrorCode.CONNECTION_ERROR;
    const frame = new ErrorFrame({
      streamId: 0,
      errorCode,
      data: utf8.encode(error.message).subarray(0, 1024),
    });
    if (this.conn.allowsSend(frame)) {
      this.conn.send(frame);
      this.emit(frame);
    } else {
      this.conn.state = ConnectionState.CLOSED;
    }
    this.terminateStreams(events, errorCode, error.message);
    (error as RemoteProtocolError & { events?: Event[] }).events = events;
    throw error;
  }

  private handleFrame(frame: Frame, events: Event[]): void {
    const streamId = frame.streamId;
    if (streamId === 0 || frame instanceof Ext) {
      this.onConnectionFrame(frame, events);
      return;
    }
    const model = modelOf(frame);
    const state = this.conn.state;
    if ((state === ConnectionState.NEW || state === ConnectionState.SETUP_SENT) && model === null) {
      this.observe(frame, events);
    }
    let stream = this.streams.get(streamId);
    if (stream === undefined) {
      const discarding = this.discarding.get(streamId);
      if (discarding !== undefined) {
        if (!isMessage(frame) || discarding.receive(frame) === FragmentsState.WHOLE) {
          this.discarding.delete(streamId);
        }
        this.ignoredFrames += 1;
        return;
      }
      if (model === null) {
        // "Receiving a CANCEL / an ERROR / a PAYLOAD on an unknown Stream ID ... MUST be ignored".
        this.ignoredFrames += 1;
        return;
      }
      this.onNewStream(frame as Request, model, events);
      return;
    }
    let whole: Frame | null = frame;
    if (isMessage(frame) && (frame.follows || stream.reassembly !== null)) {
      whole = this.receiveFragment(stream, frame, events);
      if (whole === null) {
        return;
      }
    }
    if (!dispatch(stream.machine, stream.handlers, whole, stream, events)) {
      this.ignoredOn(stream, whole);
    }
  }

  private observe(frame: Frame, events: Event[]): ConnectionState | typeof IGNORE {
    const before = this.conn.state;
    const outcome = this.conn.receive(frame);
    if (
      outcome === ConnectionState.ESTABLISHED &&
      (before === ConnectionState.SETUP_SENT || before === ConnectionState.AWAITING_LEASE)
    ) {
      this.confirmSetup(events, events.length);
    }
    return outcome;
  }

  private confirmSetup(events: Event[], at: number): void {
    if (this.role === "client" && this.setupInForce !== null) {
      events.splice(at, 0, { type: "ConnectionEstablished", setup: this.setupInForce });
    }
  }

  private onConnectionFrame(frame: Frame, events: Event[]): void {
    const before = this.conn.state;
    const mark = events.length;
    if (!dispatch(this.conn, this.connHandlers, frame, before, events)) {
      this.ignoredFrames += 1;
      return;
    }
    if (
      (before === ConnectionState.SETUP_SENT || before === ConnectionState.AWAITING_LEASE) &&
      this.conn.state === ConnectionState.ESTABLISHED
    ) {
      this.confirmSetup(events, mark);
    }
  }

  private onNewStream(frame: Request, model: InteractionModel, events: Event[]): void {
    if (this.observe(frame, events) === IGNORE) {
      this.ignoredFrames += 1;
      return;
    }
    const peerParity = this.role === "client" ? 0 : 1;
    if (frame.streamId % 2 !== peerParity) {
      this.ignoredFrames += 1; // a request id of our own parity: ignored
      return;
    }
    const stream = this.newStream(frame.streamId, model, "responder");
    this.streams.set(frame.streamId, stream);
    let whole: Frame = frame;
    if (frame.follows) {
      stream.receiveFragments = new FragmentsMachine("receiver");
      const joined = this.receiveFragment(stream, frame, events);
      if (joined === null) {
        return;
      }
      whole = joined;
    }
    if (!dispatch(stream.machine, stream.handlers, whole, stream, events)) {
      this.ignoredOn(stream, whole);
    }
  }

  private onEof(events: Event[]): void {
    if (this.conn.terminated) {
      return;
    }
    // A session whose SETUP asked for resumption outlives its transport: its streams
    // stay, for an engine that resumes it (`session()`, `RSocketEngine.resume`).
    const resumable = this.log !== null && !this.resumeForbidden;
    this.conn.state = ConnectionState.CLOSED; // EOF is no frame, so no row
    if (!resumable) {
      this.terminateStreams(events, ErrorCode.CONNECTION_ERROR, "transport closed");
    }
    events.push({
      type: "ConnectionClosed",
      errorCode: null,
      message: EMPTY,
      byPeer: true,
      graceful: false,
      resumable,
    });
  }

  // --- resumption ---------------------------------------------------------------------

  /** The resumable state of this connection, to continue it on a new transport. */
  session(): ResumableSession {
    if (this.log === null || this.resumeToken === null || this.setupInForce === null) {
      throw new ResumeNotAllowed("resumption was not negotiated (SETUP without a token)");
    }
    if (this.resumeForbidden) {
      throw new ResumeNotAllowed("the server said never to resume this session");
    }
    const state: AdoptedState = { streams: this.streams, nextId: () => this.nextId };
    return { token: this.resumeToken, setup: this.setupInForce, log: this.log, state };
  }

  /**
   * (client) A new engine for a new transport that continues `session` by sending RESUME:
   * "The RESUME Identification Token MUST be the token used in the original SETUP frame.
   * The RESUME Last Received Position field MUST be the last successfully received
   * implied position from the server."
   */
  static resume(session: ResumableSession, now = 0, limits?: Limits): RSocketEngine {
    const engine = new RSocketEngine("client", limits !== undefined ? { limits } : {});
    engine.adopt(session);
    engine.now = now;
    const frame = new Resume({
      resumeToken: session.token,
      lastReceivedServerPosition: BigInt(session.log.receivedPosition),
      firstAvailableClientPosition: BigInt(session.log.firstAvailable),
    });
    engine.conn.send(frame);
    engine.emit(frame);
    engine.keepalive.start(now, session.setup.keepaliveInterval, session.setup.maxLifetime, true);
    return engine;
  }

  private adopt(session: ResumableSession): void {
    const state = session.state as AdoptedState;
    this.streams = state.streams;
    for (const stream of this.streams.values()) {
      stream.handlers = this.streamHandlers[stream.role][stream.model]; // ours from now on
    }
    this.nextId = state.nextId();
    this.setupInForce = session.setup;
    this.log = session.log;
    this.resumeToken = session.token;
    // "LEASE semantics MUST be restarted upon a new connection by sending a LEASE frame
    // from the server."
    this.leases.restart(session.setup.lease);
  }

  /** (server) The session a RESUME continues, or why it cannot be resumed. */
  private answerResume(frame: Resume): ResumableSession | string {
    if (this.resumeLookup === null) {
      return "resumption is not supported";
    }
    const session = this.resumeLookup(frame.resumeToken);
    if (session === null) {
      return "unknown resume token"; // "If not identified, then the server MUST send an ERROR"
    }
    if (frame.majorVersion !== 1 || frame.minorVersion !== 0) {
      return "a session resumes with the version it started with";
    }
    if (Number(frame.firstAvailableClientPosition) > session.log.receivedPosition) {
      // "has the client retained all frames past the server's last-retained position"
      return "the client no longer has frames the server has not received";
    }
    const last = Number(frame.lastReceivedServerPosition);
    if (last < session.log.firstAvailable || last > session.log.sentPosition) {
      return "the server no longer has frames past the client's position";
    }
    return session;
  }

  /** The implied position KEEPALIVE carries ("Set to all 0s when not supported"). */
  private position(): bigint {
    return this.log !== null ? BigInt(this.log.receivedPosition) : 0n;
  }

  // --- stream 0: onConnection<Frame> ----------------------------------------------

  /** (server) Accept or reject the SETUP the machine let through. */
  onConnectionSetup(frame: Setup, ...context: unknown[]): void {
    const [, events] = context as ConnectionContext;
    const info = setupInfo(frame);
    let rejection: readonly [number, string] | null = null;
    if (info.majorVersion !== 1 || info.minorVersion > 0) {
      rejection = [
        ErrorCode.UNSUPPORTED_SETUP,
        `version ${info.majorVersion}.${info.minorVersion} is not supported`,
      ];
    } else if (info.metadataMimeType.endsWith("\0") || info.dataMimeType.endsWith("\0")) {
      rejection = [ErrorCode.INVALID_SETUP, "a MIME type is null terminated"];
    } else if (info.resumeToken !== null && this.resumeLookup === null) {
      // "A server that receives a SETUP frame that has (R)esume Enabled set, but does not
      // support resuming operation, MUST reject the SETUP with an ERROR[REJECTED_SETUP]."
      rejection = [ErrorCode.REJECTED_SETUP, "resumption is not supported"];
    } else if (info.lease && !this.leasing) {
      rejection = [ErrorCode.UNSUPPORTED_SETUP, "leasing is not supported by this server"];
    } else if (this.setupPolicy !== null) {
      rejection = this.setupPolicy(info);
    }
    if (rejection !== null) {
      const [errorCode, reason] = rejection;
      const message = utf8.encode(reason);
      const error = new ErrorFrame({ streamId: 0, errorCode, data: message });
      this.conn.send(error);
      this.emit(error);
      events.push({ type: "ConnectionRejected", errorCode, message, byPeer: false });
      return;
    }
    this.setupInForce = info;
    this.leases.restart(info.lease);
    if (info.resumeToken !== null) {
      this.log = new ResumeLog(this.resumeBufferSize);
      this.resumeToken = info.resumeToken;
    }
    this.keepalive.start(this.now, info.keepaliveInterval, info.maxLifetime, false);
    events.push({ type: "ConnectionEstablished", setup: info });
  }

  onConnectionKeepalive(frame: Keepalive, ...context: unknown[]): void {
    const [, events] = context as ConnectionContext;
    this.keepalive.heard(this.now);
    if (this.log !== null && frame.lastReceivedPosition > 0n) {
      this.log.trim(Number(frame.lastReceivedPosition));
    }
    if (frame.respond) {
      // "Reception of a KEEPALIVE frame with the (R)espond flag set MUST cause a client or
      // server to send back a KEEPALIVE with the (R)espond flag NOT set. The data in the
      // received KEEPALIVE MUST be echoed back in the generated KEEPALIVE."
      const echo = new Keepalive({
        respond: false,
        lastReceivedPosition: this.position(),
        data: frame.data,
      });
      if (this.conn.allowsSend(echo)) {
        this.conn.send(echo);
        this.emit(echo);
      }
    }
    events.push({ type: "KeepaliveReceived", data: frame.data, respond: frame.respond });
  }

  onConnectionLease(frame: Lease, ...context: unknown[]): void {
    const [, events] = context as ConnectionContext;
    // "The last received LEASE frame overrides all previous LEASE frame values."
    this.leases.received(frame.ttl, frame.numberOfRequests, this.now);
    events.push({
      type: "LeaseReceived",
      ttl: frame.ttl,
      numberOfRequests: frame.numberOfRequests,
      metadata: frame.metadata,
    });
  }

  onConnectionMetadataPush(frame: MetadataPush, ...context: unknown[]): void {
    const [, events] = context as ConnectionContext;
    events.push({ type: "MetadataPushReceived", metadata: frame.metadata });
  }

  /** ERROR on stream 0 that the machine says ends (or, CONNECTION_CLOSE, drains) the connection. */
  onConnectionError(frame: ErrorFrame, ...context: unknown[]): void {
    const [before, events] = context as ConnectionContext;
    const errorCode = frame.errorCode;
    const message = frame.data;
    if (this.closing) {
      if (before !== ConnectionState.CLOSING) {
        this.closingEvent = { errorCode, message, byPeer: true };
        events.push({ type: "ConnectionClosing", ...this.closingEvent });
      }
      return;
    }
    const resuming = before === ConnectionState.RESUMING;
    if (errorCode === ErrorCode.REJECTED_RESUME && resuming) {
      // "On receiving an ERROR[REJECTED_RESUME] frame, the client MUST NOT attempt
      // resumption again".
      this.resumeForbidden = true;
    }
    const setupPhase =
      before === ConnectionState.SETUP_SENT || before === ConnectionState.AWAITING_LEASE;
    const setupCodes: readonly number[] = [
      ErrorCode.INVALID_SETUP,
      ErrorCode.UNSUPPORTED_SETUP,
      ErrorCode.REJECTED_SETUP,
    ];
    if (resuming || (this.role === "client" && setupPhase && setupCodes.includes(errorCode))) {
      events.push({ type: "ConnectionRejected", errorCode, message, byPeer: true });
    } else {
      events.push({
        type: "ConnectionClosed",
        errorCode,
        message,
        byPeer: true,
        graceful: false,
        resumable: false,
      });
    }
    this.terminateStreams(events, errorCode, "connection error from the peer");
  }

  onConnectionExt(frame: Ext, ...context: unknown[]): void {
    if (this.extensions.has(frame.extendedType)) {
      return; // the application's: not reported by this engine yet
    }
    if (frame.ignore) {
      this.ignoredFrames += 1;
      return;
    }
    void context;
    throw new UnsupportedExtension(
      `EXT frame of extended type ${frame.extendedType} (not understood) without the I flag: ` +
        "'An implementation MAY send an ERROR[CONNECTION_ERROR] frame and close the " +
        "underlying transport connection'",
    );
  }

  /** (server) Answer RESUME with RESUME_OK (and retransmit) or ERROR[REJECTED_RESUME]. */
  onConnectionResume(frame: Resume, ...context: unknown[]): void {
    const [, events] = context as ConnectionContext;
    const answer = this.answerResume(frame);
    if (typeof answer !== "string") {
      this.adopt(answer);
      const last = Number(frame.lastReceivedServerPosition);
      const replay = answer.log.replayFrom(last) ?? [];
      const ok = new ResumeOk({ lastReceivedClientPosition: BigInt(answer.log.receivedPosition) });
      this.conn.send(ok);
      this.emit(ok);
      this.outStreams.push(...replay);
      const setup = answer.setup;
      this.keepalive.start(this.now, setup.keepaliveInterval, setup.maxLifetime, false);
      events.push({ type: "ConnectionResumed", position: last, replayed: replay.length });
      return;
    }
    const message = utf8.encode(answer);
    const error = new ErrorFrame({
      streamId: 0,
      errorCode: ErrorCode.REJECTED_RESUME,
      data: message,
    });
    this.conn.send(error);
    this.emit(error);
    events.push({
      type: "ConnectionRejected",
      errorCode: ErrorCode.REJECTED_RESUME,
      message,
      byPeer: false,
    });
  }

  /** (client) "MAY retransmit all ... frames starting at the RESUME_OK Last Received
   * Position field value from the server". */
  onConnectionResumeOk(frame: ResumeOk, ...context: unknown[]): void {
    const [, events] = context as ConnectionContext;
    const log = this.log;
    const position = Number(frame.lastReceivedClientPosition);
    const replay = log?.replayFrom(position) ?? null;
    if (log === null || replay === null) {
      this.resumeForbidden = true; // "MUST NOT attempt resumption again"
      throw new ResumePositionLost(
        `RESUME_OK position ${position} is outside what we retain ` +
          `(${log?.firstAvailable ?? 0}..${log?.sentPosition ?? 0})`,
      );
    }
    this.outStreams.push(...replay);
    events.push({ type: "ConnectionResumed", position, replayed: replay.length });
  }

  // --- streams: onStream<Frame> -----------------------------------------------------

  /** A whole request the stream's machine took: the lease, the stream cap, then the application. */
  private onRequest(frame: Request, ...context: unknown[]): void {
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

  private peerStreams(): number {
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

  // ================================================================ plumbing

  private ignoredOn(stream: Stream, frame: Frame): void {
    this.ignoredFrames += 1;
    if (!stream.opened && modelOf(frame) !== null) {
      this.streams.delete(stream.streamId); // the request meant to open it is dropped
    }
  }

  /** Run a fragment through `fragments`; the reassembled message once whole. */
  private receiveFragment(stream: Stream, frame: Message, events: Event[]): Message | null {
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
        this.discarding.set(stream.streamId, machine);
      }
      return null;
    }
    stream.reassembly = null;
    return pending.whole(frame);
  }

  private newStream(
    streamId: number,
    model: InteractionModel,
    role: "requester" | "responder",
  ): Stream {
    return new Stream(
      streamId,
      model,
      role,
      new MACHINES[model](role),
      this.streamHandlers[role][model],
    );
  }

  private get(streamId: number): Stream {
    const stream = this.streams.get(streamId);
    if (stream === undefined) {
      throw new UnknownStream(`stream ${streamId} is not open`);
    }
    return stream;
  }

  private emit(frame: Frame): void {
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
  private transmit(stream: Stream, frame: Message, opening = false): void {
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

  private terminateStreams(events: Event[], errorCode: number, why: string): void {
    for (const streamId of this.streams.keys()) {
      events.push({ type: "StreamAborted", streamId, errorCode, why });
    }
    this.streams.clear();
  }

  /** End a stream whose peer broke a rule, with the frame its machine allows: ERROR
   * (responder, channel) or CANCEL (a request-response/stream requester). */
  private abortStream(
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

  private drained(): boolean {
    return (
      this.closingEvent !== null &&
      this.streams.size === 0 &&
      this.conn.state === ConnectionState.CLOSING
    );
  }

  /** End a graceful close whose last stream has ended (closing -> closed is no frame). */
  private finishDrain(events: Event[]): boolean {
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
