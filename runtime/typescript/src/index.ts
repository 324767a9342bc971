/**
 * @wirestream/runtime: what every wirestream-generated TypeScript codec and machine
 * module imports (the twin of the Python package's runtime/_support.py, errors.py and
 * machine.py). Hand-written; the generated code calls exactly these names.
 */

export * from "./errors.js";
export * from "./wire.js";
export * from "./stream.js";
export {
  MpExt,
  MpFloat,
  mpBigInt,
  mpBool,
  mpBytes,
  mpInt,
  mpList,
  mpPack,
  mpStr,
  mpUnpack,
  pythonType,
} from "./msgpack.js";
export * from "./machine.js";
