"""RSocket negotiation and close, sans-I/O (issue 17): the lease answer to an L-flag
SETUP, null-terminated MIME types, the one-item channel and REQUEST_N after the peer
completed, the graceful close (CONNECTION_CLOSE) in both directions, and EXT frames
with and without the I flag.  One test per rule, named after it, the passage quoted in
its docstring; 1.0 and 0.2 wherever the rule is in both.  The asyncio and rsocket-py
sides of the same rules: tests/rsocket/test_rsocket_negotiation_aio.py."""

from __future__ import annotations

from typing import Any

import pytest

from wirestream.runtime.errors import EncodeError, IllegalSend, LocalProtocolError
from wirestream.runtime.rsocket import (
    ClientSetup,
    ConnectionClosed,
    ConnectionClosing,
    ConnectionEstablished,
    ConnectionRejected,
    ExtReceived,
    LeaseReceived,
    NoNewRequests,
    PayloadReceived,
    RequestNReceived,
    RequestReceived,
    RSocketConnection,
    StreamAborted,
    StreamCompleted,
    UnsupportedExtension,
)
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


def completing(version: str, stream_id: int) -> Any:
    """The channel requester's frame that completes its side without an item: PAYLOAD(C)
    (1.0), an empty REQUEST_CHANNEL with C (0.2, IDL M4)."""
    if version == "1.0":
        return payload(version, stream_id=stream_id, complete=True, next=False)
    return codec(version).RequestChannel(stream_id=stream_id, complete=True)


# ====================================================================== lease answer


@versions
def test_server_without_leasing_refuses_lease_setup_with_unsupported_setup(version: str) -> None:
    """Connection Establishment: 'If the server accepts the contents of the SETUP frame, it
    MUST send a LEASE frame if the SETUP frame set the L flag.'  A server that grants no
    lease cannot keep that promise, so it does not accept: 'If the server does NOT accept
    the contents of the SETUP frame, the server MUST send back an ERROR[INVALID_SETUP|
    UNSUPPORTED_SETUP] and then close the connection' (UNSUPPORTED_SETUP: 'Some (or all)
    of the parameters specified by the client are unsupported by the server'; what
    rsocket-java and rsocket-py answer too).  The client learns it at once."""
    c = RSocketConnection("client", version, setup=ClientSetup(lease=True))
    s = RSocketConnection("server", version)
    c.connect()
    events_c, events_s = shuttle(c, s)
    assert events_s == [ConnectionRejected(v(version).unsupported_setup,
                                           b"leasing is not supported by this server",
                                           by_peer=False)]  # fmt: skip
    assert s.closed
    (rejected,) = events_c
    assert isinstance(rejected, ConnectionRejected) and rejected.by_peer
    assert rejected.error_code == v(version).unsupported_setup
    assert c.closed


@versions
def test_leasing_server_accepts_lease_setup_and_its_lease_establishes_the_client(
    version: str,
) -> None:
    """Connection Establishment: 'Server accepts SETUP, sends back LEASE frame'; the
    client 'MUST wait for the server-side Responder to send a LEASE frame before it can
    send Requests', and then may.  Mirrored: 'The client-side Responder MUST send a LEASE
    frame after a SETUP frame with the L flag set' before the server may request."""
    c = RSocketConnection("client", version, setup=ClientSetup(lease=True))
    s = RSocketConnection("server", version, leasing=True)
    c.connect()
    c.send_lease(60_000, 1)  # the client-side responder's LEASE, right behind SETUP
    _, events_s = shuttle(c, s)
    assert isinstance(events_s[0], ConnectionEstablished) and events_s[0].setup.lease
    assert events_s[1] == LeaseReceived(60_000, 1, None)
    with pytest.raises(IllegalSend):
        c.request_response(b"before the lease")
    s.send_lease(60_000, 2)
    events_c, _ = shuttle(c, s)
    assert isinstance(events_c[0], ConnectionEstablished)
    sid = c.request_response(b"now")
    s.request_response(b"and the server too")
    _, events_s = shuttle(c, s)
    assert [e.stream_id for e in of_type(events_s, RequestReceived)] == [sid]


def test_client_role_options_are_refused_on_a_client() -> None:
    """``leasing`` is what a server grants; a client's L flag is its ``ClientSetup``."""
    with pytest.raises(ValueError):
        RSocketConnection("client", leasing=True)


# ====================================================================== MIME types


@versions
def test_setup_mime_type_null_terminated_is_invalid_setup(version: str) -> None:
    """SETUP Frame, Encoding MIME Type: 'The string MUST NOT be null terminated.'  A SETUP
    that breaks it is refused with ERROR[INVALID_SETUP] ('The Setup frame is invalid for
    the server'), for either MIME type; our client never sends one."""
    for field in ("metadata_mime_type", "data_mime_type"):
        s = RSocketConnection("server", version)
        events = s.receive_data(wire(version, setup_frame(version, **{field: "text/plain\x00"})))
        (rejected,) = events
        assert isinstance(rejected, ConnectionRejected)
        error = only_frame(version, s.data_to_send())
        assert (error.stream_id, error.error_code) == (0, v(version).invalid_setup)
        assert s.closed
    with pytest.raises(EncodeError):
        ClientSetup(data_mime_type="application/json\x00")
    with pytest.raises(EncodeError):
        ClientSetup(metadata_mime_type="text/plain\x00")
    # A NUL inside is not "terminated" and the MIME type is not ours to interpret.
    s = RSocketConnection("server", version)
    s.receive_data(wire(version, setup_frame(version, data_mime_type="a\x00b")))
    assert not s.closed


# ====================================================================== one-item channel


@versions
def test_one_item_channel_in_one_read_sends_no_request_n_after_the_requester_completed(
    version: str,
) -> None:
    """Request Channel: 'A Requester may indicate COMPLETE by setting the C bit on either
    the initial REQUEST_CHANNEL frame, or on the last PAYLOAD frame sent'.  When the
    request and that PAYLOAD arrive in one read, the application learns of the request
    after the requester's side is complete (``half_closed_remote``): the REQUEST_N it then
    grants has nothing left to grant and must not be sent (the table forbids it; it used
    to raise IllegalSend and end the connection).  The responder's side goes on."""
    s = server_after_setup(version)
    request = v(version).request_channel(1, 4, b"only", None, False)
    events = s.receive_data(wire(version, request, completing(version, 1)))
    assert events == [
        RequestReceived(1, events[0].model, b"only", None, 4, False),
        StreamCompleted(1),
    ]
    s.request(1, 256)  # what the application does on RequestReceived: nothing goes out
    assert s.data_to_send() == b""
    s.send_next(1, b"echo: only")
    s.send_complete(1)
    frames = decode_all(version, s.data_to_send())
    assert [f.data for f in frames] == [b"echo: only", b""]
    assert frames[-1].complete and not s.open_streams and not s.closed


@versions
def test_channel_request_n_after_the_responder_completed_sends_nothing(version: str) -> None:
    """The audit of 'send after the peer completed': a channel requester whose responder
    already completed ('the stream is terminated after both Requester and Responder have
    sent and received COMPLETE') grants nothing more -- 1.0 keeps the stream open for our
    side (``half_closed_remote``) and ``request`` sends nothing; 0.2 ends the channel with
    the responder's COMPLETE (IDL A16) and the stream is simply not open any more."""
    c, s, _, _ = pair(version)
    sid = c.request_channel(b"first", initial_n=8)
    shuttle(c, s)
    s.send_complete(sid)
    events_c, _ = shuttle(c, s)
    assert StreamCompleted(sid) in events_c
    if version == "1.0":
        c.request(sid, 10)
        assert c.data_to_send() == b""
        c.send_complete(sid)
        shuttle(c, s)
    assert not c.open_streams and not s.open_streams and not c.closed and not s.closed


@versions
def test_responder_may_answer_initial_request_channel_with_request_n(version: str) -> None:
    """Request Channel: 'a Responder MUST respond to an initial REQUEST_CHANNEL frame with
    a REQUEST_N frame.'  The engine lets the responder send it right on the request (the
    asyncio peer does so before the handler runs: tests/rsocket/test_rsocket_negotiation_aio.py)
    and the requester may then send PAYLOADs ('A requester MUST not send PAYLOAD frames
    after the REQUEST_CHANNEL frame until the responder sends a REQUEST_N frame')."""
    c, s, _, _ = pair(version)
    sid = c.request_channel(b"first", initial_n=8)
    _, events_s = shuttle(c, s)
    assert of_type(events_s, RequestReceived)[0].initial_request_n == 8
    s.request(sid, 3)
    frames = decode_all(version, s.data_to_send())
    assert [(type(f).__name__, f.stream_id, f.request_n) for f in frames] == [("RequestN", sid, 3)]
    c.receive_data(wire(version, *frames))
    c.send_next(sid, b"second")


# ====================================================================== graceful close (1.0)


def test_connection_close_lets_outstanding_streams_finish_then_closes() -> None:
    """ERROR Frame, CONNECTION_CLOSE: 'The connection is being terminated. ... Sender or
    Receiver of this frame MUST wait for outstanding streams to terminate before closing
    the connection.'  Our side begins: the stream the peer is answering runs to its end
    on both sides, then both report the connection closed (gracefully)."""
    c, s, _, _ = pair("1.0")
    sid = c.request_stream(b"ticks", initial_n=10)
    shuttle(c, s)
    closing = c.close_gracefully(b"bye")
    assert closing == [ConnectionClosing(0x102, b"bye", by_peer=False)]
    assert c.closing and not c.closed
    events_c, events_s = shuttle(c, s)
    assert events_s == [ConnectionClosing(0x102, b"bye", by_peer=True)]
    assert s.closing and not s.closed
    s.send_next(sid, b"1")
    s.send_next(sid, b"2", complete=True)
    events_c, events_s = shuttle(c, s)
    assert [e.data for e in of_type(events_c, PayloadReceived)] == [b"1", b"2"]
    assert events_c[-1] == ConnectionClosed(0x102, b"bye", by_peer=False, graceful=True)
    assert c.closed
    # The server ended its last stream with a command: the engine reports the end from
    # handle_timer, due at once.
    assert s.get_timer() is not None
    (closed,) = s.handle_timer(s.get_timer() or 0.0)
    assert closed == ConnectionClosed(0x102, b"bye", by_peer=True, graceful=True)
    assert s.closed and s.get_timer() is None


def test_connection_close_refuses_new_requests_both_ways() -> None:
    """ERROR Frame, CONNECTION_CLOSE: 'New requests MAY not be accepted.'  Neither side
    starts one (``NoNewRequests``); one already on its way when the peer's CONNECTION_CLOSE
    arrives is refused with ERROR[REJECTED] ('the Responder decided to reject it. The
    Responder guarantees that it didn't process the request') -- an answer, not silence,
    so its requester does not wait for ever."""
    c, s, _, _ = pair("1.0")
    open_sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    s.close_gracefully()
    crossing = c.request_response(b"sent before the CONNECTION_CLOSE arrived")
    events_c, events_s = shuttle(c, s)
    assert not of_type(events_s, RequestReceived)
    errors = [e for e in events_c if getattr(e, "stream_id", None) == crossing]
    assert [(e.error_code, type(e).__name__) for e in errors] == [(0x202, "ErrorReceived")]
    with pytest.raises(NoNewRequests):
        c.request_response(b"new")
    with pytest.raises(NoNewRequests):
        s.fire_and_forget(b"new")
    s.send_next(open_sid, b"last", complete=True)
    events_c, _ = shuttle(c, s)
    assert events_c[-1] == ConnectionClosed(0x102, b"", by_peer=True, graceful=True)


def test_connection_close_without_open_streams_closes_at_once() -> None:
    """Nothing outstanding, nothing to wait for: CONNECTION_CLOSE ends the connection on
    both sides as soon as it is sent / received (``close()`` with that code does the same,
    and refuses while a stream is open: it would not wait)."""
    c, s, _, _ = pair("1.0")
    events = c.close(0x102, b"done")
    assert events == [ConnectionClosing(0x102, b"done", by_peer=False),
                      ConnectionClosed(0x102, b"done", by_peer=False, graceful=True)]  # fmt: skip
    _, events_s = shuttle(c, s)
    assert events_s == [ConnectionClosing(0x102, b"done", by_peer=True),
                        ConnectionClosed(0x102, b"done", by_peer=True, graceful=True)]  # fmt: skip
    assert c.closed and s.closed
    c, s, _, _ = pair("1.0")
    c.request_stream(b"", initial_n=1)
    with pytest.raises(LocalProtocolError):
        c.close(0x102)
    assert not c.closing


def test_connection_error_during_the_drain_ends_it_at_once() -> None:
    """ERROR Frame, CONNECTION_ERROR: 'Sender or Receiver of this frame MAY close the
    connection immediately without waiting for outstanding streams to terminate' -- also
    while a graceful close waits (our give-up after a grace period)."""
    c, s, _, _ = pair("1.0")
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    c.close_gracefully()
    shuttle(c, s)
    events = c.close()  # CONNECTION_ERROR
    assert of_type(events, StreamAborted)[0].stream_id == sid
    _, events_s = shuttle(c, s)
    assert of_type(events_s, ConnectionClosed) == [ConnectionClosed(0x101, b"", by_peer=True)]
    assert c.closed and s.closed


def test_both_sides_closing_at_once_still_drain() -> None:
    """Both sides send CONNECTION_CLOSE at the same time: each is already waiting for its
    streams, the other's frame changes nothing (IDL M8)."""
    c, s, _, _ = pair("1.0")
    sid = c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    c.close_gracefully()
    s.close_gracefully()
    shuttle(c, s)
    assert c.closing and s.closing
    s.send_next(sid, b"x", complete=True)
    events_c, _ = shuttle(c, s)
    assert of_type(events_c, ConnectionClosed)[0].graceful and c.closed


def test_reactivesocket_0_2_has_no_connection_close() -> None:
    """0.2 (seed 003) has no graceful close: its 0x102 is CONNECTION_ERROR_NO_RETRY, 'The
    connection is being terminated. May NOT be resumed.' -- received, it ends the
    connection at once; we cannot begin one (the asyncio peer drains 0.2 on its own side
    only)."""
    c, s, _, _ = pair("0.2")
    c.request_stream(b"", initial_n=1)
    shuttle(c, s)
    with pytest.raises(LocalProtocolError):
        s.close_gracefully()
    s.close(0x102)
    events_c, _ = shuttle(c, s)
    assert of_type(events_c, ConnectionClosed) == [ConnectionClosed(0x102, b"", by_peer=True)]
    assert c.closed


# ====================================================================== EXT


def ext(version: str, **fields: Any) -> Any:
    return codec(version).Ext(**fields)


@versions
def test_ext_of_a_declared_type_reaches_the_application(version: str) -> None:
    """EXT (Extension) Frame: 'Extended Type: ... Extended type information'; 'Depends on
    Extended Type...'.  An EXT whose type the application declared (``extensions``)
    becomes ``ExtReceived`` -- on stream 0 or on a stream's id, I flag set or not -- and
    ``send_ext`` sends one (IDL M14)."""
    c, s, _, _ = pair(version, server={"extensions": [7]})
    c.send_ext(7, b"hello", b"meta")
    c.send_ext(7, b"on a stream", stream_id=1, ignore=False)
    _, events_s = shuttle(c, s)
    assert events_s == [ExtReceived(0, 7, b"hello", b"meta", True),
                        ExtReceived(1, 7, b"on a stream", None, False)]  # fmt: skip
    assert not s.closed


@versions
def test_ext_not_understood_with_ignore_flag_is_dropped(version: str) -> None:
    """Handling Ignore Flag: 'The (I)gnore flag is used for extension of the protocol.'  An
    EXT of a type nobody declared, with I set ('Can the frame be ignored if not
    understood?' -- yes), is dropped and the connection goes on."""
    s = server_after_setup(version)
    frames = [ext(version, ignore=True, extended_type=9, data=b"?"),
              ext(version, stream_id=3, ignore=True, extended_type=9)]  # fmt: skip
    assert s.receive_data(wire(version, *frames)) == []
    assert s.ignored_frames == 2 and not s.closed


@versions
def test_ext_not_understood_without_ignore_flag_is_a_connection_error(version: str) -> None:
    """Handling Ignore Flag: 'A value of 0 in a frame for this flag indicates the protocol
    can't ignore this frame. An implementation MAY send an ERROR[CONNECTION_ERROR] frame
    and close the underlying transport connection on reception of a frame that it does not
    understand with this bit not set.'"""
    s = server_after_setup(version)
    with pytest.raises(UnsupportedExtension):
        s.receive_data(wire(version, ext(version, ignore=False, extended_type=9)))
    error = only_frame(version, s.data_to_send())
    assert (error.stream_id, error.error_code) == (0, v(version).connection_error)
    assert s.closed


@versions
def test_ext_before_setup_is_invalid_setup(version: str) -> None:
    """Connection Establishment: 'Any other frame received that is NOT a SETUP|RESUME frame
    ... MUST cause the server to send an ERROR[INVALID_SETUP] and close the connection'
    (an EXT too); and a client sends none before its SETUP."""
    s = RSocketConnection("server", version, extensions=[7])
    with pytest.raises(Exception):
        s.receive_data(wire(version, ext(version, ignore=True, extended_type=7)))
    assert only_frame(version, s.data_to_send()).error_code == v(version).invalid_setup
    c = RSocketConnection("client", version)
    with pytest.raises(IllegalSend):
        c.send_ext(7)


@versions
def test_ext_on_a_stream_does_not_touch_the_stream(version: str) -> None:
    """An EXT carrying a stream's id belongs to no interaction model (IDL M14): the stream
    and its credit are as they were."""
    c, s, _, _ = pair(version)
    sid = c.request_stream(b"", initial_n=2)
    shuttle(c, s)
    c.send_ext(5, stream_id=sid)
    shuttle(c, s)
    s.send_next(sid, b"a")
    events_c, _ = shuttle(c, s)
    assert of_type(events_c, PayloadReceived)[0].data == b"a"
    assert not of_type(events_c, RequestNReceived)
