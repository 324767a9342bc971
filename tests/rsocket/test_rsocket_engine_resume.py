"""Resumption in the RSocket engine: implied positions, the retransmit buffer trimmed by
KEEPALIVE, and RESUME / RESUME_OK between new engine instances (both versions)."""

from __future__ import annotations

from typing import Any

import pytest

from wirestream.runtime.errors import IllegalSend, UnexpectedFrame
from wirestream.runtime.rsocket import (
    ConnectionClosed,
    ConnectionRejected,
    ConnectionResumed,
    PayloadReceived,
    RequestNReceived,
    ResumableSession,
    ResumeNotAllowed,
    RSocketConnection,
)
from tests.support.engine_pair import shuttle
from tests.rsocket.test_rsocket_engine_helpers import (
    VERSIONS,
    codec,
    decode_all,
    engine,
    of_type,
    pair,
    v,
    wire,
)

pytestmark = pytest.mark.parametrize("version", VERSIONS)

TOKEN = b"0123456789abcdef"  # 0.2 tokens are 128 bits


def resumable_pair(version: str, **server: Any) -> tuple[
    RSocketConnection, RSocketConnection, dict[bytes, ResumableSession]
]:  # fmt: skip
    sessions: dict[bytes, ResumableSession] = {}
    c, s, _, _ = pair(version, client={"resume_token": TOKEN},
                      server={"resume_lookup": sessions.get, **server})  # fmt: skip
    sessions[TOKEN] = s.session()
    return c, s, sessions


def test_resume_disabled_by_default(version: str) -> None:
    """Resuming Operation, Assumptions: 'Clients and Servers should assume NO resumption
    capability by default.'  KEEPALIVE then carries position 0 ('Set to all 0s when not
    supported')."""
    c, s, _, _ = pair(version, client={"keepalive_interval": 100})
    with pytest.raises(ResumeNotAllowed):
        c.session()
    c.request_response(b"x")
    c.handle_timer(0.1)
    keepalives = [
        f for f in decode_all(version, c.data_to_send()) if type(f).__name__ == "Keepalive"
    ]
    assert keepalives and keepalives[0].last_received_position == 0


def test_implied_position_is_byte_length_of_tracked_frames(version: str) -> None:
    """Implied Position: 'As a Requester or Responder sends REQUEST_*, REQUEST_N, CANCEL,
    ERROR, or PAYLOAD frames, it maintains a position ... calculated based on the length
    of encoded frames without the frame length field after any fragmentation is applied.'
    'Frame types outside ... do not have assigned (nor implied) positions.'"""
    c, s, _ = resumable_pair(version)
    start_c, start_s = c.session().log.sent_position, s.session().log.received_position
    assert start_c == start_s > 0  # the establishing request-response round trip
    sid = c.request_stream(b"abc", b"m", initial_n=2)
    c.metadata_push(b"not counted")
    c.send_keepalive(b"not counted")
    c.request(sid, 1)
    counted = [f for f in decode_all(version, c.data_to_send()) if f.stream_id != 0]
    assert c.session().log.sent_position - start_c == sum(len(f.to_bytes()) for f in counted)
    s.receive_data(wire(version, *counted))
    assert s.session().log.received_position == c.session().log.sent_position


def test_received_positions_come_from_the_wire_length_not_a_re_encoding(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The receiver counts each tracked frame by the length prefix the splitter read (the
    position is "the length of encoded frames without the frame length field"): with
    every frame class's encoder broken after the bytes were made, the positions still
    add up, both ways, and from a server's first read (fails when a received frame is
    re-encoded to count it)."""
    c, s, _ = resumable_pair(version)
    sid = c.request_stream(b"abc", b"m", initial_n=5)
    s.receive_data(c.data_to_send())
    for n in range(3):
        s.send_next(sid, b"item %d" % n, b"md" if n else None)
    s.send_complete(sid)
    c.request_response(b"rr")
    from_server, from_client = s.data_to_send(), c.data_to_send()
    # A SETUP and a request in one read: the server counts the request, though it had no
    # session yet when the read was split into frames.
    c2 = engine("client", version, resume_token=TOKEN)
    s2 = engine("server", version, resume_lookup={}.get)
    c2.connect()
    c2.request_response(b"first")
    setup_and_request = c2.data_to_send()

    def no_encoding(frame: object, ctx: object = None) -> bytes:
        raise AssertionError(f"re-encoded a received {type(frame).__name__}")

    for cls in vars(codec(version)).values():
        if isinstance(cls, type) and "to_bytes" in vars(cls):
            monkeypatch.setattr(cls, "to_bytes", no_encoding)
    c.receive_data(from_server)
    s.receive_data(from_client)
    assert c.session().log.received_position == s.session().log.sent_position
    assert s.session().log.received_position == c.session().log.sent_position
    s2.receive_data(setup_and_request)
    assert s2.session().log.received_position == c2.session().log.sent_position > 0


def test_keepalive_position_trims_resume_buffer(version: str) -> None:
    """Keepalive Position Field: 'This information MAY be used to update state for possible
    retransmission, such as trimming a retransmit buffer'."""
    c, s, _ = resumable_pair(version)
    c.request_response(b"y" * 50)
    shuttle(c, s)
    log = c.session().log
    assert log.first_available < log.sent_position
    s.send_keepalive()  # carries the server's last received position
    shuttle(c, s)
    assert log.first_available == log.sent_position


def test_resume_continues_streams_and_retransmits(version: str) -> None:
    """Resume Operation: the client 'sends RESUME' with 'the last successfully received
    implied position from the server'; the server 'MAY send a RESUME_OK' and 'MAY
    retransmit all ... frames starting at the RESUME Last Received Position field value
    from the client' -- and so does the client from the RESUME_OK position."""
    c, s, sessions = resumable_pair(version)
    sid = c.request_stream(b"items", initial_n=10)
    shuttle(c, s)
    s.send_next(sid, b"1")
    shuttle(c, s)
    s.send_next(sid, b"2")  # lost with the transport
    s.send_next(sid, b"3")
    s.data_to_send()
    c.request(sid, 5)  # lost too
    c.data_to_send()
    closed_c, closed_s = c.receive_data(b""), s.receive_data(b"")
    assert closed_c == [ConnectionClosed(None, b"", True, resumable=True)]
    assert closed_s == [ConnectionClosed(None, b"", True, resumable=True)]

    c2 = RSocketConnection.resume(c.session(), now=1.0)
    (resume,) = decode_all(version, c2.data_to_send())
    assert resume.resume_token == TOKEN
    s2 = engine("server", version, resume_lookup=sessions.get)
    events_s = s2.receive_data(wire(version, resume))
    assert of_type(events_s, ConnectionResumed)[0].retransmitted == 2
    events_c, events_s2 = shuttle(c2, s2)
    assert of_type(events_c, ConnectionResumed)[0].retransmitted == 1
    assert [e.data for e in of_type(events_c, PayloadReceived)] == [b"2", b"3"]
    assert s2.open_streams[sid].outbound is not None
    assert s2.open_streams[sid].outbound.available == 10 - 3 + 5
    s2.send_next(sid, b"4", complete=True)
    events_c, _ = shuttle(c2, s2)
    assert [e.data for e in of_type(events_c, PayloadReceived)] == [b"4"]
    assert not c2.open_streams and not s2.open_streams


def test_client_sends_nothing_but_resume_until_resume_ok(version: str) -> None:
    """Resume Operation: 'The client must NOT send any other frame types until resumption
    succeeds.'"""
    c, _, _ = resumable_pair(version)
    c.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    with pytest.raises(IllegalSend):
        c2.request_response(b"too early")
    with pytest.raises(IllegalSend):
        c2.metadata_push(b"too early")


def test_stream_frames_queued_while_resuming_go_once_with_the_replay(version: str) -> None:
    """A consumer that asks for more (REQUEST_N) while RESUME is on its way: 'The client
    must NOT send any other frame types until resumption succeeds', so the frame waits;
    it is in the retransmit buffer, so RESUME_OK's retransmission carries it, once.
    (Regression, found by the chaos soak: the frame went out at once after RESUME and
    again with the retransmission, the server got the demand twice and sent beyond what
    the client granted: 'the peer sent 1 with only 0 granted'.)"""
    c, s, sessions = resumable_pair(version)
    sid = c.request_stream(b"items", initial_n=1)
    shuttle(c, s)
    c.receive_data(b"")
    s.receive_data(b"")
    c2 = RSocketConnection.resume(c.session(), now=1.0)
    c2.request(sid, 5)
    assert [type(f).__name__ for f in decode_all(version, c2.data_to_send())] == ["Resume"]
    c2.receive_data(b"")  # not resumed yet: stays queued through a failed attempt too
    c3 = RSocketConnection.resume(c.session(), now=2.0)
    s2 = engine("server", version, resume_lookup=sessions.get)
    events_c, events_s = shuttle(c3, s2)
    assert [e.n for e in of_type(events_s, RequestNReceived)] == [5]
    assert s2.open_streams[sid].outbound is not None
    assert s2.open_streams[sid].outbound.available == 1 + 5


def test_resume_unknown_token_errors(version: str) -> None:
    """Resume Operation (server): 'If not identified, then the server MUST send an ERROR
    frame' (1.0: ERROR[REJECTED_RESUME])."""
    c, s, _ = resumable_pair(version)
    c.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    s2 = engine("server", version, resume_lookup=lambda token: None)
    events_c, events_s = shuttle(c2, s2)
    code = v(version).resume_rejected
    assert events_s == [ConnectionRejected(code, b"unknown resume token", by_peer=False)]
    assert events_c == [ConnectionRejected(code, b"unknown resume token", by_peer=True)]
    assert c2.closed and s2.closed


def test_server_without_resume_answers_error(version: str) -> None:
    """Resume Operation (server): 'MUST send an ERROR[REJECTED_RESUME] frame if the server
    does not support resuming operation.' (0.2: 'MUST send an ERROR frame')."""
    c, _, _ = resumable_pair(version)
    c.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    s2 = RSocketConnection("server", version)
    shuttle(c2, s2)
    assert c2.closed and s2.closed


def test_rejected_resume_forbids_further_resume(version: str) -> None:
    """1.0: 'On receiving an ERROR[REJECTED_RESUME] frame, the client MUST NOT attempt
    resumption again.'  0.2: 'the client MUST NOT attempt resumption again if the error
    code was CONNECTION_ERROR_NO_RETRY.'"""
    c, _, _ = resumable_pair(version)
    c.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    c2.data_to_send()
    c2.receive_data(wire(version, v(version).error(0, v(version).resume_no_retry, b"never")))
    with pytest.raises(ResumeNotAllowed):
        c2.session()


def test_resume_rejected_when_gap_in_retained_frames(version: str) -> None:
    """Implied Position: the server decides 'have all frames past the client's last-received
    position been retained?'  A server whose bounded buffer dropped them refuses."""
    c, s, sessions = resumable_pair(version, resume_buffer_size=40)
    sid = c.request_stream(b"", initial_n=100)
    shuttle(c, s)
    for _ in range(10):
        s.send_next(sid, b"x" * 10)  # more than 40 bytes: the oldest are dropped
    s.data_to_send()  # ... and never arrive
    c.receive_data(b"")
    s.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    s2 = engine("server", version, resume_lookup=sessions.get)
    events_c, _ = shuttle(c2, s2)
    assert of_type(events_c, ConnectionRejected)[0].error_code == v(version).resume_rejected


def test_resume_after_setup_gets_error(version: str) -> None:
    """Resume Operation: 'A Server that receives a RESUME frame after a SETUP frame, SHOULD
    send an ERROR[CONNECTION_ERROR].'"""
    c, s, _ = resumable_pair(version)
    resume = v(version).resume(TOKEN, 0, 0)
    with pytest.raises(UnexpectedFrame):
        s.receive_data(wire(version, resume))
    (error,) = decode_all(version, s.data_to_send())
    assert (error.stream_id, error.error_code) == (0, v(version).connection_error)


def test_resume_after_a_previous_resume_gets_error(version: str) -> None:
    """Resume Operation: "A Server that receives a RESUME frame after a previous RESUME
    frame, SHOULD send an ERROR." (ERROR[CONNECTION_ERROR] on stream 0, then closed.)"""
    c, s, sessions = resumable_pair(version)
    c.receive_data(b"")
    s.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    s2 = engine("server", version, resume_lookup=sessions.get)
    shuttle(c2, s2)
    with pytest.raises(UnexpectedFrame):
        s2.receive_data(wire(version, v(version).resume(TOKEN, 0, 0)))
    (error,) = decode_all(version, s2.data_to_send())
    assert (error.stream_id, error.error_code) == (0, v(version).connection_error)
    assert s2.closed


def _on_stream(frame: Any, stream_id: int) -> Any:
    """``frame`` moved to another stream id (frames have no setter: built again)."""
    fields = {name: getattr(frame, name) for name in type(frame).__slots__ if name[0] != "_"}
    return type(frame)(**{**fields, "stream_id": stream_id})


def test_resume_uses_stream_id_zero(version: str) -> None:
    """RESUME Frame: "RESUME frames MUST always use Stream ID 0 as they pertain to the
    connection." Ours does; a first frame that is a RESUME on another stream is refused as
    an invalid first frame (ERROR[INVALID_SETUP], Connection Establishment)."""
    c, _, sessions = resumable_pair(version)
    c.receive_data(b"")
    (resume,) = decode_all(version, RSocketConnection.resume(c.session()).data_to_send())
    assert resume.stream_id == 0
    s2 = engine("server", version, resume_lookup=sessions.get)
    with pytest.raises(UnexpectedFrame):
        s2.receive_data(wire(version, _on_stream(resume, 5)))
    (error,) = decode_all(version, s2.data_to_send())
    assert (error.stream_id, error.error_code) == (0, v(version).invalid_setup)


def test_resume_ok_uses_stream_id_zero(version: str) -> None:
    """RESUME_OK Frame: "RESUME OK frames MUST always use Stream ID 0 as they pertain to the
    connection." The server's does; one on another stream does not resume the client
    (ignored), which still may send nothing but the RESUME."""
    c, s, sessions = resumable_pair(version)
    c.receive_data(b"")
    s.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    s2 = engine("server", version, resume_lookup=sessions.get)
    s2.receive_data(c2.data_to_send())
    (resume_ok,) = decode_all(version, s2.data_to_send())
    assert resume_ok.stream_id == 0
    assert c2.receive_data(wire(version, _on_stream(resume_ok, 3))) == []
    with pytest.raises(IllegalSend):
        c2.request_response(b"not resumed yet")
    assert of_type(c2.receive_data(wire(version, resume_ok)), ConnectionResumed)
    c2.request_response(b"resumed")


def test_resume_ok_with_unknown_position_ends_connection(version: str) -> None:
    """Resume Operation (client): if it cannot continue from the server's position it 'MAY
    send an ERROR frame indicating the end of the connection and MUST NOT attempt
    resumption again'."""
    from wirestream.runtime.rsocket import ResumePositionLost

    c, _, _ = resumable_pair(version)
    c.receive_data(b"")
    c2 = RSocketConnection.resume(c.session())
    c2.data_to_send()
    with pytest.raises(ResumePositionLost):
        c2.receive_data(wire(version, v(version).resume_ok(10**9)))
    (error,) = decode_all(version, c2.data_to_send())
    assert error.error_code == v(version).connection_error
    with pytest.raises(ResumeNotAllowed):
        c2.session()


def test_only_client_resumes(version: str) -> None:
    """Assumptions: 'Resumption is always initiated by the client and either allowed or
    denied by the server.'"""
    _, s, _ = resumable_pair(version)
    with pytest.raises(ValueError):
        RSocketConnection.resume(s.session())
    client = RSocketConnection("client", version)
    client.connect()
    assert client.receive_data(wire(version, v(version).resume(TOKEN, 0, 0))) == []
    assert codec(version) is not None


def test_session_is_resumable_before_anything_confirmed_the_setup(version: str) -> None:
    """Resuming Operation: the session exists from the SETUP with a token on.  A transport
    lost before the server's first answer (the client still in ``setup_sent``) is resumed,
    as rsocket-java's client does; a SETUP the server never saw gets REJECTED_RESUME.
    (Regression: found against rsocket-java, whose server sends nothing when it accepts a
    SETUP, so a cut in the first milliseconds ended our session.)"""
    sessions: dict[bytes, ResumableSession] = {}
    c, s, _, _ = pair(version, client={"resume_token": TOKEN},
                      server={"resume_lookup": sessions.get}, establish=False)  # fmt: skip
    sessions[TOKEN] = s.session()
    sid = c.request_response(b"sent before the cut")
    c.data_to_send()  # lost with the transport
    assert c.state is v(version).machines.ConnectionState.SETUP_SENT
    assert c.receive_data(b"") == [ConnectionClosed(None, b"", True, resumable=True)]
    assert s.receive_data(b"") == [ConnectionClosed(None, b"", True, resumable=True)]
    c2 = RSocketConnection.resume(c.session(), now=1.0)
    s2 = engine("server", version, resume_lookup=sessions.get)
    events_c, events_s = shuttle(c2, s2)
    assert of_type(events_c, ConnectionResumed) and of_type(events_s, ConnectionResumed)
    (request,) = [e for e in events_s if type(e).__name__ == "RequestReceived"]
    assert (request.stream_id, request.data) == (sid, b"sent before the cut")


def test_server_waiting_for_the_clients_lease_keeps_a_resumable_session(version: str) -> None:
    """A server whose client set L (and R) but never sent a LEASE -- the server-side
    requester waits (``awaiting_lease``) -- keeps the session when the transport is lost.
    (Regression: rsocket-java's client with lease and resume sends no LEASE by default.)"""
    sessions: dict[bytes, ResumableSession] = {}
    c, s, _, _ = pair(version, client={"resume_token": TOKEN, "lease": True},
                      server={"resume_lookup": sessions.get, "leasing": True},
                      establish=False)  # fmt: skip
    sessions[TOKEN] = s.session()
    assert s.state is v(version).machines.ConnectionState.AWAITING_LEASE
    assert s.receive_data(b"") == [ConnectionClosed(None, b"", True, resumable=True)]
    assert c.receive_data(b"") == [ConnectionClosed(None, b"", True, resumable=True)]
    s2 = engine("server", version, resume_lookup=sessions.get, leasing=True)
    events_c, events_s = shuttle(RSocketConnection.resume(c.session()), s2)
    assert of_type(events_c, ConnectionResumed) and of_type(events_s, ConnectionResumed)


def test_resume_of_a_setup_the_server_never_saw_is_rejected(version: str) -> None:
    c = engine("client", version, resume_token=TOKEN)
    c.connect()
    c.data_to_send()  # the SETUP is lost with the transport
    assert c.receive_data(b"") == [ConnectionClosed(None, b"", True, resumable=True)]
    s = engine("server", version, resume_lookup={}.get)
    events_c, events_s = shuttle(RSocketConnection.resume(c.session()), s)
    assert of_type(events_c, ConnectionRejected) and of_type(events_s, ConnectionRejected)
