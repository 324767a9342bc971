"""The per-stream half of the RSocket engine (h2's ``H2Stream`` side of
``H2Connection``): the requests we open and the commands on a stream (``send_next``,
``request``, ``cancel`` ...), and the stream frames we receive once the stream's machine
let them through (``on_stream_<frame>``, the ``Stream*Handlers`` protocols of the
generated machines) -- requests and their lease and stream limits, items and their
request-n credit, fragment reassembly, and ending a stream whose peer broke a rule.
"""

from __future__ import annotations

from typing import Any

from wirestream.runtime.errors import EncodeError, PeerExceededDemand, RemoteProtocolError
from wirestream.runtime.flow import RSOCKET_MAX_N, Window
from wirestream.runtime.machine import IGNORE, StateMachine
from wirestream.runtime.rsocket.errors import NoNewRequests
from wirestream.runtime.rsocket.events import (
    ErrorReceived,
    Event,
    InteractionModel,
    PayloadReceived,
    RequestNReceived,
    RequestReceived,
    StreamCanceled,
    StreamCompleted,
)
from wirestream.runtime.rsocket.fragmentation import Reassembly
from wirestream.runtime.rsocket.streams import Stream

from wirestream.runtime.rsocket.engine_core import FIXED_PART_MAX, RSocketEngineCore, Frame
from wirestream.runtime.rsocket.frames import (
    CancelFrame,
    ErrorFrame,
    RequestNFrame,
)

__all__ = ["StreamEngine"]


class StreamEngine(RSocketEngineCore):
    """Stream commands and the ``on_stream_*`` handlers (see ``RSocketConnection``)."""

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
        closing = self._closing
        if closing is not None and self._conn.state is closing:  # (``self.closing``)
            raise NoNewRequests(
                "the connection is closing (ERROR[CONNECTION_CLOSE]): 'New requests MAY not be"
                " accepted'"
            )
        self._conn.send(frame)  # IllegalSend before SETUP, while awaiting a LEASE, after close
        leases = self._leases
        required = leases.required
        if required:
            leases.check_request(self._now)  # NoLease
        streams = self._open_streams
        stream_id = self._ids.allocate(streams)
        frame.stream_id = stream_id
        stream = self._new_stream(stream_id, model, "requester")
        machine = stream.machine
        state = machine.send(frame)
        if required:
            leases.spend_request()
        stream.inbound = inbound
        stream.outbound = outbound
        if state not in machine.TERMINAL:
            streams[stream_id] = stream  # (``self._streams.add``)
        self._transmit(stream, frame, opening=True)
        return stream_id

    # ================================================================== stream commands

    def send_next(self, stream_id: int, data: bytes, metadata: bytes | None = None,
                  complete: bool = False) -> None:  # fmt: skip
        """Send one item (PAYLOAD with N, plus C when ``complete``).  A request-response
        answer must have ``complete=True``.  Needs credit from the peer (``DemandExceeded``
        otherwise)."""
        stream = self._open_streams.get(stream_id)
        if stream is None:
            stream = self._get(stream_id)  # raises UnknownStream
        if self._channel_messages_are_requests and stream.is_channel_requester:
            frame = self.version.message(stream_id, True, data, metadata, True, complete)
        else:  # PAYLOAD with N (``Version.message``, built here: once per item)
            frame = self._payload(stream_id=stream_id, metadata=metadata, data=data, next=True,
                                  complete=complete)  # fmt: skip
        outbound = stream.outbound
        if outbound is not None and not outbound.can_consume(1):
            outbound.consume(1)  # raises DemandExceeded: the peer has not requested more
        machine = stream.machine
        state = machine.send(frame)
        if outbound is not None:
            outbound.consume(1)
        body = len(data) if metadata is None else len(data) + len(metadata) + 3
        if body + FIXED_PART_MAX <= self._mtu:  # ``_transmit``'s common case, inline
            self._emit(frame)
        else:
            self._transmit(stream, frame)
        if state in machine.TERMINAL:
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
        if data.endswith(b"\x00"):
            # ERROR Frame: "Error Data SHOULD be a UTF-8 encoded string. The string MUST NOT
            # be null terminated." Refused before anything is sent: the stream stays open.
            raise EncodeError(
                f"ERROR data {data[-16:]!r} is null terminated (the spec says MUST NOT)"
            )
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

    def _on_request(self, frame: Frame, stream: Stream, events: list[Event]) -> None:
        """A whole request the stream's machine took: the lease, then the application."""
        stream.opened = True
        machine = stream.machine
        terminated = machine.state in machine.TERMINAL  # (``machine.terminated``)
        leases = self._leases
        refusal = None
        closing = self._closing
        if closing is not None and self._conn.state is closing:  # (``self.closing``)
            # CONNECTION_CLOSE: "New requests MAY not be accepted" (REJECTED: "The
            # Responder guarantees that it didn't process the request").
            refusal = "the connection is closing (ERROR[CONNECTION_CLOSE])"
        elif leases.required and not leases.admit(self._now):
            refusal = "request exceeds the LEASE"
        if refusal is not None:
            if terminated:  # fire-and-forget: "MAY not be processed"
                self._streams.forget(stream.stream_id)
                return
            self._abort_stream(stream, self.version.rejected, refusal, events, notify=False)
            return
        cap = self.limits.max_streams
        if (cap is not None and not terminated and len(self._open_streams) > cap
                and self._peer_streams_exceed(cap)):  # fmt: skip
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
        if terminated:
            self._open_streams.pop(stream.stream_id, None)  # (``self._streams.forget``)

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

    def on_stream_error(self, frame: ErrorFrame, stream: Stream, events: list[Event]) -> None:
        events.append(ErrorReceived(stream.stream_id, int(frame.error_code), frame.data))
        if stream.machine.terminated:
            self._streams.forget(stream.stream_id)

    def on_stream_cancel(self, frame: CancelFrame, stream: Stream, events: list[Event]) -> None:
        events.append(StreamCanceled(stream.stream_id))
        if stream.machine.terminated:
            self._streams.forget(stream.stream_id)

    def on_stream_request_n(
        self, frame: RequestNFrame, stream: Stream, events: list[Event]
    ) -> None:
        if stream.outbound is None:
            self.ignored_frames += 1
            return
        # "Credits are cumulative" (saturating at 2^31-1: no "unbounded" value).
        stream.outbound.grant(frame.request_n)
        events.append(RequestNReceived(stream.stream_id, frame.request_n))
