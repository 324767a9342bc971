"""RSocket openings for ``engine.rsocket.v1_0`` / ``engine.rsocket.v0_2`` (tests/fuzz/engines.py).

Either role is under test, its peer a real ``RSocketConnection`` of the other: a server
after SETUP and the four interaction models; a server asked for leases; a client after
its SETUP and requests (accepted, leased); both ends of a resumed session (RESUME /
RESUME_OK after the transport was cut with streams open).  The engine under test keeps
small limits (4 KiB frames, 8 KiB reassembly and resume buffer; a 64-byte MTU in some),
so no input makes it hold much.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wirestream.runtime.rsocket import ClientSetup, Limits, ResumableSession, RSocketConnection
from wirestream.runtime.rsocket.fragmentation import MIN_MTU
from wirestream.runtime.rsocket.versions import get_version
from tests.fuzz.engines import (
    Command,
    Once,
    Run,
    Scenario,
    Side,
    _Checker,
    amount,
    payload,
    seen_ids,
    shuttle,
    unique,
    vector_frames,
)
from tests.fuzz.script import Script

__all__ = ["scenarios"]

TOKEN = b"0123456789abcdef"  # 0.2 resume tokens are 128 bits
SMALL = Limits(max_frame_size=4096, max_reassembly_size=8192, resume_buffer_size=8192)
FRAGMENTING = Limits(mtu=MIN_MTU, max_frame_size=4096, max_reassembly_size=8192,
                     resume_buffer_size=8192)  # fmt: skip
N = (1, 2, 3, 5, 100, 0x7FFFFFFF)
ERROR_CODES = (0x201, 0x202, 0x203, 0x204, 0x205, 0x301, 0x00000001, 0x00000101)


def _stream(run: Run, engine: RSocketConnection, script: Script) -> int:
    return run.pick_id(script, engine.open_streams)


COMMANDS: list[Command] = [
    lambda run, e, s: e.request_stream(payload(s), s.blob(8) or None, initial_n=amount(s, *N)),
    lambda run, e, s: e.request_channel(
        payload(s), None, initial_n=amount(s, *N), complete=s.flag()
    ),
    lambda run, e, s: e.request_response(payload(s), s.blob(8) or None),
    lambda run, e, s: e.fire_and_forget(payload(s)),
    lambda run, e, s: e.send_next(
        _stream(run, e, s), payload(s), s.blob(8) or None, complete=s.flag()
    ),
    lambda run, e, s: e.send_complete(_stream(run, e, s)),
    lambda run, e, s: e.send_error(_stream(run, e, s), amount(s, *ERROR_CODES), s.blob(16)),
    lambda run, e, s: e.request(_stream(run, e, s), amount(s, *N)),
    lambda run, e, s: e.cancel(_stream(run, e, s)),
    lambda run, e, s: e.send_lease(amount(s, 1, 1000, 0x7FFFFFFF), amount(s, 1, 2, 100)),
    lambda run, e, s: e.metadata_push(s.blob(32)),
    lambda run, e, s: e.send_keepalive(s.blob(16)),
]


def _side(engine: RSocketConnection, version: str) -> Side:
    checker = _Checker(get_version(version).codec.StreamDecoder(), f"RSocket {engine.role}")
    return Side(engine, COMMANDS, checker)


def _run(version: str, engine: RSocketConnection, peer: RSocketConnection,
         exchanged: list[bytes], events: list[Any], once: Once) -> Run:  # fmt: skip
    codec = get_version(version).codec
    stem = "rsocket_v1_0" if version == "1.0" else "rsocket_v0_2"

    def make() -> list[Any]:
        opening = []
        for data in exchanged:
            opening += codec.StreamDecoder().feed(data)
        return unique([*vector_frames(codec, stem), *opening], codec.encode)

    palette = once(make)
    run = Run(_side(engine, version), _side(peer, version), codec.frame_bytes, palette)
    run.ids |= seen_ids(events) | set(engine.open_streams) | set(peer.open_streams)
    return run


def _server_after(version: str, setup: ClientSetup, limits: Limits,
                  requests: bool) -> Scenario:  # fmt: skip
    """The server under test has the client's SETUP (and requests) in its input."""

    once = Once()

    def build() -> Run:
        client = RSocketConnection("client", version, setup=setup)
        server = RSocketConnection("server", version, limits=limits, leasing=setup.lease)
        client.connect()
        if requests:
            client.request_stream(b"stream", initial_n=4)
            client.request_channel(b"channel", initial_n=2)
            client.request_response(b"response")
            client.fire_and_forget(b"fnf")
        opening = client.data_to_send()
        events = server.receive_data(opening)
        return _run(version, server, client, [opening], events, once)

    return build


def _client_after(version: str, setup: ClientSetup, limits: Limits, lease: bool) -> Scenario:
    """The client under test after SETUP and requests, with the server's answers (a
    LEASE first when asked) in its input."""

    once = Once()

    def build() -> Run:
        client = RSocketConnection("client", version, setup=setup, limits=limits)
        server = RSocketConnection("server", version, leasing=lease)
        client.connect()
        hello = client.data_to_send()
        events = server.receive_data(hello)
        if lease:
            server.send_lease(60_000, 10)
        answer = server.data_to_send()  # nothing when it accepts a SETUP without lease
        if answer:
            events += client.receive_data(answer)
        client.request_stream(b"stream", initial_n=4)
        client.request_channel(b"channel", initial_n=2)
        requests = client.data_to_send()
        events += server.receive_data(requests)
        return _run(version, client, server, [hello, answer, requests], events, once)

    return build


def _resumed(version: str, under_test: str) -> Scenario:
    """A resumable session cut with streams open, then RESUME on new engines: the
    server under test reads the RESUME (or has read nothing: the script sends it, with
    other positions); the client under test reads RESUME_OK and the server's
    retransmission."""

    once = Once()

    def build() -> Run:
        sessions: dict[bytes, ResumableSession] = {}
        client = RSocketConnection("client", version, setup=ClientSetup(resume_token=TOKEN),
                                   limits=SMALL)  # fmt: skip
        server = RSocketConnection("server", version, limits=SMALL, resume_lookup=sessions.get)
        client.connect()
        server.receive_data(client.data_to_send())
        sessions[TOKEN] = server.session()
        sid = client.request_stream(b"items", initial_n=10)
        client.request_channel(b"channel", initial_n=3)
        shuttle(_side(client, version), _side(server, version))
        server.send_next(sid, b"1")
        server.data_to_send()  # lost with the transport
        client.receive_data(b"")
        server.receive_data(b"")
        client2 = RSocketConnection.resume(client.session(), limits=SMALL)
        server2 = RSocketConnection("server", version, limits=SMALL, resume_lookup=sessions.get)
        resume = client2.data_to_send()
        if under_test == "fresh server":  # the RESUME is in the palette, not yet read
            return _run(version, server2, client2, [resume], [], once)
        events = server2.receive_data(resume)
        if under_test == "server":
            return _run(version, server2, client2, [resume], events, once)
        answer = server2.data_to_send()
        if answer:
            events += client2.receive_data(answer)
        return _run(version, client2, server2, [resume, answer], events, once)

    return build


def _bare_server(version: str) -> Scenario:
    """A server that has read nothing: the script's first frame is its SETUP."""

    once = Once()

    def build() -> Run:
        server = RSocketConnection("server", version, limits=SMALL)
        client = RSocketConnection("client", version)
        client.connect()
        hello = client.data_to_send()  # in the palette, not yet fed
        return _run(version, server, client, [hello], [], once)

    return build


def scenarios(version: str) -> list[Callable[[], Run]]:
    plain, lease = ClientSetup(), ClientSetup(lease=True)
    fast = ClientSetup(keepalive_interval=1000, max_lifetime=3000, metadata_mime_type="a/b")
    return [
        _server_after(version, plain, SMALL, requests=True),
        _server_after(version, lease, SMALL, requests=False),
        _server_after(version, fast, FRAGMENTING, requests=True),
        _client_after(version, plain, SMALL, lease=False),
        _client_after(version, lease, FRAGMENTING, lease=True),
        _client_after(version, fast, SMALL, lease=False),
        _resumed(version, "server"),
        _resumed(version, "client"),
        _resumed(version, "fresh server"),
        _bare_server(version),
    ]
