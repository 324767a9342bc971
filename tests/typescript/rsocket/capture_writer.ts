// Writes 50 records of one connection with @wirestream/rsocket/node's CaptureWriter, for
// tests/typescript/test_rsocket_capture_ts.py to read with Python's capture reader:
//   node tests/typescript/dist/rsocket/capture_writer.js PATH MAX_FILE_BYTES
// record i is "frame i", direction "out" for odd i, side "server", at 1.7e18 + i ns; prints
// the number of files written.

import { CaptureWriter } from "@wirestream/rsocket/node";

const [file, maxFileBytes] = process.argv.slice(2);
if (file === undefined || maxFileBytes === undefined) {
  process.stderr.write("usage: capture_writer.js PATH MAX_FILE_BYTES\n");
  process.exit(2);
}
const writer = new CaptureWriter(file, { maxFileBytes: Number(maxFileBytes) });
const id = writer.newConnectionId();
for (let i = 0; i < 50; i++) {
  writer.record(id, i % 2 === 1 ? "out" : "in", new TextEncoder().encode(`frame ${i}`), {
    side: "server",
    timestampNs: 1_700_000_000_000_000_000n + BigInt(i),
  });
}
writer.close();
process.stdout.write(`${writer.files.length}\n`);
