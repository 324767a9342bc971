"""The sans-I/O RSocket engine: one connection, either role, either protocol version.

Shape (as h2 / aioquic, and ``wirestream.runtime.engine``): ``receive_data(bytes, now)
-> list[Event]``, command methods that queue frames (``request_stream(...) ->
stream_id``, ``send_next``, ``request``, ``cancel`` ...), ``data_to_send() -> bytes``,
and time passed in: ``handle_timer(now)``, ``get_timer()`` and an optional ``now=`` on
the calls whose outcome depends on time (lease TTLs, keepalive deadlines).  No sockets,
no clocks, no asyncio.

Every frame sent or received goes through the generated machines of the chosen version
(``generated/rsocket/<version>/machines.py``), and a received frame reaches a handler of
this engine only through the machine's generated, typed binder (``bind_<role>``, the
``HANDLERS`` table as code; ``bindings`` says how mypy checks it), run by
``wirestream.runtime.machine.Dispatch``:

- stream 0: the ``connection`` machine, then ``on_connection_<frame>``;
- a stream's frames: its interaction model's machine (scope ``stream``), then
  ``on_stream_<frame>``.  The ``connection`` machine observes the REQUEST_* that open
  streams and, while the SETUP is unconfirmed, every stream frame (IDL ``observes:``);
- F-flag sequences: the ``fragments`` machine of the direction, which only observes;
  the reassembled message then goes through the stream's machine like a whole one.

The engine is one class in three parts, by scope (h2's connection/stream split): the
state and plumbing they share (``engine_core.RSocketEngineCore``: output, time, queueing and
fragmenting frames), the per-stream behaviour (``stream_engine.StreamEngine``: requests,
stream commands, ``on_stream_<frame>``), and here the connection's (``RSocketConnection``:
stream 0, receiving, closing, resumption, ``on_connection_<frame>``).

Changing a row in the IDL changes what this engine accepts and what it handles.  What
the tables cannot say is here and in the small modules beside it: request-n credit
(``wirestream.runtime.flow.Window``), lease budgets (``lease``), keepalive timing
(``keepalive``), stream-id allocation (``streams``), fragmenting and reassembly
(``fragmentation``), implied positions and resumption (``resume``).

Peer violations: a stream-level one ends the stream with the frame the stream's machine
allows (ERROR, else CANCEL) and reports ``StreamAborted``; a connection-level one queues
ERROR[INVALID_SETUP] (first frame) or ERROR[CONNECTION_ERROR], closes, and raises the
``RemoteProtocolError`` from ``receive_data`` (``data_to_send()`` still yields the ERROR).
Frames the spec says to ignore are dropped and counted in ``ignored_frames``.

Closing: ``close()`` ends the connection at once; ``close_gracefully()`` (1.0) sends
ERROR[CONNECTION_CLOSE] and, like a received one, moves the connection to ``closing``
(IDL M8): streams drain, new requests are refused, ``ConnectionClosed(graceful=True)``
once the last has ended.  EXT frames (IDL M14) go to the application for the extended
types it declared (``extensions``), else their I flag decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wirestream.runtime.errors import (
    DecodeError,
    FrameTooLarge,
    LocalProtocolError,
    ProtocolError,
    RemoteProtocolError,
    UnknownFrameType,
)
from wirestream.runtime.machine import IGNORE
from wirestream.runtime.rsocket.errors import (
    ResumeNotAllowed,
    ResumePositionLost,
    UnsupportedExtension,
)
from wirestream.runtime.rsocket.events import (
    ConnectionClosed,
    ConnectionEstablished,
    ConnectionRejected,
    ConnectionResumed,
    ExtReceived,
    FrameReceived,
    Event,
    InteractionModel,
    KeepaliveReceived,
    LeaseReceived,
    MetadataPushReceived,
)
from wirestream.runtime.rsocket.lease import LeaseStatus
from wirestream.runtime.rsocket.options import Limits
from wirestream.runtime.rsocket.engine_core import Frame
from wirestream.runtime.rsocket.frames import (
    ErrorFrame,
    ExtFrame,
    KeepaliveFrame,
    LeaseFrame,
    MetadataPushFrame,
    ResumeFrame,
    ResumeOkFrame,
    SetupFrame,
)
from wirestream.runtime.rsocket.resume import ResumableSession, ResumeLog, answer_resume
from wirestream.runtime.rsocket.stream_engine import StreamEngine
from wirestream.runtime.rsocket.streams import Stream

__all__ = ["RSocketConnection"]


class RSocketConnection(StreamEngine):
    """One RSocket connection (``role`` "client" or "server"; ``version`` "1.0", "0.2"
    or a ``Version``).

    A client's ``setup`` is what its SETUP says (``ClientSetup``); a server's options are
    the ``setup_policy`` and ``resume_lookup`` hooks and ``leasing``; ``limits`` bound
    what either side sends, accepts, reassembles and keeps for resumption (``Limits``).

    ``extensions``: the EXT extended types the application understands (``ExtReceived``);
    another EXT is dropped when its I flag is set and ends the connection when it is
    clear (IDL M14).

    ``leasing`` (server): whether this server grants leases.  "If the server accepts the
    contents of the SETUP frame, it MUST send a LEASE frame if the SETUP frame set the L
    flag": a leasing server's application does so (``send_lease``) on
    ``ConnectionEstablished``; any other server refuses such a SETUP with
    ERROR[UNSUPPORTED_SETUP] (what rsocket-java and rsocket-py do) rather than accept a
    client that would then wait for ever.

    The ``on_connection_*`` (here) and ``on_stream_*`` (``StreamEngine``) methods are
    where the generated dispatch delivers received frames (the machines' typed
    ``bind_<role>``, checked by mypy in ``bindings``); they are not commands.
    """

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
            self._log = ResumeLog(self.limits.resume_buffer_size)
            self._resume_token = setup.resume_token
            self._track_positions()
        self._leases.restart(setup.lease)
        self._keepalive.start(now, setup, sends=True)

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

    def send_frame(self, frame: Frame) -> None:
        """Queue any frame of the version's codec through the machine of its scope: the
        ``connection`` machine on stream 0, the stream's lifecycle machine otherwise
        (``IllegalSend`` when the table forbids it, ``UnknownStream`` for a stream that
        is not open).  The path for frames an IDL extension adds; the commands above
        are the protocol's own and keep its bookkeeping (credit, leases, fragments)."""
        if frame.stream_id == 0 or type(frame) is self._ext:  # EXT: IDL M14
            self._conn.send(frame)
        else:
            self._get(frame.stream_id).machine.send(frame)
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
        self._leases.sent(ttl, number_of_requests, self._now)

    @property
    def lease(self) -> LeaseStatus | None:
        """(leasing) The peer's current LEASE for our requester: requests left and expiry
        (None: none received since the SETUP or the last resumption, or no leasing)."""
        return self._leases.status() if self._leases.required else None

    def lease_allows(self, now: float | None = None) -> bool:
        """Whether a request of ours may go now: no leasing, or a LEASE with requests
        left that has not expired (``now``: the caller's clock; None: the last given)."""
        return self._leases.allows_request(self._now if now is None else now)

    def close(self, error_code: int | None = None, message: bytes = b"") -> list[Event]:
        """End the connection at once with ERROR on stream 0 (CONNECTION_ERROR by default:
        "Sender or Receiver of this frame MAY close the connection immediately without
        waiting for outstanding streams to terminate").  1.0 CONNECTION_CLOSE promises to
        wait for them: with that code this is ``close_gracefully`` when no stream is open
        and a ``LocalProtocolError`` while one is."""
        code = self.version.connection_error if error_code is None else error_code
        if code == self.version.graceful_close and not self.closing:
            if self._open_streams:
                raise LocalProtocolError(
                    "ERROR[CONNECTION_CLOSE] waits for the open streams: use "
                    "close_gracefully(), or CONNECTION_ERROR to end them now"
                )
            return self.close_gracefully(message)
        frame = self.version.error(0, code, message)
        self._conn.send(frame)
        self._emit(frame)
        events: list[Event] = []
        self._terminate_streams(events, code, "connection closed")
        events.append(ConnectionClosed(code, message, by_peer=False))
        return events

    def close_gracefully(self, message: bytes = b"") -> list[Event]:
        """(1.0) Begin a graceful close: ERROR[CONNECTION_CLOSE], after which "Sender or
        Receiver of this frame MUST wait for outstanding streams to terminate before
        closing the connection. New requests MAY not be accepted."  Open streams run on;
        our new requests raise ``NoNewRequests``, the peer's are refused with
        ERROR[REJECTED]; once no stream is left the connection is over
        (``ConnectionClosed`` with ``graceful``, from ``receive_data`` or, after a
        command ended the last stream, from ``handle_timer``, due at once).  Returns
        ``ConnectionClosing`` (and ``ConnectionClosed`` when nothing was open).  0.2 has
        no such code: ``LocalProtocolError``."""
        code = self.version.graceful_close
        if code is None:
            raise LocalProtocolError(
                "ReactiveSocket 0.2 has no CONNECTION_CLOSE (its 0x102 ends the connection at"
                " once): close() it, or wait for the streams first"
            )
        frame = self.version.error(0, code, message)
        self._conn.send(frame)  # IllegalSend before SETUP, after close, or if already closing
        self._emit(frame)
        events: list[Event] = [self._start_closing(code, message, by_peer=False)]
        self._finish_drain(events)
        return events

    # ================================================================== extensions

    def send_ext(self, extended_type: int, data: bytes = b"", metadata: bytes | None = None,
                 *, stream_id: int = 0, ignore: bool = True) -> None:  # fmt: skip
        """Queue an EXT frame (IDL M14: the ``connection`` machine says when).  ``ignore``
        sets the I flag: "Can the frame be ignored if not understood?" -- with it clear, a
        peer that does not understand ``extended_type`` may end the connection."""
        frame = self._ext(stream_id=stream_id, ignore=ignore, extended_type=extended_type,
                          metadata=metadata, data=data)  # fmt: skip
        self._conn.send(frame)
        self._emit(frame)

    def on_connection_ext(self, frame: ExtFrame, before: Any, events: list[Event]) -> None:
        """An EXT frame: the application's if it declared the extended type; else the I
        flag decides (Handling Ignore Flag)."""
        if frame.extended_type in self._extensions:
            events.append(ExtReceived(frame.stream_id, frame.extended_type, frame.data,
                                      frame.metadata, frame.ignore))  # fmt: skip
        elif frame.ignore:
            self.ignored_frames += 1
        else:
            raise UnsupportedExtension(
                f"EXT frame of extended type {frame.extended_type} (not understood) without "
                "the I flag: 'An implementation MAY send an ERROR[CONNECTION_ERROR] frame and "
                "close the underlying transport connection'"
            )

    # ================================================================== receiving

    def receive_data(self, data: bytes, now: float | None = None) -> list[Event]:
        """Feed bytes from the transport (b"" = EOF); the events they cause.  ``now``:
        the caller's clock in seconds (lease TTLs and keepalive liveness count from it;
        None keeps the last time given)."""
        if now is not None:
            self._now = now
        events: list[Event] = []
        if not data:
            self._on_eof(events)
            return events
        if self._conn.terminated:
            return events  # "all frames will be ignored"
        self._receive(data, events)
        self._finish_drain(events)
        return events

    def _receive(self, data: bytes, events: list[Event]) -> None:
        chunk = data
        while True:
            failure: DecodeError | None = None
            try:
                frames = self._decoder.feed(chunk)
            except DecodeError as error:  # frames decoded before the bad one come first
                frames, failure = error.frames, error
            self.frames_received += len(frames)
            try:
                sizes = self._frame_sizes
                if sizes is None:
                    for frame in frames:
                        self._handle_frame(frame, events)
                else:
                    # A resumable connection counts implied positions from the length
                    # the splitter read off the wire (``_track_positions``), in step
                    # with the frames (the decoder's failure drops none: ``frames`` are
                    # the ones decoded before it, and so are their sizes).
                    try:
                        for frame, size in zip(frames, sizes):
                            self._wire_size = size
                            self._handle_frame(frame, events)
                    finally:
                        sizes.clear()
            except RemoteProtocolError as error:
                error.events = events
                self._fail_connection(error)
            if failure is None:
                return
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
        if stream_id == 0 or kind is self._ext:  # EXT: no stream machine knows it (M14)
            self._on_connection_frame(frame, events)
            return
        log = self._log
        if log is not None and kind in self._position_frames:
            # "calculated based on the length of encoded frames without the frame length
            # field": the length prefix the splitter read, not a re-encoding.
            log.received(self._wire_size)
        if self._conn.state in self._watch_all and kind not in self._request_models:
            self._observe(frame, events)
        stream = self._open_streams.get(stream_id)
        if stream is None:
            discarding = self._discarding_entries.get(stream_id)
            if discarding is not None:
                self._discard_fragment(stream_id, discarding, frame)
                return
            model = self._request_models.get(kind)
            if model is None:
                # "Receiving a CANCEL / an ERROR / a PAYLOAD on an unknown Stream ID ...
                # MUST be ignored" (and every other frame, "not accounted for").
                self.ignored_frames += 1
                return
            self._on_new_stream(frame, model, events)
            return
        if kind in self._fragmentable and (frame.follows or stream.reassembly is not None):
            frame = self._receive_fragment(stream, frame, events)
            if frame is None:
                return
        # The stream's machine, then its on_stream_<frame> handler (generated dispatch).
        if not stream.dispatch.receive(stream.machine, frame, stream, events):
            self._ignored_on(stream, frame)

    def _observe(self, frame: Frame, events: list[Event]) -> Any:
        """Pass a stream frame through the connection machine, which only follows it (IDL
        ``observes:``): establishment, and which REQUEST_* may open a stream now."""
        before = self._conn.state
        outcome = self._conn.receive(frame)
        if before in self._setup_phase and outcome is self._CS.ESTABLISHED:
            self._confirm_setup(events, len(events))
        return outcome

    def _confirm_setup(self, events: list[Event], at: int) -> None:
        """(client) M2: "A client assumes a SETUP is accepted if it receives a response to
        a request, a LEASE frame, or if it sees a REQUEST type" (reported at ``at``,
        before what the frame itself causes)."""
        if self.role == "client":
            assert self._setup is not None
            events.insert(at, ConnectionEstablished(self._setup))

    # --- stream 0: on_connection_<frame> ----------------------------------------------

    def _on_connection_frame(self, frame: Frame, events: list[Event]) -> None:
        conn = self._conn
        before = conn.state
        mark = len(events)
        if not self._connection.receive(conn, frame, before, events):
            self.ignored_frames += 1
            return
        if before in self._setup_phase and conn.state is self._CS.ESTABLISHED:
            self._confirm_setup(events, mark)

    @staticmethod
    def report_frame(frame: Frame, events: list[Event]) -> None:
        """Hand ``frame`` to the application as it came (``FrameReceived``; the asyncio
        peer calls ``RSocketHandler.on_frame``): what the handler of a frame added to the
        IDL does when the frame's behaviour is the application's
        (``idl/README.md``, "Adding a frame with behaviour")."""
        events.append(FrameReceived(frame))

    def on_connection_setup(self, frame: SetupFrame, before: Any, events: list[Event]) -> None:
        """(server) Accept or reject the SETUP the machine let through."""
        v = self.version
        info = v.setup_info(frame)
        rejection: tuple[int, str] | None = None
        if info.major_version != v.major_version or info.minor_version > v.minor_version:
            # "It is up to a server to accept clients of lower versions than what it supports."
            rejection = (v.unsupported_setup, f"version {info.major_version}."
                                              f"{info.minor_version} is not supported")  # fmt: skip
        elif info.metadata_mime_type.endswith("\x00") or info.data_mime_type.endswith("\x00"):
            # SETUP Frame, Encoding MIME Type: "The string MUST NOT be null terminated."
            rejection = (v.invalid_setup, "a MIME type is null terminated")
        elif info.resume_token is not None and self._resume_lookup is None:
            # "A server that receives a SETUP frame that has (R)esume Enabled set, but does
            # not support resuming operation, MUST reject the SETUP with an ERROR[REJECTED_SETUP]."
            rejection = (v.resume_unsupported_setup, "resumption is not supported")
        elif info.lease and not self._leasing:
            # "it MUST send a LEASE frame if the SETUP frame set the L flag": a server that
            # grants none cannot accept it ("Some (or all) of the parameters specified by
            # the client are unsupported by the server").
            rejection = (v.unsupported_setup, "leasing is not supported by this server")
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
        self._leases.restart(info.lease)
        if info.resume_token is not None:
            self._log = ResumeLog(self.limits.resume_buffer_size)
            self._resume_token = info.resume_token
        self._keepalive.start(self._now, info, sends=False)
        events.append(ConnectionEstablished(info))

    def on_connection_keepalive(
        self, frame: KeepaliveFrame, before: Any, events: list[Event]
    ) -> None:
        self._keepalive.heard(self._now)
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

    def on_connection_lease(self, frame: LeaseFrame, before: Any, events: list[Event]) -> None:
        # "The last received LEASE frame overrides all previous LEASE frame values."
        # Time-To-Live is measured from reception.
        self._leases.received(frame.ttl, frame.number_of_requests, self._now)
        events.append(LeaseReceived(frame.ttl, frame.number_of_requests, frame.metadata))

    def on_connection_metadata_push(
        self, frame: MetadataPushFrame, before: Any, events: list[Event]
    ) -> None:
        events.append(MetadataPushReceived(frame.metadata))

    def on_connection_error(self, frame: ErrorFrame, before: Any, events: list[Event]) -> None:
        """ERROR on stream 0 that the machine says ends the connection."""
        v = self.version
        code, message = int(frame.error_code), frame.data
        resuming = before is self._CS.RESUMING
        if code == v.resume_no_retry and (resuming or v.resume_no_retry == v.connection_close):
            # 1.0: "On receiving an ERROR[REJECTED_RESUME] frame, the client MUST NOT attempt
            # resumption again"; 0.2: CONNECTION_ERROR_NO_RETRY "May NOT be resumed".
            self._resume_forbidden = True
        if self.closing:  # IDL M8: CONNECTION_CLOSE, the streams drain
            if before is not self._closing:
                events.append(self._start_closing(code, message, by_peer=True))
            return
        setup_phase = before in self._setup_phase
        if resuming or (self.role == "client" and setup_phase and code in v.setup_error_codes):
            events.append(ConnectionRejected(code, message, by_peer=True))
        else:
            events.append(ConnectionClosed(code, message, by_peer=True))
        self._terminate_streams(events, code, "connection error from the peer")

    def _on_eof(self, events: list[Event]) -> None:
        if self._conn.terminated:
            return
        # A session is resumable from the SETUP with a token on, not only once a frame has
        # confirmed it: a client whose SETUP no response has confirmed yet (setup_sent,
        # awaiting_lease) and a server waiting for the client's first LEASE (which
        # rsocket-java's client never sends unless told to) keep their sessions as
        # rsocket-java does; a server that never had the SETUP answers the RESUME with
        # ERROR[REJECTED_RESUME], a typed end.
        resumable = self._log is not None and not self._resume_forbidden
        # EOF is not a frame, so no table row: the transport's end ends the machine.
        self._conn.state = self._CS.CLOSED
        if not resumable:
            self._terminate_streams(events, self.version.connection_error, "transport closed")
        events.append(ConnectionClosed(None, b"", by_peer=True, resumable=resumable))

    # --- resumption (wirestream.runtime.rsocket.resume) -------------------------------

    def session(self) -> ResumableSession:
        """The resumable state of this connection (to resume it on a new transport)."""
        if self._log is None or self._resume_token is None or self._setup is None:
            raise ResumeNotAllowed("resumption was not negotiated (SETUP without a token)")
        if self._resume_forbidden:
            raise ResumeNotAllowed("the server said never to resume this session")
        return ResumableSession(self.version, self.role, self._resume_token, self._setup,
                                self._streams, self._ids, self._log)  # fmt: skip

    @classmethod
    def resume(cls, session: ResumableSession, now: float = 0.0, *,
               limits: Limits | None = None) -> RSocketConnection:  # fmt: skip
        """(client) A new engine for a new transport that continues ``session`` by sending
        RESUME: "The RESUME Identification Token MUST be the token used in the original
        SETUP frame. The RESUME Last Received Position field MUST be the last successfully
        received implied position from the server." """
        if session.role != "client":
            raise ValueError("only a client resumes; a server is given sessions by its lookup")
        engine = cls("client", session.version, limits=limits)
        engine._adopt(session)
        engine._now = now
        log = session.log
        frame = session.version.resume(session.token, log.received_position, log.first_available)
        engine._conn.send(frame)
        engine._emit(frame)
        engine._keepalive.start(now, session.setup, sends=True)
        return engine

    def _adopt(self, session: ResumableSession) -> None:
        if session.version is not self.version:
            raise ValueError("a session continues in the protocol version it started in")
        self._setup = session.setup
        self._streams = session.streams
        self._open_streams = session.streams.entries
        for stream in session.streams.values():  # handled by this engine from now on
            stream.dispatch = self._dispatch_of(stream.role, stream.model)
        self._ids = session.ids
        self._log = session.log
        self._resume_token = session.token
        self._track_positions()
        # "Leasing semantics are NOT assumed to carry over from previous connections when
        # resuming. LEASE semantics MUST be restarted upon a new connection by sending a
        # LEASE frame from the server."
        self._leases.restart(session.setup.lease)

    def on_connection_resume(self, frame: ResumeFrame, before: Any, events: list[Event]) -> None:
        """(server) Answer RESUME with RESUME_OK (and retransmit) or ERROR."""
        v = self.version
        answer = answer_resume(v, self._resume_lookup, frame)
        if isinstance(answer, str):
            message = answer.encode()
            error = v.error(0, v.resume_rejected, message)
            self._conn.send(error)
            self._emit(error)
            events.append(ConnectionRejected(v.resume_rejected, message, by_peer=False))
            return
        session, replay, client_last = answer
        self._adopt(session)
        ok = v.resume_ok(session.log.received_position)
        self._conn.send(ok)
        self._emit(ok)
        self._out_streams.extend(replay)
        self._keepalive.start(self._now, session.setup, sends=False)
        events.append(ConnectionResumed(client_last, len(replay)))

    def on_connection_resume_ok(
        self, frame: ResumeOkFrame, before: Any, events: list[Event]
    ) -> None:
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

    # --- streams: on_stream_<frame> ---------------------------------------------------

    def _on_new_stream(self, frame: Frame, model: InteractionModel, events: list[Event]) -> None:
        """A REQUEST_* on an unknown id: the connection machine says whether a stream may
        open now; the stream's machine then takes the (whole) request."""
        if self._observe(frame, events) is IGNORE:
            self.ignored_frames += 1
            return
        if not self._ids.is_peer_id(frame.stream_id):
            # A request id of our own parity: no rule covers it; ignore (A15).
            self.ignored_frames += 1
            return
        stream = self._new_stream(frame.stream_id, model, "responder")
        self._open_streams[frame.stream_id] = stream  # (``self._streams.add``)
        if frame.follows:
            stream.receive_fragments = self._fragments_machine("receiver")
            cap = self.limits.max_streams
            if cap is not None and self._peer_streams_exceed(cap):
                self._refuse_fragmented(stream, frame, cap, events)
                return
            whole = self._receive_fragment(stream, frame, events)
            if whole is None:
                return
            frame = whole
        # (``_stream_receive``, inline)
        if not stream.dispatch.receive(stream.machine, frame, stream, events):
            self._ignored_on(stream, frame)

    def _refuse_fragmented(self, stream: Stream, frame: Frame, cap: int,
                           events: list[Event]) -> None:  # fmt: skip
        """Limits.max_streams for a request arriving in fragments, from its first: each
        one buffers up to ``max_reassembly_size``, so a peer must not open more of them
        than the limit by never finishing any.  REJECTED ("guarantees that it didn't
        process the request"; a fire-and-forget's machine allows no answer, so it is
        dropped unanswered), the rest of its fragments dropped."""
        fragments = stream.receive_fragments
        assert fragments is not None
        fragments.receive(frame)  # the sequence is followed to know where it ends
        self._abort_stream(stream, self.version.rejected, f"too many streams (limit {cap})",
                           events, notify=False)  # fmt: skip
        self._discarding.add(stream.stream_id, fragments)


if TYPE_CHECKING:
    import wirestream.generated.rsocket.v0_2.machines as v0_2
    import wirestream.generated.rsocket.v1_0.machines as v1_0

    def _implements(engine: RSocketConnection) -> None:
        """Never called: every binder of both committed versions, given the engine (mypy
        checks it has each handler the binder names, taking a compatible frame)."""
        v1_0.ConnectionMachine.bind_client(engine)
        v1_0.ConnectionMachine.bind_server(engine)
        v1_0.RequestResponseMachine.bind_requester(engine)
        v1_0.RequestResponseMachine.bind_responder(engine)
        v1_0.RequestFnfMachine.bind_requester(engine)
        v1_0.RequestFnfMachine.bind_responder(engine)
        v1_0.RequestStreamMachine.bind_requester(engine)
        v1_0.RequestStreamMachine.bind_responder(engine)
        v1_0.RequestChannelMachine.bind_requester(engine)
        v1_0.RequestChannelMachine.bind_responder(engine)
        v0_2.ConnectionMachine.bind_client(engine)
        v0_2.ConnectionMachine.bind_server(engine)
        v0_2.RequestResponseMachine.bind_requester(engine)
        v0_2.RequestResponseMachine.bind_responder(engine)
        v0_2.RequestFnfMachine.bind_requester(engine)
        v0_2.RequestFnfMachine.bind_responder(engine)
        v0_2.RequestStreamMachine.bind_requester(engine)
        v0_2.RequestStreamMachine.bind_responder(engine)
        v0_2.RequestChannelMachine.bind_requester(engine)
        v0_2.RequestChannelMachine.bind_responder(engine)
