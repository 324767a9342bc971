/**
 * The MessagePack boundary (rsio's msgpack encoding): the twin of runtime/_support.py's
 * msgpack_pack / msgpack_unpack / MsgpackDecoder core and mp_* checks.
 *
 * Packing goes through @msgpack/msgpack's Encoder and is byte-identical to Python's
 * `msgpack.packb(obj, use_bin_type=True)`: every integer (number or bigint) takes its
 * smallest form (Python ints have no 64-bit bias; the library, given bigints, would
 * always write 9 bytes and would write numbers beyond 32 bits as floats), strings are
 * str, Uint8Array is bin. A number is an integer when it is integral (JS cannot tell 1.0
 * from 1; no frame field is a float), else a float 64 as Python's float; MpFloat(v)
 * packs as `v` does.
 *
 * Unpacking is done here, not by the library: Python's `unpackb(raw=False,
 * strict_map_key=True)` refuses invalid UTF-8 in str, map keys other than str/bin and
 * reserved bytes, and keeps floats apart from integers, where the library replaces bad
 * UTF-8, accepts number keys and returns 1.0 as 1. Decoded values:
 *   nil -> null, bool -> boolean, int -> number (bigint beyond 2^53), float -> MpFloat,
 *   str -> string, bin -> Uint8Array (a view of the input), array -> unknown[],
 *   map -> Map<string | Uint8Array, unknown>, ext -> MpExt.
 * Errors and messages follow what Python msgpack 1.x raises there.
 */

import { Encoder, ExtData } from "@msgpack/msgpack";

import { EncodeError, InvalidValue, MalformedMsgpack, TrailingBytes } from "./errors.js";
import { utf8Error } from "./wire.js";

/** A MessagePack float (float 32 or 64), kept apart from integers as Python does. */
export class MpFloat {
  constructor(readonly value: number) {}
}

/** A MessagePack extension value (Python: ExtType; type -1 is Python's Timestamp). */
export class MpExt {
  constructor(
    readonly type: number,
    readonly data: Uint8Array<ArrayBuffer>,
  ) {}
}

// --- packing ----------------------------------------------------------------------------

const I32_MIN = -0x8000_0000;
const U32_LIMIT = 0x1_0000_0000;
const I64_MIN = -(1n << 63n);
const U64_MAX = (1n << 64n) - 1n;

// Built on first use, not at import: the runtime is side-effect free (package.json
// `sideEffects: false`), so a bundle that never packs MessagePack drops @msgpack/msgpack.
let encoder: Encoder | undefined;

/** Pack `value` as Python's `msgpack.packb(value, use_bin_type=True)` does, byte for byte. */
export function mpPack(value: unknown): Uint8Array<ArrayBuffer> {
  try {
    encoder ??= new Encoder({ useBigInt64: true });
    return encoder.encode(normalize(value, 0));
  } catch (error) {
    if (error instanceof EncodeError) {
      throw error;
    }
    throw new EncodeError(`MessagePack: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * `value` with every integer in the form the Encoder writes minimally: numbers within
 * 32 bits (fixint .. uint32/int32), bigints beyond (uint64/int64). Arrays are copied
 * only when an element changes.
 */
function normalize(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "number":
      // An integral number is an integer (a Python int), also beyond 2^53, where the
      // Encoder would write a float; a fraction stays a float.
      if (Number.isInteger(value) && (value < I32_MIN || value >= U32_LIMIT)) {
        return normalize(BigInt(value), depth);
      }
      return value;
    case "bigint":
      if (value >= BigInt(I32_MIN) && value < BigInt(U32_LIMIT)) {
        return Number(value);
      }
      if (value < I64_MIN || value > U64_MAX) {
        throw new EncodeError(`MessagePack: integer ${value} out of range`);
      }
      return value;
    case "object":
      break;
    default:
      return value;
  }
  if (value === null || value instanceof Uint8Array) {
    return value;
  }
  if (depth > 512) {
    throw new EncodeError("MessagePack: nested too deep");
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const done = normalize(item, depth + 1);
      if (done !== item && copy === null) {
        copy = value.slice(0, i);
      }
      if (copy !== null) {
        copy.push(done);
      }
    }
    return copy ?? value;
  }
  if (value instanceof MpFloat) {
    return value.value;
  }
  if (value instanceof MpExt) {
    return new ExtData(value.type, value.data);
  }
  if (value instanceof Map) {
    const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (const [key, item] of value as Map<unknown, unknown>) {
      if (typeof key !== "string") {
        throw new EncodeError("MessagePack: only string map keys can be packed");
      }
      out[key] = normalize(item, depth + 1);
    }
    return out;
  }
  return value;
}

// --- unpacking --------------------------------------------------------------------------

/** Thrown (not an Error: cheap) when the input ends inside an object; `needed` is an
 * offset the input must reach at least. Stream decoders wait for more bytes. */
export class NeedMore {
  constructor(readonly needed: number) {}
}

/** Python's Unpacker limits on declared item counts (checked at the header). */
export interface MsgpackLimits {
  readonly array: number;
  readonly map: number;
}

/** Python `unpackb` limits: the input length (maps: half of it). */
function unpackbLimits(size: number): MsgpackLimits {
  return { array: size, map: Math.floor(size / 2) };
}

/** Python `Unpacker(max_buffer_size=max)` limits. */
export function streamLimits(maxBufferSize: number): MsgpackLimits {
  return { array: maxBufferSize, map: Math.floor(maxBufferSize / 2) };
}

const MAX_DEPTH = 1024; // the C unpacker's stack: deeper nesting is an error
const STR = /* @__PURE__ */ new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

class Cursor {
  readonly view: DataView;
  constructor(
    readonly data: Uint8Array<ArrayBuffer>,
    public pos: number,
    readonly end: number,
    readonly limits: MsgpackLimits,
  ) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  /** Take `n` bytes: their position (NeedMore when they are not all there yet). */
  take(n: number): number {
    this.need(n);
    const at = this.pos;
    this.pos += n;
    return at;
  }

  need(n: number): void {
    if (this.pos + n > this.end) {
      throw new NeedMore(this.pos + n);
    }
  }
}

function malformed(detail: string): MalformedMsgpack {
  return new MalformedMsgpack(`not MessagePack: ${detail}`);
}

/**
 * Decode one object at `data[pos:end]`: [object, its end]. Throws NeedMore when the
 * input ends inside it, MalformedMsgpack when it cannot be MessagePack.
 */
export function decodeOneMsgpack(
  data: Uint8Array<ArrayBuffer>,
  pos: number,
  end: number,
  limits: MsgpackLimits,
): [unknown, number] {
  const cursor = new Cursor(data, pos, end, limits);
  const value = readValue(cursor, 0);
  return [value, cursor.pos];
}

/** Unpack exactly one MessagePack object, as runtime/_support.msgpack_unpack does. */
export function mpUnpack(data: Uint8Array<ArrayBuffer>): unknown {
  let value: unknown;
  let stop: number;
  try {
    [value, stop] = decodeOneMsgpack(data, 0, data.length, unpackbLimits(data.length));
  } catch (error) {
    if (error instanceof NeedMore) {
      throw malformed("Unpack failed: incomplete input");
    }
    throw error;
  }
  if (stop !== data.length) {
    throw new TrailingBytes("bytes after one MessagePack object");
  }
  return value;
}

function toInteger(value: bigint): number | bigint {
  return value >= -0x1f_ffff_ffff_ffffn && value <= 0x1f_ffff_ffff_ffffn ? Number(value) : value;
}

function readValue(c: Cursor, depth: number): unknown {
  c.need(1);
  const head = c.data[c.pos]!;
  c.pos += 1;
  if (head < 0x80) {
    return head;
  }
  if (head >= 0xe0) {
    return head - 0x100;
  }
  if (head < 0x90) {
    return readMap(c, head - 0x80, depth);
  }
  if (head < 0xa0) {
    return readArray(c, head - 0x90, depth);
  }
  if (head < 0xc0) {
    return readStr(c, head - 0xa0);
  }
  const view = c.view;
  let at: number;
  switch (head) {
    case 0xc0:
      return null;
    case 0xc2:
      return false;
    case 0xc3:
      return true;
    case 0xc4:
      c.need(1);
      return readBin(c, c.data[c.pos++]!);
    case 0xc5:
      at = c.take(2);
      return readBin(c, view.getUint16(at));
    case 0xc6:
      at = c.take(4);
      return readBin(c, view.getUint32(at));
    case 0xc7:
      c.need(1);
      return readExt(c, c.data[c.pos++]!);
    case 0xc8:
      at = c.take(2);
      return readExt(c, view.getUint16(at));
    case 0xc9:
      at = c.take(4);
      return readExt(c, view.getUint32(at));
    case 0xca:
      at = c.take(4);
      return new MpFloat(view.getFloat32(at));
    case 0xcb:
      at = c.take(8);
      return new MpFloat(view.getFloat64(at));
    case 0xcc:
      c.need(1);
      return c.data[c.pos++]!;
    case 0xcd:
      at = c.take(2);
      return view.getUint16(at);
    case 0xce:
      at = c.take(4);
      return view.getUint32(at);
    case 0xcf:
      at = c.take(8);
      return toInteger(view.getBigUint64(at));
    case 0xd0:
      at = c.take(1);
      return view.getInt8(at);
    case 0xd1:
      at = c.take(2);
      return view.getInt16(at);
    case 0xd2:
      at = c.take(4);
      return view.getInt32(at);
    case 0xd3:
      at = c.take(8);
      return toInteger(view.getBigInt64(at));
    case 0xd4:
      return readExt(c, 1);
    case 0xd5:
      return readExt(c, 2);
    case 0xd6:
      return readExt(c, 4);
    case 0xd7:
      return readExt(c, 8);
    case 0xd8:
      return readExt(c, 16);
    case 0xd9:
      c.need(1);
      return readStr(c, c.data[c.pos++]!);
    case 0xda:
      at = c.take(2);
      return readStr(c, view.getUint16(at));
    case 0xdb:
      at = c.take(4);
      return readStr(c, view.getUint32(at));
    case 0xdc:
      at = c.take(2);
      return readArray(c, view.getUint16(at), depth);
    case 0xdd:
      at = c.take(4);
      return readArray(c, view.getUint32(at), depth);
    case 0xde:
      at = c.take(2);
      return readMap(c, view.getUint16(at), depth);
    case 0xdf:
      at = c.take(4);
      return readMap(c, view.getUint32(at), depth);
    default: // 0xc1, never used
      throw malformed("");
  }
}

function readBin(c: Cursor, size: number): Uint8Array<ArrayBuffer> {
  c.need(size);
  const start = c.pos;
  c.pos += size;
  return c.data.subarray(start, start + size);
}

function readStr(c: Cursor, size: number): string {
  const bytes = readBin(c, size);
  try {
    return STR.decode(bytes);
  } catch {
    const bad = utf8Error(bytes);
    if (bad === null) {
      throw malformed("'utf-8' codec can't decode the string");
    }
    const where =
      bad.end - bad.start === 1
        ? `byte 0x${bytes[bad.start]!.toString(16).padStart(2, "0")} in position ${bad.start}`
        : `bytes in position ${bad.start}-${bad.end - 1}`;
    throw malformed(`'utf-8' codec can't decode ${where}: ${bad.reason}`);
  }
}

function readExt(c: Cursor, size: number): MpExt {
  c.need(1 + size);
  const type = c.view.getInt8(c.pos);
  c.pos += 1;
  const data = readBin(c, size);
  // Python builds an ExtType (codes 0..127) or, for -1, a Timestamp: the other negative
  // codes and a Timestamp with more than 999999999 nanoseconds are ValueErrors there.
  if (type < -1) throw malformed("code must be 0~127");
  if (type === -1) {
    if (size !== 4 && size !== 8 && size !== 12) {
      throw malformed("Timestamp type can only be created from 32, 64, or 96-bit byte objects");
    }
    const word = size === 4 ? 0 : new DataView(data.buffer, data.byteOffset, 4).getUint32(0);
    const nanoseconds = size === 8 ? word >>> 2 : word;
    if (nanoseconds > 999999999) {
      throw malformed("nanoseconds must be a non-negative integer not greater than 999999999.");
    }
  }
  return new MpExt(type, data);
}

function readArray(c: Cursor, size: number, depth: number): unknown[] {
  if (size > c.limits.array) {
    throw malformed(`${size} exceeds max_array_len(${c.limits.array})`);
  }
  if (depth >= MAX_DEPTH) {
    throw malformed("");
  }
  // Each item takes at least a byte: a count beyond the input waits (no huge allocation).
  c.need(size);
  const items = new Array<unknown>(size);
  for (let i = 0; i < size; i++) {
    items[i] = readValue(c, depth + 1);
  }
  return items;
}

function readMap(c: Cursor, size: number, depth: number): Map<string | Uint8Array<ArrayBuffer>, unknown> {
  if (size > c.limits.map) {
    throw malformed(`${size} exceeds max_map_len(${c.limits.map})`);
  }
  if (depth >= MAX_DEPTH) {
    throw malformed("");
  }
  c.need(2 * size);
  const map = new Map<string | Uint8Array<ArrayBuffer>, unknown>();
  for (let i = 0; i < size; i++) {
    const key = readValue(c, depth + 1);
    if (typeof key !== "string" && !(key instanceof Uint8Array)) {
      throw malformed(`${pythonType(key)} is not allowed for map key when strict_map_key=True`);
    }
    map.set(key as string | Uint8Array<ArrayBuffer>, readValue(c, depth + 1)); // a view of the input
  }
  return map;
}

// --- checks of values read from MessagePack ------------------------------------------------

/** The name Python gives the type of the value msgpack would have decoded there. */
export function pythonType(value: unknown): string {
  switch (typeof value) {
    case "number":
      return Number.isInteger(value) ? "int" : "float";
    case "bigint":
      return "int";
    case "boolean":
      return "bool";
    case "string":
      return "str";
    case "undefined":
      return "NoneType";
    case "object":
      if (value === null) return "NoneType";
      if (value instanceof Uint8Array) return "bytes";
      if (Array.isArray(value)) return "list";
      if (value instanceof Map) return "dict";
      if (value instanceof MpFloat) return "float";
      if (value instanceof MpExt) return value.type === -1 ? "Timestamp" : "ExtType";
      return "object"; // nothing else comes out of readValue; no constructor.name (minified)
    default:
      return typeof value;
  }
}

/** An integer within [lo, hi] (bool is not an integer here); for fields of <= 32 bits. */
export function mpInt(v: unknown, lo: number, hi: number, what: string): number {
  if (typeof v === "number" && Number.isInteger(v)) {
    if (v < lo || v > hi) {
      throw new InvalidValue(`${what}: ${v} is outside ${lo}..${hi}`);
    }
    return v;
  }
  if (typeof v === "bigint") {
    if (v < BigInt(lo) || v > BigInt(hi)) {
      throw new InvalidValue(`${what}: ${v} is outside ${lo}..${hi}`);
    }
    return Number(v);
  }
  throw new MalformedMsgpack(`${what}: expected an integer, got ${pythonType(v)}`);
}

/** An integer within [lo, hi] as a bigint; for 64-bit fields (varint, u64, i64 ...). */
export function mpBigInt(v: unknown, lo: bigint, hi: bigint, what: string): bigint {
  let n: bigint;
  if (typeof v === "bigint") {
    n = v;
  } else if (typeof v === "number" && Number.isInteger(v)) {
    n = BigInt(v);
  } else {
    throw new MalformedMsgpack(`${what}: expected an integer, got ${pythonType(v)}`);
  }
  if (n < lo || n > hi) {
    throw new InvalidValue(`${what}: ${n} is outside ${lo}..${hi}`);
  }
  return n;
}

export function mpBool(v: unknown, what: string): boolean {
  if (typeof v !== "boolean") {
    throw new MalformedMsgpack(`${what}: expected a boolean, got ${pythonType(v)}`);
  }
  return v;
}

export function mpBytes(v: unknown, what: string): Uint8Array<ArrayBuffer> {
  if (!(v instanceof Uint8Array)) {
    throw new MalformedMsgpack(`${what}: expected bin, got ${pythonType(v)}`);
  }
  return v as Uint8Array<ArrayBuffer>; // mpUnpack's bin: a view of its (ArrayBuffer) input
}

export function mpStr(v: unknown, what: string): string {
  if (typeof v !== "string") {
    throw new MalformedMsgpack(`${what}: expected str, got ${pythonType(v)}`);
  }
  return v;
}

export function mpList(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) {
    throw new MalformedMsgpack(`${what}: expected an array, got ${pythonType(v)}`);
  }
  return v;
}
