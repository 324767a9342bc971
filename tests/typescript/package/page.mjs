// Bundled by esbuild --minify for the browser (test_package.py) and run in Chromium: the
// same checks, then a pooled encode posted to a Worker with its buffer transferred.
import * as codec from "@wirestream/generated/rsocket/v1_0";
import * as machines from "@wirestream/generated/rsocket/v1_0/machines";
import * as runtime from "@wirestream/runtime";
import { checks } from "./checks.mjs";

async function transferToWorker(bytes) {
  const worker = new Worker(URL.createObjectURL(new Blob(
    ["onmessage = (e) => postMessage(Array.from(new Uint8Array(e.data.buffer, e.data.byteOffset, e.data.byteLength)))"],
    { type: "text/javascript" },
  )));
  const echoed = new Promise((resolve) => { worker.onmessage = (e) => resolve(e.data); });
  worker.postMessage(bytes, [bytes.buffer]);
  const got = await echoed;
  worker.terminate();
  return got;
}

async function main() {
  const out = checks(codec, machines, runtime);
  const frame = new codec.RequestN({ streamId: 7, requestN: 3 });
  const before = codec.encode(frame);
  const expected = Array.from(before);
  // Transferring a pooled view's buffer detaches the pool's slab ...
  out.workerGot = await transferToWorker(before);
  out.detached = before.byteLength === 0;
  // ... and later encodes still work (a fresh slab), with the same bytes.
  out.afterTransfer = Array.from(codec.encode(frame));
  out.expected = expected;
  // What encodeOwned returns transfers alone.
  const owned = codec.encodeOwned(frame);
  out.ownedWorkerGot = await transferToWorker(owned);
  out.pooledStillFine = Array.from(codec.encode(frame));
  window.wirestreamResult = out;
}

main().catch((e) => { window.wirestreamError = String(e && e.stack || e); });
