// @wirestream/runtime against the behaviour of its Python twin (runtime/_support.py,
// errors.py, machine.py). The expected bytes and messages below were produced by the
// Python code (/work/main/.venv/bin/python, msgpack 1.x): the two languages must agree
// on every byte and every refusal.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";

import {
  ANY,
  ConnectionLost,
  DecodeError,
  DemandExceeded,
  EncodeError,
  FlowControlError,
  FrameTooLarge,
  IGNORE,
  Illegal,
  IllegalSend,
  InvalidString,
  InvalidValue,
  LengthPrefixedDecoder,
  LocalProtocolError,
  MalformedMsgpack,
  MpFloat,
  MsgpackDecoder,
  NonCanonical,
  PeerInvalidGrant,
  ProtocolError,
  Reader,
  RemoteProtocolError,
  RuleViolation,
  SelfDelimitingDecoder,
  StateMachine,
  TrailingBytes,
  Truncated,
  UnexpectedFrame,
  Writer,
  checkAll,
  f32Bits,
  f32FromBits,
  floorDiv,
  mpBigInt,
  mpBool,
  mpBytes,
  mpInt,
  mpList,
  mpPack,
  mpStr,
  mpUnpack,
  readLenenc,
  readLenencOrNull,
  readVarU64,
  readVarint,
  readVbi,
  readZigzag,
  sendAll,
  table,
  utf8,
  utf8Bytes,
  type Table,
} from "@wirestream/runtime";

const hex = (data: Uint8Array<ArrayBuffer>): string =>
  Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
const bytes = (text: string): Uint8Array<ArrayBuffer> =>
  new Uint8Array((text.match(/../g) ?? []).map((pair) => parseInt(pair, 16)));
const sha256 = (data: Uint8Array<ArrayBuffer>): string => createHash("sha256").update(data).digest("hex");

/** Run `f`, expect it to throw an instance of `kind`; return the error. */
function throws<E extends Error>(kind: abstract new (...args: never[]) => E, f: () => unknown): E {
  try {
    f();
  } catch (error) {
    assert.ok(error instanceof kind, `expected ${kind.name}, got ${String(error)}`);
    return error;
  }
  assert.fail(`expected ${kind.name}, nothing thrown`);
}

// --- errors ---------------------------------------------------------------------------

describe("errors", () => {
  it("have Python's names and parents", () => {
    const truncated = new Truncated("short", 7);
    assert.equal(truncated.name, "Truncated");
    assert.equal(truncated.needed, 7);
    assert.ok(truncated instanceof DecodeError);
    assert.ok(truncated instanceof RemoteProtocolError);
    assert.ok(truncated instanceof ProtocolError);
    assert.ok(truncated instanceof Error);
    assert.deepEqual(truncated.frames, []);
    assert.equal(new NonCanonical("x").name, "NonCanonical");
    assert.ok(new NonCanonical("x") instanceof InvalidValue);
    assert.equal(new RuleViolation("x").name, "RuleViolation");
    assert.ok(new RuleViolation("x") instanceof InvalidValue);
    assert.ok(new InvalidString("x") instanceof InvalidValue);
    assert.ok(new EncodeError("x") instanceof LocalProtocolError);
    const lost = new ConnectionLost();
    assert.equal(lost.message, "connection lost");
    assert.equal(lost.reason, "eof");
  });

  it("keep both of Python's bases for flow control", () => {
    const local = new DemandExceeded("too many");
    assert.ok(local instanceof LocalProtocolError);
    assert.ok(local instanceof FlowControlError);
    const remote = new PeerInvalidGrant("zero");
    assert.ok(remote instanceof RemoteProtocolError);
    assert.ok(remote instanceof FlowControlError);
    assert.ok(!(new EncodeError("x") instanceof FlowControlError));
    assert.ok(!(local instanceof DemandExceeded.prototype.constructor && remote instanceof DemandExceeded));
  });

  it("carry the machine fields", () => {
    const error = new IllegalSend("no", { machine: "m", role: "client", state: "new", frame: "F" });
    assert.ok(error instanceof LocalProtocolError);
    assert.deepEqual(
      [error.machine, error.role, error.state, error.frame, error.spec],
      ["m", "client", "new", "F", ""],
    );
    assert.ok(new UnexpectedFrame("no") instanceof RemoteProtocolError);
  });
});

// --- varint / VarU64 ----------------------------------------------------------------------

const VARINTS: [bigint, string][] = [
  [0n, "00"],
  [1n, "01"],
  [127n, "7f"],
  [128n, "8001"],
  [300n, "ac02"],
  [16383n, "ff7f"],
  [16384n, "808001"],
  [4294967296n, "8080808010"],
  [562949953421311n, "ffffffffffff7f"],
  [562949953421312n, "8080808080808001"],
  [72057594037927936n, "808080808080808001"],
  [9223372036854775808n, "80808080808080808001"],
  [18446744073709551615n, "ffffffffffffffffff01"],
];

const VARU64S: [bigint, string][] = [
  [0n, "00"],
  [247n, "f7"],
  [248n, "f8f8"],
  [255n, "f8ff"],
  [256n, "f90100"],
  [65535n, "f9ffff"],
  [65536n, "fa010000"],
  [16777216n, "fb01000000"],
  [72057594037927935n, "feffffffffffffff"],
  [72057594037927936n, "ff0100000000000000"],
  [18446744073709551615n, "ffffffffffffffffff"],
];

describe("varint", () => {
  it("round-trips Python's encodings", () => {
    for (const [value, encoded] of VARINTS) {
      const w = new Writer(1);
      w.varint(value);
      assert.equal(hex(w.finish()), encoded, `write ${value}`);
      const r = new Reader(bytes(encoded + "99"));
      assert.equal(readVarint(r, r.data.length), value, `read ${encoded}`);
      assert.equal(r.pos, encoded.length / 2);
    }
  });

  it("refuses an overlong varint as Python does (a trailing 0x00 group)", () => {
    for (const input of ["8000", "ff00", "818000", "ffffffffffffffffff00"]) {
      const r = new Reader(bytes(input));
      const error = throws(NonCanonical, () => readVarint(r, r.data.length));
      assert.equal(error.message, "varint: overlong encoding (a trailing 0x00 group)");
      assert.equal(r.pos, 0, "a failed read does not move");
    }
  });

  it("refuses what Python refuses, with its messages", () => {
    const cases: [string, string, number | null][] = [
      ["", "varint: input ends", 1],
      ["80", "varint: input ends inside a varint", 2],
      ["ffffffffffffffffffff", "varint: longer than 10 bytes", null],
      ["ffffffffffffffffffffff", "varint: longer than 10 bytes", null],
      ["ffffffffffffffffff02", "varint: value exceeds 64 bits", null],
    ];
    for (const [input, message, needed] of cases) {
      const data = bytes(input);
      const error = throws(DecodeError, () => readVarint(new Reader(data), data.length));
      assert.equal(error.message, message);
      if (needed === null) {
        assert.equal(error.name, "InvalidValue");
      } else {
        assert.ok(error instanceof Truncated);
        assert.equal(error.needed, needed);
      }
    }
    // `end` bounds the read, not the array
    const error = throws(Truncated, () => readVarint(new Reader(bytes("8001")), 1));
    assert.equal(error.needed, 2);
  });

  it("reads from an offset of a view", () => {
    const backing = bytes("0000ac02");
    const r = new Reader(backing.subarray(1), 1);
    assert.equal(readVarint(r, 3), 300n);
    assert.equal(r.pos, 3);
  });

  it("refuses to encode what Python refuses", () => {
    const w = new Writer();
    assert.equal(throws(EncodeError, () => w.varint(-1n)).message, "varint: negative value -1");
    assert.equal(
      throws(EncodeError, () => w.varint(1n << 64n)).message,
      "varint: value 18446744073709551616 exceeds 64 bits",
    );
  });
});

describe("VarU64", () => {
  it("round-trips Python's encodings", () => {
    for (const [value, encoded] of VARU64S) {
      const w = new Writer(1);
      w.varu64(value);
      assert.equal(hex(w.finish()), encoded, `write ${value}`);
      const r = new Reader(bytes(encoded));
      assert.equal(readVarU64(r, r.data.length), value, `read ${encoded}`);
      assert.equal(r.pos, encoded.length / 2);
    }
  });

  it("refuses non-canonical and short input with Python's errors", () => {
    const cases: [string, string, string, number][] = [
      ["", "Truncated", "VarU64: input ends", 1],
      ["f8", "Truncated", "VarU64: input ends inside a VarU64", 2],
      ["fa0000", "Truncated", "VarU64: input ends inside a VarU64", 4],
      ["f800", "NonCanonical", "VarU64: 0 encoded in 2 bytes; the shortest form is required", 0],
      ["f8f7", "NonCanonical", "VarU64: 247 encoded in 2 bytes; the shortest form is required", 0],
      ["f900ff", "NonCanonical", "VarU64: 255 encoded in 3 bytes; the shortest form is required", 0],
      [
        "ff00ffffffffffffff",
        "NonCanonical",
        "VarU64: 72057594037927935 encoded in 9 bytes; the shortest form is required",
        0,
      ],
    ];
    for (const [input, name, message, needed] of cases) {
      const data = bytes(input);
      const r = new Reader(data);
      const error = throws(DecodeError, () => readVarU64(r, data.length));
      assert.equal(error.name, name);
      assert.equal(error.message, message);
      assert.equal(r.pos, 0, "a failed read does not move");
      if (error instanceof Truncated) {
        assert.equal(error.needed, needed);
      }
    }
  });

  it("refuses to encode out of range", () => {
    const w = new Writer();
    assert.equal(throws(EncodeError, () => w.varu64(-1n)).message, "VarU64: value -1 out of range");
    assert.equal(
      throws(EncodeError, () => w.varu64(1n << 64n)).message,
      "VarU64: value 18446744073709551616 out of range",
    );
  });
});

// --- the other flavours and binary32 (runtime/_support.py's, byte for byte) -------------------

function roundTrips<T>(
  cases: [T, string][],
  write: (w: Writer, value: T) => void,
  read: (r: Reader, end: number) => T,
): void {
  for (const [value, encoded] of cases) {
    const w = new Writer(1);
    write(w, value);
    assert.equal(hex(w.finish()), encoded, `write ${String(value)}`);
    const r = new Reader(bytes(encoded));
    assert.equal(read(r, r.data.length), value, `read ${encoded}`);
    assert.equal(r.pos, encoded.length / 2);
  }
}

function refuses(
  read: (r: Reader, end: number) => unknown,
  cases: [string, string, string, number][],
): void {
  for (const [input, name, message, needed] of cases) {
    const data = bytes(input);
    const r = new Reader(data);
    const error = throws(DecodeError, () => read(r, data.length));
    assert.equal(error.name, name, input);
    assert.equal(error.message, message, input);
    assert.equal(r.pos, 0, "a failed read does not move");
    if (error instanceof Truncated) assert.equal(error.needed, needed, input);
  }
}

describe("vbi (MQTT Variable Byte Integer)", () => {
  it("round-trips Python's encodings at every size's bounds", () => {
    const cases: [number, string][] = [
      [0, "00"], [127, "7f"], [128, "8001"], [16383, "ff7f"], [16384, "808001"],
      [2097151, "ffff7f"], [2097152, "80808001"], [268435455, "ffffff7f"],
    ];
    roundTrips(cases, (w, v) => w.vbi(v), readVbi);
  });

  it("refuses what Python refuses", () => {
    refuses(readVbi, [
      ["", "Truncated", "variable byte integer: input ends", 1],
      ["ff", "Truncated", "variable byte integer: input ends", 2],
      ["8000", "NonCanonical", "variable byte integer: not in its shortest form", 0],
      ["ff8000", "NonCanonical", "variable byte integer: not in its shortest form", 0],
      ["ffffff80", "InvalidValue", "variable byte integer: longer than 4 bytes", 0],
      ["8080808001", "InvalidValue", "variable byte integer: longer than 4 bytes", 0],
    ]);
    const w = new Writer();
    const negative = throws(EncodeError, () => w.vbi(-1));
    assert.equal(negative.message, "variable byte integer: negative value -1");
    assert.equal(
      throws(EncodeError, () => w.vbi(268435456)).message,
      "variable byte integer: 268435456 exceeds 268435455",
    );
  });
});

describe("zigzag (protobuf sint64)", () => {
  it("round-trips Python's encodings", () => {
    const cases: [bigint, string][] = [
      [0n, "00"], [-1n, "01"], [1n, "02"], [-2n, "03"],
      [(1n << 63n) - 1n, "feffffffffffffffff01"], [-(1n << 63n), "ffffffffffffffffff01"],
    ];
    roundTrips(cases, (w, v) => w.zigzag(v), readZigzag);
  });

  it("refuses what Python refuses", () => {
    refuses(readZigzag, [
      ["8100", "NonCanonical", "varint: overlong encoding (a trailing 0x00 group)", 0],
    ]);
    const w = new Writer();
    assert.equal(
      throws(EncodeError, () => w.zigzag(1n << 63n)).message,
      "zigzag: value 9223372036854775808 does not fit 64 signed bits",
    );
  });
});

describe("lenenc (MySQL length-encoded integer)", () => {
  it("round-trips Python's encodings at every form's bounds", () => {
    const cases: [bigint, string][] = [
      [0n, "00"], [250n, "fa"], [251n, "fcfb00"], [65535n, "fcffff"], [65536n, "fd000001"],
      [16777215n, "fdffffff"], [16777216n, "fe0000000100000000"],
      [(1n << 64n) - 1n, "feffffffffffffffff"],
    ];
    roundTrips(cases, (w, v) => w.lenenc(v), readLenenc);
    const r = new Reader(bytes("fb"));
    assert.equal(readLenencOrNull(r, 1), -1n, "NULL");
    assert.equal(r.pos, 1);
  });

  it("refuses what Python refuses", () => {
    refuses(readLenenc, [
      ["", "Truncated", "length-encoded integer: input ends", 1],
      ["fc05", "Truncated", "length-encoded integer: input ends inside it", 3],
      ["fcfa00", "NonCanonical", "length-encoded integer: 250 in 3 bytes is not shortest", 0],
      ["fdffff00", "NonCanonical", "length-encoded integer: 65535 in 4 bytes is not shortest", 0],
      ["ff", "InvalidValue", "length-encoded integer: 0xFF is not a valid first byte", 0],
      ["fb", "InvalidValue", "length-encoded integer: NULL (0xFB) where a number is required", 0],
    ]);
    const w = new Writer();
    const negative = throws(EncodeError, () => w.lenenc(-1n));
    assert.equal(negative.message, "length-encoded integer: value -1 out of range");
  });
});

describe("binary32 and floor division", () => {
  const f64 = (text: string): number => new DataView(bytes(text).buffer).getFloat64(0);
  const f64Hex = (value: number): string => {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, value);
    return hex(new Uint8Array(view.buffer));
  };

  it("keeps NaN payloads bit for bit, as Python's f32_from_bits / f32_bits", () => {
    const cases: [number, string][] = [
      [0x7fa00001, "7ff4000020000000"], // signalling: DataView.getFloat32 would quiet it
      [0xffc12345, "fff82468a0000000"],
      [0x7f800001, "7ff0000020000000"],
    ];
    for (const [bits, double] of cases) {
      assert.equal(f64Hex(f32FromBits(bits)), double);
      assert.equal(f32Bits(f32FromBits(bits)), bits);
    }
    assert.equal(f32Bits(f64("7ff0000000000001")), 0x7fc00000, "a payload only in the low bits: quiet");
    assert.ok(Object.is(f32FromBits(0x80000000), -0));
    assert.equal(f32Bits(-0), 0x80000000);
    assert.equal(f32Bits(3.4028235e38), 0x7f7fffff, "rounds to the largest binary32");
  });

  it("refuses what binary32 cannot hold, as Python", () => {
    assert.equal(throws(EncodeError, () => f32Bits(1e39)).message, "binary32: 1e+39 is out of range");
    assert.equal(
      throws(EncodeError, () => f32Bits(3.4028235677973366e38)).message,
      "binary32: 3.4028235677973366e+38 is out of range",
      "half way to 2^128 rounds up: out of range",
    );
    assert.equal(f32Bits(Infinity), 0x7f800000);
  });

  it("rounds down as Python's //", () => {
    const cases: [bigint, bigint, bigint][] = [
      [7n, 2n, 3n], [-7n, 2n, -4n], [7n, -2n, -4n], [-7n, -2n, 3n], [-6n, 3n, -2n],
    ];
    for (const [a, b, q] of cases) assert.equal(floorDiv(a, b), q, `${a} // ${b}`);
  });
});

describe("utf8", () => {
  it("decodes strictly, naming the field and Python's reason", () => {
    const cases: [string, string][] = [
      ["c328", "invalid continuation byte"],
      ["c3", "unexpected end of data"],
      ["eda080", "invalid continuation byte"],
      ["f09f98", "unexpected end of data"],
      ["80", "invalid start byte"],
    ];
    for (const [input, reason] of cases) {
      const error = throws(InvalidString, () => utf8(bytes(input), "X.name"));
      assert.equal(error.message, `X.name: not UTF-8 (${reason})`);
    }
  });

  it("keeps a leading BOM, as Python's utf-8 codec does", () => {
    assert.equal(utf8(bytes("efbbbf41"), "x"), "\ufeffA");
    assert.equal(hex(utf8Bytes("h\u00e9\u20ac")), "68c3a9e282ac");
  });
});

// --- Writer ---------------------------------------------------------------------------------

describe("Writer", () => {
  it("writes big-endian integers and grows from a tiny buffer", () => {
    const w = new Writer(1);
    w.u8(0xab);
    w.u16(0x1234);
    w.u24(0xabcdef);
    w.u32(0xdeadbeef);
    w.i8(-1);
    w.i16(-2);
    w.i32(-3);
    w.u64(0x0102030405060708n);
    w.i64(-1n);
    w.bytes(bytes("cafe"));
    assert.equal(
      hex(w.finish()),
      "ab" + "1234" + "abcdef" + "deadbeef" + "ff" + "fffe" + "fffffffd" +
        "0102030405060708" + "ffffffffffffffff" + "cafe",
    );
    const big = new Uint8Array(100_000).fill(7);
    w.bytes(big);
    assert.equal(w.pos, 35 + 100_000);
    assert.equal(w.finish()[35 + 99_999], 7);
  });

  it("patches reserved room once the length is known", () => {
    const w = new Writer(2);
    const at8 = w.reserve(1);
    const at16 = w.reserve(2);
    const at24 = w.reserve(3);
    const at32 = w.reserve(4);
    w.bytes(new Uint8Array(300));
    w.patchU8(at8, 0x11);
    w.patchU16(at16, 0x2233);
    w.patchU24(at24, 0x445566);
    w.patchU32(at32, 0x778899aa);
    const out = w.finish();
    assert.equal(out.length, 310);
    assert.equal(hex(out.subarray(0, 10)), "11223344556677" + "8899aa");
  });

  it("finish() of a new Writer copies", () => {
    const w = new Writer(16);
    w.u8(1);
    const first = w.finish();
    w.pos = 0;
    w.u8(2);
    assert.equal(hex(first), "01");
  });

  it("shared(): each finish() is a view that later writes never touch", () => {
    const w = Writer.shared();
    w.u8(1);
    const first = w.finish();
    const again = Writer.shared();
    assert.equal(again, w);
    assert.equal(again.length, 0);
    again.u8(2);
    const second = again.finish();
    assert.equal(hex(first), "01");
    assert.equal(hex(second), "02");
    assert.equal(first.buffer, second.buffer); // one slab, no copy
  });

  it("shared(): a value that outgrows the slab moves, with its reserved room", () => {
    const kept: Uint8Array<ArrayBuffer>[] = [];
    for (let i = 0; i < 2000; i++) {
      const w = Writer.shared();
      const at = w.reserve(3);
      w.bytes(new Uint8Array(100).fill(i & 0xff));
      w.patchU24(at, 100);
      kept.push(w.finish());
    }
    kept.forEach((out, i) => {
      assert.equal(out.length, 103);
      assert.equal(hex(out.subarray(0, 3)), "000064");
      assert.equal(out[102], i & 0xff);
    });
  });
});

// --- stream decoders ------------------------------------------------------------------------

/** A toy codec: a frame is its bytes; a first byte 0xff is invalid; 0xee leaves a byte. */
function toyDecodeAt(data: Uint8Array<ArrayBuffer>, pos: number, end: number): [string, number] {
  if (data[pos] === 0xff) {
    throw new InvalidValue("toy: 0xff");
  }
  if (data[pos] === 0xee) {
    return [hex(data.subarray(pos, end - 1)), end - 1];
  }
  return [hex(data.subarray(pos, end)), end];
}

describe("LengthPrefixedDecoder", () => {
  const stream = bytes("000002" + "0102" + "000000" + "000003" + "030405");

  it("splits frames from one chunk and from single bytes", () => {
    const whole = new LengthPrefixedDecoder(toyDecodeAt, 3, 100);
    assert.deepEqual(whole.feed(stream), ["0102", "", "030405"]);
    assert.equal(whole.buffered, 0);
    const split = new LengthPrefixedDecoder(toyDecodeAt, 3, 100);
    const frames: string[] = [];
    for (let i = 0; i < stream.length; i++) {
      frames.push(...split.feed(stream.subarray(i, i + 1)));
    }
    assert.deepEqual(frames, ["0102", "", "030405"]);
  });

  it("holds a partial frame and counts what it holds", () => {
    const d = new LengthPrefixedDecoder(toyDecodeAt, 4, 100);
    assert.deepEqual(d.feed(bytes("0000000501")), []);
    assert.equal(d.buffered, 5);
    assert.deepEqual(d.feed(bytes("0203")), []);
    assert.deepEqual(d.feed(bytes("0405" + "00000001")), ["0102030405"]);
    assert.equal(d.buffered, 4);
    assert.deepEqual(d.feed(bytes("09")), ["09"]);
  });

  it("refuses a declared length above the limit before the frame is buffered", () => {
    const d = new LengthPrefixedDecoder(toyDecodeAt, 3, 10, { maxFrameSize: 4 });
    const error = throws(FrameTooLarge, () => d.feed(bytes("000001aa" + "000005")));
    assert.equal(error.message, "frame declares 5 bytes; the limit is 4");
    assert.deepEqual(error.frames, ["aa"]);
    // broken: the same error again
    assert.equal(throws(FrameTooLarge, () => d.feed(bytes("00"))), error);
  });

  it("consumes a malformed frame and goes on", () => {
    const d = new LengthPrefixedDecoder(toyDecodeAt, 3, 100);
    const error = throws(InvalidValue, () => d.feed(bytes("00000101" + "000001ff" + "000001")));
    assert.deepEqual(error.frames, ["01"]);
    assert.deepEqual(d.feed(bytes("02")), ["02"]);
    const trailing = throws(TrailingBytes, () => d.feed(bytes("000002ee00")));
    assert.equal(trailing.message, "1 bytes after the end of a frame");
  });

  it("passes ctx and sender and reports each frame's size", () => {
    const seen: unknown[] = [];
    const d = new LengthPrefixedDecoder<string, { n: number }>(
      (data, pos, end, ctx, sender) => {
        seen.push([ctx?.n, sender]);
        return [hex(data.subarray(pos, end)), end];
      },
      3,
      100,
      { ctx: { n: 1 }, sender: "server" },
    );
    const sizes: number[] = [];
    d.afterFrame = (_frame, size) => sizes.push(size);
    d.feed(bytes("00000201020000010a"));
    assert.deepEqual(seen, [[1, "server"], [1, "server"]]);
    assert.deepEqual(sizes, [2, 1]);
  });
});

/** A toy self-delimiting codec: a length byte, then that many bytes. */
function lengthByteDecodeAt(data: Uint8Array<ArrayBuffer>, pos: number, end: number): [string, number] {
  if (pos >= end) {
    throw new Truncated("toy: input ends", pos + 1);
  }
  if (data[pos] === 0xff) {
    throw new InvalidValue("toy: 0xff");
  }
  const stop = pos + 1 + data[pos]!;
  if (stop > end) {
    throw new Truncated("toy: input ends inside a frame", stop);
  }
  return [hex(data.subarray(pos + 1, stop)), stop];
}

describe("SelfDelimitingDecoder", () => {
  it("splits frames across any chunking", () => {
    const stream = bytes("020102" + "00" + "03030405");
    for (let step = 1; step <= stream.length; step++) {
      const d = new SelfDelimitingDecoder(lengthByteDecodeAt, 100);
      const frames: string[] = [];
      for (let i = 0; i < stream.length; i += step) {
        frames.push(...d.feed(stream.subarray(i, i + step)));
      }
      assert.deepEqual(frames, ["0102", "", "030405"], `step ${step}`);
      assert.equal(d.buffered, 0);
    }
  });

  it("fails once a frame declares more than the limit, before holding it", () => {
    const d = new SelfDelimitingDecoder(lengthByteDecodeAt, 100, { maxFrameSize: 5 });
    assert.deepEqual(d.feed(bytes("0301")), []);
    assert.equal(d.buffered, 2);
    const error = throws(FrameTooLarge, () => d.feed(bytes("0203" + "0901")));
    assert.equal(error.message, "a frame needs more than the limit of 5 bytes");
    assert.deepEqual(error.frames, ["010203"]);
    assert.equal(throws(FrameTooLarge, () => d.feed(bytes("00"))), error);
  });

  it("stays broken after a malformed frame", () => {
    const d = new SelfDelimitingDecoder(lengthByteDecodeAt, 100);
    const error = throws(InvalidValue, () => d.feed(bytes("0101ff")));
    assert.deepEqual(error.frames, ["01"]);
    assert.equal(throws(InvalidValue, () => d.feed(bytes("00"))), error);
  });
});

describe("MsgpackDecoder", () => {
  const frames = [[1, "a", bytes("0102")], [2, 2n ** 63n], []];
  const stream = new Uint8Array(frames.flatMap((f) => Array.from(mpPack(f))));

  it("splits MessagePack objects across any chunking", () => {
    for (let step = 1; step <= stream.length; step++) {
      const d = new MsgpackDecoder((obj) => obj, 100);
      const out: unknown[] = [];
      const sizes: number[] = [];
      d.afterFrame = (_frame, size) => sizes.push(size);
      for (let i = 0; i < stream.length; i += step) {
        out.push(...d.feed(stream.subarray(i, i + step)));
      }
      assert.deepEqual(out, frames, `step ${step}`);
      assert.deepEqual(sizes, frames.map((f) => mpPack(f).length));
    }
  });

  it("refuses an object that cannot fit the limit, and a too long array header", () => {
    const d = new MsgpackDecoder((obj) => obj, 100, { maxFrameSize: 8 });
    const error = throws(FrameTooLarge, () => d.feed(bytes("01" + "c40a00")));
    assert.equal(error.message, "a MessagePack frame exceeds the limit of 8");
    assert.deepEqual(error.frames, [1]);
    const arrays = new MsgpackDecoder((obj) => obj, 10);
    const long = throws(MalformedMsgpack, () => arrays.feed(bytes("dc0020")));
    assert.equal(long.message, "not MessagePack: 32 exceeds max_array_len(10)");
  });

  it("hands objects to fromMsgpack with ctx; its DecodeErrors break the stream", () => {
    const d = new MsgpackDecoder<number, { bad: number }>(
      (obj, ctx) => {
        const n = mpInt(obj, 0, 100, "toy");
        if (n === ctx?.bad) {
          throw new InvalidValue("toy: bad");
        }
        return n;
      },
      100,
      { ctx: { bad: 3 } },
    );
    assert.deepEqual(d.feed(bytes("0102")), [1, 2]);
    const error = throws(InvalidValue, () => d.feed(bytes("0403")));
    assert.deepEqual(error.frames, [4]);
    assert.equal(throws(InvalidValue, () => d.feed(bytes("01"))), error);
  });
});

// --- MessagePack ----------------------------------------------------------------------------

describe("mpPack", () => {
  // msgpack.packb(value, use_bin_type=True).hex() in Python (big ones: sha256).
  it("is byte-identical to Python's msgpack.packb for integers", () => {
    const ints = [
      0, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 53, 2n ** 64n - 1n, -1, -32,
      -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1, -(2n ** 63n),
    ];
    assert.equal(
      hex(mpPack(ints)),
      "dc0015007fcc80ccffcd0100cdffffce00010000ceffffffffcf0000000100000000cf0020000000000000" +
        "cfffffffffffffffffffe0d0dfd080d1ff7fd18000d2ffff7fffd280000000d3ffffffff7fffffffd3" +
        "8000000000000000",
    );
    // bigints and numbers give the same bytes
    assert.equal(hex(mpPack(ints.map((v) => BigInt(v)))), hex(mpPack(ints)));
  });

  it("is byte-identical for str, bin, arrays and a frame", () => {
    const strs = ["", "a", "x".repeat(31), "x".repeat(32), "x".repeat(255), "x".repeat(256), "héllo €𝄞"];
    assert.equal(sha256(mpPack(strs)), "370a5de00945b4d1897fc20618e0766892f9cc796576ad369a53713d4374845a");
    const bins = [bytes(""), bytes("00ff"), new Uint8Array(256).fill(0x79), new Uint8Array(65536).fill(0x7a)];
    assert.equal(sha256(mpPack(bins)), "8a1c0881e1922eb871dbc46d0beac33ff55a4d45e2ad217648ea2ca9b81e3a37");
    const frame = [5, 2n ** 40n, "subscriber", bytes("010203"), [1, 2, 3], null, true, false];
    assert.equal(hex(mpPack(frame)), "9805cf0000010000000000aa73756273637269626572c40301020393010203c0c3c2");
    const nested = [[[]], [bytes(""), ""], Array.from({ length: 16 }, (_, i) => i)];
    assert.equal(hex(mpPack(nested)), "93919092c400a0dc0010000102030405060708090a0b0c0d0e0f");
  });

  it("refuses integers msgpack cannot carry", () => {
    throws(EncodeError, () => mpPack([2n ** 64n]));
    throws(EncodeError, () => mpPack(-(2n ** 63n) - 1n));
  });
});

describe("mpUnpack", () => {
  it("reverses mpPack (ints as numbers while safe, else bigint; bin as views)", () => {
    const data = bytes("9805cf0000010000000000aa73756273637269626572c40301020393010203c0c3c2");
    const value = mpUnpack(data);
    assert.deepEqual(value, [5, 2 ** 40, "subscriber", bytes("010203"), [1, 2, 3], null, true, false]);
    assert.equal(mpUnpack(bytes("cfffffffffffffffff")), 2n ** 64n - 1n);
    assert.equal(mpUnpack(bytes("d38000000000000000")), -(2n ** 63n));
    assert.deepEqual(mpUnpack(bytes("cb3ff0000000000000")), new MpFloat(1));
    assert.deepEqual(mpUnpack(bytes("82a16101a16102")), new Map([["a", 2]]));
  });

  it("refuses what Python's msgpack_unpack refuses, with its messages", () => {
    const cases: [string, string, string][] = [
      ["", "MalformedMsgpack", "not MessagePack: Unpack failed: incomplete input"],
      ["9201", "MalformedMsgpack", "not MessagePack: Unpack failed: incomplete input"],
      ["c4ff6162", "MalformedMsgpack", "not MessagePack: Unpack failed: incomplete input"],
      ["ddffffffff", "MalformedMsgpack", "not MessagePack: 4294967295 exceeds max_array_len(5)"],
      ["c1", "MalformedMsgpack", "not MessagePack: "],
      ["0102", "TrailingBytes", "bytes after one MessagePack object"],
      [
        "a2c328",
        "MalformedMsgpack",
        "not MessagePack: 'utf-8' codec can't decode byte 0xc3 in position 0: invalid continuation byte",
      ],
      [
        "a3f09f98",
        "MalformedMsgpack",
        "not MessagePack: 'utf-8' codec can't decode bytes in position 0-2: unexpected end of data",
      ],
      [
        "a3e28228",
        "MalformedMsgpack",
        "not MessagePack: 'utf-8' codec can't decode bytes in position 0-1: invalid continuation byte",
      ],
      [
        "810102",
        "MalformedMsgpack",
        "not MessagePack: int is not allowed for map key when strict_map_key=True",
      ],
      [
        "81c002",
        "MalformedMsgpack",
        "not MessagePack: NoneType is not allowed for map key when strict_map_key=True",
      ],
    ];
    for (const [input, name, message] of cases) {
      const error = throws(DecodeError, () => mpUnpack(bytes(input)));
      assert.equal(error.name, name, input);
      assert.equal(error.message, message, input);
    }
  });

  it("nests 1024 containers, not 1025 (the C unpacker's stack)", () => {
    const nested = (n: number) => bytes("91".repeat(n) + "01");
    assert.ok(Array.isArray(mpUnpack(nested(1024))));
    assert.equal(throws(MalformedMsgpack, () => mpUnpack(nested(1025))).message, "not MessagePack: ");
  });
});

describe("mp checks", () => {
  it("accept the right types and ranges", () => {
    assert.equal(mpInt(5, 0, 10, "f"), 5);
    assert.equal(mpInt(5n, 0, 10, "f"), 5);
    assert.equal(mpBigInt(2 ** 40, 0n, 2n ** 64n - 1n, "f"), 2n ** 40n);
    assert.equal(mpBigInt(2n ** 64n - 1n, 0n, 2n ** 64n - 1n, "f"), 2n ** 64n - 1n);
    assert.equal(mpBool(true, "f"), true);
    assert.deepEqual(mpBytes(bytes("01"), "f"), bytes("01"));
    assert.equal(mpStr("s", "f"), "s");
    assert.deepEqual(mpList([1], "f"), [1]);
  });

  it("refuse with Python's messages and classes", () => {
    const cases: [() => unknown, string, string][] = [
      [() => mpInt(true, 0, 10, "A.b"), "MalformedMsgpack", "A.b: expected an integer, got bool"],
      [() => mpInt(new MpFloat(1), 0, 10, "A.b"), "MalformedMsgpack", "A.b: expected an integer, got float"],
      [() => mpInt(11, 0, 10, "A.b"), "InvalidValue", "A.b: 11 is outside 0..10"],
      [
        () => mpBigInt(-1n, 0n, 2n ** 64n - 1n, "A.b"),
        "InvalidValue",
        "A.b: -1 is outside 0..18446744073709551615",
      ],
      [() => mpBigInt("1", 0n, 1n, "A.b"), "MalformedMsgpack", "A.b: expected an integer, got str"],
      [() => mpBool(1, "A.b"), "MalformedMsgpack", "A.b: expected a boolean, got int"],
      [() => mpBytes("x", "A.b"), "MalformedMsgpack", "A.b: expected bin, got str"],
      [() => mpStr(bytes("78"), "A.b"), "MalformedMsgpack", "A.b: expected str, got bytes"],
      [() => mpStr(null, "A.b"), "MalformedMsgpack", "A.b: expected str, got NoneType"],
      [() => mpList(new Map(), "A.b"), "MalformedMsgpack", "A.b: expected an array, got dict"],
    ];
    for (const [call, name, message] of cases) {
      const error = throws(DecodeError, call);
      assert.equal(error.name, name);
      assert.equal(error.message, message);
    }
  });
});

// --- machines -------------------------------------------------------------------------------

class Open {
  constructor(readonly id = 0) {}
}
class Data {
  constructor(readonly last = false) {}
}
class Ping {}

enum ToyState {
  IDLE = "idle",
  OPEN = "open",
  CLOSED = "closed",
}

const isLast = (frame: Data): boolean => frame.last;
const mayOpen = (frame: Open): boolean => frame.id > 0;

class ToyMachine extends StateMachine<ToyState> {
  static readonly NAME = "toy";
  static readonly SCOPE = "stream";
  static readonly ROLES: readonly string[] = ["client", "server"];
  static readonly INITIAL: Readonly<Record<string, ToyState>> = {
    client: ToyState.IDLE,
    server: ToyState.IDLE,
  };
  static readonly TERMINAL: ReadonlySet<ToyState> = new Set([ToyState.CLOSED]);
  static readonly SEND: Readonly<Record<string, Table<ToyState>>> = {
    client: table<ToyState>([
      [ToyState.IDLE, Open, [[mayOpen, ToyState.OPEN]]],
      [ToyState.IDLE, ANY, [[null, new Illegal("open first", "Toy spec 1.2")]]],
      [ToyState.OPEN, Data, [[isLast, ToyState.CLOSED], [null, ToyState.OPEN]]],
      [ToyState.OPEN, Ping, [[null, IGNORE]]],
    ]),
    server: table<ToyState>([]),
  };
  static readonly RECEIVE: Readonly<Record<string, Table<ToyState>>> = {
    client: table<ToyState>([[ToyState.CLOSED, Data, [[null, IGNORE]]]]),
    server: table<ToyState>([
      [ToyState.IDLE, Open, [[null, ToyState.OPEN]]],
      [ToyState.OPEN, Data, [[isLast, ToyState.CLOSED], [null, ToyState.OPEN]]],
    ]),
  };
}

class ReusedMachine extends StateMachine<ToyState> {
  static readonly NAME = "reused";
  static readonly SCOPE = "subscription";
  static readonly ROLES: readonly string[] = ["client"];
  static readonly INITIAL: Readonly<Record<string, ToyState>> = { client: ToyState.IDLE };
  static readonly TERMINAL: ReadonlySet<ToyState> = new Set();
  static readonly SEND: Readonly<Record<string, Table<ToyState>>> = {
    client: table<ToyState>([
      [ToyState.IDLE, Open, [[null, ToyState.OPEN]]],
      [ToyState.OPEN, Data, [[null, ToyState.IDLE]]],
    ]),
  };
  static readonly RECEIVE: Readonly<Record<string, Table<ToyState>>> = { client: table([]) };
}

describe("StateMachine", () => {
  it("moves by the first row whose guard accepts, ignores, terminates", () => {
    const m = new ToyMachine("client");
    assert.equal(m.state, ToyState.IDLE);
    assert.equal(m.send(new Open(1)), ToyState.OPEN);
    assert.equal(m.send(new Ping()), ToyState.OPEN, "ignore: the state stays");
    assert.equal(m.send(new Data(false)), ToyState.OPEN);
    assert.ok(!m.terminated && !m.vacant);
    assert.equal(m.send(new Data(true)), ToyState.CLOSED);
    assert.ok(m.terminated && m.vacant);
    assert.equal(m.receive(new Data()), IGNORE);
    assert.equal(String(m), "<ToyMachine role=client state=closed>");
  });

  it("throws IllegalSend with Python's message and fields", () => {
    const m = new ToyMachine("client");
    // a guard that refuses falls through to the ANY rows
    const refused = throws(IllegalSend, () => m.send(new Open(0)));
    assert.equal(refused.message, "open first (send Open when role=client and state=idle (machine toy))");
    assert.deepEqual(
      [refused.machine, refused.role, refused.state, refused.frame, refused.spec],
      ["toy", "client", "idle", "Open", "Toy spec 1.2"],
    );
    assert.ok(!m.allowsSend(new Data()));
    m.send(new Open(1));
    const none = throws(IllegalSend, () => m.send(new Open(2)));
    assert.equal(none.message, "can't send Open when role=client and state=open (machine toy)");
    assert.equal(none.spec, "");
    assert.equal(m.state, ToyState.OPEN, "a refused send does not move");
  });

  it("throws UnexpectedFrame for what the peer may not send", () => {
    const m = new ToyMachine("server");
    const error = throws(UnexpectedFrame, () => m.receive(new Data()));
    assert.equal(error.message, "can't receive Data when role=server and state=idle (machine toy)");
    assert.ok(error instanceof RemoteProtocolError);
    assert.equal(m.receive(new Open()), ToyState.OPEN);
  });

  it("knows its roles and starts where asked", () => {
    assert.throws(() => new ToyMachine("broker"), RangeError);
    assert.equal(new ToyMachine("client", ToyState.CLOSED).terminated, true);
  });

  it("is vacant back in its initial state when it has no terminal state", () => {
    const m = new ReusedMachine("client");
    assert.ok(m.vacant);
    m.send(new Open());
    assert.ok(!m.vacant && !m.terminated);
    m.send(new Data());
    assert.ok(m.vacant);
  });

  it("checkAll / sendAll: all or none", () => {
    const a = new ToyMachine("client");
    const b = new ReusedMachine("client");
    sendAll(new Open(1), a, b);
    assert.deepEqual([a.state, b.state], [ToyState.OPEN, ToyState.OPEN]);
    a.send(new Data(true));
    throws(IllegalSend, () => sendAll(new Data(), b, a));
    assert.equal(b.state, ToyState.OPEN, "nothing moved");
    throws(IllegalSend, () => checkAll(new Data(), a));
  });

  it("refuses a table with two entries for one (state, class)", () => {
    assert.throws(
      () => table<ToyState>([[ToyState.IDLE, Open, []], [ToyState.IDLE, Open, []]]),
      /two entries for \(idle, Open\)/,
    );
  });
});
