"""The state every part of the RSocket engine shares, and the plumbing under them.

``RSocketEngineCore`` holds one connection's state (its machines, streams, windows, leases,
keepalive, resumption log, output queues) and what both scopes build on: public state,
output and time (``data_to_send``, ``get_timer``, ``handle_timer``), queueing frames
(``_emit``, ``_transmit`` with fragmentation), finding and ending streams.  The per-stream
behaviour is ``stream_engine.StreamEngine``, the connection's (stream 0, receiving,
resumption) ``engine.RSocketConnection``: the class users build, which implements every
generated handler protocol of both versions (``bindings``).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from typing import Any, Final, NamedTuple

from wirestream.runtime.errors import LocalProtocolError
from wirestream.runtime.machine import Dispatch, MachineRegistry, StateMachine
from wirestream.runtime.rsocket.bindings import bind_connection, bind_stream
from wirestream.runtime.rsocket.errors import UnknownStream
from wirestream.runtime.rsocket.events import (
    ConnectionClosed,
    ConnectionClosing,
    ConnectionDead,
    Event,
    InteractionModel,
    SetupInfo,
    StreamAborted,
)
from wirestream.runtime.rsocket.fragmentation import fragment
from wirestream.runtime.rsocket.keepalive import KeepaliveTimer
from wirestream.runtime.rsocket.lease import Leases
from wirestream.runtime.rsocket.options import ClientSetup, Limits, SetupPolicy
from wirestream.runtime.rsocket.resume import ResumeLog, ResumeLookup
from wirestream.runtime.rsocket.streams import Stream, StreamIds, machine_of
from wirestream.runtime.rsocket.versions import Version, get_version

__all__ = ["DEFAULT_LIMITS", "RSocketEngineCore", "FIXED_PART_MAX", "Frame", "STREAM_ROLES"]

Frame = Any  # a frame of the chosen version's generated codec

FIXED_PART_MAX: Final = 16  # header + the largest fixed request field, rounded up
STREAM_ROLES: Final = ("requester", "responder")
_CHECKED: set[tuple[type, Version]] = set()
"""Engine classes and versions of which an engine bound every stream dispatch."""
DEFAULT_LIMITS: Final = Limits()


class _VersionStates(NamedTuple):
    """What an engine derives from its version's machines and frames (``_states_of``)."""

    peer_completed: Any
    watch_all: frozenset[Any]
    setup_phase: frozenset[Any]
    closing: Any
    fragmentable: frozenset[type]


@functools.cache
def _states_of(v: Version) -> _VersionStates:
    """The states and frame sets every engine of ``v`` keeps (enum members are slow to
    look up: made once per version, not per connection)."""
    cs = v.machines.ConnectionState
    return _VersionStates(
        peer_completed=v.machines.RequestChannelState.HALF_CLOSED_REMOTE,
        watch_all=frozenset({cs.NEW, cs.SETUP_SENT}),
        setup_phase=frozenset({cs.SETUP_SENT, cs.AWAITING_LEASE}),
        closing=getattr(cs, "CLOSING", None),
        fragmentable=frozenset({v.payload, *v.request_models}),
    )


class RSocketEngineCore:
    """One RSocket connection's state and plumbing (see ``RSocketConnection``, the class
    to use: its ``__init__`` parameters are these)."""

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
        states = _states_of(v)  # (the same for every engine of the version: made once)
        # A channel whose peer sent COMPLETE: no REQUEST_N may follow (``request``).
        self._peer_completed = states.peer_completed
        # While `new` (server) or `setup_sent` (client) the connection machine sees every
        # frame (IDL M1); leaving `setup_sent` / `awaiting_lease` for `established`
        # confirms the client's SETUP (M2).
        self._watch_all = states.watch_all
        self._setup_phase = states.setup_phase
        # 1.0 only (IDL M8): ERROR[CONNECTION_CLOSE] sent or received, streams draining.
        self._closing: Any = states.closing
        self._closing_event: ConnectionClosing | None = None

        self._request_models: dict[type, InteractionModel] = v.request_models
        self._payload: Any = v.payload
        self._channel_messages_are_requests = v.channel_requester_messages_are_requests
        self._fragmentable = states.fragmentable
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
        # A stream dispatch is bound when a stream of its role and model first needs it
        # (``_dispatch_of``): most connections use one or two of the eight, and binding
        # them all was a third of an engine's construction.  The first engine of each
        # class and version binds all eight, so that one missing a handler still fails
        # when it is built (``Dispatch``), not when the peer first opens such a stream.
        self._stream_dispatch: dict[str, dict[InteractionModel, Dispatch]] = {
            stream_role: {} for stream_role in STREAM_ROLES
        }
        checked = (type(self), v)
        if checked not in _CHECKED:
            for stream_role in STREAM_ROLES:
                for model in self._stream_machines:
                    self._dispatch_of(stream_role, model)
            _CHECKED.add(checked)

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
        self._discarding_entries = self._discarding.entries  # (for ``_handle_frame``)
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
        # The wire length of each frame of the last ``feed`` (``_track_positions``) and
        # of the frame being handled: a resumable connection's received positions.
        self._frame_sizes: list[int] | None = None
        self._wire_size = 0
        if resume_lookup is not None:
            # A server that resumes sessions may get a SETUP with a token (or a RESUME)
            # followed, in the same read, by frames whose positions count: sizes from
            # the first byte.
            self._track_positions()
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
        return self._open_streams  # the registry's entries (kept in step: ``_adopt``)

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

    def _track_positions(self) -> None:
        """Have the splitter report each frame's length (without the 3-byte prefix) for
        the implied positions of a resumable connection (``_receive``)."""
        if self._frame_sizes is None:
            sizes: list[int] = []
            self._frame_sizes = sizes
            self._decoder.after_frame = lambda frame, size: sizes.append(size)

    def release(self) -> None:
        """Drop the handler tables of a connection that is over for good (closed, and
        not to be resumed): the generated dispatch binds this engine's methods, a
        reference cycle (engine -> Dispatch -> bound method -> engine) that only the
        cycle collector would free.  A closed engine hands no frame to a handler
        (``receive_data`` ignores them), so nothing changes but when it is freed."""
        if not self._conn.terminated:
            raise LocalProtocolError("release() is for a closed connection")
        self._connection.release()
        for by_model in self._stream_dispatch.values():
            for dispatch in by_model.values():
                dispatch.release()

    def _position(self) -> int:
        # KEEPALIVE "Last Received Position ... (optional. Set to all 0s when not supported.)"
        return self._log.received_position if self._log is not None else 0

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

    def _new_stream(self, stream_id: int, model: InteractionModel, role: str) -> Stream:
        """A stream of ``model`` seen as ``role``: its machine and generated dispatch."""
        dispatch = self._stream_dispatch[role].get(model) or self._dispatch_of(role, model)
        return Stream(stream_id, model, role, self._stream_machines[model].fresh(role), dispatch)

    def _dispatch_of(self, role: str, model: InteractionModel) -> Dispatch:
        """The generated dispatch of ``model``'s machine as ``role``, bound to this
        engine (once)."""
        by_model = self._stream_dispatch[role]
        dispatch = by_model.get(model)
        if dispatch is None:
            cls = self._stream_machines[model]
            dispatch = by_model[model] = Dispatch(cls, role, bind_stream(cls, role, self))
        return dispatch

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
        log = self._log
        if log is not None and type(frame) in self._position_frames:
            log.sent(wire, len(wire) - 3)
            if self._conn.state is self._CS.RESUMING:
                # "The client must NOT send any other frame types until resumption
                # succeeds": the retransmit buffer holds it, and RESUME_OK's replay sends
                # it -- once (queued here too, the server got it twice: double demand)
                return
        self._out_streams.append(wire)

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

    def _terminate_streams(self, events: list[Event], code: int, why: str) -> None:
        # "This period of time is bound by ... the lifetime of the underlying transport
        # protocol connection".
        for stream_id, _ in self._streams.clear():
            events.append(StreamAborted(stream_id, code, why))

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
