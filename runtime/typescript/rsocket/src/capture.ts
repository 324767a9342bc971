/**
 * Frame capture for Node (twin of runtime/capture/writer.py and tap.py): every RSocket frame
 * a connection carries, both ways, appended to rotating capture files in wirestream's
 * capture format, version 1 (runtime/capture/format.py has the layout), which
 * `wirestream capture decode|stats`, the Spark capture source and the Wireshark dissector
 * read.
 *
 * ```ts
 * import { CaptureWriter, connect, serve } from "@wirestream/rsocket/node";
 * const capture = new CaptureWriter("caps/rsocket.wscap");   // caps/rsocket.000000.wscap ...
 * const rs = await connect(url, { capture });                  // or serve(url, h, { capture })
 * ...
 * capture.close();
 * ```
 *
 * Files: `<stem>.<n><suffix>`, n in six or more digits, a new file when the next record
 * would take the current one past `maxFileBytes`; a writer never appends to an existing
 * file (a previous run's may end in a torn record) and starts after the highest n present;
 * with `maxFiles`, the oldest files of the name beyond the newest `maxFiles` are deleted.
 * Records are buffered (`bufferBytes`) and written with a plain synchronous write into the
 * page cache -- tens of microseconds per 64 KiB, which the event loop can afford -- on
 * `flush()` and on `close()`; a crash loses at most the buffer and leaves at worst a torn
 * final record, which readers tolerate.
 */

import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";

import { EncodeError } from "@wirestream/runtime";

import type { Bytes } from "./bytes.js";
import type { Transport, TransportSink } from "./transport.js";

/** "WSCAP\r\n\x1a": the CR LF and ^Z show a file mangled by a text-mode copy. */
export const CAPTURE_MAGIC = Uint8Array.of(0x57, 0x53, 0x43, 0x41, 0x50, 0x0d, 0x0a, 0x1a);
export const CAPTURE_FORMAT_VERSION = 1;
/** 64 MiB: the largest frame a record holds (and a reader allocates for one record). */
export const MAX_CAPTURE_FRAME_LENGTH = 1 << 26;
export const RECORD_HEADER_SIZE = 33;
/** 256 MiB per file: a couple of Spark partitions' worth, small enough to move around. */
export const DEFAULT_MAX_FILE_BYTES = 256 * 1024 * 1024;
const DEFAULT_BUFFER_BYTES = 64 * 1024;
/** The protocol names this runtime's connections record (the Python registry's). */
const PROTOCOL = "rsocket/1.0";
const LENGTH_PREFIX_SIZE = 3;
const FLAG_OUT = 0x01;
const FLAG_SERVER = 0x02;

export type Direction = "in" | "out";
export type Side = "client" | "server";

export interface CaptureOptions {
  /** The protocol every file's header names; this runtime speaks "rsocket/1.0". */
  protocol?: string;
  /** Rotate before a file would exceed this many bytes; null: one file, never rotated. */
  maxFileBytes?: number | null;
  /** Keep only the newest this many files of the name; null: keep every file. */
  maxFiles?: number | null;
  /** Bytes buffered before a write to the file. */
  bufferBytes?: number;
  /** Nanoseconds since the Unix epoch (UTC). */
  clock?: () => bigint;
}

/** CRC-32, the IEEE/zlib polynomial the format names (zlib.crc32: Node >= 20.15). */
function crc32(data: Uint8Array): number {
  return zlib.crc32(data) >>> 0;
}

/** Nanoseconds since the epoch: the wall clock once, then the monotonic clock's progress
 * (Date.now() alone has millisecond steps; a float of nanoseconds loses the last ones). */
function epochClock(): () => bigint {
  const base = BigInt(Date.now()) * 1_000_000n;
  const start = process.hrtime.bigint();
  return () => base + (process.hrtime.bigint() - start);
}

function family(file: string): [string, string, string] {
  const folder = path.dirname(file);
  const suffix = path.extname(file);
  const stem = path.basename(file, suffix);
  return [folder, stem, suffix];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The files a `CaptureWriter(file)` wrote (and earlier ones of that name), oldest first. */
export function captureFiles(file: string): string[] {
  const [folder, stem, suffix] = family(file);
  const pattern = new RegExp(`^${escapeRegExp(stem)}\\.(\\d{6,})${escapeRegExp(suffix)}$`);
  let names: string[];
  try {
    names = fs.readdirSync(folder);
  } catch {
    return [];
  }
  return names
    .map((name) => [pattern.exec(name), name] as const)
    .filter((entry): entry is [RegExpExecArray, string] => entry[0] !== null)
    .sort((a, b) => Number(a[0][1]) - Number(b[0][1]))
    .map(([, name]) => path.join(folder, name));
}

/** A file's header: magic, version, sync marker, the protocol's name, their CRC-32. */
export function encodeFileHeader(protocol: string, sync: Uint8Array): Bytes {
  if (!/^[\x00-\x7f]{1,255}$/.test(protocol)) {
    throw new EncodeError(
      `protocol name ${JSON.stringify(protocol)} must be 1 to 255 ASCII characters`,
    );
  }
  const head = new Uint8Array(15 + protocol.length + 4);
  const view = new DataView(head.buffer);
  head.set(CAPTURE_MAGIC, 0);
  view.setUint16(8, CAPTURE_FORMAT_VERSION);
  head.set(sync, 10);
  head[14] = protocol.length;
  for (let i = 0; i < protocol.length; i++) head[15 + i] = protocol.charCodeAt(i);
  view.setUint32(15 + protocol.length, crc32(head.subarray(0, 15 + protocol.length)));
  return head;
}

/** One record's header (the frame follows it): sync, length, time, connection, flags,
 * the frame's CRC-32, then the CRC-32 of bytes 4..29. */
export function encodeRecordHeader(
  sync: Uint8Array,
  timestampNs: bigint,
  connectionId: bigint,
  direction: Direction,
  side: Side,
  frame: Uint8Array,
): Bytes {
  const out = new Uint8Array(RECORD_HEADER_SIZE);
  const view = new DataView(out.buffer);
  out.set(sync, 0);
  view.setUint32(4, frame.length);
  view.setBigUint64(8, timestampNs);
  view.setBigUint64(16, connectionId);
  out[24] = (direction === "out" ? FLAG_OUT : 0) | (side === "server" ? FLAG_SERVER : 0);
  view.setUint32(25, crc32(frame));
  view.setUint32(29, crc32(out.subarray(4, 29)));
  return out;
}

/** Appends frames of one protocol to rotating capture files (the module's comment). Not
 * shared between threads; one writer may serve every connection of a process. */
export class CaptureWriter {
  readonly protocol: string;
  readonly basePath: string;
  readonly maxFileBytes: number | null;
  readonly maxFiles: number | null;
  readonly bufferBytes: number;
  /** Records written by this writer (all files). */
  records = 0;
  /** The file being written. */
  path = "";
  /** The files this writer created, oldest first (some may be deleted by now). */
  readonly files: string[] = [];
  private readonly clock: () => bigint;
  /** 31 random bits: ids stay below 2^63, a signed 64-bit column (Spark's long). */
  private readonly writerId = BigInt(crypto.randomBytes(4).readUInt32BE(0) >>> 1);
  private connections = 0;
  /** Records not written yet: copied in as they are recorded (a frame's memory may be
   * reused by its owner once `record` returns: a read buffer, an encoder's pool). */
  private buffer = Buffer.alloc(0);
  private buffered = 0;
  private fd: number | null = null;
  private fileSize = 0;
  private fileRecords = 0;
  private sync: Uint8Array = new Uint8Array(4);
  private nextNumber: number;

  constructor(file: string, options: CaptureOptions = {}) {
    this.protocol = options.protocol ?? PROTOCOL;
    if (this.protocol !== PROTOCOL) {
      throw new Error(`this runtime records ${PROTOCOL}, not ${JSON.stringify(this.protocol)}`);
    }
    const maxFileBytes =
      options.maxFileBytes === undefined ? DEFAULT_MAX_FILE_BYTES : options.maxFileBytes;
    if (maxFileBytes !== null && !(maxFileBytes >= 1)) {
      throw new RangeError(`maxFileBytes must be positive, not ${maxFileBytes}`);
    }
    const maxFiles = options.maxFiles ?? null;
    if (maxFiles !== null && !(Number.isInteger(maxFiles) && maxFiles >= 1)) {
      throw new RangeError(`maxFiles must be at least 1, not ${maxFiles}`);
    }
    if (typeof zlib.crc32 !== "function") {
      throw new Error("frame capture needs zlib.crc32 (Node >= 20.15)");
    }
    this.basePath = file;
    this.maxFileBytes = maxFileBytes;
    this.maxFiles = maxFiles;
    this.bufferBytes = options.bufferBytes ?? DEFAULT_BUFFER_BYTES;
    this.clock = options.clock ?? epochClock();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const existing = captureFiles(file);
    this.nextNumber = existing.length > 0 ? this.numberOf(existing[existing.length - 1]!) + 1 : 0;
    this.openNext();
  }

  private numberOf(file: string): number {
    const [, stem, suffix] = family(this.basePath);
    const name = path.basename(file);
    return Number(name.slice(stem.length + 1, name.length - suffix.length));
  }

  private openNext(): void {
    const [folder, stem, suffix] = family(this.basePath);
    const file = path.join(folder, `${stem}.${String(this.nextNumber).padStart(6, "0")}${suffix}`);
    this.nextNumber += 1;
    this.sync = crypto.randomBytes(4);
    const header = encodeFileHeader(this.protocol, this.sync);
    // "wx": never overwrite a file, even one created between listing and opening
    this.fd = fs.openSync(file, "wx");
    fs.writeSync(this.fd, header);
    this.fileSize = header.length;
    this.fileRecords = 0;
    this.path = file;
    this.files.push(file);
    if (this.maxFiles !== null) {
      const all = captureFiles(this.basePath);
      for (const old of all.slice(0, Math.max(0, all.length - this.maxFiles))) {
        fs.rmSync(old, { force: true });
      }
    }
  }

  private writeAll(data: Uint8Array): void {
    let at = 0;
    while (at < data.length) at += fs.writeSync(this.fd!, data, at);
  }

  private writeBuffer(): void {
    if (this.fd === null || this.buffered === 0) return;
    this.writeAll(this.buffer.subarray(0, this.buffered));
    this.buffered = 0;
  }

  /** A fresh id for one connection: (writer id << 32) | n, n counting from 1. */
  newConnectionId(): bigint {
    this.connections += 1;
    return (this.writerId << 32n) | BigInt(this.connections >>> 0);
  }

  /** Append one frame (without its transport length prefix) that `side` of connection
   * `connectionId` saw going `direction`. */
  record(
    connectionId: bigint,
    direction: Direction,
    frame: Uint8Array,
    options: { side?: Side; timestampNs?: bigint } = {},
  ): void {
    if (this.fd === null) {
      throw new Error(`capture ${this.path} is closed`);
    }
    if (frame.length > MAX_CAPTURE_FRAME_LENGTH) {
      throw new EncodeError(
        `capture: a frame of ${frame.length} bytes exceeds the format's maximum of ` +
          `${MAX_CAPTURE_FRAME_LENGTH}`,
      );
    }
    const size = RECORD_HEADER_SIZE + frame.length;
    const full = this.maxFileBytes !== null && this.fileSize + size > this.maxFileBytes;
    if (full && this.fileRecords > 0) {
      this.writeBuffer();
      fs.closeSync(this.fd);
      this.fd = null;
      this.openNext();
    }
    const when = options.timestampNs ?? this.clock();
    const side = options.side ?? "client";
    const header = encodeRecordHeader(this.sync, when, connectionId, direction, side, frame);
    this.fileSize += size;
    this.fileRecords += 1;
    this.records += 1;
    if (this.buffered + size > this.buffer.length) {
      this.writeBuffer();
      if (size > this.bufferBytes) {
        this.writeAll(header); // larger than the buffer: straight to the file, now
        this.writeAll(frame);
        return;
      }
      if (this.buffer.length < this.bufferBytes) this.buffer = Buffer.allocUnsafe(this.bufferBytes);
    }
    this.buffer.set(header, this.buffered);
    this.buffer.set(frame, this.buffered + RECORD_HEADER_SIZE);
    this.buffered += size;
    if (this.buffered >= this.bufferBytes) this.writeBuffer();
  }

  /** Write the buffered records to the file (no fsync: the OS has them). */
  flush(): void {
    this.writeBuffer();
  }

  close(): void {
    if (this.fd !== null) {
      this.writeBuffer();
      fs.closeSync(this.fd);
      this.fd = null;
    }
  }

  get closed(): boolean {
    return this.fd === null;
  }
}

/** Cuts one direction's byte stream (frames behind RSocket's 24-bit length) into frames.
 * Only the boundaries: a frame the codec would refuse is recorded too (the engine reports
 * it), and a 24-bit length is always within the format's maximum. */
class Deframer {
  private pending: Uint8Array = new Uint8Array(0);

  feed(chunk: Uint8Array): Uint8Array[] {
    let data = chunk;
    if (this.pending.length > 0) {
      data = new Uint8Array(this.pending.length + chunk.length);
      data.set(this.pending, 0);
      data.set(chunk, this.pending.length);
    }
    const frames: Uint8Array[] = [];
    let pos = 0;
    while (data.length - pos >= LENGTH_PREFIX_SIZE) {
      const length = (data[pos]! << 16) | (data[pos + 1]! << 8) | data[pos + 2]!;
      const stop = pos + LENGTH_PREFIX_SIZE + length;
      if (stop > data.length) break;
      frames.push(data.subarray(pos + LENGTH_PREFIX_SIZE, stop));
      pos = stop;
    }
    this.pending = data.slice(pos);
    return frames;
  }
}

/** A transport whose frames, both ways, are recorded to `capture` as connection
 * `connectionId` seen from `side`. Bytes pass through untouched; a frame is recorded when
 * it is handed to the transport (out) or delivered by it (in). */
export class CapturedTransport implements Transport {
  readonly connectionId: bigint;
  private readonly incoming = new Deframer();
  private readonly outgoing = new Deframer();

  constructor(
    readonly inner: Transport,
    readonly capture: CaptureWriter,
    readonly side: Side,
  ) {
    this.connectionId = capture.newConnectionId();
  }

  private recordAll(direction: Direction, frames: readonly Uint8Array[]): void {
    if (this.capture.closed) return; // closed before the connection: stop quietly
    for (const frame of frames) {
      this.capture.record(this.connectionId, direction, frame, { side: this.side });
    }
  }

  start(sink: TransportSink): void {
    this.inner.start({
      data: (chunk) => {
        this.recordAll("in", this.incoming.feed(chunk));
        sink.data(chunk);
      },
      closed: (error) => sink.closed(error),
    });
  }

  send(frames: readonly Bytes[]): void {
    this.inner.send(frames); // first: a send that throws was not sent, so not recorded
    for (const chunk of frames) this.recordAll("out", this.outgoing.feed(chunk));
  }

  close(): void {
    this.inner.close();
  }
}

/** `transport`, recorded to `capture` (unchanged when there is none). */
export function tap(
  transport: Transport,
  capture: CaptureWriter | undefined,
  side: Side,
): Transport {
  return capture === undefined ? transport : new CapturedTransport(transport, capture, side);
}
