// Types for the part of rsocket-core 0.0.27 (rsocket-js, written in Flow, ships no .d.ts)
// that the identity test and the codec bench use: its frame codec
// (build/RSocketBinaryFraming.js), the frame-type and flag numbers (build/RSocketFrame.js)
// and the Buffer encoders (build/RSocketEncoding.js). Field names and meanings are those
// of rsocket-types' frame objects; only what we read or write is declared.

declare module "rsocket-core" {
  /** One rsocket-js frame object: `type` selects which of the optional fields it uses. */
  export interface Frame {
    type: number;
    streamId: number;
    /** The 10 flag bits; rsocket-js writes them as given (it derives none itself). */
    flags: number;
    /** Set by deserializeFrame: the frame's size in bytes. */
    length?: number;
    data?: Buffer | null;
    metadata?: Buffer | null;
    // SETUP, RESUME
    majorVersion?: number;
    minorVersion?: number;
    resumeToken?: Buffer | null;
    // SETUP
    keepAlive?: number;
    lifetime?: number;
    metadataMimeType?: string | null;
    dataMimeType?: string | null;
    // LEASE
    ttl?: number;
    requestCount?: number;
    // KEEPALIVE (a JS number: exact up to 2^53 only)
    lastReceivedPosition?: number;
    // REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N
    requestN?: number;
    // ERROR: the data as UTF-8 text, even with BufferEncoders
    code?: number;
    message?: string;
    // RESUME, RESUME_OK
    serverPosition?: number;
    clientPosition?: number;
  }

  export interface Encoders {
    readonly data: unknown;
    readonly metadata: unknown;
  }

  /** data, metadata and resume token as Buffers; MIME types and ERROR messages as UTF-8. */
  export const BufferEncoders: Encoders;
  export const Utf8Encoders: Encoders;

  export const FRAME_TYPES: {
    readonly CANCEL: number;
    readonly ERROR: number;
    readonly EXT: number;
    readonly KEEPALIVE: number;
    readonly LEASE: number;
    readonly METADATA_PUSH: number;
    readonly PAYLOAD: number;
    readonly REQUEST_CHANNEL: number;
    readonly REQUEST_FNF: number;
    readonly REQUEST_N: number;
    readonly REQUEST_RESPONSE: number;
    readonly REQUEST_STREAM: number;
    readonly RESERVED: number;
    readonly RESUME: number;
    readonly RESUME_OK: number;
    readonly SETUP: number;
  };

  export const FLAGS: {
    readonly COMPLETE: number;
    readonly FOLLOWS: number;
    readonly IGNORE: number;
    readonly LEASE: number;
    readonly METADATA: number;
    readonly NEXT: number;
    readonly RESPOND: number;
    readonly RESUME_ENABLE: number;
  };

  export const ERROR_CODES: { readonly [name: string]: number };

  export function serializeFrame(frame: Frame, encoders?: Encoders): Buffer;
  export function deserializeFrame(buffer: Buffer, encoders?: Encoders): Frame;
  export function serializeFrameWithLength(frame: Frame, encoders?: Encoders): Buffer;
  export function deserializeFrames(buffer: Buffer, encoders?: Encoders): [Frame[], Buffer];
}
