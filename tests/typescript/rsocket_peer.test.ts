// RSocketPeer (runtime/typescript/rsocket/src/peer.ts): how a responder's work reaches the
// transport and its handlers, where the bench's figures depend on it (issue 29).

import assert from "node:assert/strict";
import { test } from "node:test";

import { RequestStream, Setup, frameBytes } from "@wirestream/generated/rsocket/v1_0";
import {
  RSocketEngine,
  RSocketPeer,
  type Bytes,
  type Transport,
  type TransportSink,
} from "@wirestream/rsocket";
import { connect, serve } from "@wirestream/rsocket/node";

/** A transport that records each send() (one call is one socket write on TCP). */
class RecordingTransport implements Transport {
  sink: TransportSink | null = null;
  readonly sends: (readonly Bytes[])[] = [];
  start(sink: TransportSink): void {
    this.sink = sink;
  }
  send(frames: readonly Bytes[]): void {
    this.sends.push(frames);
  }
  close(): void {}
}

const PAYLOAD = 0x0a;

function frameType(frame: Bytes): number {
  return frame[7]! >> 2; // after the 3-byte length and the 4-byte stream id
}

function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error(`not true within ${ms} ms`));
      else setTimeout(poll, 5);
    };
    poll();
  });
}

test("test_generator_items_granted_at_once_leave_in_one_write", async () => {
  // A synchronous source is not awaited per item: the 64 items REQUEST_STREAM grants
  // are one transport write, not 64 (a write per item was a syscall per item).
  const transport = new RecordingTransport();
  const item = new Uint8Array(100).fill(0x64);
  const peer = new RSocketPeer(new RSocketEngine("server"), transport, {
    requestStream: function* () {
      for (let i = 0; i < 1000; i++) yield { data: item, metadata: null };
    },
  });
  const setup = frameBytes(new Setup({ keepaliveInterval: 20_000, maxLifetime: 90_000 }));
  const request = frameBytes(
    new RequestStream({ streamId: 1, initialRequestN: 64, data: new Uint8Array(0) }),
  );
  const chunk = new Uint8Array(setup.length + request.length);
  chunk.set(setup, 0);
  chunk.set(request, setup.length);
  transport.sink!.data(chunk);
  await until(() => transport.sends.flat().filter((f) => frameType(f) === PAYLOAD).length >= 64);
  await new Promise((resolve) => setImmediate(resolve));
  const writes = transport.sends.filter((frames) => frames.some((f) => frameType(f) === PAYLOAD));
  assert.equal(writes.length, 1);
  assert.equal(writes[0]!.length, 64);
  await peer.close(0);
});

test("test_request_response_handler_with_signal_sees_the_cancel", async () => {
  // The responder makes the AbortSignal only for a handler that takes it; that one must
  // still abort when the requester cancels.
  let aborted = false;
  const server = await serve("tcp://127.0.0.1:0", {
    requestResponse: (request, signal) =>
      new Promise((resolve) => {
        signal.addEventListener("abort", () => {
          aborted = true;
          resolve(request);
        });
      }),
  });
  const rs = await connect(server.url);
  try {
    const controller = new AbortController();
    const answer = rs.requestResponse(
      { data: new Uint8Array([1]), metadata: null },
      { signal: controller.signal },
    );
    await until(() => server.peers.size === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    await assert.rejects(answer);
    await until(() => aborted);
  } finally {
    await rs.close(0);
    await server.close();
  }
});

test("test_request_response_handler_without_signal_is_answered", async () => {
  const server = await serve("tcp://127.0.0.1:0", { requestResponse: (request) => request });
  const rs = await connect(server.url);
  try {
    const answers = await Promise.all(
      [1, 2, 3].map((n) => rs.requestResponse({ data: new Uint8Array([n]), metadata: null })),
    );
    assert.deepEqual(
      answers.map((a) => a.data[0]),
      [1, 2, 3],
    );
  } finally {
    await rs.close(0);
    await server.close();
  }
});

test("test_batches_hand_out_every_item_in_order_and_demand_follows_consumption", async () => {
  // Inbound.batches(): arrays of what arrived, each counted as consumed when handed out;
  // a consumer that stops asking leaves at most limitRate items granted and buffered.
  const server = await serve("tcp://127.0.0.1:0", {
    requestStream: function* () {
      for (let i = 0; i < 1000; i++) {
        yield { data: new Uint8Array([i >> 8, i & 0xff]), metadata: null };
      }
    },
  });
  const rs = await connect(server.url);
  try {
    const inbound = rs.requestStream({ data: new Uint8Array(0), metadata: null }, { limitRate: 16 });
    const batches = inbound.batches();
    const first = await batches.next();
    assert.equal(first.done, false);
    const seen: number[] = [];
    for (const item of first.value!) seen.push((item.data[0]! << 8) | item.data[1]!);
    // Not asking for more: what the peer may send is what the first array released.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(inbound.buffered <= 16, `${inbound.buffered} buffered, limitRate 16`);
    for await (const items of { [Symbol.asyncIterator]: () => batches }) {
      assert.ok(items.length >= 1 && items.length <= 16, `an array of ${items.length}`);
      for (const item of items) seen.push((item.data[0]! << 8) | item.data[1]!);
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 1000 }, (_, i) => i),
    );
  } finally {
    await rs.close(0);
    await server.close();
  }
});

test("test_batches_break_cancels_the_stream", async () => {
  let aborted = false;
  const server = await serve("tcp://127.0.0.1:0", {
    requestStream: function* (_request, signal) {
      signal.addEventListener("abort", () => {
        aborted = true;
      });
      for (;;) yield { data: new Uint8Array([1]), metadata: null };
    },
  });
  const rs = await connect(server.url);
  try {
    const inbound = rs.requestStream({ data: new Uint8Array(0), metadata: null }, { limitRate: 8 });
    for await (const items of inbound.batches()) {
      assert.ok(items.length >= 1);
      break;
    }
    assert.equal(inbound.finished, true);
    await until(() => aborted);
  } finally {
    await rs.close(0);
    await server.close();
  }
});
