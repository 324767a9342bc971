/**
 * The inbound side of a stream as an async iterator whose demand follows consumption
 * (twin of runtime/aio.py's InboundStream): the peer is granted `limitRate` items at
 * first, then as many as were consumed each time half of that is, so at most
 * `limitRate` items are ever buffered. `return()` (a `break` out of `for await`) or the
 * AbortSignal cancels. `batches()` hands the same items out as arrays: each what had
 * arrived when it was asked for (at least one), counted as consumed as it is handed out.
 */

import type { Bytes } from "./bytes.js";
import { StreamCancelled } from "@wirestream/runtime";

import { MAX_N } from "./engine.js";

/** One message of a stream: data and optional metadata. */
export interface RSocketPayload {
  readonly data: Bytes;
  readonly metadata: Bytes | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytes(value: string | Bytes): Bytes {
  return typeof value === "string" ? encoder.encode(value) : value;
}

/** A payload from text or bytes. */
export function payload(
  data: string | Bytes = "",
  metadata: string | Bytes | null = null,
): RSocketPayload {
  return { data: bytes(data), metadata: metadata === null ? null : bytes(metadata) };
}

/** A payload's data as UTF-8 text. */
export function text(p: RSocketPayload): string {
  return decoder.decode(p.data);
}

/** What an Inbound asks of its owner. */
export interface InboundOwner {
  /** Grant the peer `n` more items. */
  request(n: number): void;
  /** The consumer gave up before the end. */
  cancel(): void;
}

export class Inbound implements AsyncIterableIterator<RSocketPayload> {
  private queue: RSocketPayload[] = [];
  private head = 0;
  private done = false;
  private error: Error | null = null;
  private waiter: { resolve: () => void } | null = null;
  private consumed = 0;
  private readonly replenishAt: number;
  owner: InboundOwner | null = null;

  constructor(
    /** Items granted at first and kept outstanding (MAX_N: unbounded). */
    readonly limitRate: number,
    private readonly signal?: AbortSignal,
  ) {
    if (!Number.isInteger(limitRate) || limitRate < 1 || limitRate > MAX_N) {
      throw new RangeError(`limitRate must be 1..${MAX_N}, not ${limitRate}`);
    }
    this.replenishAt = Math.max(1, Math.floor(limitRate / 2));
    signal?.addEventListener("abort", () => this.abort(), { once: true });
  }

  /** Items received and not consumed yet. */
  get buffered(): number {
    return this.queue.length - this.head;
  }

  get finished(): boolean {
    return this.done || this.error !== null;
  }

  push(item: RSocketPayload): void {
    if (this.finished) {
      return;
    }
    this.queue.push(item);
    this.wake();
  }

  complete(): void {
    if (this.finished) {
      return;
    }
    this.done = true;
    this.wake();
  }

  fail(error: Error): void {
    if (this.finished) {
      return;
    }
    this.error = error;
    this.wake();
  }

  next(): Promise<IteratorResult<RSocketPayload, undefined>> {
    // An item already buffered (most are: a read delivers a batch) is handed out without
    // an async function's frame and extra promise; only an empty queue waits.
    if (this.head < this.queue.length) {
      return Promise.resolve({ value: this.take(), done: false });
    }
    return this.wait(() => this.take());
  }

  /**
   * The items as arrays: each array is every item that had arrived and was not handed out
   * when it was asked for (at least one; so at most `limitRate`), counted as consumed as
   * it is handed out, as one item is by `next()`. One `await` per array instead of one
   * per item, for a consumer that can take them so. `break` cancels, as with `next()`.
   */
  batches(): AsyncIterableIterator<readonly RSocketPayload[]> {
    const batches: AsyncIterableIterator<readonly RSocketPayload[]> = {
      next: () => {
        if (this.head < this.queue.length) {
          return Promise.resolve({ value: this.takeAll(), done: false });
        }
        return this.wait(() => this.takeAll());
      },
      return: () => this.return().then(() => ({ value: undefined, done: true as const })),
      [Symbol.asyncIterator]: () => batches,
    };
    return batches;
  }

  private async wait<T>(take: () => T): Promise<IteratorResult<T, undefined>> {
    for (;;) {
      if (this.head < this.queue.length) {
        return { value: take(), done: false };
      }
      if (this.error !== null) {
        throw this.error;
      }
      if (this.done) {
        return { value: undefined, done: true };
      }
      await new Promise<void>((resolve) => {
        this.waiter = { resolve };
      });
    }
  }

  /** Every buffered item (the queue itself when none was taken from it: no copy). */
  private takeAll(): RSocketPayload[] {
    const items = this.head === 0 ? this.queue : this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    this.consumedMany(items.length);
    return items;
  }

  private take(): RSocketPayload {
    const item = this.queue[this.head]!;
    this.queue[this.head] = undefined as unknown as RSocketPayload;
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.consumedMany(1);
    return item;
  }

  async return(): Promise<IteratorResult<RSocketPayload, undefined>> {
    if (!this.finished) {
      this.done = true;
      this.owner?.cancel();
    }
    this.queue.length = 0;
    this.head = 0;
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private consumedMany(count: number): void {
    if (this.limitRate === MAX_N || this.finished) {
      return;
    }
    this.consumed += count;
    if (this.consumed >= this.replenishAt) {
      const n = this.consumed;
      this.consumed = 0;
      this.owner?.request(n);
    }
  }

  private abort(): void {
    if (this.finished) {
      return;
    }
    const reason: unknown = this.signal?.reason;
    this.error = reason instanceof Error ? reason : new StreamCancelled("the stream was aborted");
    this.queue.length = 0; // what arrived is not handed out after an abort
    this.head = 0;
    this.owner?.cancel();
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter !== null) {
      this.waiter = null;
      waiter.resolve();
    }
  }
}
