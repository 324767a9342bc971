// The TypeScript metadata extensions (@wirestream/rsocket: composite metadata, routing) as
// tests/typescript/test_rsocket_interop.py compares them with Python's metadata module:
//   node tests/typescript/dist/rsocket/metadata_codec.js encode
//     prints {name: hex} for fixed values;
//   node tests/typescript/dist/rsocket/metadata_codec.js decode HEX
//     prints the composite entries of HEX (and the routes in them), or the error's name.

import {
  decodeComposite,
  encodeComposite,
  encodeRoute,
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
} else {
  process.stderr.write("usage: metadata_codec.js encode | decode HEX\n");
  process.exit(2);
}
