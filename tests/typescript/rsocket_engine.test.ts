// The TypeScript twins of tests/rsocket/test_rsocket_engine_rules.py, _models.py and
// _negotiation.py (same test names) for the rules @wirestream/rsocket's sans-I/O engine
// implements: one test per spec rule, the passage quoted. Invalid peer sequences are raw
// frames built with the generated codec and fed to receiveData; valid ones come from a
// second engine, the bytes shuttled between them.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Cancel,
  ErrorCode,
  ErrorFrame,
  Ext,
  Keepalive,
  MetadataPush,
  Payload,
  RequestResponse,
  RequestStream,
  Resume,
  ResumeOk,
  Setup,
  decode,
  frameBytes,
  type Frame,
} from "@wirestream/generated/rsocket/v1_0";
import { ConnectionState } from "@wirestream/generated/rsocket/v1_0/machines";
import { DemandExceeded, IllegalSend, InvalidGrant, UnexpectedFrame } from "@wirestream/runtime";
import {
  MAX_N,
  NoLease,
  NoNewRequests,
  ResumeNotAllowed,
  ResumePositionLost,
  RSocketEngine,
  UnsupportedExtension,
  type EngineOptions,
  type Event,
} from "@wirestream/rsocket";

const enc = new TextEncoder();
const bytes = (text: string): Uint8Array<ArrayBuffer> => enc.encode(text);
const dec = new TextDecoder();

function frames(engine: RSocketEngine): Frame[] {
  return engine.dataToSend().map((wire) => decode(wire.subarray(3)));
}

function wire(...list: Frame[]): Uint8Array<ArrayBuffer> {
  const parts = list.map((frame) => frameBytes(frame).slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function ofType<T extends Event["type"]>(
  events: readonly Event[],
  type: T,
): Extract<Event, { type: T }>[] {
  return events.filter((event): event is Extract<Event, { type: T }> => event.type === type);
}

/** Move bytes both ways until neither side has more; the events each side saw. */
function shuttle(c: RSocketEngine, s: RSocketEngine, now = 0): [Event[], Event[]] {
  const ec: Event[] = [];
  const es: Event[] = [];
  for (let round = 0; round < 100; round++) {
    const toServer = c.dataToSend();
    const toClient = s.dataToSend();
    if (toServer.length === 0 && toClient.length === 0) {
      return [ec, es];
    }
    for (const chunk of toServer) es.push(...s.receiveData(chunk.slice(), now));
    for (const chunk of toClient) ec.push(...c.receiveData(chunk.slice(), now));
  }
  throw new Error("the engines never went quiet");
}

function pair(
  client: EngineOptions = {},
  server: EngineOptions = {},
  establish = true,
): [RSocketEngine, RSocketEngine, Event[], Event[]] {
  const c = new RSocketEngine("client", client);
  const s = new RSocketEngine("server", server);
  c.connect(0);
  const [ec, es] = shuttle(c, s);
  if (establish && c.state === ConnectionState.SETUP_SENT) {
    // A round trip confirms the SETUP (a response to a request).
    c.requestResponse(bytes("hello"));
    const [, es2] = shuttle(c, s);
    const request = ofType(es2, "RequestReceived")[0]!;
    s.sendNext(request.streamId, bytes("hi"), null, true);
    const [ec2] = shuttle(c, s);
    ec.push(...ec2);
  }
  return [c, s, ec, es];
}

function serverAfterSetup(options: EngineOptions = {}): RSocketEngine {
  const s = new RSocketEngine("server", options);
  s.receiveData(wire(new Setup({ keepaliveInterval: 1000, maxLifetime: 5000 })));
  s.dataToSend();
  return s;
}

// ====================================================================== connection setup

test("test_first_frame_not_setup_gets_invalid_setup_and_close", () => {
  for (const first of [new Keepalive({ respond: true }), new RequestResponse({ streamId: 1 })]) {
    const s = new RSocketEngine("server");
    assert.throws(() => s.receiveData(wire(first)), UnexpectedFrame);
    const [error] = frames(s) as [ErrorFrame];
    assert.equal(error.streamId, 0);
    assert.equal(error.errorCode, ErrorCode.INVALID_SETUP);
    assert.ok(s.closed);
  }
});

test("test_setup_on_nonzero_stream_gets_invalid_setup", () => {
  const s = new RSocketEngine("server");
  assert.throws(() => s.receiveData(wire(new Setup({ streamId: 1 }))), UnexpectedFrame);
  assert.equal((frames(s)[0] as ErrorFrame).errorCode, ErrorCode.INVALID_SETUP);
});

test("test_rejected_setup_sends_setup_error_then_closes", () => {
  const code = ErrorCode.UNSUPPORTED_SETUP;
  const [c, s, ec, es] = pair({}, { setupPolicy: () => [code, "no thanks"] }, false);
  assert.deepEqual(es, [
    { type: "ConnectionRejected", errorCode: code, message: bytes("no thanks"), byPeer: false },
  ]);
  assert.deepEqual(ec, [
    { type: "ConnectionRejected", errorCode: code, message: bytes("no thanks"), byPeer: true },
  ]);
  assert.ok(s.closed && c.closed);
});

test("test_setup_with_unsupported_version_is_rejected", () => {
  const s = new RSocketEngine("server");
  const events = s.receiveData(wire(new Setup({ majorVersion: 7 })));
  assert.equal(ofType(events, "ConnectionRejected")[0]!.errorCode, ErrorCode.UNSUPPORTED_SETUP);
  assert.ok(s.closed);
});

test("test_setup_with_resume_flag_rejected_if_resume_unsupported", () => {
  const s = new RSocketEngine("server");
  const events = s.receiveData(wire(new Setup({ resumeToken: new Uint8Array(16) })));
  assert.equal(ofType(events, "ConnectionRejected")[0]!.errorCode, ErrorCode.REJECTED_SETUP);
});

test("test_setup_mime_types_passed_through_uninterpreted", () => {
  const s = new RSocketEngine("server");
  const [established] = s.receiveData(
    wire(new Setup({ metadataMimeType: "x/whatever", dataMimeType: "y/z" })),
  );
  assert.equal(established?.type, "ConnectionEstablished");
  if (established?.type === "ConnectionEstablished") {
    assert.equal(established.setup.metadataMimeType, "x/whatever");
    assert.equal(established.setup.dataMimeType, "y/z");
  }
});

test("test_setup_mime_type_null_terminated_is_invalid_setup", () => {
  const s = new RSocketEngine("server");
  const events = s.receiveData(wire(new Setup({ dataMimeType: "text/plain\0" })));
  assert.equal(ofType(events, "ConnectionRejected")[0]!.errorCode, ErrorCode.INVALID_SETUP);
  assert.throws(
    () => new RSocketEngine("client", { setup: { dataMimeType: "a/b\0" } }),
    RangeError,
  );
});

test("test_client_setup_accepted_on_response_lease_or_request", () => {
  for (const trigger of ["response", "lease", "request"]) {
    const [c, s] = pair({}, trigger === "lease" ? { leasing: true } : {}, false);
    assert.equal(c.state, ConnectionState.SETUP_SENT);
    if (trigger === "response") {
      c.requestResponse(bytes("x"));
      const [, es] = shuttle(c, s);
      s.sendNext(ofType(es, "RequestReceived")[0]!.streamId, bytes("y"), null, true);
    } else if (trigger === "lease") {
      s.sendLease(1000, 1);
    } else {
      s.requestResponse(bytes("from the server"));
    }
    const [ec] = shuttle(c, s);
    assert.equal(ec[0]?.type, "ConnectionEstablished", trigger);
    assert.equal(c.state, ConnectionState.ESTABLISHED);
  }
});

test("test_client_without_lease_flag_may_request_right_after_setup", () => {
  const c = new RSocketEngine("client");
  c.connect(0);
  const id = c.requestStream(bytes("x"), null, 5);
  assert.equal(id, 1);
  const sent = frames(c);
  assert.ok(sent[0] instanceof Setup && sent[1] instanceof RequestStream);
});

test("test_no_request_or_response_before_establishment", () => {
  const c = new RSocketEngine("client");
  assert.throws(() => c.requestResponse(bytes("x")), IllegalSend);
});

test("test_server_ignores_second_setup", () => {
  const s = serverAfterSetup();
  const events = s.receiveData(wire(new Setup()));
  assert.deepEqual(events, []);
  assert.equal(s.ignoredFrames, 1);
});

test("test_client_role_options_are_refused_on_a_client", () => {
  assert.throws(() => new RSocketEngine("client", { leasing: true }), RangeError);
  assert.throws(() => new RSocketEngine("server", { setup: {} }), RangeError);
});

// ====================================================================== connection errors

test("test_connection_error_on_stream_zero_terminates_connection_and_streams", () => {
  const [c, s] = pair();
  const id = c.requestStream(bytes("x"), null, 3);
  shuttle(c, s);
  const events = c.receiveData(
    wire(
      new ErrorFrame({ streamId: 0, errorCode: ErrorCode.CONNECTION_ERROR, data: bytes("bye") }),
    ),
  );
  assert.deepEqual(
    events.map((e) => e.type),
    ["ConnectionClosed", "StreamAborted"],
  );
  assert.equal(ofType(events, "StreamAborted")[0]!.streamId, id);
  assert.ok(c.closed);
});

test("test_frames_after_close_are_ignored", () => {
  const [c] = pair();
  c.close();
  assert.deepEqual(c.receiveData(wire(new Payload({ streamId: 1, next: true }))), []);
});

test("test_eof_closes_every_open_stream", () => {
  const [c, s] = pair();
  const id = c.requestStream(bytes("x"), null, 3);
  shuttle(c, s);
  const events = c.receiveData(new Uint8Array(0));
  assert.deepEqual(
    events.map((e) => e.type),
    ["StreamAborted", "ConnectionClosed"],
  );
  assert.equal(ofType(events, "StreamAborted")[0]!.streamId, id);
});

test("test_unknown_frame_with_ignore_flag_is_dropped", () => {
  const s = serverAfterSetup();
  // type 0x30 (not defined), I flag set: header only.
  const raw = Uint8Array.of(0, 0, 6, 0, 0, 0, 0, (0x30 << 2) | 0x02, 0x00);
  assert.deepEqual(s.receiveData(raw), []);
  assert.ok(!s.closed);
});

test("test_unknown_frame_without_ignore_flag_errors_connection", () => {
  const s = serverAfterSetup();
  const raw = Uint8Array.of(0, 0, 6, 0, 0, 0, 0, 0x30 << 2, 0x00);
  assert.throws(() => s.receiveData(raw));
  assert.equal((frames(s)[0] as ErrorFrame).errorCode, ErrorCode.CONNECTION_ERROR);
  assert.ok(s.closed);
});

test("test_metadata_push_on_nonzero_stream_is_ignored", () => {
  const s = serverAfterSetup();
  assert.deepEqual(
    s.receiveData(wire(new MetadataPush({ streamId: 1, metadata: bytes("m") }))),
    [],
  );
});

test("test_cancel_on_unknown_or_zero_stream_is_ignored", () => {
  const s = serverAfterSetup();
  assert.deepEqual(s.receiveData(wire(new Cancel({ streamId: 7 }))), []);
  assert.ok(!s.closed);
});

test("test_error_on_unknown_stream_is_ignored", () => {
  const s = serverAfterSetup();
  assert.deepEqual(
    s.receiveData(wire(new ErrorFrame({ streamId: 9, errorCode: ErrorCode.APPLICATION_ERROR }))),
    [],
  );
});

test("test_payload_on_unknown_or_zero_stream_is_ignored", () => {
  const s = serverAfterSetup();
  assert.deepEqual(s.receiveData(wire(new Payload({ streamId: 11, next: true }))), []);
  assert.ok(!s.closed);
});

test("test_request_on_active_stream_id_is_ignored", () => {
  const s = serverAfterSetup();
  s.receiveData(wire(new RequestStream({ streamId: 1, initialRequestN: 1 })));
  assert.deepEqual(s.receiveData(wire(new RequestResponse({ streamId: 1 }))), []);
  assert.equal(s.streamState(1), "open");
});

// ====================================================================== streams

test("test_stream_error_codes_are_application_range", () => {
  const s = serverAfterSetup();
  s.receiveData(wire(new RequestResponse({ streamId: 1 })));
  assert.throws(() => s.sendError(1, ErrorCode.CONNECTION_ERROR, "no"), IllegalSend);
  s.sendError(1, ErrorCode.APPLICATION_ERROR, "fine");
});

test("test_request_response_response_without_complete_is_treated_as_complete", () => {
  const [c, s] = pair();
  const id = c.requestResponse(bytes("x"));
  shuttle(c, s);
  const events = c.receiveData(wire(new Payload({ streamId: id, next: true, data: bytes("y") })));
  assert.deepEqual(
    events.map((e) => e.type),
    ["PayloadReceived", "StreamCompleted"],
  );
  assert.ok(!c.openStreams.has(id));
});

test("test_peer_exceeding_demand_is_a_stream_error", () => {
  const [c, s] = pair();
  const id = c.requestStream(bytes("x"), null, 1);
  shuttle(c, s);
  c.receiveData(wire(new Payload({ streamId: id, next: true })));
  const events = c.receiveData(wire(new Payload({ streamId: id, next: true })));
  assert.equal(ofType(events, "StreamAborted")[0]!.errorCode, ErrorCode.INVALID);
  assert.ok(frames(c).some((f) => f instanceof Cancel));
});

test("test_responder_never_sends_more_payloads_than_requested", () => {
  const [c, s] = pair();
  c.requestStream(bytes("x"), null, 2);
  const [, es] = shuttle(c, s);
  const id = ofType(es, "RequestReceived")[0]!.streamId;
  s.sendNext(id, bytes("1"));
  s.sendNext(id, bytes("2"));
  assert.throws(() => s.sendNext(id, bytes("3")), DemandExceeded);
});

test("test_channel_requester_waits_for_request_n_before_payload", () => {
  const [c] = pair();
  const id = c.requestChannel(bytes("first"), null, 4);
  assert.throws(() => c.sendNext(id, bytes("second")), DemandExceeded);
});

test("test_channel_requester_complete_on_initial_frame", () => {
  const [c, s] = pair();
  c.requestChannel(bytes("only"), null, 4, true);
  const [, es] = shuttle(c, s);
  const request = ofType(es, "RequestReceived")[0]!;
  assert.equal(request.complete, true);
  assert.equal(s.streamState(request.streamId), "half_closed_remote");
});

test("test_channel_half_close_each_direction", () => {
  const [c, s] = pair();
  const id = c.requestChannel(bytes("a"), null, 4);
  shuttle(c, s);
  s.request(id, 2);
  s.sendComplete(id);
  shuttle(c, s);
  assert.equal(c.streamState(id), "half_closed_remote");
  c.sendNext(id, bytes("b"));
  c.sendComplete(id);
  const [, es] = shuttle(c, s);
  assert.deepEqual(
    es.map((e) => e.type),
    ["PayloadReceived", "StreamCompleted"],
  );
  assert.ok(!c.openStreams.has(id) && !s.openStreams.has(id));
});

test("test_client_odd_server_even_stream_ids", () => {
  const [c, s] = pair();
  assert.equal(c.requestResponse(bytes("x")) % 2, 1);
  assert.equal(s.requestResponse(bytes("x")) % 2, 0);
});

test("test_stream_id_not_reused", () => {
  const [c, s] = pair();
  const first = c.requestResponse(bytes("x"));
  c.cancel(first);
  shuttle(c, s);
  assert.notEqual(c.requestResponse(bytes("y")), first);
});

test("test_request_n_credits_accumulate", () => {
  const [c, s] = pair();
  const id = c.requestStream(bytes("x"), null, 1);
  shuttle(c, s);
  c.request(id, 2);
  c.request(id, 3);
  shuttle(c, s);
  assert.equal(s.outboundCredit(id), 6);
});

test("test_request_n_must_be_positive_and_has_no_unbounded_value", () => {
  const [c, s] = pair();
  const id = c.requestStream(bytes("x"), null, 1);
  shuttle(c, s);
  assert.throws(() => c.request(id, 0), InvalidGrant);
  assert.throws(() => c.request(id, MAX_N + 1), InvalidGrant);
  c.request(id, MAX_N);
  c.request(id, MAX_N); // saturates: credits cap at 2^31-1
  shuttle(c, s);
  assert.equal(s.outboundCredit(id), MAX_N);
});

test("test_never_more_in_flight_than_granted", () => {
  const [c, s] = pair();
  const id = c.requestStream(bytes("x"), null, 3);
  shuttle(c, s);
  let sent = 0;
  while (s.outboundCredit(id) > 0) {
    s.sendNext(id, bytes(String(sent)));
    sent += 1;
  }
  assert.equal(sent, 3);
});

test("test_fire_and_forget_terminates_on_send_and_receive", () => {
  const [c, s] = pair();
  const id = c.fireAndForget(bytes("x"));
  assert.ok(!c.openStreams.has(id));
  const [, es] = shuttle(c, s);
  assert.equal(ofType(es, "RequestReceived")[0]!.model, "fire_and_forget");
  assert.ok(!s.openStreams.has(id));
});

test("test_metadata_push_round_trip", () => {
  const [c, s] = pair();
  c.metadataPush(bytes("m"));
  const [, es] = shuttle(c, s);
  assert.deepEqual(es, [{ type: "MetadataPushReceived", metadata: bytes("m") }]);
});

test("test_metadata_push_requires_establishment", () => {
  const c = new RSocketEngine("client");
  assert.throws(() => c.metadataPush(bytes("m")), IllegalSend);
});

test("test_stream_zero_frames_sent_before_queued_stream_frames", () => {
  const [c] = pair();
  c.requestResponse(bytes("x"));
  c.metadataPush(bytes("m"));
  const sent = frames(c);
  assert.ok(sent[0] instanceof MetadataPush && sent[1] instanceof RequestResponse);
});

// ====================================================================== lease

test("test_server_without_leasing_refuses_lease_setup_with_unsupported_setup", () => {
  const [, , ec] = pair({ setup: { lease: true } }, {}, false);
  assert.equal(ofType(ec, "ConnectionRejected")[0]!.errorCode, ErrorCode.UNSUPPORTED_SETUP);
});

test("test_client_with_lease_flag_cannot_request_before_lease", () => {
  const [c] = pair({ setup: { lease: true } }, { leasing: true }, false);
  assert.equal(c.state, ConnectionState.AWAITING_LEASE);
  assert.throws(() => c.requestResponse(bytes("x")), IllegalSend);
});

test("test_requester_never_exceeds_lease_count_within_ttl", () => {
  const [c, s] = pair({ setup: { lease: true } }, { leasing: true }, false);
  s.sendLease(10_000, 2, null, 0);
  shuttle(c, s);
  c.requestResponse(bytes("1"), null, 1);
  c.requestResponse(bytes("2"), null, 2);
  assert.throws(() => c.requestResponse(bytes("3"), null, 3), NoLease);
});

test("test_expired_lease_blocks_requests", () => {
  const [c, s] = pair({ setup: { lease: true } }, { leasing: true }, false);
  s.sendLease(100, 5, null, 0);
  shuttle(c, s, 0);
  assert.throws(() => c.requestResponse(bytes("late"), null, 100), NoLease);
});

test("test_new_lease_replaces_old_budget", () => {
  const [c, s] = pair({ setup: { lease: true } }, { leasing: true }, false);
  s.sendLease(10_000, 1, null, 0);
  shuttle(c, s);
  c.requestResponse(bytes("1"), null, 1);
  s.sendLease(10_000, 3, null, 2);
  shuttle(c, s, 2);
  for (let i = 0; i < 3; i++) c.requestResponse(bytes("again"), null, 3);
  assert.throws(() => c.requestResponse(bytes("over"), null, 3), NoLease);
});

test("test_request_beyond_lease_gets_rejected", () => {
  const s = new RSocketEngine("server", { leasing: true });
  s.receiveData(wire(new Setup({ lease: true })), 0);
  s.sendLease(10_000, 1, null, 0);
  s.dataToSend();
  s.receiveData(
    wire(new RequestResponse({ streamId: 1 }), new RequestResponse({ streamId: 3 })),
    1,
  );
  const [error] = frames(s) as [ErrorFrame];
  assert.equal(error.streamId, 3);
  assert.equal(error.errorCode, ErrorCode.REJECTED);
});

// ====================================================================== keepalive

test("test_client_emits_keepalive_with_respond_flag_each_interval", () => {
  const c = new RSocketEngine("client", {
    setup: { keepaliveInterval: 1000, maxLifetime: 10_000 },
  });
  c.connect(0);
  c.dataToSend();
  assert.equal(c.getTimer(), 1000);
  c.handleTimer(1000);
  const [keepalive] = frames(c) as [Keepalive];
  assert.ok(keepalive instanceof Keepalive && keepalive.respond);
  assert.equal(keepalive.streamId, 0);
  assert.equal(c.getTimer(), 2000);
});

test("test_keepalive_respond_flag_is_answered_with_echo_without_flag", () => {
  const s = serverAfterSetup();
  s.receiveData(wire(new Keepalive({ respond: true, data: bytes("ping") })));
  const [echo] = frames(s) as [Keepalive];
  assert.ok(echo instanceof Keepalive && !echo.respond);
  assert.deepEqual(echo.data, bytes("ping"));
});

test("test_keepalive_without_respond_flag_is_not_answered", () => {
  const s = serverAfterSetup();
  s.receiveData(wire(new Keepalive({ respond: false })));
  assert.deepEqual(frames(s), []);
});

test("test_keepalive_timeout_is_reported_not_auto_closed", () => {
  const c = new RSocketEngine("client", { setup: { keepaliveInterval: 1000, maxLifetime: 3000 } });
  c.connect(0);
  assert.deepEqual(
    c.handleTimer(2999).filter((e) => e.type === "ConnectionDead"),
    [],
  );
  const dead = ofType(c.handleTimer(3000), "ConnectionDead");
  assert.equal(dead.length, 1);
  assert.equal(dead[0]!.silentFor, 3000);
  assert.ok(!c.closed);
  assert.deepEqual(ofType(c.handleTimer(4000), "ConnectionDead"), []); // reported once
});

// ====================================================================== fragmentation

test("test_fragmented_request_continuation_frame_type", () => {
  const c = new RSocketEngine("client", { limits: { mtu: 64 } });
  c.connect(0);
  c.dataToSend();
  c.requestResponse(new Uint8Array(200), bytes("m".repeat(100)));
  const sent = frames(c);
  assert.ok(sent[0] instanceof RequestResponse && sent[0].follows);
  assert.ok(sent.slice(1).every((f) => f instanceof Payload));
  assert.ok(!(sent.at(-1) as Payload).follows);
  assert.ok(sent.every((f) => frameBytes(f).length - 3 <= 64));
});

test("test_fragment_metadata_fully_precedes_data", () => {
  const s = serverAfterSetup();
  const events = s.receiveData(
    wire(
      new RequestResponse({ streamId: 1, follows: true, data: bytes("d") }),
      new Payload({ streamId: 1, next: true, metadata: bytes("late") }),
    ),
  );
  assert.equal(ofType(events, "RequestReceived").length, 0);
  assert.equal((frames(s)[0] as ErrorFrame).errorCode, ErrorCode.INVALID);
});

test("test_reassembly_limit_is_a_stream_error", () => {
  const [c, s] = pair({ limits: { mtu: 64 } }, { limits: { maxReassemblySize: 100 } });
  c.requestResponse(new Uint8Array(500).fill(0x7a));
  const events: Event[] = [];
  for (const chunk of c.dataToSend()) events.push(...s.receiveData(chunk));
  assert.equal(ofType(events, "RequestReceived").length, 0);
  const [error] = frames(s) as [ErrorFrame];
  assert.equal(error.errorCode, ErrorCode.INVALID);
});

test("test_reassembly_accepts_unbounded_fragment_count", () => {
  const [c, s] = pair({ limits: { mtu: 64 } });
  c.requestChannel(new Uint8Array(5000).fill(0x71));
  const sent = c.dataToSend();
  assert.ok(sent.length > 80);
  const events = sent.flatMap((chunk) => s.receiveData(chunk));
  const [request] = ofType(events, "RequestReceived");
  assert.deepEqual(request!.data, new Uint8Array(5000).fill(0x71));
});

test("test_fragmented_messages_reassemble_exactly", () => {
  const [c, s] = pair({ limits: { mtu: 64 } }, { limits: { mtu: 64 } });
  const data = new Uint8Array(5000).map((_, i) => i % 253);
  const metadata = new Uint8Array(700).map((_, i) => i % 7);
  c.requestChannel(data, metadata, 2);
  const [, es] = shuttle(c, s);
  const request = ofType(es, "RequestReceived")[0]!;
  assert.deepEqual(request.data, data);
  assert.deepEqual(request.metadata, metadata);
  s.sendNext(request.streamId, data, metadata);
  const [ec] = shuttle(c, s);
  const item = ofType(ec, "PayloadReceived")[0]!;
  assert.deepEqual(item.data, data);
  assert.deepEqual(item.metadata, metadata);
});

test("test_fragments_consume_one_credit_and_one_lease", () => {
  const [c, s] = pair({ limits: { mtu: 64 } }, { limits: { mtu: 64 } });
  const id = c.requestStream(bytes("x"), null, 1);
  shuttle(c, s);
  s.sendNext(id, new Uint8Array(1000));
  const [ec] = shuttle(c, s);
  assert.equal(ofType(ec, "PayloadReceived").length, 1);
  assert.equal(ofType(ec, "StreamAborted").length, 0);
});

// ====================================================================== closing

test("test_connection_close_lets_outstanding_streams_finish_then_closes", () => {
  const [c, s] = pair();
  const sid = c.requestStream(bytes("ticks"), null, 10);
  shuttle(c, s);
  const closing = c.closeGracefully(bytes("bye"));
  assert.deepEqual(closing, [
    { type: "ConnectionClosing", errorCode: 0x102, message: bytes("bye"), byPeer: false },
  ]);
  assert.ok(c.closing && !c.closed);
  const [, es] = shuttle(c, s);
  assert.deepEqual(es, [
    { type: "ConnectionClosing", errorCode: 0x102, message: bytes("bye"), byPeer: true },
  ]);
  assert.ok(s.closing && !s.closed);
  s.sendNext(sid, bytes("1"));
  s.sendNext(sid, bytes("2"), null, true);
  const [ec] = shuttle(c, s);
  assert.deepEqual(
    ofType(ec, "PayloadReceived").map((e) => dec.decode(e.data)),
    ["1", "2"],
  );
  assert.deepEqual(ec.at(-1), {
    type: "ConnectionClosed",
    errorCode: 0x102,
    message: bytes("bye"),
    byPeer: false,
    graceful: true,
    resumable: false,
  });
  assert.ok(c.closed);
  // The server ended its last stream with a command: handle_timer reports the end, due at once.
  const due = s.getTimer();
  assert.notEqual(due, null);
  const [closed] = s.handleTimer(due ?? 0);
  assert.deepEqual(closed, {
    type: "ConnectionClosed",
    errorCode: 0x102,
    message: bytes("bye"),
    byPeer: true,
    graceful: true,
    resumable: false,
  });
  assert.ok(s.closed && s.getTimer() === null);
});

test("test_connection_close_refuses_new_requests_both_ways", () => {
  const [c, s] = pair();
  c.requestStream(bytes("keep open"), null, 1);
  shuttle(c, s);
  c.closeGracefully();
  shuttle(c, s);
  assert.throws(() => c.requestResponse(bytes("x")), NoNewRequests);
  assert.throws(() => s.requestResponse(bytes("x")), NoNewRequests);
});

test("test_connection_close_without_open_streams_closes_at_once", () => {
  const [c] = pair();
  const events = c.closeGracefully();
  assert.deepEqual(
    events.map((e) => e.type),
    ["ConnectionClosing", "ConnectionClosed"],
  );
  assert.ok(c.closed);
});

// ====================================================================== extensions

test("test_ext_not_understood_with_ignore_flag_is_dropped", () => {
  const s = serverAfterSetup();
  assert.deepEqual(s.receiveData(wire(new Ext({ extendedType: 42, ignore: true }))), []);
  assert.ok(!s.closed);
});

test("test_ext_not_understood_without_ignore_flag_is_a_connection_error", () => {
  const s = serverAfterSetup();
  assert.throws(
    () => s.receiveData(wire(new Ext({ extendedType: 42, ignore: false }))),
    UnsupportedExtension,
  );
  assert.equal((frames(s)[0] as ErrorFrame).errorCode, ErrorCode.CONNECTION_ERROR);
  assert.ok(s.closed);
});

// ====================================================================== models

test("test_request_response_round_trip", () => {
  const [c, s] = pair();
  const id = c.requestResponse(bytes("q"), bytes("m"));
  const [, es] = shuttle(c, s);
  const request = ofType(es, "RequestReceived")[0]!;
  assert.deepEqual(
    [request.model, dec.decode(request.data), dec.decode(request.metadata!)],
    ["request_response", "q", "m"],
  );
  s.sendNext(id, bytes("a"), null, true);
  const [ec] = shuttle(c, s);
  assert.deepEqual(
    ec.map((e) => e.type),
    ["PayloadReceived", "StreamCompleted"],
  );
  assert.equal(c.openStreams.size + s.openStreams.size, 0);
});

test("test_request_response_answer_must_complete", () => {
  const [c, s] = pair();
  const id = c.requestResponse(bytes("q"));
  shuttle(c, s);
  assert.throws(() => s.sendNext(id, bytes("a"), null, false), IllegalSend);
});

test("test_request_stream_cancel_and_error", () => {
  const [c, s] = pair();
  const a = c.requestStream(bytes("a"), null, 5);
  const b = c.requestStream(bytes("b"), null, 5);
  shuttle(c, s);
  c.cancel(a);
  const [, es] = shuttle(c, s);
  assert.deepEqual(es, [{ type: "StreamCanceled", streamId: a }]);
  s.sendError(b, ErrorCode.APPLICATION_ERROR, "boom");
  const [ec] = shuttle(c, s);
  assert.deepEqual(ec, [
    {
      type: "ErrorReceived",
      streamId: b,
      errorCode: ErrorCode.APPLICATION_ERROR,
      data: bytes("boom"),
    },
  ]);
  assert.equal(c.openStreams.size + s.openStreams.size, 0);
});

test("test_server_can_be_requester", () => {
  const [c, s] = pair();
  const id = s.requestStream(bytes("from server"), null, 2);
  const [ec] = shuttle(c, s);
  assert.equal(ofType(ec, "RequestReceived")[0]!.streamId, id);
  c.sendNext(id, bytes("1"));
  c.sendNext(id, bytes("2"), null, true);
  const [, es] = shuttle(c, s);
  assert.equal(ofType(es, "PayloadReceived").length, 2);
});

// ====================================================================== resumption (client)

test("test_resume_disabled_by_default", () => {
  const [c] = pair({ setup: { keepaliveInterval: 100 } });
  assert.throws(() => c.session(), ResumeNotAllowed);
  c.requestResponse(bytes("x"));
  c.handleTimer(100);
  const keepalives = frames(c).filter((f): f is Keepalive => f instanceof Keepalive);
  assert.ok(keepalives.length > 0 && keepalives[0]!.lastReceivedPosition === 0n);
});

test("test_implied_position_is_byte_length_of_tracked_frames", () => {
  // A server that does not support resumption rejects such a SETUP: the client side alone.
  const c = new RSocketEngine("client", { setup: { resumeToken: new Uint8Array(16) } });
  c.connect(0);
  c.dataToSend();
  const start = c.session().log.sentPosition;
  const sid = c.requestStream(bytes("abc"), bytes("m"), 2);
  c.metadataPush(bytes("not counted"));
  c.sendKeepalive(bytes("not counted"));
  c.request(sid, 1);
  const counted = c.dataToSend().filter((wire) => decode(wire.subarray(3)).streamId !== 0);
  assert.equal(
    c.session().log.sentPosition - start,
    counted.reduce((n, wire) => n + wire.length - 3, 0),
  );
});

test("test_server_without_resume_answers_error", () => {
  const c = new RSocketEngine("client", { setup: { resumeToken: new Uint8Array(16) } });
  c.connect(0);
  c.dataToSend();
  c.receiveData(new Uint8Array(0));
  const c2 = RSocketEngine.resume(c.session());
  const s2 = new RSocketEngine("server");
  shuttle(c2, s2);
  assert.ok(c2.closed && s2.closed);
});

test("test_rejected_resume_forbids_further_resume", () => {
  const c = new RSocketEngine("client", { setup: { resumeToken: new Uint8Array(16) } });
  c.connect(0);
  c.dataToSend();
  c.receiveData(new Uint8Array(0));
  const c2 = RSocketEngine.resume(c.session());
  c2.dataToSend();
  c2.receiveData(
    wire(
      new ErrorFrame({ streamId: 0, errorCode: ErrorCode.REJECTED_RESUME, data: bytes("never") }),
    ),
  );
  assert.throws(() => c2.session(), ResumeNotAllowed);
});

test("test_resume_ok_with_unknown_position_ends_connection", () => {
  const c = new RSocketEngine("client", { setup: { resumeToken: new Uint8Array(16) } });
  c.connect(0);
  c.dataToSend();
  c.receiveData(new Uint8Array(0));
  const c2 = RSocketEngine.resume(c.session());
  c2.dataToSend();
  assert.throws(
    () => c2.receiveData(wire(new ResumeOk({ lastReceivedClientPosition: 10n ** 9n }))),
    ResumePositionLost,
  );
  const [error] = frames(c2) as [ErrorFrame];
  assert.equal(error.errorCode, ErrorCode.CONNECTION_ERROR);
  assert.throws(() => c2.session(), ResumeNotAllowed);
});

test("test_client_sends_nothing_but_resume_until_resume_ok", () => {
  const c = new RSocketEngine("client", { setup: { resumeToken: new Uint8Array(16) } });
  c.connect(0);
  c.dataToSend();
  c.receiveData(new Uint8Array(0));
  const c2 = RSocketEngine.resume(c.session());
  const [resume] = frames(c2);
  assert.ok(resume instanceof Resume);
  assert.throws(() => c2.requestResponse(bytes("x")), IllegalSend);
  assert.throws(() => c2.metadataPush(bytes("m")), IllegalSend);
});

// ====================================================================== limits

test("test_a_request_beyond_max_streams_gets_ERROR_REJECTED_and_the_connection_lives_on", () => {
  const [c, s] = pair({}, { limits: { maxStreams: 2 } });
  const ids = [1, 2, 3].map((i) => c.requestStream(bytes(String(i)), null, 1));
  const [ec, es] = shuttle(c, s);
  assert.equal(ofType(es, "RequestReceived").length, 2);
  const [rejected] = ofType(ec, "ErrorReceived");
  assert.deepEqual([rejected!.streamId, rejected!.errorCode], [ids[2], ErrorCode.REJECTED]);
  assert.ok(!c.closed && !s.closed);
  s.sendNext(ids[0]!, bytes("done"), null, true); // one stream ends: room for another
  shuttle(c, s);
  c.requestResponse(bytes("still served"));
  const [, es2] = shuttle(c, s);
  assert.equal(ofType(es2, "RequestReceived").length, 1);
});

test("test_ext_of_a_declared_type_reaches_the_application", () => {
  const [c, s] = pair({}, { extensions: [7] });
  c.sendExt(7, bytes("hello"), bytes("meta"));
  c.sendExt(7, bytes("on a stream"), null, false, 1);
  const [, es] = shuttle(c, s);
  assert.deepEqual(es, [
    {
      type: "ExtReceived",
      streamId: 0,
      extendedType: 7,
      data: bytes("hello"),
      metadata: bytes("meta"),
      ignore: true,
    },
    {
      type: "ExtReceived",
      streamId: 1,
      extendedType: 7,
      data: bytes("on a stream"),
      metadata: null,
      ignore: false,
    },
  ]);
  assert.ok(!s.closed);
});
