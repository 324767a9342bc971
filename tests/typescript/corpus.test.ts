// The cross-language conformance corpus, checked against the generated TypeScript codecs.
//
// Python writes the corpus (tests/crosslang/corpus.py: golden vectors, error vectors,
// frames drawn from the generated hypothesis strategies, mutated inputs) with its own
// answers; tests/crosslang/test_crosslang.py writes it into a temporary folder and runs this file
// with WIRESTREAM_CORPUS naming that folder. Without the variable there is nothing to
// check and the test is skipped (`node --test tests/typescript/dist/` alone).
//
// For every case: decode(bytes, ctx, sender) must give Python's frame (or throw the
// error class Python raised, same name, and the same `needed` for Truncated); the
// encoding of the decoded frame and of a frame built from Python's fields must both be
// Python's bytes. The JSON form is the one corpus.py documents: numbers for integers of
// at most 32 bits, {"big": "..."} for 64-bit ones, {"float": "<binary64 bits>"} for
// floats, {"hex": "..."} for bytes, {"$type": "<Class>", <snake_case field>: ...} for
// frames and structs.
//
// An index entry may name the compiled module by `path` (a codec generated from an IDL
// outside idl/, e.g. tests/typescript/test_constructs_typescript.py's), and a corpus file may hold
// `encode_errors`: frames (no bytes) that encoding must refuse with Python's class. A case
// marked `startup` holds a frame a connection starts with (PostgreSQL's startup messages):
// it is decoded with `decodeStartup`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import * as bpmuxRel from "@wirestream/generated/bpmux/rel";
import * as mqttV5 from "@wirestream/generated/mqtt/v5";
import * as mysqlV10 from "@wirestream/generated/mysql/v10";
import * as postgresqlV3 from "@wirestream/generated/postgresql/v3";
import * as rabbitmqStreamDraft from "@wirestream/generated/rabbitmq_stream/draft";
import * as rabbitmqStreamV1 from "@wirestream/generated/rabbitmq_stream/v1";
import * as rsioV0 from "@wirestream/generated/rsio/v0";
import * as rsocketV0_2 from "@wirestream/generated/rsocket/v0_2";
import * as rsocketV1_0 from "@wirestream/generated/rsocket/v1_0";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
type Sender = "client" | "server";

interface Case {
  name?: string;
  op?: string;
  bytes: string;
  ctx: JsonObject | null;
  sender: string | null;
  startup?: boolean;
  frame?: JsonObject;
  encoded?: string;
  encode_error?: string;
  error?: string;
  needed?: number | { big: string };
  tracked?: JsonObject;
}

interface CorpusFile {
  format: number;
  protocol: string;
  version: string;
  module: string;
  encoding: "binary" | "msgpack";
  golden: Case[];
  golden_errors: Case[];
  differential: Case[];
  tracking: Case[];
  mutations: Case[];
  encode_errors?: Case[];
}

interface Index {
  format: number;
  files: { file: string; module: string; encoding: string; path?: string }[];
}

// What every generated codec module offers (method syntax: a module's own Frame and
// Context types are narrower than `object`, which method parameters allow).
interface Codec {
  decode(data: Uint8Array<ArrayBuffer>, ctx?: object, sender?: Sender): object;
  decodeStartup?(data: Uint8Array<ArrayBuffer>, ctx?: object): object;
  encode(frame: object, ctx?: object): Uint8Array<ArrayBuffer>;
  decodeMsgpack?(data: Uint8Array<ArrayBuffer>, ctx?: object): object;
  encodeMsgpack?(frame: object): Uint8Array<ArrayBuffer>;
  trackContext?(frame: object, ctx: object): void;
}

interface Module {
  codec: Codec;
  exports: Map<string, unknown>;
}

function module(ns: Codec & object): Module {
  return { codec: ns, exports: new Map<string, unknown>(Object.entries(ns)) };
}

const MODULES: Record<string, Module> = {
  "bpmux/rel": module(bpmuxRel),
  "mqtt/v5": module(mqttV5),
  "mysql/v10": module(mysqlV10),
  "postgresql/v3": module(postgresqlV3),
  "rabbitmq_stream/draft": module(rabbitmqStreamDraft),
  "rabbitmq_stream/v1": module(rabbitmqStreamV1),
  "rsio/v0": module(rsioV0),
  "rsocket/v0_2": module(rsocketV0_2),
  "rsocket/v1_0": module(rsocketV1_0),
};

const KINDS = [
  "golden",
  "golden_errors",
  "differential",
  "tracking",
  "mutations",
  "encode_errors",
] as const;
const FORMAT = 1;
const SHOWN = 15; // failures quoted per kind; the rest are counted

// --- the JSON form ------------------------------------------------------------------------

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function toHex(data: Uint8Array): string {
  let out = "";
  for (const byte of data) out += HEX[byte];
  return out;
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function camel(snake: string): string {
  return snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function snake(camelName: string): string {
  return camelName.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Floats by their binary64 bits: NaN payloads and the sign of zero compare exactly.
const FLOAT = new DataView(new ArrayBuffer(8));

function floatBits(value: number): string {
  FLOAT.setFloat64(0, value);
  return FLOAT.getBigUint64(0).toString(16).padStart(16, "0");
}

function floatOf(bits: string): number {
  FLOAT.setBigUint64(0, BigInt(`0x${bits}`));
  return FLOAT.getFloat64(0);
}

// A TypeScript value in the corpus's JSON form. Where Python's value is a frame or
// struct of the same class, its fields are read by Python's names (camelCased) so a
// getter counts as a field; any other own field is added under its snake_case name, so
// a field Python does not have shows up as a difference.
function normalise(value: unknown, expected?: Json): Json {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number" && isObject(expected) && typeof expected["float"] === "string") {
    return { float: floatBits(value) };
  }
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return { big: value.toString() };
  if (value === undefined) return "<undefined>";
  if (value instanceof Uint8Array) return { hex: toHex(value) };
  if (Array.isArray(value)) {
    const items = Array.isArray(expected) ? expected : [];
    return value.map((item: unknown, i) => normalise(item, items[i]));
  }
  if (typeof value === "object") {
    // A frame class's static NAME is Python's class name (RSocket's ErrorFrame is Error).
    const type = (value.constructor as { NAME?: string }).NAME ?? value.constructor.name;
    const out: JsonObject = { $type: type };
    const fields = value as Record<string, unknown>;
    const read = new Set<string>(); // own fields read by Python's names (camelCased)
    if (isObject(expected) && expected["$type"] === type) {
      for (const [key, want] of Object.entries(expected)) {
        if (key === "$type") continue;
        out[key] = normalise(fields[camel(key)], want);
        read.add(camel(key));
      }
    }
    for (const [key, field] of Object.entries(fields)) {
      const name = snake(key);
      if (!read.has(key) && !(name in out)) out[name] = normalise(field);
    }
    return out;
  }
  return `<${typeof value}>`;
}

function ctorOf(mod: Module, name: string): new (init?: Record<string, unknown>) => object {
  // A frame class is found by its static NAME (Python's name): RSocket's Error is ErrorFrame.
  const named = [...mod.exports.values()].find(
    (value) => typeof value === "function" && (value as { NAME?: unknown }).NAME === name,
  );
  const ctor = named ?? mod.exports.get(name);
  if (typeof ctor !== "function") throw new Error(`the module exports no class ${name}`);
  return ctor as new (init?: Record<string, unknown>) => object;
}

// The inverse of `normalise`: a frame built from Python's fields by `new Cls(init)`.
function build(mod: Module, value: Json): unknown {
  if (Array.isArray(value)) return value.map((item) => build(mod, item));
  if (isObject(value)) {
    const type = value["$type"];
    if (typeof type === "string") {
      const init: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(value)) {
        if (key !== "$type") init[camel(key)] = build(mod, field);
      }
      return new (ctorOf(mod, type))(init);
    }
    const big = value["big"];
    if (typeof big === "string") return BigInt(big);
    const hex = value["hex"];
    if (typeof hex === "string") return fromHex(hex);
    const float = value["float"];
    if (typeof float === "string") return floatOf(float);
    throw new Error(`not a tagged JSON value: ${JSON.stringify(value)}`);
  }
  return value;
}

// A context from its JSON form: keyed slots ([[key, value], ...]) become Maps.
function context(mod: Module, value: JsonObject | null): object | undefined {
  if (value === null) return undefined;
  const init: Record<string, unknown> = {};
  for (const [key, slot] of Object.entries(value)) {
    init[camel(key)] = Array.isArray(slot)
      ? new Map(
          slot.map((pair): [unknown, unknown] => {
            if (!Array.isArray(pair) || pair.length !== 2) throw new Error(`bad pair ${JSON.stringify(pair)}`);
            return [build(mod, pair[0] ?? null), build(mod, pair[1] ?? null)];
          }),
        )
      : build(mod, slot);
  }
  return new (ctorOf(mod, "Context"))(init);
}

// A context in the JSON form: Maps as [key, value] pairs in key order.
function contextJson(ctx: object): JsonObject {
  const out: JsonObject = {};
  for (const [key, slot] of Object.entries(ctx)) {
    if (slot instanceof Map) {
      const pairs = [...(slot as Map<unknown, unknown>).entries()];
      pairs.sort(([a], [b]) => compare(a, b));
      out[snake(key)] = pairs.map(([k, v]) => [normalise(k), normalise(v)]);
    } else {
      out[snake(key)] = normalise(slot);
    }
  }
  return out;
}

function compare(a: unknown, b: unknown): number {
  if ((typeof a === "bigint" || typeof a === "number") && (typeof b === "bigint" || typeof b === "number")) {
    return a < b ? -1 : a > b ? 1 : 0;
  }
  return 0;
}

function sender(value: string | null): Sender | undefined {
  if (value === null) return undefined;
  if (value === "client" || value === "server") return value;
  throw new Error(`bad sender ${value}`);
}

// --- one case -----------------------------------------------------------------------------

interface Outcome {
  error: string;
  needed?: unknown;
}

function thrown(error: unknown): Outcome {
  if (!(error instanceof Error)) return { error: `<non-Error ${String(error)}>` };
  const out: Outcome = { error: error.name };
  if ("needed" in error) out.needed = error.needed;
  return out;
}

// Truncated.needed as Python has it; beyond 2^53 - 1 (a length read from the input can
// announce that much) a number cannot hold it exactly, so any number that large agrees.
function sameNeeded(got: unknown, want: number | { big: string }): boolean {
  if (typeof want === "number") return got === want;
  const big = BigInt(want.big);
  if (typeof got === "bigint") return got === big;
  return typeof got === "number" && got > Number.MAX_SAFE_INTEGER;
}

function attempt<T>(run: () => T): { value: T } | Outcome {
  try {
    return { value: run() };
  } catch (error) {
    return thrown(error);
  }
}

function short(value: unknown): string {
  const text = JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
  return text === undefined ? String(value) : text.length > 400 ? text.slice(0, 400) + "..." : text;
}

// A frame Python refuses to encode: built from its fields, TypeScript must refuse it too.
function checkEncodeError(mod: Module, msgpack: boolean, c: Case): string[] {
  const codec = mod.codec;
  const ctx = context(mod, c.ctx);
  const built = attempt(() => build(mod, c.frame ?? null) as object);
  if (!("value" in built)) return [`building the frame from Python's fields raises ${built.error}`];
  const encoded = attempt(() =>
    msgpack && codec.encodeMsgpack ? codec.encodeMsgpack(built.value) : codec.encode(built.value, ctx),
  );
  const want = String(c.encode_error);
  if ("value" in encoded) return [`encodes to ${toHex(encoded.value)}, Python raises ${want}`];
  if (encoded.error !== want) return [`encode raises ${encoded.error}, Python ${want}`];
  return [];
}

// Every way TypeScript differs from Python on this case (empty when it agrees).
function check(mod: Module, msgpack: boolean, c: Case): string[] {
  const problems: string[] = [];
  const codec = mod.codec;
  const data = fromHex(c.bytes);
  const ctx = context(mod, c.ctx);
  const decodeMsgpack = codec.decodeMsgpack?.bind(codec);
  const encodeMsgpack = codec.encodeMsgpack?.bind(codec);
  const decodeStartup = codec.decodeStartup?.bind(codec);
  if (msgpack && (decodeMsgpack === undefined || encodeMsgpack === undefined)) {
    return ["the module has no decodeMsgpack/encodeMsgpack"];
  }
  if (c.startup === true && decodeStartup === undefined) return ["the module has no decodeStartup"];
  const decode = (): object =>
    msgpack && decodeMsgpack
      ? decodeMsgpack(data, ctx)
      : c.startup === true && decodeStartup
        ? decodeStartup(data, ctx)
        : codec.decode(data, ctx, sender(c.sender));
  const encode = (frame: object): Uint8Array<ArrayBuffer> =>
    msgpack && encodeMsgpack ? encodeMsgpack(frame) : codec.encode(frame, ctx);

  const decoded = attempt(decode);
  if (c.error !== undefined) {
    if ("value" in decoded) {
      problems.push(`decodes to ${short(normalise(decoded.value))}, Python raises ${c.error}`);
    } else if (decoded.error !== c.error) {
      problems.push(`raises ${decoded.error}, Python raises ${c.error}`);
    } else if (c.needed !== undefined && !sameNeeded(decoded.needed, c.needed)) {
      problems.push(`Truncated with needed=${String(decoded.needed)}, Python's needed=${short(c.needed)}`);
    }
    return problems;
  }
  if (c.frame === undefined) return ["a case with neither frame nor error"];
  if (!("value" in decoded)) return [`raises ${decoded.error}, Python decodes ${short(c.frame)}`];
  const fields = normalise(decoded.value, c.frame);
  try {
    assert.deepStrictEqual(fields, c.frame);
  } catch {
    problems.push(`decodes to ${short(fields)}, Python to ${short(c.frame)}`);
  }
  if (c.tracked !== undefined) {
    if (codec.trackContext === undefined) {
      problems.push("the module has no trackContext");
    } else {
      // A context of its own: the one decode used must stay as it was for the encodes.
      const running = context(mod, c.ctx) ?? new (ctorOf(mod, "Context"))();
      const tracked = attempt(() => codec.trackContext?.(decoded.value, running));
      if (!("value" in tracked)) problems.push(`trackContext raises ${tracked.error}`);
      else {
        const after = contextJson(running);
        try {
          assert.deepStrictEqual(after, c.tracked);
        } catch {
          problems.push(`trackContext leaves ${short(after)}, Python ${short(c.tracked)}`);
        }
      }
    }
  }
  const built = attempt(() => build(mod, c.frame ?? null) as object);
  for (const [what, frame] of [["decoded", decoded], ["built", built]] as const) {
    if (!("value" in frame)) {
      problems.push(`building the frame from Python's fields raises ${frame.error}`);
      continue;
    }
    const encoded = attempt(() => encode(frame.value));
    if (c.encode_error !== undefined) {
      if ("value" in encoded) problems.push(`${what} frame encodes, Python raises ${c.encode_error}`);
      else if (encoded.error !== c.encode_error)
        problems.push(`${what} frame: encode raises ${encoded.error}, Python ${c.encode_error}`);
    } else if (!("value" in encoded)) {
      problems.push(`${what} frame: encode raises ${encoded.error}, Python encodes ${c.encoded}`);
    } else if (toHex(encoded.value) !== c.encoded) {
      problems.push(`${what} frame encodes to ${toHex(encoded.value)}, Python to ${c.encoded}`);
    }
  }
  return problems;
}

// --- the run ------------------------------------------------------------------------------

const corpusDir = process.env["WIRESTREAM_CORPUS"];

test("cross-language corpus", { skip: corpusDir ? false : "WIRESTREAM_CORPUS is not set" }, async (t) => {
  assert.ok(corpusDir);
  const index = JSON.parse(readFileSync(join(corpusDir, "index.json"), "utf-8")) as Index;
  assert.equal(index.format, FORMAT, "corpus format: regenerate it with this tree's corpus.py");
  assert.ok(index.files.length > 0, "an empty corpus");
  for (const entry of index.files) {
    await t.test(entry.file, async (tv) => {
      const corpus = JSON.parse(readFileSync(join(corpusDir, entry.file), "utf-8")) as CorpusFile;
      const mod =
        entry.path === undefined
          ? MODULES[corpus.module]
          : module((await import(pathToFileURL(entry.path).href)) as Codec & object);
      assert.ok(mod, `no generated TypeScript module for ${corpus.module}`);
      const msgpack = corpus.encoding === "msgpack";
      for (const kind of KINDS) {
        const cases = corpus[kind] ?? [];
        if (kind === "encode_errors" && cases.length === 0) continue;
        await tv.test(kind, (tk) => {
          const failures: string[] = [];
          for (const [i, c] of cases.entries()) {
            let problems: string[];
            try {
              problems =
                kind === "encode_errors" ? checkEncodeError(mod, msgpack, c) : check(mod, msgpack, c);
            } catch (error) {
              problems = [`the check itself throws ${String(error)}`];
            }
            if (problems.length > 0) {
              const label = c.name ?? `${kind}[${i}]${c.op ? ` (${c.op})` : ""}`;
              const input = `bytes=${c.bytes} ctx=${short(c.ctx)} sender=${String(c.sender)}`;
              failures.push(`${label}: ${input}\n    ${problems.join("\n    ")}`);
            }
          }
          tk.diagnostic(`${entry.file} ${kind}: ${cases.length} cases, ${failures.length} differ`);
          if (failures.length > 0) {
            const more = failures.length > SHOWN ? `\n... and ${failures.length - SHOWN} more` : "";
            assert.fail(
              `${failures.length} of ${cases.length} ${kind} cases differ from Python:\n` +
                failures.slice(0, SHOWN).join("\n") +
                more,
            );
          }
        });
      }
    });
  }
});
