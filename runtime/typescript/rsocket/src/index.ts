/**
 * @wirestream/rsocket: an RSocket 1.0 client and server on the generated codec and
 * machines (the TypeScript twin of wirestream.runtime.rsocket). Browser-safe: this entry
 * uses no Node API; TCP and the Node WebSocket server are in `@wirestream/rsocket/node`.
 */

export type { Bytes } from "./bytes.js";
export * from "./engine.js";
export * from "./errors.js";
export type * from "./events.js";
export * from "./fragmentation.js";
export { KeepaliveTimer } from "./keepalive.js";
export * from "./streams.js";
export * from "./transport.js";
export * from "./peer.js";
export * from "./connect.js";
export * from "./metadata.js";
