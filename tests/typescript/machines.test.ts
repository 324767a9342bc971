/**
 * The TypeScript machines give the Python machines' outcome, for every protocol version.
 *
 * tests/typescript/machine_cases.py (run here with the project's Python) draws sample
 * frames of every frame type from the generated hypothesis strategies -- plus copies
 * whose guarded flags and fields take each value a machine row names and one it does
 * not -- serialises them with the Python codec and applies each, for every machine,
 * role, state and direction, to a fresh Python machine: the new state, IGNORE or the
 * error with all its fields. Here the generated TypeScript codec decodes the same bytes
 * and the generated TypeScript machines must agree on every one, error messages
 * included; and their HANDLERS name the same frames (Python's on_x_y as onXY).
 *
 * The Python interpreter: $WIRESTREAM_PYTHON, else the repository's .venv, else python3.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import {
  IGNORE,
  IllegalSend,
  StateMachine,
  UnexpectedFrame,
  frameClassName,
  frameName,
  type BoundHandlers,
  type Handlers,
  type MachineRefusal,
} from "@wirestream/runtime";

// --- the Python side's JSON (see machine_cases.py) -----------------------------------

interface ContextValue {
  entries: [string | null, string][];
  bigintKey: boolean;
  bigintValue: boolean;
}

interface SampleFrame {
  class: string;
  hex: string;
  sender: "client" | "server" | null;
  ctx: Record<string, ContextValue> | null;
}

interface PythonError extends MachineRefusal {
  class: string;
  message: string;
}

type PythonOutcome = { to: string } | "IGNORE" | { error: number };

interface MachineCases {
  class: string;
  cases: { role: string; state: string; direction: "send" | "receive"; outcomes: PythonOutcome[] }[];
  handlers: Record<string, Record<string, string>>;
}

interface VersionCases {
  protocol: string;
  version: string;
  frames: SampleFrame[];
  errors: PythonError[];
  machines: MachineCases[];
}

// --- what the test needs of the generated modules ---------------------------------------

interface Codec {
  decode(data: Uint8Array<ArrayBuffer>, ctx?: object, sender?: "client" | "server"): object;
  Context: new () => object;
}

type MachineClass = (new (role: string, state?: string) => StateMachine<string>) & {
  readonly HANDLERS: Handlers;
};

const ROOT = path.resolve(fileURLToPath(import.meta.url), "../../../..");

function python(): string {
  const fromEnv = process.env["WIRESTREAM_PYTHON"];
  if (fromEnv) {
    return fromEnv;
  }
  const venv = path.join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

function loadCases(): VersionCases[] {
  const text = execFileSync(python(), ["-m", "tests.typescript.machine_cases"], {
    cwd: ROOT,
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  return JSON.parse(text) as VersionCases[];
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The TypeScript Context holding `spec`'s values (keyed ones in a Map). */
function context(codec: Codec, spec: Record<string, ContextValue>): object {
  const ctx = new codec.Context();
  const fields = ctx as unknown as Record<string, unknown>;
  for (const [name, value] of Object.entries(spec)) {
    const key = camel(name);
    const int = (text: string, wide: boolean): number | bigint =>
      wide ? BigInt(text) : Number(text);
    const target = fields[key];
    for (const [k, v] of value.entries) {
      if (k === null) {
        fields[key] = int(v, value.bigintValue);
      } else if (target instanceof Map) {
        target.set(int(k, value.bigintKey), int(v, value.bigintValue));
      } else {
        assert.fail(`Context.${key}: a keyed value, but not a Map (${typeof target})`);
      }
    }
  }
  return ctx;
}

type Outcome = { to: string } | "IGNORE" | { error: PythonError };

function refusal(error: unknown): PythonError {
  assert.ok(
    error instanceof IllegalSend || error instanceof UnexpectedFrame,
    `not a machine refusal: ${String(error)}`,
  );
  const { machine, role, state, frame, spec } = error;
  return { class: error.name, message: error.message, machine, role, state, frame, spec };
}

function apply(machine: StateMachine<string>, direction: "send" | "receive", frame: object): Outcome {
  try {
    if (direction === "send") {
      const allowed = machine.allowsSend(frame);
      const state = machine.send(frame);
      assert.ok(allowed, "allowsSend said no, send said yes");
      return { to: state };
    }
    const result = machine.receive(frame);
    return result === IGNORE ? "IGNORE" : { to: result as string };
  } catch (error) {
    if (direction === "send") {
      assert.equal(machine.allowsSend(frame), false, "allowsSend said yes, send threw");
    }
    return { error: refusal(error) };
  }
}

function expected(outcome: PythonOutcome, errors: PythonError[]): Outcome {
  if (outcome === "IGNORE" || "to" in outcome) {
    return outcome;
  }
  const error = errors[outcome.error];
  assert.ok(error !== undefined);
  return { error };
}

const ALL = loadCases();

test("the Python side dumps every protocol version", () => {
  assert.ok(ALL.length >= 6);
});

for (const version of ALL) {
  const id = `${version.protocol}/${version.version}`;

  test(`${id}: the TypeScript machines give the Python outcome for every sample`, async (t) => {
    const codec = (await import(`@wirestream/generated/${id}`)) as Codec;
    const machines = (await import(`@wirestream/generated/${id}/machines`)) as Record<
      string,
      unknown
    >;
    const frames = version.frames.map((sample) => {
      const ctx = sample.ctx === null ? undefined : context(codec, sample.ctx);
      const frame = codec.decode(fromHex(sample.hex), ctx, sample.sender ?? undefined);
      assert.equal(frameName(frame), sample.class, `decoding ${sample.hex}`);
      return frame;
    });
    const mismatches: string[] = [];
    let checked = 0;
    for (const cases of version.machines) {
      const Machine = machines[cases.class] as MachineClass | undefined;
      assert.ok(typeof Machine === "function", `${id}: no machine class ${cases.class}`);
      for (const { role, state, direction, outcomes } of cases.cases) {
        outcomes.forEach((pythonOutcome, index) => {
          const frame = frames[index]!;
          const machine = new Machine(role, state);
          const got = apply(machine, direction, frame);
          const want = expected(pythonOutcome, version.errors);
          checked += 1;
          try {
            assert.deepEqual(got, want);
            if (got === "IGNORE") {
              assert.equal(machine.state, state, "IGNORE moved the machine");
            }
          } catch {
            mismatches.push(
              `${cases.class} role=${role} state=${state} ${direction} ` +
                `${version.frames[index]!.class} ${version.frames[index]!.hex}: ` +
                `TypeScript ${JSON.stringify(got)} != Python ${JSON.stringify(want)}`,
            );
          }
        });
      }
    }
    t.diagnostic(`${checked} outcomes over ${frames.length} frames`);
    assert.deepEqual(mismatches.slice(0, 20), [], `${mismatches.length} of ${checked} differ`);
  });

  test(`${id}: HANDLERS name the frames Python's do, in camelCase`, async () => {
    const machines = (await import(`@wirestream/generated/${id}/machines`)) as Record<
      string,
      unknown
    >;
    for (const cases of version.machines) {
      const Machine = machines[cases.class] as MachineClass;
      const handlers: Record<string, Record<string, string>> = {};
      for (const [role, table] of Object.entries(Machine.HANDLERS)) {
        handlers[role] = Object.fromEntries(
          [...table].map(([frame, method]) => [frameClassName(frame), method]),
        );
      }
      const want = Object.fromEntries(
        Object.entries(cases.handlers).map(([role, table]) => [
          role,
          Object.fromEntries(Object.entries(table).map(([f, method]) => [f, camel(method)])),
        ]),
      );
      assert.deepEqual(handlers, want, cases.class);
    }
  });

  test(`${id}: bind<Role>(h) binds each frame HANDLERS lists to h's method`, async () => {
    const machines = (await import(`@wirestream/generated/${id}/machines`)) as Record<
      string,
      unknown
    >;
    for (const cases of version.machines) {
      const Machine = machines[cases.class] as MachineClass & Record<string, unknown>;
      for (const [role, table] of Object.entries(Machine.HANDLERS)) {
        const binder = `bind${role
          .split("_")
          .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
          .join("")}`;
        const bind = Machine[binder] as ((h: object) => BoundHandlers) | undefined;
        assert.ok(typeof bind === "function", `${cases.class}.${binder}`);
        const calls: [string, unknown[]][] = [];
        const engine = new Proxy(
          {},
          { get: (_, method) => (...args: unknown[]) => calls.push([String(method), args]) },
        );
        const bound = bind(engine);
        assert.deepEqual([...bound.keys()], [...table.keys()], `${cases.class} ${role}`);
        for (const [frame, method] of table) {
          const sample = {};
          bound.get(frame)!(sample, "context");
          assert.deepEqual(calls.pop(), [method, [sample, "context"]]);
        }
      }
    }
  });
}
