/**
 * Stream decoders: a byte stream in, whole frames out (the twins of runtime/_support.py's
 * LengthPrefixedDecoder, SelfDelimitingDecoder and MsgpackDecoder, with the same limits,
 * errors and messages).
 *
 * Chunks are kept as they arrive and joined only once a frame can be complete, so a big
 * frame arriving in many pieces costs linear time. Decoded byte fields are views of the
 * bytes the frame was decoded from: the fed chunk itself when a frame lies within one
 * chunk, else a fresh copy this decoder never writes into again (feeding a chunk hands
 * it over: do not reuse its memory).
 */

import { DecodeError, FrameTooLarge, MalformedMsgpack, ProtocolError, TrailingBytes, Truncated } from "./errors.js";
import { decodeOneMsgpack, NeedMore, streamLimits } from "./msgpack.js";

/** A generated codec's `decodeAt`: one frame in `data[pos:end]` -> [frame, its end]. */
export type DecodeAt<F, C> = (
  data: Uint8Array<ArrayBuffer>,
  pos: number,
  end: number,
  ctx: C | undefined,
  sender: string | undefined,
) => [F, number];

export interface StreamOptions<C> {
  /** The largest frame accepted (without a transport prefix); default: the codec's. */
  maxFrameSize?: number;
  /** The codec's Context, for layouts that depend on earlier frames. */
  ctx?: C;
  /** Who sends the frames this decoder reads, where codes are shared by both senders. */
  sender?: "client" | "server";
}

const EMPTY = /* @__PURE__ */ new Uint8Array(0);

/** What the stream decoders share: limits, context and the chunks not consumed yet. */
abstract class ChunkBuffer<F, C> {
  maxFrameSize: number;
  ctx: C | undefined;
  sender: string | undefined;
  /**
   * Called with each frame and its size on the wire (without a transport prefix) as soon
   * as it is decoded, before the next one is: for layouts that depend on earlier frames
   * (rsio's elementSize in `ctx`) and byte credit (BPMUX).
   */
  afterFrame: ((frame: F, size: number) => void) | null = null;
  protected broken: ProtocolError | null = null;
  private chunks: Uint8Array<ArrayBuffer>[] = [];
  private size = 0;

  constructor(defaultMax: number, options: StreamOptions<C> | undefined) {
    this.maxFrameSize = options?.maxFrameSize ?? defaultMax;
    this.ctx = options?.ctx;
    this.sender = options?.sender;
  }

  /** Bytes held for a frame that has not fully arrived yet. */
  get buffered(): number {
    return this.size;
  }

  /** Add a chunk; returns the number of bytes now held. */
  protected add(chunk: Uint8Array<ArrayBuffer>): number {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    }
    return this.size;
  }

  /** Everything held, as one array (the chunk itself when there is one). */
  protected joined(): Uint8Array<ArrayBuffer> {
    const chunks = this.chunks;
    if (chunks.length === 1) {
      return chunks[0]!;
    }
    if (chunks.length === 0) {
      return EMPTY;
    }
    const data = new Uint8Array(this.size);
    let at = 0;
    for (const chunk of chunks) {
      data.set(chunk, at);
      at += chunk.length;
    }
    this.chunks = [data];
    return data;
  }

  /** Keep `data[pos:]` (the start of a frame still arriving), drop the rest. */
  protected keep(data: Uint8Array<ArrayBuffer>, pos: number): void {
    if (pos >= data.length) {
      this.chunks = [];
      this.size = 0;
    } else {
      this.chunks = [pos === 0 ? data : data.subarray(pos)];
      this.size = data.length - pos;
    }
  }
}

/**
 * Splits a byte stream into frames behind an unsigned big-endian length prefix.
 *
 * The prefix does not count itself (RSocket over TCP: 24 bits; RabbitMQ stream: 32
 * bits). A declared length above `maxFrameSize` fails (FrameTooLarge, and the decoder
 * stays broken) as soon as the prefix is read, before anything of the frame is
 * buffered. A malformed frame is consumed (its length is known), so the caller may
 * report it and go on feeding.
 */
export class LengthPrefixedDecoder<F, C> extends ChunkBuffer<F, C> {
  private readonly decodeAt: DecodeAt<F, C>;
  private readonly prefixSize: number;
  private wanted = 0;

  constructor(
    decodeAt: DecodeAt<F, C>,
    prefixSize: number,
    defaultMax: number,
    options?: StreamOptions<C>,
  ) {
    super(defaultMax, options);
    this.decodeAt = decodeAt;
    this.prefixSize = prefixSize;
  }

  /** Add bytes from the stream; return every frame they complete, in order. */
  feed(chunk: Uint8Array<ArrayBuffer>): F[] {
    if (this.broken !== null) {
      throw this.broken;
    }
    const size = this.add(chunk);
    const frames: F[] = [];
    const prefix = this.prefixSize;
    if (size < prefix || size < this.wanted) {
      // Still inside a frame whose length we know: no join, no decode attempt.
      return frames;
    }
    this.wanted = 0;
    const data = this.joined();
    let pos = 0;
    try {
      while (size - pos >= prefix) {
        let length = 0;
        for (let i = 0; i < prefix; i++) {
          length = length * 256 + data[pos + i]!;
        }
        if (length > this.maxFrameSize) {
          const error = new FrameTooLarge(
            `frame declares ${length} bytes; the limit is ${this.maxFrameSize}`,
          );
          this.broken = error;
          throw error;
        }
        const start = pos + prefix;
        const stop = start + length;
        if (stop > size) {
          this.wanted = stop - pos; // what the buffer must hold once `pos` is cut
          break;
        }
        pos = stop;
        const [frame, used] = this.decodeAt(data, start, stop, this.ctx, this.sender);
        if (used !== stop) {
          throw new TrailingBytes(`${stop - used} bytes after the end of a frame`);
        }
        frames.push(frame);
        if (this.afterFrame !== null) {
          this.afterFrame(frame, length);
        }
      }
    } catch (error) {
      if (error instanceof DecodeError) {
        this.keep(data, pos);
        error.frames = frames;
      } else {
        this.keep(data, 0); // as Python: nothing is cut when something else fails
      }
      throw error;
    }
    this.keep(data, pos);
    return frames;
  }
}

/**
 * Splits a byte stream of self-delimiting frames (Reactive Streams, BPMUX).
 *
 * A frame is decoded from the buffer start; when the input ends inside it the decoder
 * waits for at least the bytes the truncated field declared (`Truncated.needed`), and
 * fails (FrameTooLarge) once a frame needs more than `maxFrameSize` bytes. Any error
 * leaves the stream out of sync, so the decoder stays broken and re-throws it.
 */
export class SelfDelimitingDecoder<F, C> extends ChunkBuffer<F, C> {
  private readonly decodeAt: DecodeAt<F, C>;
  private needed = 0;
  /**
   * A protocol whose first messages have a header of their own (PostgreSQL's startup
   * packet): the codec sets this, and `expectStartup` makes the next frame one.
   */
  protected startupDecodeAt: DecodeAt<F, C> | null = null;
  private startupNext = false;

  constructor(decodeAt: DecodeAt<F, C>, defaultMax: number, options?: StreamOptions<C>) {
    super(defaultMax, options);
    this.decodeAt = decodeAt;
  }

  /**
   * Read the next frame with the startup header (the first message of a connection, or
   * the one after an SSLRequest answered 'N').
   */
  expectStartup(): void {
    if (this.startupDecodeAt === null) {
      throw new TypeError("this protocol has no startup frames");
    }
    this.startupNext = true;
  }

  /** Add bytes from the stream; return every frame they complete, in order. */
  feed(chunk: Uint8Array<ArrayBuffer>): F[] {
    if (this.broken !== null) {
      throw this.broken;
    }
    const size = this.add(chunk);
    const frames: F[] = [];
    if (size < this.needed) {
      return frames;
    }
    const data = this.joined();
    let pos = 0;
    const limit = this.maxFrameSize;
    try {
      let complete = true;
      while (pos < size) {
        let frame: F;
        let stop: number;
        const decodeAt =
          this.startupNext && this.startupDecodeAt !== null ? this.startupDecodeAt : this.decodeAt;
        try {
          [frame, stop] = decodeAt(data, pos, size, this.ctx, this.sender);
        } catch (error) {
          if (!(error instanceof Truncated)) {
            throw error;
          }
          if (error.needed - pos > limit || size - pos > limit) {
            throw new FrameTooLarge(`a frame needs more than the limit of ${limit} bytes`);
          }
          this.needed = Math.max(error.needed - pos, size - pos + 1);
          complete = false;
          break;
        }
        if (stop - pos > limit) {
          throw new FrameTooLarge(`a frame of ${stop - pos} bytes exceeds the limit of ${limit}`);
        }
        frames.push(frame);
        this.startupNext = false;
        if (this.afterFrame !== null) {
          this.afterFrame(frame, stop - pos);
        }
        pos = stop;
      }
      if (complete) {
        this.needed = 0;
      }
    } catch (error) {
      if (error instanceof DecodeError) {
        this.broken = error;
        error.frames = frames;
      }
      this.keep(data, 0); // as Python: the buffer is not cut (a DecodeError breaks it)
      throw error;
    }
    this.keep(data, pos);
    return frames;
  }
}

/**
 * Splits a byte stream of MessagePack-encoded frames (rsio's msgpack encoding): one
 * MessagePack object per frame, handed to the codec's `fromMsgpack`.
 *
 * Python's decoder is a `msgpack.Unpacker(max_buffer_size=max_frame_size)`: an object
 * that cannot fit in `maxFrameSize` bytes is FrameTooLarge (here as soon as a header
 * declares more than fits, or the bytes held exceed the limit); an array or map header declaring more items than that
 * limit (maps: half) is MalformedMsgpack at once, as the Unpacker's max_array_len /
 * max_map_len are; any error leaves the decoder broken.
 */
export class MsgpackDecoder<F, C> extends ChunkBuffer<F, C> {
  private readonly fromMsgpack: (obj: unknown, ctx: C | undefined) => F;
  private wanted = 0;

  constructor(
    fromMsgpack: (obj: unknown, ctx: C | undefined) => F,
    defaultMax: number,
    options?: StreamOptions<C>,
  ) {
    super(defaultMax, options);
    this.fromMsgpack = fromMsgpack;
  }

  /** Add bytes from the stream; return every frame they complete, in order. */
  feed(chunk: Uint8Array<ArrayBuffer>): F[] {
    if (this.broken !== null) {
      throw this.broken;
    }
    const size = this.add(chunk);
    const frames: F[] = [];
    const limit = this.maxFrameSize;
    if (size < this.wanted) {
      if (size > limit) {
        this.fail(new FrameTooLarge(`a MessagePack frame exceeds the limit of ${limit}`), frames);
      }
      return frames;
    }
    this.wanted = 0;
    const data = this.joined();
    const limits = streamLimits(limit);
    let pos = 0;
    try {
      while (pos < size) {
        let obj: unknown;
        let stop: number;
        try {
          [obj, stop] = decodeOneMsgpack(data, pos, size, limits);
        } catch (error) {
          if (!(error instanceof NeedMore)) {
            throw error;
          }
          // Python fails once the Unpacker's buffer is full; a declared length that
          // cannot fit fails here at once (the same error, before the bytes are held).
          if (size - pos > limit || error.needed - pos > limit) {
            throw new FrameTooLarge(`a MessagePack frame exceeds the limit of ${limit}`);
          }
          this.wanted = Math.max(error.needed - pos, size - pos + 1);
          break;
        }
        if (stop - pos > limit) {
          throw new FrameTooLarge(`a MessagePack frame exceeds the limit of ${limit}`);
        }
        let frame: F;
        try {
          frame = this.fromMsgpack(obj, this.ctx);
        } catch (error) {
          if (error instanceof TypeError || error instanceof RangeError) {
            throw new MalformedMsgpack(`not MessagePack: ${error.message}`, [], { cause: error });
          }
          throw error;
        }
        frames.push(frame);
        if (this.afterFrame !== null) {
          this.afterFrame(frame, stop - pos);
        }
        pos = stop;
      }
    } catch (error) {
      if (error instanceof DecodeError) {
        this.fail(error, frames);
      }
      this.keep(data, 0);
      throw error;
    }
    this.keep(data, pos);
    return frames;
  }

  private fail(error: DecodeError, frames: F[]): never {
    this.broken = error;
    error.frames = frames;
    throw error;
  }
}
