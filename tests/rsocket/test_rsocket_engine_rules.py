"""One test per rule of the RSocket spec the engine implements (1.0 and 0.2 wherever the
rule is in both), named after the rule, the passage quoted in its docstring.  Invalid
peer sequences are raw frames built with the generated codec and fed to receive_data."""

from __future__ import annotations

from typing import Any

import pytest

from wirestream.runtime.errors import EncodeError, IllegalSend, RemoteProtocolError, UnexpectedFrame
from wirestream.runtime.rsocket import (
    ClientSetup,
    ConnectionClosed,
    ConnectionDead,
    ConnectionEstablished,
    ConnectionRejected,
    ErrorReceived,
    KeepaliveReceived,
    LeaseReceived,
    MetadataPushReceived,
    NoLease,
    PayloadReceived,
    RequestReceived,
    RSocketConnection,
    StreamAborted,
    StreamCanceled,
    StreamCompleted,
    StreamIdsExhausted,
)
from wirestream.runtime.rsocket.streams import MAX_STREAM_ID
from tests.support.engine_pair import shuttle
from tests.rsocket.test_rsocket_engine_helpers import (
    VERSIONS,
    codec,
    decode_all,
    of_type,
    pair,
    payload,
    server_after_setup,
    setup_frame,
    v,
    wire,
)

versions = pytest.mark.parametrize("version", VERSIONS)


def only_frame(version: str, data: bytes) -> Any:
    (frame,) = decode_all(version, data)
    return frame


# ====================================================================== connection setup


@versions
def test_first_frame_not_setup_gets_invalid_setup_and_close(version: str) -> None:
    """Connection Establishment: 'Any other frame received that is NOT a SETUP frame or a
    SETUP frame with a non-0 Stream ID, MUST cause the server to send a SETUP_ERROR (with
    INVALID_SETUP) and close the connection.'"""
    for first in (
        codec(version).Keepalive(respond=True),
        codec(version).RequestResponse(stream_id=1),
    ):
        s = RSocketConnection("server", version)
        with pytest.raises(UnexpectedFrame):
            s.receive_data(wire(version, first))
        error = only_frame(version, s.data_to_send())
        assert (error.stream_id, error.error_code) == (0, v(version).invalid_setup)
        assert s.closed


@versions
def test_setup_on_nonzero_stream_gets_invalid_setup(version: str) -> None:
    """'... or a SETUP frame with a non-0 Stream ID, MUST cause the server to send a
    SETUP_ERROR (with INVALID_SETUP)'; 'Setup frames MUST always use Stream ID 0'."""
    s = RSocketConnection("server", version)
    bad = setup_frame(version)
    bad.stream_id = 1
    with pytest.raises(UnexpectedFrame):
        s.receive_data(wire(version, bad))
    assert only_frame(version, s.data_to_send()).error_code == v(version).invalid_setup


@versions
def test_rejected_setup_sends_setup_error_then_closes(version: str) -> None:
    """'If the server does NOT accept the contents of the SETUP frame, the server MUST send
    back a SETUP_ERROR and then close the connection.' / 'A client assumes a SETUP is
    rejected if it receives a SETUP_ERROR.'"""
    code = v(version).unsupported_setup
    c, s, events_c, events_s = pair(
        version, server={"setup_policy": lambda info: (code, "no thanks")}, establish=False
    )
    assert events_s == [ConnectionRejected(code, b"no thanks", by_peer=False)]
    assert events_c == [ConnectionRejected(code, b"no thanks", by_peer=True)]
    assert s.closed and c.closed


@versions
def test_setup_with_resume_flag_rejected_if_resume_unsupported(version: str) -> None:
    """1.0 SETUP: 'A server that receives a SETUP frame that has (R)esume Enabled set, but
    does not support resuming operation, MUST reject the SETUP with an
    ERROR[REJECTED_SETUP].' (0.2: 'must reject the SETUP with an ERROR')."""
    c, s, events_c, _ = pair(version, client={"resume_token": bytes(16)}, establish=False)
    assert events_c == [
        ConnectionRejected(
            v(version).resume_unsupported_setup, b"resumption is not supported", True
        )
    ]


@versions
def test_setup_with_unsupported_version_is_rejected(version: str) -> None:
    """Versioning: 'It is up to a server to accept clients of lower versions than what it
    supports.' A different major version is refused with UNSUPPORTED_SETUP."""
    s = RSocketConnection("server", version)
    events = s.receive_data(wire(version, setup_frame(version, major_version=7)))
    assert of_type(events, ConnectionRejected)[0].error_code == v(version).unsupported_setup
    assert s.closed


@versions
def test_setup_mime_types_passed_through_uninterpreted(version: str) -> None:
    """SETUP: 'The protocol implementation MUST NOT interpret the MIME type itself.'"""
    s = RSocketConnection("server", version)
    frame = setup_frame(version, metadata_mime_type="x/whatever", data_mime_type="y/z")
    (established,) = s.receive_data(wire(version, frame))
    assert isinstance(established, ConnectionEstablished)
    assert (established.setup.metadata_mime_type, established.setup.data_mime_type) == (
        "x/whatever",
        "y/z",
    )


@versions
def test_setup_mime_type_should_be_us_ascii(version: str) -> None:
    """SETUP Frame, Encoding MIME Type: "This SHOULD be a US-ASCII string". We never send
    one that is not (EncodeError before anything is sent); a peer's arrives as it came
    ("The protocol implementation MUST NOT interpret the MIME type itself")."""
    with pytest.raises(EncodeError, match="US-ASCII"):
        RSocketConnection("client", version, setup=ClientSetup(data_mime_type="tëxt/plain"))
    s = RSocketConnection("server", version)
    (established,) = s.receive_data(wire(version, setup_frame(version, data_mime_type="tëxt")))
    assert established.setup.data_mime_type == "tëxt"


@versions
def test_client_setup_accepted_on_response_lease_or_request(version: str) -> None:
    """'A client assumes a SETUP is accepted if it receives a response to a request, a
    LEASE frame, or if it sees a REQUEST type.'"""
    for trigger in ("response", "lease", "request"):
        c, s, events_c, _ = pair(version, establish=False)
        assert not of_type(events_c, ConnectionEstablished)
        if trigger == "response":
            sid = c.request_response(b"")
            shuttle(c, s)
            s.send_next(sid, b"", complete=True)
        elif trigger == "lease":
            s.send_lease(1000, 1)
        else:
            s.fire_and_forget(b"")
        events_c, _ = shuttle(c, s)
        assert isinstance(events_c[0], ConnectionEstablished), trigger


@versions
def test_client_without_lease_flag_may_request_right_after_setup(version: str) -> None:
    """'The client-side Requester that has NOT set the L flag in the SETUP frame may send
    requests immediately if it so desires without waiting for a LEASE from the server.'"""
    c = RSocketConnection("client", version)
    c.connect()
    sid = c.request_stream(b"now", initial_n=1)
    frames = decode_all(version, c.data_to_send())
    assert [type(f).__name__ for f in frames] == ["Setup", "RequestStream"]
    assert frames[1].stream_id == sid


@versions
def test_no_request_or_response_before_establishment(version: str) -> None:
    """'Immediately upon successful connection, the client MUST send a SETUP frame' and
    'Until connection establishment is complete, a Responder MUST NOT emit any RESPONSE
    frames.'"""
    with pytest.raises(IllegalSend):
        RSocketConnection("client", version).request_response(b"too early")
    with pytest.raises(IllegalSend):
        RSocketConnection("server", version).request_response(b"too early")


@versions
def test_client_ignores_setup_error_after_establishment(version: str) -> None:
    """Handling the Unexpected: 'A client MUST ignore a SETUP_ERROR after it has completed
    connection establishment.'"""
    c, s, _, _ = pair(version)
    rejected_setup = int(codec(version).ErrorCode.REJECTED_SETUP)
    events = c.receive_data(wire(version, v(version).error(0, rejected_setup, b"late")))
    assert events == [] and not c.closed and c.ignored_frames == 1


@versions
def test_server_ignores_setup_error(version: str) -> None:
    """Handling the Unexpected: 'A server MUST ignore a SETUP_ERROR frame.'"""
    s = server_after_setup(version)
    assert s.receive_data(wire(version, v(version).error(0, v(version).invalid_setup, b""))) == []
    assert not s.closed


@versions
def test_server_ignores_second_setup(version: str) -> None:
    """Handling the Unexpected: 'A server MUST ignore a SETUP frame after it has accepted a
    previous SETUP.'"""
    s = server_after_setup(version)
    assert s.receive_data(wire(version, setup_frame(version))) == []
    assert s.ignored_frames == 1 and not s.closed


@versions
def test_client_ignores_setup(version: str) -> None:
    """Handling the Unexpected: 'A client MUST ignore a SETUP frame.'"""
    c, _, _, _ = pair(version)
    assert c.receive_data(wire(version, setup_frame(version))) == []
    assert c.ignored_frames == 1


@versions
def test_connection_error_on_stream_zero_terminates_connection_and_streams(version: str) -> None:
    """ERROR: 'A Stream ID of 0 means the error pertains to the connection.'; streams live
    at most as long as the connection."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    events = s.close()
    assert StreamAborted(sid, v(version).connection_error, "connection closed") in events
    events_c, _ = shuttle(c, s)
    assert events_c == [
        ConnectionClosed(v(version).connection_error, b"", by_peer=True),
        StreamAborted(sid, v(version).connection_error, "connection error from the peer"),
    ]
    assert c.closed and s.closed and not c.open_streams


@versions
def test_frames_after_close_are_ignored(version: str) -> None:
    """Transport Protocol: 'it is assumed that that connection will have no further frames
    sent and all frames will be ignored.'"""
    c, s, _, _ = pair(version)
    c.close()
    shuttle(c, s)
    assert s.receive_data(wire(version, codec(version).RequestResponse(stream_id=9))) == []
    with pytest.raises(IllegalSend):
        s.metadata_push(b"x")


@versions
def test_eof_closes_every_open_stream(version: str) -> None:
    """Stream Sequences and Lifetimes: 'This period of time is bound by, at most, the
    lifetime of the underlying transport protocol connection lifetime.'"""
    c, s, _, _ = pair(version)
    a = c.request_stream(b"", initial_n=1)
    b = c.request_channel(b"")
    shuttle(c, s)
    events = c.receive_data(b"")
    assert {e.stream_id for e in of_type(events, StreamAborted)} == {a, b}
    assert of_type(events, ConnectionClosed) == [ConnectionClosed(None, b"", True, False)]
    assert c.closed and not c.open_streams


@versions
def test_unknown_frame_with_ignore_flag_is_dropped(version: str) -> None:
    """Handling Ignore Flag: a frame that it does not understand with the I flag set is
    ignored."""
    s = server_after_setup(version)
    unknown = codec(version).UnknownFrame(
        code=0x30, stream_id=0, flags=s_ignore(version), body=b"?"
    )
    assert s.receive_data(wire(version, unknown)) == []
    assert s.ignored_frames == 1 and not s.closed


def s_ignore(version: str) -> int:
    return 0x200 if version == "1.0" else 0x80


@versions
def test_unknown_frame_without_ignore_flag_errors_connection(version: str) -> None:
    """Handling Ignore Flag: 'An implementation MAY send an ERROR[CONNECTION_ERROR] frame
    and close the underlying transport connection on reception of a frame that it does
    not understand with this bit not set.'"""
    s = server_after_setup(version)
    unknown = codec(version).UnknownFrame(code=0x30, stream_id=0, flags=0, body=b"?")
    with pytest.raises(RemoteProtocolError):
        s.receive_data(wire(version, unknown))
    assert only_frame(version, s.data_to_send()).error_code == v(version).connection_error
    assert s.closed


def test_metadata_length_overrun_frame_is_ignored() -> None:
    """0.2 Metadata Optional Header: 'If Metadata Length is greater than this value, the
    entire frame MUST be ignored.' (and the next frame is still processed)."""
    version = "0.2"
    s = server_after_setup(version)
    good = codec(version).RequestFnf(stream_id=1, data=b"ok")
    bad = bytearray(good.to_bytes())
    bad[5] |= 0x40  # M flag: the data bytes now claim a 24-bit metadata length
    bad += b""
    raw = len(bad).to_bytes(3, "big") + bytes(bad)
    events = s.receive_data(raw + wire(version, codec(version).RequestFnf(stream_id=3, data=b"x")))
    assert [e.stream_id for e in of_type(events, RequestReceived)] == [3]
    assert s.ignored_frames == 1 and not s.closed


def test_metadata_length_mismatch_is_connection_error() -> None:
    """1.0 Metadata Optional Header: a frame whose Metadata Length does not fit the frame
    is invalid: ERROR[CONNECTION_ERROR] and close (the I flag is not set)."""
    version = "1.0"
    s = server_after_setup(version)
    body = bytearray(codec(version).RequestFnf(stream_id=1, data=b"ok").to_bytes())
    body[4] |= 0x01  # M flag (0x100 of the type/flags word)
    with pytest.raises(RemoteProtocolError):
        s.receive_data(len(body).to_bytes(3, "big") + bytes(body))
    assert only_frame(version, s.data_to_send()).error_code == v(version).connection_error


# ====================================================================== the ignore list


@versions
def test_metadata_push_on_nonzero_stream_is_ignored(version: str) -> None:
    """Handling the Unexpected: 'Receiving a METADATA_PUSH with a non-0 Stream ID MUST be
    ignored.'"""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    for stream_id in (sid, 99):
        push = codec(version).MetadataPush(stream_id=stream_id, metadata=b"m")
        assert s.receive_data(wire(version, push)) == []
    assert not of_type(s.receive_data(wire(version, codec(version).MetadataPush(metadata=b"m"))),
                       ConnectionClosed)  # fmt: skip
    assert s.ignored_frames == 2


@versions
def test_request_on_active_stream_id_is_ignored(version: str) -> None:
    """Handling the Unexpected: 'Receiving a Request frame on a Stream ID that is already in
    use MUST be ignored.'"""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"first", initial_n=1)
    shuttle(c, s)
    again = codec(version).RequestResponse(stream_id=sid, data=b"again")
    assert s.receive_data(wire(version, again)) == []
    assert s.ignored_frames == 1 and sid in s.open_streams


@versions
def test_cancel_on_unknown_or_zero_stream_is_ignored(version: str) -> None:
    """Handling the Unexpected: 'Receiving a CANCEL on an unknown Stream ID (including 0)
    MUST be ignored.'"""
    s = server_after_setup(version)
    for stream_id in (0, 7):
        assert s.receive_data(wire(version, codec(version).Cancel(stream_id=stream_id))) == []
    assert s.ignored_frames == 2 and not s.closed


@versions
def test_error_on_unknown_stream_is_ignored(version: str) -> None:
    """Handling the Unexpected: 'Receiving an ERROR on an unknown Stream ID MUST be
    ignored.'"""
    s = server_after_setup(version)
    error = v(version).error(7, v(version).application_error, b"")
    assert s.receive_data(wire(version, error)) == []
    assert s.ignored_frames == 1


@versions
def test_payload_on_unknown_or_zero_stream_is_ignored(version: str) -> None:
    """Handling the Unexpected: 'Receiving a PAYLOAD (0.2: RESPONSE) on an unknown Stream
    ID (including 0) MUST be ignored.'"""
    c, _, _, _ = pair(version)
    for stream_id in (0, 41):
        frame = payload(version, stream_id=stream_id, next=True, data=b"x")
        assert c.receive_data(wire(version, frame)) == []
    assert c.ignored_frames == 2 and not c.closed


@versions
def test_unaccounted_frames_are_ignored(version: str) -> None:
    """Handling the Unexpected: 'All other received frames that are not accounted for in
    previous sections MUST be ignored.' (REQUEST_N on an unknown id, LEASE on a stream,
    RESUME_OK when established, a request with the receiver's own id parity)."""
    c, s, _, _ = pair(version)
    C = codec(version)
    frames = [C.RequestN(stream_id=5, request_n=1), C.Lease(stream_id=3, ttl=1, number_of_requests=1),
              v(version).resume_ok(0), C.RequestResponse(stream_id=2, data=b"")]  # fmt: skip
    for frame in frames:
        assert s.receive_data(wire(version, frame)) == [], frame
    assert s.ignored_frames == len(frames) and not s.closed


@versions
def test_stream_error_codes_are_application_range(version: str) -> None:
    """ERROR Frame: connection and setup codes: 'Stream ID MUST be 0'; APPLICATION_ERROR,
    REJECTED, CANCELED, INVALID: 'Stream ID MUST be non-0'.  We never send the former on
    a stream; received on a stream it is not accounted for and ignored."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    with pytest.raises(IllegalSend):
        s.send_error(sid, v(version).connection_error)
    misplaced = v(version).error(sid, v(version).connection_error, b"")
    assert c.receive_data(wire(version, misplaced)) == []
    assert sid in c.open_streams


@versions
def test_request_response_response_without_complete_is_treated_as_complete(version: str) -> None:
    """Handling the Unexpected: 'If a RESPONSE for a REQUEST_RESPONSE is received that does
    not have a COMPLETE flag set, the implementation MUST assume it is set and act
    accordingly.'"""
    c, _, _, _ = pair(version)
    sid = c.request_response(b"")
    c.data_to_send()
    events = c.receive_data(wire(version, payload(version, stream_id=sid, next=True, data=b"r")))
    assert events == [PayloadReceived(sid, b"r", None, True), StreamCompleted(sid)]
    assert sid not in c.open_streams


@versions
def test_payload_without_next_or_complete_is_invalid(version: str) -> None:
    """PAYLOAD Frame: 'A PAYLOAD MUST NOT have both (C)complete and (N)ext empty (false).'
    Never sent; when received it has no stated consequence and is ignored."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=2)
    shuttle(c, s)
    empty = payload(version, stream_id=sid, data=b"")
    with pytest.raises(IllegalSend):
        s.open_streams[sid].machine.send(empty)
    assert c.receive_data(wire(version, empty)) == []
    assert c.ignored_frames == 1 and sid in c.open_streams


@versions
def test_peer_exceeding_demand_is_a_stream_error(version: str) -> None:
    """Flow Control: 'The Requester and the Responder MUST respect the reactive-streams
    semantics'.  An item beyond the granted credit ends the stream: the requester cancels
    it (it may only send CANCEL) and reports StreamAborted."""
    c, _, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=1)
    c.data_to_send()
    items = [payload(version, stream_id=sid, next=True, data=b"%d" % i) for i in range(2)]
    events = c.receive_data(wire(version, *items))
    assert events[0] == PayloadReceived(sid, b"0", None, False)
    assert isinstance(events[1], StreamAborted) and events[1].stream_id == sid
    (cancel,) = decode_all(version, c.data_to_send())
    assert type(cancel).__name__ == "Cancel" and cancel.stream_id == sid


@versions
def test_responder_never_sends_more_payloads_than_requested(version: str) -> None:
    """Reactive Streams Semantics: 'RS needs to wait for a new REQUEST_N at that point'."""
    from wirestream.runtime.errors import DemandExceeded

    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    s.send_next(sid, b"1")
    with pytest.raises(DemandExceeded):
        s.send_next(sid, b"2")


@versions
def test_stalled_stream_is_not_timed_out_by_protocol(version: str) -> None:
    """Handling the Unexpected: 'Lack of REQUEST_N frames that stops a stream is an
    application concern and SHALL NOT be handled by the protocol.'"""
    c, s, _, _ = pair(version, client={"keepalive_interval": 1000, "max_lifetime": 10**6})
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    for now in range(1, 50):
        c.handle_timer(float(now))
        s.handle_timer(float(now))
        shuttle(c, s)
    assert sid in c.open_streams and sid in s.open_streams


# ====================================================================== channels


@versions
def test_channel_requester_waits_for_request_n_before_payload(version: str) -> None:
    """REQUEST_CHANNEL: 'A requester MUST not send PAYLOAD frames after the REQUEST_CHANNEL
    frame until the responder sends a REQUEST_N frame granting credits'."""
    from wirestream.runtime.errors import DemandExceeded

    c, s, _, _ = pair(version)
    sid = c.request_channel(b"first")
    shuttle(c, s)
    with pytest.raises(DemandExceeded):
        c.send_next(sid, b"second")
    s.request(sid, 1)
    shuttle(c, s)
    c.send_next(sid, b"second")


@versions
def test_channel_requester_complete_on_initial_frame(version: str) -> None:
    """Request Channel: 'A Requester may indicate COMPLETE by setting the C bit on either
    the initial REQUEST_CHANNEL frame, or on the last PAYLOAD frame sent.'"""
    c, s, _, _ = pair(version)
    sid = c.request_channel(b"only", complete=True)
    _, events_s = shuttle(c, s)
    assert events_s[0].complete
    s.send_next(sid, b"reply", complete=True)
    events_c, _ = shuttle(c, s)
    assert events_c[-1] == StreamCompleted(sid)
    assert not c.open_streams and not s.open_streams


@versions
def test_channel_requester_no_payload_after_complete(version: str) -> None:
    """Request Channel: 'A Requester MUST NOT send any additional PAYLOAD (0.2:
    REQUEST_CHANNEL) frames after sending a frame with the C bit set.'"""
    c, s, _, _ = pair(version)
    sid = c.request_channel(b"a")
    shuttle(c, s)
    s.request(sid, 5)
    shuttle(c, s)
    c.send_complete(sid)
    with pytest.raises(IllegalSend):
        c.send_next(sid, b"late")


def test_channel_half_close_each_direction() -> None:
    """1.0 Request Channel: 'In absence of ERROR or CANCEL, the stream is terminated after
    both Requester and Responder have sent and received COMPLETE.'"""
    c, s, _, _ = pair("1.0")
    sid = c.request_channel(b"a")
    shuttle(c, s)
    s.send_complete(sid)  # the responder's half ends; the requester may still send
    shuttle(c, s)
    s.request(sid, 1)
    shuttle(c, s)
    c.send_next(sid, b"still open", complete=True)
    _, events_s = shuttle(c, s)
    assert events_s == [PayloadReceived(sid, b"still open", None, True), StreamCompleted(sid)]
    assert not c.open_streams and not s.open_streams


def test_channel_responder_complete_ends_whole_channel() -> None:
    """0.2 Request Channel: 'Upon sending a COMPLETE or ERROR, the stream is terminated on
    the Responder.' / 'Upon receiving a COMPLETE or ERROR, the stream is terminated on the
    Requester.' (IDL M7: unlike 1.0's half-close)."""
    c, s, _, _ = pair("0.2")
    sid = c.request_channel(b"a")
    shuttle(c, s)
    s.send_complete(sid)
    events_c, _ = shuttle(c, s)
    assert events_c == [StreamCompleted(sid)]
    assert not c.open_streams and not s.open_streams


@versions
def test_channel_requester_error_or_cancel_terminates_both(version: str) -> None:
    """Request Channel: 'Upon sending a CANCEL, the stream is terminated on the Requester';
    'Upon receiving a CANCEL, the stream is terminated on the Responder.'"""
    c, s, _, _ = pair(version)
    sid = c.request_channel(b"a")
    shuttle(c, s)
    c.cancel(sid)
    _, events_s = shuttle(c, s)
    assert events_s == [StreamCanceled(sid)]
    assert not c.open_streams and not s.open_streams


# ====================================================================== stream ids


@versions
def test_client_odd_server_even_stream_ids(version: str) -> None:
    """Stream Identifiers: 'Stream IDs on the client MUST start at 1 and increment by 2
    sequentially ... Stream IDs on the server MUST start at 2 and increment by 2'."""
    c, s, _, _ = pair(version, establish=False)
    assert [c.fire_and_forget(b"") for _ in range(3)] == [1, 3, 5]
    assert [s.fire_and_forget(b"") for _ in range(3)] == [2, 4, 6]


@versions
def test_stream_id_not_reused(version: str) -> None:
    """Stream Sequences and Lifetimes: 'the Stream ID MUST NOT be re-used' (1.0; 0.2 only
    recommends 'not aggressively re-use IDs')."""
    c, s, _, _ = pair(version, establish=False)
    seen = set()
    for _ in range(5):
        sid = c.request_response(b"")
        shuttle(c, s)
        s.send_next(sid, b"", complete=True)
        shuttle(c, s)
        assert sid not in seen
        seen.add(sid)


@versions
def test_stream_id_exhaustion_requires_new_connection(version: str) -> None:
    """Stream Identifiers: 'If Stream IDs are not re-used ... a new connection MUST be
    established' once 2^31-1 has been used."""
    c, _, _, _ = pair(version)
    c._ids.next_id = MAX_STREAM_ID  # the last odd id
    assert c.fire_and_forget(b"") == MAX_STREAM_ID
    with pytest.raises(StreamIdsExhausted):
        c.fire_and_forget(b"")


@versions
def test_stream_id_wraparound_skips_ids_in_use(version: str) -> None:
    """Stream Identifiers: 'The Requester MUST re-use IDs by wrapping and restarting at ID 1
    for client' and 'The Requester MUST skip IDs still in use.'"""
    c, s, _, _ = pair(version, client={"reuse_stream_ids": True}, establish=False)
    live = c.request_stream(b"", initial_n=1)  # stream 1 stays open
    assert live == 1
    c._ids.next_id = MAX_STREAM_ID
    assert c.fire_and_forget(b"") == MAX_STREAM_ID
    assert c.fire_and_forget(b"") == 3  # wrapped, skipped 1


# ====================================================================== lease


def lease_pair(version: str) -> tuple[RSocketConnection, RSocketConnection]:
    c, s, _, _ = pair(version, client={"lease": True}, server={"leasing": True},
                      establish=False)  # fmt: skip
    return c, s


@versions
def test_client_with_lease_flag_cannot_request_before_lease(version: str) -> None:
    """Connection Establishment: 'The client-side Requester that has set the L flag in the
    SETUP frame MUST wait for the server-side Responder to send a LEASE frame before it can
    send Requests.'"""
    c, s = lease_pair(version)
    with pytest.raises(IllegalSend):
        c.request_response(b"")
    s.send_lease(10_000, 1, now=0.0)
    events_c, _ = shuttle(c, s)
    assert isinstance(events_c[0], ConnectionEstablished)
    assert events_c[1] == LeaseReceived(10_000, 1, None)
    c.request_response(b"", now=1.0)


@versions
def test_server_requester_waits_for_client_lease(version: str) -> None:
    """Connection Establishment: 'If a client-side Requester sets the L flag in the SETUP
    frame, the server-side Requester MUST wait for a LEASE frame from the client-side
    Responder before it can send a request.'"""
    c, s = lease_pair(version)
    with pytest.raises(IllegalSend):
        s.request_response(b"")
    s.send_lease(10_000, 5)
    shuttle(c, s)
    c.send_lease(10_000, 1)
    shuttle(c, s)
    s.request_response(b"")


@versions
def test_requester_never_exceeds_lease_count_within_ttl(version: str) -> None:
    """Lease Semantics: 'The Requester MUST NOT send more than Number of Requests specified
    in the LEASE frame within the Time-To-Live value in the LEASE.'"""
    c, s = lease_pair(version)
    s.send_lease(10_000, 2, now=0.0)
    shuttle(c, s)
    c.fire_and_forget(b"", now=1.0)
    c.request_stream(b"", initial_n=1, now=1.0)
    with pytest.raises(NoLease):
        c.fire_and_forget(b"", now=1.0)


@versions
def test_expired_lease_blocks_requests(version: str) -> None:
    """LEASE: 'When a LEASE expires due to time, the value of the Number of Requests that a
    Requester may make is implicitly 0.' (TTL counted from reception)."""
    c, s = lease_pair(version)
    s.send_lease(2_000, 10, now=0.0)
    c.receive_data(s.data_to_send(), now=5.0)
    c.fire_and_forget(b"", now=6.9)
    with pytest.raises(NoLease):
        c.fire_and_forget(b"", now=7.0)


@versions
def test_the_engine_shows_the_current_lease_and_whether_it_allows_a_request_now(
    version: str,
) -> None:
    """``RSocketConnection.lease``: the last LEASE's requests left and expiry (reception
    plus Time-To-Live, on the caller's clock); ``lease_allows(now)`` is False once it is
    spent or expired ("implicitly 0"), as the requests themselves find (``NoLease``)."""
    c, s = lease_pair(version)
    assert c.lease is None and not c.lease_allows(0.0)
    s.send_lease(2_000, 2, now=0.0)
    c.receive_data(s.data_to_send(), now=5.0)
    status = c.lease
    assert status is not None and (status.requests_left, status.expires_at) == (2, 7.0)
    assert c.lease_allows(6.9) and not c.lease_allows(7.0)
    c.fire_and_forget(b"", now=6.0)
    c.fire_and_forget(b"", now=6.0)
    status = c.lease
    assert status is not None and status.requests_left == 0
    assert not c.lease_allows(6.0) and not status.allows(6.0)
    unleased, _, _, _ = pair(version)
    assert unleased.lease is None and unleased.lease_allows(0.0)


@versions
def test_new_lease_replaces_old_budget(version: str) -> None:
    """LEASE: 'The last received LEASE frame overrides all previous LEASE frame values.'"""
    c, s = lease_pair(version)
    s.send_lease(10_000, 5)
    s.send_lease(10_000, 1)
    shuttle(c, s)
    c.fire_and_forget(b"")
    with pytest.raises(NoLease):
        c.fire_and_forget(b"")


@versions
def test_lease_uses_stream_id_zero(version: str) -> None:
    """LEASE Frame: "Lease frames MUST always use Stream ID 0 as they pertain to the
    Connection." Ours go on stream 0 and no other can be sent; one on another stream is
    not a lease (ignored: "All other received frames that are not accounted for ... MUST be
    ignored")."""
    c, s = lease_pair(version)
    c.data_to_send()
    stray = codec(version).Lease(stream_id=5, ttl=10_000, number_of_requests=5)
    assert c.receive_data(wire(version, stray)) == []
    with pytest.raises(IllegalSend, match="must wait for the server's LEASE"):
        c.fire_and_forget(b"")
    s.send_lease(10_000, 5)
    (lease,) = decode_all(version, s.data_to_send())
    assert lease.stream_id == 0
    with pytest.raises(IllegalSend):
        s._conn.send(codec(version).Lease(stream_id=2, ttl=10_000, number_of_requests=5))
    assert LeaseReceived(10_000, 5, None) in c.receive_data(wire(version, lease))
    c.fire_and_forget(b"")


@versions
def test_lease_with_zero_count_or_ttl_blocks_requests(version: str) -> None:
    """LEASE: 'A Responder implementation MAY stop all further requests by sending a LEASE
    with a value of 0 for Number of Requests or Time-To-Live.'"""
    for ttl, count in ((10_000, 0), (0, 10)):
        c, s = lease_pair(version)
        s.send_lease(ttl, count)
        shuttle(c, s)
        with pytest.raises(NoLease):
            c.fire_and_forget(b"")


@versions
def test_request_beyond_lease_gets_rejected(version: str) -> None:
    """Lease Semantics (1.0): 'A Responder that receives a REQUEST that it can not honor due
    to LEASE restrictions MUST respond with an ERROR[REJECTED].' (0.2: LEASE_ERROR, which
    has no value; REJECTED is sent, IDL M11)."""
    s = server_after_setup(version, lease=True)
    s.send_lease(10_000, 1)
    s.data_to_send()
    requests = [codec(version).RequestResponse(stream_id=i, data=b"") for i in (1, 3)]
    events = s.receive_data(wire(version, *requests))
    assert [e.stream_id for e in of_type(events, RequestReceived)] == [1]
    (error,) = decode_all(version, s.data_to_send())
    assert (error.stream_id, error.error_code) == (3, v(version).rejected)


@versions
def test_missing_lease_never_times_out_connection(version: str) -> None:
    """Handling the Unexpected: 'Lack of LEASE frames that stops new Requests is an
    application concern and SHALL NOT be handled by the protocol.'"""
    c, s = lease_pair(version)
    for now in range(1, 20):
        c.handle_timer(float(now))
        s.handle_timer(float(now))
        shuttle(c, s)
    assert not c.closed and not s.closed


# ====================================================================== keepalive


@versions
def test_client_emits_keepalive_with_respond_flag_each_interval(version: str) -> None:
    """KEEPALIVE: 'KEEPALIVE frames MUST be initiated by the client and sent periodically
    with the (R)espond flag set.'"""
    c, s, _, _ = pair(version, client={"keepalive_interval": 500})
    assert c.get_timer() == 0.5
    for now in (0.25, 0.5, 0.75, 1.0):
        c.handle_timer(now)
    frames = decode_all(version, c.data_to_send())
    assert [(type(f).__name__, f.respond) for f in frames] == [("Keepalive", True)] * 2
    s.handle_timer(1.0)
    assert s.data_to_send() == b""  # the server does not initiate them


@versions
def test_keepalive_respond_flag_is_answered_with_echo_without_flag(version: str) -> None:
    """KEEPALIVE: 'Reception of a KEEPALIVE frame with the (R)espond flag set MUST cause a
    client or server to send back a KEEPALIVE with the (R)espond flag NOT set. The data in
    the received KEEPALIVE MUST be echoed back in the generated KEEPALIVE.'"""
    s = server_after_setup(version)
    ping = codec(version).Keepalive(respond=True, data=b"echo me")
    assert s.receive_data(wire(version, ping)) == [KeepaliveReceived(b"echo me", True, 0)]
    (pong,) = decode_all(version, s.data_to_send())
    assert (pong.respond, pong.data, pong.stream_id) == (False, b"echo me", 0)


@versions
def test_client_answers_server_keepalive_with_echo_without_respond_flag(version: str) -> None:
    """KEEPALIVE: "KEEPALIVE frames MAY be initiated by the server and sent upon application
    request with the (R)espond flag set." and "Reception of a KEEPALIVE frame with the
    (R)espond flag set MUST cause a client or server to send back a KEEPALIVE with the
    (R)espond flag NOT set." -- the client answers too, echoing the data."""
    c, s, _, _ = pair(version)
    c.data_to_send()
    s.send_keepalive(b"are you there")
    ping = s.data_to_send()
    assert c.receive_data(ping) == [KeepaliveReceived(b"are you there", True, 0)]
    (pong,) = decode_all(version, c.data_to_send())
    assert (pong.respond, pong.data, pong.stream_id) == (False, b"are you there", 0)
    assert s.receive_data(wire(version, pong)) == [KeepaliveReceived(b"are you there", False, 0)]
    assert s.data_to_send() == b""


@versions
def test_flags_not_indicated_are_sent_as_zero_and_not_interpreted(version: str) -> None:
    """Frame Header: "Any Flag bit not specifically indicated in the frame type should be
    set to 0 when sent and not interpreted on reception." KEEPALIVE indicates only (I)gnore
    and (R)espond (1.0 also M, unused): every other flag bit of the low flags byte."""
    unused = 0x7F if version == "1.0" else 0x1F
    ping = bytearray(codec(version).Keepalive(respond=True, data=b"x").to_bytes())
    assert ping[5] & unused == 0  # sent as 0
    ping[5] |= unused
    s = server_after_setup(version)
    framed = len(ping).to_bytes(3, "big") + bytes(ping)
    assert s.receive_data(framed) == [KeepaliveReceived(b"x", True, 0)]
    (pong,) = decode_all(version, s.data_to_send())
    assert pong.to_bytes()[5] & unused == 0


@versions
def test_keepalive_without_respond_flag_is_not_answered(version: str) -> None:
    """KEEPALIVE: only the (R)espond flag asks for an answer."""
    s = server_after_setup(version)
    s.receive_data(wire(version, codec(version).Keepalive(respond=False, data=b"x")))
    assert s.data_to_send() == b""


@versions
def test_keepalive_timeout_is_reported_not_auto_closed(version: str) -> None:
    """SETUP: 'Max Lifetime: Time (in milliseconds) that a client will allow a server to
    not respond to a KEEPALIVE before it is assumed to be dead.'  Handling the Unexpected:
    'The decision to close a connection due to inactivity is the applications choice.'"""
    c, s, _, _ = pair(version, client={"keepalive_interval": 1000, "max_lifetime": 3000})
    assert c.handle_timer(2.0) == []
    c.receive_data(wire(version, codec(version).Keepalive(respond=False)), now=2.5)
    assert c.handle_timer(5.0) == []  # 2.5 s of silence
    events = c.handle_timer(5.5)
    assert events == [ConnectionDead(3.0)]
    assert c.handle_timer(9.0) == []  # reported once
    assert not c.closed
    # the server watches the client the same way
    assert of_type(s.handle_timer(3.0), ConnectionDead)


@versions
def test_keepalive_uses_stream_id_zero(version: str) -> None:
    """KEEPALIVE: 'KEEPALIVE frames MUST always use Stream ID 0 as they pertain to the
    Connection.' A KEEPALIVE on another stream is ignored (not answered)."""
    s = server_after_setup(version)
    stray = codec(version).Keepalive(stream_id=5, respond=True)
    assert s.receive_data(wire(version, stray)) == []
    assert s.data_to_send() == b""
    with pytest.raises(IllegalSend):
        s._conn.send(codec(version).Keepalive(stream_id=3))


# ====================================================================== fragmentation


@versions
def test_fragmented_request_continuation_frame_type(version: str) -> None:
    """1.0 Fragmentation: 'the first frame is the REQUEST_* frame with the (F)ollows flag
    set, followed by a sequence of PAYLOAD frames.'  0.2 (IDL M3): continuations keep the
    first fragment's type."""
    c, s, _, _ = pair(version, client={"mtu": 64})
    c.request_stream(b"x" * 200, b"m" * 30, initial_n=3)
    frames = decode_all(version, c.data_to_send())
    names = [type(f).__name__ for f in frames]
    expected_rest = "Payload" if version == "1.0" else "RequestStream"
    assert names[0] == "RequestStream" and set(names[1:]) == {expected_rest}
    assert [f.follows for f in frames] == [True] * (len(frames) - 1) + [False]
    events = s.receive_data(wire(version, *frames))
    assert of_type(events, RequestReceived)[0].initial_request_n == 3


@versions
def test_fragment_metadata_fully_precedes_data(version: str) -> None:
    """Fragmentation: 'When a PAYLOAD is fragmented, the Metadata MUST be transmitted
    completely before the Data.'  We send it so; receiving metadata after data is a
    stream error."""
    c, s, _, _ = pair(version, client={"mtu": 64})
    c.request_response(b"d" * 100, b"m" * 100)
    frames = decode_all(version, c.data_to_send())
    seen_data = False
    for frame in frames:
        assert not (seen_data and frame.metadata is not None)
        seen_data = seen_data or bool(frame.data)
    # a peer that breaks the order
    C = codec(version)
    first = C.RequestResponse(stream_id=51, follows=True, data=b"data first")
    if version == "1.0":
        second = C.Payload(stream_id=51, next=True, metadata=b"late", data=b"")
    else:
        second = C.RequestResponse(stream_id=51, metadata=b"late", data=b"")
    events = s.receive_data(wire(version, first, second))
    assert not of_type(events, StreamAborted) and not of_type(events, RequestReceived)
    (error,) = decode_all(version, s.data_to_send())
    assert (error.stream_id, error.error_code) == (51, v(version).invalid)


@versions
def test_fragments_consume_one_credit_and_one_lease(version: str) -> None:
    """Fragmentation: 'a fragmented PAYLOAD frame counts as a single request(n) credit,
    and a request counts against a single lease count, regardless of how many fragments
    the frame is split into.'"""
    c, s, _, _ = pair(version, client={"lease": True, "mtu": 64},
                      server={"mtu": 64, "leasing": True}, establish=False)  # fmt: skip
    s.send_lease(10_000, 1)
    shuttle(c, s)
    sid = c.request_stream(b"r" * 300, initial_n=1)
    _, events_s = shuttle(c, s)
    assert len(of_type(events_s, RequestReceived)) == 1
    s.send_next(sid, b"p" * 300)
    events_c, _ = shuttle(c, s)
    assert [len(e.data) for e in of_type(events_c, PayloadReceived)] == [300]
    assert not of_type(events_c, StreamAborted)


@versions
def test_reassembly_limit_is_a_stream_error(version: str) -> None:
    """Memory stays bounded: a fragmented message beyond ``max_reassembly_size`` ends the
    stream (ERROR on it) instead of being buffered."""
    c, s, _, _ = pair(version, client={"mtu": 64}, server={"max_reassembly_size": 100})
    c.request_response(b"z" * 500)
    events_s = s.receive_data(c.data_to_send())
    assert not of_type(events_s, RequestReceived)
    (error,) = decode_all(version, s.data_to_send())
    assert error.error_code == v(version).invalid


@versions
def test_reassembly_accepts_unbounded_fragment_count(version: str) -> None:
    """Handling the Unexpected: 'Reassembly of RESPONSEs and REQUEST_CHANNELs MUST assume
    the possibility of an infinite stream.' (no cap on the number of fragments)."""
    c, s, _, _ = pair(version, client={"mtu": 64})
    c.request_channel(b"q" * 5000)
    frames = decode_all(version, c.data_to_send())
    assert len(frames) > 80
    (request,) = of_type(s.receive_data(wire(version, *frames)), RequestReceived)
    assert request.data == b"q" * 5000


@versions
def test_payload_with_follows_and_complete_is_final(version: str) -> None:
    """Handling the Unexpected: 'A PAYLOAD (0.2: RESPONSE) with both F and C flags set,
    implicitly ignores the F flag.'"""
    c, _, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=5)
    c.data_to_send()
    frame = payload(version, stream_id=sid, follows=True, complete=True, next=True, data=b"end")
    events = c.receive_data(wire(version, frame))
    assert events == [PayloadReceived(sid, b"end", None, True), StreamCompleted(sid)]


@versions
def test_cancel_mid_fragment_sequence_discards_partial(version: str) -> None:
    """Fragmentation: 'If the Requester wants to cancel sending a fragmented sequence, it
    MAY send a CANCEL frame without finishing delivery of the fragments.'"""
    s = server_after_setup(version)
    C = codec(version)
    first = C.RequestResponse(stream_id=1, follows=True, data=b"part")
    events = s.receive_data(wire(version, first, C.Cancel(stream_id=1)))
    assert events == [StreamCanceled(1)]
    assert not s.open_streams


# ====================================================================== tables drive the engine


def test_engine_follows_the_generated_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine consults the generated machines: change a row (here: a request-stream
    requester ignores every PAYLOAD) and the engine's behaviour changes with it."""
    from wirestream.generated.rsocket.v1_0 import Payload
    from wirestream.generated.rsocket.v1_0.machines import RequestStreamMachine, RequestStreamState
    from wirestream.runtime.machine import IGNORE

    table = dict(RequestStreamMachine.RECEIVE["requester"])
    table[(RequestStreamState.OPEN, Payload)] = ((None, IGNORE),)
    monkeypatch.setitem(RequestStreamMachine.RECEIVE, "requester", table)
    c, s, _, _ = pair("1.0")
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    s.send_next(sid, b"dropped")
    events_c, _ = shuttle(c, s)
    assert events_c == [] and c.ignored_frames == 1


def test_error_received_on_stream(version: str = "1.0") -> None:
    """ERROR Frame: 'A positive non-0 Stream ID means the error pertains to a given
    stream.'"""
    c, s, _, _ = pair(version)
    sid = c.request_response(b"")
    shuttle(c, s)
    s.send_error(sid, 0x301, "custom application code")
    events_c, _ = shuttle(c, s)
    assert events_c == [ErrorReceived(sid, 0x301, b"custom application code")]


@versions
def test_error_data_is_not_null_terminated(version: str) -> None:
    """ERROR Frame: "Error Data SHOULD be a UTF-8 encoded string. The string MUST NOT be
    null terminated." An application's null-terminated error is refused before anything is
    sent (EncodeError) and the stream stays open for a proper one."""
    c, s, _, _ = pair(version)
    sid = c.request_response(b"")
    shuttle(c, s)
    with pytest.raises(EncodeError, match="null terminated"):
        s.send_error(sid, v(version).application_error, b"no such item\x00")
    assert s.data_to_send() == b"" and sid in s.open_streams
    s.send_error(sid, v(version).application_error, "no such item")
    events_c, _ = shuttle(c, s)
    assert events_c == [ErrorReceived(sid, v(version).application_error, b"no such item")]


def test_metadata_push_requires_establishment() -> None:
    """METADATA_PUSH is a connection frame that only flows once SETUP was sent/accepted."""
    with pytest.raises(IllegalSend):
        RSocketConnection("server", "1.0").metadata_push(b"x")
    s = server_after_setup("1.0")
    assert s.receive_data(wire("1.0", codec("1.0").MetadataPush(metadata=b"m"))) == [
        MetadataPushReceived(b"m")
    ]


@versions
def test_stream_zero_frames_sent_before_queued_stream_frames(version: str) -> None:
    """QoS and Prioritization: 'Frames with Stream ID 0 SHOULD have a higher priority' (the
    order within a stream is kept: 'the frames have to be processed in order')."""
    c, _, _, _ = pair(version)
    a = c.request_stream(b"", initial_n=1)
    c.request(a, 1)
    c.metadata_push(b"urgent")
    frames = decode_all(version, c.data_to_send())
    assert [f.stream_id for f in frames] == [0, a, a]
    assert [type(f).__name__ for f in frames[1:]] == ["RequestStream", "RequestN"]


@versions
def test_a_request_in_fragments_counts_against_max_streams_from_its_first_fragment(
    version: str,
) -> None:
    """Limits.max_streams (ERROR[REJECTED]: "The Responder guarantees that it didn't
    process the request"): a request arriving in fragments holds a stream (and up to
    ``max_reassembly_size`` bytes) from its first fragment, so a peer that starts many and
    finishes none is refused at the first fragment beyond the limit -- not only once a
    request is whole -- and that request's later fragments are dropped."""
    c, s, _, _ = pair(version, client={"mtu": 64}, server={"max_streams": 1})
    first = c.request_stream(b"a" * 300, initial_n=1)
    second = c.request_stream(b"b" * 300, initial_n=1)
    frames = decode_all(version, c.data_to_send())
    ours = {sid: [f for f in frames if f.stream_id == sid] for sid in (first, second)}
    assert len(ours[first]) > 2 and len(ours[second]) > 2
    # the first fragment of each: the second is one stream too many, refused at once
    s.receive_data(wire(version, ours[first][0], ours[second][0]))
    (refusal,) = decode_all(version, s.data_to_send())
    assert (refusal.stream_id, refusal.error_code) == (second, v(version).rejected)
    assert b"too many streams (limit 1)" in refusal.data
    ignored = s.ignored_frames
    events = s.receive_data(wire(version, *ours[second][1:], *ours[first][1:]))
    assert [(e.stream_id, e.data) for e in of_type(events, RequestReceived)] == [
        (first, b"a" * 300)
    ]
    assert s.ignored_frames == ignored + len(ours[second]) - 1
    assert second not in s.open_streams and not decode_all(version, s.data_to_send())


@versions
def test_a_fire_and_forget_in_fragments_beyond_max_streams_is_dropped_unanswered(
    version: str,
) -> None:
    """The same limit for a fire-and-forget arriving in fragments (it buffers like any
    request until whole): beyond ``max_streams`` it is dropped with its later fragments,
    and nothing is sent -- a fire-and-forget has no response, not even an ERROR
    (REQUEST_FNF: "MAY not be processed")."""
    c, s, _, _ = pair(version, client={"mtu": 64}, server={"max_streams": 1})
    held = c.request_stream(b"a" * 300, initial_n=1)
    c.fire_and_forget(b"f" * 300)
    frames = decode_all(version, c.data_to_send())
    fnf = [f for f in frames if f.stream_id != held]
    assert len(fnf) > 2
    s.receive_data(wire(version, next(f for f in frames if f.stream_id == held)))
    events = s.receive_data(wire(version, *fnf))
    assert not of_type(events, RequestReceived)
    assert not decode_all(version, s.data_to_send())
    assert fnf[0].stream_id not in s.open_streams
