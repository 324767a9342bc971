/**
 * Implied positions and the retransmit buffer of a resumable session (twin of
 * runtime/rsocket/resume.py). Protocol.md, Resuming Operation, Implied Position: "The
 * positions are calculated based on the length of encoded frames without the frame length
 * field after any fragmentation is applied"; KEEPALIVE carries the receiver's position,
 * "used to update state for possible retransmission, such as trimming a retransmit buffer".
 */

import type { Bytes } from "./bytes.js";
import type { SetupInfo } from "./events.js";

/**
 * Sent and received positions, plus the sent frames the peer is not known to have. The
 * buffer holds at most `limit` bytes; beyond it the oldest frames are dropped (the first
 * available position moves on, and a peer that missed them can no longer resume).
 */
export class ResumeLog {
  sentPosition = 0;
  receivedPosition = 0;
  /** [start position, wire bytes with the length prefix], oldest first. */
  private frames: [number, Bytes][] = [];
  private head = 0;
  private buffered = 0;

  constructor(readonly limit: number) {}

  /** The earliest position we can still retransmit from. */
  get firstAvailable(): number {
    return this.head < this.frames.length ? this.frames[this.head]![0] : this.sentPosition;
  }

  /** Bytes held for retransmission. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /** Record a tracked frame we sent (`wire` with its 3-byte length prefix). */
  sent(wire: Bytes): void {
    this.frames.push([this.sentPosition, wire]);
    this.sentPosition += wire.length - 3;
    this.buffered += wire.length;
    while (this.buffered > this.limit && this.head < this.frames.length) {
      this.drop();
    }
    this.compact();
  }

  received(length: number): void {
    this.receivedPosition += length;
  }

  /** Forget frames the peer says it received (they end at or before `peerPosition`). */
  trim(peerPosition: number): void {
    while (this.head < this.frames.length) {
      const [start, wire] = this.frames[this.head]!;
      if (start + wire.length - 3 > peerPosition) break;
      this.drop();
    }
    this.compact();
  }

  /** The frames to send again so the peer continues at `peerPosition`; null when that is
   * not a position we can resume from. */
  replayFrom(peerPosition: number): Bytes[] | null {
    if (peerPosition < this.firstAvailable || peerPosition > this.sentPosition) {
      return null;
    }
    this.trim(peerPosition);
    return this.frames.slice(this.head).map(([, wire]) => wire);
  }

  private drop(): void {
    this.buffered -= this.frames[this.head]![1].length;
    this.head += 1;
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.frames.length) {
      this.frames = this.frames.slice(this.head);
      this.head = 0;
    }
  }
}

/** What survives a lost transport when resumption was negotiated. */
export interface ResumableSession {
  readonly token: Bytes;
  readonly setup: SetupInfo;
  readonly log: ResumeLog;
  /** The engine state a new engine adopts (streams, ids). */
  readonly state: unknown;
}
