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

from collections.abc import Collection, Mapping
from typing import Any, Final

from wirestream.runtime.errors import (
    DecodeError,
    FrameTooLarge,
    LocalProtocolError,
    PeerExceededDemand,
    ProtocolError,
    RemoteProtocolError,
    UnknownFrameType,
)
from wirestream.runtime.flow import RSOCKET_MAX_N, Window
from wirestream.runtime.machine import IGNORE, Dispatch, MachineRegistry, StateMachine
from wirestream.runtime.rsocket.bindings import bind_connection, bind_stream
from wirestream.runtime.rsocket.errors import (
    NoNewRequests,
    ResumeNotAllowed,
    ResumePositionLost,
    UnknownStream,
    UnsupportedExtension,
)
from wirestream.runtime.rsocket.events import (
    ConnectionClosed,
    ConnectionClosing,
    ConnectionDead,
    ConnectionEstablished,
    ConnectionRejected,
    ConnectionResumed,
    ErrorReceived,
    ExtReceived,
    FrameReceived,
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
from wirestream.runtime.rsocket.fragmentation import Reassembly, fragment
from wirestream.runtime.rsocket.keepalive import KeepaliveTimer
from wirestream.runtime.rsocket.lease import Leases
from wirestream.runtime.rsocket.options import ClientSetup, Limits, SetupPolicy
from wirestream.runtime.rsocket.resume import (
    ResumableSession,
    ResumeLog,
    ResumeLookup,
    answer_resume,
)
from wirestream.runtime.rsocket.streams import Stream, StreamIds, machine_of
from wirestream.runtime.rsocket.versions import Version, get_version

__all__ = ["RSocketConnection"]

Frame = Any  # a frame of the chosen version's generated codec

FIXED_PART_MAX: Final = 16  # header + the largest fixed request field, rounded up
STREAM_ROLES: Final = ("requester", "responder")
DEFAULT_LIMITS: Final = Limits()


class RSocketConnection:
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

    The ``on_connection_*`` and ``on_stream_*`` methods are where the generated dispatch
    delivers received frames (``HANDLERS`` of the version's machines); they are not
    commands.
    """

    def __init__(
        self,
        role: str = "client",
        version: str | Version = "1.0",
        *,
        setup: ClientSetup | None = None,
        limits: Limits | None = None,
        setup_policy: SetupPolicy | None = None,
        resume_lookup: ResumeLookup | None = None,
        leasing: bool = False,
        extensions: Collection[int] = (),
    ) -> None:
        if role not in ("client", "server"):
            raise ValueError(f"role must be 'client' or 'server', not {role!r}")
        if role == "server" and setup is not None:
            raise ValueError("only a client sends SETUP: a server takes no setup=")
        if role == "client" and (setup_policy is not None or resume_lookup is not None
                                 or leasing):  # fmt: skip
            raise ValueError("setup_policy, resume_lookup and leasing are a server's options")
        v = get_version(version)
        self.version = v
        self.role = role
        self.limits = limits = limits or DEFAULT_LIMITS
        self._codec = codec = v.codec
        self._mtu: int = min(limits.mtu or codec.MAX_FRAME_SIZE, codec.MAX_FRAME_SIZE)
        self._decoder = codec.StreamDecoder(limits.max_frame_size or codec.MAX_FRAME_SIZE)
        self._frame_bytes = codec.frame_bytes
        self._setup_policy = setup_policy
        self._resume_lookup = resume_lookup
        self._leasing = leasing
        self._extensions = frozenset(extensions)
        self._ext = codec.Ext

        machines = v.machines
        self._conn: StateMachine[Any] = machines.ConnectionMachine(role)
        self._CS = machines.ConnectionState
        self._FS = machines.FragmentsState
        self._fragments_machine = machines.FragmentsMachine
        self._stream_machines = v.stream_machines
        # A channel whose peer sent COMPLETE: no REQUEST_N may follow (``request``).
        self._peer_completed = machines.RequestChannelState.HALF_CLOSED_REMOTE
        # While `new` (server) or `setup_sent` (client) the connection machine sees every
        # frame (IDL M1); leaving `setup_sent` / `awaiting_lease` for `established`
        # confirms the client's SETUP (M2).
        self._watch_all = frozenset({self._CS.NEW, self._CS.SETUP_SENT})
        self._setup_phase = frozenset({self._CS.SETUP_SENT, self._CS.AWAITING_LEASE})
        # 1.0 only (IDL M8): ERROR[CONNECTION_CLOSE] sent or received, streams draining.
        self._closing: Any = getattr(self._CS, "CLOSING", None)
        self._closing_event: ConnectionClosing | None = None

        self._request_models: dict[type, InteractionModel] = v.request_models
        self._payload: Any = v.payload
        self._fragmentable = frozenset({v.payload, *self._request_models})
        self._position_frames = v.position_frames
        # The generated dispatch, bound once: stream 0 -> on_connection_<frame>; a
        # stream's frames -> on_stream_<frame>, per stream role and model (each Stream
        # carries its own: ``_new_stream``, ``_adopt``).
        # ``bind_<role>`` of the version's machine classes (``wirestream.runtime.rsocket.
        # bindings``: mypy checks this class against both versions' handler protocols).
        self._connection = Dispatch(
            machines.ConnectionMachine,
            role,
            bind_connection(machines.ConnectionMachine, role, self),
        )
        self._stream_dispatch: dict[str, dict[InteractionModel, Dispatch]] = {
            stream_role: {model: Dispatch(cls, stream_role, bind_stream(cls, stream_role, self))
                          for model, cls in self._stream_machines.items()}
            for stream_role in STREAM_ROLES
        }  # fmt: skip

        # Open streams, of four models: each Stream holds its model's machine (the
        # registry never makes stand-ins: an unknown id has no machine until a REQUEST_*
        # picks its model; other frames on it are ignored).
        self._streams: MachineRegistry[int, Stream] = MachineRegistry(
            StateMachine, "stream", machine_of=machine_of
        )
        # The registry's entries, for the per-frame and per-message lookups and removals
        # (a dict's get/pop instead of a method call on the hot paths).
        self._open_streams = self._streams.entries
        # Streams aborted while a fragmented message was arriving: its `fragments`
        # machine, until the last fragment has gone by.
        self._discarding: MachineRegistry[int, StateMachine[Any]] = MachineRegistry(
            machines.FragmentsMachine, "receiver"
        )
        self._ids = StreamIds(1 if role == "client" else 2, reuse=limits.reuse_stream_ids)
        self._out_connection: list[bytes] = []  # stream 0 goes first (QoS, "Frames with
        self._out_streams: list[bytes] = []  # Stream ID 0 SHOULD have a higher priority")
        self._now = 0.0

        self._setup: SetupInfo | None = None
        if role == "client":
            self._setup = (setup or ClientSetup()).info(v)
        self._leases = Leases()
        self._keepalive = KeepaliveTimer()
        self._log: ResumeLog | None = None
        self._resume_token: bytes | None = None
        self._resume_forbidden = False
        self.ignored_frames = 0
        """Frames dropped because the spec says to ignore them (a debugging counter)."""
        self.frames_received = 0
        """Whole frames decoded from the peer's bytes (the engine contract's progress)."""

    # ================================================================== public state

    @property
    def state(self) -> Any:
        """The ``connection`` machine's state (a ``ConnectionState`` of the version)."""
        return self._conn.state

    @property
    def closed(self) -> bool:
        return bool(self._conn.terminated)

    @property
    def closing(self) -> bool:
        """A graceful close is under way (ERROR[CONNECTION_CLOSE] sent or received; 1.0)."""
        return self._closing is not None and self._conn.state is self._closing

    @property
    def setup(self) -> SetupInfo | None:
        """The SETUP in force (ours on the client; the accepted one on the server)."""
        return self._setup

    def stream_state(self, stream_id: int) -> Any:
        """The lifecycle machine state of an open stream (``UnknownStream`` otherwise)."""
        return self._get(stream_id).machine.state

    @property
    def open_streams(self) -> Mapping[int, Stream]:
        return self._streams.entries

    @property
    def buffered_bytes(self) -> int:
        """Bytes received of a frame that is not complete yet."""
        buffered: int = self._decoder.buffered
        return buffered

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
        if self._drained():
            return self._now  # the graceful close is over: handle_timer reports it now
        return self._keepalive.deadline()

    def handle_timer(self, now: float) -> list[Event]:
        """Send the client's periodic KEEPALIVE and report a silent peer
        (``wirestream.runtime.rsocket.keepalive``)."""
        self._now = now
        events: list[Event] = []
        if self._conn.terminated or self._setup is None:
            return events
        if self._finish_drain(events):
            return events
        keepalive = self._keepalive
        if keepalive.send_due(now):
            frame = self._codec.Keepalive(respond=True, last_received_position=self._position())
            if self._conn.allows_send(frame):
                self._conn.send(frame)
                self._emit(frame)
        silent = keepalive.dead(now)
        if silent is not None:
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
            self._log = ResumeLog(self.limits.resume_buffer_size)
            self._resume_token = setup.resume_token
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

    def _start_closing(self, code: int, message: bytes, by_peer: bool) -> ConnectionClosing:
        event = self._closing_event = ConnectionClosing(code, message, by_peer)
        return event

    def _drained(self) -> bool:
        return (
            self._closing_event is not None
            and not self._open_streams
            and self._conn.state is self._closing
        )

    def _finish_drain(self, events: list[Event]) -> bool:
        """End a graceful close whose last stream has ended (IDL M8: ``closing ->
        closed`` is no frame, so no row: the engine moves the machine, as on EOF)."""
        if not self._drained():
            return False
        closing = self._closing_event
        assert closing is not None
        self._conn.state = self._CS.CLOSED
        events.append(ConnectionClosed(closing.error_code, closing.message, closing.by_peer,
                                       graceful=True))  # fmt: skip
        return True

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

    def on_connection_ext(self, frame: Frame, before: Any, events: list[Event]) -> None:
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
        if self.closing:
            raise NoNewRequests(
                "the connection is closing (ERROR[CONNECTION_CLOSE]): 'New requests MAY not be"
                " accepted'"
            )
        self._conn.send(frame)  # IllegalSend before SETUP, while awaiting a LEASE, after close
        leases = self._leases
        if leases.required:
            leases.check_request(self._now)  # NoLease
        streams = self._streams
        stream_id = self._ids.allocate(streams.entries)
        frame.stream_id = stream_id
        stream = self._new_stream(stream_id, model, "requester")
        state = stream.machine.send(frame)
        if leases.required:
            leases.spend_request()
        stream.inbound = inbound
        stream.outbound = outbound
        if state not in stream.machine.TERMINAL:
            streams.add(stream_id, stream)
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
            self._open_streams.pop(stream_id, None)

    def send_complete(self, stream_id: int) -> None:
        """Complete our side of the stream (PAYLOAD with only C)."""
        stream = self._get(stream_id)
        frame = self.version.message(stream_id, stream.is_channel_requester, b"", None,
                                     False, True)  # fmt: skip
        state = stream.machine.send(frame)
        self._transmit(stream, frame)
        if state in stream.machine.TERMINAL:
            self._open_streams.pop(stream_id, None)

    def send_error(self, stream_id: int, error_code: int, message: bytes | str = b"") -> None:
        """End the stream with ERROR (an application-range code; the machine refuses the
        connection and setup codes: "Stream ID MUST be > 0" codes only)."""
        stream = self._get(stream_id)
        data = message.encode() if isinstance(message, str) else message
        frame = self.version.error(stream_id, error_code, data)
        stream.machine.send(frame)
        self._emit(frame)
        self._streams.forget(stream_id)

    def request(self, stream_id: int, n: int) -> None:
        """Grant the peer ``n`` more items (REQUEST_N); credits add up, capped at 2^31-1.

        Nothing is sent once the peer has completed its side of a channel
        (``half_closed_remote``): there is nothing left to grant, and the table forbids a
        REQUEST_N there.  The application cannot know it in time -- the request and the
        requester's COMPLETE may arrive in one read, before it answers the request."""
        stream = self._get(stream_id)
        if stream.machine.state is self._peer_completed:
            return
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
        self._streams.forget(stream_id)

    def _new_stream(self, stream_id: int, model: InteractionModel, role: str) -> Stream:
        """A stream of ``model`` seen as ``role``: its machine and generated dispatch."""
        return Stream(stream_id, model, role, self._stream_machines[model](role),
                      self._stream_dispatch[role][model])  # fmt: skip

    def _get(self, stream_id: int) -> Stream:
        stream = self._open_streams.get(stream_id)
        if stream is None:
            raise UnknownStream(f"stream {stream_id} is not open")
        return stream

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
        if body + FIXED_PART_MAX <= self._mtu:  # the common case, without encoding it
            self._emit(frame)
            return
        pieces = fragment(frame, self.version, self._mtu)
        if pieces is None:
            self._emit(frame)
            return
        machine = stream.send_fragments
        if machine is None:
            initial = self._FS.IDLE if opening else self._FS.WHOLE
            machine = stream.send_fragments = self._fragments_machine("sender", initial)
        for piece in pieces:
            machine.send(piece)
            self._emit(piece)

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
                for frame in frames:
                    self._handle_frame(frame, events)
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
            log.received(len(frame.to_bytes()))
        if self._conn.state in self._watch_all and kind not in self._request_models:
            self._observe(frame, events)
        stream = self._open_streams.get(stream_id)
        if stream is None:
            discarding = self._discarding.get(stream_id)
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

    def _stream_receive(self, stream: Stream, frame: Frame, events: list[Event]) -> None:
        """A whole message through the stream's machine to its handler (as
        ``_handle_frame`` does inline)."""
        if not stream.dispatch.receive(stream.machine, frame, stream, events):
            self._ignored_on(stream, frame)

    def _ignored_on(self, stream: Stream, frame: Frame) -> None:
        """A row of the stream's machine said to ignore ``frame`` (e.g. a REQUEST_* on a
        live id)."""
        self.ignored_frames += 1
        if not stream.opened and type(frame) in self._request_models:
            self._streams.forget(stream.stream_id)  # the request meant to open it is dropped

    def _observe(self, frame: Frame, events: list[Event]) -> Any:
        """Pass a stream frame through the connection machine, which only follows it (IDL
        ``observes:``): establishment, and which REQUEST_* may open a stream now."""
        before = self._conn.state
        outcome = self._conn.receive(frame)
        if outcome is self._CS.ESTABLISHED and before in self._setup_phase:
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

    def on_connection_setup(self, frame: Frame, before: Any, events: list[Event]) -> None:
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

    def on_connection_keepalive(self, frame: Frame, before: Any, events: list[Event]) -> None:
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

    def on_connection_lease(self, frame: Frame, before: Any, events: list[Event]) -> None:
        # "The last received LEASE frame overrides all previous LEASE frame values."
        # Time-To-Live is measured from reception.
        self._leases.received(frame.ttl, frame.number_of_requests, self._now)
        events.append(LeaseReceived(frame.ttl, frame.number_of_requests, frame.metadata))

    def on_connection_metadata_push(self, frame: Frame, before: Any, events: list[Event]) -> None:
        events.append(MetadataPushReceived(frame.metadata))

    def on_connection_error(self, frame: Frame, before: Any, events: list[Event]) -> None:
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

    def _terminate_streams(self, events: list[Event], code: int, why: str) -> None:
        # "This period of time is bound by ... the lifetime of the underlying transport
        # protocol connection".
        for stream_id, _ in self._streams.clear():
            events.append(StreamAborted(stream_id, code, why))

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
            stream.dispatch = self._stream_dispatch[stream.role][stream.model]
        self._ids = session.ids
        self._log = session.log
        self._resume_token = session.token
        # "Leasing semantics are NOT assumed to carry over from previous connections when
        # resuming. LEASE semantics MUST be restarted upon a new connection by sending a
        # LEASE frame from the server."
        self._leases.restart(session.setup.lease)

    def on_connection_resume(self, frame: Frame, before: Any, events: list[Event]) -> None:
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

    def on_connection_resume_ok(self, frame: Frame, before: Any, events: list[Event]) -> None:
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
        self._streams.add(frame.stream_id, stream)
        if frame.follows:
            stream.receive_fragments = self._fragments_machine("receiver")
            whole = self._receive_fragment(stream, frame, events)
            if whole is None:
                return
            frame = whole
        self._stream_receive(stream, frame, events)

    def _on_request(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        """A whole request the stream's machine took: the lease, then the application."""
        stream.opened = True
        machine = stream.machine
        leases = self._leases
        refusal = None
        if self.closing:
            # CONNECTION_CLOSE: "New requests MAY not be accepted" (REJECTED: "The
            # Responder guarantees that it didn't process the request").
            refusal = "the connection is closing (ERROR[CONNECTION_CLOSE])"
        elif leases.required and not leases.admit(self._now):
            refusal = "request exceeds the LEASE"
        if refusal is not None:
            if machine.terminated:  # fire-and-forget: "MAY not be processed"
                self._streams.forget(stream.stream_id)
                return
            self._abort_stream(stream, self.version.rejected, refusal, events, notify=False)
            return
        cap = self.limits.max_streams
        if cap is not None and not machine.terminated and self._peer_streams_exceed(cap):
            # Limits.max_streams: REJECTED "guarantees that it didn't process the request";
            # the connection goes on.
            self._abort_stream(stream, self.version.rejected, f"too many streams (limit {cap})",
                               events, notify=False)  # fmt: skip
            return
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
            self._streams.forget(stream.stream_id)

    def _peer_streams_exceed(self, cap: int) -> bool:
        """Whether the peer has more than ``cap`` streams open (the new one included).
        Counted only when the connection has that many streams at all, so a request costs
        O(1) below the cap."""
        streams = self._open_streams
        if len(streams) <= cap:
            return False
        return sum(1 for stream in streams.values() if stream.role == "responder") > cap

    on_stream_request_response = _on_request
    on_stream_request_fnf = _on_request
    on_stream_request_stream = _on_request

    def on_stream_request_channel(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        if stream.opened:  # 0.2 (IDL M4): a channel requester's later messages
            self.on_stream_payload(frame, stream, events)
        else:
            self._on_request(frame, stream, events)

    def _receive_fragment(self, stream: Stream, frame: Frame, events: list[Event]) -> Frame | None:
        """Run a fragment through ``fragments``; the reassembled message once whole."""
        machine = stream.receive_fragments
        if machine is None:
            machine = stream.receive_fragments = self._fragments_machine("receiver",
                                                                         self._FS.WHOLE)  # fmt: skip
        # The fragments machine only observes (IDL): its state says whether more follow.
        outcome = machine.receive(frame)
        if outcome is IGNORE:
            self.ignored_frames += 1
            return None
        pending = stream.reassembly
        try:
            if outcome is not self._FS.WHOLE:  # more fragments follow
                if pending is None:
                    pending = stream.reassembly = Reassembly(self.limits.max_reassembly_size,
                                                             frame)  # fmt: skip
                pending.add(frame.metadata, frame.data)
                return None
            if pending is None:  # a single frame (F with C: "implicitly ignores the F flag")
                return frame
            pending.add(frame.metadata, frame.data)
        except RemoteProtocolError as error:
            stream.reassembly = None
            # A request still being reassembled is unknown to the application (IDL M13);
            # the rest of its fragments are dropped by `_discarding`.
            self._abort_stream(stream, self.version.invalid, str(error), events,
                               notify=stream.opened)  # fmt: skip
            if machine.state is not self._FS.WHOLE:
                self._discarding.add(stream.stream_id, machine)
            return None
        stream.reassembly = None
        return pending.whole(frame)

    def _discard_fragment(self, stream_id: int, machine: StateMachine[Any], frame: Frame) -> None:
        """Drop the remaining fragments of a message whose stream we aborted."""
        if type(frame) not in self._fragmentable or machine.receive(frame) is self._FS.WHOLE:
            self._discarding.forget(stream_id)
        self.ignored_frames += 1

    def on_stream_payload(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        """PAYLOAD (0.2 RESPONSE, or a 0.2 channel requester's REQUEST_CHANNEL)."""
        machine = stream.machine
        terminated = machine.state in machine.TERMINAL  # (``terminated``, without a call)
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
            self._open_streams.pop(stream.stream_id, None)

    on_stream_response = on_stream_payload  # 0.2 names PAYLOAD "RESPONSE"

    def on_stream_error(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        events.append(ErrorReceived(stream.stream_id, int(frame.error_code), frame.data))
        if stream.machine.terminated:
            self._streams.forget(stream.stream_id)

    def on_stream_cancel(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        events.append(StreamCanceled(stream.stream_id))
        if stream.machine.terminated:
            self._streams.forget(stream.stream_id)

    def on_stream_request_n(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        if stream.outbound is None:
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
        self._streams.forget(stream.stream_id)
        if notify:
            events.append(StreamAborted(stream.stream_id, code, why))
