// A browser page's RSocket requester over the browser's own WebSocket, on the generated
// codec and machines only (bundled by esbuild for test_browser_rsocket.py): SETUP, a
// request-response, and a request-stream driven by REQUEST_N against
// `wirestream rsocket serve --transport ws` (one frame per binary message).
//
// Small glue on purpose: @wirestream/rsocket's browser transport will replace it.
import {
  Payload,
  RequestN,
  RequestResponse,
  RequestStream,
  Setup,
  decode,
  encode,
} from "@wirestream/generated/rsocket/v1_0";
import {
  ConnectionMachine,
  RequestResponseMachine,
  RequestStreamMachine,
} from "@wirestream/generated/rsocket/v1_0/machines";

const text = new TextEncoder();
const untext = new TextDecoder();
const port = new URLSearchParams(location.search).get("port");

function open(url) {
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  const frames = [];
  let wake = null;
  socket.onmessage = (event) => {
    frames.push(decode(new Uint8Array(event.data)));
    if (wake !== null) wake();
  };
  const opened = new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error(`cannot open ${url}`));
  });
  /** The next frame, or null when none arrives within `ms`. */
  async function next(ms) {
    if (frames.length === 0) {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => { clearTimeout(timer); resolve(); };
      });
      wake = null;
    }
    return frames.shift() ?? null;
  }
  return { socket, opened, next };
}

async function main() {
  const { socket, opened, next } = open(`ws://127.0.0.1:${port}`);
  await opened;
  const connection = new ConnectionMachine("client");
  // Connection frames and requests go through the connection's machine, a stream's
  // frames through the stream's (as tests/typescript/requester.ts does).
  const send = (frame, stream) => {
    if (stream === undefined || !(frame instanceof RequestN)) connection.send(frame);
    if (stream !== undefined) stream.send(frame);
    socket.send(encode(frame));
  };
  const receive = (frame, stream) => {
    if (frame.streamId === 0) connection.receive(frame);
    else stream.receive(frame);
  };
  send(new Setup({
    keepaliveInterval: 60_000,
    maxLifetime: 180_000,
    metadataMimeType: "application/octet-stream",
    dataMimeType: "application/octet-stream",
  }));
  const out = {};

  // request-response: the responder echoes the data in one PAYLOAD (NEXT | COMPLETE).
  const rr = new RequestResponseMachine("requester");
  send(new RequestResponse({ streamId: 1, data: text.encode("hello from chromium") }), rr);
  const answer = await next(10_000);
  receive(answer, rr);
  out.response = {
    isPayload: answer instanceof Payload,
    streamId: answer.streamId,
    data: untext.decode(answer.data),
    complete: answer.complete,
    state: rr.state,
  };

  // request-stream of 10 with 3 credits first: exactly 3 arrive and then nothing until
  // REQUEST_N grants more (backpressure), then the rest and COMPLETE.
  const rs = new RequestStreamMachine("requester");
  send(new RequestStream({ streamId: 3, initialRequestN: 3, data: text.encode("10") }), rs);
  const items = [];
  const batches = [];
  let complete = false;
  let credit = 3;
  for (const grant of [4, 3, 1]) {
    let got = 0;
    while (got < credit && !complete) {
      const frame = await next(10_000);
      if (frame === null) throw new Error(`stalled after ${items.length} items`);
      receive(frame, rs);
      if (frame.next) { items.push(untext.decode(frame.data)); got++; }
      if (frame.complete) complete = true;
    }
    batches.push(got);
    if (complete) break;
    // Nothing more may come before the next REQUEST_N.
    const early = await next(300);
    if (early !== null) throw new Error(`a frame beyond the credit: ${early.constructor.NAME}`);
    send(new RequestN({ streamId: 3, requestN: grant }), rs);
    credit = grant;
  }
  if (!complete) {
    const last = await next(10_000); // COMPLETE may follow the last item on its own
    receive(last, rs);
    complete = last.complete;
  }
  out.stream = { items, batches, complete, state: rs.state };
  socket.close();
  window.wirestreamResult = out;
}

main().catch((e) => { window.wirestreamError = String((e && e.stack) || e); });
