"""Helpers shared by the RSocket engine tests (this module holds no tests)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from wirestream.runtime.rsocket import ClientSetup, Limits, RSocketConnection, SetupInfo
from wirestream.runtime.rsocket.versions import Version, get_version
from tests.support.engine_pair import shuttle

VERSIONS = ["1.0", "0.2"]


def v(version: str) -> Version:
    return get_version(version)


def codec(version: str) -> Any:
    return get_version(version).codec


def payload(version: str, **fields: Any) -> Any:
    """A PAYLOAD (1.0) or RESPONSE (0.2) frame."""
    return get_version(version).payload(**fields)


def wire(version: str, *frames: Any) -> bytes:
    """Frames as the transport carries them (24-bit length prefix each)."""
    return b"".join(codec(version).frame_bytes(frame) for frame in frames)


def decode_all(version: str, data: bytes) -> list[Any]:
    return list(codec(version).StreamDecoder().feed(data))


def setup_frame(version: str, **overrides: Any) -> Any:
    info = dict(
        major_version=v(version).major_version,
        minor_version=v(version).minor_version,
        keepalive_interval=1000,
        max_lifetime=5000,
        metadata_mime_type="text/plain",
        data_mime_type="text/plain",
        metadata=None,
        data=b"",
        lease=False,
        resume_token=None,
    )
    info.update(overrides)
    return get_version(version).setup(SetupInfo(**info))


LIMITS = frozenset(field.name for field in fields(Limits))
HOOKS = ("setup_policy", "resume_lookup", "leasing", "extensions")


def engine(role: str, version: str, **options: Any) -> RSocketConnection:
    """An engine with its options as keywords: ``Limits`` fields, the server's hooks, and
    (a client) ``ClientSetup`` fields."""
    limits = {name: options.pop(name) for name in list(options) if name in LIMITS}
    hooks = {name: options.pop(name) for name in HOOKS if name in options}
    setup = ClientSetup(**options) if options else None
    return RSocketConnection(role, version, setup=setup, limits=Limits(**limits), **hooks)


def pair(version: str, now: float = 0.0, client: dict[str, Any] | None = None,
         server: dict[str, Any] | None = None, establish: bool = True) -> tuple[RSocketConnection, RSocketConnection,
                                                        list[Any], list[Any]]:  # fmt: skip
    """A client that sent SETUP and a server that accepted it, back to back.

    With ``establish`` one request-response round trip (stream 1) makes the client see
    that its SETUP was accepted; the events returned are those of the SETUP exchange.
    """
    c = engine("client", version, **(client or {}))
    s = engine("server", version, **(server or {}))
    c.connect(now)
    events_c, events_s = shuttle(c, s)
    if establish:
        sid = c.request_response(b"")
        shuttle(c, s)
        s.send_next(sid, b"", complete=True)
        more_c, _ = shuttle(c, s)
        events_c += [e for e in more_c if not hasattr(e, "stream_id")]
    return c, s, events_c, events_s


def server_after_setup(version: str, **options: Any) -> RSocketConnection:
    """A server engine that accepted a raw SETUP (its output drained); ``lease=True``: a
    leasing server and a SETUP with the L flag."""
    lease = options.pop("lease", False)
    s = engine("server", version, leasing=lease, **options)
    s.receive_data(wire(version, setup_frame(version, lease=lease)))
    s.data_to_send()
    return s


def of_type(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
