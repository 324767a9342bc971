// Built by esbuild from wirestream/apps/demo_web/live.ts (make demo-web). DO NOT EDIT.
"use strict";
(() => {
  // runtime/typescript/dist/errors.js
  var ProtocolError = class extends Error {
    name = "ProtocolError";
    /**
     * When an engine's `receiveData` throws: the events of the frames it handled before
     * the violation, which the caller still delivers ("nothing is lost").
     */
    events = [];
    constructor(message = "", options) {
      super(message, options);
    }
  };
  var LocalProtocolError = class extends ProtocolError {
    name = "LocalProtocolError";
  };
  var RemoteProtocolError = class extends ProtocolError {
    name = "RemoteProtocolError";
  };
  var EncodeError = class extends LocalProtocolError {
    name = "EncodeError";
  };
  var DecodeError = class extends RemoteProtocolError {
    name = "DecodeError";
    frames;
    constructor(message = "", frames, options) {
      super(message, options);
      this.frames = frames ?? [];
    }
  };
  var Truncated = class extends DecodeError {
    name = "Truncated";
    needed;
    constructor(message = "", needed = 0) {
      super(message);
      this.needed = needed;
    }
  };
  var TrailingBytes = class extends DecodeError {
    name = "TrailingBytes";
  };
  var FrameTooLarge = class extends DecodeError {
    name = "FrameTooLarge";
  };
  var UnknownFrameType = class extends DecodeError {
    name = "UnknownFrameType";
  };
  var InvalidValue = class extends DecodeError {
    name = "InvalidValue";
  };
  var InvalidString = class extends InvalidValue {
    name = "InvalidString";
  };
  var IllegalSend = class extends LocalProtocolError {
    name = "IllegalSend";
    machine;
    role;
    state;
    frame;
    spec;
    constructor(message = "", fields = {}) {
      super(message);
      this.machine = fields.machine ?? "";
      this.role = fields.role ?? "";
      this.state = fields.state ?? "";
      this.frame = fields.frame ?? "";
      this.spec = fields.spec ?? "";
    }
  };
  var UnexpectedFrame = class extends RemoteProtocolError {
    name = "UnexpectedFrame";
    machine;
    role;
    state;
    frame;
    spec;
    constructor(message = "", fields = {}) {
      super(message);
      this.machine = fields.machine ?? "";
      this.role = fields.role ?? "";
      this.state = fields.state ?? "";
      this.frame = fields.frame ?? "";
      this.spec = fields.spec ?? "";
    }
  };
  var DemandExceeded = class extends LocalProtocolError {
    name = "DemandExceeded";
  };
  var InvalidGrant = class extends LocalProtocolError {
    name = "InvalidGrant";
  };
  var PeerExceededDemand = class extends RemoteProtocolError {
    name = "PeerExceededDemand";
  };
  var StreamCancelled = class extends ProtocolError {
    name = "StreamCancelled";
  };
  var StreamError = class extends RemoteProtocolError {
    name = "StreamError";
  };
  var ReassemblyLimitExceeded = class extends RemoteProtocolError {
    name = "ReassemblyLimitExceeded";
  };
  var TransportError = class extends ProtocolError {
    name = "TransportError";
  };
  var ConnectionLost = class extends TransportError {
    name = "ConnectionLost";
    reason;
    constructor(message = "connection lost", reason = "eof") {
      super(message);
      this.reason = reason;
    }
  };
  var TransportTimeout = class extends TransportError {
    name = "TransportTimeout";
  };
  var HandshakeTimeout = class extends TransportTimeout {
    name = "HandshakeTimeout";
    limit;
    constructor(message, limit = null) {
      super(message);
      this.limit = limit;
    }
  };
  var IdleTimeout = class extends TransportTimeout {
    name = "IdleTimeout";
    limit;
    constructor(message, limit = null) {
      super(message);
      this.limit = limit;
    }
  };
  var FrameTimeout = class extends IdleTimeout {
    name = "FrameTimeout";
  };

  // runtime/typescript/dist/wire.js
  var U64_MAX = 0xffffffffffffffffn;
  var Reader = class {
    data;
    pos;
    _view;
    constructor(data, pos = 0) {
      this.data = data;
      this.pos = pos;
      this._view = void 0;
    }
    /** Spans exactly `data`; made on first use (only 64-bit reads need it). */
    get view() {
      let view = this._view;
      if (view === void 0) {
        view = new DataView(this.data.buffer, this.data.byteOffset, this.data.byteLength);
        this._view = view;
      }
      return view;
    }
  };
  var VBI_MAX = 268435455;
  var LENENC_SIZES = {
    252: [2, 0xfbn],
    253: [3, 1n << 16n],
    254: [8, 1n << 24n]
  };
  var SCRATCH = /* @__PURE__ */ new DataView(new ArrayBuffer(8));
  function f32Bits(value) {
    if (Number.isNaN(value)) {
      SCRATCH.setFloat64(0, value);
      const high = SCRATCH.getUint32(0);
      const low = SCRATCH.getUint32(4);
      const fraction = (high & 1048575) << 3 | low >>> 29 || 4194304;
      return (high & 2147483648 | 2139095040 | fraction) >>> 0;
    }
    if (!Number.isFinite(Math.fround(value)) && Number.isFinite(value)) {
      throw new EncodeError(`binary32: ${value} is out of range`);
    }
    SCRATCH.setFloat32(0, value);
    return SCRATCH.getUint32(0);
  }
  var VARU64_MIN = [
    0n,
    248n,
    1n << 8n,
    1n << 16n,
    1n << 24n,
    1n << 32n,
    1n << 40n,
    1n << 48n,
    1n << 56n
  ];
  var DECODER = /* @__PURE__ */ new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  var ENCODER = /* @__PURE__ */ new TextEncoder();
  function utf8(data, what) {
    try {
      return DECODER.decode(data);
    } catch {
      const bad = utf8Error(data);
      throw new InvalidString(`${what}: not UTF-8 (${bad === null ? "invalid data" : bad.reason})`);
    }
  }
  function utf8Bytes(text2) {
    return ENCODER.encode(text2);
  }
  function utf8Error(data) {
    const n = data.length;
    let i = 0;
    while (i < n) {
      const lead = data[i];
      if (lead < 128) {
        i += 1;
        continue;
      }
      let count;
      let low = 128;
      let high = 191;
      if (lead >= 194 && lead <= 223) {
        count = 1;
      } else if (lead >= 224 && lead <= 239) {
        count = 2;
        if (lead === 224)
          low = 160;
        else if (lead === 237)
          high = 159;
      } else if (lead >= 240 && lead <= 244) {
        count = 3;
        if (lead === 240)
          low = 144;
        else if (lead === 244)
          high = 143;
      } else {
        return { start: i, end: i + 1, reason: "invalid start byte" };
      }
      for (let k = 1; k <= count; k++) {
        if (i + k >= n) {
          return { start: i, end: i + k, reason: "unexpected end of data" };
        }
        const byte = data[i + k];
        if (byte < low || byte > high) {
          return { start: i, end: i + k, reason: "invalid continuation byte" };
        }
        low = 128;
        high = 191;
      }
      i += count + 1;
    }
    return null;
  }
  function frameClassName(cls) {
    const name = cls.NAME;
    if (typeof name === "string") {
      return name;
    }
    return typeof cls === "function" ? cls.name : "object";
  }
  function frameName(frame) {
    return frameClassName(frame.constructor);
  }
  var SLAB_SIZE = 64 * 1024;
  var Writer = class _Writer {
    buf;
    view;
    pos;
    /** Where the value being written starts in `buf`: 0, except in the pooled writer. */
    start;
    pooled;
    constructor(capacity = 256, pooled = false) {
      this.buf = new Uint8Array(Math.max(capacity, 16));
      this.view = new DataView(this.buf.buffer);
      this.pos = 0;
      this.start = 0;
      this.pooled = pooled;
    }
    static sharedWriter;
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
    static shared() {
      let writer = _Writer.sharedWriter;
      if (writer === void 0 || writer.buf.byteLength === 0) {
        writer = new _Writer(SLAB_SIZE, true);
        _Writer.sharedWriter = writer;
      }
      writer.pos = writer.start;
      return writer;
    }
    /** Bytes written since `start`. */
    get length() {
      return this.pos - this.start;
    }
    /** Make room for `n` more bytes (doubling, so a frame costs amortised linear time). */
    ensure(n) {
      if (this.pos + n > this.buf.length) {
        this.grow(n);
      }
    }
    grow(n) {
      const used = this.pos - this.start;
      const grown = new Uint8Array(Math.max(this.pooled ? SLAB_SIZE : 0, (used + n) * 2));
      grown.set(this.buf.subarray(this.start, this.pos));
      this.buf = grown;
      this.view = new DataView(grown.buffer);
      this.start = 0;
      this.pos = used;
    }
    u8(v) {
      this.ensure(1);
      this.buf[this.pos++] = v;
    }
    u16(v) {
      this.ensure(2);
      this.view.setUint16(this.pos, v);
      this.pos += 2;
    }
    u24(v) {
      this.ensure(3);
      const buf = this.buf;
      const pos = this.pos;
      buf[pos] = v >>> 16;
      buf[pos + 1] = v >>> 8;
      buf[pos + 2] = v;
      this.pos = pos + 3;
    }
    u32(v) {
      this.ensure(4);
      this.view.setUint32(this.pos, v);
      this.pos += 4;
    }
    i8(v) {
      this.ensure(1);
      this.view.setInt8(this.pos, v);
      this.pos += 1;
    }
    i16(v) {
      this.ensure(2);
      this.view.setInt16(this.pos, v);
      this.pos += 2;
    }
    i32(v) {
      this.ensure(4);
      this.view.setInt32(this.pos, v);
      this.pos += 4;
    }
    u64(v) {
      this.ensure(8);
      this.view.setBigUint64(this.pos, v);
      this.pos += 8;
    }
    i64(v) {
      this.ensure(8);
      this.view.setBigInt64(this.pos, v);
      this.pos += 8;
    }
    u16le(v) {
      this.ensure(2);
      this.view.setUint16(this.pos, v, true);
      this.pos += 2;
    }
    u24le(v) {
      this.ensure(3);
      const buf = this.buf;
      const pos = this.pos;
      buf[pos] = v;
      buf[pos + 1] = v >>> 8;
      buf[pos + 2] = v >>> 16;
      this.pos = pos + 3;
    }
    u32le(v) {
      this.ensure(4);
      this.view.setUint32(this.pos, v, true);
      this.pos += 4;
    }
    i16le(v) {
      this.ensure(2);
      this.view.setInt16(this.pos, v, true);
      this.pos += 2;
    }
    i32le(v) {
      this.ensure(4);
      this.view.setInt32(this.pos, v, true);
      this.pos += 4;
    }
    u64le(v) {
      this.ensure(8);
      this.view.setBigUint64(this.pos, v, true);
      this.pos += 8;
    }
    i64le(v) {
      this.ensure(8);
      this.view.setBigInt64(this.pos, v, true);
      this.pos += 8;
    }
    /** An IEEE 754 binary32 (`f32Bits`: NaN payloads kept, EncodeError out of range). */
    f32(v, little = false) {
      const bits = f32Bits(v);
      this.ensure(4);
      this.view.setUint32(this.pos, bits, little);
      this.pos += 4;
    }
    /** An IEEE 754 binary64. */
    f64(v, little = false) {
      this.ensure(8);
      this.view.setFloat64(this.pos, v, little);
      this.pos += 8;
    }
    bytes(b) {
      this.ensure(b.length);
      this.buf.set(b, this.pos);
      this.pos += b.length;
    }
    /** An unsigned LEB128 varint; EncodeError like _support.write_varint. */
    varint(v) {
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
        buf[pos++] = Number(v & 0x7fn) | 128;
        v >>= 7n;
      }
      buf[pos++] = Number(v);
      this.pos = pos;
    }
    /** A canonical VarU64; EncodeError like _support.write_varu64. */
    varu64(v) {
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
    zigzag(v) {
      if (v < -(1n << 63n) || v >= 1n << 63n) {
        throw new EncodeError(`zigzag: value ${v} does not fit 64 signed bits`);
      }
      this.varint(v < 0n ? v << 1n ^ v >> 63n : v << 1n);
    }
    /** An MQTT Variable Byte Integer (_support.write_vbi). */
    vbi(v) {
      if (v < 128) {
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
      while (v >= 128) {
        buf[pos++] = v & 127 | 128;
        v = Math.floor(v / 128);
      }
      buf[pos++] = v;
      this.pos = pos;
    }
    /** A MySQL length-encoded integer, shortest form (_support.write_lenenc). */
    lenenc(v) {
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
      buf[pos] = size === 2 ? 252 : size === 3 ? 253 : 254;
      for (let i = 1; i <= size; i++) {
        buf[pos + i] = Number(v & 0xffn);
        v >>= 8n;
      }
      this.pos = pos + 1 + size;
    }
    /** Skip `n` bytes (a length written once the rest is known); returns their offset
     * from `start` (the buffer may move before the patch). */
    reserve(n) {
      this.ensure(n);
      const at = this.pos;
      this.buf.fill(0, at, at + n);
      this.pos += n;
      return at - this.start;
    }
    patchU8(at, v) {
      this.buf[this.start + at] = v;
    }
    patchU16(at, v) {
      const buf = this.buf;
      const pos = this.start + at;
      buf[pos] = v >>> 8;
      buf[pos + 1] = v;
    }
    patchU24(at, v) {
      const buf = this.buf;
      const pos = this.start + at;
      buf[pos] = v >>> 16;
      buf[pos + 1] = v >>> 8;
      buf[pos + 2] = v;
    }
    patchU32(at, v) {
      const buf = this.buf;
      const pos = this.start + at;
      buf[pos] = v >>> 24;
      buf[pos + 1] = v >>> 16;
      buf[pos + 2] = v >>> 8;
      buf[pos + 3] = v;
    }
    /** What was written since `start`: a copy, or in the pooled writer a view that stays
     * valid (the next value starts after it). */
    finish() {
      if (!this.pooled) {
        return this.buf.slice(this.start, this.pos);
      }
      const out = this.buf.subarray(this.start, this.pos);
      this.start = Math.min(this.pos + 7 & ~7, this.buf.length);
      return out;
    }
  };

  // runtime/typescript/dist/stream.js
  var EMPTY = /* @__PURE__ */ new Uint8Array(0);
  var ChunkBuffer = class {
    maxFrameSize;
    ctx;
    sender;
    /**
     * Called with each frame and its size on the wire (without a transport prefix) as soon
     * as it is decoded, before the next one is: for layouts that depend on earlier frames
     * (rsio's elementSize in `ctx`) and byte credit (BPMUX).
     */
    afterFrame = null;
    broken = null;
    chunks = [];
    size = 0;
    constructor(defaultMax, options) {
      this.maxFrameSize = options?.maxFrameSize ?? defaultMax;
      this.ctx = options?.ctx;
      this.sender = options?.sender;
    }
    /** Bytes held for a frame that has not fully arrived yet. */
    get buffered() {
      return this.size;
    }
    /** Add a chunk; returns the number of bytes now held. */
    add(chunk) {
      if (chunk.length > 0) {
        this.chunks.push(chunk);
        this.size += chunk.length;
      }
      return this.size;
    }
    /** Everything held, as one array (the chunk itself when there is one). */
    joined() {
      const chunks = this.chunks;
      if (chunks.length === 1) {
        return chunks[0];
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
    keep(data, pos) {
      if (pos >= data.length) {
        this.chunks = [];
        this.size = 0;
      } else {
        this.chunks = [pos === 0 ? data : data.subarray(pos)];
        this.size = data.length - pos;
      }
    }
  };
  var LengthPrefixedDecoder = class extends ChunkBuffer {
    decodeAt;
    prefixSize;
    wanted = 0;
    constructor(decodeAt2, prefixSize, defaultMax, options) {
      super(defaultMax, options);
      this.decodeAt = decodeAt2;
      this.prefixSize = prefixSize;
    }
    /** Add bytes from the stream; return every frame they complete, in order. */
    feed(chunk) {
      if (this.broken !== null) {
        throw this.broken;
      }
      const size = this.add(chunk);
      const frames = [];
      const prefix = this.prefixSize;
      if (size < prefix || size < this.wanted) {
        return frames;
      }
      this.wanted = 0;
      const data = this.joined();
      let pos = 0;
      try {
        while (size - pos >= prefix) {
          let length = 0;
          for (let i = 0; i < prefix; i++) {
            length = length * 256 + data[pos + i];
          }
          if (length > this.maxFrameSize) {
            const error = new FrameTooLarge(`frame declares ${length} bytes; the limit is ${this.maxFrameSize}`);
            this.broken = error;
            throw error;
          }
          const start = pos + prefix;
          const stop = start + length;
          if (stop > size) {
            this.wanted = stop - pos;
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
          this.keep(data, 0);
        }
        throw error;
      }
      this.keep(data, pos);
      return frames;
    }
  };

  // runtime/typescript/dist/machine.js
  var ANY = /* @__PURE__ */ Symbol("ANY");
  var Ignore = class {
    toString() {
      return "IGNORE";
    }
  };
  var IGNORE = /* @__PURE__ */ new Ignore();
  var Illegal = class {
    message;
    spec;
    constructor(message, spec = "") {
      this.message = message;
      this.spec = spec;
    }
  };
  function table(entries) {
    const states = /* @__PURE__ */ new Map();
    for (const [state, key, rows] of entries) {
      let byKey = states.get(state);
      if (byKey === void 0) {
        byKey = /* @__PURE__ */ new Map();
        states.set(state, byKey);
      }
      if (byKey.has(key)) {
        const name = key === ANY ? "ANY" : frameClassName(key);
        throw new Error(`machine table: two entries for (${state}, ${name})`);
      }
      byKey.set(key, rows);
    }
    return states;
  }
  var NO_ROWS = /* @__PURE__ */ new Map();
  var StateMachine = class {
    role;
    state;
    /** The machine class's statics (NAME, INITIAL, TERMINAL ...). */
    definition;
    sendTable;
    receiveTable;
    constructor(role, state) {
      const definition = new.target;
      if (!definition.ROLES.includes(role)) {
        throw new RangeError(`${definition.NAME}: unknown role '${role}' (roles: ${definition.ROLES.map((r) => `'${r}'`).join(", ")})`);
      }
      this.definition = definition;
      this.role = role;
      this.state = state ?? definition.INITIAL[role];
      this.sendTable = definition.SEND[role];
      this.receiveTable = definition.RECEIVE[role];
    }
    get terminated() {
      return this.definition.TERMINAL.has(this.state);
    }
    /**
     * Whether this instance holds nothing worth keeping: a terminal state, or, for
     * machines without one (an id that is reused), back in its initial state.
     */
    get vacant() {
      const terminal = this.definition.TERMINAL;
      if (terminal.size > 0) {
        return terminal.has(this.state);
      }
      return this.state === this.definition.INITIAL[this.role];
    }
    /**
     * Check that we may send `frame` now and move on; returns the new state.
     *
     * Throws IllegalSend when the table forbids it. A row that says ignore leaves the
     * state as it is (sending is harmless, the peer will drop it).
     */
    send(frame) {
      const outcome = this.lookup(this.sendTable, frame);
      if (typeof outcome === "string") {
        this.state = outcome;
        return this.state;
      }
      if (outcome === null || outcome instanceof Illegal) {
        throw this.error(IllegalSend, "send", frame, outcome);
      }
      return this.state;
    }
    /**
     * Apply a received frame: the new state, or IGNORE when the spec says so.
     *
     * Throws UnexpectedFrame when the peer broke the machine's rules.
     */
    receive(frame) {
      const outcome = this.lookup(this.receiveTable, frame);
      if (typeof outcome === "string") {
        this.state = outcome;
        return this.state;
      }
      if (outcome === null || outcome instanceof Illegal) {
        throw this.error(UnexpectedFrame, "receive", frame, outcome);
      }
      return outcome;
    }
    /** Whether `send(frame)` would succeed, without changing anything. */
    allowsSend(frame) {
      const outcome = this.lookup(this.sendTable, frame);
      return outcome !== null && !(outcome instanceof Illegal);
    }
    lookup(table2, frame) {
      const byKey = table2.get(this.state) ?? NO_ROWS;
      const rows = byKey.get(frame.constructor);
      if (rows !== void 0) {
        for (const [guard, outcome] of rows) {
          if (guard === null || guard(frame)) {
            return outcome;
          }
        }
      }
      const any = byKey.get(ANY);
      if (any !== void 0 && any.length > 0) {
        return any[0][1];
      }
      return null;
    }
    error(kind, verb, frame, outcome) {
      const name = frameName(frame);
      const where = `role=${this.role} and state=${this.state} (machine ${this.definition.NAME})`;
      let message;
      let spec;
      if (outcome === null) {
        message = `can't ${verb} ${name} when ${where}`;
        spec = "";
      } else {
        message = `${outcome.message} (${verb} ${name} when ${where})`;
        spec = outcome.spec;
      }
      return new kind(message, {
        machine: this.definition.NAME,
        role: this.role,
        state: this.state,
        frame: name,
        spec
      });
    }
    toString() {
      return `<${this.constructor.name} role=${this.role} state=${this.state}>`;
    }
  };

  // generated/typescript/dist/rsocket/v1_0/index.js
  var MAX_FRAME_SIZE = 16777215;
  var FrameType;
  (function(FrameType2) {
    FrameType2[FrameType2["SETUP"] = 1] = "SETUP";
    FrameType2[FrameType2["LEASE"] = 2] = "LEASE";
    FrameType2[FrameType2["KEEPALIVE"] = 3] = "KEEPALIVE";
    FrameType2[FrameType2["REQUEST_RESPONSE"] = 4] = "REQUEST_RESPONSE";
    FrameType2[FrameType2["REQUEST_FNF"] = 5] = "REQUEST_FNF";
    FrameType2[FrameType2["REQUEST_STREAM"] = 6] = "REQUEST_STREAM";
    FrameType2[FrameType2["REQUEST_CHANNEL"] = 7] = "REQUEST_CHANNEL";
    FrameType2[FrameType2["REQUEST_N"] = 8] = "REQUEST_N";
    FrameType2[FrameType2["CANCEL"] = 9] = "CANCEL";
    FrameType2[FrameType2["PAYLOAD"] = 10] = "PAYLOAD";
    FrameType2[FrameType2["ERROR"] = 11] = "ERROR";
    FrameType2[FrameType2["METADATA_PUSH"] = 12] = "METADATA_PUSH";
    FrameType2[FrameType2["RESUME"] = 13] = "RESUME";
    FrameType2[FrameType2["RESUME_OK"] = 14] = "RESUME_OK";
    FrameType2[FrameType2["EXT"] = 63] = "EXT";
  })(FrameType || (FrameType = {}));
  var ErrorCode;
  (function(ErrorCode2) {
    ErrorCode2[ErrorCode2["RESERVED"] = 0] = "RESERVED";
    ErrorCode2[ErrorCode2["INVALID_SETUP"] = 1] = "INVALID_SETUP";
    ErrorCode2[ErrorCode2["UNSUPPORTED_SETUP"] = 2] = "UNSUPPORTED_SETUP";
    ErrorCode2[ErrorCode2["REJECTED_SETUP"] = 3] = "REJECTED_SETUP";
    ErrorCode2[ErrorCode2["REJECTED_RESUME"] = 4] = "REJECTED_RESUME";
    ErrorCode2[ErrorCode2["CONNECTION_ERROR"] = 257] = "CONNECTION_ERROR";
    ErrorCode2[ErrorCode2["CONNECTION_CLOSE"] = 258] = "CONNECTION_CLOSE";
    ErrorCode2[ErrorCode2["APPLICATION_ERROR"] = 513] = "APPLICATION_ERROR";
    ErrorCode2[ErrorCode2["REJECTED"] = 514] = "REJECTED";
    ErrorCode2[ErrorCode2["CANCELED"] = 515] = "CANCELED";
    ErrorCode2[ErrorCode2["INVALID"] = 516] = "INVALID";
    ErrorCode2[ErrorCode2["RESERVED_FOR_EXTENSION"] = 4294967295] = "RESERVED_FOR_EXTENSION";
  })(ErrorCode || (ErrorCode = {}));
  var WellKnownMimeType;
  (function(WellKnownMimeType2) {
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_AVRO"] = 0] = "APPLICATION_AVRO";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_CBOR"] = 1] = "APPLICATION_CBOR";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_GRAPHQL"] = 2] = "APPLICATION_GRAPHQL";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_GZIP"] = 3] = "APPLICATION_GZIP";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_JAVASCRIPT"] = 4] = "APPLICATION_JAVASCRIPT";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_JSON"] = 5] = "APPLICATION_JSON";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_OCTET_STREAM"] = 6] = "APPLICATION_OCTET_STREAM";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_PDF"] = 7] = "APPLICATION_PDF";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_THRIFT"] = 8] = "APPLICATION_THRIFT";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_PROTOBUF"] = 9] = "APPLICATION_PROTOBUF";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_XML"] = 10] = "APPLICATION_XML";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_ZIP"] = 11] = "APPLICATION_ZIP";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_AAC"] = 12] = "AUDIO_AAC";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_MP3"] = 13] = "AUDIO_MP3";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_MP4"] = 14] = "AUDIO_MP4";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_MPEG3"] = 15] = "AUDIO_MPEG3";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_MPEG"] = 16] = "AUDIO_MPEG";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_OGG"] = 17] = "AUDIO_OGG";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_OPUS"] = 18] = "AUDIO_OPUS";
    WellKnownMimeType2[WellKnownMimeType2["AUDIO_VORBIS"] = 19] = "AUDIO_VORBIS";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_BMP"] = 20] = "IMAGE_BMP";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_GIF"] = 21] = "IMAGE_GIF";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_HEIC_SEQUENCE"] = 22] = "IMAGE_HEIC_SEQUENCE";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_HEIC"] = 23] = "IMAGE_HEIC";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_HEIF_SEQUENCE"] = 24] = "IMAGE_HEIF_SEQUENCE";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_HEIF"] = 25] = "IMAGE_HEIF";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_JPEG"] = 26] = "IMAGE_JPEG";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_PNG"] = 27] = "IMAGE_PNG";
    WellKnownMimeType2[WellKnownMimeType2["IMAGE_TIFF"] = 28] = "IMAGE_TIFF";
    WellKnownMimeType2[WellKnownMimeType2["MULTIPART_MIXED"] = 29] = "MULTIPART_MIXED";
    WellKnownMimeType2[WellKnownMimeType2["TEXT_CSS"] = 30] = "TEXT_CSS";
    WellKnownMimeType2[WellKnownMimeType2["TEXT_CSV"] = 31] = "TEXT_CSV";
    WellKnownMimeType2[WellKnownMimeType2["TEXT_HTML"] = 32] = "TEXT_HTML";
    WellKnownMimeType2[WellKnownMimeType2["TEXT_PLAIN"] = 33] = "TEXT_PLAIN";
    WellKnownMimeType2[WellKnownMimeType2["TEXT_XML"] = 34] = "TEXT_XML";
    WellKnownMimeType2[WellKnownMimeType2["VIDEO_H264"] = 35] = "VIDEO_H264";
    WellKnownMimeType2[WellKnownMimeType2["VIDEO_H265"] = 36] = "VIDEO_H265";
    WellKnownMimeType2[WellKnownMimeType2["VIDEO_VP8"] = 37] = "VIDEO_VP8";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_HESSIAN"] = 38] = "APPLICATION_HESSIAN";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_JAVA_OBJECT"] = 39] = "APPLICATION_JAVA_OBJECT";
    WellKnownMimeType2[WellKnownMimeType2["APPLICATION_CLOUDEVENTS_JSON"] = 40] = "APPLICATION_CLOUDEVENTS_JSON";
    WellKnownMimeType2[WellKnownMimeType2["MESSAGE_RSOCKET_MIMETYPE"] = 122] = "MESSAGE_RSOCKET_MIMETYPE";
    WellKnownMimeType2[WellKnownMimeType2["MESSAGE_RSOCKET_ACCEPT_MIMETYPES"] = 123] = "MESSAGE_RSOCKET_ACCEPT_MIMETYPES";
    WellKnownMimeType2[WellKnownMimeType2["MESSAGE_RSOCKET_AUTHENTICATION"] = 124] = "MESSAGE_RSOCKET_AUTHENTICATION";
    WellKnownMimeType2[WellKnownMimeType2["MESSAGE_RSOCKET_TRACING_ZIPKIN"] = 125] = "MESSAGE_RSOCKET_TRACING_ZIPKIN";
    WellKnownMimeType2[WellKnownMimeType2["MESSAGE_RSOCKET_ROUTING"] = 126] = "MESSAGE_RSOCKET_ROUTING";
    WellKnownMimeType2[WellKnownMimeType2["MESSAGE_RSOCKET_COMPOSITE_METADATA"] = 127] = "MESSAGE_RSOCKET_COMPOSITE_METADATA";
  })(WellKnownMimeType || (WellKnownMimeType = {}));
  var Setup = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Setup";
    static FRAME_TYPE = 1;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x40 */
    lease;
    /** Major version of the protocol (1). */
    majorVersion;
    /** Minor version of the protocol (0). */
    minorVersion;
    /** Milliseconds between client KEEPALIVE frames. */
    keepaliveInterval;
    /** Milliseconds without KEEPALIVE before the peer is assumed dead. */
    maxLifetime;
    /** Resume identification token (present iff R). */
    resumeToken;
    /** MIME type of metadata. */
    metadataMimeType;
    /** MIME type of data. */
    dataMimeType;
    /** Setup metadata. */
    metadata;
    /** Setup data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.lease = init.lease ?? false;
      this.majorVersion = init.majorVersion ?? 1;
      this.minorVersion = init.minorVersion ?? 0;
      this.keepaliveInterval = init.keepaliveInterval ?? 1;
      this.maxLifetime = init.maxLifetime ?? 1;
      this.resumeToken = init.resumeToken ?? null;
      this.metadataMimeType = init.metadataMimeType ?? "";
      this.dataMimeType = init.dataMimeType ?? "";
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.SETUP;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = (this.ignore ? 512 : 0) | (this.lease ? 64 : 0);
      if (this.resumeToken !== null)
        flags |= 128;
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Setup.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (1 << 10 | flags) >>> 8;
        buf[at + 5] = 1 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(12);
        const at = w.pos;
        const buf = w.buf;
        const i0 = this.majorVersion;
        if (!Number.isInteger(i0) || i0 < 0 || i0 > 65535) {
          throw new EncodeError(`Setup.majorVersion: ${i0} is outside 0..0xffff`);
        }
        buf[at] = i0 >>> 8;
        buf[at + 1] = i0;
        const i2 = this.minorVersion;
        if (!Number.isInteger(i2) || i2 < 0 || i2 > 65535) {
          throw new EncodeError(`Setup.minorVersion: ${i2} is outside 0..0xffff`);
        }
        buf[at + 2] = i2 >>> 8;
        buf[at + 3] = i2;
        const b4_0 = this.keepaliveInterval;
        if (!Number.isInteger(b4_0) || b4_0 < 1 || b4_0 > 2147483647) {
          throw new EncodeError(`Setup.keepaliveInterval: ${b4_0} is outside 1..0x7fffffff`);
        }
        buf[at + 4] = b4_0 >>> 24;
        buf[at + 5] = b4_0 >>> 16;
        buf[at + 6] = b4_0 >>> 8;
        buf[at + 7] = b4_0;
        const b8_0 = this.maxLifetime;
        if (!Number.isInteger(b8_0) || b8_0 < 1 || b8_0 > 2147483647) {
          throw new EncodeError(`Setup.maxLifetime: ${b8_0} is outside 1..0x7fffffff`);
        }
        buf[at + 8] = b8_0 >>> 24;
        buf[at + 9] = b8_0 >>> 16;
        buf[at + 10] = b8_0 >>> 8;
        buf[at + 11] = b8_0;
        w.pos = at + 12;
      }
      if (this.resumeToken !== null) {
        {
          const raw = this.resumeToken;
          if (raw.length > 65535) {
            throw new EncodeError(`Setup.resumeToken length: ${raw.length} is outside 0..0xffff`);
          }
          w.u16(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = utf8Bytes(this.metadataMimeType);
        if (raw.length > 255) {
          throw new EncodeError(`Setup.metadataMimeType length: ${raw.length} is outside 0..0xff`);
        }
        w.u8(raw.length);
        w.bytes(raw);
      }
      {
        const raw = utf8Bytes(this.dataMimeType);
        if (raw.length > 255) {
          throw new EncodeError(`Setup.dataMimeType length: ${raw.length} is outside 0..0xff`);
        }
        w.u8(raw.length);
        w.bytes(raw);
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`Setup.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var Lease = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Lease";
    static FRAME_TYPE = 2;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Validity of the lease in milliseconds from reception. */
    ttl;
    /** Requests that may be sent until the next LEASE. */
    numberOfRequests;
    /** Lease metadata (rest of the frame). */
    metadata;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.ttl = init.ttl ?? 0;
      this.numberOfRequests = init.numberOfRequests ?? 0;
      this.metadata = init.metadata ?? null;
    }
    get frameType() {
      return FrameType.LEASE;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = this.ignore ? 512 : 0;
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Lease.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (2 << 10 | flags) >>> 8;
        buf[at + 5] = 2 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(8);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.ttl;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Lease.ttl: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        const b4_0 = this.numberOfRequests;
        if (!Number.isInteger(b4_0) || b4_0 < 0 || b4_0 > 2147483647) {
          throw new EncodeError(`Lease.numberOfRequests: ${b4_0} is outside 0..0x7fffffff`);
        }
        buf[at + 4] = b4_0 >>> 24;
        buf[at + 5] = b4_0 >>> 16;
        buf[at + 6] = b4_0 >>> 8;
        buf[at + 7] = b4_0;
        w.pos = at + 8;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          w.bytes(raw);
        }
      }
    }
  };
  var Keepalive = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Keepalive";
    static FRAME_TYPE = 3;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x80 */
    respond;
    /** Resume last received position (0 when unsupported). */
    lastReceivedPosition;
    /** Data echoed back by the peer. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.respond = init.respond ?? false;
      this.lastReceivedPosition = init.lastReceivedPosition ?? 0n;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.KEEPALIVE;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = (this.ignore ? 512 : 0) | (this.respond ? 128 : 0);
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Keepalive.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (3 << 10 | flags) >>> 8;
        buf[at + 5] = 3 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(8);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.lastReceivedPosition;
        if (b0_0 < 0n || b0_0 > 0x7fffffffffffffffn) {
          throw new EncodeError(`Keepalive.lastReceivedPosition: ${b0_0} is outside 0..0x7fffffffffffffff`);
        }
        w.view.setBigUint64(at, b0_0);
        w.pos = at + 8;
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var RequestResponse = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "RequestResponse";
    static FRAME_TYPE = 4;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x80 */
    follows;
    /** Request metadata. */
    metadata;
    /** Request data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.follows = init.follows ?? false;
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.REQUEST_RESPONSE;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = (this.ignore ? 512 : 0) | (this.follows ? 128 : 0);
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestResponse.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (4 << 10 | flags) >>> 8;
        buf[at + 5] = 4 << 10 | flags;
        w.pos = at + 6;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`RequestResponse.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var RequestFnf = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "RequestFnf";
    static FRAME_TYPE = 5;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x80 */
    follows;
    /** Request metadata. */
    metadata;
    /** Request data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.follows = init.follows ?? false;
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.REQUEST_FNF;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = (this.ignore ? 512 : 0) | (this.follows ? 128 : 0);
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestFnf.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (5 << 10 | flags) >>> 8;
        buf[at + 5] = 5 << 10 | flags;
        w.pos = at + 6;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`RequestFnf.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var RequestStream = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "RequestStream";
    static FRAME_TYPE = 6;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x80 */
    follows;
    /** Initial number of items requested. */
    initialRequestN;
    /** Request metadata. */
    metadata;
    /** Request data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.follows = init.follows ?? false;
      this.initialRequestN = init.initialRequestN ?? 1;
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.REQUEST_STREAM;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = (this.ignore ? 512 : 0) | (this.follows ? 128 : 0);
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestStream.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (6 << 10 | flags) >>> 8;
        buf[at + 5] = 6 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(4);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.initialRequestN;
        if (!Number.isInteger(b0_0) || b0_0 < 1 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestStream.initialRequestN: ${b0_0} is outside 1..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        w.pos = at + 4;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`RequestStream.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var RequestChannel = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "RequestChannel";
    static FRAME_TYPE = 7;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x80 */
    follows;
    /** flag 0x40 */
    complete;
    /** Initial request N for the channel. */
    initialRequestN;
    /** Request metadata. */
    metadata;
    /** Request data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.follows = init.follows ?? false;
      this.complete = init.complete ?? false;
      this.initialRequestN = init.initialRequestN ?? 1;
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.REQUEST_CHANNEL;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = (this.ignore ? 512 : 0) | (this.follows ? 128 : 0) | (this.complete ? 64 : 0);
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestChannel.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (7 << 10 | flags) >>> 8;
        buf[at + 5] = 7 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(4);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.initialRequestN;
        if (!Number.isInteger(b0_0) || b0_0 < 1 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestChannel.initialRequestN: ${b0_0} is outside 1..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        w.pos = at + 4;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`RequestChannel.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var RequestN = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "RequestN";
    static FRAME_TYPE = 8;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Number of items to request. */
    requestN;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.requestN = init.requestN ?? 1;
    }
    get frameType() {
      return FrameType.REQUEST_N;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = this.ignore ? 512 : 0;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestN.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (8 << 10 | flags) >>> 8;
        buf[at + 5] = 8 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(4);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.requestN;
        if (!Number.isInteger(b0_0) || b0_0 < 1 || b0_0 > 2147483647) {
          throw new EncodeError(`RequestN.requestN: ${b0_0} is outside 1..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        w.pos = at + 4;
      }
    }
  };
  var Cancel = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Cancel";
    static FRAME_TYPE = 9;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
    }
    get frameType() {
      return FrameType.CANCEL;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = this.ignore ? 512 : 0;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Cancel.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (9 << 10 | flags) >>> 8;
        buf[at + 5] = 9 << 10 | flags;
        w.pos = at + 6;
      }
    }
  };
  var Payload = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Payload";
    static FRAME_TYPE = 10;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** flag 0x80 */
    follows;
    /** flag 0x40 */
    complete;
    /** flag 0x20 */
    next;
    /** Payload metadata. */
    metadata;
    /** Payload data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.follows = init.follows ?? false;
      this.complete = init.complete ?? false;
      this.next = init.next ?? false;
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.PAYLOAD;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = (this.ignore ? 512 : 0) | (this.follows ? 128 : 0) | (this.complete ? 64 : 0) | (this.next ? 32 : 0);
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Payload.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (10 << 10 | flags) >>> 8;
        buf[at + 5] = 10 << 10 | flags;
        w.pos = at + 6;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`Payload.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var ErrorFrame = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Error";
    static FRAME_TYPE = 11;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Type of error. */
    errorCode;
    /** Error data (usually a UTF-8 message). */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.errorCode = init.errorCode ?? 0;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.ERROR;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = this.ignore ? 512 : 0;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Error.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (11 << 10 | flags) >>> 8;
        buf[at + 5] = 11 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(4);
        const at = w.pos;
        const buf = w.buf;
        const i0 = this.errorCode;
        if (!Number.isInteger(i0) || i0 < 0 || i0 > 4294967295) {
          throw new EncodeError(`Error.errorCode: ${i0} is outside 0..0xffffffff`);
        }
        buf[at] = i0 >>> 24;
        buf[at + 1] = i0 >>> 16;
        buf[at + 2] = i0 >>> 8;
        buf[at + 3] = i0;
        w.pos = at + 4;
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var MetadataPush = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "MetadataPush";
    static FRAME_TYPE = 12;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Connection metadata (rest of the frame). */
    metadata;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.metadata = init.metadata ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.METADATA_PUSH;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = 256 | (this.ignore ? 512 : 0);
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`MetadataPush.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (12 << 10 | flags) >>> 8;
        buf[at + 5] = 12 << 10 | flags;
        w.pos = at + 6;
      }
      {
        const raw = this.metadata;
        w.bytes(raw);
      }
    }
  };
  var Resume = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Resume";
    static FRAME_TYPE = 13;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Major version of the protocol. */
    majorVersion;
    /** Minor version of the protocol. */
    minorVersion;
    /** Token of the original SETUP. */
    resumeToken;
    /** Last implied position the client received from the server. */
    lastReceivedServerPosition;
    /** Earliest position the client can rewind to. */
    firstAvailableClientPosition;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.majorVersion = init.majorVersion ?? 1;
      this.minorVersion = init.minorVersion ?? 0;
      this.resumeToken = init.resumeToken ?? new Uint8Array(0);
      this.lastReceivedServerPosition = init.lastReceivedServerPosition ?? 0n;
      this.firstAvailableClientPosition = init.firstAvailableClientPosition ?? 0n;
    }
    get frameType() {
      return FrameType.RESUME;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = this.ignore ? 512 : 0;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Resume.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (13 << 10 | flags) >>> 8;
        buf[at + 5] = 13 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(4);
        const at = w.pos;
        const buf = w.buf;
        const i0 = this.majorVersion;
        if (!Number.isInteger(i0) || i0 < 0 || i0 > 65535) {
          throw new EncodeError(`Resume.majorVersion: ${i0} is outside 0..0xffff`);
        }
        buf[at] = i0 >>> 8;
        buf[at + 1] = i0;
        const i2 = this.minorVersion;
        if (!Number.isInteger(i2) || i2 < 0 || i2 > 65535) {
          throw new EncodeError(`Resume.minorVersion: ${i2} is outside 0..0xffff`);
        }
        buf[at + 2] = i2 >>> 8;
        buf[at + 3] = i2;
        w.pos = at + 4;
      }
      {
        const raw = this.resumeToken;
        if (raw.length > 65535) {
          throw new EncodeError(`Resume.resumeToken length: ${raw.length} is outside 0..0xffff`);
        }
        w.u16(raw.length);
        w.bytes(raw);
      }
      {
        w.ensure(16);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.lastReceivedServerPosition;
        if (b0_0 < 0n || b0_0 > 0x7fffffffffffffffn) {
          throw new EncodeError(`Resume.lastReceivedServerPosition: ${b0_0} is outside 0..0x7fffffffffffffff`);
        }
        w.view.setBigUint64(at, b0_0);
        const b8_0 = this.firstAvailableClientPosition;
        if (b8_0 < 0n || b8_0 > 0x7fffffffffffffffn) {
          throw new EncodeError(`Resume.firstAvailableClientPosition: ${b8_0} is outside 0..0x7fffffffffffffff`);
        }
        w.view.setBigUint64(at + 8, b8_0);
        w.pos = at + 16;
      }
    }
  };
  var ResumeOk = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "ResumeOk";
    static FRAME_TYPE = 14;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Last implied position the server received from the client. */
    lastReceivedClientPosition;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.lastReceivedClientPosition = init.lastReceivedClientPosition ?? 0n;
    }
    get frameType() {
      return FrameType.RESUME_OK;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = this.ignore ? 512 : 0;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`ResumeOk.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (14 << 10 | flags) >>> 8;
        buf[at + 5] = 14 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(8);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.lastReceivedClientPosition;
        if (b0_0 < 0n || b0_0 > 0x7fffffffffffffffn) {
          throw new EncodeError(`ResumeOk.lastReceivedClientPosition: ${b0_0} is outside 0..0x7fffffffffffffff`);
        }
        w.view.setBigUint64(at, b0_0);
        w.pos = at + 8;
      }
    }
  };
  var Ext = class {
    /** Python's class name, for messages (a static string survives minifying). */
    static NAME = "Ext";
    static FRAME_TYPE = 63;
    static SENDER = "any";
    /** Stream identifier; 0 means the whole connection. */
    streamId;
    /** flag 0x200 */
    ignore;
    /** Extended type. */
    extendedType;
    /** Extension metadata. */
    metadata;
    /** Extension data. */
    data;
    constructor(init = {}) {
      this.streamId = init.streamId ?? 0;
      this.ignore = init.ignore ?? false;
      this.extendedType = init.extendedType ?? 1;
      this.metadata = init.metadata ?? null;
      this.data = init.data ?? new Uint8Array(0);
    }
    get frameType() {
      return FrameType.EXT;
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      let flags = this.ignore ? 512 : 0;
      if (this.metadata !== null)
        flags |= 256;
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`Ext.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        buf[at + 4] = (63 << 10 | flags) >>> 8;
        buf[at + 5] = 63 << 10 | flags;
        w.pos = at + 6;
      }
      {
        w.ensure(4);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.extendedType;
        if (!Number.isInteger(b0_0) || b0_0 < 1 || b0_0 > 2147483647) {
          throw new EncodeError(`Ext.extendedType: ${b0_0} is outside 1..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        w.pos = at + 4;
      }
      if (this.metadata !== null) {
        {
          const raw = this.metadata;
          if (raw.length > 16777215) {
            throw new EncodeError(`Ext.metadata length: ${raw.length} is outside 0..0xffffff`);
          }
          w.u24(raw.length);
          w.bytes(raw);
        }
      }
      {
        const raw = this.data;
        w.bytes(raw);
      }
    }
  };
  var UnknownFrame = class {
    static NAME = "UnknownFrame";
    /** The unknown type code. */
    code;
    streamId;
    /** All flag bits as received. */
    flags;
    /** The frame's bytes after the header. */
    body;
    constructor(init = {}) {
      this.code = init.code ?? 0;
      this.streamId = init.streamId ?? 0;
      this.flags = init.flags ?? 0;
      this.body = init.body ?? new Uint8Array(0);
    }
    /** The frame's bytes, without the transport's length prefix. */
    toBytes(ctx) {
      return encode(this, ctx);
    }
    /** @internal */
    _write(w, ctx) {
      const flags = this.flags;
      if (!Number.isInteger(flags) || flags < 0 || flags > 1023) {
        throw new EncodeError(`UnknownFrame.flags: ${flags} is outside 0..0x3ff`);
      }
      {
        w.ensure(6);
        const at = w.pos;
        const buf = w.buf;
        const b0_0 = this.streamId;
        if (!Number.isInteger(b0_0) || b0_0 < 0 || b0_0 > 2147483647) {
          throw new EncodeError(`UnknownFrame.streamId: ${b0_0} is outside 0..0x7fffffff`);
        }
        buf[at] = b0_0 >>> 24;
        buf[at + 1] = b0_0 >>> 16;
        buf[at + 2] = b0_0 >>> 8;
        buf[at + 3] = b0_0;
        const b4_10 = this.code;
        if (!Number.isInteger(b4_10) || b4_10 < 0 || b4_10 > 63) {
          throw new EncodeError(`UnknownFrame.frameType: ${b4_10} is outside 0..0x3f`);
        }
        buf[at + 4] = (b4_10 << 10 | flags) >>> 8;
        buf[at + 5] = b4_10 << 10 | flags;
        w.pos = at + 6;
      }
      w.bytes(this.body);
    }
  };
  function _decodeSetup(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 12)
      throw new Truncated("Setup: input ends inside the frame", pos + 12);
    const v_majorVersion = data[pos] << 8 | data[pos + 1];
    const v_minorVersion = data[pos + 2] << 8 | data[pos + 3];
    const w1_4 = (data[pos + 4] << 24 | data[pos + 5] << 16 | data[pos + 6] << 8 | data[pos + 7]) >>> 0;
    const v_keepaliveInterval = w1_4 & 2147483647;
    if (v_keepaliveInterval < 1 || v_keepaliveInterval > 2147483647) {
      throw new InvalidValue(`Setup.keepaliveInterval: ${v_keepaliveInterval} is outside 1..0x7fffffff`);
    }
    const w1_8 = (data[pos + 8] << 24 | data[pos + 9] << 16 | data[pos + 10] << 8 | data[pos + 11]) >>> 0;
    const v_maxLifetime = w1_8 & 2147483647;
    if (v_maxLifetime < 1 || v_maxLifetime > 2147483647) {
      throw new InvalidValue(`Setup.maxLifetime: ${v_maxLifetime} is outside 1..0x7fffffff`);
    }
    pos += 12;
    let v_resumeToken = null;
    if ((flags & 128) !== 0) {
      {
        let n;
        if (end - pos < 2)
          throw new Truncated("Setup.resumeToken: input ends", pos + 2);
        n = data[pos] << 8 | data[pos + 1];
        pos += 2;
        if (n > end - pos) {
          throw new Truncated(`Setup.resumeToken: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_resumeToken = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_metadataMimeType;
    {
      let n;
      if (end - pos < 1)
        throw new Truncated("Setup.metadataMimeType: input ends", pos + 1);
      n = data[pos];
      pos += 1;
      if (n > end - pos) {
        throw new Truncated(`Setup.metadataMimeType: ${n} bytes declared, ${end - pos} left`, pos + n);
      }
      v_metadataMimeType = utf8(data.subarray(pos, pos + n), "Setup.metadataMimeType");
      pos += n;
    }
    let v_dataMimeType;
    {
      let n;
      if (end - pos < 1)
        throw new Truncated("Setup.dataMimeType: input ends", pos + 1);
      n = data[pos];
      pos += 1;
      if (n > end - pos) {
        throw new Truncated(`Setup.dataMimeType: ${n} bytes declared, ${end - pos} left`, pos + n);
      }
      v_dataMimeType = utf8(data.subarray(pos, pos + n), "Setup.dataMimeType");
      pos += n;
    }
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("Setup.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`Setup.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new Setup({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      lease: (flags & 64) !== 0,
      majorVersion: v_majorVersion,
      minorVersion: v_minorVersion,
      keepaliveInterval: v_keepaliveInterval,
      maxLifetime: v_maxLifetime,
      resumeToken: v_resumeToken,
      metadataMimeType: v_metadataMimeType,
      dataMimeType: v_dataMimeType,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeLease(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 8)
      throw new Truncated("Lease: input ends inside the frame", pos + 8);
    const w1_0 = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    const v_ttl = w1_0 & 2147483647;
    const w1_4 = (data[pos + 4] << 24 | data[pos + 5] << 16 | data[pos + 6] << 8 | data[pos + 7]) >>> 0;
    const v_numberOfRequests = w1_4 & 2147483647;
    pos += 8;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      v_metadata = data.subarray(pos, end);
      pos = end;
    }
    r.pos = pos;
    return new Lease({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      ttl: v_ttl,
      numberOfRequests: v_numberOfRequests,
      metadata: v_metadata
    });
  }
  function _decodeKeepalive(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 8)
      throw new Truncated("Keepalive: input ends inside the frame", pos + 8);
    const w1_0 = r.view.getBigUint64(pos);
    const v_lastReceivedPosition = w1_0 & 0x7fffffffffffffffn;
    pos += 8;
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new Keepalive({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      respond: (flags & 128) !== 0,
      lastReceivedPosition: v_lastReceivedPosition,
      data: v_data
    });
  }
  function _decodeRequestResponse(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("RequestResponse.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`RequestResponse.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new RequestResponse({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      follows: (flags & 128) !== 0,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeRequestFnf(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("RequestFnf.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`RequestFnf.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new RequestFnf({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      follows: (flags & 128) !== 0,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeRequestStream(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 4)
      throw new Truncated("RequestStream: input ends inside the frame", pos + 4);
    const w1_0 = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    const v_initialRequestN = w1_0 & 2147483647;
    if (v_initialRequestN < 1 || v_initialRequestN > 2147483647) {
      throw new InvalidValue(`RequestStream.initialRequestN: ${v_initialRequestN} is outside 1..0x7fffffff`);
    }
    pos += 4;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("RequestStream.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`RequestStream.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new RequestStream({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      follows: (flags & 128) !== 0,
      initialRequestN: v_initialRequestN,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeRequestChannel(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 4)
      throw new Truncated("RequestChannel: input ends inside the frame", pos + 4);
    const w1_0 = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    const v_initialRequestN = w1_0 & 2147483647;
    if (v_initialRequestN < 1 || v_initialRequestN > 2147483647) {
      throw new InvalidValue(`RequestChannel.initialRequestN: ${v_initialRequestN} is outside 1..0x7fffffff`);
    }
    pos += 4;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("RequestChannel.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`RequestChannel.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new RequestChannel({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      follows: (flags & 128) !== 0,
      complete: (flags & 64) !== 0,
      initialRequestN: v_initialRequestN,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeRequestN(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 4)
      throw new Truncated("RequestN: input ends inside the frame", pos + 4);
    const w1_0 = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    const v_requestN = w1_0 & 2147483647;
    if (v_requestN < 1 || v_requestN > 2147483647) {
      throw new InvalidValue(`RequestN.requestN: ${v_requestN} is outside 1..0x7fffffff`);
    }
    pos += 4;
    r.pos = pos;
    return new RequestN({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      requestN: v_requestN
    });
  }
  function _decodeCancel(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    r.pos = pos;
    return new Cancel({ streamId: v_streamId, ignore: (flags & 512) !== 0 });
  }
  function _decodePayload(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("Payload.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`Payload.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new Payload({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      follows: (flags & 128) !== 0,
      complete: (flags & 64) !== 0,
      next: (flags & 32) !== 0,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeError(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 4)
      throw new Truncated("Error: input ends inside the frame", pos + 4);
    const v_errorCode = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    pos += 4;
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new ErrorFrame({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      errorCode: v_errorCode,
      data: v_data
    });
  }
  function _decodeMetadataPush(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    let v_metadata;
    v_metadata = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new MetadataPush({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      metadata: v_metadata
    });
  }
  function _decodeResume(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 4)
      throw new Truncated("Resume: input ends inside the frame", pos + 4);
    const v_majorVersion = data[pos] << 8 | data[pos + 1];
    const v_minorVersion = data[pos + 2] << 8 | data[pos + 3];
    pos += 4;
    let v_resumeToken;
    {
      let n;
      if (end - pos < 2)
        throw new Truncated("Resume.resumeToken: input ends", pos + 2);
      n = data[pos] << 8 | data[pos + 1];
      pos += 2;
      if (n > end - pos) {
        throw new Truncated(`Resume.resumeToken: ${n} bytes declared, ${end - pos} left`, pos + n);
      }
      v_resumeToken = data.subarray(pos, pos + n);
      pos += n;
    }
    if (end - pos < 16)
      throw new Truncated("Resume: input ends inside the frame", pos + 16);
    const w3_0 = r.view.getBigUint64(pos);
    const v_lastReceivedServerPosition = w3_0 & 0x7fffffffffffffffn;
    const w3_8 = r.view.getBigUint64(pos + 8);
    const v_firstAvailableClientPosition = w3_8 & 0x7fffffffffffffffn;
    pos += 16;
    r.pos = pos;
    return new Resume({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      majorVersion: v_majorVersion,
      minorVersion: v_minorVersion,
      resumeToken: v_resumeToken,
      lastReceivedServerPosition: v_lastReceivedServerPosition,
      firstAvailableClientPosition: v_firstAvailableClientPosition
    });
  }
  function _decodeResumeOk(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 8)
      throw new Truncated("ResumeOk: input ends inside the frame", pos + 8);
    const w1_0 = r.view.getBigUint64(pos);
    const v_lastReceivedClientPosition = w1_0 & 0x7fffffffffffffffn;
    pos += 8;
    r.pos = pos;
    return new ResumeOk({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      lastReceivedClientPosition: v_lastReceivedClientPosition
    });
  }
  function _decodeExt(r, end, ctx, v_streamId, flags) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 4)
      throw new Truncated("Ext: input ends inside the frame", pos + 4);
    const w1_0 = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    const v_extendedType = w1_0 & 2147483647;
    if (v_extendedType < 1 || v_extendedType > 2147483647) {
      throw new InvalidValue(`Ext.extendedType: ${v_extendedType} is outside 1..0x7fffffff`);
    }
    pos += 4;
    let v_metadata = null;
    if ((flags & 256) !== 0) {
      {
        let n;
        if (end - pos < 3)
          throw new Truncated("Ext.metadata: input ends", pos + 3);
        n = data[pos] << 16 | data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (n > end - pos) {
          throw new Truncated(`Ext.metadata: ${n} bytes declared, ${end - pos} left`, pos + n);
        }
        v_metadata = data.subarray(pos, pos + n);
        pos += n;
      }
    }
    let v_data;
    v_data = data.subarray(pos, end);
    pos = end;
    r.pos = pos;
    return new Ext({
      streamId: v_streamId,
      ignore: (flags & 512) !== 0,
      extendedType: v_extendedType,
      metadata: v_metadata,
      data: v_data
    });
  }
  function _decodeFrame(r, end, ctx, sender) {
    const data = r.data;
    let pos = r.pos;
    if (end - pos < 6)
      throw new Truncated("header: input ends inside the frame", pos + 6);
    const w1_0 = (data[pos] << 24 | data[pos + 1] << 16 | data[pos + 2] << 8 | data[pos + 3]) >>> 0;
    const v_streamId = w1_0 & 2147483647;
    const w1_4 = data[pos + 4] << 8 | data[pos + 5];
    const v_frameType = w1_4 >>> 10;
    const flags = w1_4 & 1023;
    pos += 6;
    r.pos = pos;
    const key = v_frameType;
    switch (key) {
      case 1:
        return _decodeSetup(r, end, ctx, v_streamId, flags);
      case 2:
        return _decodeLease(r, end, ctx, v_streamId, flags);
      case 3:
        return _decodeKeepalive(r, end, ctx, v_streamId, flags);
      case 4:
        return _decodeRequestResponse(r, end, ctx, v_streamId, flags);
      case 5:
        return _decodeRequestFnf(r, end, ctx, v_streamId, flags);
      case 6:
        return _decodeRequestStream(r, end, ctx, v_streamId, flags);
      case 7:
        return _decodeRequestChannel(r, end, ctx, v_streamId, flags);
      case 8:
        return _decodeRequestN(r, end, ctx, v_streamId, flags);
      case 9:
        return _decodeCancel(r, end, ctx, v_streamId, flags);
      case 10:
        return _decodePayload(r, end, ctx, v_streamId, flags);
      case 11:
        return _decodeError(r, end, ctx, v_streamId, flags);
      case 12:
        return _decodeMetadataPush(r, end, ctx, v_streamId, flags);
      case 13:
        return _decodeResume(r, end, ctx, v_streamId, flags);
      case 14:
        return _decodeResumeOk(r, end, ctx, v_streamId, flags);
      case 63:
        return _decodeExt(r, end, ctx, v_streamId, flags);
    }
    if ((flags & 512) !== 0) {
      r.pos = end;
      return new UnknownFrame({
        code: key,
        streamId: v_streamId,
        flags,
        body: data.subarray(pos, end)
      });
    }
    throw new UnknownFrameType(`RSocket 1.0: unknown frame type ${key}`);
  }
  function decodeAt(data, pos, end, ctx, sender) {
    const r = new Reader(data, pos);
    const frame = _decodeFrame(r, end, ctx, sender);
    return [frame, r.pos];
  }
  function encode(frame, ctx) {
    const w = Writer.shared();
    frame._write(w, ctx);
    return w.finish();
  }
  function frameBytes(frame, ctx) {
    const w = Writer.shared();
    const at = w.reserve(3);
    frame._write(w, ctx);
    const size = w.length - at - 3;
    if (size > 16777215) {
      throw new EncodeError(`a frame of ${size} bytes does not fit the 24-bit length prefix`);
    }
    w.patchU24(at, size);
    return w.finish();
  }
  var StreamDecoder = class extends LengthPrefixedDecoder {
    constructor(options = {}) {
      super(decodeAt, 3, MAX_FRAME_SIZE, options);
    }
  };

  // generated/typescript/dist/rsocket/v1_0/machines.js
  function guard0(frame) {
    return frame.streamId === 0 && !frame.lease;
  }
  function guard1(frame) {
    return frame.streamId === 0 && frame.lease;
  }
  function guard2(frame) {
    return frame.streamId === 0;
  }
  function guard3(frame) {
    return frame.streamId === 0;
  }
  function guard4(frame) {
    return frame.streamId === 0;
  }
  function guard5(frame) {
    return frame.streamId === 0;
  }
  function guard6(frame) {
    return frame.streamId === 0 && frame.errorCode === ErrorCode.CONNECTION_ERROR;
  }
  function guard7(frame) {
    return frame.streamId === 0 && frame.errorCode === ErrorCode.CONNECTION_CLOSE;
  }
  function guard8(frame) {
    return frame.streamId !== 0;
  }
  function guard9(frame) {
    return frame.streamId === 0;
  }
  function guard10(frame) {
    return frame.streamId === 0;
  }
  function guard11(frame) {
    return frame.streamId === 0 && (frame.errorCode === ErrorCode.INVALID_SETUP || frame.errorCode === ErrorCode.UNSUPPORTED_SETUP || frame.errorCode === ErrorCode.REJECTED_SETUP || frame.errorCode === ErrorCode.REJECTED_RESUME);
  }
  function guard12(frame) {
    return frame.streamId === 0 && (frame.errorCode === ErrorCode.INVALID_SETUP || frame.errorCode === ErrorCode.CONNECTION_ERROR);
  }
  function guard13(frame) {
    return frame.streamId === 0 && (frame.errorCode === ErrorCode.INVALID_SETUP || frame.errorCode === ErrorCode.UNSUPPORTED_SETUP || frame.errorCode === ErrorCode.REJECTED_SETUP);
  }
  function guard14(frame) {
    return frame.streamId === 0 && (frame.errorCode === ErrorCode.REJECTED_RESUME || frame.errorCode === ErrorCode.CONNECTION_ERROR);
  }
  function guard15(frame) {
    return frame.follows;
  }
  function guard16(frame) {
    return frame.follows;
  }
  function guard17(frame) {
    return frame.follows;
  }
  function guard18(frame) {
    return frame.follows;
  }
  function guard19(frame) {
    return !frame.follows;
  }
  function guard20(frame) {
    return !frame.follows;
  }
  function guard21(frame) {
    return !frame.follows;
  }
  function guard22(frame) {
    return !frame.follows;
  }
  function guard23(frame) {
    return frame.follows && !frame.complete;
  }
  function guard24(frame) {
    return !frame.follows;
  }
  function guard25(frame) {
    return frame.follows && frame.complete;
  }
  function guard26(frame) {
    return frame.errorCode !== ErrorCode.RESERVED && frame.errorCode !== ErrorCode.INVALID_SETUP && frame.errorCode !== ErrorCode.UNSUPPORTED_SETUP && frame.errorCode !== ErrorCode.REJECTED_SETUP && frame.errorCode !== ErrorCode.REJECTED_RESUME && frame.errorCode !== ErrorCode.CONNECTION_ERROR && frame.errorCode !== ErrorCode.CONNECTION_CLOSE && frame.errorCode !== ErrorCode.RESERVED_FOR_EXTENSION;
  }
  function guard27(frame) {
    return frame.complete;
  }
  function guard28(frame) {
    return !frame.complete;
  }
  function guard29(frame) {
    return !frame.complete && frame.next;
  }
  function guard30(frame) {
    return !frame.complete && !frame.next;
  }
  function guard31(frame) {
    return !frame.complete;
  }
  function guard32(frame) {
    return frame.complete;
  }
  var ConnectionState;
  (function(ConnectionState2) {
    ConnectionState2["NEW"] = "new";
    ConnectionState2["SETUP_SENT"] = "setup_sent";
    ConnectionState2["AWAITING_LEASE"] = "awaiting_lease";
    ConnectionState2["ESTABLISHED"] = "established";
    ConnectionState2["RESUMING"] = "resuming";
    ConnectionState2["RESUME_RECEIVED"] = "resume_received";
    ConnectionState2["CLOSING"] = "closing";
    ConnectionState2["CLOSED"] = "closed";
  })(ConnectionState || (ConnectionState = {}));
  var ConnectionMachine = class extends StateMachine {
    static NAME = "connection";
    static SCOPE = "connection";
    static ROLES = ["client", "server"];
    static INITIAL = {
      client: ConnectionState.NEW,
      server: ConnectionState.NEW
    };
    static TERMINAL = /* @__PURE__ */ new Set([
      ConnectionState.CLOSED
    ]);
    static SEND = {
      client: table([
        [ConnectionState.NEW, Setup, [
          [guard0, ConnectionState.SETUP_SENT],
          [guard1, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.NEW, Resume, [
          [guard2, ConnectionState.RESUMING]
        ]],
        [ConnectionState.NEW, ANY, [
          [null, new Illegal("the client MUST send SETUP or RESUME (on stream 0) before any other frame", "Connection Establishment: 'Immediately upon successful connection, the client MUST send either a SETUP or RESUME frame with Stream ID of 0.'")]
        ]],
        [ConnectionState.SETUP_SENT, RequestResponse, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, RequestFnf, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, RequestStream, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, RequestChannel, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, Keepalive, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, MetadataPush, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestResponse, [
          [null, new Illegal("requests must wait for the server's LEASE (SETUP had the L flag)", "Connection Establishment: 'MUST wait for the server-side Responder to send a LEASE frame before it can send Requests.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestFnf, [
          [null, new Illegal("requests must wait for the server's LEASE (SETUP had the L flag)", "Connection Establishment: 'MUST wait for the server-side Responder to send a LEASE frame before it can send Requests.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestStream, [
          [null, new Illegal("requests must wait for the server's LEASE (SETUP had the L flag)", "Connection Establishment: 'MUST wait for the server-side Responder to send a LEASE frame before it can send Requests.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestChannel, [
          [null, new Illegal("requests must wait for the server's LEASE (SETUP had the L flag)", "Connection Establishment: 'MUST wait for the server-side Responder to send a LEASE frame before it can send Requests.'")]
        ]],
        [ConnectionState.RESUMING, ANY, [
          [null, new Illegal("the client must NOT send any other frame until resumption succeeds", "Resuming Operation, Client Side: 'The client must NOT send any other frame types until resumption succeeds.'")]
        ]],
        [ConnectionState.ESTABLISHED, RequestResponse, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestFnf, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestStream, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestChannel, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, Keepalive, [
          [guard3, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, MetadataPush, [
          [guard4, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, Lease, [
          [guard5, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, Keepalive, [
          [guard3, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, MetadataPush, [
          [guard4, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, Lease, [
          [guard5, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, ErrorFrame, [
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.ESTABLISHED, ErrorFrame, [
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, ErrorFrame, [
          [guard6, ConnectionState.CLOSED]
        ]],
        [ConnectionState.CLOSING, RequestResponse, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, RequestFnf, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, RequestStream, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, RequestChannel, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, Keepalive, [
          [guard3, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, MetadataPush, [
          [guard4, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, Lease, [
          [guard5, ConnectionState.CLOSING]
        ]],
        [ConnectionState.SETUP_SENT, Ext, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.AWAITING_LEASE, Ext, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.ESTABLISHED, Ext, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.CLOSING, Ext, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, ANY, [
          [null, new Illegal("the connection is closing: stream frames, KEEPALIVE, LEASE, METADATA_PUSH, EXT and ERROR[CONNECTION_ERROR] only", "")]
        ]],
        [ConnectionState.SETUP_SENT, ErrorFrame, [
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSED, ANY, [
          [null, new Illegal("the connection is closed", "Transport Protocol: 'it is assumed that that connection will have no further frames sent'")]
        ]]
      ]),
      server: table([
        [ConnectionState.NEW, ErrorFrame, [
          [guard12, ConnectionState.CLOSED]
        ]],
        [ConnectionState.NEW, ANY, [
          [null, new Illegal("the server sends nothing before it has received SETUP or RESUME", "Connection Establishment: 'Until connection establishment is complete, a Responder MUST NOT emit any PAYLOAD frames.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, ErrorFrame, [
          [guard13, ConnectionState.CLOSED],
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.ESTABLISHED, ErrorFrame, [
          [guard13, ConnectionState.CLOSED],
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestResponse, [
          [null, new Illegal("requests must wait for the client's LEASE (SETUP had the L flag)", "Connection Establishment: 'the server-side Requester MUST wait for a LEASE frame from the client-side Responder before it can send a request.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestFnf, [
          [null, new Illegal("requests must wait for the client's LEASE (SETUP had the L flag)", "Connection Establishment: 'the server-side Requester MUST wait for a LEASE frame from the client-side Responder before it can send a request.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestStream, [
          [null, new Illegal("requests must wait for the client's LEASE (SETUP had the L flag)", "Connection Establishment: 'the server-side Requester MUST wait for a LEASE frame from the client-side Responder before it can send a request.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestChannel, [
          [null, new Illegal("requests must wait for the client's LEASE (SETUP had the L flag)", "Connection Establishment: 'the server-side Requester MUST wait for a LEASE frame from the client-side Responder before it can send a request.'")]
        ]],
        [ConnectionState.RESUME_RECEIVED, ResumeOk, [
          [guard10, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.RESUME_RECEIVED, ErrorFrame, [
          [guard14, ConnectionState.CLOSED]
        ]],
        [ConnectionState.RESUME_RECEIVED, ANY, [
          [null, new Illegal("the server answers RESUME with RESUME_OK or ERROR[REJECTED_RESUME] first", "Resuming Operation, Server Side: 'the server MUST send a RESUME_OK' / 'MUST send an ERROR[REJECTED_RESUME] frame'")]
        ]],
        [ConnectionState.ESTABLISHED, RequestResponse, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestFnf, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestStream, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestChannel, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, Keepalive, [
          [guard3, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, MetadataPush, [
          [guard4, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, Lease, [
          [guard5, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, Keepalive, [
          [guard3, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, MetadataPush, [
          [guard4, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, Lease, [
          [guard5, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.CLOSING, ErrorFrame, [
          [guard6, ConnectionState.CLOSED]
        ]],
        [ConnectionState.CLOSING, RequestResponse, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, RequestFnf, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, RequestStream, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, RequestChannel, [
          [null, new Illegal("the connection is closing (ERROR[CONNECTION_CLOSE]): no new requests", "ERROR Frame: 'CONNECTION_CLOSE ... New requests MAY not be accepted.'")]
        ]],
        [ConnectionState.CLOSING, Keepalive, [
          [guard3, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, MetadataPush, [
          [guard4, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, Lease, [
          [guard5, ConnectionState.CLOSING]
        ]],
        [ConnectionState.AWAITING_LEASE, Ext, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.ESTABLISHED, Ext, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.CLOSING, Ext, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, ANY, [
          [null, new Illegal("the connection is closing: stream frames, KEEPALIVE, LEASE, METADATA_PUSH, EXT and ERROR[CONNECTION_ERROR] only", "")]
        ]],
        [ConnectionState.CLOSED, ANY, [
          [null, new Illegal("the connection is closed", "Transport Protocol: 'it is assumed that that connection will have no further frames sent'")]
        ]]
      ])
    };
    static RECEIVE = {
      client: table([
        [ConnectionState.NEW, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.SETUP_SENT, Lease, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, Payload, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, RequestN, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, Cancel, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, RequestResponse, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, RequestFnf, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, RequestStream, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, RequestChannel, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.SETUP_SENT, ErrorFrame, [
          [guard8, ConnectionState.ESTABLISHED],
          [guard9, ConnectionState.CLOSED]
        ]],
        [ConnectionState.AWAITING_LEASE, ErrorFrame, [
          [guard9, ConnectionState.CLOSED]
        ]],
        [ConnectionState.SETUP_SENT, Keepalive, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, MetadataPush, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.SETUP_SENT, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.AWAITING_LEASE, Lease, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.RESUMING, ResumeOk, [
          [guard10, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.RESUMING, ErrorFrame, [
          [guard9, ConnectionState.CLOSED]
        ]],
        [ConnectionState.RESUMING, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.ESTABLISHED, Setup, [
          [null, IGNORE]
        ]],
        [ConnectionState.ESTABLISHED, ErrorFrame, [
          [guard11, IGNORE],
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.ESTABLISHED, RequestResponse, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestFnf, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestStream, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestChannel, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestResponse, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestFnf, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestStream, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestChannel, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.ESTABLISHED, Keepalive, [
          [guard3, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, MetadataPush, [
          [guard4, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, Lease, [
          [guard5, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, Keepalive, [
          [guard3, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, MetadataPush, [
          [guard4, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.CLOSING, RequestResponse, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, RequestFnf, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, RequestStream, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, RequestChannel, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, Keepalive, [
          [guard3, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, MetadataPush, [
          [guard4, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, Lease, [
          [guard5, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, ErrorFrame, [
          [guard7, ConnectionState.CLOSING],
          [guard6, ConnectionState.CLOSED]
        ]],
        [ConnectionState.CLOSING, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.SETUP_SENT, Ext, [
          [null, ConnectionState.SETUP_SENT]
        ]],
        [ConnectionState.AWAITING_LEASE, Ext, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.ESTABLISHED, Ext, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.CLOSING, Ext, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.AWAITING_LEASE, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.ESTABLISHED, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.CLOSED, ANY, [
          [null, IGNORE]
        ]]
      ]),
      server: table([
        [ConnectionState.NEW, Setup, [
          [guard0, ConnectionState.ESTABLISHED],
          [guard1, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.NEW, Resume, [
          [guard2, ConnectionState.RESUME_RECEIVED]
        ]],
        [ConnectionState.NEW, ANY, [
          [null, new Illegal("the first frame must be SETUP or RESUME on stream 0 (answered with ERROR[INVALID_SETUP])", "Connection Establishment: 'Any other frame received that is NOT a SETUP|RESUME frame or a SETUP|RESUME frame with a Stream ID > 0, MUST cause the server to send an ERROR[INVALID_SETUP] and close the connection.'")]
        ]],
        [ConnectionState.AWAITING_LEASE, Lease, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, Setup, [
          [null, IGNORE]
        ]],
        [ConnectionState.ESTABLISHED, Setup, [
          [null, IGNORE]
        ]],
        [ConnectionState.AWAITING_LEASE, ErrorFrame, [
          [guard11, IGNORE],
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.ESTABLISHED, ErrorFrame, [
          [guard11, IGNORE],
          [guard6, ConnectionState.CLOSED],
          [guard7, ConnectionState.CLOSING]
        ]],
        [ConnectionState.AWAITING_LEASE, Resume, [
          [null, new Illegal("RESUME after SETUP (answered with ERROR[CONNECTION_ERROR])", "Resuming Operation, Server Side: 'A Server that receives a RESUME frame after a SETUP frame, SHOULD send an ERROR[CONNECTION_ERROR].'")]
        ]],
        [ConnectionState.ESTABLISHED, Resume, [
          [null, new Illegal("RESUME after SETUP (answered with ERROR[CONNECTION_ERROR])", "Resuming Operation, Server Side: 'A Server that receives a RESUME frame after a SETUP frame, SHOULD send an ERROR[CONNECTION_ERROR].'")]
        ]],
        [ConnectionState.RESUME_RECEIVED, Resume, [
          [null, new Illegal("RESUME after a previous RESUME (answered with ERROR[CONNECTION_ERROR])", "Resuming Operation, Server Side: 'A Server that receives a RESUME frame after a previous RESUME frame, SHOULD send an ERROR[CONNECTION_ERROR].'")]
        ]],
        [ConnectionState.RESUME_RECEIVED, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.ESTABLISHED, RequestResponse, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestFnf, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestStream, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, RequestChannel, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestResponse, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestFnf, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestStream, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, RequestChannel, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.ESTABLISHED, Keepalive, [
          [guard3, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, MetadataPush, [
          [guard4, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.ESTABLISHED, Lease, [
          [guard5, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.AWAITING_LEASE, Keepalive, [
          [guard3, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.AWAITING_LEASE, MetadataPush, [
          [guard4, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.CLOSING, RequestResponse, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, RequestFnf, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, RequestStream, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, RequestChannel, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, Keepalive, [
          [guard3, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, MetadataPush, [
          [guard4, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, Lease, [
          [guard5, ConnectionState.CLOSING]
        ]],
        [ConnectionState.CLOSING, ErrorFrame, [
          [guard7, ConnectionState.CLOSING],
          [guard6, ConnectionState.CLOSED]
        ]],
        [ConnectionState.CLOSING, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.AWAITING_LEASE, Ext, [
          [null, ConnectionState.AWAITING_LEASE]
        ]],
        [ConnectionState.ESTABLISHED, Ext, [
          [null, ConnectionState.ESTABLISHED]
        ]],
        [ConnectionState.CLOSING, Ext, [
          [null, ConnectionState.CLOSING]
        ]],
        [ConnectionState.AWAITING_LEASE, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.ESTABLISHED, ANY, [
          [null, IGNORE]
        ]],
        [ConnectionState.CLOSED, ANY, [
          [null, IGNORE]
        ]]
      ])
    };
    // The engine method each received frame goes to once this machine let it through
    // (Python's HANDLERS; its on_<scope>_<frame> spelled on<Scope><Frame>, e.g. onStreamRequestN);
    // frames whose rows ignore or refuse it never get there.
    static HANDLERS = {
      client: /* @__PURE__ */ new Map([
        [Lease, "onConnectionLease"],
        [Keepalive, "onConnectionKeepalive"],
        [ErrorFrame, "onConnectionError"],
        [MetadataPush, "onConnectionMetadataPush"],
        [ResumeOk, "onConnectionResumeOk"],
        [Ext, "onConnectionExt"]
      ]),
      server: /* @__PURE__ */ new Map([
        [Setup, "onConnectionSetup"],
        [Lease, "onConnectionLease"],
        [Keepalive, "onConnectionKeepalive"],
        [ErrorFrame, "onConnectionError"],
        [MetadataPush, "onConnectionMetadataPush"],
        [Resume, "onConnectionResume"],
        [Ext, "onConnectionExt"]
      ])
    };
    /** `HANDLERS["client"]` bound to `h`'s methods (an engine's dispatch). */
    static bindClient(h) {
      return /* @__PURE__ */ new Map([
        [Lease, (frame, ...context) => h.onConnectionLease(frame, ...context)],
        [Keepalive, (frame, ...context) => h.onConnectionKeepalive(frame, ...context)],
        [ErrorFrame, (frame, ...context) => h.onConnectionError(frame, ...context)],
        [
          MetadataPush,
          (frame, ...context) => h.onConnectionMetadataPush(frame, ...context)
        ],
        [ResumeOk, (frame, ...context) => h.onConnectionResumeOk(frame, ...context)],
        [Ext, (frame, ...context) => h.onConnectionExt(frame, ...context)]
      ]);
    }
    /** `HANDLERS["server"]` bound to `h`'s methods (an engine's dispatch). */
    static bindServer(h) {
      return /* @__PURE__ */ new Map([
        [Setup, (frame, ...context) => h.onConnectionSetup(frame, ...context)],
        [Lease, (frame, ...context) => h.onConnectionLease(frame, ...context)],
        [Keepalive, (frame, ...context) => h.onConnectionKeepalive(frame, ...context)],
        [ErrorFrame, (frame, ...context) => h.onConnectionError(frame, ...context)],
        [
          MetadataPush,
          (frame, ...context) => h.onConnectionMetadataPush(frame, ...context)
        ],
        [Resume, (frame, ...context) => h.onConnectionResume(frame, ...context)],
        [Ext, (frame, ...context) => h.onConnectionExt(frame, ...context)]
      ]);
    }
    constructor(role, state) {
      super(role, state);
    }
  };
  var FragmentsState;
  (function(FragmentsState2) {
    FragmentsState2["IDLE"] = "idle";
    FragmentsState2["WHOLE"] = "whole";
    FragmentsState2["PARTIAL"] = "partial";
  })(FragmentsState || (FragmentsState = {}));
  var FragmentsMachine = class extends StateMachine {
    static NAME = "fragments";
    static SCOPE = "stream_direction";
    static ROLES = ["sender", "receiver"];
    static INITIAL = {
      sender: FragmentsState.IDLE,
      receiver: FragmentsState.IDLE
    };
    static TERMINAL = /* @__PURE__ */ new Set([]);
    static SEND = {
      sender: table([
        [FragmentsState.IDLE, RequestResponse, [
          [guard15, FragmentsState.PARTIAL],
          [guard19, FragmentsState.WHOLE]
        ]],
        [FragmentsState.IDLE, RequestFnf, [
          [guard16, FragmentsState.PARTIAL],
          [guard20, FragmentsState.WHOLE]
        ]],
        [FragmentsState.IDLE, RequestStream, [
          [guard17, FragmentsState.PARTIAL],
          [guard21, FragmentsState.WHOLE]
        ]],
        [FragmentsState.IDLE, RequestChannel, [
          [guard18, FragmentsState.PARTIAL],
          [guard22, FragmentsState.WHOLE]
        ]],
        [FragmentsState.WHOLE, Payload, [
          [guard23, FragmentsState.PARTIAL],
          [guard24, FragmentsState.WHOLE],
          [guard25, new Illegal("C goes on the last fragment (a PAYLOAD with F and C ends the message)", "Handling the Unexpected: 'A PAYLOAD with both F and C flags set, implicitly ignores the F flag.'")]
        ]],
        [FragmentsState.PARTIAL, Payload, [
          [guard23, FragmentsState.PARTIAL],
          [guard24, FragmentsState.WHOLE],
          [guard25, new Illegal("C goes on the last fragment (a PAYLOAD with F and C ends the message)", "Handling the Unexpected: 'A PAYLOAD with both F and C flags set, implicitly ignores the F flag.'")]
        ]],
        [FragmentsState.PARTIAL, RequestResponse, [
          [null, new Illegal("a fragmented request continues with PAYLOAD frames", "Fragmentation And Reassembly, REQUEST Frames: 'followed by a sequence of PAYLOAD frames.'")]
        ]],
        [FragmentsState.PARTIAL, RequestFnf, [
          [null, new Illegal("a fragmented request continues with PAYLOAD frames", "Fragmentation And Reassembly, REQUEST Frames: 'followed by a sequence of PAYLOAD frames.'")]
        ]],
        [FragmentsState.PARTIAL, RequestStream, [
          [null, new Illegal("a fragmented request continues with PAYLOAD frames", "Fragmentation And Reassembly, REQUEST Frames: 'followed by a sequence of PAYLOAD frames.'")]
        ]],
        [FragmentsState.PARTIAL, RequestChannel, [
          [null, new Illegal("a fragmented request continues with PAYLOAD frames", "Fragmentation And Reassembly, REQUEST Frames: 'followed by a sequence of PAYLOAD frames.'")]
        ]],
        [FragmentsState.WHOLE, RequestResponse, [
          [null, new Illegal("a stream has one REQUEST_* frame", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame.'")]
        ]],
        [FragmentsState.WHOLE, RequestFnf, [
          [null, new Illegal("a stream has one REQUEST_* frame", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame.'")]
        ]],
        [FragmentsState.WHOLE, RequestStream, [
          [null, new Illegal("a stream has one REQUEST_* frame", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame.'")]
        ]],
        [FragmentsState.WHOLE, RequestChannel, [
          [null, new Illegal("a stream has one REQUEST_* frame", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame.'")]
        ]]
      ]),
      receiver: table([])
    };
    static RECEIVE = {
      sender: table([]),
      receiver: table([
        [FragmentsState.IDLE, RequestResponse, [
          [guard15, FragmentsState.PARTIAL],
          [guard19, FragmentsState.WHOLE]
        ]],
        [FragmentsState.IDLE, RequestFnf, [
          [guard16, FragmentsState.PARTIAL],
          [guard20, FragmentsState.WHOLE]
        ]],
        [FragmentsState.IDLE, RequestStream, [
          [guard17, FragmentsState.PARTIAL],
          [guard21, FragmentsState.WHOLE]
        ]],
        [FragmentsState.IDLE, RequestChannel, [
          [guard18, FragmentsState.PARTIAL],
          [guard22, FragmentsState.WHOLE]
        ]],
        [FragmentsState.WHOLE, Payload, [
          [guard23, FragmentsState.PARTIAL],
          [guard24, FragmentsState.WHOLE],
          [guard25, FragmentsState.WHOLE]
        ]],
        [FragmentsState.PARTIAL, Payload, [
          [guard23, FragmentsState.PARTIAL],
          [guard24, FragmentsState.WHOLE],
          [guard25, FragmentsState.WHOLE]
        ]],
        [FragmentsState.WHOLE, RequestResponse, [
          [null, IGNORE]
        ]],
        [FragmentsState.PARTIAL, RequestResponse, [
          [null, IGNORE]
        ]],
        [FragmentsState.WHOLE, RequestFnf, [
          [null, IGNORE]
        ]],
        [FragmentsState.PARTIAL, RequestFnf, [
          [null, IGNORE]
        ]],
        [FragmentsState.WHOLE, RequestStream, [
          [null, IGNORE]
        ]],
        [FragmentsState.PARTIAL, RequestStream, [
          [null, IGNORE]
        ]],
        [FragmentsState.WHOLE, RequestChannel, [
          [null, IGNORE]
        ]],
        [FragmentsState.PARTIAL, RequestChannel, [
          [null, IGNORE]
        ]],
        [FragmentsState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [FragmentsState.WHOLE, ANY, [
          [null, IGNORE]
        ]],
        [FragmentsState.PARTIAL, ANY, [
          [null, IGNORE]
        ]]
      ])
    };
    // The engine method each received frame goes to once this machine let it through
    // (Python's HANDLERS; its on_<scope>_<frame> spelled on<Scope><Frame>, e.g. onStreamRequestN);
    // frames whose rows ignore or refuse it never get there.
    static HANDLERS = {
      sender: /* @__PURE__ */ new Map([]),
      receiver: /* @__PURE__ */ new Map([])
    };
    /** `HANDLERS["sender"]` bound to `h`'s methods (an engine's dispatch). */
    static bindSender(_h) {
      return /* @__PURE__ */ new Map([]);
    }
    /** `HANDLERS["receiver"]` bound to `h`'s methods (an engine's dispatch). */
    static bindReceiver(_h) {
      return /* @__PURE__ */ new Map([]);
    }
    constructor(role, state) {
      super(role, state);
    }
  };
  var RequestResponseState;
  (function(RequestResponseState2) {
    RequestResponseState2["IDLE"] = "idle";
    RequestResponseState2["OPEN"] = "open";
    RequestResponseState2["CLOSED"] = "closed";
  })(RequestResponseState || (RequestResponseState = {}));
  var RequestResponseMachine = class extends StateMachine {
    static NAME = "request_response";
    static SCOPE = "stream";
    static ROLES = ["requester", "responder"];
    static INITIAL = {
      requester: RequestResponseState.IDLE,
      responder: RequestResponseState.IDLE
    };
    static TERMINAL = /* @__PURE__ */ new Set([
      RequestResponseState.CLOSED
    ]);
    static SEND = {
      requester: table([
        [RequestResponseState.IDLE, RequestResponse, [
          [null, RequestResponseState.OPEN]
        ]],
        [RequestResponseState.OPEN, Cancel, [
          [null, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.IDLE, ANY, [
          [null, new Illegal("a request-response requester sends only its request, then maybe CANCEL", "Request Response: 'RQ -> RS: REQUEST_RESPONSE', 'RQ -> RS: CANCEL'")]
        ]],
        [RequestResponseState.OPEN, ANY, [
          [null, new Illegal("a request-response requester sends only its request, then maybe CANCEL", "Request Response: 'RQ -> RS: REQUEST_RESPONSE', 'RQ -> RS: CANCEL'")]
        ]]
      ]),
      responder: table([
        [RequestResponseState.OPEN, Payload, [
          [guard27, RequestResponseState.CLOSED],
          [guard28, new Illegal("the response to REQUEST_RESPONSE carries the C flag (it ends the stream)", "Request Response: 'RS -> RQ: PAYLOAD with COMPLETE'")]
        ]],
        [RequestResponseState.IDLE, ErrorFrame, [
          [guard26, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.OPEN, ErrorFrame, [
          [guard26, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.IDLE, ANY, [
          [null, new Illegal("a request-response responder sends one PAYLOAD (with C) or an ERROR with a stream error code", "ERROR Frame: 'APPLICATION_ERROR ... Stream ID MUST be > 0.'")]
        ]],
        [RequestResponseState.OPEN, ANY, [
          [null, new Illegal("a request-response responder sends one PAYLOAD (with C) or an ERROR with a stream error code", "ERROR Frame: 'APPLICATION_ERROR ... Stream ID MUST be > 0.'")]
        ]]
      ])
    };
    static RECEIVE = {
      requester: table([
        [RequestResponseState.OPEN, Payload, [
          [null, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.OPEN, ErrorFrame, [
          [guard26, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [RequestResponseState.OPEN, ANY, [
          [null, IGNORE]
        ]]
      ]),
      responder: table([
        [RequestResponseState.IDLE, RequestResponse, [
          [null, RequestResponseState.OPEN]
        ]],
        [RequestResponseState.IDLE, Cancel, [
          [null, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.OPEN, Cancel, [
          [null, RequestResponseState.CLOSED]
        ]],
        [RequestResponseState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [RequestResponseState.OPEN, ANY, [
          [null, IGNORE]
        ]]
      ])
    };
    // The engine method each received frame goes to once this machine let it through
    // (Python's HANDLERS; its on_<scope>_<frame> spelled on<Scope><Frame>, e.g. onStreamRequestN);
    // frames whose rows ignore or refuse it never get there.
    static HANDLERS = {
      requester: /* @__PURE__ */ new Map([
        [Payload, "onStreamPayload"],
        [ErrorFrame, "onStreamError"]
      ]),
      responder: /* @__PURE__ */ new Map([
        [RequestResponse, "onStreamRequestResponse"],
        [Cancel, "onStreamCancel"]
      ])
    };
    /** `HANDLERS["requester"]` bound to `h`'s methods (an engine's dispatch). */
    static bindRequester(h) {
      return /* @__PURE__ */ new Map([
        [Payload, (frame, ...context) => h.onStreamPayload(frame, ...context)],
        [ErrorFrame, (frame, ...context) => h.onStreamError(frame, ...context)]
      ]);
    }
    /** `HANDLERS["responder"]` bound to `h`'s methods (an engine's dispatch). */
    static bindResponder(h) {
      return /* @__PURE__ */ new Map([
        [
          RequestResponse,
          (frame, ...context) => h.onStreamRequestResponse(frame, ...context)
        ],
        [Cancel, (frame, ...context) => h.onStreamCancel(frame, ...context)]
      ]);
    }
    constructor(role, state) {
      super(role, state);
    }
  };
  var RequestFnfState;
  (function(RequestFnfState2) {
    RequestFnfState2["IDLE"] = "idle";
    RequestFnfState2["CLOSED"] = "closed";
  })(RequestFnfState || (RequestFnfState = {}));
  var RequestFnfMachine = class extends StateMachine {
    static NAME = "request_fnf";
    static SCOPE = "stream";
    static ROLES = ["requester", "responder"];
    static INITIAL = {
      requester: RequestFnfState.IDLE,
      responder: RequestFnfState.IDLE
    };
    static TERMINAL = /* @__PURE__ */ new Set([
      RequestFnfState.CLOSED
    ]);
    static SEND = {
      requester: table([
        [RequestFnfState.IDLE, RequestFnf, [
          [null, RequestFnfState.CLOSED]
        ]],
        [RequestFnfState.IDLE, ANY, [
          [null, new Illegal("a fire-and-forget stream is one REQUEST_FNF", "")]
        ]]
      ]),
      responder: table([
        [RequestFnfState.IDLE, ANY, [
          [null, new Illegal("nothing answers a fire-and-forget request", "")]
        ]]
      ])
    };
    static RECEIVE = {
      requester: table([
        [RequestFnfState.IDLE, ANY, [
          [null, IGNORE]
        ]]
      ]),
      responder: table([
        [RequestFnfState.IDLE, RequestFnf, [
          [null, RequestFnfState.CLOSED]
        ]],
        [RequestFnfState.IDLE, Cancel, [
          [null, RequestFnfState.CLOSED]
        ]],
        [RequestFnfState.IDLE, ANY, [
          [null, IGNORE]
        ]]
      ])
    };
    // The engine method each received frame goes to once this machine let it through
    // (Python's HANDLERS; its on_<scope>_<frame> spelled on<Scope><Frame>, e.g. onStreamRequestN);
    // frames whose rows ignore or refuse it never get there.
    static HANDLERS = {
      requester: /* @__PURE__ */ new Map([]),
      responder: /* @__PURE__ */ new Map([
        [RequestFnf, "onStreamRequestFnf"],
        [Cancel, "onStreamCancel"]
      ])
    };
    /** `HANDLERS["requester"]` bound to `h`'s methods (an engine's dispatch). */
    static bindRequester(_h) {
      return /* @__PURE__ */ new Map([]);
    }
    /** `HANDLERS["responder"]` bound to `h`'s methods (an engine's dispatch). */
    static bindResponder(h) {
      return /* @__PURE__ */ new Map([
        [RequestFnf, (frame, ...context) => h.onStreamRequestFnf(frame, ...context)],
        [Cancel, (frame, ...context) => h.onStreamCancel(frame, ...context)]
      ]);
    }
    constructor(role, state) {
      super(role, state);
    }
  };
  var RequestStreamState;
  (function(RequestStreamState2) {
    RequestStreamState2["IDLE"] = "idle";
    RequestStreamState2["OPEN"] = "open";
    RequestStreamState2["CLOSED"] = "closed";
  })(RequestStreamState || (RequestStreamState = {}));
  var RequestStreamMachine = class extends StateMachine {
    static NAME = "request_stream";
    static SCOPE = "stream";
    static ROLES = ["requester", "responder"];
    static INITIAL = {
      requester: RequestStreamState.IDLE,
      responder: RequestStreamState.IDLE
    };
    static TERMINAL = /* @__PURE__ */ new Set([
      RequestStreamState.CLOSED
    ]);
    static SEND = {
      requester: table([
        [RequestStreamState.IDLE, RequestStream, [
          [null, RequestStreamState.OPEN]
        ]],
        [RequestStreamState.OPEN, RequestN, [
          [null, RequestStreamState.OPEN]
        ]],
        [RequestStreamState.OPEN, Cancel, [
          [null, RequestStreamState.CLOSED]
        ]],
        [RequestStreamState.IDLE, ANY, [
          [null, new Illegal("a request-stream requester sends only its request, REQUEST_N and CANCEL", "")]
        ]],
        [RequestStreamState.OPEN, ANY, [
          [null, new Illegal("a request-stream requester sends only its request, REQUEST_N and CANCEL", "")]
        ]]
      ]),
      responder: table([
        [RequestStreamState.OPEN, Payload, [
          [guard27, RequestStreamState.CLOSED],
          [guard29, RequestStreamState.OPEN],
          [guard30, new Illegal("a PAYLOAD needs the N or the C flag", "PAYLOAD Frame: 'A PAYLOAD MUST NOT have both (C)complete and (N)ext empty (false).'")]
        ]],
        [RequestStreamState.IDLE, ErrorFrame, [
          [guard26, RequestStreamState.CLOSED]
        ]],
        [RequestStreamState.OPEN, ErrorFrame, [
          [guard26, RequestStreamState.CLOSED]
        ]],
        [RequestStreamState.IDLE, ANY, [
          [null, new Illegal("a request-stream responder sends PAYLOAD and one terminal PAYLOAD(C) or ERROR with a stream error code", "")]
        ]],
        [RequestStreamState.OPEN, ANY, [
          [null, new Illegal("a request-stream responder sends PAYLOAD and one terminal PAYLOAD(C) or ERROR with a stream error code", "")]
        ]]
      ])
    };
    static RECEIVE = {
      requester: table([
        [RequestStreamState.OPEN, Payload, [
          [guard27, RequestStreamState.CLOSED],
          [guard29, RequestStreamState.OPEN],
          [guard30, IGNORE]
        ]],
        [RequestStreamState.OPEN, ErrorFrame, [
          [guard26, RequestStreamState.CLOSED]
        ]],
        [RequestStreamState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [RequestStreamState.OPEN, ANY, [
          [null, IGNORE]
        ]]
      ]),
      responder: table([
        [RequestStreamState.IDLE, RequestStream, [
          [null, RequestStreamState.OPEN]
        ]],
        [RequestStreamState.OPEN, RequestN, [
          [null, RequestStreamState.OPEN]
        ]],
        [RequestStreamState.IDLE, Cancel, [
          [null, RequestStreamState.CLOSED]
        ]],
        [RequestStreamState.OPEN, Cancel, [
          [null, RequestStreamState.CLOSED]
        ]],
        [RequestStreamState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [RequestStreamState.OPEN, ANY, [
          [null, IGNORE]
        ]]
      ])
    };
    // The engine method each received frame goes to once this machine let it through
    // (Python's HANDLERS; its on_<scope>_<frame> spelled on<Scope><Frame>, e.g. onStreamRequestN);
    // frames whose rows ignore or refuse it never get there.
    static HANDLERS = {
      requester: /* @__PURE__ */ new Map([
        [Payload, "onStreamPayload"],
        [ErrorFrame, "onStreamError"]
      ]),
      responder: /* @__PURE__ */ new Map([
        [RequestStream, "onStreamRequestStream"],
        [RequestN, "onStreamRequestN"],
        [Cancel, "onStreamCancel"]
      ])
    };
    /** `HANDLERS["requester"]` bound to `h`'s methods (an engine's dispatch). */
    static bindRequester(h) {
      return /* @__PURE__ */ new Map([
        [Payload, (frame, ...context) => h.onStreamPayload(frame, ...context)],
        [ErrorFrame, (frame, ...context) => h.onStreamError(frame, ...context)]
      ]);
    }
    /** `HANDLERS["responder"]` bound to `h`'s methods (an engine's dispatch). */
    static bindResponder(h) {
      return /* @__PURE__ */ new Map([
        [
          RequestStream,
          (frame, ...context) => h.onStreamRequestStream(frame, ...context)
        ],
        [RequestN, (frame, ...context) => h.onStreamRequestN(frame, ...context)],
        [Cancel, (frame, ...context) => h.onStreamCancel(frame, ...context)]
      ]);
    }
    constructor(role, state) {
      super(role, state);
    }
  };
  var RequestChannelState;
  (function(RequestChannelState2) {
    RequestChannelState2["IDLE"] = "idle";
    RequestChannelState2["OPEN"] = "open";
    RequestChannelState2["HALF_CLOSED_LOCAL"] = "half_closed_local";
    RequestChannelState2["HALF_CLOSED_REMOTE"] = "half_closed_remote";
    RequestChannelState2["CLOSED"] = "closed";
  })(RequestChannelState || (RequestChannelState = {}));
  var RequestChannelMachine = class extends StateMachine {
    static NAME = "request_channel";
    static SCOPE = "stream";
    static ROLES = ["requester", "responder"];
    static INITIAL = {
      requester: RequestChannelState.IDLE,
      responder: RequestChannelState.IDLE
    };
    static TERMINAL = /* @__PURE__ */ new Set([
      RequestChannelState.CLOSED
    ]);
    static SEND = {
      requester: table([
        [RequestChannelState.IDLE, RequestChannel, [
          [guard31, RequestChannelState.OPEN],
          [guard32, RequestChannelState.HALF_CLOSED_LOCAL]
        ]],
        [RequestChannelState.OPEN, Payload, [
          [guard29, RequestChannelState.OPEN],
          [guard27, RequestChannelState.HALF_CLOSED_LOCAL],
          [guard30, new Illegal("a PAYLOAD needs the N or the C flag", "PAYLOAD Frame: 'A PAYLOAD MUST NOT have both (C)complete and (N)ext empty (false).'")]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, Payload, [
          [guard29, RequestChannelState.HALF_CLOSED_REMOTE],
          [guard27, RequestChannelState.CLOSED],
          [guard30, new Illegal("a PAYLOAD needs the N or the C flag", "PAYLOAD Frame: 'A PAYLOAD MUST NOT have both (C)complete and (N)ext empty (false).'")]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, Payload, [
          [null, new Illegal("no PAYLOAD after this side's COMPLETE", "Request Channel: 'A Requester MUST NOT send any additional PAYLOAD frames after sending a frame with the C bit set.'")]
        ]],
        [RequestChannelState.OPEN, RequestN, [
          [null, RequestChannelState.OPEN]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, RequestN, [
          [null, RequestChannelState.HALF_CLOSED_LOCAL]
        ]],
        [RequestChannelState.OPEN, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.OPEN, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.IDLE, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]],
        [RequestChannelState.OPEN, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]]
      ]),
      responder: table([
        [RequestChannelState.OPEN, Payload, [
          [guard29, RequestChannelState.OPEN],
          [guard27, RequestChannelState.HALF_CLOSED_LOCAL],
          [guard30, new Illegal("a PAYLOAD needs the N or the C flag", "PAYLOAD Frame: 'A PAYLOAD MUST NOT have both (C)complete and (N)ext empty (false).'")]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, Payload, [
          [guard29, RequestChannelState.HALF_CLOSED_REMOTE],
          [guard27, RequestChannelState.CLOSED],
          [guard30, new Illegal("a PAYLOAD needs the N or the C flag", "PAYLOAD Frame: 'A PAYLOAD MUST NOT have both (C)complete and (N)ext empty (false).'")]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, Payload, [
          [null, new Illegal("no PAYLOAD after this side's COMPLETE", "Request Channel: 'A Requester MUST NOT send any additional PAYLOAD frames after sending a frame with the C bit set.'")]
        ]],
        [RequestChannelState.OPEN, RequestN, [
          [null, RequestChannelState.OPEN]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, RequestN, [
          [null, RequestChannelState.HALF_CLOSED_LOCAL]
        ]],
        [RequestChannelState.OPEN, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.IDLE, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.IDLE, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]],
        [RequestChannelState.OPEN, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ANY, [
          [null, new Illegal("not allowed on a channel in this state (requester: one REQUEST_CHANNEL, then PAYLOAD/REQUEST_N/CANCEL/ERROR; responder: PAYLOAD/REQUEST_N/ERROR)", "REQUEST_CHANNEL Frame: 'A requester MUST send only one REQUEST_CHANNEL frame. Subsequent messages from requester to responder MUST be sent as PAYLOAD frames.'")]
        ]]
      ])
    };
    static RECEIVE = {
      requester: table([
        [RequestChannelState.OPEN, Payload, [
          [guard29, RequestChannelState.OPEN],
          [guard27, RequestChannelState.HALF_CLOSED_REMOTE],
          [guard30, IGNORE]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, Payload, [
          [guard29, RequestChannelState.HALF_CLOSED_LOCAL],
          [guard27, RequestChannelState.CLOSED],
          [guard30, IGNORE]
        ]],
        [RequestChannelState.OPEN, RequestN, [
          [null, RequestChannelState.OPEN]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, RequestN, [
          [null, RequestChannelState.HALF_CLOSED_REMOTE]
        ]],
        [RequestChannelState.OPEN, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [RequestChannelState.OPEN, ANY, [
          [null, IGNORE]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ANY, [
          [null, IGNORE]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ANY, [
          [null, IGNORE]
        ]]
      ]),
      responder: table([
        [RequestChannelState.IDLE, RequestChannel, [
          [guard31, RequestChannelState.OPEN],
          [guard32, RequestChannelState.HALF_CLOSED_REMOTE]
        ]],
        [RequestChannelState.IDLE, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.OPEN, Payload, [
          [guard29, RequestChannelState.OPEN],
          [guard27, RequestChannelState.HALF_CLOSED_REMOTE],
          [guard30, IGNORE]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, Payload, [
          [guard29, RequestChannelState.HALF_CLOSED_LOCAL],
          [guard27, RequestChannelState.CLOSED],
          [guard30, IGNORE]
        ]],
        [RequestChannelState.OPEN, RequestN, [
          [null, RequestChannelState.OPEN]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, RequestN, [
          [null, RequestChannelState.HALF_CLOSED_REMOTE]
        ]],
        [RequestChannelState.OPEN, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ErrorFrame, [
          [guard26, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.OPEN, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, Cancel, [
          [null, RequestChannelState.CLOSED]
        ]],
        [RequestChannelState.IDLE, ANY, [
          [null, IGNORE]
        ]],
        [RequestChannelState.OPEN, ANY, [
          [null, IGNORE]
        ]],
        [RequestChannelState.HALF_CLOSED_LOCAL, ANY, [
          [null, IGNORE]
        ]],
        [RequestChannelState.HALF_CLOSED_REMOTE, ANY, [
          [null, IGNORE]
        ]]
      ])
    };
    // The engine method each received frame goes to once this machine let it through
    // (Python's HANDLERS; its on_<scope>_<frame> spelled on<Scope><Frame>, e.g. onStreamRequestN);
    // frames whose rows ignore or refuse it never get there.
    static HANDLERS = {
      requester: /* @__PURE__ */ new Map([
        [RequestN, "onStreamRequestN"],
        [Payload, "onStreamPayload"],
        [ErrorFrame, "onStreamError"]
      ]),
      responder: /* @__PURE__ */ new Map([
        [RequestChannel, "onStreamRequestChannel"],
        [RequestN, "onStreamRequestN"],
        [Cancel, "onStreamCancel"],
        [Payload, "onStreamPayload"],
        [ErrorFrame, "onStreamError"]
      ])
    };
    /** `HANDLERS["requester"]` bound to `h`'s methods (an engine's dispatch). */
    static bindRequester(h) {
      return /* @__PURE__ */ new Map([
        [RequestN, (frame, ...context) => h.onStreamRequestN(frame, ...context)],
        [Payload, (frame, ...context) => h.onStreamPayload(frame, ...context)],
        [ErrorFrame, (frame, ...context) => h.onStreamError(frame, ...context)]
      ]);
    }
    /** `HANDLERS["responder"]` bound to `h`'s methods (an engine's dispatch). */
    static bindResponder(h) {
      return /* @__PURE__ */ new Map([
        [
          RequestChannel,
          (frame, ...context) => h.onStreamRequestChannel(frame, ...context)
        ],
        [RequestN, (frame, ...context) => h.onStreamRequestN(frame, ...context)],
        [Cancel, (frame, ...context) => h.onStreamCancel(frame, ...context)],
        [Payload, (frame, ...context) => h.onStreamPayload(frame, ...context)],
        [ErrorFrame, (frame, ...context) => h.onStreamError(frame, ...context)]
      ]);
    }
    constructor(role, state) {
      super(role, state);
    }
  };

  // runtime/typescript/rsocket/dist/errors.js
  var NoLease = class extends LocalProtocolError {
    name = "NoLease";
  };
  var NoNewRequests = class extends LocalProtocolError {
    name = "NoNewRequests";
  };
  var UnsupportedExtension = class extends RemoteProtocolError {
    name = "UnsupportedExtension";
  };
  var StreamIdsExhausted = class extends LocalProtocolError {
    name = "StreamIdsExhausted";
  };
  var UnknownStream = class extends LocalProtocolError {
    name = "UnknownStream";
  };
  var ResumeNotAllowed = class extends LocalProtocolError {
    name = "ResumeNotAllowed";
  };
  var FragmentOrderViolated = class extends RemoteProtocolError {
    name = "FragmentOrderViolated";
  };
  var ResumePositionLost = class extends RemoteProtocolError {
    name = "ResumePositionLost";
  };
  var StreamError2 = class extends StreamError {
    name = "StreamError";
    errorCode;
    constructor(errorCode, message) {
      super(message);
      this.errorCode = errorCode;
    }
  };
  var ApplicationError = class extends StreamError2 {
    name = "ApplicationError";
    constructor(message, errorCode = 513) {
      super(errorCode, message);
    }
  };
  var SetupRejected = class extends RemoteProtocolError {
    name = "SetupRejected";
    errorCode;
    constructor(errorCode, message) {
      super(message);
      this.errorCode = errorCode;
    }
  };

  // runtime/typescript/rsocket/dist/resume.js
  var ResumeLog = class {
    limit;
    sentPosition = 0;
    receivedPosition = 0;
    /** [start position, wire bytes with the length prefix], oldest first. */
    frames = [];
    head = 0;
    buffered = 0;
    constructor(limit) {
      this.limit = limit;
    }
    /** The earliest position we can still retransmit from. */
    get firstAvailable() {
      return this.head < this.frames.length ? this.frames[this.head][0] : this.sentPosition;
    }
    /** Bytes held for retransmission. */
    get bufferedBytes() {
      return this.buffered;
    }
    /** Record a tracked frame we sent (`wire` with its 3-byte length prefix). */
    sent(wire) {
      this.frames.push([this.sentPosition, wire]);
      this.sentPosition += wire.length - 3;
      this.buffered += wire.length;
      while (this.buffered > this.limit && this.head < this.frames.length) {
        this.drop();
      }
      this.compact();
    }
    received(length) {
      this.receivedPosition += length;
    }
    /** Forget frames the peer says it received (they end at or before `peerPosition`). */
    trim(peerPosition) {
      while (this.head < this.frames.length) {
        const [start, wire] = this.frames[this.head];
        if (start + wire.length - 3 > peerPosition)
          break;
        this.drop();
      }
      this.compact();
    }
    /** The frames to send again so the peer continues at `peerPosition`; null when that is
     * not a position we can resume from. */
    replayFrom(peerPosition) {
      if (peerPosition < this.firstAvailable || peerPosition > this.sentPosition) {
        return null;
      }
      this.trim(peerPosition);
      return this.frames.slice(this.head).map(([, wire]) => wire);
    }
    drop() {
      this.buffered -= this.frames[this.head][1].length;
      this.head += 1;
    }
    compact() {
      if (this.head > 1024 && this.head * 2 > this.frames.length) {
        this.frames = this.frames.slice(this.head);
        this.head = 0;
      }
    }
  };

  // runtime/typescript/rsocket/dist/fragmentation.js
  var METADATA_LENGTH_SIZE = 3;
  var MIN_MTU = 64;
  var HEADER_SIZE = 6;
  function split(metadata, data, firstOverhead, nextOverhead, mtu) {
    const pieces = [];
    let mdLeft = metadata;
    let dataLeft = data;
    let overhead = firstOverhead;
    for (; ; ) {
      let room = mtu - overhead;
      let pieceMd = null;
      if (mdLeft !== null) {
        room -= METADATA_LENGTH_SIZE;
        pieceMd = mdLeft.subarray(0, room);
        mdLeft = mdLeft.subarray(pieceMd.length);
        room -= pieceMd.length;
        if (mdLeft.length === 0) {
          mdLeft = null;
        }
      }
      let pieceData = new Uint8Array(0);
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
  function bodySize(frame) {
    const md = frame.metadata;
    return frame.data.length + (md !== null ? md.length + METADATA_LENGTH_SIZE : 0);
  }
  function fragment(frame, mtu) {
    const encodedSize = frame.toBytes().length;
    if (encodedSize <= mtu) {
      return null;
    }
    const pieces = split(frame.metadata, frame.data, encodedSize - bodySize(frame), HEADER_SIZE, mtu);
    const complete = "complete" in frame ? frame.complete : false;
    const isRequest = !(frame instanceof Payload);
    const last = pieces.length - 1;
    return pieces.map(([metadata, data], index) => {
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
      return new Payload({
        streamId: frame.streamId,
        next: isRequest ? true : frame.next,
        complete: complete && !follows,
        follows,
        metadata,
        data
      });
    });
  }
  function copyOf(frame) {
    return Object.assign(Object.create(Object.getPrototypeOf(frame)), frame);
  }
  var Reassembly = class {
    limit;
    first;
    size = 0;
    metadata = [];
    data = [];
    hasMetadata = false;
    hasData = false;
    constructor(limit, first) {
      this.limit = limit;
      this.first = first;
    }
    add(metadata, data) {
      this.size += data.length + (metadata !== null ? metadata.length : 0);
      if (this.size > this.limit) {
        throw new ReassemblyLimitExceeded(`a fragmented message exceeds the reassembly limit of ${this.limit} bytes`);
      }
      if (metadata !== null) {
        if (this.hasData) {
          throw new FragmentOrderViolated("metadata after data: 'the Metadata MUST be transmitted completely before the Data'");
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
    whole(last) {
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
  };
  function concat(parts) {
    if (parts.length === 1) {
      return parts[0];
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

  // runtime/typescript/rsocket/dist/keepalive.js
  var KeepaliveTimer = class {
    nextSend = null;
    lastHeard = 0;
    interval = 0;
    lifetime = 0;
    deadReported = false;
    /** Start the clocks; `sends`: we are the client, who sends KEEPALIVE. */
    start(now2, interval, lifetime, sends) {
      this.lastHeard = now2;
      this.deadReported = false;
      this.interval = interval;
      this.lifetime = lifetime;
      this.nextSend = sends && interval > 0 ? now2 + interval : null;
    }
    heard(now2) {
      this.lastHeard = now2;
      this.deadReported = false;
    }
    /** The next time `sendDue` or `dead` may change their answer (null: none). */
    deadline() {
      let next = this.nextSend;
      if (this.lifetime > 0 && !this.deadReported) {
        const due = this.lastHeard + this.lifetime;
        next = next === null ? due : Math.min(next, due);
      }
      return next;
    }
    /** Whether a KEEPALIVE is due now; the next is then one interval later. */
    sendDue(now2) {
      if (this.nextSend === null || now2 < this.nextSend) {
        return false;
      }
      this.nextSend += this.interval;
      if (this.nextSend <= now2) {
        this.nextSend = now2 + this.interval;
      }
      return true;
    }
    /** How long the peer has been silent, the first time that exceeds Max Lifetime. */
    dead(now2) {
      if (this.lifetime <= 0 || this.deadReported) {
        return null;
      }
      const silent = now2 - this.lastHeard;
      if (silent < this.lifetime) {
        return null;
      }
      this.deadReported = true;
      return silent;
    }
  };

  // runtime/typescript/rsocket/dist/engine_core.js
  var MAX_N = 2147483647;
  var FIXED_PART_MAX = 16;
  var EMPTY2 = new Uint8Array(0);
  var NO_EXTENSIONS = /* @__PURE__ */ new Set();
  var utf82 = new TextEncoder();
  var Credit = class {
    value;
    constructor(value = 0) {
      this.value = value;
    }
    grant(n, remote = false) {
      if (!Number.isInteger(n) || n < 1 || n > MAX_N) {
        if (remote) {
          return;
        }
        throw new InvalidGrant(`request-n must be 1..${MAX_N}, not ${n}`);
      }
      this.value = Math.min(MAX_N, this.value + n);
    }
    /** Take one item of credit; false when there is none. */
    take() {
      if (this.value === MAX_N) {
        return true;
      }
      if (this.value < 1) {
        return false;
      }
      this.value -= 1;
      return true;
    }
  };
  var Stream = class {
    streamId;
    model;
    role;
    machine;
    handlers;
    /** A request the application knows of (ours, or the peer's once whole). */
    opened;
    /** Credit we granted the peer (items it may still send us). */
    inbound = null;
    /** Credit the peer granted us (items we may still send). */
    outbound = null;
    sendFragments = null;
    receiveFragments = null;
    reassembly = null;
    constructor(streamId, model, role, machine, handlers) {
      this.streamId = streamId;
      this.model = model;
      this.role = role;
      this.machine = machine;
      this.handlers = handlers;
      this.opened = role === "requester";
    }
  };
  var MACHINES = {
    request_response: RequestResponseMachine,
    fire_and_forget: RequestFnfMachine,
    request_stream: RequestStreamMachine,
    request_channel: RequestChannelMachine
  };
  function modelOf(frame) {
    if (frame instanceof RequestResponse)
      return "request_response";
    if (frame instanceof RequestFnf)
      return "fire_and_forget";
    if (frame instanceof RequestStream)
      return "request_stream";
    if (frame instanceof RequestChannel)
      return "request_channel";
    return null;
  }
  function movesPosition(frame) {
    return frame.streamId !== 0 && (frame instanceof Payload || frame instanceof RequestN || frame instanceof Cancel || frame instanceof ErrorFrame || modelOf(frame) !== null);
  }
  function isMessage(frame) {
    return frame instanceof Payload || modelOf(frame) !== null;
  }
  function dispatch(machine, handlers, frame, subject, events) {
    if (machine.receive(frame) === IGNORE) {
      return false;
    }
    const handler = handlers.get(frame.constructor);
    if (handler !== void 0) {
      handler(frame, subject, events);
    }
    return true;
  }
  var Leases = class {
    required = false;
    forUs = null;
    forPeer = null;
    restart(required) {
      this.required = required;
      this.forUs = this.forPeer = null;
    }
    received(ttl, n, now2) {
      this.forUs = { left: n, expires: now2 + ttl };
    }
    sent(ttl, n, now2) {
      this.forPeer = { left: n, expires: now2 + ttl };
    }
    checkRequest(now2) {
      const lease = this.forUs;
      if (lease === null || now2 >= lease.expires || lease.left < 1) {
        throw new NoLease("no valid LEASE: 'The Requester MUST NOT send more than Number of Requests specified in the LEASE frame within the Time-To-Live value in the LEASE.'");
      }
    }
    spendRequest() {
      if (this.forUs !== null) {
        this.forUs.left -= 1;
      }
    }
    admit(now2) {
      const lease = this.forPeer;
      if (lease === null || now2 >= lease.expires || lease.left < 1) {
        return false;
      }
      lease.left -= 1;
      return true;
    }
  };
  function setupInfo(frame) {
    return {
      majorVersion: frame.majorVersion,
      minorVersion: frame.minorVersion,
      keepaliveInterval: frame.keepaliveInterval,
      maxLifetime: frame.maxLifetime,
      metadataMimeType: frame.metadataMimeType,
      dataMimeType: frame.dataMimeType,
      metadata: frame.metadata,
      data: frame.data,
      lease: frame.lease,
      resumeToken: frame.resumeToken
    };
  }
  var EngineCore = class {
    role;
    /** Frames dropped because the spec says to ignore them. */
    ignoredFrames = 0;
    framesReceived = 0;
    conn;
    decoder;
    mtu;
    maxReassembly;
    maxStreams;
    setupPolicy;
    leasing;
    extensions;
    streams = /* @__PURE__ */ new Map();
    /** Streams aborted while a fragmented message was arriving: until its last fragment. */
    /** (Made on first use, as `extensions` is shared when empty: an idle connection's size
     * is what a client with many connections pays per connection.) */
    discarding = null;
    nextId;
    outConnection = [];
    outStreams = [];
    now = 0;
    setupInForce = null;
    leases = new Leases();
    keepalive = new KeepaliveTimer();
    resumeBufferSize;
    sizes = [];
    resumeLookup;
    log = null;
    resumeToken = null;
    resumeForbidden = false;
    closingEvent = null;
    constructor(role, options = {}) {
      if (role === "server" && options.setup !== void 0) {
        throw new RangeError("only a client sends SETUP: a server takes no setup");
      }
      if (role === "client" && (options.setupPolicy !== void 0 || options.leasing === true || options.resumeLookup !== void 0)) {
        throw new RangeError("setupPolicy, resumeLookup and leasing are a server's options");
      }
      this.resumeLookup = options.resumeLookup ?? null;
      this.role = role;
      const limits = options.limits ?? {};
      if (limits.mtu !== void 0 && limits.mtu < MIN_MTU) {
        throw new RangeError(`mtu must be at least ${MIN_MTU}`);
      }
      this.mtu = Math.min(limits.mtu ?? MAX_FRAME_SIZE, MAX_FRAME_SIZE);
      this.maxReassembly = limits.maxReassemblySize ?? 16 * 1024 * 1024;
      this.maxStreams = limits.maxStreams ?? null;
      this.decoder = new StreamDecoder({ maxFrameSize: limits.maxFrameSize ?? MAX_FRAME_SIZE });
      this.decoder.afterFrame = (_frame, size) => {
        this.sizes.push(size);
      };
      this.resumeBufferSize = limits.resumeBufferSize ?? 1024 * 1024;
      this.setupPolicy = options.setupPolicy ?? null;
      this.leasing = options.leasing ?? false;
      this.extensions = options.extensions === void 0 ? NO_EXTENSIONS : new Set(options.extensions);
      this.nextId = role === "client" ? 1 : 2;
      this.conn = new ConnectionMachine(role);
      if (role === "client") {
        const s = options.setup ?? {};
        for (const mime of [s.metadataMimeType, s.dataMimeType]) {
          if (mime !== void 0 && mime.endsWith("\0")) {
            throw new RangeError(`the MIME type ${JSON.stringify(mime)} is null terminated (the spec says MUST NOT)`);
          }
        }
        this.setupInForce = {
          majorVersion: 1,
          minorVersion: 0,
          keepaliveInterval: s.keepaliveInterval ?? 2e4,
          maxLifetime: s.maxLifetime ?? 9e4,
          metadataMimeType: s.metadataMimeType ?? "application/octet-stream",
          dataMimeType: s.dataMimeType ?? "application/octet-stream",
          metadata: s.metadata ?? null,
          data: s.data ?? EMPTY2,
          lease: s.lease ?? false,
          resumeToken: s.resumeToken ?? null
        };
      }
    }
    // ================================================================ public state
    /** The `connection` machine's state. */
    get state() {
      return this.conn.state;
    }
    get closed() {
      return this.conn.terminated;
    }
    /** A graceful close is under way (ERROR[CONNECTION_CLOSE] sent or received). */
    get closing() {
      return this.conn.state === ConnectionState.CLOSING;
    }
    get setup() {
      return this.setupInForce;
    }
    get openStreams() {
      return this.streams;
    }
    /** The stream's machine state (UnknownStream when it is not open). */
    streamState(streamId) {
      return this.get(streamId).machine.state;
    }
    /** Credit the peer granted us on a stream (items we may send now; MAX_N: unbounded). */
    outboundCredit(streamId) {
      return this.get(streamId).outbound?.value ?? 0;
    }
    /** Bytes received of a frame that is not complete yet. */
    get bufferedBytes() {
      return this.decoder.buffered;
    }
    // ================================================================ output / time
    /** Every frame queued since the last call, each with its 3-byte length prefix
     * (stream-0 frames first: "Frames with Stream ID 0 SHOULD have a higher priority"). */
    dataToSend() {
      if (this.outConnection.length === 0 && this.outStreams.length === 0) {
        return [];
      }
      const out = this.outConnection.concat(this.outStreams);
      this.outConnection = [];
      this.outStreams = [];
      return out;
    }
    /** When `handleTimer` should next be called (null: no deadline). */
    getTimer() {
      if (this.conn.terminated || this.setupInForce === null) {
        return null;
      }
      if (this.drained()) {
        return this.now;
      }
      return this.keepalive.deadline();
    }
    /** Send the client's periodic KEEPALIVE and report a silent peer. */
    handleTimer(now2) {
      this.now = now2;
      const events = [];
      if (this.conn.terminated || this.setupInForce === null) {
        return events;
      }
      if (this.finishDrain(events)) {
        return events;
      }
      if (this.keepalive.sendDue(now2)) {
        const frame = new Keepalive({ respond: true, lastReceivedPosition: this.position() });
        if (this.conn.allowsSend(frame)) {
          this.conn.send(frame);
          this.emit(frame);
        }
      }
      const silent = this.keepalive.dead(now2);
      if (silent !== null) {
        events.push({ type: "ConnectionDead", silentFor: silent });
      }
      return events;
    }
    /** The implied position KEEPALIVE carries ("Set to all 0s when not supported"). */
    position() {
      return this.log !== null ? BigInt(this.log.receivedPosition) : 0n;
    }
    // ================================================================ plumbing
    ignoredOn(stream, frame) {
      this.ignoredFrames += 1;
      if (!stream.opened && modelOf(frame) !== null) {
        this.streams.delete(stream.streamId);
      }
    }
    /** Run a fragment through `fragments`; the reassembled message once whole. */
    receiveFragment(stream, frame, events) {
      let machine = stream.receiveFragments;
      if (machine === null) {
        machine = stream.receiveFragments = new FragmentsMachine("receiver", FragmentsState.WHOLE);
      }
      const outcome = machine.receive(frame);
      if (outcome === IGNORE) {
        this.ignoredFrames += 1;
        return null;
      }
      let pending = stream.reassembly;
      try {
        if (outcome !== FragmentsState.WHOLE) {
          if (pending === null) {
            pending = stream.reassembly = new Reassembly(this.maxReassembly, frame);
          }
          pending.add(frame.metadata, frame.data);
          return null;
        }
        if (pending === null) {
          return frame;
        }
        pending.add(frame.metadata, frame.data);
      } catch (error) {
        if (!(error instanceof RemoteProtocolError)) {
          throw error;
        }
        stream.reassembly = null;
        this.abortStream(stream, ErrorCode.INVALID, error.message, events, stream.opened);
        if (machine.state !== FragmentsState.WHOLE) {
          (this.discarding ??= /* @__PURE__ */ new Map()).set(stream.streamId, machine);
        }
        return null;
      }
      stream.reassembly = null;
      return pending.whole(frame);
    }
    newStream(streamId, model, role) {
      return new Stream(streamId, model, role, new MACHINES[model](role), this.handlersFor(role, model));
    }
    get(streamId) {
      const stream = this.streams.get(streamId);
      if (stream === void 0) {
        throw new UnknownStream(`stream ${streamId} is not open`);
      }
      return stream;
    }
    emit(frame) {
      const wire = frameBytes(frame);
      if (frame.streamId === 0) {
        this.outConnection.push(wire);
      } else {
        this.outStreams.push(wire);
        if (this.log !== null && movesPosition(frame)) {
          this.log.sent(wire);
        }
      }
    }
    /** Queue a whole message, fragmented when it exceeds the MTU. */
    transmit(stream, frame, opening = false) {
      const md = frame.metadata;
      const body = frame.data.length + (md !== null ? md.length + 3 : 0);
      if (body + FIXED_PART_MAX <= this.mtu) {
        this.emit(frame);
        return;
      }
      const pieces = fragment(frame, this.mtu);
      if (pieces === null) {
        this.emit(frame);
        return;
      }
      let machine = stream.sendFragments;
      if (machine === null) {
        machine = stream.sendFragments = new FragmentsMachine("sender", opening ? FragmentsState.IDLE : FragmentsState.WHOLE);
      }
      for (const piece of pieces) {
        machine.send(piece);
        this.emit(piece);
      }
    }
    terminateStreams(events, errorCode, why) {
      for (const streamId of this.streams.keys()) {
        events.push({ type: "StreamAborted", streamId, errorCode, why });
      }
      this.streams.clear();
    }
    /** End a stream whose peer broke a rule, with the frame its machine allows: ERROR
     * (responder, channel) or CANCEL (a request-response/stream requester). */
    abortStream(stream, errorCode, why, events, notify) {
      const error = new ErrorFrame({
        streamId: stream.streamId,
        errorCode,
        data: utf82.encode(why).subarray(0, 1024)
      });
      if (stream.machine.allowsSend(error)) {
        stream.machine.send(error);
        this.emit(error);
      } else {
        const cancel = new Cancel({ streamId: stream.streamId });
        if (stream.machine.allowsSend(cancel)) {
          stream.machine.send(cancel);
          this.emit(cancel);
        }
      }
      this.streams.delete(stream.streamId);
      if (notify) {
        events.push({ type: "StreamAborted", streamId: stream.streamId, errorCode, why });
      }
    }
    drained() {
      return this.closingEvent !== null && this.streams.size === 0 && this.conn.state === ConnectionState.CLOSING;
    }
    /** End a graceful close whose last stream has ended (closing -> closed is no frame). */
    finishDrain(events) {
      if (!this.drained() || this.closingEvent === null) {
        return false;
      }
      this.conn.state = ConnectionState.CLOSED;
      events.push({
        type: "ConnectionClosed",
        ...this.closingEvent,
        graceful: true,
        resumable: false
      });
      return true;
    }
  };

  // runtime/typescript/rsocket/dist/stream_engine.js
  var utf83 = new TextEncoder();
  var StreamEngine = class extends EngineCore {
    /** Each (role, model)'s bound handlers, bound on first use: a connection that only ever
     * makes request-responses binds one table of the eight (each a Map of closures), which
     * keeps an idle connection small. */
    bound = {
      requester: {},
      responder: {}
    };
    handlersFor(streamRole, model) {
      const cache = this.bound[streamRole];
      let handlers = cache[model];
      if (handlers === void 0) {
        const cls = MACHINES[model];
        handlers = streamRole === "requester" ? cls.bindRequester(this) : cls.bindResponder(this);
        cache[model] = handlers;
      }
      return handlers;
    }
    // ================================================================ requests
    requestResponse(data, metadata = null, now2) {
      return this.open("request_response", new RequestResponse({ data, metadata }), null, null, now2);
    }
    fireAndForget(data, metadata = null, now2) {
      return this.open("fire_and_forget", new RequestFnf({ data, metadata }), null, null, now2);
    }
    /** Open a stream and grant the responder `initialN` items (1..2^31-1). */
    requestStream(data, metadata = null, initialN = MAX_N, now2) {
      const inbound = new Credit();
      inbound.grant(initialN);
      const frame = new RequestStream({ data, metadata, initialRequestN: initialN });
      return this.open("request_stream", frame, inbound, null, now2);
    }
    /** Open a channel whose first message is (data, metadata); more may follow once the
     * responder grants REQUEST_N. */
    requestChannel(data, metadata = null, initialN = MAX_N, complete = false, now2) {
      const inbound = new Credit();
      inbound.grant(initialN);
      const frame = new RequestChannel({ data, metadata, initialRequestN: initialN, complete });
      return this.open("request_channel", frame, inbound, new Credit(), now2);
    }
    open(model, frame, inbound, outbound, now2) {
      if (now2 !== void 0) {
        this.now = now2;
      }
      if (this.closing) {
        throw new NoNewRequests("the connection is closing (ERROR[CONNECTION_CLOSE]): 'New requests MAY not be accepted'");
      }
      this.conn.send(frame);
      if (this.leases.required) {
        this.leases.checkRequest(this.now);
      }
      const streamId = this.allocateId();
      frame.streamId = streamId;
      const stream = this.newStream(streamId, model, "requester");
      stream.machine.send(frame);
      if (this.leases.required) {
        this.leases.spendRequest();
      }
      stream.inbound = inbound;
      stream.outbound = outbound;
      if (!stream.machine.terminated) {
        this.streams.set(streamId, stream);
      }
      this.transmit(stream, frame, true);
      return streamId;
    }
    allocateId() {
      let id = this.nextId;
      while (this.streams.has(id)) {
        id += 2;
      }
      if (id > MAX_N) {
        throw new StreamIdsExhausted("every stream id of this side is spent: 'a new connection MUST be established'");
      }
      this.nextId = id + 2;
      return id;
    }
    // ================================================================ stream commands
    /** Send one item (PAYLOAD with N, plus C when `complete`); needs the peer's credit
     * (DemandExceeded otherwise), except for a request-response answer. */
    sendNext(streamId, data, metadata = null, complete = false) {
      const stream = this.get(streamId);
      const frame = new Payload({ streamId, data, metadata, next: true, complete });
      const outbound = stream.outbound;
      if (outbound !== null && outbound.value < 1) {
        throw new DemandExceeded(`stream ${streamId}: the peer has not requested more items`);
      }
      stream.machine.send(frame);
      outbound?.take();
      this.transmit(stream, frame);
      if (stream.machine.terminated) {
        this.streams.delete(streamId);
      }
    }
    /** Complete our side of the stream (PAYLOAD with only C). */
    sendComplete(streamId) {
      const stream = this.get(streamId);
      const frame = new Payload({ streamId, complete: true });
      stream.machine.send(frame);
      this.transmit(stream, frame);
      if (stream.machine.terminated) {
        this.streams.delete(streamId);
      }
    }
    /** End the stream with ERROR (a stream error code: APPLICATION_ERROR, REJECTED ...). */
    sendError(streamId, errorCode, message = EMPTY2) {
      const stream = this.get(streamId);
      const data = typeof message === "string" ? utf83.encode(message) : message;
      const frame = new ErrorFrame({ streamId, errorCode, data });
      stream.machine.send(frame);
      this.emit(frame);
      this.streams.delete(streamId);
    }
    /** Grant the peer `n` more items (REQUEST_N); credits add up, capped at 2^31-1. Nothing
     * is sent once the peer has completed its side of a channel. */
    request(streamId, n) {
      const stream = this.get(streamId);
      if (stream.machine.state === RequestChannelState.HALF_CLOSED_REMOTE && stream.model === "request_channel") {
        return;
      }
      const frame = new RequestN({ streamId, requestN: n });
      if (stream.inbound === null) {
        stream.machine.send(frame);
        return;
      }
      if (!Number.isInteger(n) || n < 1 || n > MAX_N) {
        throw new InvalidGrant(`request-n must be 1..${MAX_N}, not ${n}`);
      }
      stream.machine.send(frame);
      stream.inbound.grant(n);
      this.emit(frame);
    }
    /** (requester) Cancel the stream: "Upon sending a CANCEL, the stream is terminated". */
    cancel(streamId) {
      const stream = this.get(streamId);
      const frame = new Cancel({ streamId });
      stream.machine.send(frame);
      this.emit(frame);
      this.streams.delete(streamId);
    }
    // ================================================================ onStream<Frame>
    /** A whole request the stream's machine took: the lease, the stream cap, then the application. */
    onRequest(frame, ...context) {
      const [stream, events] = context;
      stream.opened = true;
      const machine = stream.machine;
      let refusal = null;
      if (this.closing) {
        refusal = "the connection is closing (ERROR[CONNECTION_CLOSE])";
      } else if (this.leases.required && !this.leases.admit(this.now)) {
        refusal = "request exceeds the LEASE";
      } else if (this.maxStreams !== null && !machine.terminated && this.peerStreams() > this.maxStreams) {
        refusal = `too many streams (limit ${this.maxStreams})`;
      }
      if (refusal !== null) {
        if (machine.terminated) {
          this.streams.delete(stream.streamId);
          return;
        }
        this.abortStream(stream, ErrorCode.REJECTED, refusal, events, false);
        return;
      }
      let n = 0;
      let complete = false;
      if (frame instanceof RequestStream) {
        n = frame.initialRequestN;
        stream.outbound = new Credit(Math.min(n, MAX_N));
      } else if (frame instanceof RequestChannel) {
        n = frame.initialRequestN;
        complete = frame.complete;
        stream.outbound = new Credit(Math.min(n, MAX_N));
        stream.inbound = new Credit();
      }
      events.push({
        type: "RequestReceived",
        streamId: stream.streamId,
        model: stream.model,
        data: frame.data,
        metadata: frame.metadata,
        initialN: n,
        complete
      });
      if (machine.terminated) {
        this.streams.delete(stream.streamId);
      }
    }
    peerStreams() {
      let count = 0;
      for (const stream of this.streams.values()) {
        if (stream.role === "responder")
          count += 1;
      }
      return count;
    }
    onStreamRequestResponse(frame, ...context) {
      this.onRequest(frame, ...context);
    }
    onStreamRequestFnf(frame, ...context) {
      this.onRequest(frame, ...context);
    }
    onStreamRequestStream(frame, ...context) {
      this.onRequest(frame, ...context);
    }
    onStreamRequestChannel(frame, ...context) {
      this.onRequest(frame, ...context);
    }
    onStreamPayload(frame, ...context) {
      const [stream, events] = context;
      const terminated = stream.machine.terminated;
      const complete = frame.complete || terminated;
      if (frame.next) {
        const inbound = stream.inbound;
        if (inbound !== null && !inbound.take()) {
          const error = new PeerExceededDemand(`stream ${stream.streamId}: the peer sent more items than requested`);
          this.abortStream(stream, ErrorCode.INVALID, error.message, events, true);
          return;
        }
        events.push({
          type: "PayloadReceived",
          streamId: stream.streamId,
          data: frame.data,
          metadata: frame.metadata,
          complete
        });
      }
      if (complete) {
        events.push({ type: "StreamCompleted", streamId: stream.streamId });
      }
      if (terminated) {
        this.streams.delete(stream.streamId);
      }
    }
    onStreamError(frame, ...context) {
      const [stream, events] = context;
      events.push({
        type: "ErrorReceived",
        streamId: stream.streamId,
        errorCode: frame.errorCode,
        data: frame.data
      });
      if (stream.machine.terminated) {
        this.streams.delete(stream.streamId);
      }
    }
    onStreamCancel(frame, ...context) {
      const [stream, events] = context;
      void frame;
      events.push({ type: "StreamCanceled", streamId: stream.streamId });
      if (stream.machine.terminated) {
        this.streams.delete(stream.streamId);
      }
    }
    onStreamRequestN(frame, ...context) {
      const [stream, events] = context;
      if (stream.outbound === null) {
        this.ignoredFrames += 1;
        return;
      }
      stream.outbound.grant(frame.requestN, true);
      events.push({ type: "RequestNReceived", streamId: stream.streamId, n: frame.requestN });
    }
  };

  // runtime/typescript/rsocket/dist/engine.js
  var utf84 = new TextEncoder();
  var RSocketEngine = class _RSocketEngine extends StreamEngine {
    /** The connection machine's bound handlers, bound at the first stream-0 frame received
     * (an idle client may never get one: a Map of closures less per connection). */
    boundConnHandlers = null;
    get connHandlers() {
      if (this.boundConnHandlers === null) {
        this.boundConnHandlers = this.role === "client" ? ConnectionMachine.bindClient(this) : ConnectionMachine.bindServer(this);
      }
      return this.boundConnHandlers;
    }
    // ================================================================ connection commands
    /** (client) Queue the SETUP: "Immediately upon successful connection, the client MUST
     * send either a SETUP or RESUME frame with Stream ID of 0". */
    connect(now2 = 0) {
      const setup = this.setupInForce;
      if (this.role !== "client" || setup === null) {
        throw new RangeError("only a client sends SETUP");
      }
      this.now = now2;
      const frame = new Setup({
        lease: setup.lease,
        keepaliveInterval: setup.keepaliveInterval,
        maxLifetime: setup.maxLifetime,
        metadataMimeType: setup.metadataMimeType,
        dataMimeType: setup.dataMimeType,
        metadata: setup.metadata,
        data: setup.data,
        resumeToken: setup.resumeToken
      });
      this.conn.send(frame);
      this.emit(frame);
      if (setup.resumeToken !== null) {
        this.log = new ResumeLog(this.resumeBufferSize);
        this.resumeToken = setup.resumeToken;
      }
      this.leases.restart(setup.lease);
      this.keepalive.start(now2, setup.keepaliveInterval, setup.maxLifetime, true);
    }
    /** KEEPALIVE with R (the server "MAY" initiate one "upon application request"). */
    sendKeepalive(data = EMPTY2) {
      const frame = new Keepalive({ respond: true, lastReceivedPosition: this.position(), data });
      this.conn.send(frame);
      this.emit(frame);
    }
    metadataPush(metadata) {
      const frame = new MetadataPush({ metadata });
      this.conn.send(frame);
      this.emit(frame);
    }
    /** Grant the peer's requester `numberOfRequests` requests for `ttl` ms. */
    sendLease(ttl, numberOfRequests, metadata = null, now2) {
      if (now2 !== void 0) {
        this.now = now2;
      }
      const frame = new Lease({ ttl, numberOfRequests, metadata });
      this.conn.send(frame);
      this.emit(frame);
      this.leases.sent(ttl, numberOfRequests, this.now);
    }
    /** Queue an EXT frame; `ignore` sets the I flag. */
    sendExt(extendedType, data = EMPTY2, metadata = null, ignore = true, streamId = 0) {
      const frame = new Ext({ streamId, extendedType, data, metadata, ignore });
      this.conn.send(frame);
      this.emit(frame);
    }
    /**
     * End the connection at once with ERROR on stream 0 (CONNECTION_ERROR by default).
     * CONNECTION_CLOSE waits for the open streams: with that code this is
     * `closeGracefully` when no stream is open, a LocalProtocolError while one is.
     */
    close(errorCode = ErrorCode.CONNECTION_ERROR, message = EMPTY2) {
      if (errorCode === ErrorCode.CONNECTION_CLOSE && !this.closing) {
        if (this.streams.size > 0) {
          throw new LocalProtocolError("ERROR[CONNECTION_CLOSE] waits for the open streams: use closeGracefully(), or CONNECTION_ERROR to end them now");
        }
        return this.closeGracefully(message);
      }
      const frame = new ErrorFrame({ streamId: 0, errorCode, data: message });
      this.conn.send(frame);
      this.emit(frame);
      const events = [];
      this.terminateStreams(events, errorCode, "connection closed");
      events.push({
        type: "ConnectionClosed",
        errorCode,
        message,
        byPeer: false,
        graceful: false,
        resumable: false
      });
      return events;
    }
    /**
     * Begin a graceful close: ERROR[CONNECTION_CLOSE], after which "Sender or Receiver of
     * this frame MUST wait for outstanding streams to terminate before closing the
     * connection. New requests MAY not be accepted." ConnectionClosed(graceful) follows
     * once no stream is left.
     */
    closeGracefully(message = EMPTY2) {
      const code = ErrorCode.CONNECTION_CLOSE;
      const frame = new ErrorFrame({ streamId: 0, errorCode: code, data: message });
      this.conn.send(frame);
      this.emit(frame);
      this.closingEvent = { errorCode: code, message, byPeer: false };
      const events = [{ type: "ConnectionClosing", ...this.closingEvent }];
      this.finishDrain(events);
      return events;
    }
    // ================================================================ receiving
    /** Feed bytes from the transport (an empty array: EOF); the events they cause. `now`:
     * the caller's clock in milliseconds. */
    receiveData(data, now2) {
      if (now2 !== void 0) {
        this.now = now2;
      }
      const events = [];
      if (data.length === 0) {
        this.onEof(events);
        return events;
      }
      if (this.conn.terminated) {
        return events;
      }
      let frames;
      let failure = null;
      this.sizes = [];
      try {
        frames = this.decoder.feed(data);
      } catch (error) {
        if (!(error instanceof DecodeError)) {
          throw error;
        }
        frames = error.frames;
        failure = error;
      }
      this.framesReceived += frames.length;
      try {
        const sizes = this.sizes;
        for (let index = 0; index < frames.length; index++) {
          const frame = frames[index];
          if (this.log !== null && movesPosition(frame)) {
            this.log.received(sizes[index]);
          }
          this.handleFrame(frame, events);
        }
      } catch (error) {
        if (error instanceof RemoteProtocolError) {
          this.failConnection(error, events);
        }
        throw error;
      }
      if (failure !== null) {
        this.failConnection(failure, events);
      }
      this.finishDrain(events);
      return events;
    }
    /** A connection-level peer violation: queue the prescribed ERROR, close, throw. */
    failConnection(error, events) {
      const firstFrame = this.role === "server" && this.conn.state === ConnectionState.NEW;
      const errorCode = firstFrame ? ErrorCode.INVALID_SETUP : ErrorCode.CONNECTION_ERROR;
      const frame = new ErrorFrame({
        streamId: 0,
        errorCode,
        data: utf84.encode(error.message).subarray(0, 1024)
      });
      if (this.conn.allowsSend(frame)) {
        this.conn.send(frame);
        this.emit(frame);
      } else {
        this.conn.state = ConnectionState.CLOSED;
      }
      this.terminateStreams(events, errorCode, error.message);
      error.events = events;
      throw error;
    }
    handleFrame(frame, events) {
      const streamId = frame.streamId;
      if (streamId === 0 || frame instanceof Ext) {
        this.onConnectionFrame(frame, events);
        return;
      }
      const model = modelOf(frame);
      const state = this.conn.state;
      if ((state === ConnectionState.NEW || state === ConnectionState.SETUP_SENT) && model === null) {
        this.observe(frame, events);
      }
      let stream = this.streams.get(streamId);
      if (stream === void 0) {
        const discarding = this.discarding?.get(streamId);
        if (discarding !== void 0) {
          if (!isMessage(frame) || discarding.receive(frame) === FragmentsState.WHOLE) {
            this.discarding.delete(streamId);
          }
          this.ignoredFrames += 1;
          return;
        }
        if (model === null) {
          this.ignoredFrames += 1;
          return;
        }
        this.onNewStream(frame, model, events);
        return;
      }
      let whole = frame;
      if (isMessage(frame) && (frame.follows || stream.reassembly !== null)) {
        whole = this.receiveFragment(stream, frame, events);
        if (whole === null) {
          return;
        }
      }
      if (!dispatch(stream.machine, stream.handlers, whole, stream, events)) {
        this.ignoredOn(stream, whole);
      }
    }
    observe(frame, events) {
      const before = this.conn.state;
      const outcome = this.conn.receive(frame);
      if (outcome === ConnectionState.ESTABLISHED && (before === ConnectionState.SETUP_SENT || before === ConnectionState.AWAITING_LEASE)) {
        this.confirmSetup(events, events.length);
      }
      return outcome;
    }
    confirmSetup(events, at) {
      if (this.role === "client" && this.setupInForce !== null) {
        events.splice(at, 0, { type: "ConnectionEstablished", setup: this.setupInForce });
      }
    }
    onConnectionFrame(frame, events) {
      const before = this.conn.state;
      const mark = events.length;
      if (!dispatch(this.conn, this.connHandlers, frame, before, events)) {
        this.ignoredFrames += 1;
        return;
      }
      if ((before === ConnectionState.SETUP_SENT || before === ConnectionState.AWAITING_LEASE) && this.conn.state === ConnectionState.ESTABLISHED) {
        this.confirmSetup(events, mark);
      }
    }
    onNewStream(frame, model, events) {
      if (this.observe(frame, events) === IGNORE) {
        this.ignoredFrames += 1;
        return;
      }
      const peerParity = this.role === "client" ? 0 : 1;
      if (frame.streamId % 2 !== peerParity) {
        this.ignoredFrames += 1;
        return;
      }
      const stream = this.newStream(frame.streamId, model, "responder");
      this.streams.set(frame.streamId, stream);
      let whole = frame;
      if (frame.follows) {
        stream.receiveFragments = new FragmentsMachine("receiver");
        const joined = this.receiveFragment(stream, frame, events);
        if (joined === null) {
          return;
        }
        whole = joined;
      }
      if (!dispatch(stream.machine, stream.handlers, whole, stream, events)) {
        this.ignoredOn(stream, whole);
      }
    }
    onEof(events) {
      if (this.conn.terminated) {
        return;
      }
      const resumable = this.log !== null && !this.resumeForbidden;
      this.conn.state = ConnectionState.CLOSED;
      if (!resumable) {
        this.terminateStreams(events, ErrorCode.CONNECTION_ERROR, "transport closed");
      }
      events.push({
        type: "ConnectionClosed",
        errorCode: null,
        message: EMPTY2,
        byPeer: true,
        graceful: false,
        resumable
      });
    }
    // ================================================================ resumption
    /** The resumable state of this connection, to continue it on a new transport. */
    session() {
      if (this.log === null || this.resumeToken === null || this.setupInForce === null) {
        throw new ResumeNotAllowed("resumption was not negotiated (SETUP without a token)");
      }
      if (this.resumeForbidden) {
        throw new ResumeNotAllowed("the server said never to resume this session");
      }
      const state = { streams: this.streams, nextId: () => this.nextId };
      return { token: this.resumeToken, setup: this.setupInForce, log: this.log, state };
    }
    /**
     * (client) A new engine for a new transport that continues `session` by sending RESUME:
     * "The RESUME Identification Token MUST be the token used in the original SETUP frame.
     * The RESUME Last Received Position field MUST be the last successfully received
     * implied position from the server."
     */
    static resume(session, now2 = 0, limits) {
      const engine = new _RSocketEngine("client", limits !== void 0 ? { limits } : {});
      engine.adopt(session);
      engine.now = now2;
      const frame = new Resume({
        resumeToken: session.token,
        lastReceivedServerPosition: BigInt(session.log.receivedPosition),
        firstAvailableClientPosition: BigInt(session.log.firstAvailable)
      });
      engine.conn.send(frame);
      engine.emit(frame);
      engine.keepalive.start(now2, session.setup.keepaliveInterval, session.setup.maxLifetime, true);
      return engine;
    }
    adopt(session) {
      const state = session.state;
      this.streams = state.streams;
      for (const stream of this.streams.values()) {
        stream.handlers = this.handlersFor(stream.role, stream.model);
      }
      this.nextId = state.nextId();
      this.setupInForce = session.setup;
      this.log = session.log;
      this.resumeToken = session.token;
      this.leases.restart(session.setup.lease);
    }
    /** (server) The session a RESUME continues, or why it cannot be resumed. */
    answerResume(frame) {
      if (this.resumeLookup === null) {
        return "resumption is not supported";
      }
      const session = this.resumeLookup(frame.resumeToken);
      if (session === null) {
        return "unknown resume token";
      }
      if (frame.majorVersion !== 1 || frame.minorVersion !== 0) {
        return "a session resumes with the version it started with";
      }
      if (Number(frame.firstAvailableClientPosition) > session.log.receivedPosition) {
        return "the client no longer has frames the server has not received";
      }
      const last = Number(frame.lastReceivedServerPosition);
      if (last < session.log.firstAvailable || last > session.log.sentPosition) {
        return "the server no longer has frames past the client's position";
      }
      return session;
    }
    // ================================================================ onConnection<Frame>
    /** (server) Accept or reject the SETUP the machine let through. */
    onConnectionSetup(frame, ...context) {
      const [, events] = context;
      const info = setupInfo(frame);
      let rejection = null;
      if (info.majorVersion !== 1 || info.minorVersion > 0) {
        rejection = [
          ErrorCode.UNSUPPORTED_SETUP,
          `version ${info.majorVersion}.${info.minorVersion} is not supported`
        ];
      } else if (info.metadataMimeType.endsWith("\0") || info.dataMimeType.endsWith("\0")) {
        rejection = [ErrorCode.INVALID_SETUP, "a MIME type is null terminated"];
      } else if (info.resumeToken !== null && this.resumeLookup === null) {
        rejection = [ErrorCode.REJECTED_SETUP, "resumption is not supported"];
      } else if (info.lease && !this.leasing) {
        rejection = [ErrorCode.UNSUPPORTED_SETUP, "leasing is not supported by this server"];
      } else if (this.setupPolicy !== null) {
        rejection = this.setupPolicy(info);
      }
      if (rejection !== null) {
        const [errorCode, reason] = rejection;
        const message = utf84.encode(reason);
        const error = new ErrorFrame({ streamId: 0, errorCode, data: message });
        this.conn.send(error);
        this.emit(error);
        events.push({ type: "ConnectionRejected", errorCode, message, byPeer: false });
        return;
      }
      this.setupInForce = info;
      this.leases.restart(info.lease);
      if (info.resumeToken !== null) {
        this.log = new ResumeLog(this.resumeBufferSize);
        this.resumeToken = info.resumeToken;
      }
      this.keepalive.start(this.now, info.keepaliveInterval, info.maxLifetime, false);
      events.push({ type: "ConnectionEstablished", setup: info });
    }
    onConnectionKeepalive(frame, ...context) {
      const [, events] = context;
      this.keepalive.heard(this.now);
      if (this.log !== null && frame.lastReceivedPosition > 0n) {
        this.log.trim(Number(frame.lastReceivedPosition));
      }
      if (frame.respond) {
        const echo = new Keepalive({
          respond: false,
          lastReceivedPosition: this.position(),
          data: frame.data
        });
        if (this.conn.allowsSend(echo)) {
          this.conn.send(echo);
          this.emit(echo);
        }
      }
      events.push({ type: "KeepaliveReceived", data: frame.data, respond: frame.respond });
    }
    onConnectionLease(frame, ...context) {
      const [, events] = context;
      this.leases.received(frame.ttl, frame.numberOfRequests, this.now);
      events.push({
        type: "LeaseReceived",
        ttl: frame.ttl,
        numberOfRequests: frame.numberOfRequests,
        metadata: frame.metadata
      });
    }
    onConnectionMetadataPush(frame, ...context) {
      const [, events] = context;
      events.push({ type: "MetadataPushReceived", metadata: frame.metadata });
    }
    /** ERROR on stream 0 that the machine says ends (or, CONNECTION_CLOSE, drains) the connection. */
    onConnectionError(frame, ...context) {
      const [before, events] = context;
      const errorCode = frame.errorCode;
      const message = frame.data;
      if (this.closing) {
        if (before !== ConnectionState.CLOSING) {
          this.closingEvent = { errorCode, message, byPeer: true };
          events.push({ type: "ConnectionClosing", ...this.closingEvent });
        }
        return;
      }
      const resuming = before === ConnectionState.RESUMING;
      if (errorCode === ErrorCode.REJECTED_RESUME && resuming) {
        this.resumeForbidden = true;
      }
      const setupPhase = before === ConnectionState.SETUP_SENT || before === ConnectionState.AWAITING_LEASE;
      const setupCodes = [
        ErrorCode.INVALID_SETUP,
        ErrorCode.UNSUPPORTED_SETUP,
        ErrorCode.REJECTED_SETUP
      ];
      if (resuming || this.role === "client" && setupPhase && setupCodes.includes(errorCode)) {
        events.push({ type: "ConnectionRejected", errorCode, message, byPeer: true });
      } else {
        events.push({
          type: "ConnectionClosed",
          errorCode,
          message,
          byPeer: true,
          graceful: false,
          resumable: false
        });
      }
      this.terminateStreams(events, errorCode, "connection error from the peer");
    }
    onConnectionExt(frame, ...context) {
      if (this.extensions.has(frame.extendedType)) {
        const [, events] = context;
        events.push({
          type: "ExtReceived",
          streamId: frame.streamId,
          extendedType: frame.extendedType,
          data: frame.data,
          metadata: frame.metadata,
          ignore: frame.ignore
        });
        return;
      }
      if (frame.ignore) {
        this.ignoredFrames += 1;
        return;
      }
      throw new UnsupportedExtension(`EXT frame of extended type ${frame.extendedType} (not understood) without the I flag: 'An implementation MAY send an ERROR[CONNECTION_ERROR] frame and close the underlying transport connection'`);
    }
    /** (server) Answer RESUME with RESUME_OK (and retransmit) or ERROR[REJECTED_RESUME]. */
    onConnectionResume(frame, ...context) {
      const [, events] = context;
      const answer = this.answerResume(frame);
      if (typeof answer !== "string") {
        this.adopt(answer);
        const last = Number(frame.lastReceivedServerPosition);
        const replay = answer.log.replayFrom(last) ?? [];
        const ok = new ResumeOk({ lastReceivedClientPosition: BigInt(answer.log.receivedPosition) });
        this.conn.send(ok);
        this.emit(ok);
        this.outStreams.push(...replay);
        const setup = answer.setup;
        this.keepalive.start(this.now, setup.keepaliveInterval, setup.maxLifetime, false);
        events.push({ type: "ConnectionResumed", position: last, replayed: replay.length });
        return;
      }
      const message = utf84.encode(answer);
      const error = new ErrorFrame({
        streamId: 0,
        errorCode: ErrorCode.REJECTED_RESUME,
        data: message
      });
      this.conn.send(error);
      this.emit(error);
      events.push({
        type: "ConnectionRejected",
        errorCode: ErrorCode.REJECTED_RESUME,
        message,
        byPeer: false
      });
    }
    /** (client) "MAY retransmit all ... frames starting at the RESUME_OK Last Received
     * Position field value from the server". */
    onConnectionResumeOk(frame, ...context) {
      const [, events] = context;
      const log = this.log;
      const position = Number(frame.lastReceivedClientPosition);
      const replay = log?.replayFrom(position) ?? null;
      if (log === null || replay === null) {
        this.resumeForbidden = true;
        throw new ResumePositionLost(`RESUME_OK position ${position} is outside what we retain (${log?.firstAvailable ?? 0}..${log?.sentPosition ?? 0})`);
      }
      this.outStreams.push(...replay);
      events.push({ type: "ConnectionResumed", position, replayed: replay.length });
    }
  };

  // runtime/typescript/rsocket/dist/streams.js
  var encoder = new TextEncoder();
  var decoder = new TextDecoder();
  function bytes(value) {
    return typeof value === "string" ? encoder.encode(value) : value;
  }
  function payload(data = "", metadata = null) {
    return { data: bytes(data), metadata: metadata === null ? null : bytes(metadata) };
  }
  function text(p) {
    return decoder.decode(p.data);
  }
  var Inbound = class {
    limitRate;
    signal;
    queue = [];
    head = 0;
    done = false;
    error = null;
    waiter = null;
    consumed = 0;
    replenishAt;
    owner = null;
    constructor(limitRate, signal) {
      this.limitRate = limitRate;
      this.signal = signal;
      if (!Number.isInteger(limitRate) || limitRate < 1 || limitRate > MAX_N) {
        throw new RangeError(`limitRate must be 1..${MAX_N}, not ${limitRate}`);
      }
      this.replenishAt = Math.max(1, Math.floor(limitRate / 2));
      signal?.addEventListener("abort", () => this.abort(), { once: true });
    }
    /** Items received and not consumed yet. */
    get buffered() {
      return this.queue.length - this.head;
    }
    get finished() {
      return this.done || this.error !== null;
    }
    push(item) {
      if (this.finished) {
        return;
      }
      this.queue.push(item);
      this.wake();
    }
    complete() {
      if (this.finished) {
        return;
      }
      this.done = true;
      this.wake();
    }
    fail(error) {
      if (this.finished) {
        return;
      }
      this.error = error;
      this.wake();
    }
    next() {
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
    batches() {
      const batches = {
        next: () => {
          if (this.head < this.queue.length) {
            return Promise.resolve({ value: this.takeAll(), done: false });
          }
          return this.wait(() => this.takeAll());
        },
        return: () => this.return().then(() => ({ value: void 0, done: true })),
        [Symbol.asyncIterator]: () => batches
      };
      return batches;
    }
    async wait(take) {
      for (; ; ) {
        if (this.head < this.queue.length) {
          return { value: take(), done: false };
        }
        if (this.error !== null) {
          throw this.error;
        }
        if (this.done) {
          return { value: void 0, done: true };
        }
        await new Promise((resolve) => {
          this.waiter = { resolve };
        });
      }
    }
    /** Every buffered item (the queue itself when none was taken from it: no copy). */
    takeAll() {
      const items = this.head === 0 ? this.queue : this.queue.slice(this.head);
      this.queue = [];
      this.head = 0;
      this.consumedMany(items.length);
      return items;
    }
    take() {
      const item = this.queue[this.head];
      this.queue[this.head] = void 0;
      this.head += 1;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.consumedMany(1);
      return item;
    }
    async return() {
      if (!this.finished) {
        this.done = true;
        this.owner?.cancel();
      }
      this.queue.length = 0;
      this.head = 0;
      return { value: void 0, done: true };
    }
    [Symbol.asyncIterator]() {
      return this;
    }
    consumedMany(count) {
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
    abort() {
      if (this.finished) {
        return;
      }
      const reason = this.signal?.reason;
      this.error = reason instanceof Error ? reason : new StreamCancelled("the stream was aborted");
      this.queue.length = 0;
      this.head = 0;
      this.owner?.cancel();
      this.wake();
    }
    wake() {
      const waiter = this.waiter;
      if (waiter !== null) {
        this.waiter = null;
        waiter.resolve();
      }
    }
  };

  // runtime/typescript/rsocket/dist/transport.js
  function withPrefix(message) {
    const out = new Uint8Array(message.length + 3);
    out[0] = message.length >>> 16;
    out[1] = message.length >>> 8;
    out[2] = message.length;
    out.set(message, 3);
    return out;
  }
  var BrowserWebSocketTransport = class _BrowserWebSocketTransport {
    socket;
    sink = null;
    ended = false;
    constructor(socket) {
      this.socket = socket;
      socket.binaryType = "arraybuffer";
    }
    /** Open `url`; rejects with TransportTimeout after `timeout` ms, ConnectionLost on failure. */
    static open(url, timeout = 1e4) {
      const Ctor = globalThis.WebSocket;
      if (Ctor === void 0) {
        return Promise.reject(new ConnectionLost("no WebSocket in this environment (Node: use @wirestream/rsocket/node)", "unsupported"));
      }
      const socket = new Ctor(url);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          socket.close();
          reject(new TransportTimeout(`connecting to ${url} took longer than ${timeout} ms`));
        }, timeout);
        socket.onopen = () => {
          clearTimeout(timer);
          socket.onerror = null;
          resolve(new _BrowserWebSocketTransport(socket));
        };
        socket.onerror = () => {
          clearTimeout(timer);
          reject(new ConnectionLost(`cannot connect to ${url}`, "refused"));
        };
      });
    }
    start(sink) {
      this.sink = sink;
      this.socket.onmessage = (event) => {
        const data = event.data;
        if (data instanceof ArrayBuffer) {
          sink.data(withPrefix(new Uint8Array(data)));
        } else {
          this.fail(new ConnectionLost("a text WebSocket message (RSocket frames are binary)", "protocol"));
        }
      };
      this.socket.onclose = () => this.fail(null);
      this.socket.onerror = () => this.fail(new ConnectionLost("WebSocket error", "reset"));
    }
    send(frames) {
      if (this.ended) {
        return;
      }
      for (const frame of frames) {
        this.socket.send(frame.subarray(3));
      }
    }
    close() {
      this.socket.close();
      this.fail(null);
    }
    fail(error) {
      if (this.ended) {
        return;
      }
      this.ended = true;
      this.sink?.closed(error);
    }
  };

  // runtime/typescript/rsocket/dist/peer_connection.js
  var decoder2 = new TextDecoder();
  var encoder2 = new TextEncoder();
  var DETACHED = {
    start: () => {
    },
    send: () => {
    },
    close: () => {
    }
  };
  var PeerConnection = class {
    /** The connection's engine (a new one after each resumption). */
    engine;
    /** The transport is lost and a resumption is under way: commands wait for it. */
    parked = false;
    /** Resolves when the connection is over (rejects never; see `error`). */
    closed;
    /** Why the connection ended (null while open, or after a clean close). */
    error = null;
    transport;
    reconnect;
    resumeTimeout;
    limits;
    deferred = [];
    resumedWaiters = [];
    attempt = null;
    keepSessions;
    sessionOwner;
    expiry = null;
    ended = false;
    resolveClosed = () => {
    };
    timer = null;
    /** When the armed `timer` fires. */
    timerAt = 0;
    flushQueued = false;
    idleTimeout;
    frameTimeout;
    /** When the last whole frame arrived, and when the one still arriving began. */
    lastFrameAt = now();
    frameStartedAt = null;
    /** When the peer's first whole frame is due (null: not due, or it came). */
    firstFrameDue;
    firstFrameTimeout;
    leaseWaiters = [];
    establishedWaiters = [];
    constructor(engine, transport, options = {}) {
      this.engine = engine;
      this.transport = transport;
      this.reconnect = options.reconnect ?? null;
      this.resumeTimeout = options.resumeTimeout ?? 3e4;
      this.limits = options.limits;
      this.keepSessions = options.keepSessions ?? false;
      this.idleTimeout = options.idleTimeout ?? null;
      this.frameTimeout = options.frameTimeout === void 0 ? 6e4 : options.frameTimeout;
      this.sessionOwner = options.sessionOwner ?? null;
      this.firstFrameTimeout = options.firstFrameTimeout ?? null;
      this.firstFrameDue = this.firstFrameTimeout === null ? null : now() + this.firstFrameTimeout;
      this.closed = new Promise((resolve) => {
        this.resolveClosed = resolve;
      });
      this.attach(transport);
    }
    attach(transport) {
      this.transport = transport;
      transport.start({
        data: (chunk) => {
          if (transport === this.transport)
            this.receive(chunk);
        },
        closed: (error) => {
          if (transport === this.transport)
            this.transportClosed(error);
        }
      });
    }
    /** The SETUP in force (ours on a client, the client's on a server). */
    get setup() {
      return this.engine.setup;
    }
    // ================================================================ connection
    /** Wait until requests may be sent: the SETUP is out and, with leasing, a LEASE came. */
    async ready(signal) {
      this.checkOpen();
      signal?.throwIfAborted();
      while (this.parked) {
        await this.waitFor(this.resumedWaiters, signal);
        this.checkOpen();
      }
      if (this.engine.state === ConnectionState.AWAITING_LEASE) {
        await this.waitFor(this.leaseWaiters, signal);
        this.checkOpen();
      }
    }
    /** Whether a request may go out at once (what `ready` would not wait for). */
    sendsNow() {
      return !this.ended && !this.parked && this.engine.state !== ConnectionState.AWAITING_LEASE;
    }
    /** Resolves once the peer confirmed the SETUP (client) or it was accepted (server). */
    async established(signal) {
      const state = this.engine.state;
      if (state === ConnectionState.ESTABLISHED)
        return;
      this.checkOpen();
      await this.waitFor(this.establishedWaiters, signal);
      this.checkOpen();
    }
    waitFor(waiters, signal) {
      return new Promise((resolve, reject) => {
        const onAbort = () => reject(signal?.reason instanceof Error ? signal.reason : new StreamCancelled("aborted"));
        signal?.addEventListener("abort", onAbort, { once: true });
        waiters.push(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
    checkOpen() {
      if (this.ended) {
        throw this.error ?? new ConnectionLost("the connection is closed", "closed");
      }
    }
    /** Grant the peer's requester `numberOfRequests` requests for `ttl` ms. */
    sendLease(ttl, numberOfRequests) {
      this.command(() => this.engine.sendLease(ttl, numberOfRequests, null, now()));
    }
    /**
     * Close: gracefully (ERROR[CONNECTION_CLOSE], the open streams run to their end, within
     * `grace` ms) or, with `grace` 0, at once (ERROR[CONNECTION_ERROR]).
     */
    async close(grace = 5e3) {
      if (this.ended) {
        return this.closed;
      }
      if (grace > 0 && (this.engine.state === ConnectionState.ESTABLISHED || this.engine.state === ConnectionState.SETUP_SENT || this.engine.state === ConnectionState.AWAITING_LEASE)) {
        try {
          this.onEvents(this.engine.closeGracefully(encoder2.encode("closing")));
          this.flush();
          const timer = setTimeout(() => this.abort(new ConnectionLost("the graceful close took too long", "closed")), grace);
          await this.closed;
          clearTimeout(timer);
          return;
        } catch (error) {
          if (!(error instanceof ProtocolError))
            throw error;
        }
      }
      if (!this.engine.closed) {
        this.onEvents(this.engine.close(ErrorCode.CONNECTION_ERROR, encoder2.encode("closed")));
      }
      this.finish(null);
      return this.closed;
    }
    /** End the connection now with `error` (ERROR[CONNECTION_ERROR] if it is still open). */
    abort(error) {
      if (this.ended)
        return;
      const unestablished = this.engine.role === "server" && this.engine.setup === null;
      if (!this.engine.closed && !unestablished) {
        try {
          this.engine.close(ErrorCode.CONNECTION_ERROR, encoder2.encode(error.message).subarray(0, 1024));
        } catch {
        }
      }
      this.finish(error);
    }
    // ================================================================ plumbing
    /** Run an engine command, then send what it queued. */
    command(run) {
      if (this.ended)
        return;
      if (this.parked) {
        this.deferred.push(run);
        return;
      }
      try {
        run();
      } catch (error) {
        if (error instanceof ProtocolError) {
          this.abort(error);
          return;
        }
        throw error;
      }
      this.flush();
    }
    /** Send what the engine queued (coalesced to one transport write per microtask). */
    flush() {
      if (this.flushQueued)
        return;
      this.flushQueued = true;
      queueMicrotask(() => {
        this.flushQueued = false;
        this.flushNow();
      });
    }
    flushNow() {
      if (this.ended)
        return;
      const frames = this.engine.dataToSend();
      if (frames.length > 0) {
        this.transport.send(frames);
      }
      this.schedule();
    }
    /**
     * Arm the timer for the earliest deadline (the engine's keepalive, idle, frame). A timer
     * already armed for no later than that stays: it is called after every read and write,
     * and a clearTimeout + setTimeout pair each time was a visible cost per read; a timer
     * that fires before anything is due finds nothing to do and arms the next one.
     */
    schedule() {
      const deadline = this.ended ? null : this.nextDeadline();
      if (deadline === null) {
        if (this.timer !== null) {
          clearTimeout(this.timer);
          this.timer = null;
        }
        return;
      }
      if (this.timer !== null) {
        if (this.timerAt <= deadline)
          return;
        clearTimeout(this.timer);
      }
      this.timerAt = deadline;
      this.timer = setTimeout(() => this.onTimer(), Math.max(0, deadline - now()));
    }
    idleDeadline() {
      return this.idleTimeout !== null && !this.parked ? this.lastFrameAt + this.idleTimeout : null;
    }
    frameDeadline() {
      return this.frameTimeout !== null && this.frameStartedAt !== null && !this.parked ? this.frameStartedAt + this.frameTimeout : null;
    }
    nextDeadline() {
      const earliest = (a, b) => a === null ? b : b === null ? a : Math.min(a, b);
      const limits = earliest(this.idleDeadline(), this.frameDeadline());
      return earliest(this.engine.getTimer(), earliest(this.firstFrameDue, limits));
    }
    onTimer() {
      this.timer = null;
      if (this.ended)
        return;
      const at = now();
      if (this.firstFrameDue !== null && at >= this.firstFrameDue) {
        const limit = this.firstFrameTimeout / 1e3;
        this.abort(new HandshakeTimeout(`no frame from the peer within ${limit} s`, limit));
        return;
      }
      const frame = this.frameDeadline();
      if (frame !== null && at >= frame) {
        const limit = this.frameTimeout / 1e3;
        this.abort(new FrameTimeout(`a frame begun ${limit} s ago is not complete`, limit));
        return;
      }
      const idle = this.idleDeadline();
      if (idle !== null && at >= idle) {
        const limit = this.idleTimeout / 1e3;
        this.abort(new IdleTimeout(`no whole frame from the peer for ${limit} s`, limit));
        return;
      }
      this.onEvents(this.engine.handleTimer(at));
      this.flushNow();
    }
    receive(chunk) {
      if (this.ended)
        return;
      let events;
      const before = this.engine.framesReceived;
      const at = now();
      try {
        events = this.engine.receiveData(chunk, at);
        const buffered = this.engine.bufferedBytes > 0;
        if (this.engine.framesReceived > before) {
          this.firstFrameDue = null;
          this.lastFrameAt = at;
          this.frameStartedAt = buffered ? at : null;
        } else if (buffered) {
          this.frameStartedAt ??= at;
        }
      } catch (error) {
        if (error instanceof ProtocolError) {
          const queued = error.events ?? [];
          this.onEvents(queued);
          this.flushNow();
          this.finish(error);
          return;
        }
        throw error;
      }
      this.onEvents(events);
      this.flush();
    }
    transportClosed(error) {
      if (this.ended)
        return;
      this.onEvents(this.engine.receiveData(new Uint8Array(0), now()));
      if (this.parked)
        return;
      this.finish(error ?? this.error ?? new ConnectionLost("the transport closed", "eof"));
    }
    onEvents(events) {
      for (let index = 0; index < events.length; index++) {
        const event = events[index];
        if (event.type === "ConnectionResumed" && this.handOver(events.slice(index + 1))) {
          return;
        }
        switch (event.type) {
          case "ConnectionEstablished":
            this.wakeAll(this.establishedWaiters);
            break;
          case "ConnectionRejected": {
            const message = decoder2.decode(event.message);
            this.error = new SetupRejected(event.errorCode, message);
            if (this.attempt !== null) {
              this.attempt.reject(this.error);
              break;
            }
            this.finishSoon(this.error);
            break;
          }
          case "ConnectionClosing":
            break;
          case "ConnectionClosed":
            if (event.resumable && (this.reconnect !== null || this.keepSessions)) {
              this.park();
              break;
            }
            if (!event.graceful && event.byPeer && event.errorCode !== null) {
              const message = decoder2.decode(event.message);
              this.error = new ConnectionLost(`the peer closed the connection: ERROR[0x${event.errorCode.toString(16)}] ${message}`, "closed");
            }
            this.finishSoon(event.graceful ? null : this.error);
            break;
          case "ConnectionResumed":
            this.resumed();
            break;
          case "ConnectionDead":
            this.abort(new ConnectionLost(`no KEEPALIVE for ${(event.silentFor / 1e3).toFixed(1)} s: peer assumed dead`, "keepalive"));
            break;
          case "LeaseReceived":
            this.wakeAll(this.leaseWaiters);
            break;
          case "KeepaliveReceived":
            break;
          default:
            this.onStreamEvent(event);
        }
      }
    }
    // ================================================================ resumption
    /** The transport was lost under a resumable session: dial again and RESUME (client). */
    park() {
      if (this.attempt !== null) {
        this.attempt.reject(new ConnectionLost("the transport closed while resuming", "eof"));
        return;
      }
      if (this.parked)
        return;
      this.parked = true;
      if (this.timer !== null) {
        clearTimeout(this.timer);
        this.timer = null;
      }
      if (this.reconnect === null) {
        this.expiry = setTimeout(() => {
          const timeout = this.resumeTimeout;
          this.finish(new ConnectionLost(`not resumed within ${timeout} ms`, "resume-timeout"));
        }, this.resumeTimeout);
        return;
      }
      void this.resumeSession();
    }
    /**
     * (server) This new connection's RESUME continued another peer's session: that peer
     * takes over the engine and transport (its handlers and publishers go on), this one
     * ends quietly. False when this peer is the session's own.
     */
    handOver(rest) {
      if (this.engine.role !== "server" || this.sessionOwner === null)
        return false;
      const owner = this.sessionOwner(this.engine.session().token);
      if (owner === null || owner === this)
        return false;
      const { engine, transport } = this;
      this.transport = DETACHED;
      this.ended = true;
      if (this.timer !== null)
        clearTimeout(this.timer);
      this.resolveClosed();
      owner.takeOver(engine, transport, rest);
      return true;
    }
    /** (server) Continue on `engine` and `transport` (a resumed connection). */
    takeOver(engine, transport, rest) {
      if (this.expiry !== null) {
        clearTimeout(this.expiry);
        this.expiry = null;
      }
      const previous = this.transport;
      this.engine = engine;
      this.attach(transport);
      previous.close();
      this.flushNow();
      this.resumed();
      this.onEvents(rest);
    }
    async resumeSession() {
      const reconnect = this.reconnect;
      const deadline = now() + this.resumeTimeout;
      let delay = 5;
      let last = new ConnectionLost(`not resumed within ${this.resumeTimeout} ms`, "resume-timeout");
      while (!this.ended && now() < deadline) {
        let transport;
        try {
          transport = await reconnect();
        } catch (error) {
          last = error instanceof Error ? error : last;
          await new Promise((resolve) => setTimeout(resolve, delay));
          delay = Math.min(delay * 2, 1e3);
          continue;
        }
        if (this.ended) {
          transport.close();
          return;
        }
        let session;
        try {
          session = this.engine.session();
        } catch (error) {
          transport.close();
          this.finish(error instanceof Error ? error : last);
          return;
        }
        this.engine = RSocketEngine.resume(session, now(), this.limits);
        const outcome = new Promise((resolve, reject) => {
          this.attempt = { resolve, reject };
        });
        this.attach(transport);
        this.flushNow();
        try {
          await outcome;
          return;
        } catch (error) {
          last = error instanceof Error ? error : last;
          if (error instanceof SetupRejected || error instanceof ProtocolError && !(error instanceof ConnectionLost)) {
            break;
          }
        } finally {
          this.attempt = null;
        }
      }
      this.parked = false;
      this.finish(last);
    }
    /** RESUME_OK: the retransmission is queued; commands held meanwhile run now. */
    resumed() {
      this.parked = false;
      if (this.expiry !== null) {
        clearTimeout(this.expiry);
        this.expiry = null;
      }
      this.attempt?.resolve();
      for (const run of this.deferred.splice(0)) {
        this.command(run);
      }
      this.wakeStreams();
      this.wakeAll(this.resumedWaiters);
      this.flush();
    }
    wakeAll(waiters) {
      for (const wake of waiters.splice(0))
        wake();
    }
    finishSoon(error) {
      queueMicrotask(() => {
        this.flushNow();
        this.finish(error);
      });
    }
    finish(error) {
      if (this.ended)
        return;
      this.flushNowQuietly();
      this.ended = true;
      this.error = error;
      if (this.timer !== null)
        clearTimeout(this.timer);
      const ending = error ?? new ConnectionLost("the connection is closed", "closed");
      this.failStreams(ending);
      this.wakeAll(this.leaseWaiters);
      this.wakeAll(this.establishedWaiters);
      this.wakeAll(this.resumedWaiters);
      this.deferred = [];
      this.attempt?.reject(ending);
      if (this.expiry !== null)
        clearTimeout(this.expiry);
      this.transport.close();
      this.resolveClosed();
    }
    flushNowQuietly() {
      const frames = this.engine.dataToSend();
      if (frames.length > 0)
        this.transport.send(frames);
    }
    /** Whether the stream is still open in the engine. */
    isOpen(streamId) {
      return !this.ended && this.engine.openStreams.has(streamId);
    }
  };
  function now() {
    return performance.now();
  }

  // runtime/typescript/rsocket/dist/peer.js
  var decoder3 = new TextDecoder();
  var DEFAULT_LIMIT_RATE = 256;
  function streamError(errorCode, data) {
    const message = decoder3.decode(data);
    return errorCode === ErrorCode.APPLICATION_ERROR ? new ApplicationError(message) : new StreamError2(errorCode, message);
  }
  function iterate(source) {
    if (Symbol.asyncIterator in source) {
      return source[Symbol.asyncIterator]();
    }
    return source[Symbol.iterator]();
  }
  var RSocketPeer = class extends PeerConnection {
    handler;
    limitRate;
    sides = /* @__PURE__ */ new Map();
    constructor(engine, transport, handler = {}, options = {}) {
      super(engine, transport, options);
      this.handler = handler;
      this.limitRate = options.limitRate ?? DEFAULT_LIMIT_RATE;
    }
    // ================================================================ requester
    requestResponse(request, options = {}) {
      const signal = options.signal;
      if (signal === void 0 && this.sendsNow()) {
        try {
          return this.sendRequestResponse(request, void 0);
        } catch (error) {
          return Promise.reject(error instanceof Error ? error : new ProtocolError(String(error)));
        }
      }
      return this.ready(signal).then(() => this.sendRequestResponse(request, signal));
    }
    sendRequestResponse(request, signal) {
      const streamId = this.engine.requestResponse(request.data, request.metadata, now());
      this.flush();
      return new Promise((resolve, reject) => {
        this.sides.set(streamId, new AnswerSide(this, streamId, resolve, reject, signal));
      });
    }
    /** (AnswerSide) The request-response on `streamId` was aborted by its signal. */
    abandon(streamId) {
      if (this.sides.delete(streamId)) {
        this.command(() => this.engine.cancel(streamId));
      }
    }
    /** (AnswerSide) The request-response on `streamId` has its answer. */
    settled(streamId) {
      this.sides.delete(streamId);
    }
    async fireAndForget(request) {
      await this.ready();
      this.engine.fireAndForget(request.data, request.metadata, now());
      this.flush();
    }
    async metadataPush(metadata) {
      this.checkOpen();
      this.engine.metadataPush(metadata);
      this.flush();
    }
    /** Send an EXT frame; `ignore` sets its I flag ("Can the frame be ignored if not
     * understood?"), default true; `streamId` 0 is the connection's. */
    async sendExt(extendedType, data = EMPTY2, options = {}) {
      await this.ready();
      this.engine.sendExt(extendedType, data, options.metadata ?? null, options.ignore ?? true, options.streamId ?? 0);
      this.flush();
    }
    /** The responder's items, as they are consumed (REQUEST_N follows consumption). */
    requestStream(request, options = {}) {
      const inbound = new Inbound(options.limitRate ?? this.limitRate, options.signal);
      void this.open(inbound, options.signal, () => this.engine.requestStream(request.data, request.metadata, inbound.limitRate, now()));
      return inbound;
    }
    /**
     * A channel: `first` opens it, `outbound` follows as the responder grants REQUEST_N
     * (null: our side completes with the first message); the responder's items come back.
     */
    requestChannel(first, outbound, options = {}) {
      const inbound = new Inbound(options.limitRate ?? this.limitRate, options.signal);
      void this.open(inbound, options.signal, () => this.engine.requestChannel(first.data, first.metadata, inbound.limitRate, outbound === null, now()), outbound);
      return inbound;
    }
    async open(inbound, signal, send, outbound = null) {
      let streamId;
      try {
        await this.ready(signal);
        streamId = send();
      } catch (error) {
        inbound.fail(error instanceof Error ? error : new ProtocolError(String(error)));
        return;
      }
      this.flush();
      let pump = null;
      inbound.owner = {
        request: (n) => this.command(() => {
          if (this.engine.openStreams.has(streamId))
            this.engine.request(streamId, n);
        }),
        cancel: () => {
          pump?.stop();
          if (this.sides.delete(streamId) && this.engine.openStreams.has(streamId)) {
            this.command(() => this.engine.cancel(streamId));
          }
        }
      };
      if (outbound !== null) {
        pump = new OutboundPump(this, streamId, iterate(outbound), new LazyAbort());
      }
      this.sides.set(streamId, {
        payload: (item, complete) => {
          inbound.push(item);
          if (complete)
            this.endSide(streamId, pump, () => inbound.complete());
        },
        complete: () => this.endSide(streamId, pump, () => inbound.complete()),
        error: (error) => {
          pump?.stop();
          this.sides.delete(streamId);
          inbound.fail(error);
        },
        canceled: () => pump?.stop(),
        // the responder cancelled our half of the channel
        requestN: () => pump?.wake()
      });
      void pump?.run();
    }
    endSide(streamId, pump, end) {
      if (!this.engine.openStreams.has(streamId) && pump === null) {
        this.sides.delete(streamId);
      } else if (!this.engine.openStreams.has(streamId)) {
        pump?.stop();
        this.sides.delete(streamId);
      }
      end();
    }
    // ================================================================ responder
    onRequest(event) {
      const handler = this.handler;
      const request = { data: event.data, metadata: event.metadata };
      const streamId = event.streamId;
      const controller = new LazyAbort();
      const fail = (error) => {
        if (!this.engine.openStreams.has(streamId) || controller.aborted) {
          return;
        }
        const code = error instanceof StreamError2 ? error.errorCode : ErrorCode.APPLICATION_ERROR;
        const message = error instanceof Error ? error.message : String(error);
        this.command(() => this.engine.sendError(streamId, code, message));
      };
      const missing = (what) => fail(new ApplicationError(`no handler for ${what}`));
      switch (event.model) {
        case "fire_and_forget":
          if (handler.fireAndForget !== void 0) {
            void Promise.resolve().then(() => handler.fireAndForget?.(request)).catch(() => {
            });
          }
          return;
        case "request_response": {
          this.sides.set(streamId, this.responderSide(controller, null, null));
          if (handler.requestResponse === void 0) {
            missing("request-response");
            this.sides.delete(streamId);
            return;
          }
          const respond = handler.requestResponse;
          const signal = respond.length >= 2 ? controller.signal : neverAborted();
          Promise.resolve().then(() => respond.call(handler, request, signal)).then((answer) => {
            this.sides.delete(streamId);
            if (!controller.aborted && this.engine.openStreams.has(streamId)) {
              this.command(() => this.engine.sendNext(streamId, answer.data, answer.metadata, true));
            }
          }, (error) => {
            this.sides.delete(streamId);
            fail(error);
          });
          return;
        }
        case "request_stream":
        case "request_channel": {
          let inbound = null;
          if (event.model === "request_channel") {
            inbound = new Inbound(this.limitRate);
            if (event.complete) {
              inbound.complete();
            } else {
              inbound.owner = {
                request: (n) => this.command(() => {
                  if (this.engine.openStreams.has(streamId))
                    this.engine.request(streamId, n);
                }),
                cancel: () => {
                }
              };
              this.command(() => this.engine.request(streamId, inbound.limitRate));
            }
          }
          let source;
          try {
            if (inbound !== null) {
              if (handler.requestChannel === void 0)
                throw new ApplicationError("no handler for request-channel");
              source = handler.requestChannel(request, inbound, controller.signal);
            } else {
              if (handler.requestStream === void 0)
                throw new ApplicationError("no handler for request-stream");
              source = handler.requestStream(request, controller.signal);
            }
          } catch (error) {
            fail(error);
            return;
          }
          const pump = new OutboundPump(this, streamId, iterate(source), controller);
          this.sides.set(streamId, this.responderSide(controller, pump, inbound));
          void pump.run();
          return;
        }
      }
    }
    responderSide(controller, pump, inbound) {
      return {
        payload: (item, complete) => {
          inbound?.push(item);
          if (complete)
            inbound?.complete();
        },
        complete: () => inbound?.complete(),
        error: (error) => {
          inbound?.fail(error);
          controller.abort(error);
          pump?.stop();
        },
        canceled: () => {
          inbound?.fail(new StreamCancelled("the requester cancelled"));
          controller.abort(new StreamCancelled("the requester cancelled"));
          pump?.stop();
        },
        requestN: () => pump?.wake()
      };
    }
    // ================================================================ events
    /** The events of streams (and METADATA_PUSH): to whoever waits on each. */
    onStreamEvent(event) {
      switch (event.type) {
        case "RequestReceived":
          this.onRequest(event);
          break;
        case "PayloadReceived":
          this.sides.get(event.streamId)?.payload({ data: event.data, metadata: event.metadata }, event.complete);
          break;
        case "StreamCompleted":
          this.sides.get(event.streamId)?.complete();
          break;
        case "ErrorReceived":
          this.sides.get(event.streamId)?.error(streamError(event.errorCode, event.data));
          this.sides.delete(event.streamId);
          break;
        case "StreamCanceled":
          this.sides.get(event.streamId)?.canceled();
          if (!this.engine.openStreams.has(event.streamId))
            this.sides.delete(event.streamId);
          break;
        case "RequestNReceived":
          this.sides.get(event.streamId)?.requestN();
          break;
        case "StreamAborted":
          this.sides.get(event.streamId)?.error(new StreamError2(event.errorCode, event.why));
          this.sides.delete(event.streamId);
          break;
        case "ExtReceived": {
          const onExt = this.handler.onExt;
          if (onExt !== void 0) {
            const item = { data: event.data, metadata: event.metadata };
            void Promise.resolve().then(() => onExt.call(this.handler, event.extendedType, item, event.streamId)).catch(() => {
            });
          }
          break;
        }
        case "MetadataPushReceived": {
          const push = this.handler.metadataPush;
          if (push !== void 0) {
            void Promise.resolve().then(() => push.call(this.handler, event.metadata)).catch(() => {
            });
          }
          break;
        }
        default:
          break;
      }
    }
    failStreams(error) {
      for (const side of this.sides.values())
        side.error(error);
      this.sides.clear();
    }
    wakeStreams() {
      for (const side of this.sides.values())
        side.requestN();
    }
  };
  var LazyAbort = class {
    aborted = false;
    controller = null;
    reason = void 0;
    get signal() {
      if (this.controller === null) {
        this.controller = new AbortController();
        if (this.aborted)
          this.controller.abort(this.reason);
      }
      return this.controller.signal;
    }
    abort(reason) {
      if (this.aborted)
        return;
      this.aborted = true;
      this.reason = reason;
      this.controller?.abort(reason);
    }
  };
  var never = null;
  function neverAborted() {
    return never ??= new AbortController().signal;
  }
  var AnswerSide = class {
    peer;
    streamId;
    resolve;
    reject;
    signal;
    onAbort = null;
    constructor(peer, streamId, resolve, reject, signal) {
      this.peer = peer;
      this.streamId = streamId;
      this.resolve = resolve;
      this.reject = reject;
      this.signal = signal;
      if (signal !== void 0) {
        const onAbort = () => {
          peer.abandon(streamId);
          reject(signal.reason instanceof Error ? signal.reason : new StreamCancelled("the request was aborted"));
        };
        this.onAbort = onAbort;
        signal.addEventListener("abort", onAbort, { once: true });
      }
    }
    payload(item) {
      this.done();
      this.resolve(item);
    }
    complete() {
      this.done();
      this.resolve({ data: new Uint8Array(0), metadata: null });
    }
    error(error) {
      this.done();
      this.reject(error);
    }
    canceled() {
    }
    requestN() {
    }
    done() {
      if (this.onAbort !== null)
        this.signal?.removeEventListener("abort", this.onAbort);
      this.peer.settled(this.streamId);
    }
  };
  var YIELD_EVERY = 256;
  function yieldToIo() {
    const immediate = globalThis.setImmediate;
    return new Promise((resolve) => {
      if (immediate !== void 0)
        immediate(resolve);
      else
        setTimeout(resolve, 0);
    });
  }
  var OutboundPump = class {
    peer;
    streamId;
    source;
    controller;
    waiter = null;
    stopped = false;
    constructor(peer, streamId, source, controller) {
      this.peer = peer;
      this.streamId = streamId;
      this.source = source;
      this.controller = controller;
    }
    wake() {
      const waiter = this.waiter;
      if (waiter !== null) {
        this.waiter = null;
        waiter();
      }
    }
    stop() {
      if (this.stopped)
        return;
      this.stopped = true;
      this.wake();
      void Promise.resolve(this.source.return?.()).catch(() => {
      });
    }
    async run() {
      const { peer, streamId } = this;
      let sent = 0;
      try {
        for (; ; ) {
          while (!this.stopped && peer.isOpen(streamId) && (peer.parked || peer.engine.outboundCredit(streamId) < 1)) {
            sent = 0;
            await new Promise((resolve) => {
              this.waiter = resolve;
            });
          }
          if (this.stopped || !peer.isOpen(streamId))
            return;
          const next = this.source.next();
          const result = isPromise(next) ? await next : next;
          if (this.stopped || this.controller.aborted || !peer.isOpen(streamId))
            return;
          if (result.done === true) {
            peer.command(() => peer.engine.sendComplete(streamId));
            return;
          }
          const item = result.value;
          peer.command(() => peer.engine.sendNext(streamId, item.data, item.metadata));
          sent += 1;
          if (sent >= YIELD_EVERY) {
            sent = 0;
            await yieldToIo();
          }
        }
      } catch (error) {
        if (this.stopped || !peer.isOpen(streamId))
          return;
        const code = error instanceof StreamError2 ? error.errorCode : ErrorCode.APPLICATION_ERROR;
        const message = error instanceof Error ? error.message : String(error);
        peer.command(() => peer.engine.sendError(streamId, code, message));
      }
    }
  };
  function isPromise(value) {
    return typeof value?.then === "function";
  }

  // runtime/typescript/rsocket/dist/connect.js
  function startClient(transport, options = {}, dial = null) {
    const resume = options.resume === true;
    if (resume && dial === null) {
      transport.close();
      throw new ResumeNotAllowed("resume needs a way to dial the server again");
    }
    const engine = new RSocketEngine("client", {
      setup: {
        keepaliveInterval: options.keepalive ?? 2e4,
        maxLifetime: options.maxLifetime ?? 9e4,
        metadataMimeType: options.metadataMimeType ?? "application/octet-stream",
        dataMimeType: options.dataMimeType ?? "application/octet-stream",
        data: options.setupData ?? EMPTY2,
        metadata: options.setupMetadata ?? null,
        lease: options.lease ?? false,
        resumeToken: resume ? crypto.getRandomValues(new Uint8Array(16)) : null
      },
      ...options.limits !== void 0 ? { limits: options.limits } : {},
      // the EXT types our handler's onExt takes (others without the I flag end the connection)
      ...options.handler?.extensions !== void 0 ? { extensions: options.handler.extensions } : {}
    });
    const peer = new RSocketPeer(engine, transport, options.handler ?? {}, {
      ...options.limitRate !== void 0 ? { limitRate: options.limitRate } : {},
      ...options.resumeTimeout !== void 0 ? { resumeTimeout: options.resumeTimeout } : {},
      ...options.limits !== void 0 ? { limits: options.limits } : {},
      reconnect: resume ? dial : null,
      ...options.idleTimeout !== void 0 ? { idleTimeout: options.idleTimeout } : {},
      ...options.frameTimeout !== void 0 ? { frameTimeout: options.frameTimeout } : {},
      firstFrameTimeout: firstFrameDue(options)
    });
    engine.connect(performance.now());
    if (options.lease === true) {
      peer.sendLease(2147483647, 2147483647);
    }
    peer.flush();
    return peer;
  }
  function firstFrameDue(options) {
    const handshake = options.handshakeTimeout === void 0 ? 1e4 : options.handshakeTimeout;
    const interval = options.keepalive ?? 2e4;
    return handshake === null || interval === 0 ? null : handshake + interval;
  }
  async function connect(url, options = {}) {
    const scheme = url.split(":", 1)[0].toLowerCase();
    if (scheme !== "ws" && scheme !== "wss") {
      throw new ConnectionLost(`${scheme}: is not a browser transport (ws, wss); Node: @wirestream/rsocket/node`, "unsupported");
    }
    const dial = () => BrowserWebSocketTransport.open(url, options.timeout);
    return startClient(await dial(), options, dial);
  }

  // wirestream/apps/demo_web/chart.ts
  var SVG = "http://www.w3.org/2000/svg";
  var W = 540;
  var PRICE_H = 190;
  var VOL_H = 60;
  var GAP = 18;
  var LEFT = 52;
  var RIGHT = 8;
  var TOP = 6;
  var MINUTE = 6e4;
  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    if (parent !== void 0) parent.appendChild(node);
    return node;
  }
  function label(parent, x, y, content, anchor = "start") {
    el("text", { x, y, class: "axis", "text-anchor": anchor }, parent).textContent = content;
  }
  function hhmm(ms) {
    return new Date(ms).toISOString().slice(11, 16);
  }
  function bySymbol(windows) {
    const groups = /* @__PURE__ */ new Map();
    for (const w of windows) {
      const rows = groups.get(w.symbol);
      if (rows === void 0) groups.set(w.symbol, [w]);
      else rows.push(w);
    }
    for (const rows of groups.values()) rows.sort((a, b) => a.start - b.start);
    return [...groups].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
  }
  function panel(symbol, rows) {
    const t0 = rows[0].start;
    const t1 = rows[rows.length - 1].start + MINUTE;
    let lo = Infinity;
    let hi = -Infinity;
    let vmax = 0;
    let trades = 0;
    for (const r of rows) {
      lo = Math.min(lo, r.low);
      hi = Math.max(hi, r.high);
      vmax = Math.max(vmax, r.volume);
      trades += r.trades;
    }
    const span = hi - lo || 1;
    vmax = vmax || 1;
    const plotW = W - LEFT - RIGHT;
    const x = (ms) => LEFT + (ms - t0) / (t1 - t0) * plotW;
    const mid = (r) => x(r.start + MINUTE / 2);
    const y = (price) => TOP + (1 - (price - lo) / span) * PRICE_H;
    const volTop = TOP + PRICE_H + GAP;
    const figure = document.createElement("figure");
    const caption = document.createElement("figcaption");
    caption.textContent = symbol;
    const detail = document.createElement("span");
    detail.textContent = `${rows.length} windows, ${trades.toLocaleString("en")} trades`;
    caption.appendChild(detail);
    figure.appendChild(caption);
    const svg = el("svg", { viewBox: `0 0 ${W} ${volTop + VOL_H + 16}`, "data-symbol": symbol });
    for (const p of [lo, (lo + hi) / 2, hi]) {
      el("line", { x1: LEFT, x2: W - RIGHT, y1: y(p), y2: y(p), class: "grid" }, svg);
      label(svg, LEFT - 4, y(p) + 3, p.toFixed(2), "end");
    }
    const point = (r, price) => `${mid(r).toFixed(2)},${y(price).toFixed(2)}`;
    const upper = rows.map((r) => point(r, r.high));
    const lower = rows.map((r) => point(r, r.low)).reverse();
    el("polygon", { class: "band", points: upper.concat(lower).join(" ") }, svg);
    el("polyline", { class: "vwap", points: rows.map((r) => point(r, r.vwap)).join(" ") }, svg);
    const barW = Math.max(1, plotW / ((t1 - t0) / MINUTE) - 1);
    for (const r of rows) {
      const h = r.volume / vmax * VOL_H;
      const bar = el("rect", {
        class: "volume",
        x: (x(r.start) + 0.5).toFixed(2),
        y: (volTop + VOL_H - h).toFixed(2),
        width: barW.toFixed(2),
        height: h.toFixed(2)
      }, svg);
      el("title", {}, bar).textContent = `${hhmm(r.start)} VWAP ${r.vwap.toFixed(4)} low ${r.low} high ${r.high} volume ${r.volume}`;
    }
    label(svg, LEFT - 4, volTop + VOL_H, "0", "end");
    label(svg, LEFT - 4, volTop + 8, vmax.toLocaleString("en"), "end");
    label(svg, LEFT, volTop + VOL_H + 13, `${hhmm(t0)} UTC`);
    label(svg, W - RIGHT, volTop + VOL_H + 13, hhmm(t1), "end");
    figure.appendChild(svg);
    return figure;
  }
  function drawChart(panels2, windows) {
    panels2.replaceChildren(...bySymbol(windows).map(([symbol, rows]) => panel(symbol, rows)));
    document.documentElement.dataset["drawn"] = String(windows.length);
  }

  // wirestream/apps/demo_web/live.ts
  var LIMIT_RATE = 4;
  var root = document.documentElement;
  var panels = document.getElementById("panels");
  var status = document.getElementById("status");
  function say(state, message) {
    root.dataset["state"] = state;
    status.textContent = message;
  }
  async function follow(feed2) {
    const windows = /* @__PURE__ */ new Map();
    let updates = 0;
    say("connecting", `connecting to ${feed2}`);
    const rs = await connect(feed2);
    try {
      say("live", "live: waiting for Spark to close the first windows");
      for await (const item of rs.requestStream(payload("windows"), { limitRate: LIMIT_RATE })) {
        const update = JSON.parse(text(item));
        for (const w of update.windows) windows.set(`${w.symbol} ${w.start}`, w);
        updates += 1;
        drawChart(panels, [...windows.values()]);
        root.dataset["updates"] = String(updates);
        if (update.final) {
          say("final", `the demo's query has ended: ${windows.size} windows`);
        } else {
          const times = updates === 1 ? "1 update" : `${updates} updates`;
          say("live", `live: ${windows.size} windows so far (${times})`);
        }
      }
    } finally {
      await rs.close();
    }
  }
  var feed = root.dataset["feed"];
  if (feed === void 0) {
    say("closed", "this page has no feed (data-feed): open it from `make demo LIVE=1`");
  } else {
    follow(feed).catch((error) => {
      const reason = error instanceof Error ? error.message : String(error);
      say("closed", `the feed has closed (the demo has stopped?): ${reason}`);
    });
  }
})();
