/** The bytes the engine takes and hands out: views of ordinary (not shared) ArrayBuffers,
 * the type the generated codec's byte fields have, so that they pass to DOM APIs (`Blob`,
 * `crypto.subtle`, `fetch` bodies) and to `postMessage` transfer lists as they are. */
export type Bytes = Uint8Array<ArrayBuffer>;
