/**
 * Bytes in and out: what every generated TypeScript codec reads and writes with (the
 * twin of runtime/_support.py's variable-length integers, binary32 and utf8 helpers, plus
 * the Reader/Writer the Python codecs get from `struct` and `bytearray`).
 *
 * Browser-safe: Uint8Array and DataView only (no Node `Buffer`), TextEncoder/TextDecoder
 * for UTF-8. Multi-byte integers are big-endian (network order) unless the IDL says
 * little-endian (the `*le` methods).
 */

import { EncodeError, InvalidString, InvalidValue, NonCanonical, Truncated } from "./errors.js";

export const U64_MAX = 0xffff_ffff_ffff_ffffn;

/** A cursor over bytes: generated decoders read `data` through `view` from `pos` on. */
export class Reader {
  data: Uint8Array<ArrayBuffer>;
  pos: number;
  private _view: DataView | undefined;

  constructor(data: Uint8Array<ArrayBuffer>, pos = 0) {
    this.data = data;
    this.pos = pos;
    this._view = undefined;
  }

  /** Spans exactly `data`; made on first use (only 64-bit reads need it). */
  get view(): DataView {
    let view = this._view;
    if (view === undefined) {
      view = new DataView(this.data.buffer, this.data.byteOffset, this.data.byteLength);
      this._view = view;
    }
    return view;
  }
}

// --- unsigned LEB128 (protobuf varint) ---------------------------------------------------

/**
 * Read an unsigned LEB128 varint at `r.pos` (which it advances), not reading at or past
 * `end`.
 *
 * Protobuf varints carry at most 64 bits, so at most 10 bytes are read: a longer run of
 * continuation bits is an error, never a loop sized by the peer. Errors and messages are
 * runtime/_support.read_varint's: Truncated (with `needed`), InvalidValue.
 */
export function readVarint(r: Reader, end: number): bigint {
  const data = r.data;
  let pos = r.pos;
  if (pos >= end) {
    throw new Truncated("varint: input ends", pos + 1);
  }
  let byte = data[pos]!;
  if (byte < 0x80) {
    r.pos = pos + 1;
    return BigInt(byte);
  }
  // The first 7 bytes (49 bits) add up exactly in a number; beyond that, bigint.
  let low = byte & 0x7f;
  let high = 0n;
  let shift = 7;
  pos += 1;
  for (;;) {
    if (pos >= end) {
      throw new Truncated("varint: input ends inside a varint", pos + 1);
    }
    byte = data[pos]!;
    pos += 1;
    if (shift < 49) {
      low += (byte & 0x7f) * 2 ** shift;
    } else {
      high |= BigInt(byte & 0x7f) << BigInt(shift);
    }
    if (byte < 0x80) {
      const result = high | BigInt(low);
      if (result > U64_MAX) {
        throw new InvalidValue("varint: value exceeds 64 bits");
      }
      if (byte === 0) {
        // A last group of 0 adds nothing: the same value fits in fewer bytes.
        throw new NonCanonical("varint: overlong encoding (a trailing 0x00 group)");
      }
      r.pos = pos;
      return result;
    }
    shift += 7;
    if (shift >= 70) {
      throw new InvalidValue("varint: longer than 10 bytes");
    }
  }
}

// --- zigzag (protobuf sint64): (n << 1) ^ (n >> 63) as a LEB128 varint -------------------

/** Read a zigzag-mapped signed 64-bit value; its varint must be in shortest form. */
export function readZigzag(r: Reader, end: number): bigint {
  const raw = readVarint(r, end);
  return (raw >> 1n) ^ -(raw & 1n);
}

// --- MQTT 5 Variable Byte Integer (MQTT 5.0, 1.5.5) ---------------------------------------
// 7 bits a byte, least significant group first, high bit = more bytes follow; at most four
// bytes (values up to 268,435,455). [MQTT-1.5.5-1]: the minimum number of bytes.

export const VBI_MAX = 268_435_455;

/** Read a Variable Byte Integer at `r.pos` (which it advances); more than 4 bytes or an
 * overlong form is an error (runtime/_support.read_vbi's errors and messages). */
export function readVbi(r: Reader, end: number): number {
  const data = r.data;
  let pos = r.pos;
  let value = 0;
  for (let index = 0; index < 4; index++) {
    if (pos >= end) {
      throw new Truncated("variable byte integer: input ends", pos + 1);
    }
    const byte = data[pos]!;
    pos += 1;
    value += (byte & 0x7f) * 2 ** (7 * index);
    if (byte < 0x80) {
      if (byte === 0 && index > 0) {
        throw new NonCanonical("variable byte integer: not in its shortest form");
      }
      r.pos = pos;
      return value;
    }
  }
  throw new InvalidValue("variable byte integer: longer than 4 bytes");
}

// --- MySQL length-encoded integer (MySQL client/server protocol, Basic Data Types) --------
// < 0xFB: the value; 0xFC + 2 bytes, 0xFD + 3 bytes, 0xFE + 8 bytes (little-endian);
// 0xFB: NULL (in a row; an error where a number is required); 0xFF: not an integer (the
// first byte of an ERR packet). Only the shortest form is valid.

const LENENC_SIZES: Readonly<Record<number, readonly [number, bigint]>> = {
  0xfc: [2, 0xfbn],
  0xfd: [3, 1n << 16n],
  0xfe: [8, 1n << 24n],
};

/** Read a length-encoded integer at `r.pos` (which it advances); NULL (0xFB) reads as -1. */
export function readLenencOrNull(r: Reader, end: number): bigint {
  const data = r.data;
  const pos = r.pos;
  if (pos >= end) {
    throw new Truncated("length-encoded integer: input ends", pos + 1);
  }
  const first = data[pos]!;
  if (first < 0xfb) {
    r.pos = pos + 1;
    return BigInt(first);
  }
  if (first === 0xfb) {
    r.pos = pos + 1;
    return -1n;
  }
  if (first === 0xff) {
    throw new InvalidValue("length-encoded integer: 0xFF is not a valid first byte");
  }
  const [size, least] = LENENC_SIZES[first]!;
  const stop = pos + 1 + size;
  if (stop > end) {
    throw new Truncated("length-encoded integer: input ends inside it", stop);
  }
  let value = 0n;
  for (let i = stop - 1; i > pos; i--) {
    value = (value << 8n) | BigInt(data[i]!);
  }
  if (value < least) {
    throw new NonCanonical(`length-encoded integer: ${value} in ${size + 1} bytes is not shortest`);
  }
  r.pos = stop;
  return value;
}

/** Read a length-encoded integer where NULL is not allowed. */
export function readLenenc(r: Reader, end: number): bigint {
  const pos = r.pos;
  const value = readLenencOrNull(r, end);
  if (value < 0n) {
    r.pos = pos; // a failed read does not move
    throw new InvalidValue("length-encoded integer: NULL (0xFB) where a number is required");
  }
  return value;
}

/** Python's `a // b` on bigints: rounds toward negative infinity (bigint `/` truncates). */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}

// --- IEEE 754 binary32 --------------------------------------------------------------------
// A binary32 value is carried as a number (a binary64), as in Python: every binary32 value
// but a NaN converts exactly; a NaN keeps its sign and payload by moving the 23 fraction
// bits to the top of binary64's 52 (where the quiet bit sits in both), not by
// DataView.getFloat32, which turns a signalling NaN quiet.

const SCRATCH = /* @__PURE__ */ new DataView(new ArrayBuffer(8));

/** The number of binary32 `bits`; NaN payloads kept bit for bit. */
export function f32FromBits(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) {
    SCRATCH.setUint32(0, ((bits & 0x80000000) | 0x7ff00000 | ((bits & 0x7fffff) >>> 3)) >>> 0);
    SCRATCH.setUint32(4, (bits << 29) >>> 0);
    return SCRATCH.getFloat64(0);
  }
  SCRATCH.setUint32(0, bits >>> 0);
  return SCRATCH.getFloat32(0);
}

/** The binary32 bits of `value` (rounded to nearest); NaN payloads kept; EncodeError
 * when it is out of binary32's range (runtime/_support.f32_bits). */
export function f32Bits(value: number): number {
  if (Number.isNaN(value)) {
    SCRATCH.setFloat64(0, value);
    const high = SCRATCH.getUint32(0);
    const low = SCRATCH.getUint32(4);
    // A payload only in the low bits: quiet.
    const fraction = (((high & 0xfffff) << 3) | (low >>> 29)) || 0x400000;
    return ((high & 0x80000000) | 0x7f800000 | fraction) >>> 0;
  }
  if (!Number.isFinite(Math.fround(value)) && Number.isFinite(value)) {
    throw new EncodeError(`binary32: ${value} is out of range`);
  }
  SCRATCH.setFloat32(0, value);
  return SCRATCH.getUint32(0);
}

// --- VarU64 (https://github.com/AljoschaMeyer/varu64) -------------------------------------
// A first byte below 248 is the value; 248 + k - 1 announces k (1..8) further bytes
// holding the value big-endian. Only the shortest encoding is valid.

const VARU64_MIN: readonly bigint[] = [
  0n,
  248n,
  1n << 8n,
  1n << 16n,
  1n << 24n,
  1n << 32n,
  1n << 40n,
  1n << 48n,
  1n << 56n,
];

/** Read a VarU64 at `r.pos` (which it advances); rejects non-canonical encodings. */
export function readVarU64(r: Reader, end: number): bigint {
  const data = r.data;
  const pos = r.pos;
  if (pos >= end) {
    throw new Truncated("VarU64: input ends", pos + 1);
  }
  const first = data[pos]!;
  if (first < 248) {
    r.pos = pos + 1;
    return BigInt(first);
  }
  const size = first - 247;
  const stop = pos + 1 + size;
  if (stop > end) {
    throw new Truncated("VarU64: input ends inside a VarU64", stop);
  }
  let value = 0n;
  for (let i = pos + 1; i < stop; i++) {
    value = (value << 8n) | BigInt(data[i]!);
  }
  if (value < VARU64_MIN[size]!) {
    throw new NonCanonical(
      `VarU64: ${value} encoded in ${size + 1} bytes; the shortest form is required`,
    );
  }
  r.pos = stop;
  return value;
}

// --- UTF-8 ----------------------------------------------------------------------------------

// fatal: invalid UTF-8 throws (Python's strict decode); ignoreBOM: a leading U+FEFF is
// kept as a character, as Python's "utf-8" codec keeps it.
const DECODER = /* @__PURE__ */ new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const ENCODER = /* @__PURE__ */ new TextEncoder();

/** Decode a UTF-8 string field, naming the field when it is not UTF-8 (InvalidString). */
export function utf8(data: Uint8Array<ArrayBuffer>, what: string): string {
  try {
    return DECODER.decode(data);
  } catch {
    const bad = utf8Error(data);
    throw new InvalidString(`${what}: not UTF-8 (${bad === null ? "invalid data" : bad.reason})`);
  }
}

/** UTF-8 bytes of `text` (a lone surrogate becomes U+FFFD, TextEncoder's rule). */
export function utf8Bytes(text: string): Uint8Array<ArrayBuffer> {
  return ENCODER.encode(text);
}

/** Where and why `data` is not UTF-8, in the words of Python's decoder. */
export interface Utf8Error {
  /** Offset of the first byte of the bad sequence. */
  start: number;
  /** Offset after its last byte that was still valid (Python's `error.end`). */
  end: number;
  reason: "invalid start byte" | "invalid continuation byte" | "unexpected end of data";
}

/**
 * The first UTF-8 error in `data`, as CPython's decoder reports it, or null when it is
 * valid. Only called once TextDecoder has refused the bytes (the error path), so that
 * messages match Python's (`invalid start byte` ...).
 */
export function utf8Error(data: Uint8Array<ArrayBuffer>): Utf8Error | null {
  const n = data.length;
  let i = 0;
  while (i < n) {
    const lead = data[i]!;
    if (lead < 0x80) {
      i += 1;
      continue;
    }
    let count: number;
    let low = 0x80;
    let high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      count = 1;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      count = 2;
      if (lead === 0xe0) low = 0xa0;
      else if (lead === 0xed) high = 0x9f; // no surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      count = 3;
      if (lead === 0xf0) low = 0x90;
      else if (lead === 0xf4) high = 0x8f; // nothing above U+10FFFF
    } else {
      return { start: i, end: i + 1, reason: "invalid start byte" };
    }
    for (let k = 1; k <= count; k++) {
      if (i + k >= n) {
        return { start: i, end: i + k, reason: "unexpected end of data" };
      }
      const byte = data[i + k]!;
      if (byte < low || byte > high) {
        return { start: i, end: i + k, reason: "invalid continuation byte" };
      }
      low = 0x80;
      high = 0xbf;
    }
    i += count + 1;
  }
  return null;
}

// --- transforms ----------------------------------------------------------------------------

/**
 * `data` XOR the `size` bytes of the integer `key` (in its byte order) repeated: a
 * masked payload, e.g. WebSocket's 4-byte key (_support.xor over the key's to_bytes). A
 * new array: the decoded field never aliases the input.
 */
export function xor(data: Uint8Array<ArrayBuffer>, key: number | bigint, size: number, little: boolean): Uint8Array<ArrayBuffer> {
  const mask = new Uint8Array(size);
  let rest = BigInt.asUintN(8 * size, BigInt(key));
  for (let i = 0; i < size; i++) {
    mask[little ? i : size - 1 - i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  const out = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = data[i]! ^ mask[i % size]!;
  return out;
}

// --- Writer ---------------------------------------------------------------------------------

/**
 * A growable byte buffer that generated encoders write frames into.
 *
 * The integer methods do not check ranges: the generated encoders check every field
 * against its IDL type first (with the field's name in the EncodeError), as Python's do.
 * Values are written big-endian, little-endian by the `*le` methods.
 */
// --- names -------------------------------------------------------------------------------

/**
 * A frame class's name in messages: its static `NAME`, Python's class name, which every
 * generated frame class has. Not `constructor.name`: bundlers rename classes (`Error2`,
 * `Cancel2`) and minifiers mangle them (`"J"`), and RSocket's `ErrorFrame` is `Error` in
 * Python. A hand-written class without `NAME` falls back to its function name.
 */
export function frameClassName(cls: object): string {
  const name = (cls as { NAME?: unknown }).NAME;
  if (typeof name === "string") {
    return name;
  }
  return typeof cls === "function" ? cls.name : "object";
}

/** The name of `frame`'s class in messages (`frameClassName`). */
export function frameName(frame: object): string {
  return frameClassName(frame.constructor);
}

/** The pooled writer's slab size: many small frames per allocation. */
const SLAB_SIZE = 64 * 1024;

export class Writer {
  buf: Uint8Array<ArrayBuffer>;
  view: DataView;
  pos: number;

  /** Where the value being written starts in `buf`: 0, except in the pooled writer. */
  start: number;
  private readonly pooled: boolean;

  constructor(capacity = 256, pooled = false) {
    this.buf = new Uint8Array(Math.max(capacity, 16));
    this.view = new DataView(this.buf.buffer);
    this.pos = 0;
    this.start = 0;
    this.pooled = pooled;
  }

  private static sharedWriter: Writer | undefined;

  /**
   * The pooled writer, positioned at its slab's free space. Encoding is synchronous, so a
   * generated `encode` writes into it and returns `finish()`: a view of the slab that no
   * later write touches (as Node's `Buffer` pool hands out slices of 8 KiB slabs), so an
   * encode costs no copy and no allocation but the view. A full slab is left to the views
   * that still use it and a new one is taken.
   *
   * Posting such a view to a worker: a structured clone copies the whole slab (64 KiB),
   * and transferring its buffer detaches the slab under every other view of it. Post what
   * a generated `encodeOwned` returns (a copy in a buffer of its own) instead. A slab someone detached
   * anyway is replaced here, so later encodes go on working.
   */
  static shared(): Writer {
    let writer = Writer.sharedWriter;
    if (writer === undefined || writer.buf.byteLength === 0) {
      writer = new Writer(SLAB_SIZE, true);
      Writer.sharedWriter = writer;
    }
    writer.pos = writer.start;
    return writer;
  }

  /** Bytes written since `start`. */
  get length(): number {
    return this.pos - this.start;
  }

  /** Make room for `n` more bytes (doubling, so a frame costs amortised linear time). */
  ensure(n: number): void {
    if (this.pos + n > this.buf.length) {
      this.grow(n);
    }
  }

  private grow(n: number): void {
    const used = this.pos - this.start;
    const grown = new Uint8Array(Math.max(this.pooled ? SLAB_SIZE : 0, (used + n) * 2));
    grown.set(this.buf.subarray(this.start, this.pos));
    this.buf = grown;
    this.view = new DataView(grown.buffer);
    this.start = 0;
    this.pos = used;
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  u16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.pos, v);
    this.pos += 2;
  }

  u24(v: number): void {
    this.ensure(3);
    const buf = this.buf;
    const pos = this.pos;
    buf[pos] = v >>> 16;
    buf[pos + 1] = v >>> 8;
    buf[pos + 2] = v;
    this.pos = pos + 3;
  }

  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
  }

  i8(v: number): void {
    this.ensure(1);
    this.view.setInt8(this.pos, v);
    this.pos += 1;
  }

  i16(v: number): void {
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
  }

  i32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
  }

  u64(v: bigint): void {
    this.ensure(8);
    this.view.setBigUint64(this.pos, v);
    this.pos += 8;
  }

  i64(v: bigint): void {
    this.ensure(8);
    this.view.setBigInt64(this.pos, v);
    this.pos += 8;
  }

  u16le(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.pos, v, true);
    this.pos += 2;
  }

  u24le(v: number): void {
    this.ensure(3);
    const buf = this.buf;
    const pos = this.pos;
    buf[pos] = v;
    buf[pos + 1] = v >>> 8;
    buf[pos + 2] = v >>> 16;
    this.pos = pos + 3;
  }

  u32le(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v, true);
    this.pos += 4;
  }

  i16le(v: number): void {
    this.ensure(2);
    this.view.setInt16(this.pos, v, true);
    this.pos += 2;
  }

  i32le(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v, true);
    this.pos += 4;
  }

  u64le(v: bigint): void {
    this.ensure(8);
    this.view.setBigUint64(this.pos, v, true);
    this.pos += 8;
  }

  i64le(v: bigint): void {
    this.ensure(8);
    this.view.setBigInt64(this.pos, v, true);
    this.pos += 8;
  }

  /** An IEEE 754 binary32 (`f32Bits`: NaN payloads kept, EncodeError out of range). */
  f32(v: number, little = false): void {
    const bits = f32Bits(v);
    this.ensure(4);
    this.view.setUint32(this.pos, bits, little);
    this.pos += 4;
  }

  /** An IEEE 754 binary64. */
  f64(v: number, little = false): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v, little);
    this.pos += 8;
  }

  bytes(b: Uint8Array<ArrayBuffer>): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  /** An unsigned LEB128 varint; EncodeError like _support.write_varint. */
  varint(v: bigint): void {
    if (v < 0x80n) {
      if (v < 0n) {
        throw new EncodeError(`varint: negative value ${v}`);
      }
      this.u8(Number(v));
      return;
    }
    if (v > U64_MAX) {
      throw new EncodeError(`varint: value ${v} exceeds 64 bits`);
    }
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    while (v >= 0x80n) {
      buf[pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    buf[pos++] = Number(v);
    this.pos = pos;
  }

  /** A canonical VarU64; EncodeError like _support.write_varu64. */
  varu64(v: bigint): void {
    if (v >= 0n && v < 248n) {
      this.u8(Number(v));
      return;
    }
    if (v < 0n || v > U64_MAX) {
      throw new EncodeError(`VarU64: value ${v} out of range`);
    }
    let size = 1;
    while (v >> BigInt(8 * size) !== 0n) {
      size += 1;
    }
    this.ensure(1 + size);
    const buf = this.buf;
    const pos = this.pos;
    buf[pos] = 247 + size;
    for (let i = size; i >= 1; i--) {
      buf[pos + i] = Number(v & 0xffn);
      v >>= 8n;
    }
    this.pos = pos + 1 + size;
  }

  /** A zigzag-mapped signed 64-bit value as a LEB128 varint (_support.write_zigzag). */
  zigzag(v: bigint): void {
    if (v < -(1n << 63n) || v >= 1n << 63n) {
      throw new EncodeError(`zigzag: value ${v} does not fit 64 signed bits`);
    }
    this.varint(v < 0n ? (v << 1n) ^ (v >> 63n) : v << 1n);
  }

  /** An MQTT Variable Byte Integer (_support.write_vbi). */
  vbi(v: number): void {
    if (v < 0x80) {
      if (v < 0) {
        throw new EncodeError(`variable byte integer: negative value ${v}`);
      }
      this.u8(v);
      return;
    }
    if (v > VBI_MAX) {
      throw new EncodeError(`variable byte integer: ${v} exceeds ${VBI_MAX}`);
    }
    this.ensure(4);
    const buf = this.buf;
    let pos = this.pos;
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 0x80);
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  /** A MySQL length-encoded integer, shortest form (_support.write_lenenc). */
  lenenc(v: bigint): void {
    if (v >= 0n && v < 0xfbn) {
      this.u8(Number(v));
      return;
    }
    if (v < 0n || v > U64_MAX) {
      throw new EncodeError(`length-encoded integer: value ${v} out of range`);
    }
    const size = v < 1n << 16n ? 2 : v < 1n << 24n ? 3 : 8;
    this.ensure(1 + size);
    const buf = this.buf;
    const pos = this.pos;
    buf[pos] = size === 2 ? 0xfc : size === 3 ? 0xfd : 0xfe;
    for (let i = 1; i <= size; i++) {
      buf[pos + i] = Number(v & 0xffn);
      v >>= 8n;
    }
    this.pos = pos + 1 + size;
  }

  /** Skip `n` bytes (a length written once the rest is known); returns their offset
   * from `start` (the buffer may move before the patch). */
  reserve(n: number): number {
    this.ensure(n);
    const at = this.pos;
    this.buf.fill(0, at, at + n);
    this.pos += n;
    return at - this.start;
  }

  patchU8(at: number, v: number): void {
    this.buf[this.start + at] = v;
  }

  patchU16(at: number, v: number): void {
    const buf = this.buf;
    const pos = this.start + at;
    buf[pos] = v >>> 8;
    buf[pos + 1] = v;
  }

  patchU24(at: number, v: number): void {
    const buf = this.buf;
    const pos = this.start + at;
    buf[pos] = v >>> 16;
    buf[pos + 1] = v >>> 8;
    buf[pos + 2] = v;
  }

  patchU32(at: number, v: number): void {
    const buf = this.buf;
    const pos = this.start + at;
    buf[pos] = v >>> 24;
    buf[pos + 1] = v >>> 16;
    buf[pos + 2] = v >>> 8;
    buf[pos + 3] = v;
  }

  /** What was written since `start`: a copy, or in the pooled writer a view that stays
   * valid (the next value starts after it). */
  finish(): Uint8Array<ArrayBuffer> {
    if (!this.pooled) {
      return this.buf.slice(this.start, this.pos);
    }
    const out = this.buf.subarray(this.start, this.pos);
    this.start = Math.min((this.pos + 7) & ~7, this.buf.length);
    return out;
  }
}
