"""The sans-I/O RSocket engine: one connection, either role, either protocol version.

Shape (as h2 / aioquic): ``receive_data(bytes) -> list[Event]``, command methods that
queue frames (``request_stream(...) -> stream_id``, ``send_next``, ``request``,
``cancel`` ...), ``data_to_send() -> bytes``, and time passed in: ``handle_timer(now)``,
``get_timer()`` and an optional ``now=`` on the calls whose outcome depends on time
(lease TTLs, keepalive deadlines).  No sockets, no clocks, no asyncio.

Every frame sent or received goes through the generated machines of the chosen version
(``generated/rsocket/<version>/machines.py``): ``connection`` for stream 0, the REQUEST_*
frames that open streams, and everything while the connection is being set up; the
model's lifecycle machine for a stream's frames; ``fragments`` for F-flag sequences.
Changing a row in the IDL changes what this engine accepts.  What the tables cannot say
is here: request-n credit (``wirestream.runtime.flow.Window``), lease budgets, keepalive, stream-id
allocation, fragmenting and reassembly, implied positions and resumption.

Peer violations: a stream-level one ends the stream with the frame the stream's machine
allows (ERROR, else CANCEL) and reports ``StreamAborted``; a connection-level one queues
ERROR[INVALID_SETUP] (first frame) or ERROR[CONNECTION_ERROR], closes, and raises the
``RemoteProtocolError`` from ``receive_data`` (``data_to_send()`` still yields the ERROR).
Frames the spec says to ignore are dropped and counted in ``ignored_frames``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from wirestream.runtime.errors import (
    DecodeError,
    FrameTooLarge,
    PeerExceededDemand,
    ProtocolError,
    RemoteProtocolError,
    UnknownFrameType,
)
from wirestream.runtime.flow import RSOCKET_MAX_N, Window
from wirestream.runtime.machine import IGNORE, StateMachine
from wirestream.runtime.rsocket.errors import (
    NoLease,
    ResumeNotAllowed,
    ResumePositionLost,
    UnknownStream,
)
from wirestream.runtime.rsocket.events import (
    ConnectionClosed,
    ConnectionDead,
    ConnectionEstablished,
    ConnectionRejected,
    ConnectionResumed,
    ErrorReceived,
    Event,
    InteractionModel,
    KeepaliveReceived,
    LeaseReceived,
    MetadataPushReceived,
    PayloadReceived,
    RequestNReceived,
    RequestReceived,
    SetupInfo,
    StreamAborted,
    StreamCanceled,
    StreamCompleted,
)
from wirestream.runtime.rsocket.fragmentation import MIN_MTU, Reassembly, split
from wirestream.runtime.rsocket.resume import ResumeLog
from wirestream.runtime.rsocket.streams import Stream, StreamIds
from wirestream.runtime.rsocket.versions import Version, get_version

__all__ = ["RSocketConnection", "ResumableSession", "SetupPolicy", "ResumeLookup"]

Frame = Any  # a frame of the chosen version's generated codec

LEASE_CAP: Final = (1 << 32) - 1  # 0.2 counts are u32, 1.0 counts 31-bit
HEADER_SIZE: Final = 6  # stream id + type/flags
FIXED_PART_MAX: Final = 16  # header + the largest fixed request field, rounded up

SetupPolicy = Callable[[SetupInfo], "tuple[int, str] | None"]
"""Server hook: None accepts the SETUP, ``(error_code, message)`` rejects it."""


@dataclass(eq=False)
class ResumableSession:
    """What survives a transport loss when resumption was negotiated: streams, stream
    ids, implied positions and the retransmit buffer.  The objects are shared with the
    engine that produced it, so it always reflects that engine's latest state."""

    version: Version
    role: str
    token: bytes
    setup: SetupInfo
    streams: dict[int, Stream]
    ids: StreamIds
    log: ResumeLog


ResumeLookup = Callable[[bytes], "ResumableSession | None"]
"""Server hook: the session a RESUME's token names, or None (unknown token)."""


class _Lease:
    """One LEASE: a fresh request budget (``wirestream.runtime.flow.Window``) and its expiry.
    "The last received LEASE frame overrides all previous LEASE frame values"."""

    __slots__ = ("window", "expires_at")

    def __init__(self, window: Window, expires_at: float) -> None:
        self.window = window
        self.expires_at = expires_at

    def allows(self, now: float) -> bool:
        # "When a LEASE expires due to time, the value of the Number of Requests that a
        # Requester may make is implicitly 0."
        return now < self.expires_at and self.window.can_consume(1)


class RSocketConnection:
    """One RSocket connection (``role`` "client" or "server"; ``version`` "1.0" or "0.2").

    Client options describe its SETUP (times in milliseconds, as on the wire); server
    options are the ``setup_policy`` and ``resume_lookup`` hooks.  ``mtu``: largest frame
    we send (without the 3-byte length prefix); larger messages are fragmented.
    ``max_reassembly_size`` bounds a fragmented message we receive, ``max_frame_size``
    one frame, ``resume_buffer_size`` the retransmit buffer.
    """

    def __init__(
        self,
        role: str = "client",
        version: str = "1.0",
        *,
        keepalive_interval: int = 20_000,
        max_lifetime: int = 90_000,
        metadata_mime_type: str = "application/octet-stream",
        data_mime_type: str = "application/octet-stream",
        setup_metadata: bytes | None = None,
        setup_data: bytes = b"",
        lease: bool = False,
        resume_token: bytes | None = None,
        strict: bool = False,
        setup_policy: SetupPolicy | None = None,
        resume_lookup: ResumeLookup | None = None,
        mtu: int | None = None,
        max_frame_size: int | None = None,
        max_reassembly_size: int = 16 * 1024 * 1024,
        resume_buffer_size: int = 1024 * 1024,
        reuse_stream_ids: bool = False,
    ) -> None:
        if role not in ("client", "server"):
            raise ValueError(f"role must be 'client' or 'server', not {role!r}")
        v = get_version(version)
        self.version = v
        self.role = role
        self._codec = v.codec
        codec = v.codec
        if mtu is not None and mtu < MIN_MTU:
            raise ValueError(f"mtu must be at least {MIN_MTU}")
        self._mtu: int = min(mtu or codec.MAX_FRAME_SIZE, codec.MAX_FRAME_SIZE)
        self._decoder = codec.StreamDecoder(max_frame_size or codec.MAX_FRAME_SIZE)
        self._frame_bytes = codec.frame_bytes
        self._max_reassembly_size = max_reassembly_size
        self._resume_buffer_size = resume_buffer_size
        self._setup_policy = setup_policy
        self._resume_lookup = resume_lookup

        machines = v.machines
        self._conn: StateMachine[Any] = machines.ConnectionMachine(role)
        self._CS = machines.ConnectionState
        self._FS = machines.FragmentsState
        self._fragments_machine = machines.FragmentsMachine
        self._stream_machines = v.stream_machines
        # While `new` (server) or `setup_sent` (client) the connection machine sees every
        # frame (IDL M1).
        self._watch_all = frozenset({self._CS.NEW, self._CS.SETUP_SENT})

        self._request_models: dict[type, InteractionModel] = v.request_models
        self._payload: Any = v.payload
        self._fragmentable = frozenset({v.payload, *self._request_models})
        self._position_frames = v.position_frames
        self._stream_handlers: dict[type, Callable[[Stream, Frame, list[Event]], None]] = {
            v.payload: self._on_message,
            codec.RequestChannel: self._on_message,  # 0.2 channel messages (IDL M4)
            codec.Error: self._on_stream_error,
            codec.Cancel: self._on_cancel,
            codec.RequestN: self._on_request_n,
        }
        self._connection_handlers: dict[type, Callable[[Frame, Any, list[Event]], None]] = {
            codec.Setup: self._on_setup,
            codec.Resume: self._on_resume,
            codec.ResumeOk: self._on_resume_ok,
            codec.Keepalive: self._on_keepalive,
            codec.Lease: self._on_lease,
            codec.MetadataPush: self._on_metadata_push,
            codec.Error: self._on_connection_error,
        }

        self._streams: dict[int, Stream] = {}
        # Streams aborted while a fragmented message was arriving: its `fragments`
        # machine, until the last fragment has gone by.
        self._discarding: dict[int, StateMachine[Any]] = {}
        self._ids = StreamIds(1 if role == "client" else 2, reuse=reuse_stream_ids)
        self._out_connection: list[bytes] = []  # stream 0 goes first (QoS, "Frames with
        self._out_streams: list[bytes] = []  # Stream ID 0 SHOULD have a higher priority")
        self._now = 0.0

        self._setup: SetupInfo | None = None
        if role == "client":
            self._setup = SetupInfo(v.major_version, v.minor_version, keepalive_interval,
                                    max_lifetime, metadata_mime_type, data_mime_type,
                                    setup_metadata, setup_data, lease, resume_token,
                                    strict)  # fmt: skip
        self._lease_required = False
        self._peer_lease: _Lease | None = None  # what our requester may send
        self._our_lease: _Lease | None = None  # what the peer's requester may send
        self._log: ResumeLog | None = None
        self._resume_token: bytes | None = None
        self._resume_forbidden = False
        self._next_keepalive: float | None = None
        self._last_keepalive = 0.0
        self._dead_reported = False
        self.ignored_frames = 0
        """Frames dropped because the spec says to ignore them (a debugging counter)."""

    # ================================================================== public state

    @property
    def state(self) -> Any:
        """The ``connection`` machine's state (a ``ConnectionState`` of the version)."""
        return self._conn.state

    @property
    def closed(self) -> bool:
        return bool(self._conn.terminated)

    @property
    def setup(self) -> SetupInfo | None:
        """The SETUP in force (ours on the client; the accepted one on the server)."""
        return self._setup

    def stream_state(self, stream_id: int) -> Any:
        """The lifecycle machine state of an open stream (``UnknownStream`` otherwise)."""
        return self._get(stream_id).machine.state

    @property
    def open_streams(self) -> Mapping[int, Stream]:
        return self._streams

    # ================================================================== output / time

    def data_to_send(self) -> bytes:
        """Everything queued since the last call (stream-0 frames first)."""
        if not self._out_streams and not self._out_connection:
            return b""
        out = b"".join(self._out_connection) + b"".join(self._out_streams)
        self._out_connection.clear()
        self._out_streams.clear()
        return out

    def get_timer(self) -> float | None:
        """When ``handle_timer`` should next be called (None: no deadline)."""
        if self._conn.terminated or self._setup is None:
            return None
        deadlines = []
        if self._next_keepalive is not None:
            deadlines.append(self._next_keepalive)
        lifetime = self._setup.max_lifetime
        if lifetime and not self._dead_reported and self._lifetime_started:
            deadlines.append(self._last_keepalive + lifetime / 1000)
        return min(deadlines) if deadlines else None

    @property
    def _lifetime_started(self) -> bool:
        return self._conn.state is not self._CS.NEW

    def handle_timer(self, now: float) -> list[Event]:
        """Send the client's periodic KEEPALIVE and report a silent peer.

        KEEPALIVE Frame: "KEEPALIVE frames MUST be initiated by the client and sent
        periodically with the (R)espond flag set."  SETUP Frame: "Max Lifetime: Time (in
        milliseconds) that a client will allow a server to not respond to a KEEPALIVE
        before it is assumed to be dead."
        """
        self._now = now
        events: list[Event] = []
        setup = self._setup
        if self._conn.terminated or setup is None:
            return events
        if self._next_keepalive is not None and now >= self._next_keepalive:
            keepalive = self._codec.Keepalive(respond=True,
                                              last_received_position=self._position())  # fmt: skip
            if self._conn.allows_send(keepalive):
                self._conn.send(keepalive)
                self._emit(keepalive)
            interval = setup.keepalive_interval / 1000
            self._next_keepalive += interval
            if self._next_keepalive <= now:
                self._next_keepalive = now + interval
        if setup.max_lifetime and not self._dead_reported and self._lifetime_started:
            silent = now - self._last_keepalive
            if silent >= setup.max_lifetime / 1000:
                self._dead_reported = True
                events.append(ConnectionDead(silent))
        return events

    def _position(self) -> int:
        # KEEPALIVE "Last Received Position ... (optional. Set to all 0s when not supported.)"
        return self._log.received_position if self._log is not None else 0

    # ================================================================== connection commands

    def connect(self, now: float = 0.0) -> None:
        """(client) Queue the SETUP: "Immediately upon successful connection, the client
        MUST send either a SETUP or RESUME frame with Stream ID of 0"."""
        if self.role != "client" or self._setup is None:
            raise ValueError("only a client sends SETUP")
        self._now = now
        setup = self._setup
        frame = self.version.setup(setup)
        self._conn.send(frame)
        self._emit(frame)
        if setup.resume_token is not None:
            self._log = ResumeLog(self._resume_buffer_size)
            self._resume_token = setup.resume_token
        self._lease_required = setup.lease
        self._start_keepalive(now)

    def _start_keepalive(self, now: float) -> None:
        assert self._setup is not None
        self._last_keepalive = now
        self._dead_reported = False
        interval = self._setup.keepalive_interval
        if self.role == "client" and interval:
            self._next_keepalive = now + interval / 1000

    def send_keepalive(self, data: bytes = b"") -> None:
        """KEEPALIVE with R (the server "MAY" initiate one "upon application request")."""
        frame = self._codec.Keepalive(respond=True, last_received_position=self._position(),
                                      data=data)  # fmt: skip
        self._conn.send(frame)
        self._emit(frame)

    def metadata_push(self, metadata: bytes) -> None:
        frame = self._codec.MetadataPush(metadata=metadata)
        self._conn.send(frame)
        self._emit(frame)

    def send_lease(self, ttl: int, number_of_requests: int, metadata: bytes | None = None,
                   *, now: float | None = None) -> None:  # fmt: skip
        """Grant the peer's requester ``number_of_requests`` requests for ``ttl`` ms.
        Requests beyond it are answered with ERROR[REJECTED] ("A Responder that receives
        a REQUEST that it can not honor due to LEASE restrictions MUST respond with an
        ERROR[REJECTED]")."""
        if now is not None:
            self._now = now
        frame = self._codec.Lease(ttl=ttl, number_of_requests=number_of_requests,
                                  metadata=metadata)  # fmt: skip
        self._conn.send(frame)
        self._emit(frame)
        budget = Window.inbound_window(cap=LEASE_CAP, initial=number_of_requests)
        self._our_lease = _Lease(budget, self._now + ttl / 1000)

    def close(self, error_code: int | None = None, message: bytes = b"") -> list[Event]:
        """End the connection with ERROR on stream 0 (CONNECTION_ERROR by default)."""
        code = self.version.connection_error if error_code is None else error_code
        frame = self.version.error(0, code, message)
        self._conn.send(frame)
        self._emit(frame)
        events: list[Event] = []
        self._terminate_streams(events, code, "connection closed")
        events.append(ConnectionClosed(code, message, by_peer=False))
        return events

    # ================================================================== requests

    def request_response(self, data: bytes, metadata: bytes | None = None, *,
                         now: float | None = None) -> int:  # fmt: skip
        frame = self._codec.RequestResponse(data=data, metadata=metadata)
        return self._open(InteractionModel.REQUEST_RESPONSE, frame, None, None, now)

    def fire_and_forget(self, data: bytes, metadata: bytes | None = None, *,
                        now: float | None = None) -> int:  # fmt: skip
        frame = self._codec.RequestFnf(data=data, metadata=metadata)
        return self._open(InteractionModel.FIRE_AND_FORGET, frame, None, None, now)

    def request_stream(self, data: bytes, metadata: bytes | None = None, *,
                       initial_n: int = RSOCKET_MAX_N, now: float | None = None) -> int:  # fmt: skip
        """Open a stream and grant the responder ``initial_n`` items (1..2^31-1)."""
        inbound = Window.inbound_window(cap=RSOCKET_MAX_N)
        inbound.grant(initial_n)  # InvalidGrant unless 1 <= n <= 2^31-1
        frame = self._codec.RequestStream(data=data, metadata=metadata,
                                          initial_request_n=initial_n)  # fmt: skip
        return self._open(InteractionModel.REQUEST_STREAM, frame, inbound, None, now)

    def request_channel(self, data: bytes, metadata: bytes | None = None, *,
                        initial_n: int = RSOCKET_MAX_N, complete: bool = False,
                        now: float | None = None) -> int:  # fmt: skip
        """Open a channel whose first message is (data, metadata); we may send more once
        the responder grants REQUEST_N ("A requester MUST not send PAYLOAD frames after
        the REQUEST_CHANNEL frame until the responder sends a REQUEST_N frame")."""
        inbound = Window.inbound_window(cap=RSOCKET_MAX_N)
        inbound.grant(initial_n)  # InvalidGrant unless 1 <= n <= 2^31-1
        outbound = Window.outbound_window(cap=RSOCKET_MAX_N)
        frame = self.version.request_channel(0, initial_n, data, metadata, complete)
        return self._open(InteractionModel.REQUEST_CHANNEL, frame, inbound, outbound, now)

    def _open(self, model: InteractionModel, frame: Frame, inbound: Window | None,
              outbound: Window | None, now: float | None) -> int:  # fmt: skip
        if now is not None:
            self._now = now
        self._conn.send(frame)  # IllegalSend before SETUP, while awaiting a LEASE, after close
        lease = self._peer_lease
        if self._lease_required and (lease is None or not lease.allows(self._now)):
            raise NoLease(
                "no valid LEASE: 'The Requester MUST NOT send more than Number of Requests"
                " specified in the LEASE frame within the Time-To-Live value in the LEASE.'"
            )
        stream_id = self._ids.allocate(self._streams)
        frame.stream_id = stream_id
        stream = Stream(stream_id, model, "requester", self._stream_machines[model]("requester"))
        state = stream.machine.send(frame)
        if self._lease_required and lease is not None:
            lease.window.consume(1)  # "a request counts against a single lease count"
        stream.inbound = inbound
        stream.outbound = outbound
        if state not in stream.machine.TERMINAL:
            self._streams[stream_id] = stream
        self._transmit(stream, frame, opening=True)
        return stream_id

    # ================================================================== stream commands

    def send_next(self, stream_id: int, data: bytes, metadata: bytes | None = None,
                  complete: bool = False) -> None:  # fmt: skip
        """Send one item (PAYLOAD with N, plus C when ``complete``).  A request-response
        answer must have ``complete=True``.  Needs credit from the peer (``DemandExceeded``
        otherwise)."""
        stream = self._get(stream_id)
        frame = self.version.message(stream_id, stream.is_channel_requester, data, metadata,
                                     True, complete)  # fmt: skip
        outbound = stream.outbound
        if outbound is not None and not outbound.can_consume(1):
            outbound.consume(1)  # raises DemandExceeded: the peer has not requested more
        state = stream.machine.send(frame)
        if outbound is not None:
            outbound.consume(1)
        self._transmit(stream, frame)
        if state in stream.machine.TERMINAL:
            self._forget(stream)

    def send_complete(self, stream_id: int) -> None:
        """Complete our side of the stream (PAYLOAD with only C)."""
        stream = self._get(stream_id)
        frame = self.version.message(stream_id, stream.is_channel_requester, b"", None,
                                     False, True)  # fmt: skip
        state = stream.machine.send(frame)
        self._transmit(stream, frame)
        if state in stream.machine.TERMINAL:
            self._forget(stream)

    def send_error(self, stream_id: int, error_code: int, message: bytes | str = b"") -> None:
        """End the stream with ERROR (an application-range code; the machine refuses the
        connection and setup codes: "Stream ID MUST be > 0" codes only)."""
        stream = self._get(stream_id)
        data = message.encode() if isinstance(message, str) else message
        frame = self.version.error(stream_id, error_code, data)
        stream.machine.send(frame)
        self._emit(frame)
        self._forget(stream)

    def request(self, stream_id: int, n: int) -> None:
        """Grant the peer ``n`` more items (REQUEST_N); credits add up, capped at 2^31-1."""
        stream = self._get(stream_id)
        frame = self._codec.RequestN(stream_id=stream_id, request_n=n)
        stream.machine.send(frame)  # IllegalSend where the model has no REQUEST_N
        inbound = stream.inbound
        assert inbound is not None, "every model that allows REQUEST_N has an inbound window"
        inbound.grant(n)  # InvalidGrant unless 1 <= n <= 2^31-1
        self._emit(frame)

    def cancel(self, stream_id: int) -> None:
        """(requester) Cancel the stream: "Upon sending a CANCEL, the stream is terminated
        on the Requester"."""
        stream = self._get(stream_id)
        frame = self._codec.Cancel(stream_id=stream_id)
        stream.machine.send(frame)
        self._emit(frame)
        self._forget(stream)

    def _get(self, stream_id: int) -> Stream:
        try:
            return self._streams[stream_id]
        except KeyError:
            raise UnknownStream(f"stream {stream_id} is not open") from None

    def _forget(self, stream: Stream) -> None:
        self._streams.pop(stream.stream_id, None)

    # ================================================================== sending frames

    def _emit(self, frame: Frame) -> None:
        wire: bytes = self._frame_bytes(frame)
        if frame.stream_id == 0:
            self._out_connection.append(wire)
            return
        self._out_streams.append(wire)
        log = self._log
        if log is not None and type(frame) in self._position_frames:
            log.sent(wire, len(wire) - 3)

    def _transmit(self, stream: Stream, frame: Frame, opening: bool = False) -> None:
        """Queue a whole message, fragmented when it exceeds the MTU (the ``fragments``
        machine checks each fragment)."""
        metadata = frame.metadata
        body = len(frame.data) + (len(metadata) + 3 if metadata is not None else 0)
        if body + FIXED_PART_MAX <= self._mtu:
            self._emit(frame)
            return
        encoded_size = len(frame.to_bytes())
        if encoded_size <= self._mtu:
            self._emit(frame)
            return
        first_overhead = encoded_size - body
        next_overhead = HEADER_SIZE if self.version.continuation_is_payload else first_overhead
        pieces = split(metadata, frame.data, first_overhead, next_overhead, self._mtu)
        machine = stream.send_fragments
        if machine is None:
            initial = self._FS.IDLE if opening else self._FS.WHOLE
            machine = stream.send_fragments = self._fragments_machine("sender", initial)
        complete = bool(getattr(frame, "complete", False))
        is_request = type(frame) in self._request_models
        last_index = len(pieces) - 1
        for index, (piece_metadata, piece_data) in enumerate(pieces):
            last = index == last_index
            if index == 0 or not self.version.continuation_is_payload:
                piece = copy.copy(frame)
            else:
                # 1.0: "followed by a sequence of PAYLOAD frames"; N on every fragment of
                # a request (a PAYLOAD needs N or C), C only on the last (IDL M3).
                piece = self._payload(stream_id=frame.stream_id,
                                      next=True if is_request else frame.next)  # fmt: skip
            piece.metadata = piece_metadata
            piece.data = piece_data
            piece.follows = not last
            if hasattr(piece, "complete"):
                piece.complete = complete and last
            machine.send(piece)
            self._emit(piece)

    # ================================================================== receiving

    def receive_data(self, data: bytes, now: float | None = None) -> list[Event]:
        """Feed bytes from the transport (b"" = EOF); the events they cause."""
        if now is not None:
            self._now = now
        events: list[Event] = []
        if not data:
            self._on_eof(events)
            return events
        if self._conn.terminated:
            return events  # "all frames will be ignored"
        chunk = data
        while True:
            failure: DecodeError | None = None
            try:
                frames = self._decoder.feed(chunk)
            except DecodeError as error:  # frames decoded before the bad one come first
                frames, failure = error.frames, error
            try:
                for frame in frames:
                    self._handle_frame(frame, events)
            except RemoteProtocolError as error:
                error.events = events
                self._fail_connection(error)
            if failure is None:
                return events
            if self.version.lenient_decode and not isinstance(
                failure, (UnknownFrameType, FrameTooLarge)
            ):
                # 0.2, Metadata Optional Header: "If Metadata Length is greater than this
                # value, the entire frame MUST be ignored." (and R02-47: n <= 0 dropped)
                self.ignored_frames += 1
                chunk = b""
                continue
            # 1.0: a malformed frame (its I flag is not visible once the decoder failed)
            # or an unknown type with I clear: "MAY send an ERROR[CONNECTION_ERROR] frame
            # and close the underlying transport connection".
            failure.events = events
            self._fail_connection(failure)

    def _fail_connection(self, error: ProtocolError) -> None:
        """A connection-level peer violation: queue the prescribed ERROR, close, raise."""
        server_first_frame = self.role == "server" and self._conn.state is self._CS.NEW
        code = self.version.invalid_setup if server_first_frame else self.version.connection_error
        frame = self.version.error(0, code, str(error).encode()[:1024])
        if self._conn.allows_send(frame):
            self._conn.send(frame)
            self._emit(frame)
        else:  # e.g. a resuming client "must NOT send any other frame types"
            self._conn.state = self._CS.CLOSED
        if isinstance(error, ResumePositionLost):
            self._resume_forbidden = True  # "MUST NOT attempt resumption again"
        self._streams.clear()
        raise error

    def _handle_frame(self, frame: Frame, events: list[Event]) -> None:
        stream_id = frame.stream_id
        kind = type(frame)
        if stream_id == 0:
            self._on_connection_frame(frame, events)
            return
        log = self._log
        if log is not None and kind in self._position_frames:
            log.received(len(frame.to_bytes()))
        if self._conn.state in self._watch_all and kind not in self._request_models:
            self._connection_receive(frame, events)
        stream = self._streams.get(stream_id)
        if stream is None:
            if stream_id in self._discarding:
                self._discard_fragment(stream_id, frame)
                return
            model = self._request_models.get(kind)
            if model is None:
                # "Receiving a CANCEL / an ERROR / a PAYLOAD on an unknown Stream ID ...
                # MUST be ignored" (and every other frame, "not accounted for").
                self.ignored_frames += 1
                return
            self._on_new_request(frame, model, events)
            return
        if kind in self._fragmentable and (frame.follows or stream.reassembly is not None):
            frame = self._receive_fragment(stream, frame, events)
            if frame is None:
                return
            machine = stream.machine
            if (
                type(frame) in self._request_models
                and machine.state is machine.INITIAL[stream.role]
            ):  # the last fragment of the request that opened the stream
                self._deliver_request(stream, frame, events)
                return
        handler = self._stream_handlers.get(type(frame))
        if handler is not None:
            handler(stream, frame, events)
        elif stream.machine.receive(frame) is IGNORE:  # e.g. a REQUEST_* on a live id
            self.ignored_frames += 1

    def _connection_receive(self, frame: Frame, events: list[Event]) -> Any:
        """Pass a frame through the connection machine; report establishment."""
        before = self._conn.state
        outcome = self._conn.receive(frame)
        if outcome is IGNORE:
            return outcome
        established = self._CS.ESTABLISHED
        if outcome is established and before in (self._CS.SETUP_SENT, self._CS.AWAITING_LEASE):
            if self.role == "client":
                assert self._setup is not None
                events.append(ConnectionEstablished(self._setup))
        return outcome

    # --- stream 0 ---------------------------------------------------------------

    def _on_connection_frame(self, frame: Frame, events: list[Event]) -> None:
        before = self._conn.state
        if self._connection_receive(frame, events) is IGNORE:
            self.ignored_frames += 1
            return
        handler = self._connection_handlers.get(type(frame))
        if handler is not None:
            handler(frame, before, events)

    def _on_setup(self, frame: Frame, before: Any, events: list[Event]) -> None:
        """(server) Accept or reject the SETUP the machine let through."""
        v = self.version
        info = v.setup_info(frame)
        rejection: tuple[int, str] | None = None
        if info.major_version != v.major_version or info.minor_version > v.minor_version:
            # "It is up to a server to accept clients of lower versions than what it supports."
            rejection = (v.unsupported_setup, f"version {info.major_version}."
                                              f"{info.minor_version} is not supported")  # fmt: skip
        elif info.resume_token is not None and self._resume_lookup is None:
            # "A server that receives a SETUP frame that has (R)esume Enabled set, but does
            # not support resuming operation, MUST reject the SETUP with an ERROR[REJECTED_SETUP]."
            rejection = (v.resume_unsupported_setup, "resumption is not supported")
        elif self._setup_policy is not None:
            rejection = self._setup_policy(info)
        if rejection is not None:
            code, reason = rejection
            message = reason.encode()
            error = v.error(0, code, message)
            self._conn.send(error)
            self._emit(error)
            events.append(ConnectionRejected(code, message, by_peer=False))
            return
        self._setup = info
        self._lease_required = info.lease
        if info.resume_token is not None:
            self._log = ResumeLog(self._resume_buffer_size)
            self._resume_token = info.resume_token
        self._start_keepalive(self._now)
        events.append(ConnectionEstablished(info))

    def _on_keepalive(self, frame: Frame, before: Any, events: list[Event]) -> None:
        # "Reception of a KEEPALIVE by a server indicates to the server that the client is
        # alive" (and the other way round).
        self._last_keepalive = self._now
        self._dead_reported = False
        if self._log is not None and frame.last_received_position:
            self._log.trim(frame.last_received_position)
        if frame.respond:
            # "Reception of a KEEPALIVE frame with the (R)espond flag set MUST cause a client
            # or server to send back a KEEPALIVE with the (R)espond flag NOT set. The data in
            # the received KEEPALIVE MUST be echoed back in the generated KEEPALIVE."
            echo = self._codec.Keepalive(respond=False, last_received_position=self._position(),
                                         data=frame.data)  # fmt: skip
            if self._conn.allows_send(echo):
                self._conn.send(echo)
                self._emit(echo)
        events.append(KeepaliveReceived(frame.data, frame.respond, frame.last_received_position))

    def _on_lease(self, frame: Frame, before: Any, events: list[Event]) -> None:
        # "The last received LEASE frame overrides all previous LEASE frame values."
        # Time-To-Live is measured from reception.
        budget = Window.outbound_window(cap=LEASE_CAP, initial=frame.number_of_requests)
        self._peer_lease = _Lease(budget, self._now + frame.ttl / 1000)
        events.append(LeaseReceived(frame.ttl, frame.number_of_requests, frame.metadata))

    def _on_metadata_push(self, frame: Frame, before: Any, events: list[Event]) -> None:
        events.append(MetadataPushReceived(frame.metadata))

    def _on_connection_error(self, frame: Frame, before: Any, events: list[Event]) -> None:
        """ERROR on stream 0 that the machine says ends the connection."""
        v = self.version
        code, message = int(frame.error_code), frame.data
        resuming = before is self._CS.RESUMING
        if code == v.resume_no_retry and (resuming or v.resume_no_retry == v.connection_close):
            # 1.0: "On receiving an ERROR[REJECTED_RESUME] frame, the client MUST NOT attempt
            # resumption again"; 0.2: CONNECTION_ERROR_NO_RETRY "May NOT be resumed".
            self._resume_forbidden = True
        setup_phase = before in (self._CS.SETUP_SENT, self._CS.AWAITING_LEASE)
        if resuming or (self.role == "client" and setup_phase and code in v.setup_error_codes):
            events.append(ConnectionRejected(code, message, by_peer=True))
        else:
            events.append(ConnectionClosed(code, message, by_peer=True))
        self._terminate_streams(events, code, "connection error from the peer")

    def _terminate_streams(self, events: list[Event], code: int, why: str) -> None:
        # "This period of time is bound by ... the lifetime of the underlying transport
        # protocol connection".
        for stream_id in list(self._streams):
            events.append(StreamAborted(stream_id, code, why))
        self._streams.clear()

    def _on_eof(self, events: list[Event]) -> None:
        if self._conn.terminated:
            return
        resumable = (
            self._log is not None
            and not self._resume_forbidden
            and (self._conn.state in (self._CS.ESTABLISHED, self._CS.RESUMING))
        )
        # EOF is not a frame, so no table row: the transport's end ends the machine.
        self._conn.state = self._CS.CLOSED
        if not resumable:
            self._terminate_streams(events, self.version.connection_error, "transport closed")
        events.append(ConnectionClosed(None, b"", by_peer=True, resumable=resumable))

    # --- resumption ------------------------------------------------------------------

    def session(self) -> ResumableSession:
        """The resumable state of this connection (to resume it on a new transport)."""
        if self._log is None or self._resume_token is None or self._setup is None:
            raise ResumeNotAllowed("resumption was not negotiated (SETUP without a token)")
        if self._resume_forbidden:
            raise ResumeNotAllowed("the server said never to resume this session")
        return ResumableSession(self.version, self.role, self._resume_token, self._setup,
                                self._streams, self._ids, self._log)  # fmt: skip

    @classmethod
    def resume(cls, session: ResumableSession, now: float = 0.0,
               **options: Any) -> RSocketConnection:  # fmt: skip
        """(client) A new engine for a new transport that continues ``session`` by sending
        RESUME: "The RESUME Identification Token MUST be the token used in the original
        SETUP frame. The RESUME Last Received Position field MUST be the last successfully
        received implied position from the server." """
        if session.role != "client":
            raise ValueError("only a client resumes; a server is given sessions by its lookup")
        setup = session.setup
        engine = cls("client", session.version.name, keepalive_interval=setup.keepalive_interval,
                     max_lifetime=setup.max_lifetime, metadata_mime_type=setup.metadata_mime_type,
                     data_mime_type=setup.data_mime_type, lease=setup.lease,
                     resume_token=session.token, **options)  # fmt: skip
        engine._adopt(session)
        engine._now = now
        log = session.log
        frame = session.version.resume(session.token, log.received_position, log.first_available)
        engine._conn.send(frame)
        engine._emit(frame)
        engine._start_keepalive(now)
        return engine

    def _adopt(self, session: ResumableSession) -> None:
        if session.version is not self.version:
            raise ValueError("a session continues in the protocol version it started in")
        self._setup = session.setup
        self._streams = session.streams
        self._ids = session.ids
        self._log = session.log
        self._resume_token = session.token
        self._lease_required = session.setup.lease
        # "Leasing semantics are NOT assumed to carry over from previous connections when
        # resuming. LEASE semantics MUST be restarted upon a new connection by sending a
        # LEASE frame from the server."
        self._peer_lease = self._our_lease = None

    def _on_resume(self, frame: Frame, before: Any, events: list[Event]) -> None:
        """(server) Answer RESUME with RESUME_OK (and retransmit) or ERROR."""
        v = self.version
        client_last, client_first, same_version = v.resume_fields(frame)
        session = None if self._resume_lookup is None else self._resume_lookup(frame.resume_token)
        replay: list[bytes] | None = None
        if self._resume_lookup is None:
            reason = "resumption is not supported"
        elif session is None:
            reason = (
                "unknown resume token"  # "If not identified, then the server MUST send an ERROR"
            )
        elif not same_version or session.version is not v or session.role != "server":
            reason = "a session resumes with the version it started with"
        elif client_first is not None and client_first > session.log.received_position:
            # "has the client retained all frames past the server's last-retained position"
            reason = "the client no longer has frames the server has not received"
        else:
            replay = session.log.replay_from(client_last)
            reason = "the server no longer has frames past the client's position"
        if session is None or replay is None:
            message = reason.encode()
            error = v.error(0, v.resume_rejected, message)
            self._conn.send(error)
            self._emit(error)
            events.append(ConnectionRejected(v.resume_rejected, message, by_peer=False))
            return
        self._adopt(session)
        ok = v.resume_ok(session.log.received_position)
        self._conn.send(ok)
        self._emit(ok)
        self._out_streams.extend(replay)
        self._start_keepalive(self._now)
        events.append(ConnectionResumed(client_last, len(replay)))

    def _on_resume_ok(self, frame: Frame, before: Any, events: list[Event]) -> None:
        """(client) "MAY retransmit all ... frames starting at the RESUME_OK Last Received
        Position field value from the server"."""
        assert self._log is not None
        position = self.version.resume_ok_position(frame)
        replay = self._log.replay_from(position)
        if replay is None:
            raise ResumePositionLost(
                f"RESUME_OK position {position} is outside what we retain "
                f"({self._log.first_available}..{self._log.sent_position})"
            )
        self._out_streams.extend(replay)
        events.append(ConnectionResumed(position, len(replay)))

    # --- streams ---------------------------------------------------------------------

    def _on_new_request(self, frame: Frame, model: InteractionModel, events: list[Event]) -> None:
        if self._connection_receive(frame, events) is IGNORE:
            self.ignored_frames += 1
            return
        if not self._ids.is_peer_id(frame.stream_id):
            # A request id of our own parity: no rule covers it; ignore (A15).
            self.ignored_frames += 1
            return
        stream = Stream(frame.stream_id, model, "responder",
                        self._stream_machines[model]("responder"))  # fmt: skip
        self._streams[frame.stream_id] = stream
        if frame.follows:
            stream.receive_fragments = self._fragments_machine("receiver")
            whole = self._receive_fragment(stream, frame, events)
            if whole is None:
                return
            frame = whole
        self._deliver_request(stream, frame, events)

    def _deliver_request(self, stream: Stream, frame: Frame, events: list[Event]) -> None:
        """A whole request: through the stream machine, the lease, then to the app."""
        machine = stream.machine
        if machine.receive(frame) is IGNORE:
            self.ignored_frames += 1
            self._forget(stream)
            return
        if self._lease_required:
            lease = self._our_lease
            if lease is None or not lease.allows(self._now):
                if machine.terminated:  # fire-and-forget: "MAY not be processed"
                    self._forget(stream)
                    return
                self._abort_stream(stream, self.version.rejected, "request exceeds the LEASE",
                                   events, notify=False)  # fmt: skip
                return
            lease.window.consume(1)
        model = stream.model
        n = 0
        if model is InteractionModel.REQUEST_STREAM:
            n = frame.initial_request_n
            stream.outbound = Window.outbound_window(cap=RSOCKET_MAX_N, initial=n)
        elif model is InteractionModel.REQUEST_CHANNEL:
            n = frame.initial_request_n or 0  # 0.2: present only with the N flag
            stream.outbound = Window.outbound_window(cap=RSOCKET_MAX_N, initial=n)
            stream.inbound = Window.inbound_window(cap=RSOCKET_MAX_N)
        events.append(RequestReceived(stream.stream_id, model, frame.data, frame.metadata, n,
                                      bool(getattr(frame, "complete", False))))  # fmt: skip
        if machine.terminated:
            self._forget(stream)

    def _receive_fragment(self, stream: Stream, frame: Frame, events: list[Event]) -> Frame | None:
        """Run a fragment through ``fragments``; the reassembled message once whole."""
        machine = stream.receive_fragments
        if machine is None:
            machine = stream.receive_fragments = self._fragments_machine("receiver",
                                                                         self._FS.WHOLE)  # fmt: skip
        outcome = machine.receive(frame)
        if outcome is IGNORE:
            self.ignored_frames += 1
            return None
        pending = stream.reassembly
        try:
            if outcome is not self._FS.WHOLE:  # more fragments follow
                if pending is None:
                    pending = stream.reassembly = (Reassembly(self._max_reassembly_size), frame)
                pending[0].add(frame.metadata, frame.data)
                return None
            if pending is None:  # a single frame (F with C: "implicitly ignores the F flag")
                return frame
            pending[0].add(frame.metadata, frame.data)
        except RemoteProtocolError as error:
            stream.reassembly = None
            # A request still being reassembled is unknown to the application (IDL M13);
            # the rest of its fragments are dropped by `_discarding`.
            opening = stream.role == "responder" and stream.machine.state is (
                stream.machine.INITIAL["responder"]
            )
            self._abort_stream(stream, self.version.invalid, str(error), events,
                               notify=not opening)  # fmt: skip
            if machine.state is not self._FS.WHOLE:
                self._discarding[stream.stream_id] = machine
            return None
        stream.reassembly = None
        whole = pending[1]
        whole.metadata, whole.data = pending[0].result()
        whole.follows = False
        if hasattr(whole, "complete") and hasattr(frame, "complete"):
            whole.complete = frame.complete  # C of the last fragment (IDL M3)
        if hasattr(whole, "next") and hasattr(frame, "next"):
            whole.next = whole.next or frame.next
        return whole

    def _discard_fragment(self, stream_id: int, frame: Frame) -> None:
        """Drop the remaining fragments of a message whose stream we aborted."""
        machine = self._discarding[stream_id]
        if type(frame) not in self._fragmentable or machine.receive(frame) is self._FS.WHOLE:
            del self._discarding[stream_id]
        self.ignored_frames += 1

    def _on_message(self, stream: Stream, frame: Frame, events: list[Event]) -> None:
        """PAYLOAD (0.2 RESPONSE, or a 0.2 channel requester's REQUEST_CHANNEL)."""
        machine = stream.machine
        if machine.receive(frame) is IGNORE:
            self.ignored_frames += 1
            return
        terminated = machine.terminated
        # "If a PAYLOAD for a REQUEST_RESPONSE is received that does not have a COMPLETE
        # flag set, the implementation MUST assume it is set": the machine ended the stream.
        complete = frame.complete or terminated
        if type(frame) is self._payload:
            carries_item = frame.next
        else:  # 0.2 REQUEST_CHANNEL: an item unless it is an empty frame that only completes
            carries_item = bool(frame.data) or frame.metadata is not None or not frame.complete
        if carries_item:
            inbound = stream.inbound
            if inbound is not None:
                try:
                    inbound.consume(1)
                except PeerExceededDemand as error:
                    # "The Requester and the Responder MUST respect the reactive-streams
                    # semantics": more items than granted is a stream error.
                    self._abort_stream(stream, self.version.invalid, str(error), events)
                    return
            events.append(PayloadReceived(stream.stream_id, frame.data, frame.metadata, complete))
        if complete:
            events.append(StreamCompleted(stream.stream_id))
        if terminated:
            self._forget(stream)

    def _on_stream_error(self, stream: Stream, frame: Frame, events: list[Event]) -> None:
        if stream.machine.receive(frame) is IGNORE:
            self.ignored_frames += 1
            return
        events.append(ErrorReceived(stream.stream_id, int(frame.error_code), frame.data))
        if stream.machine.terminated:
            self._forget(stream)

    def _on_cancel(self, stream: Stream, frame: Frame, events: list[Event]) -> None:
        if stream.machine.receive(frame) is IGNORE:
            self.ignored_frames += 1
            return
        events.append(StreamCanceled(stream.stream_id))
        if stream.machine.terminated:
            self._forget(stream)

    def _on_request_n(self, stream: Stream, frame: Frame, events: list[Event]) -> None:
        if stream.machine.receive(frame) is IGNORE or stream.outbound is None:
            self.ignored_frames += 1
            return
        # "Credits are cumulative" (saturating at 2^31-1: no "unbounded" value).
        stream.outbound.grant(frame.request_n)
        events.append(RequestNReceived(stream.stream_id, frame.request_n))

    def _abort_stream(self, stream: Stream, code: int, why: str, events: list[Event],
                      notify: bool = True) -> None:  # fmt: skip
        """End a stream whose peer broke a rule, with the frame its machine allows:
        ERROR (responder, channel) or CANCEL (a request-response/stream requester)."""
        error = self.version.error(stream.stream_id, code, why.encode()[:1024])
        if stream.machine.allows_send(error):
            stream.machine.send(error)
            self._emit(error)
        else:
            cancel = self._codec.Cancel(stream_id=stream.stream_id)
            if stream.machine.allows_send(cancel):
                stream.machine.send(cancel)
                self._emit(cancel)
        self._forget(stream)
        if notify:
            events.append(StreamAborted(stream.stream_id, code, why))
