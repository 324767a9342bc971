// The TypeScript twins of tests/rsocket/test_rsocket_metadata.py (same test names) for the
// metadata extensions @wirestream/rsocket implements: authentication (Security/*.md) and
// per-stream data MIME types (PerStreamDataMimeTypesDefinition.md), beside composite
// metadata and routing. Byte identity with Python's encoders on fixed and decoded values is
// tests/typescript/test_rsocket_interop.py's (metadata_codec.ts); here, each rule.

import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";

import { DecodeError, EncodeError } from "@wirestream/runtime";
import {
  APPLICATION_JSON,
  AUTHENTICATION,
  InvalidMetadataText,
  InvalidMimeTypeName,
  MalformedMetadata,
  MetadataTrailingBytes,
  MetadataTruncated,
  ROUTING,
  TEXT_PLAIN,
  WELL_KNOWN_AUTH_IDS,
  WELL_KNOWN_AUTH_TYPES,
  WELL_KNOWN_MIME_IDS,
  decodeAcceptMimeTypes,
  decodeAuth,
  decodeComposite,
  decodeDataMimeType,
  encodeAcceptMimeTypes,
  encodeAuth,
  encodeBearerAuth,
  encodeComposite,
  encodeDataMimeType,
  encodeRoute,
  encodeSimpleAuth,
  findRoute,
  type Authentication,
} from "@wirestream/rsocket";

const bytes = (...parts: (string | number[])[]): Uint8Array<ArrayBuffer> =>
  Uint8Array.from(
    parts.flatMap((part) =>
      typeof part === "string" ? [...Buffer.from(part, "latin1")] : part,
    ),
  );

/** A small seeded generator (mulberry32): the "any bytes" laws see the same inputs each run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomBytes(next: () => number, max: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from({ length: Math.floor(next() * (max + 1)) }, () =>
    Math.floor(next() * 256),
  );
}

function randomText(next: () => number, max: number): string {
  const pool = ["a", "Z", "0", " ", "é", "ß", "中", "😀", "/", "\u0000x"];
  let text = "";
  const length = Math.floor(next() * (max + 1));
  for (let i = 0; i < length; i++) text += pool[Math.floor(next() * pool.length)];
  return text;
}

/** Every error a decoder throws on arbitrary bytes is a MalformedMetadata (a DecodeError):
 * never a RangeError or TypeError. */
function onlyMalformed(decoder: (data: Uint8Array<ArrayBuffer>) => unknown, seed: number): void {
  const next = random(seed);
  for (let i = 0; i < 5_000; i++) {
    const data = randomBytes(next, 64);
    try {
      decoder(data);
    } catch (error) {
      const shown = Buffer.from(data).toString("hex");
      assert.ok(error instanceof MalformedMetadata, `${shown}: ${String(error)}`);
      assert.ok(error instanceof DecodeError);
    }
  }
}

// --- authentication ------------------------------------------------------------------

/** Every field of a decoded authentication, the unlisted credentials included. */
function shown(auth: Authentication): Record<string, unknown> {
  if (auth.kind === "simple") return { ...auth, password: auth.password };
  if (auth.kind === "bearer") return { ...auth, token: auth.token };
  return { ...auth, payload: auth.payload };
}

test("test_well_known_auth_table_is_simple_0_bearer_1", () => {
  assert.deepEqual([...WELL_KNOWN_AUTH_TYPES], [[0, "simple"], [1, "bearer"]]);
  assert.deepEqual([...WELL_KNOWN_AUTH_IDS], [["simple", 0], ["bearer", 1]]);
});

test("test_simple_auth_round_trip", () => {
  const next = random(1);
  for (let i = 0; i < 500; i++) {
    const username = randomText(next, 20).replace(/\0$/, "");
    const password = randomText(next, 20).replace(/\0$/, "");
    const want: Authentication = { kind: "simple", username, password };
    assert.deepEqual(shown(decodeAuth(encodeSimpleAuth(username, password))), want);
  }
});

test("test_bearer_auth_round_trip", () => {
  const next = random(2);
  for (let i = 0; i < 500; i++) {
    const token = randomText(next, 40).replace(/\0$/, "");
    assert.deepEqual(shown(decodeAuth(encodeBearerAuth(token))), { kind: "bearer", token });
  }
});

test("test_custom_auth_type_round_trip", () => {
  const next = random(3);
  for (let i = 0; i < 500; i++) {
    const authType = `x-${Math.floor(next() * 1e6)}`.repeat(1 + Math.floor(next() * 10));
    const payload = randomBytes(next, 40);
    const got = shown(decodeAuth(encodeAuth(authType, payload)));
    assert.deepEqual(got, { kind: "unknown", authType, payload, reservedId: null });
  }
});

test("test_simple_auth_is_a_flag_id_0_then_16_bit_username_length", () => {
  // Simple.md: "Username Length: (16 bits ...)" (rsocket/rsocket#292).
  assert.deepEqual(encodeSimpleAuth("user", "pw"), bytes([0x80, 0x00, 0x04], "userpw"));
});

test("test_bearer_auth_is_a_flag_id_1_then_token", () => {
  assert.deepEqual(encodeBearerAuth("tok"), bytes([0x81], "tok"));
});

test("test_well_known_auth_type_spelled_as_a_name_decodes_like_its_id", () => {
  assert.deepEqual(shown(decodeAuth(bytes([0x05], "simple", [0x00, 0x01], "up"))), {
    kind: "simple",
    username: "u",
    password: "p",
  });
  assert.deepEqual(shown(decodeAuth(bytes([0x05], "bearert"))), { kind: "bearer", token: "t" });
});

test("test_auth_reserved_well_known_id_is_kept_as_unknown_auth", () => {
  assert.deepEqual(shown(decodeAuth(bytes([0x85], "xyz"))), {
    kind: "unknown",
    authType: "unknown/5",
    payload: bytes("xyz"),
    reservedId: 5,
  });
});

test("test_simple_auth_username_of_65535_bytes_is_the_longest", () => {
  const user = "u".repeat(0xffff);
  assert.deepEqual(shown(decodeAuth(encodeSimpleAuth(user, "p"))), {
    kind: "simple",
    username: user,
    password: "p",
  });
  assert.throws(() => encodeSimpleAuth(user + "u", "p"), (e: unknown) => {
    return e instanceof EncodeError && e.message.includes("65535");
  });
});

test("test_auth_values_keep_secrets_out_of_repr", () => {
  const simple = decodeAuth(encodeSimpleAuth("bob", "hunter2"));
  const bearer = decodeAuth(encodeBearerAuth("s3cret"));
  for (const [auth, secret] of [[simple, "hunter2"], [bearer, "s3cret"]] as const) {
    assert.ok(!inspect(auth).includes(secret), inspect(auth));
    assert.ok(!JSON.stringify(auth).includes(secret));
    assert.ok(!`${Object.values(auth).join()}`.includes(secret));
  }
  assert.equal(simple.kind === "simple" && simple.password, "hunter2"); // read as any field
  assert.ok(inspect(simple).includes("bob"));
});

test("test_encode_auth_refuses_a_null_terminated_password", () => {
  assert.throws(() => encodeSimpleAuth("u", "p\0"), (e: unknown) => {
    return e instanceof EncodeError && e.message.includes("null terminated");
  });
});

test("test_encode_auth_refuses_a_string_with_a_lone_surrogate", () => {
  // TextEncoder would write U+FFFD in its place: a token other than the one given.
  assert.throws(() => encodeBearerAuth("\ud800"), (e: unknown) => {
    return e instanceof EncodeError && e.message.includes("UTF-8");
  });
  assert.throws(() => encodeSimpleAuth("a\udc00", "p"), EncodeError);
  assert.deepEqual(shown(decodeAuth(encodeBearerAuth("😀"))), { kind: "bearer", token: "😀" });
});

test("test_malformed_auth_empty_metadata_is_truncated", () => {
  assert.throws(() => decodeAuth(new Uint8Array(0)), (e: unknown) => {
    return e instanceof MetadataTruncated && e.message.includes("no ID/Len byte");
  });
});

test("test_malformed_auth_custom_type_name_past_the_end_is_truncated", () => {
  assert.throws(() => decodeAuth(bytes([0x07], "abc")), MetadataTruncated);
});

test("test_malformed_auth_type_name_not_ascii_is_invalid", () => {
  assert.throws(() => decodeAuth(bytes([0x00, 0xff])), InvalidMimeTypeName);
});

test("test_malformed_simple_auth_username_length_cut_off_is_truncated", () => {
  assert.throws(() => decodeAuth(bytes([0x80, 0x00])), (e: unknown) => {
    return e instanceof MetadataTruncated && e.message.includes("16-bit Username Length");
  });
});

test("test_malformed_simple_auth_username_past_the_end_is_truncated", () => {
  assert.throws(() => decodeAuth(bytes([0x80, 0x00, 0x05], "abc")), (e: unknown) => {
    return e instanceof MetadataTruncated && e.message.includes("username of 5 bytes");
  });
});

test("test_malformed_simple_auth_username_not_utf8_is_invalid_text", () => {
  assert.throws(() => decodeAuth(bytes([0x80, 0x00, 0x01, 0xff], "pw")), (e: unknown) => {
    return e instanceof InvalidMetadataText && e.message.includes("username");
  });
});

test("test_malformed_simple_auth_password_not_utf8_is_invalid_text", () => {
  assert.throws(() => decodeAuth(bytes([0x80, 0x00, 0x01], "u", [0xff])), (e: unknown) => {
    return e instanceof InvalidMetadataText && e.message.includes("password");
  });
});

test("test_malformed_bearer_token_not_utf8_is_invalid_text", () => {
  assert.throws(() => decodeAuth(bytes([0x81, 0xc3])), (e: unknown) => {
    return e instanceof InvalidMetadataText && e.message.includes("bearer token");
  });
});

test("test_auth_decoder_raises_only_malformed_metadata_on_any_bytes", () => {
  onlyMalformed(decodeAuth, 4);
});

test("test_auth_travels_in_composite_metadata_beside_a_route", () => {
  // Authentication.md: "message/x.rsocket.authentication.v0" is a composite entry's type.
  const metadata = encodeComposite([
    [ROUTING, encodeRoute("orders.get")],
    [AUTHENTICATION, encodeBearerAuth("s3cret")],
  ]);
  const entries = decodeComposite(metadata);
  assert.equal(findRoute(entries), "orders.get");
  assert.equal(entries[1]!.mimeType, AUTHENTICATION);
  assert.equal(metadata[entries[0]!.content.length + 4], 0x80 | 0x7c); // one byte, M set
  assert.deepEqual(shown(decodeAuth(entries[1]!.content)), { kind: "bearer", token: "s3cret" });
});

// --- per-stream data MIME types ------------------------------------------------------

test("test_data_mime_type_round_trip", () => {
  for (const mime of [...WELL_KNOWN_MIME_IDS.keys(), "x/y", "a".repeat(128), "text/x-ünïcode"]) {
    if (!/^[\x00-\x7f]*$/.test(mime)) {
      assert.throws(() => encodeDataMimeType(mime), EncodeError);
      continue;
    }
    assert.equal(decodeDataMimeType(encodeDataMimeType(mime)), mime);
  }
});

test("test_accept_mime_types_round_trip", () => {
  const mimes = [TEXT_PLAIN, "x/y", APPLICATION_JSON, "application/x-custom+cbor"];
  for (let n = 0; n <= mimes.length; n++) {
    const some = mimes.slice(0, n);
    assert.deepEqual(decodeAcceptMimeTypes(encodeAcceptMimeTypes(some)), some);
  }
});

test("test_data_mime_type_well_known_is_one_flagged_byte", () => {
  assert.deepEqual(encodeDataMimeType(APPLICATION_JSON), bytes([0x85]));
  assert.deepEqual(encodeAcceptMimeTypes([TEXT_PLAIN, "x/y"]), bytes([0xa1, 0x02], "x/y"));
});

test("test_data_mime_type_reserved_id_decodes_to_its_placeholder", () => {
  assert.equal(decodeDataMimeType(bytes([0xd0])), "unknown/80");
  assert.deepEqual(decodeAcceptMimeTypes(bytes([0xd0, 0x85])), ["unknown/80", APPLICATION_JSON]);
});

test("test_malformed_data_mime_type_empty_is_truncated", () => {
  assert.throws(() => decodeDataMimeType(new Uint8Array(0)), MetadataTruncated);
});

test("test_malformed_data_mime_type_with_trailing_bytes_is_refused", () => {
  // message/x.rsocket.mime-type.v0 holds one "MIME ID/Len | Data Encoding MIME Type".
  assert.throws(() => decodeDataMimeType(bytes([0x85, 0x85])), MetadataTrailingBytes);
});

test("test_malformed_accept_mime_type_name_past_the_end_is_truncated", () => {
  assert.throws(() => decodeAcceptMimeTypes(bytes([0x85, 0x09], "ab")), MetadataTruncated);
});

test("test_data_mime_decoders_raise_only_malformed_metadata_on_any_bytes", () => {
  onlyMalformed(decodeDataMimeType, 5);
  onlyMalformed(decodeAcceptMimeTypes, 6);
});

test("test_encode_route_refuses_a_tag_with_a_lone_surrogate", () => {
  assert.throws(() => encodeRoute("a\ud800b"), (e: unknown) => {
    return e instanceof EncodeError && e.message.includes("UTF-8");
  });
});
