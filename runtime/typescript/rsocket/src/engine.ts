/**
 * The sans-I/O RSocket 1.0 engine: one connection, either role (twin of
 * runtime/rsocket/engine.py). No sockets, no clocks: `receiveData(bytes, now) -> Event[]`,
 * commands that queue frames (`requestStream(...) -> streamId`, `sendNext`, `request`,
 * `cancel` ...), `dataToSend()`, and time passed in (`getTimer()`, `handleTimer(now)`;
 * milliseconds).
 *
 * Every frame sent or received goes through the generated machines
 * (`@wirestream/generated/rsocket/v1_0/machines`): stream 0 through the `connection`
 * machine, then `onConnection<Frame>` (here); a stream's frames through its interaction
 * model's machine, then `onStream<Frame>` (`StreamEngine`, stream_engine.ts), reached only
 * through the machines' typed binders (`bindClient`, `bindResponder` ...: tsc checks that
 * the engine has every handler). F-flag sequences pass the `fragments` machine. The state
 * and plumbing both parts share are `EngineCore` (engine_core.ts).
 *
 * Peer violations: a stream-level one ends the stream with the frame its machine allows
 * (ERROR, else CANCEL) and reports StreamAborted; a connection-level one queues
 * ERROR[INVALID_SETUP] (first frame) or ERROR[CONNECTION_ERROR], closes, and throws the
 * RemoteProtocolError from `receiveData` (`dataToSend()` still yields the ERROR).
 */

import type { Bytes } from "./bytes.js";
import {
  ErrorCode,
  ErrorFrame,
  Ext,
  Keepalive,
  Lease,
  MetadataPush,
  Resume,
  ResumeOk,
  Setup,
  type Frame,
} from "@wirestream/generated/rsocket/v1_0";
import {
  ConnectionMachine,
  ConnectionState,
  FragmentsMachine,
  FragmentsState,
  type ConnectionClientHandlers,
  type ConnectionServerHandlers,
} from "@wirestream/generated/rsocket/v1_0/machines";
import {
  DecodeError,
  IGNORE,
  LocalProtocolError,
  RemoteProtocolError,
  type BoundHandlers,
} from "@wirestream/runtime";
import type { Event, InteractionModel } from "./events.js";
import { ResumeNotAllowed, ResumePositionLost, UnsupportedExtension } from "./errors.js";
import { type Request } from "./fragmentation.js";
import { ResumeLog, type ResumableSession } from "./resume.js";
import {
  EMPTY,
  type Limits,
  modelOf,
  movesPosition,
  isMessage,
  type AdoptedState,
  type ConnectionContext,
  dispatch,
  setupInfo,
} from "./engine_core.js";
import { StreamEngine } from "./stream_engine.js";

export { Credit, MAX_N, Stream } from "./engine_core.js";
export type { ClientSetup, EngineOptions, Limits, SetupPolicy } from "./engine_core.js";

const utf8 = new TextEncoder();

/**
 * One RSocket 1.0 connection. A client's `setup` is what its SETUP says; a server's
 * options are `setupPolicy`, `leasing` and `resumeLookup`; `limits` bound what either side
 * sends, accepts, reassembles and keeps for resumption.
 */
export class RSocketEngine
  extends StreamEngine
  implements ConnectionClientHandlers, ConnectionServerHandlers
{
  /** The connection machine's bound handlers, bound at the first stream-0 frame received
   * (an idle client may never get one: a Map of closures less per connection). */
  private boundConnHandlers: BoundHandlers | null = null;

  protected get connHandlers(): BoundHandlers {
    if (this.boundConnHandlers === null) {
      this.boundConnHandlers =
        this.role === "client"
          ? ConnectionMachine.bindClient(this)
          : ConnectionMachine.bindServer(this);
    }
    return this.boundConnHandlers;
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
  sendKeepalive(data: Bytes = EMPTY): void {
    const frame = new Keepalive({ respond: true, lastReceivedPosition: this.position(), data });
    this.conn.send(frame);
    this.emit(frame);
  }

  metadataPush(metadata: Bytes): void {
    const frame = new MetadataPush({ metadata });
    this.conn.send(frame);
    this.emit(frame);
  }

  /** Grant the peer's requester `numberOfRequests` requests for `ttl` ms. */
  sendLease(
    ttl: number,
    numberOfRequests: number,
    metadata: Bytes | null = null,
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
    data: Bytes = EMPTY,
    metadata: Bytes | null = null,
    ignore = true,
    streamId = 0,
  ): void {
    const frame = new Ext({ streamId, extendedType, data, metadata, ignore });
    this.conn.send(frame);
    this.emit(frame);
  }

  /**
   * End the connection at once with ERROR on stream 0 (CONNECTION_ERROR by default).
   * CONNECTION_CLOSE waits for the open streams: with that code this is
   * `closeGracefully` when no stream is open, a LocalProtocolError while one is.
   */
  close(errorCode: number = ErrorCode.CONNECTION_ERROR, message: Bytes = EMPTY): Event[] {
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
  closeGracefully(message: Bytes = EMPTY): Event[] {
    const code = ErrorCode.CONNECTION_CLOSE;
    const frame = new ErrorFrame({ streamId: 0, errorCode: code, data: message });
    this.conn.send(frame); // IllegalSend before SETUP, after close, or if already closing
    this.emit(frame);
    this.closingEvent = { errorCode: code, message, byPeer: false };
    const events: Event[] = [{ type: "ConnectionClosing", ...this.closingEvent }];
    this.finishDrain(events);
    return events;
  }

  // ================================================================ receiving

  /** Feed bytes from the transport (an empty array: EOF); the events they cause. `now`:
   * the caller's clock in milliseconds. */
  receiveData(data: Bytes, now?: number): Event[] {
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
  protected failConnection(error: RemoteProtocolError, events: Event[]): never {
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

  protected handleFrame(frame: Frame, events: Event[]): void {
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
      const discarding = this.discarding?.get(streamId);
      if (discarding !== undefined) {
        if (!isMessage(frame) || discarding.receive(frame) === FragmentsState.WHOLE) {
          this.discarding!.delete(streamId);
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

  protected observe(frame: Frame, events: Event[]): ConnectionState | typeof IGNORE {
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

  protected confirmSetup(events: Event[], at: number): void {
    if (this.role === "client" && this.setupInForce !== null) {
      events.splice(at, 0, { type: "ConnectionEstablished", setup: this.setupInForce });
    }
  }

  protected onConnectionFrame(frame: Frame, events: Event[]): void {
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

  protected onNewStream(frame: Request, model: InteractionModel, events: Event[]): void {
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

  protected onEof(events: Event[]): void {
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

  // ================================================================ resumption

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

  protected adopt(session: ResumableSession): void {
    const state = session.state as AdoptedState;
    this.streams = state.streams;
    for (const stream of this.streams.values()) {
      stream.handlers = this.handlersFor(stream.role, stream.model); // ours from now on
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
  protected answerResume(frame: Resume): ResumableSession | string {
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

  // ================================================================ onConnection<Frame>

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
      const [, events] = context as ConnectionContext;
      events.push({
        type: "ExtReceived",
        streamId: frame.streamId,
        extendedType: frame.extendedType,
        data: frame.data,
        metadata: frame.metadata,
        ignore: frame.ignore,
      });
      return;
    }
    if (frame.ignore) {
      this.ignoredFrames += 1;
      return;
    }
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
}
