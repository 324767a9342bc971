// The one-frame bundle of the tree-shaking check: one frame class, encoded.
import { RequestN } from "@wirestream/generated/rsocket/v1_0";

globalThis.wirestreamOneFrame = new RequestN({ streamId: 1, requestN: 8 }).toBytes();
