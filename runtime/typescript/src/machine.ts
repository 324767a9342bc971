/**
 * The one state-machine driver; the machines themselves are generated tables (data).
 * The TS twin of runtime/machine.py (same outcomes, same errors, same messages).
 *
 * `generated/typescript/src/<protocol>/<version>/machines.ts` subclasses `StateMachine`
 * once per `machines:` entry of the IDL and fills in its statics:
 *
 * ```ts
 * export enum ConnectionState { NEW = "new", SETUP_SENT = "setup_sent", CLOSED = "closed" }
 *
 * function guard0(frame: Setup): boolean { return frame.streamId === 0 && !frame.lease; }
 *
 * export class ConnectionMachine extends StateMachine<ConnectionState> {
 *   static readonly NAME = "connection";
 *   static readonly SCOPE = "connection";
 *   static readonly ROLES: readonly string[] = ["client", "server"];
 *   static readonly INITIAL: Readonly<Record<string, ConnectionState>> =
 *     { client: ConnectionState.NEW, server: ConnectionState.NEW };
 *   static readonly TERMINAL: ReadonlySet<ConnectionState> = new Set([ConnectionState.CLOSED]);
 *   static readonly SEND: Readonly<Record<string, Table<ConnectionState>>> = {
 *     client: table<ConnectionState>([
 *       // [state, frame class | ANY, rows]; rows: [guard | null, outcome], first match wins
 *       [ConnectionState.NEW, Setup, [[guard0, ConnectionState.SETUP_SENT]]],
 *       [ConnectionState.NEW, ANY, [[null, new Illegal("the client MUST send SETUP ...", "...")]]],
 *       [ConnectionState.CLOSED, Cancel, [[null, IGNORE]]],
 *     ]),
 *     server: table<ConnectionState>([]),
 *   };
 *   static readonly RECEIVE: Readonly<Record<string, Table<ConnectionState>>> = { ... };
 *   static readonly HANDLERS: Handlers = { ... };   // optional: frame class -> engine method
 *   static bindServer(h: ConnectionServerHandlers): BoundHandlers { ... }  // typed HANDLERS
 * }
 * ```
 *
 * - States are a *string* enum whose values are Python's enum values: messages print
 *   them, and a state is told from IGNORE / Illegal by `typeof outcome === "string"`.
 * - A `Table<S>` is `Map<state, Map<frame class | ANY, rows>>`: a frame costs two Map
 *   lookups (its state, then `frame.constructor`). `table()` builds it from flat
 *   `[state, key, rows]` entries, as Python's tables are flat `(state, class)` dicts; the
 *   nested Maps may also be written out directly.
 * - The first row whose guard accepts the frame (null: always) decides: a state (the
 *   machine moves there), IGNORE (the spec says to drop it; the machine stays put) or
 *   `Illegal(message, spec)`. When no row of the frame's class matches (no entry, or
 *   every guard refused), the state's ANY rows (`send: "*"` / `receive: "*"`) decide by
 *   their first row's outcome (its guard is not consulted, as in Python); none: illegal.
 *   Sending illegally throws IllegalSend (our fault), receiving illegally
 *   UnexpectedFrame (the peer's), with Python's message and fields (machine, role,
 *   state, frame = the frame class's static NAME, spec).
 * - The statics are read once per instance, from `new.target`.
 */

import { IllegalSend, UnexpectedFrame } from "./errors.js";
import { frameClassName, frameName } from "./wire.js";

/** The key of a state's `*` rows: any frame no specific row matched. */
export const ANY: unique symbol = /* @__PURE__ */ Symbol("ANY");

/** The outcome of a row the spec says to ignore (the frame is dropped). */
export class Ignore {
  toString(): string {
    return "IGNORE";
  }
}

export const IGNORE: Ignore = /* @__PURE__ */ new Ignore();

/** The outcome of a row the IDL marks as an error, with its reason and citation. */
export class Illegal {
  constructor(
    readonly message: string,
    readonly spec: string = "",
  ) {}
}

/** Any frame class (a generated class whose instances are frames). */
export type FrameClass = abstract new (...args: never[]) => object;
/** A row's condition on the frame; `(frame: Setup) => boolean` fits. */
export type Guard = (frame: never) => boolean;
export type Outcome<S extends string> = S | Ignore | Illegal;
export type Row<S extends string> = readonly [Guard | null, Outcome<S>];
export type Rows<S extends string> = readonly Row<S>[];
export type TableKey = FrameClass | typeof ANY;
export type StateRows<S extends string> = ReadonlyMap<TableKey, Rows<S>>;
/** state -> (frame class | ANY) -> rows. */
export type Table<S extends string> = ReadonlyMap<S, StateRows<S>>;
/** Per role: frame class -> the engine method a received frame goes to. */
export type Handlers = Readonly<Record<string, ReadonlyMap<FrameClass, string>>>;
/**
 * An engine's handler for one frame class, as a machine's generated `bind<Role>(h)`
 * returns it: typed against the machine's `*Handlers` interface when bound, so tsc
 * refuses an engine without a handler or with one taking another frame.
 */
export type BoundHandler = (frame: object, ...context: unknown[]) => unknown;
/** frame class -> the engine's handler (`bind<Role>`'s result). */
export type BoundHandlers = ReadonlyMap<FrameClass, BoundHandler>;

/** Build a Table from flat `[state, frame class | ANY, rows]` entries. */
export function table<S extends string>(
  entries: Iterable<readonly [S, TableKey, Rows<S>]>,
): Table<S> {
  const states = new Map<S, Map<TableKey, Rows<S>>>();
  for (const [state, key, rows] of entries) {
    let byKey = states.get(state);
    if (byKey === undefined) {
      byKey = new Map();
      states.set(state, byKey);
    }
    if (byKey.has(key)) {
      const name = key === ANY ? "ANY" : frameClassName(key);
      throw new Error(`machine table: two entries for (${state}, ${name})`);
    }
    byKey.set(key, rows);
  }
  return states;
}

/** What a machine class provides (its statics). */
export interface MachineSpec<S extends string> {
  readonly NAME: string;
  /** What one instance tracks (IDL `scope:`): connection, stream, subscription ... */
  readonly SCOPE: string;
  readonly ROLES: readonly string[];
  readonly INITIAL: Readonly<Record<string, S>>;
  readonly TERMINAL: ReadonlySet<S>;
  readonly SEND: Readonly<Record<string, Table<S>>>;
  readonly RECEIVE: Readonly<Record<string, Table<S>>>;
  readonly HANDLERS?: Handlers;
}

const NO_ROWS: StateRows<never> = /* @__PURE__ */ new Map();

/** One instance of a machine (a connection, a stream, ...) as seen by one role. */
export abstract class StateMachine<S extends string> {
  readonly role: string;
  state: S;
  /** The machine class's statics (NAME, INITIAL, TERMINAL ...). */
  readonly definition: MachineSpec<S>;
  private readonly sendTable: Table<S>;
  private readonly receiveTable: Table<S>;

  constructor(role: string, state?: S) {
    const definition = new.target as unknown as MachineSpec<S>;
    if (!definition.ROLES.includes(role)) {
      throw new RangeError(
        `${definition.NAME}: unknown role '${role}' (roles: ${definition.ROLES.map((r) => `'${r}'`).join(", ")})`,
      );
    }
    this.definition = definition;
    this.role = role;
    this.state = state ?? definition.INITIAL[role]!;
    this.sendTable = definition.SEND[role]!;
    this.receiveTable = definition.RECEIVE[role]!;
  }

  get terminated(): boolean {
    return this.definition.TERMINAL.has(this.state);
  }

  /**
   * Whether this instance holds nothing worth keeping: a terminal state, or, for
   * machines without one (an id that is reused), back in its initial state.
   */
  get vacant(): boolean {
    const terminal = this.definition.TERMINAL;
    if (terminal.size > 0) {
      return terminal.has(this.state);
    }
    return this.state === this.definition.INITIAL[this.role];
  }

  /**
   * Check that we may send `frame` now and move on; returns the new state.
   *
   * Throws IllegalSend when the table forbids it. A row that says ignore leaves the
   * state as it is (sending is harmless, the peer will drop it).
   */
  send(frame: object): S {
    const outcome = this.lookup(this.sendTable, frame);
    if (typeof outcome === "string") {
      this.state = outcome as S; // a string outcome is one of the states
      return this.state;
    }
    if (outcome === null || outcome instanceof Illegal) {
      throw this.error(IllegalSend, "send", frame, outcome);
    }
    return this.state;
  }

  /**
   * Apply a received frame: the new state, or IGNORE when the spec says so.
   *
   * Throws UnexpectedFrame when the peer broke the machine's rules.
   */
  receive(frame: object): S | Ignore {
    const outcome = this.lookup(this.receiveTable, frame);
    if (typeof outcome === "string") {
      this.state = outcome as S; // a string outcome is one of the states
      return this.state;
    }
    if (outcome === null || outcome instanceof Illegal) {
      throw this.error(UnexpectedFrame, "receive", frame, outcome);
    }
    return outcome;
  }

  /** Whether `send(frame)` would succeed, without changing anything. */
  allowsSend(frame: object): boolean {
    const outcome = this.lookup(this.sendTable, frame);
    return outcome !== null && !(outcome instanceof Illegal);
  }

  private lookup(table: Table<S>, frame: object): Outcome<S> | null {
    const byKey = table.get(this.state) ?? (NO_ROWS as StateRows<S>);
    const rows = byKey.get(frame.constructor as FrameClass);
    if (rows !== undefined) {
      for (const [guard, outcome] of rows) {
        if (guard === null || guard(frame as never)) {
          return outcome;
        }
      }
    }
    const any = byKey.get(ANY);
    if (any !== undefined && any.length > 0) {
      return any[0]![1];
    }
    return null;
  }

  private error<E extends IllegalSend | UnexpectedFrame>(
    kind: new (message: string, fields: { machine: string; role: string; state: string; frame: string; spec: string }) => E,
    verb: string,
    frame: object,
    outcome: Illegal | null,
  ): E {
    const name = frameName(frame);
    const where = `role=${this.role} and state=${this.state} (machine ${this.definition.NAME})`;
    let message: string;
    let spec: string;
    if (outcome === null) {
      message = `can't ${verb} ${name} when ${where}`;
      spec = "";
    } else {
      message = `${outcome.message} (${verb} ${name} when ${where})`;
      spec = outcome.spec;
    }
    return new kind(message, {
      machine: this.definition.NAME,
      role: this.role,
      state: this.state,
      frame: name,
      spec,
    });
  }

  toString(): string {
    return `<${this.constructor.name} role=${this.role} state=${this.state}>`;
  }
}

/** Throw IllegalSend unless every machine allows sending `frame` (nothing moves). */
export function checkAll(frame: object, ...machines: StateMachine<string>[]): void {
  for (const machine of machines) {
    if (!machine.allowsSend(frame)) {
      machine.send(frame); // throws the machine's own IllegalSend, with its row
    }
  }
}

/** Send `frame` through every machine, all or none: checked first, then applied. */
export function sendAll(frame: object, ...machines: StateMachine<string>[]): void {
  checkAll(frame, ...machines);
  for (const machine of machines) {
    machine.send(frame);
  }
}
