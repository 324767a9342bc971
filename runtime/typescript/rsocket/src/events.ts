/**
 * What the sans-I/O engine reports (twin of runtime/rsocket/events.py), as a tagged union:
 * `receiveData` and `handleTimer` return them, the async peer maps them to what
 * applications await.
 */

import type { Bytes } from "./bytes.js";

/** The four interaction models (Python's InteractionModel values). */
export type InteractionModel =
  | "request_response"
  | "fire_and_forget"
  | "request_stream"
  | "request_channel";

/** The SETUP in force: ours on a client, the accepted one on a server. */
export interface SetupInfo {
  readonly majorVersion: number;
  readonly minorVersion: number;
  /** Milliseconds between the client's KEEPALIVE frames. */
  readonly keepaliveInterval: number;
  /** Milliseconds of silence after which the peer is assumed dead. */
  readonly maxLifetime: number;
  readonly metadataMimeType: string;
  readonly dataMimeType: string;
  readonly metadata: Bytes | null;
  readonly data: Bytes;
  readonly lease: boolean;
  readonly resumeToken: Bytes | null;
}

export type Event =
  | { readonly type: "ConnectionEstablished"; readonly setup: SetupInfo }
  | {
      readonly type: "ConnectionRejected";
      readonly errorCode: number;
      readonly message: Bytes;
      readonly byPeer: boolean;
    }
  | {
      readonly type: "ConnectionClosing";
      readonly errorCode: number;
      readonly message: Bytes;
      readonly byPeer: boolean;
    }
  | {
      readonly type: "ConnectionClosed";
      /** null: the transport ended (EOF), no ERROR frame. */
      readonly errorCode: number | null;
      readonly message: Bytes;
      readonly byPeer: boolean;
      readonly graceful: boolean;
      /** The transport ended under a resumable session: its streams wait for a RESUME. */
      readonly resumable: boolean;
    }
  | {
      /** RESUME_OK came (client): `replayed` frames were queued again from `position`. */
      readonly type: "ConnectionResumed";
      readonly position: number;
      readonly replayed: number;
    }
  | { readonly type: "ConnectionDead"; readonly silentFor: number }
  | {
      readonly type: "RequestReceived";
      readonly streamId: number;
      readonly model: InteractionModel;
      readonly data: Bytes;
      readonly metadata: Bytes | null;
      readonly initialN: number;
      readonly complete: boolean;
    }
  | {
      readonly type: "PayloadReceived";
      readonly streamId: number;
      readonly data: Bytes;
      readonly metadata: Bytes | null;
      readonly complete: boolean;
    }
  | { readonly type: "StreamCompleted"; readonly streamId: number }
  | {
      readonly type: "ErrorReceived";
      readonly streamId: number;
      readonly errorCode: number;
      readonly data: Bytes;
    }
  | { readonly type: "StreamCanceled"; readonly streamId: number }
  | { readonly type: "RequestNReceived"; readonly streamId: number; readonly n: number }
  | {
      readonly type: "StreamAborted";
      readonly streamId: number;
      readonly errorCode: number;
      readonly why: string;
    }
  | { readonly type: "MetadataPushReceived"; readonly metadata: Bytes }
  | {
      readonly type: "LeaseReceived";
      readonly ttl: number;
      readonly numberOfRequests: number;
      readonly metadata: Bytes | null;
    }
  | { readonly type: "KeepaliveReceived"; readonly data: Bytes; readonly respond: boolean }
  | {
      /** An EXT frame of an extended type the application declared (`extensions`). */
      readonly type: "ExtReceived";
      readonly streamId: number;
      readonly extendedType: number;
      readonly data: Bytes;
      readonly metadata: Bytes | null;
      readonly ignore: boolean;
    };

/** One event type by its tag. */
export type EventOf<T extends Event["type"]> = Extract<Event, { type: T }>;
