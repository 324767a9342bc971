// The TypeScript metadata extensions (@wirestream/rsocket: composite metadata, routing,
// authentication, per-stream data MIME types) as tests/typescript/test_rsocket_interop.py
// compares them with Python's metadata module:
//   node tests/typescript/dist/rsocket/metadata_codec.js encode
//     prints {name: hex} for fixed values;
//   node tests/typescript/dist/rsocket/metadata_codec.js decode HEX
//     prints the composite entries of HEX (and the routes in them), or the error's name;
//   node tests/typescript/dist/rsocket/metadata_codec.js auth|mime|accept HEX
//     prints what decodeAuth, decodeDataMimeType or decodeAcceptMimeTypes reads in HEX,
//     or the error's name.

import {
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
  route,
  routesOf,
} from "@wirestream/rsocket";

const enc = new TextEncoder();
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");
const [mode, input] = process.argv.slice(2);

if (mode === "encode") {
  const out = {
    route: hex(route("orders.get")),
    route_two_tags: hex(route("a", "bé")),
    encode_route: hex(encodeRoute("x", "y".repeat(255))),
    composite: hex(
      encodeComposite([
        ["application/json", enc.encode("{}")],
        ["text/x-custom", enc.encode("abc")],
        [0x7a, new Uint8Array(0)],
        ["message/x.rsocket.routing.v0", encodeRoute("r")],
      ]),
    ),
    simple_auth: hex(encodeSimpleAuth("alice", "pässwörd")),
    bearer_auth: hex(encodeBearerAuth("tøken.😀")),
    custom_auth: hex(encodeAuth("x-hmac", Uint8Array.of(1, 2, 255))),
    reserved_auth: hex(encodeAuth(5, Uint8Array.of(9))),
    data_mime: hex(encodeDataMimeType("application/json")),
    data_mime_custom: hex(encodeDataMimeType("application/x.custom+cbor")),
    accept_mimes: hex(encodeAcceptMimeTypes(["text/plain", "x/y", 0x50])),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
} else if (mode === "decode" && input !== undefined) {
  try {
    const entries = decodeComposite(Buffer.from(input, "hex"));
    const shown = entries.map((e) => [e.mimeType, hex(e.content), e.reservedId ?? null]);
    process.stdout.write(JSON.stringify({ entries: shown, routes: routesOf(entries) }) + "\n");
  } catch (error) {
    process.stdout.write(JSON.stringify({ error: (error as Error).name }) + "\n");
  }
} else if ((mode === "auth" || mode === "mime" || mode === "accept") && input !== undefined) {
  const data = Buffer.from(input, "hex");
  try {
    if (mode === "auth") {
      const auth = decodeAuth(data);
      // the credentials are unlisted properties (JSON leaves them out): named here
      const shown =
        auth.kind === "simple"
          ? { ...auth, password: auth.password }
          : auth.kind === "bearer"
            ? { ...auth, token: auth.token }
            : { ...auth, payload: hex(auth.payload) };
      process.stdout.write(JSON.stringify(shown) + "\n");
    } else {
      const value = mode === "mime" ? decodeDataMimeType(data) : decodeAcceptMimeTypes(data);
      process.stdout.write(JSON.stringify({ value }) + "\n");
    }
  } catch (error) {
    process.stdout.write(JSON.stringify({ error: (error as Error).name }) + "\n");
  }
} else {
  process.stderr.write("usage: metadata_codec.js encode | (decode|auth|mime|accept) HEX\n");
  process.exit(2);
}
