/**
 * The one exception tree of wirestream, TypeScript side: the twin of
 * runtime/errors.py, class for class and with the same names, so that code (and tests)
 * written against one language reads the same in the other (`err.name` is the Python
 * class name).
 *
 * Every error that bytes from a peer, a bad local call or a broken protocol rule can
 * cause is a `ProtocolError`. As in h11, `LocalProtocolError` means *we* broke a rule (or
 * were asked to encode something unencodable) and `RemoteProtocolError` means the peer
 * did (malformed bytes, illegal sequences).
 *
 * TypeScript classes have one parent. Where Python's class has two bases, the TS class
 * extends the ProtocolError-side one that is not a private mixin (`EncodeError` drops
 * Python's `ValueError`; `IllegalSend` extends `LocalProtocolError` and
 * `UnexpectedFrame` `RemoteProtocolError`, both carrying the fields of Python's
 * `_MachineRefusal`; the flow-control errors extend their Local/Remote side and are
 * still `instanceof FlowControlError`, see there).
 */

/** Base of every wirestream protocol error. */
export class ProtocolError extends Error {
  override name = "ProtocolError";
  /**
   * When an engine's `receiveData` throws: the events of the frames it handled before
   * the violation, which the caller still delivers ("nothing is lost").
   */
  events: readonly unknown[] = [];

  constructor(message = "", options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** We broke a protocol rule, or asked for something the protocol cannot carry. */
export class LocalProtocolError extends ProtocolError {
  override name = "LocalProtocolError";
}

/** The peer broke a protocol rule: malformed bytes or an illegal sequence. */
export class RemoteProtocolError extends ProtocolError {
  override name = "RemoteProtocolError";
}

/** A frame cannot be encoded: a value is out of range, too long, or inconsistent. */
export class EncodeError extends LocalProtocolError {
  override name = "EncodeError";
}

/**
 * Bytes that are not a valid frame.
 *
 * `frames` holds the frames a stream decoder had decoded in the same `feed` call before
 * the bad one, so that nothing already received is lost.
 */
export class DecodeError extends RemoteProtocolError {
  override name = "DecodeError";
  frames: unknown[];

  constructor(message = "", frames?: unknown[], options?: { cause?: unknown }) {
    super(message, options);
    this.frames = frames ?? [];
  }
}

/**
 * The input ends before the frame (or a field of it) does.
 *
 * `needed` is the offset the input would have to reach, when known (0 otherwise).
 */
export class Truncated extends DecodeError {
  override name = "Truncated";
  readonly needed: number;

  constructor(message = "", needed = 0) {
    super(message);
    this.needed = needed;
  }
}

/** Bytes remain after exactly one frame was decoded. */
export class TrailingBytes extends DecodeError {
  override name = "TrailingBytes";
}

/** A declared length exceeds the configured maximum frame size. */
export class FrameTooLarge extends DecodeError {
  override name = "FrameTooLarge";
}

/** A frame type code that this protocol version does not define (and may not skip). */
export class UnknownFrameType extends DecodeError {
  override name = "UnknownFrameType";
}

/** A code shared by frames of both senders, decoded without saying who sent it. */
export class AmbiguousFrameType extends DecodeError {
  override name = "AmbiguousFrameType";
}

/** A field holds a value the protocol forbids (constraint, enum, const, length). */
export class InvalidValue extends DecodeError {
  override name = "InvalidValue";
}

/** A string field is not valid UTF-8. */
export class InvalidString extends InvalidValue {
  override name = "InvalidString";
}

/** A variable-length integer is not in its one valid (shortest) encoding. */
export class NonCanonical extends InvalidValue {
  override name = "NonCanonical";
}

/**
 * The values of a frame break a rule of its protocol (an IDL `rules:` entry: this frame's
 * stream id must be 0, a will QoS needs the will flag...); the message quotes the rule and
 * its spec.
 */
export class RuleViolation extends InvalidValue {
  override name = "RuleViolation";
}

/** Bytes that are not the MessagePack form of a frame. */
export class MalformedMsgpack extends DecodeError {
  override name = "MalformedMsgpack";
}

// --- state machines (machine.ts) ------------------------------------------------------

/**
 * Where a state machine refused an event: `machine`, `role`, `state`, `frame` and, when
 * the IDL row that refuses it cites one, `spec` (Python's `_MachineRefusal` fields).
 */
export interface MachineRefusal {
  readonly machine: string;
  readonly role: string;
  readonly state: string;
  readonly frame: string;
  readonly spec: string;
}

export type MachineRefusalFields = Partial<MachineRefusal>;

/** Sending this frame now breaks the protocol's state machine (we are at fault). */
export class IllegalSend extends LocalProtocolError implements MachineRefusal {
  override name = "IllegalSend";
  readonly machine: string;
  readonly role: string;
  readonly state: string;
  readonly frame: string;
  readonly spec: string;

  constructor(message = "", fields: MachineRefusalFields = {}) {
    super(message);
    this.machine = fields.machine ?? "";
    this.role = fields.role ?? "";
    this.state = fields.state ?? "";
    this.frame = fields.frame ?? "";
    this.spec = fields.spec ?? "";
  }
}

/** The peer sent a frame its state does not allow (and the spec does not say ignore). */
export class UnexpectedFrame extends RemoteProtocolError implements MachineRefusal {
  override name = "UnexpectedFrame";
  readonly machine: string;
  readonly role: string;
  readonly state: string;
  readonly frame: string;
  readonly spec: string;

  constructor(message = "", fields: MachineRefusalFields = {}) {
    super(message);
    this.machine = fields.machine ?? "";
    this.role = fields.role ?? "";
    this.state = fields.state ?? "";
    this.frame = fields.frame ?? "";
    this.spec = fields.spec ?? "";
  }
}

// --- flow control ---------------------------------------------------------------------

/**
 * Base of the demand/credit errors (both sides). In Python each of them is also a
 * Local/RemoteProtocolError (two bases); here they extend that side, and `instanceof
 * FlowControlError` is still true for them (`Symbol.hasInstance` below), so both
 * `catch` tests read as in Python.
 */
export class FlowControlError extends ProtocolError {
  override name = "FlowControlError";

  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) {
      return true;
    }
    return (
      this === FlowControlError &&
      (value instanceof DemandExceeded ||
        value instanceof InvalidGrant ||
        value instanceof PeerExceededDemand ||
        value instanceof PeerInvalidGrant)
    );
  }
}

/** We tried to send more items (or bytes) than the peer granted. */
export class DemandExceeded extends LocalProtocolError {
  override name = "DemandExceeded";
}

/** We tried to grant a non-positive or out-of-range amount (RS 3.9, RSocket request-n). */
export class InvalidGrant extends LocalProtocolError {
  override name = "InvalidGrant";
}

/** The peer sent more items (or bytes) than we granted. */
export class PeerExceededDemand extends RemoteProtocolError {
  override name = "PeerExceededDemand";
}

/** The peer granted a non-positive or out-of-range amount. */
export class PeerInvalidGrant extends RemoteProtocolError {
  override name = "PeerInvalidGrant";
}

// --- streams --------------------------------------------------------------------------

/**
 * The stream was cancelled (RSocket CANCEL, Reactive Streams cancel, BPMUX InnerCancel,
 * or we cancelled what we were waiting for). No rule is broken: neither Local nor Remote.
 */
export class StreamCancelled extends ProtocolError {
  override name = "StreamCancelled";
}

/**
 * The peer ended a stream with an error (RSocket ERROR; Reactive Streams onError), or the
 * engine ended it because the peer broke a stream rule. `message` is the peer's message.
 */
export class StreamError extends RemoteProtocolError {
  override name = "StreamError";
}

/** A message the peer sent in parts grew beyond the configured limit. */
export class ReassemblyLimitExceeded extends RemoteProtocolError {
  override name = "ReassemblyLimitExceeded";
}

// --- transport ------------------------------------------------------------------------

/** The transport under a connection failed or ended. */
export class TransportError extends ProtocolError {
  override name = "TransportError";
}

/** The transport ended: EOF (`reason` "eof"), reset, or closed by us while streams were open. */
export class ConnectionLost extends TransportError {
  override name = "ConnectionLost";
  readonly reason: string;

  constructor(message = "connection lost", reason = "eof") {
    super(message);
    this.reason = reason;
  }
}

/** Connecting, or a peer's response, took longer than the configured timeout. */
export class TransportTimeout extends TransportError {
  override name = "TransportTimeout";
}

/** The peer's first whole frame (or the broker's handshake) did not arrive within `limit`
 * seconds (Python: `ConnectionLimits.handshake_timeout`). */
export class HandshakeTimeout extends TransportTimeout {
  override name = "HandshakeTimeout";
  readonly limit: number | null;

  constructor(message: string, limit: number | null = null) {
    super(message);
    this.limit = limit;
  }
}

/** No whole frame arrived from the peer for `limit` seconds (bytes of an unfinished
 * frame do not count). */
export class IdleTimeout extends TransportTimeout {
  override name = "IdleTimeout";
  readonly limit: number | null;

  constructor(message: string, limit: number | null = null) {
    super(message);
    this.limit = limit;
  }
}

/** The peer began a frame and did not finish it within `limit` seconds (a trickler). */
export class FrameTimeout extends IdleTimeout {
  override name = "FrameTimeout";
}
