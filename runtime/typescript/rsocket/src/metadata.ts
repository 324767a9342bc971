/**
 * RSocket metadata extensions, sans-I/O (twin of runtime/rsocket/metadata.py), from the
 * rsocket/rsocket repository's `Extensions/*.md` (all "incubating, version 0"):
 * - well-known MIME types (`WellKnownMimeTypes.md`): a 7-bit id for common types;
 * - composite metadata (`CompositeMetadata.md`): typed entries in one metadata field,
 *   `message/x.rsocket.composite-metadata.v0`;
 * - routing (`Routing.md`): a list of tags, `message/x.rsocket.routing.v0`;
 * - authentication (`Security/Authentication.md`, `Simple.md`, `Bearer.md`,
 *   `WellKnownAuthTypes.md`): `message/x.rsocket.authentication.v0`;
 * - per-stream data MIME types (`PerStreamDataMimeTypesDefinition.md`):
 *   `message/x.rsocket.mime-type.v0` and `message/x.rsocket.accept-mime-types.v0`.
 *
 * A client that wants a server's router to find "orders.get" sends
 * `metadata: route("orders.get")`; a server reads it with `findRoute(metadata)`. Several
 * entries go in one call:
 * ```ts
 * encodeComposite([[ROUTING, encodeRoute("orders.get")], [AUTHENTICATION, encodeBearerAuth(t)]]);
 * ```
 *
 * As in Python (and rsocket-java/js), a MIME (or authentication) type name is written with
 * its length minus one (names are 1..128 bytes), and a well-known id this table does not
 * define is kept (`reservedId`), not refused. Decoders throw MalformedMetadata leaves,
 * encoders EncodeError.
 */
import type { Bytes } from "./bytes.js";
import { DecodeError, EncodeError } from "@wirestream/runtime";

export const COMPOSITE_METADATA = "message/x.rsocket.composite-metadata.v0";
export const ROUTING = "message/x.rsocket.routing.v0";
export const MAX_TYPE_NAME_LENGTH = 128;
export const MAX_ENTRY_LENGTH = 0xffffff;
export const MAX_TAG_LENGTH = 0xff;

/** WellKnownMimeTypes.md "Mappings": id -> MIME type (ids 0x29..0x79 are reserved). */
export const WELL_KNOWN_MIME_TYPES: ReadonlyMap<number, string> = new Map([
  [0x00, "application/avro"],
  [0x01, "application/cbor"],
  [0x02, "application/graphql"],
  [0x03, "application/gzip"],
  [0x04, "application/javascript"],
  [0x05, "application/json"],
  [0x06, "application/octet-stream"],
  [0x07, "application/pdf"],
  [0x08, "application/vnd.apache.thrift.binary"],
  [0x09, "application/vnd.google.protobuf"],
  [0x0a, "application/xml"],
  [0x0b, "application/zip"],
  [0x0c, "audio/aac"],
  [0x0d, "audio/mp3"],
  [0x0e, "audio/mp4"],
  [0x0f, "audio/mpeg3"],
  [0x10, "audio/mpeg"],
  [0x11, "audio/ogg"],
  [0x12, "audio/opus"],
  [0x13, "audio/vorbis"],
  [0x14, "image/bmp"],
  [0x15, "image/gif"],
  [0x16, "image/heic-sequence"],
  [0x17, "image/heic"],
  [0x18, "image/heif-sequence"],
  [0x19, "image/heif"],
  [0x1a, "image/jpeg"],
  [0x1b, "image/png"],
  [0x1c, "image/tiff"],
  [0x1d, "multipart/mixed"],
  [0x1e, "text/css"],
  [0x1f, "text/csv"],
  [0x20, "text/html"],
  [0x21, "text/plain"],
  [0x22, "text/xml"],
  [0x23, "video/H264"],
  [0x24, "video/H265"],
  [0x25, "video/VP8"],
  [0x26, "application/x-hessian"],
  [0x27, "application/x-java-object"],
  [0x28, "application/cloudevents+json"],
  [0x7a, "message/x.rsocket.mime-type.v0"],
  [0x7b, "message/x.rsocket.accept-mime-types.v0"],
  [0x7c, "message/x.rsocket.authentication.v0"],
  [0x7d, "message/x.rsocket.tracing-zipkin.v0"],
  [0x7e, "message/x.rsocket.routing.v0"],
  [0x7f, "message/x.rsocket.composite-metadata.v0"],
]);
/** MIME type -> id (exact, case-sensitive match, as rsocket-java's `fromString`). */
export const WELL_KNOWN_MIME_IDS: ReadonlyMap<string, number> = new Map(
  [...WELL_KNOWN_MIME_TYPES].map(([id, name]) => [name, id]),
);

export const APPLICATION_CBOR = "application/cbor";
export const APPLICATION_JSON = "application/json";
export const APPLICATION_OCTET_STREAM = "application/octet-stream";
export const APPLICATION_PROTOBUF = "application/vnd.google.protobuf";
export const TEXT_PLAIN = "text/plain";
export const DATA_MIME_TYPE = "message/x.rsocket.mime-type.v0";
export const ACCEPT_MIME_TYPES = "message/x.rsocket.accept-mime-types.v0";
export const AUTHENTICATION = "message/x.rsocket.authentication.v0";
export const TRACING_ZIPKIN = "message/x.rsocket.tracing-zipkin.v0";

/** Security/WellKnownAuthTypes.md "Mappings" (`simple` replaced the earlier `basic`). */
export const WELL_KNOWN_AUTH_TYPES: ReadonlyMap<number, string> = new Map([
  [0x00, "simple"],
  [0x01, "bearer"],
]);
export const WELL_KNOWN_AUTH_IDS: ReadonlyMap<string, number> = new Map(
  [...WELL_KNOWN_AUTH_TYPES].map(([id, name]) => [name, id]),
);
export const AUTH_SIMPLE = "simple";
export const AUTH_BEARER = "bearer";
/** Simple.md "Username Length: (16 bits = max value 2^16-1 = 65535)" (rsocket/rsocket#292
 * widened it from 8 bits; rsocket-java#938 and rsocket-py follow). */
export const MAX_USERNAME_LENGTH = 0xffff;

/** The M (or A) flag: "a well known value represented by a unique integer". */
const WELL_KNOWN_FLAG = 0x80;
const ID_OR_LENGTH_MASK = 0x7f;

/** Metadata declared as an extension whose bytes break that extension's layout. */
export class MalformedMetadata extends DecodeError {
  override name = "MalformedMetadata";
}

/** A length field (or the field itself) runs past the end of the metadata. */
export class MetadataTruncated extends MalformedMetadata {
  override name = "MetadataTruncated";
  readonly needed: number;

  constructor(message: string, needed: number) {
    super(message);
    this.needed = needed;
  }
}

/** Bytes follow a value the extension defines as the whole payload (the one MIME type of
 * `message/x.rsocket.mime-type.v0`). */
export class MetadataTrailingBytes extends MalformedMetadata {
  override name = "MetadataTrailingBytes";
}

/** A MIME type or authentication type name is not US-ASCII, or is null terminated
 * ("This SHOULD be a US-ASCII string ... The string MUST NOT be null terminated"). */
export class InvalidMimeTypeName extends MalformedMetadata {
  override name = "InvalidMimeTypeName";
}

/** A routing tag, username, password or bearer token is not UTF-8, or is null terminated. */
export class InvalidMetadataText extends MalformedMetadata {
  override name = "InvalidMetadataText";
}

/** One entry of composite metadata; `reservedId`: a well-known id no table defines. */
export interface MetadataEntry {
  readonly mimeType: string;
  readonly content: Bytes;
  readonly reservedId?: number | null;
}

/** The name given to a well-known id that no table here defines (`"unknown/<id>"`); the
 * id itself is kept in `reservedId`. */
export function reservedTypeName(typeId: number): string {
  return `unknown/${typeId}`;
}

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// --- the "M/A | ID/Len | name" header shared by composite, auth and data MIME types ---

/** One byte for a well-known type (flag set), else length - 1 and the US-ASCII name. */
function encodeType(type: string | number, ids: ReadonlyMap<string, number>, what: string): Bytes {
  if (typeof type === "number") {
    if (!Number.isInteger(type) || type < 0 || type > ID_OR_LENGTH_MASK) {
      throw new EncodeError(`${what} id ${type} is not a 7-bit well-known id (0..127)`);
    }
    return Uint8Array.of(WELL_KNOWN_FLAG | type);
  }
  const known = ids.get(type);
  if (known !== undefined) {
    return Uint8Array.of(WELL_KNOWN_FLAG | known);
  }
  if (!/^[\x00-\x7f]*$/.test(type)) {
    throw new EncodeError(`${what} ${JSON.stringify(type)} is not US-ASCII`);
  }
  if (type.length < 1 || type.length > MAX_TYPE_NAME_LENGTH) {
    throw new EncodeError(
      `${what} ${JSON.stringify(type)} is ${type.length} bytes; ` +
        `a name is 1..${MAX_TYPE_NAME_LENGTH} bytes`,
    );
  }
  if (type.endsWith("\0")) {
    throw new EncodeError(
      `${what} ${JSON.stringify(type)} is null terminated (the spec says MUST NOT)`,
    );
  }
  const out = new Uint8Array(type.length + 1);
  out[0] = type.length - 1;
  out.set(utf8.encode(type), 1);
  return out;
}

/** The header at `offset`: [name, reserved id or null, offset after it]. */
function decodeType(
  data: Bytes,
  offset: number,
  names: ReadonlyMap<number, string>,
  what: string,
): [string, number | null, number] {
  if (offset >= data.length) {
    throw new MetadataTruncated(`${what}: no ID/Len byte at offset ${offset}`, offset + 1);
  }
  const first = data[offset]!;
  if ((first & WELL_KNOWN_FLAG) !== 0) {
    const id = first & ID_OR_LENGTH_MASK;
    const known = names.get(id);
    return known === undefined ? [reservedTypeName(id), id, offset + 1] : [known, null, offset + 1];
  }
  const start = offset + 1;
  const end = start + (first & ID_OR_LENGTH_MASK) + 1; // length - 1 on the wire
  if (end > data.length) {
    throw new MetadataTruncated(
      `${what}: name of ${end - start} bytes at offset ${start} runs past the end ` +
        `(${data.length} bytes)`,
      end,
    );
  }
  const raw = data.subarray(start, end);
  if (raw.some((byte) => byte > 0x7f)) {
    throw new InvalidMimeTypeName(`${what} at offset ${start} is not US-ASCII`);
  }
  const name = String.fromCharCode(...raw);
  if (name.endsWith("\0")) {
    throw new InvalidMimeTypeName(`${what} at offset ${start} is null terminated`);
  }
  return [name, null, end];
}

/** A string's UTF-8 bytes; refused when it cannot be UTF-8 (a lone surrogate, which
 * TextEncoder would silently replace) or is null terminated ("MUST NOT"). */
function encodeText(value: string, what: string): Bytes {
  if (LONE_SURROGATE.test(value)) {
    throw new EncodeError(`${what} ${JSON.stringify(value)} cannot be encoded as UTF-8`);
  }
  if (value.endsWith("\0")) {
    throw new EncodeError(
      `${what} ${JSON.stringify(value)} is null terminated (the spec says MUST NOT)`,
    );
  }
  return utf8.encode(value);
}

function decodeText(raw: Bytes, what: string): string {
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    throw new InvalidMetadataText(`${what} is not UTF-8`);
  }
  if (text.endsWith("\0")) {
    throw new InvalidMetadataText(`${what} ${JSON.stringify(text)} is null terminated`);
  }
  return text;
}

function concat(parts: readonly Bytes[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** Composite metadata holding `entries` in order: [mimeType, content] or decoded entries. */
export function encodeComposite(
  entries: Iterable<readonly [string | number, Bytes] | MetadataEntry>,
): Bytes {
  const parts: Bytes[] = [];
  for (const entry of entries) {
    let mime: string | number;
    let content: Bytes;
    if ("mimeType" in entry) {
      mime = entry.reservedId ?? entry.mimeType;
      content = entry.content;
    } else {
      [mime, content] = entry;
    }
    if (content.length > MAX_ENTRY_LENGTH) {
      throw new EncodeError(
        `composite metadata entry ${JSON.stringify(mime)} holds ${content.length} bytes; ` +
          `the 24-bit Metadata Length allows ${MAX_ENTRY_LENGTH}`,
      );
    }
    parts.push(encodeType(mime, WELL_KNOWN_MIME_IDS, "MIME type"));
    parts.push(
      Uint8Array.of(content.length >>> 16, (content.length >>> 8) & 0xff, content.length & 0xff),
    );
    parts.push(content);
  }
  return concat(parts);
}

/** The entries of composite metadata, in order ("The order ... MUST be preserved"). */
export function decodeComposite(data: Bytes): MetadataEntry[] {
  const entries: MetadataEntry[] = [];
  let offset = 0;
  while (offset < data.length) {
    const [mimeType, reservedId, after] = decodeType(
      data,
      offset,
      WELL_KNOWN_MIME_TYPES,
      "composite metadata MIME type",
    );
    offset = after;
    if (offset + 3 > data.length) {
      throw new MetadataTruncated(
        `composite metadata entry ${JSON.stringify(mimeType)}: the 24-bit Metadata Length at ` +
          `offset ${offset} is cut off (${data.length - offset} of 3 bytes)`,
        offset + 3,
      );
    }
    const length = (data[offset]! << 16) | (data[offset + 1]! << 8) | data[offset + 2]!;
    offset += 3;
    const end = offset + length;
    if (end > data.length) {
      throw new MetadataTruncated(
        `composite metadata entry ${JSON.stringify(mimeType)}: ${length} content bytes at ` +
          `offset ${offset} run past the end (${data.length} bytes)`,
        end,
      );
    }
    entries.push({ mimeType, content: data.subarray(offset, end), reservedId });
    offset = end;
  }
  return entries;
}

/** Routing metadata (a ROUTING entry's content): each tag as a 1-byte length and UTF-8. */
export function encodeRoute(...tags: string[]): Bytes {
  const parts: Bytes[] = [];
  for (const tag of tags) {
    const raw = encodeText(tag, "routing tag");
    if (raw.length < 1 || raw.length > MAX_TAG_LENGTH) {
      throw new EncodeError(
        `routing tag ${JSON.stringify(tag)} is ${raw.length} bytes in UTF-8; ` +
          `a tag is 1..${MAX_TAG_LENGTH}`,
      );
    }
    parts.push(Uint8Array.of(raw.length), raw);
  }
  return concat(parts);
}

/** The tags of routing metadata ("Any number of complete tag payloads"). */
export function decodeRoute(data: Bytes): string[] {
  const tags: string[] = [];
  let offset = 0;
  while (offset < data.length) {
    const start = offset + 1;
    const end = start + data[offset]!;
    if (end > data.length) {
      throw new MetadataTruncated(
        `routing tag of ${data[offset]} bytes at offset ${start} runs past the end ` +
          `(${data.length} bytes)`,
        end,
      );
    }
    const tag = decodeText(data.subarray(start, end), `routing tag at offset ${start}`);
    tags.push(tag);
    offset = end;
  }
  return tags;
}

/** Composite metadata with one routing entry (send it with COMPOSITE_METADATA as the
 * connection's metadata MIME type). */
export function route(...tags: string[]): Bytes {
  if (tags.length === 0) {
    throw new EncodeError("route() needs at least one tag");
  }
  return encodeComposite([[ROUTING, encodeRoute(...tags)]]);
}

/** Every tag of every routing entry of composite metadata, in order. */
export function routesOf(metadata: Bytes | readonly MetadataEntry[]): string[] {
  const entries = metadata instanceof Uint8Array ? decodeComposite(metadata) : metadata;
  return entries
    .filter((entry) => entry.mimeType === ROUTING && (entry.reservedId ?? null) === null)
    .flatMap((entry) => decodeRoute(entry.content));
}

/** The first route of composite metadata, or null. */
export function findRoute(metadata: Bytes | readonly MetadataEntry[]): string | null {
  return routesOf(metadata)[0] ?? null;
}

// --- authentication ------------------------------------------------------------------

/** `simple` authentication (Security/Simple.md): username and password (a property that
 * logging and JSON leave out, as `token` and `payload` below). */
export interface SimpleAuth {
  readonly kind: "simple";
  readonly username: string;
  readonly password: string;
}

/** `bearer` authentication (Security/Bearer.md): one token. */
export interface BearerAuth {
  readonly kind: "bearer";
  readonly token: string;
}

/** An authentication type this module does not decode: a custom type name, or a
 * well-known id the table does not define (`reservedId` set, `authType` then
 * `reservedTypeName(id)`); `payload` is left undecoded. */
export interface UnknownAuth {
  readonly kind: "unknown";
  readonly authType: string;
  readonly payload: Bytes;
  readonly reservedId: number | null;
}

export type Authentication = SimpleAuth | BearerAuth | UnknownAuth;

/** `fields` plus `key`, a property read as any other but not listed: console.log,
 * util.inspect and JSON.stringify leave credentials out (Python keeps them out of repr). */
function withUnlisted<T extends object, K extends string, V>(
  fields: T,
  key: K,
  value: V,
): T & Readonly<Record<K, V>> {
  return Object.defineProperty(fields, key, { value, enumerable: false }) as T &
    Readonly<Record<K, V>>;
}

/** Authentication metadata (an AUTHENTICATION entry's content) of any type: a well-known
 * type (name or id) as one byte with the A flag set, another as its length-prefixed
 * US-ASCII name, then the payload. */
export function encodeAuth(authType: string | number, payload: Bytes): Bytes {
  return concat([encodeType(authType, WELL_KNOWN_AUTH_IDS, "authentication type"), payload]);
}

/** `simple` authentication metadata: 16-bit username length, username, password. */
export function encodeSimpleAuth(username: string, password: string): Bytes {
  const user = encodeText(username, "username");
  if (user.length > MAX_USERNAME_LENGTH) {
    throw new EncodeError(
      `username is ${user.length} bytes in UTF-8; Username Length allows ${MAX_USERNAME_LENGTH}`,
    );
  }
  const secret = encodeText(password, "password");
  return encodeAuth(
    AUTH_SIMPLE,
    concat([Uint8Array.of(user.length >>> 8, user.length & 0xff), user, secret]),
  );
}

/** `bearer` authentication metadata: the UTF-8 token. */
export function encodeBearerAuth(token: string): Bytes {
  return encodeAuth(AUTH_BEARER, encodeText(token, "bearer token"));
}

/** Authentication metadata: simple, bearer or unknown. A well-known type spelled as its
 * name ("simple") decodes like its id. */
export function decodeAuth(data: Bytes): Authentication {
  const [authType, reservedId, offset] = decodeType(
    data,
    0,
    WELL_KNOWN_AUTH_TYPES,
    "authentication type",
  );
  const payload = data.subarray(offset);
  if (reservedId === null && authType === AUTH_SIMPLE) {
    if (payload.length < 2) {
      throw new MetadataTruncated(
        "simple authentication: the 16-bit Username Length is cut off " +
          `(${payload.length} of 2 bytes)`,
        offset + 2,
      );
    }
    const end = 2 + ((payload[0]! << 8) | payload[1]!);
    if (end > payload.length) {
      throw new MetadataTruncated(
        `simple authentication: a username of ${end - 2} bytes runs past the end ` +
          `(${payload.length - 2} bytes follow the length)`,
        offset + end,
      );
    }
    const username = decodeText(payload.subarray(2, end), "username");
    const password = decodeText(payload.subarray(end), "password");
    return withUnlisted({ kind: "simple" as const, username }, "password", password);
  }
  if (reservedId === null && authType === AUTH_BEARER) {
    const token = decodeText(payload, "bearer token");
    return withUnlisted({ kind: "bearer" as const }, "token", token);
  }
  return withUnlisted({ kind: "unknown" as const, authType, reservedId }, "payload", payload);
}

// --- per-stream data MIME types ------------------------------------------------------

/** `message/x.rsocket.mime-type.v0` content: the one data MIME type of this stream
 * (well-known by name or id as one byte, others as a length-prefixed name). */
export function encodeDataMimeType(mimeType: string | number): Bytes {
  return encodeType(mimeType, WELL_KNOWN_MIME_IDS, "data MIME type");
}

/** The data MIME type `message/x.rsocket.mime-type.v0` content declares (a reserved
 * well-known id gives `reservedTypeName(id)`). */
export function decodeDataMimeType(data: Bytes): string {
  const [mimeType, , end] = decodeType(data, 0, WELL_KNOWN_MIME_TYPES, "data MIME type");
  if (end !== data.length) {
    throw new MetadataTrailingBytes(
      `data MIME type ${JSON.stringify(mimeType)} is followed by ${data.length - end} more ` +
        "bytes; message/x.rsocket.mime-type.v0 holds exactly one MIME type",
    );
  }
  return mimeType;
}

/** `message/x.rsocket.accept-mime-types.v0` content: the data MIME types the requester
 * accepts, in order. */
export function encodeAcceptMimeTypes(mimeTypes: Iterable<string | number>): Bytes {
  return concat(
    [...mimeTypes].map((m) => encodeType(m, WELL_KNOWN_MIME_IDS, "accepted MIME type")),
  );
}

/** The accepted data MIME types of `message/x.rsocket.accept-mime-types.v0`. */
export function decodeAcceptMimeTypes(data: Bytes): string[] {
  const mimeTypes: string[] = [];
  let offset = 0;
  while (offset < data.length) {
    const what = "accepted MIME type";
    const [mimeType, , after] = decodeType(data, offset, WELL_KNOWN_MIME_TYPES, what);
    mimeTypes.push(mimeType);
    offset = after;
  }
  return mimeTypes;
}
