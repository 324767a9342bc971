// The TypeScript side of what the Python fuzz targets found (tests/fuzz/test_fuzz_regressions.py):
// the generator writes the same checks into both languages.

import assert from "node:assert/strict";
import { test } from "node:test";

import { EncodeError, Truncated } from "@wirestream/runtime";
import * as rsioV0 from "@wirestream/generated/rsio/v0";
import * as rsocketV1_0 from "@wirestream/generated/rsocket/v1_0";

test("an UnknownFrame's flags must fit the header's flag bits", () => {
  const frame = new rsocketV1_0.UnknownFrame({ code: 0x3e, streamId: 1, flags: 0x280, body: new Uint8Array([0x78]) });
  assert.equal(Buffer.from(rsocketV1_0.encode(frame)).toString("hex"), "00000001fa8078");
  for (const flags of [0x400, 0xfffff]) {
    frame.flags = flags;
    assert.throws(() => rsocketV1_0.encode(frame), EncodeError);
  }
});

test("the MessagePack encoding checks integer ranges as the binary one does", () => {
  const frames = [
    new rsioV0.Request({ subscriber: 1n, demand: 1n << 63n }),
    new rsioV0.Request({ subscriber: 1n << 64n, demand: 1n }),
    new rsioV0.Subscribe({ publisher: "p", subscriber: 1n, initialDemand: -1n }),
    new rsioV0.ClientHello({ version: 0n, extensions: [1n << 64n] }),
  ];
  for (const frame of frames) {
    assert.throws(() => rsioV0.encode(frame), EncodeError);
    assert.throws(() => rsioV0.encodeMsgpack(frame), EncodeError);
  }
});

test("a cut array of varints says how many bytes its remaining elements need", () => {
  // ClientHello, version 0, 3 extension ids: the first takes 2 bytes, the input ends
  // inside the second (it needs byte 7), and the third needs at least one more: 8.
  const bytes = new Uint8Array([0x01, 0x00, 0x03, 0x81, 0x01, 0x81]);
  assert.throws(
    () => rsioV0.decode(bytes),
    (error: unknown) => error instanceof Truncated && error.needed === 8,
  );
});
