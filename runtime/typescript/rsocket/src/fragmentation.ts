/**
 * Splitting a message into frames of at most `mtu` bytes and joining them back (twin of
 * runtime/rsocket/fragmentation.py). Protocol.md, Fragmentation And Reassembly: "When a
 * PAYLOAD is fragmented, the Metadata MUST be transmitted completely before the Data."
 * The F-flag sequence rules are the generated `fragments` machine's.
 */

import type { Bytes } from "./bytes.js";
import {
  Payload,
  RequestChannel,
  RequestFnf,
  RequestResponse,
  RequestStream,
} from "@wirestream/generated/rsocket/v1_0";

import { FragmentOrderViolated, ReassemblyLimitExceeded } from "./errors.js";

export const METADATA_LENGTH_SIZE = 3;
export const MIN_MTU = 64;
const HEADER_SIZE = 6;

export type Request = RequestResponse | RequestFnf | RequestStream | RequestChannel;
/** A frame that carries a message (and so may be fragmented). */
export type Message = Request | Payload;

type Piece = [Bytes | null, Bytes];

/** Cut (metadata, data) into per-frame pieces, metadata first. */
export function split(
  metadata: Bytes | null,
  data: Bytes,
  firstOverhead: number,
  nextOverhead: number,
  mtu: number,
): Piece[] {
  const pieces: Piece[] = [];
  let mdLeft = metadata;
  let dataLeft = data;
  let overhead = firstOverhead;
  for (;;) {
    let room = mtu - overhead;
    let pieceMd: Bytes | null = null;
    if (mdLeft !== null) {
      room -= METADATA_LENGTH_SIZE;
      pieceMd = mdLeft.subarray(0, room);
      mdLeft = mdLeft.subarray(pieceMd.length);
      room -= pieceMd.length;
      if (mdLeft.length === 0) {
        mdLeft = null;
      }
    }
    let pieceData: Bytes = new Uint8Array(0);
    if (mdLeft === null && room > 0) {
      pieceData = dataLeft.subarray(0, room);
      dataLeft = dataLeft.subarray(pieceData.length);
    }
    pieces.push([pieceMd, pieceData]);
    if (mdLeft === null && dataLeft.length === 0) {
      return pieces;
    }
    overhead = nextOverhead;
  }
}

function bodySize(frame: Message): number {
  const md = frame.metadata;
  return frame.data.length + (md !== null ? md.length + METADATA_LENGTH_SIZE : 0);
}

/**
 * The frames that carry `frame` within `mtu` bytes each, F on all but the last (1.0: the
 * first frame keeps its type, the rest are PAYLOADs); null when it fits in one frame.
 */
export function fragment(frame: Message, mtu: number): Message[] | null {
  const encodedSize = frame.toBytes().length;
  if (encodedSize <= mtu) {
    return null;
  }
  const pieces = split(frame.metadata, frame.data, encodedSize - bodySize(frame), HEADER_SIZE, mtu);
  const complete = "complete" in frame ? frame.complete : false;
  const isRequest = !(frame instanceof Payload);
  const last = pieces.length - 1;
  return pieces.map(([metadata, data], index): Message => {
    const follows = index !== last;
    if (index === 0) {
      const first = copyOf(frame);
      first.metadata = metadata;
      first.data = data;
      first.follows = follows;
      if ("complete" in first) {
        first.complete = complete && !follows;
      }
      return first;
    }
    // "followed by a sequence of PAYLOAD frames"; N on every fragment of a request, C
    // only on the last (IDL M3).
    return new Payload({
      streamId: frame.streamId,
      next: isRequest ? true : (frame as Payload).next,
      complete: complete && !follows,
      follows,
      metadata,
      data,
    });
  });
}

function copyOf<F extends Message>(frame: F): F {
  return Object.assign(Object.create(Object.getPrototypeOf(frame) as object) as F, frame);
}

/** The fragments of one message received so far, bounded by `limit` bytes. */
export class Reassembly {
  size = 0;
  private readonly metadata: Bytes[] = [];
  private readonly data: Bytes[] = [];
  private hasMetadata = false;
  private hasData = false;

  constructor(
    readonly limit: number,
    readonly first: Message,
  ) {}

  add(metadata: Bytes | null, data: Bytes): void {
    this.size += data.length + (metadata !== null ? metadata.length : 0);
    if (this.size > this.limit) {
      throw new ReassemblyLimitExceeded(
        `a fragmented message exceeds the reassembly limit of ${this.limit} bytes`,
      );
    }
    if (metadata !== null) {
      if (this.hasData) {
        throw new FragmentOrderViolated(
          "metadata after data: 'the Metadata MUST be transmitted completely before the Data'",
        );
      }
      this.hasMetadata = true;
      this.metadata.push(metadata);
    }
    if (data.length > 0) {
      this.hasData = true;
      this.data.push(data);
    }
  }

  /** The message once `last` (already added) ended it. */
  whole(last: Message): Message {
    const whole = this.first;
    whole.metadata = this.hasMetadata ? concat(this.metadata) : null;
    whole.data = concat(this.data);
    whole.follows = false;
    if ("complete" in whole && "complete" in last) {
      whole.complete = last.complete;
    }
    if (whole instanceof Payload && last instanceof Payload) {
      whole.next = whole.next || last.next;
    }
    return whole;
  }
}

export function concat(parts: readonly Bytes[]): Bytes {
  if (parts.length === 1) {
    return parts[0]!;
  }
  let size = 0;
  for (const part of parts) {
    size += part.length;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
