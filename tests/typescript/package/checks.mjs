// What a consumer of the packed packages checks (tests/typescript/test_package.py): run by
// Node as ESM (consume.mjs), through require() (consume.cjs) and, bundled by esbuild
// --minify, in headless Chromium (page.mjs). Every name here comes from the tarballs.
//
// The names in messages must survive minifying: they are the frame classes' static
// NAME (Python's class names), not constructor.name.
export function checks(codec, machines, runtime) {
  const out = {};
  const { RequestN, ErrorFrame, decode, encode, encodeOwned, ErrorCode } = codec;
  const requestN = new RequestN({ streamId: 5, requestN: 64 });
  out.requestN = Array.from(requestN.toBytes());
  const error = new ErrorFrame({ streamId: 0, errorCode: ErrorCode.INVALID_SETUP, data: new TextEncoder().encode("no") });
  const errorBytes = encodeOwned(error);
  out.errorOwned = errorBytes.buffer.byteLength === errorBytes.length && errorBytes.byteOffset === 0;
  const back = decode(errorBytes);
  out.decoded = { name: back.constructor.NAME, isErrorFrame: back instanceof ErrorFrame, code: back.errorCode, data: new TextDecoder().decode(back.data) };
  out.errorIsNotGlobal = ErrorFrame !== globalThis.Error && !(back instanceof globalThis.Error);
  const requestNBytes = requestN.toBytes(); // a fixed size: one byte more is left over
  const trailing = new Uint8Array(requestNBytes.length + 1);
  trailing.set(requestNBytes);
  try {
    decode(trailing);
    out.trailing = "no error";
  } catch (e) {
    out.trailing = { name: e.name, message: e.message, isTrailingBytes: e instanceof runtime.TrailingBytes };
  }
  const client = new machines.ConnectionMachine("client");
  try {
    client.send(requestN);
    out.illegalSend = "no error";
  } catch (e) {
    out.illegalSend = { name: e.name, frame: e.frame, message: e.message };
  }
  const server = new machines.ConnectionMachine("server");
  try {
    server.receive(error);
    out.unexpected = "no error";
  } catch (e) {
    out.unexpected = { name: e.name, frame: e.frame, message: e.message };
  }
  out.encodeIsPooled = encode(requestN).buffer.byteLength > 1024;
  return out;
}
