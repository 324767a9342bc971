// Byte fields type-check against DOM APIs (tsc --strict, lib DOM, TypeScript 5.9, where a
// plain Uint8Array is Uint8Array<ArrayBufferLike> and BufferSource wants ArrayBuffer).
import { Payload, decode, encode } from "@wirestream/generated/rsocket/v1_0";

export async function useBytes(url: string): Promise<string> {
  const frame = decode(encode(new Payload({ streamId: 1, data: new TextEncoder().encode("x") })));
  if (!(frame instanceof Payload)) throw new TypeError("not a Payload");
  const blob = new Blob([frame.data]);
  const digest = await crypto.subtle.digest("SHA-256", frame.data);
  await fetch(url, { method: "POST", body: frame.toBytes() });
  const fromSocket = new Uint8Array(await blob.arrayBuffer());
  return `${decode(fromSocket).constructor.name} ${digest.byteLength}`;
}
