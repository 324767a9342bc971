"""The connection-level state the RSocket engine keeps per connection, unit by unit:
keepalive deadlines (runtime/rsocket/keepalive.py), lease budgets (lease.py) and the
resume log and RESUME answer (resume.py). The engine tests prove these through frames;
these pin the arithmetic that mutation testing showed no frame-level test reached
(docs/mutation.md)."""

from __future__ import annotations

import pytest

from wirestream.runtime.rsocket import NoLease, SetupInfo
from wirestream.runtime.rsocket.keepalive import KeepaliveTimer
from wirestream.runtime.rsocket.lease import Leases
from wirestream.runtime.rsocket.resume import ResumeLog, answer_resume
from wirestream.runtime.rsocket.versions import get_version
from tests.rsocket.test_rsocket_engine_resume import TOKEN, resumable_pair


def setup_info(keepalive_interval: int, max_lifetime: int) -> SetupInfo:
    return SetupInfo(1, 0, keepalive_interval, max_lifetime, "text/plain", "text/plain",
                     None, b"", False, None)  # fmt: skip


# --- keepalive.py -------------------------------------------------------------------


def test_keepalive_timer_is_idle_until_started() -> None:
    """Nothing is due and nobody is dead before the SETUP is sent or accepted."""
    timer = KeepaliveTimer()
    assert timer.deadline() is None
    assert not timer.send_due(1e6) and timer.dead(1e6) is None


def test_client_keepalives_are_sent_periodically_on_their_schedule() -> None:
    """KEEPALIVE: "KEEPALIVE frames MUST be initiated by the client and sent periodically
    with the (R)espond flag set." Every interval from the start, whenever the timer fires
    within it; intervals that went by while nothing ran are skipped, not sent in a burst."""
    timer = KeepaliveTimer()
    timer.start(0.0, setup_info(1000, 0), sends=True)
    assert timer.send_due(1.05) and timer.next_send == 2.0  # late: the schedule holds
    assert not timer.send_due(1.9)
    assert timer.send_due(2.0) and timer.next_send == 3.0
    assert timer.send_due(4.0) and timer.next_send == 5.0  # one interval late exactly
    assert timer.send_due(7.5) and timer.next_send == 8.5  # several: skipped
    assert not timer.send_due(8.0) and timer.send_due(8.5)


def test_max_lifetime_of_silence_is_reported_once_at_its_bound() -> None:
    """SETUP: "Max Lifetime: Time (in milliseconds) that a client will allow a server to
    not respond to a KEEPALIVE before it is assumed to be dead." Reported once, at exactly
    Max Lifetime of silence, again only after the peer was heard from."""
    timer = KeepaliveTimer()
    timer.start(0.0, setup_info(1000, 3000), sends=False)
    assert timer.deadline() == 3.0
    assert timer.dead(2.999) is None
    assert timer.dead(3.0) == 3.0
    assert timer.dead(3.5) is None and timer.deadline() is None
    timer.heard(4.0)
    assert timer.deadline() == 7.0


# --- lease.py -----------------------------------------------------------------------

NO_LEASE = (
    "^no valid LEASE: 'The Requester MUST NOT send more than Number of Requests specified in"
    " the LEASE frame within the Time-To-Live value in the LEASE\\.'$"
)


def test_no_request_without_a_lease_and_none_admitted() -> None:
    """Lease Semantics: "The Requester MUST NOT send more than Number of Requests specified
    in the LEASE frame within the Time-To-Live value in the LEASE." Before any LEASE, and
    after a restart ("LEASE semantics MUST be restarted upon a new connection"), there is
    no budget either way."""
    leases = Leases()
    assert leases.required is False
    with pytest.raises(NoLease, match=NO_LEASE):
        leases.check_request(0.0)
    assert not leases.admit(0.0)
    leases.received(10_000, 5, now=0.0)
    leases.sent(10_000, 5, now=0.0)
    leases.restart(required=True)
    assert leases.required is True
    with pytest.raises(NoLease):
        leases.check_request(0.0)
    assert not leases.admit(0.0)


def test_lease_time_to_live_is_milliseconds_from_reception() -> None:
    """LEASE: "Time-To-Live (TTL): Time (in milliseconds) for validity of LEASE from time of
    reception"; "When a LEASE expires due to time, the value of the Number of Requests that
    a Requester may make is implicitly 0." Both the peer's lease and ours."""
    leases = Leases()
    leases.received(1000, 5, now=10.0)
    leases.check_request(10.9995)
    with pytest.raises(NoLease):
        leases.check_request(11.0)
    leases.sent(1000, 5, now=10.0)
    assert leases.admit(10.9995)
    assert not leases.admit(11.0)


# --- resume.py ----------------------------------------------------------------------


def frame(size: int) -> bytes:
    """A tracked frame as sent: a 3-byte length prefix and ``size - 3`` bytes."""
    return (size - 3).to_bytes(3, "big") + bytes(size - 3)


def test_resume_buffer_holds_at_most_its_limit_dropping_the_oldest() -> None:
    """Implied Position: a server "have all frames past the client's last-received position
    been retained?" -- our buffer keeps whole frames up to ``limit`` bytes, exactly."""
    log = ResumeLog(limit=10)
    log.sent(frame(5), 2)
    log.sent(frame(5), 2)
    assert log.first_available == 0  # 10 bytes: at the limit, nothing dropped
    log.sent(frame(5), 2)
    assert log.first_available == 2
    log.sent(frame(5), 2)
    assert log.first_available == 4 and log.sent_position == 8


def test_keepalive_position_trims_exactly_the_frames_the_peer_received() -> None:
    """Keepalive Position Field: it "MAY be used to update state for possible
    retransmission, such as trimming a retransmit buffer": a frame goes once the peer's
    position covers its end (positions count frames without their length prefix)."""
    log = ResumeLog(limit=100)
    for _ in range(3):
        log.sent(frame(5), 2)  # positions 0-2, 2-4, 4-6
    log.trim(3)
    assert log.first_available == 2
    log.trim(4)
    assert log.first_available == 4


def test_trimmed_frames_no_longer_count_against_the_limit() -> None:
    log = ResumeLog(limit=11)
    log.sent(frame(5), 2)
    log.sent(frame(6), 3)
    log.trim(2)  # 6 bytes held
    log.sent(frame(5), 2)  # 11: kept
    assert log.first_available == 2
    log.sent(b"\x00", 0)  # 12: the oldest goes
    assert log.first_available == 5


@pytest.mark.parametrize("version", ["1.0", "0.2"])
def test_resume_refusals_say_why(version: str) -> None:
    """Resume Operation (server): "If not identified, then the server MUST send an ERROR
    frame" and it "MAY send an ERROR frame if the server can not resume operation given the
    value of RESUME Last Received Position" -- each with its reason."""
    v = get_version(version)
    client, server, sessions = resumable_pair(version)
    resume = v.resume(TOKEN, 0, 0)
    assert answer_resume(v, None, resume) == "resumption is not supported"
    assert answer_resume(v, lambda token: client.session(), resume) == (
        "a session resumes with the version it started with"
    )
    other = get_version("0.2" if version == "1.0" else "1.0")
    _, other_server, _ = resumable_pair(other.name)
    assert answer_resume(v, lambda token: other_server.session(), resume) == (
        "a session resumes with the version it started with"
    )
    far = v.resume(TOKEN, 10**9, 0)
    assert answer_resume(v, sessions.get, far) == (
        "the server no longer has frames past the client's position"
    )
    if version == "1.0":  # 0.2's RESUME has no first available client position
        ahead = v.resume(TOKEN, 0, 10**9)
        assert answer_resume(v, sessions.get, ahead) == (
            "the client no longer has frames the server has not received"
        )
    assert not isinstance(answer_resume(v, sessions.get, resume), str)
