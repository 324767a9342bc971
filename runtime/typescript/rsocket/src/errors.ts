/**
 * RSocket's errors: the leaves that runtime/rsocket/errors.py adds to the one ProtocolError
 * tree, with the same names. State-machine refusals are the runtime's IllegalSend /
 * UnexpectedFrame, request-n violations its DemandExceeded / InvalidGrant /
 * PeerExceededDemand, transport ends its ConnectionLost and timeouts.
 */

import {
  LocalProtocolError,
  ReassemblyLimitExceeded,
  RemoteProtocolError,
  StreamError as BaseStreamError,
} from "@wirestream/runtime";

export { ReassemblyLimitExceeded };

/** The requester holds no valid LEASE ("MUST NOT send more than Number of Requests"). */
export class NoLease extends LocalProtocolError {
  override name = "NoLease";
}

/** A new request while the connection closes gracefully (ERROR[CONNECTION_CLOSE]). */
export class NoNewRequests extends LocalProtocolError {
  override name = "NoNewRequests";
}

/** An EXT frame of an extended type we do not understand, with the I flag clear. */
export class UnsupportedExtension extends RemoteProtocolError {
  override name = "UnsupportedExtension";
}

/** Every stream id of our parity is spent: "a new connection MUST be established". */
export class StreamIdsExhausted extends LocalProtocolError {
  override name = "StreamIdsExhausted";
}

/** A command names a stream that is not open (never opened, or terminated). */
export class UnknownStream extends LocalProtocolError {
  override name = "UnknownStream";
}

/** The session cannot be resumed (not negotiated, or the server said never to retry). */
export class ResumeNotAllowed extends LocalProtocolError {
  override name = "ResumeNotAllowed";
}

/** Metadata arrived after data had started in a fragmented message. */
export class FragmentOrderViolated extends RemoteProtocolError {
  override name = "FragmentOrderViolated";
}

/** RESUME_OK names a position this side no longer retains. */
export class ResumePositionLost extends RemoteProtocolError {
  override name = "ResumePositionLost";
}

/**
 * The peer ended a stream with ERROR `errorCode` (APPLICATION_ERROR, REJECTED, CANCELED,
 * INVALID ...), or the engine ended it because the peer broke a stream rule. `message`
 * is the peer's message.
 */
export class StreamError extends BaseStreamError {
  override name = "StreamError";
  readonly errorCode: number;

  constructor(errorCode: number, message: string) {
    super(message);
    this.errorCode = errorCode;
  }
}

/**
 * ERROR[APPLICATION_ERROR]: the peer's handler failed. Throw it in a handler to send one
 * with your message (any other exception is sent as one with its message).
 */
export class ApplicationError extends StreamError {
  override name = "ApplicationError";

  constructor(message: string, errorCode = 0x201) {
    super(errorCode, message);
  }
}

/** The server rejected our SETUP or RESUME (INVALID_SETUP, UNSUPPORTED_SETUP, ...). */
export class SetupRejected extends RemoteProtocolError {
  override name = "SetupRejected";
  readonly errorCode: number;

  constructor(errorCode: number, message: string) {
    super(message);
    this.errorCode = errorCode;
  }
}
