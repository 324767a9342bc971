/**
 * What the sans-I/O engine reports (twin of runtime/rsocket/events.py), as a tagged union:
 * `receiveData` and `handleTimer` return them, the async peer maps them to what
 * applications await.
 */

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
  readonly metadata: Uint8Array<ArrayBuffer> | null;
  readonly data: Uint8Array<ArrayBuffer>;
  readonly lease: boolean;
  readonly resumeToken: Uint8Array<ArrayBuffer> | null;
}

export type Event =
  | { readonly type: "ConnectionEstablished"; readonly setup: SetupInfo }
  | {
      readonly type: "ConnectionRejected";
      readonly errorCode: number;
      readonly message: Uint8Array<ArrayBuffer>;
      readonly byPeer: boolean;
    }
  | {
      readonly type: "ConnectionClosing";
      readonly errorCode: number;
      readonly message: Uint8Array<ArrayBuffer>;
      readonly byPeer: boolean;
    }
  | {
      readonly type: "ConnectionClosed";
      /** null: the transport ended (EOF), no ERROR frame. */
      readonly errorCode: number | null;
      readonly message: Uint8Array<ArrayBuffer>;
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
      readonly data: Uint8Array<ArrayBuffer>;
      readonly metadata: Uint8Array<ArrayBuffer> | null;
      readonly initialN: number;
      readonly complete: boolean;
    }
  | {
      readonly type: "PayloadReceived";
      readonly streamId: number;
      readonly data: Uint8Array<ArrayBuffer>;
      readonly metadata: Uint8Array<ArrayBuffer> | null;
      readonly complete: boolean;
    }
  | { readonly type: "StreamCompleted"; readonly streamId: number }
  | {
      readonly type: "ErrorReceived";
      readonly streamId: number;
      readonly errorCode: number;
      readonly data: Uint8Array<ArrayBuffer>;
    }
  | { readonly type: "StreamCanceled"; readonly streamId: number }
  | { readonly type: "RequestNReceived"; readonly streamId: number; readonly n: number }
  | {
      readonly type: "StreamAborted";
      readonly streamId: number;
      readonly errorCode: number;
      readonly why: string;
    }
  | { readonly type: "MetadataPushReceived"; readonly metadata: Uint8Array<ArrayBuffer> }
  | {
      readonly type: "LeaseReceived";
      readonly ttl: number;
      readonly numberOfRequests: number;
      readonly metadata: Uint8Array<ArrayBuffer> | null;
    }
  | { readonly type: "KeepaliveReceived"; readonly data: Uint8Array<ArrayBuffer>; readonly respond: boolean }
  | {
      /** An EXT frame of an extended type the application declared (`extensions`). */
      readonly type: "ExtReceived";
      readonly streamId: number;
      readonly extendedType: number;
      readonly data: Uint8Array<ArrayBuffer>;
      readonly metadata: Uint8Array<ArrayBuffer> | null;
      readonly ignore: boolean;
    };

/** One event type by its tag. */
export type EventOf<T extends Event["type"]> = Extract<Event, { type: T }>;
