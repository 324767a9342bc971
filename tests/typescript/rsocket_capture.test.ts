// @wirestream/rsocket/node's frame capture (twin of tests/capture's writer and tap rules):
// the file layout of runtime/capture/format.py, rotation and naming, the limits, and the tap
// cutting a byte stream into frames however it is split. That Python's reader reads these
// files, and that they mirror a Python peer's capture of the same connection, is
// tests/typescript/test_rsocket_capture_ts.py.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import * as zlib from "node:zlib";

import { EncodeError } from "@wirestream/runtime";
import {
  CaptureWriter,
  CapturedTransport,
  captureFiles,
  type Transport,
  type TransportSink,
} from "@wirestream/rsocket/node";

interface Parsed {
  protocol: string;
  sync: Buffer;
  records: { flags: number; connection: bigint; timestamp: bigint; frame: Buffer }[];
}

/** A capture file read by the format's layout, every CRC checked. */
function parse(file: string): Parsed {
  const data = fs.readFileSync(file);
  assert.deepEqual([...data.subarray(0, 8)], [0x57, 0x53, 0x43, 0x41, 0x50, 0x0d, 0x0a, 0x1a]);
  assert.equal(data.readUInt16BE(8), 1);
  const n = data[14]!;
  assert.equal(data.readUInt32BE(15 + n), zlib.crc32(data.subarray(0, 15 + n)) >>> 0);
  const sync = data.subarray(10, 14);
  const records: Parsed["records"] = [];
  let at = 19 + n;
  while (at < data.length) {
    assert.deepEqual(data.subarray(at, at + 4), sync);
    const length = data.readUInt32BE(at + 4);
    assert.equal(data.readUInt32BE(at + 29), zlib.crc32(data.subarray(at + 4, at + 29)) >>> 0);
    const frame = data.subarray(at + 33, at + 33 + length);
    assert.equal(data.readUInt32BE(at + 25), zlib.crc32(frame) >>> 0);
    records.push({
      timestamp: data.readBigUInt64BE(at + 8),
      connection: data.readBigUInt64BE(at + 16),
      flags: data[at + 24]!,
      frame,
    });
    at += 33 + length;
  }
  return { protocol: data.subarray(15, 15 + n).toString("ascii"), sync, records };
}

function folder(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "wirestream-capture-"));
}

/** A transport that only remembers its sink: the test plays the socket. */
class Socket implements Transport {
  sink: TransportSink | null = null;
  sent: Uint8Array[] = [];
  start(sink: TransportSink): void {
    this.sink = sink;
  }
  send(frames: readonly Uint8Array<ArrayBuffer>[]): void {
    this.sent.push(...frames);
  }
  close(): void {}
}

function prefixed(...frames: string[]): Uint8Array<ArrayBuffer> {
  return Buffer.concat(
    frames.map((f) =>
      Buffer.concat([Buffer.from([0, f.length >> 8, f.length & 0xff]), Buffer.from(f)]),
    ),
  ) as unknown as Uint8Array<ArrayBuffer>;
}

test("test_crc32_is_the_ieee_polynomial_of_the_format", () => {
  // format.py: "the CRC of b'123456789' is 0xCBF43926"
  assert.equal(zlib.crc32(Buffer.from("123456789")) >>> 0, 0xcbf43926);
});

test("test_writer_writes_header_then_records_with_both_crcs", () => {
  const dir = folder();
  const writer = new CaptureWriter(path.join(dir, "c.wscap"));
  const id = writer.newConnectionId();
  writer.record(id, "in", Buffer.from("abc"), { timestampNs: 5n });
  writer.record(id, "out", Buffer.from(""), { side: "server", timestampNs: 6n });
  writer.close();
  const parsed = parse(path.join(dir, "c.000000.wscap"));
  assert.equal(parsed.protocol, "rsocket/1.0");
  assert.deepEqual(
    parsed.records.map((r) => [r.flags, r.timestamp, r.frame.toString()]),
    [
      [0x00, 5n, "abc"], // in, client side
      [0x03, 6n, ""], // out (bit 0), server side (bit 1)
    ],
  );
  assert.ok(parsed.records.every((r) => r.connection === id));
});

test("test_connection_ids_are_a_random_writer_id_then_a_count", () => {
  const dir = folder();
  const one = new CaptureWriter(path.join(dir, "a.wscap"));
  const two = new CaptureWriter(path.join(dir, "b.wscap"));
  const ids = [one.newConnectionId(), one.newConnectionId()];
  assert.deepEqual(ids.map((id) => id & 0xffffffffn), [1n, 2n]);
  assert.equal(ids[0]! >> 32n, ids[1]! >> 32n);
  assert.ok(ids[0]! < 2n ** 63n); // a signed 64-bit column (Spark's long)
  assert.notEqual(two.newConnectionId() >> 32n, ids[0]! >> 32n); // 2^-31 to fail by chance
  one.close();
  two.close();
});

test("test_writer_rotates_before_a_file_would_exceed_max_file_bytes", () => {
  const dir = folder();
  const writer = new CaptureWriter(path.join(dir, "r.wscap"), { maxFileBytes: 200 });
  const id = writer.newConnectionId();
  for (let i = 0; i < 10; i++) writer.record(id, "in", Buffer.alloc(50, i));
  writer.close();
  const files = captureFiles(path.join(dir, "r.wscap"));
  assert.deepEqual(files, writer.files);
  assert.deepEqual(
    files.map((f) => path.basename(f)),
    files.map((_, n) => `r.${String(n).padStart(6, "0")}.wscap`),
  );
  assert.ok(files.every((f) => fs.statSync(f).size <= 200));
  const frames = files.flatMap((f) => parse(f).records.map((r) => r.frame[0]));
  assert.deepEqual(frames, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  // each file has its own sync marker
  assert.equal(new Set(files.map((f) => parse(f).sync.toString("hex"))).size, files.length);
});

test("test_a_record_larger_than_max_file_bytes_still_gets_a_file_of_its_own", () => {
  const dir = folder();
  const writer = new CaptureWriter(path.join(dir, "big.wscap"), { maxFileBytes: 100 });
  const id = writer.newConnectionId();
  writer.record(id, "in", Buffer.alloc(500));
  writer.record(id, "in", Buffer.alloc(500));
  writer.close();
  assert.deepEqual(writer.files.map((f) => parse(f).records.length), [1, 1]);
});

test("test_new_writer_starts_after_the_highest_numbered_file", () => {
  const dir = folder();
  fs.writeFileSync(path.join(dir, "x.000007.wscap"), "a previous run's, maybe torn");
  const writer = new CaptureWriter(path.join(dir, "x.wscap"));
  writer.close();
  assert.equal(path.basename(writer.path), "x.000008.wscap");
  const previous = fs.readFileSync(path.join(dir, "x.000007.wscap"), "utf8");
  assert.equal(previous, "a previous run's, maybe torn");
});

test("test_max_files_keeps_only_the_newest", () => {
  const dir = folder();
  const writer = new CaptureWriter(path.join(dir, "m.wscap"), { maxFileBytes: 100, maxFiles: 2 });
  const id = writer.newConnectionId();
  for (let i = 0; i < 6; i++) writer.record(id, "in", Buffer.alloc(60, i));
  writer.close();
  const left = captureFiles(path.join(dir, "m.wscap"));
  assert.deepEqual(left, writer.files.slice(-2));
  assert.deepEqual(left.flatMap((f) => parse(f).records.map((r) => r.frame[0])), [4, 5]);
});

test("test_a_frame_whose_memory_is_reused_after_record_is_recorded_as_it_was", () => {
  // A read buffer or an encoder's pool is written again once record returns: the writer
  // copies the frame then, not when it flushes.
  const writer = new CaptureWriter(path.join(folder(), "reuse.wscap"));
  const pool = Buffer.from("first");
  writer.record(1n, "out", pool);
  pool.write("other");
  writer.record(1n, "out", pool);
  writer.close();
  assert.deepEqual(parse(writer.path).records.map((r) => r.frame.toString()), ["first", "other"]);
});

test("test_records_larger_than_the_buffer_go_to_the_file_in_order", () => {
  const writer = new CaptureWriter(path.join(folder(), "large.wscap"), { bufferBytes: 64 });
  const sizes = [10, 100, 5, 31, 200, 0, 64];
  sizes.forEach((n, i) => writer.record(1n, "in", Buffer.alloc(n, i + 1)));
  writer.close();
  const frames = parse(writer.path).records.map((r) => r.frame);
  assert.deepEqual(frames.map((f) => f.length), sizes);
  assert.ok(frames.every((f, i) => f.every((b) => b === i + 1)));
});

test("test_record_refuses_a_frame_over_the_format_maximum", () => {
  const dir = folder();
  const writer = new CaptureWriter(path.join(dir, "o.wscap"));
  assert.throws(() => writer.record(1n, "in", new Uint8Array(2 ** 26 + 1)), EncodeError);
  writer.record(1n, "in", new Uint8Array(10));
  writer.close();
  assert.equal(parse(writer.path).records.length, 1);
});

test("test_closed_writer_refuses_records", () => {
  const writer = new CaptureWriter(path.join(folder(), "z.wscap"));
  writer.close();
  assert.ok(writer.closed);
  assert.throws(() => writer.record(1n, "in", new Uint8Array(1)), /closed/);
});

test("test_bad_options_are_refused", () => {
  const file = path.join(folder(), "b.wscap");
  assert.throws(() => new CaptureWriter(file, { maxFileBytes: 0 }), RangeError);
  assert.throws(() => new CaptureWriter(file, { maxFiles: 0 }), RangeError);
  assert.throws(() => new CaptureWriter(file, { protocol: "rsocket/0.2" }), /rsocket\/1.0/);
});

test("test_tap_records_frames_split_anywhere_across_reads_once_whole", () => {
  const stream = prefixed("SETUP", "", "request", "x".repeat(300));
  for (const cut of [1, 2, 3, 4, 7, 11, stream.length - 1]) {
    const dir = folder();
    const writer = new CaptureWriter(path.join(dir, "t.wscap"));
    const socket = new Socket();
    const tapped = new CapturedTransport(socket, writer, "client");
    const delivered: Uint8Array[] = [];
    tapped.start({ data: (chunk) => delivered.push(chunk), closed: () => {} });
    for (let at = 0; at < stream.length; at += cut) {
      socket.sink!.data(stream.subarray(at, Math.min(stream.length, at + cut)));
    }
    writer.close();
    assert.deepEqual(Buffer.concat(delivered), Buffer.from(stream)); // bytes pass untouched
    const records = parse(writer.path).records;
    assert.deepEqual(
      records.map((r) => r.frame.toString()),
      ["SETUP", "", "request", "x".repeat(300)],
      `cut every ${cut} bytes`,
    );
    assert.ok(records.every((r) => r.flags === 0 && r.connection === tapped.connectionId));
  }
});

test("test_tap_records_what_it_sends_as_out_after_the_transport_took_it", () => {
  const dir = folder();
  const writer = new CaptureWriter(path.join(dir, "s.wscap"));
  const socket = new Socket();
  const tapped = new CapturedTransport(socket, writer, "server");
  tapped.start({ data: () => {}, closed: () => {} });
  const batch = prefixed("one", "two");
  tapped.send([batch, prefixed("three")]);
  writer.close();
  const sent = socket.sent.map((b) => Buffer.from(b));
  assert.deepEqual(sent, [Buffer.from(batch), Buffer.from(prefixed("three"))]);
  const records = parse(writer.path).records;
  assert.deepEqual(records.map((r) => [r.flags, r.frame.toString()]), [
    [0x03, "one"],
    [0x03, "two"],
    [0x03, "three"],
  ]);
});

test("test_tap_stops_quietly_once_the_capture_is_closed", () => {
  const writer = new CaptureWriter(path.join(folder(), "q.wscap"));
  const socket = new Socket();
  const tapped = new CapturedTransport(socket, writer, "client");
  const delivered: Uint8Array[] = [];
  tapped.start({ data: (chunk) => delivered.push(chunk), closed: () => {} });
  writer.close();
  socket.sink!.data(prefixed("late"));
  tapped.send([prefixed("later")]);
  assert.equal(delivered.length, 1); // the connection goes on
  assert.equal(socket.sent.length, 1);
  assert.equal(parse(writer.path).records.length, 0);
});
