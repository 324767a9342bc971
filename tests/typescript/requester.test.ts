// The Node requester (requester.ts: generated codec + machines + node:net) against the
// Python server, `wirestream rsocket serve` (wirestream/apps/demo_responder.py's
// EchoResponder: request-response echoes, a request-stream whose data is N answers
// "0" .. "N-1" as fast as REQUEST_N allows, anything else ends it with
// ERROR[APPLICATION_ERROR]).
//
// The server runs as a subprocess of the repository's Python: WIRESTREAM_PYTHON, or
// .venv/bin/python at the repository root (what `make test` builds). It listens on a
// port the OS picks (--port 0) and prints it; it is always killed. Every wait is bounded.

import assert from "node:assert/strict";
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { IllegalSend } from "@wirestream/runtime";
import { ErrorCode } from "@wirestream/generated/rsocket/v1_0";
import { ConnectionState } from "@wirestream/generated/rsocket/v1_0/machines";

import { Requester, RSocketError, within } from "./requester.js";

// This file runs as tests/typescript/dist/requester.test.js.
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const PYTHON = process.env["WIRESTREAM_PYTHON"] ?? join(REPO, ".venv", "bin", "python");
const SERVER_START_MS = 30_000; // a cold Python import on a busy machine
const STEP_MS = 5_000;

const utf8 = (s: string): Uint8Array<ArrayBuffer> => new TextEncoder().encode(s);
const text = (b: Uint8Array<ArrayBuffer> | null): string | null =>
  b === null ? null : new TextDecoder().decode(b);

type Server = ChildProcessByStdio<null, Readable, Readable>;

/** `wirestream rsocket serve --port 0`, and the port it printed. */
async function startServer(): Promise<[Server, number]> {
  assert.ok(
    existsSync(PYTHON),
    `no Python at ${PYTHON}: run \`make venv\` or set WIRESTREAM_PYTHON`,
  );
  const server = spawn(
    PYTHON,
    ["-m", "wirestream", "rsocket", "serve", "--host", "127.0.0.1", "--port", "0"],
    {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stderr = "";
  server.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const listening = new Promise<number>((resolvePort, reject) => {
    let stdout = "";
    server.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      const match = /listening on tcp:\/\/[^\s]*:(\d+)/.exec(stdout);
      if (match?.[1] !== undefined) {
        resolvePort(Number(match[1]));
      }
    });
    server.once("error", reject);
    server.once("exit", (code) =>
      reject(new Error(`the server exited (${code}) before listening: ${stderr}`)),
    );
  });
  try {
    return [server, await within(listening, SERVER_START_MS, "the server to listen")];
  } catch (error) {
    await stopServer(server);
    throw error;
  }
}

/** SIGTERM (the server closes its connections and exits 0), SIGKILL if it lingers. */
async function stopServer(server: Server): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) {
    return;
  }
  const exited = new Promise<void>((resolveExit) => server.once("exit", () => resolveExit()));
  server.kill("SIGTERM");
  try {
    await within(exited, STEP_MS, "the server to exit");
  } catch {
    server.kill("SIGKILL");
    await within(exited, STEP_MS, "the killed server to exit");
  }
}

describe("Node requester (generated TypeScript) against `wirestream rsocket serve`", () => {
  let server: Server | undefined;
  let port = 0;
  const requesters: Requester[] = [];

  // Should this process die before after() runs, the server dies with it.
  const killServer = (): void => void server?.kill("SIGKILL");

  before(async () => {
    [server, port] = await startServer();
    process.once("exit", killServer);
  });

  after(async () => {
    for (const requester of requesters) {
      requester.close();
    }
    if (server !== undefined) {
      await stopServer(server);
    }
    process.off("exit", killServer);
  });

  async function connected(): Promise<Requester> {
    const requester = await Requester.connect(port, "127.0.0.1", STEP_MS);
    requesters.push(requester);
    return requester;
  }

  test("the machines refuse a request before SETUP (IllegalSend); after it, it flows", async () => {
    const requester = await connected();
    assert.throws(() => requester.requestResponse(utf8("too early")), IllegalSend);
    requester.setup();
    assert.equal(requester.connection.state, ConnectionState.SETUP_SENT);
    const answer = await within(requester.requestResponse(utf8("ping")), STEP_MS, "the response");
    assert.equal(text(answer.data), "ping");
    assert.ok(answer.complete);
    // The response confirmed the SETUP ("a client assumes a SETUP is accepted if it
    // receives a response to a request").
    assert.equal(requester.connection.state, ConnectionState.ESTABLISHED);
  });

  test("request-response echoes data and metadata", async () => {
    const requester = await connected();
    requester.setup();
    const answers = await within(
      Promise.all([
        requester.requestResponse(utf8("one"), utf8("meta-1")),
        requester.requestResponse(utf8("two")),
        requester.requestResponse(new Uint8Array(0)),
      ]),
      STEP_MS,
      "three responses",
    );
    assert.deepEqual(
      answers.map((a) => [text(a.data), text(a.metadata)]),
      [
        ["one", "meta-1"],
        ["two", null],
        ["", null],
      ],
    );
  });

  test("request-stream: items flow only as REQUEST_N allows, and complete", async () => {
    const requester = await connected();
    requester.setup();
    const stream = requester.requestStream(utf8("5"), 2);
    assert.equal(text(await stream.next(STEP_MS)), "0");
    assert.equal(text(await stream.next(STEP_MS)), "1");
    // Two credits, two items: the third waits for our REQUEST_N.
    await assert.rejects(stream.next(300), /timed out/);
    // Three items remain; one more credit than that lets the responder find out the
    // stream is over (it pulls its next item only when it may send one, so with the
    // credit exactly spent it would hold the completion until more came).
    stream.request(4);
    const rest: (string | null)[] = [];
    for (let item = await stream.next(STEP_MS); item !== null; item = await stream.next(STEP_MS)) {
      rest.push(text(item));
    }
    assert.deepEqual(rest, ["2", "3", "4"]);
    assert.ok(stream.machine.terminated);
  });

  test("request-stream: CANCEL ends it early; the connection serves on", async () => {
    const requester = await connected();
    requester.setup();
    const stream = requester.requestStream(utf8("1000"), 3);
    const got: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      got.push(text(await stream.next(STEP_MS)));
    }
    assert.deepEqual(got, ["0", "1", "2"]);
    stream.cancel();
    assert.ok(stream.machine.terminated);
    // Nothing more may be sent on it: its machine is closed.
    assert.throws(() => stream.request(10), IllegalSend);
    assert.equal(stream.buffered, 0);
    const answer = await within(
      requester.requestResponse(utf8("after cancel")),
      STEP_MS,
      "the response",
    );
    assert.equal(text(answer.data), "after cancel");
    // The server sent nothing past its 3 credits: a frame for the cancelled stream would
    // have arrived before this response and been counted as ignored.
    assert.equal(requester.ignoredFrames, 0);
  });

  test("request-stream: the responder's ERROR ends the stream", async () => {
    const requester = await connected();
    requester.setup();
    const stream = requester.requestStream(utf8("not a number"), 1);
    await assert.rejects(stream.next(STEP_MS), (error: unknown) => {
      assert.ok(error instanceof RSocketError);
      assert.equal(error.errorCode, ErrorCode.APPLICATION_ERROR);
      assert.match(error.text, /decimal count/);
      return true;
    });
    assert.ok(stream.machine.terminated);
  });
});
