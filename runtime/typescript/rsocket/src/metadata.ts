/**
 * RSocket metadata extensions, sans-I/O (twin of runtime/rsocket/metadata.py): well-known
 * MIME types, composite metadata (`message/x.rsocket.composite-metadata.v0`) and routing
 * (`message/x.rsocket.routing.v0`). A client that wants a server's router to find
 * "orders.get" sends `metadata: route("orders.get")`; a server reads it with
 * `findRoute(metadata)`.
 *
 * As in Python (and rsocket-java/js), a MIME type name is written with its length minus one
 * (names are 1..128 bytes), and a well-known id this table does not define is kept
 * (`reservedId`), not refused. Decoders throw MalformedMetadata leaves, encoders EncodeError.
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
const WELL_KNOWN_MIME_IDS: ReadonlyMap<string, number> = new Map(
  [...WELL_KNOWN_MIME_TYPES].map(([id, name]) => [name, id]),
);
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

/** A MIME type name is not US-ASCII, or is null terminated. */
export class InvalidMimeTypeName extends MalformedMetadata {
  override name = "InvalidMimeTypeName";
}

/** A routing tag is not UTF-8, or is null terminated. */
export class InvalidMetadataText extends MalformedMetadata {
  override name = "InvalidMetadataText";
}

/** One entry of composite metadata; `reservedId`: a well-known id no table defines. */
export interface MetadataEntry {
  readonly mimeType: string;
  readonly content: Bytes;
  readonly reservedId?: number | null;
}

/** The name given to a well-known id that no table here defines. */
export function reservedTypeName(typeId: number): string {
  return `unknown/${typeId}`;
}

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function encodeType(type: string | number): Bytes {
  if (typeof type === "number") {
    if (!Number.isInteger(type) || type < 0 || type > ID_OR_LENGTH_MASK) {
      throw new EncodeError(`MIME type id ${type} is not a 7-bit well-known id (0..127)`);
    }
    return Uint8Array.of(WELL_KNOWN_FLAG | type);
  }
  const known = WELL_KNOWN_MIME_IDS.get(type);
  if (known !== undefined) {
    return Uint8Array.of(WELL_KNOWN_FLAG | known);
  }
  if (!/^[\x00-\x7f]*$/.test(type)) {
    throw new EncodeError(`MIME type ${JSON.stringify(type)} is not US-ASCII`);
  }
  if (type.length < 1 || type.length > MAX_TYPE_NAME_LENGTH) {
    throw new EncodeError(
      `MIME type ${JSON.stringify(type)} is ${type.length} bytes; ` +
        `a name is 1..${MAX_TYPE_NAME_LENGTH} bytes`,
    );
  }
  if (type.endsWith("\0")) {
    throw new EncodeError(
      `MIME type ${JSON.stringify(type)} is null terminated (the spec says MUST NOT)`,
    );
  }
  const out = new Uint8Array(type.length + 1);
  out[0] = type.length - 1;
  out.set(utf8.encode(type), 1);
  return out;
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
    parts.push(encodeType(mime));
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
    const first = data[offset]!;
    let mimeType: string;
    let reservedId: number | null = null;
    if ((first & WELL_KNOWN_FLAG) !== 0) {
      const id = first & ID_OR_LENGTH_MASK;
      const known = WELL_KNOWN_MIME_TYPES.get(id);
      if (known === undefined) {
        reservedId = id;
      }
      mimeType = known ?? reservedTypeName(id);
      offset += 1;
    } else {
      const start = offset + 1;
      const end = start + (first & ID_OR_LENGTH_MASK) + 1; // length - 1 on the wire
      if (end > data.length) {
        throw new MetadataTruncated(
          `composite metadata MIME type: name of ${end - start} bytes at offset ${start} ` +
            `runs past the end (${data.length} bytes)`,
          end,
        );
      }
      const raw = data.subarray(start, end);
      if (raw.some((byte) => byte > 0x7f)) {
        throw new InvalidMimeTypeName(
          `composite metadata MIME type at offset ${start} is not US-ASCII`,
        );
      }
      mimeType = String.fromCharCode(...raw);
      if (mimeType.endsWith("\0")) {
        throw new InvalidMimeTypeName(
          `composite metadata MIME type at offset ${start} is null terminated`,
        );
      }
      offset = end;
    }
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
    const raw = utf8.encode(tag);
    if (raw.length < 1 || raw.length > MAX_TAG_LENGTH) {
      throw new EncodeError(
        `routing tag ${JSON.stringify(tag)} is ${raw.length} bytes in UTF-8; ` +
          `a tag is 1..${MAX_TAG_LENGTH}`,
      );
    }
    if (tag.endsWith("\0")) {
      throw new EncodeError(
        `routing tag ${JSON.stringify(tag)} is null terminated (the spec says MUST NOT)`,
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
    let tag: string;
    try {
      tag = strictUtf8.decode(data.subarray(start, end));
    } catch {
      throw new InvalidMetadataText(`routing tag at offset ${start} is not UTF-8`);
    }
    if (tag.endsWith("\0")) {
      throw new InvalidMetadataText(`routing tag at offset ${start} is null terminated`);
    }
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
