"""The two protocol versions as data: which generated codec and machines, and the few
constants and frame layouts in which RSocket 1.0 differs from ReactiveSocket 0.2.

The engine is one codebase; everything version-specific it needs is an attribute or a
small builder of ``Version`` (h11 keeps its per-role differences as tables the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import Any, Final

import wirestream.generated.rsocket.v0_2 as codec_v0_2
import wirestream.generated.rsocket.v0_2.machines as machines_v0_2
import wirestream.generated.rsocket.v1_0 as codec_v1_0
import wirestream.generated.rsocket.v1_0.machines as machines_v1_0

from wirestream.runtime.machine import StateMachine
from wirestream.runtime.rsocket.events import InteractionModel, SetupInfo

__all__ = [
    "Version",
    "VERSIONS",
    "V1_0",
    "V0_2",
    "get_version",
    "rsocket_1_0",
    "reactivesocket_0_2",
]

Frame = Any  # a frame class instance of either generated codec


@dataclass(frozen=True, eq=False)
class Version:
    """One protocol version: codec, machines and the differences between versions."""

    name: str
    codec: ModuleType
    machines: ModuleType
    major_version: int
    minor_version: int
    payload: type
    """The stream data frame: PAYLOAD (1.0) or RESPONSE (0.2)."""
    continuation_is_payload: bool
    """1.0: fragments after the first are PAYLOAD frames; 0.2 (IDL M3): the first's type."""
    channel_requester_messages_are_requests: bool
    """0.2 (IDL M4): a channel requester's later messages are REQUEST_CHANNEL frames."""
    lenient_decode: bool
    """0.2: "If Metadata Length is greater than this value, the entire frame MUST be
    ignored"; 1.0: a malformed frame is a connection error."""
    resume_token_size: int | None
    """0.2: the SETUP/RESUME token is always 128 bits; 1.0: u16-length-prefixed."""
    setup_error_codes: frozenset[int]
    connection_error: int
    connection_close: int
    """The code our ``close()`` ends a connection with when no stream is open."""
    graceful_close: int | None
    """1.0 CONNECTION_CLOSE: "Sender or Receiver of this frame MUST wait for outstanding
    streams to terminate before closing the connection"; 0.2 has no such code (its 0x102,
    CONNECTION_ERROR_NO_RETRY, ends the connection at once)."""
    resume_rejected: int
    """The ERROR code answering a RESUME that cannot be honoured."""
    resume_no_retry: int
    """An ERROR code after which the client "MUST NOT attempt resumption again"."""
    resume_unsupported_setup: int
    """The code rejecting a SETUP with R when resuming is not supported."""
    rejected_setup: int
    """REJECTED_SETUP: "The server rejected the setup, it can specify the reason in the
    payload" (a SETUP whose resume token a live session holds)."""
    invalid_setup: int
    unsupported_setup: int
    rejected: int
    invalid: int
    application_error: int

    # --- frame classes (looked up once; shared by every engine: not to be mutated) -----

    @cached_property
    def request_models(self) -> dict[type, InteractionModel]:
        c = self.codec
        return {
            c.RequestResponse: InteractionModel.REQUEST_RESPONSE,
            c.RequestFnf: InteractionModel.FIRE_AND_FORGET,
            c.RequestStream: InteractionModel.REQUEST_STREAM,
            c.RequestChannel: InteractionModel.REQUEST_CHANNEL,
        }

    @cached_property
    def stream_machines(self) -> dict[InteractionModel, type[StateMachine[Any]]]:
        m = self.machines
        return {
            InteractionModel.REQUEST_RESPONSE: m.RequestResponseMachine,
            InteractionModel.FIRE_AND_FORGET: m.RequestFnfMachine,
            InteractionModel.REQUEST_STREAM: m.RequestStreamMachine,
            InteractionModel.REQUEST_CHANNEL: m.RequestChannelMachine,
        }

    @cached_property
    def position_frames(self) -> frozenset[type]:
        """Frames with implied positions (resumption): 1.0 "REQUEST_RESPONSE,
        REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N, CANCEL, ERROR, or
        PAYLOAD"; 0.2 "REQUEST, CANCEL, ERROR, and RESPONSE", where a "Request" is "one
        of four types. As well as request for more items or cancellation" -- the same
        set.  Only stream frames count (a stream-0 ERROR ends the connection)."""
        c = self.codec
        return frozenset({c.RequestResponse, c.RequestFnf, c.RequestStream, c.RequestChannel,
                          c.RequestN, c.Cancel, c.Error, self.payload})  # fmt: skip

    # --- builders of the frames whose layout differs -----------------------------------

    def setup(self, info: SetupInfo) -> Frame:
        c = self.codec
        if self.resume_token_size is None:
            return c.Setup(lease=info.lease, major_version=info.major_version,
                           minor_version=info.minor_version,
                           keepalive_interval=info.keepalive_interval,
                           max_lifetime=info.max_lifetime, resume_token=info.resume_token,
                           metadata_mime_type=info.metadata_mime_type,
                           data_mime_type=info.data_mime_type, metadata=info.metadata,
                           data=info.data)  # fmt: skip
        return c.Setup(lease=info.lease, strict=info.strict,
                       resume=info.resume_token is not None,
                       major_version=info.major_version, minor_version=info.minor_version,
                       keepalive_interval=info.keepalive_interval,
                       max_lifetime=info.max_lifetime,
                       resume_token=info.resume_token or bytes(self.resume_token_size),
                       metadata_mime_type=info.metadata_mime_type,
                       data_mime_type=info.data_mime_type, metadata=info.metadata,
                       data=info.data)  # fmt: skip

    def setup_info(self, frame: Frame) -> SetupInfo:
        if self.resume_token_size is None:
            token, strict = frame.resume_token, False
        else:
            token, strict = (frame.resume_token if frame.resume else None), frame.strict
        return SetupInfo(frame.major_version, frame.minor_version, frame.keepalive_interval,
                         frame.max_lifetime, frame.metadata_mime_type, frame.data_mime_type,
                         frame.metadata, frame.data, frame.lease, token, strict)  # fmt: skip

    def resume(self, token: bytes, last_received: int, first_available: int) -> Frame:
        if self.resume_token_size is None:
            return self.codec.Resume(major_version=self.major_version,
                                     minor_version=self.minor_version, resume_token=token,
                                     last_received_server_position=last_received,
                                     first_available_client_position=first_available)  # fmt: skip
        return self.codec.Resume(resume_token=token, last_received_position=last_received)

    def resume_fields(self, frame: Frame) -> tuple[int, int | None, bool]:
        """(client's last received position, client's first available position or None,
        whether the RESUME's version is ours)."""
        if self.resume_token_size is None:
            same = (frame.major_version, frame.minor_version) == (
                self.major_version, self.minor_version
            )  # fmt: skip
            return frame.last_received_server_position, frame.first_available_client_position, same
        return frame.last_received_position, None, True

    def resume_ok(self, position: int) -> Frame:
        if self.resume_token_size is None:
            return self.codec.ResumeOk(last_received_client_position=position)
        return self.codec.ResumeOk(last_received_position=position)

    def resume_ok_position(self, frame: Frame) -> int:
        if self.resume_token_size is None:
            return int(frame.last_received_client_position)
        return int(frame.last_received_position)

    def error(self, stream_id: int, code: int, message: bytes) -> Frame:
        return self.codec.Error(stream_id=stream_id, error_code=code, data=message)

    def request_channel(self, stream_id: int, n: int, data: bytes, metadata: bytes | None,
                        complete: bool) -> Frame:  # fmt: skip
        return self.codec.RequestChannel(stream_id=stream_id, initial_request_n=n, data=data,
                                         metadata=metadata, complete=complete)  # fmt: skip

    def message(self, stream_id: int, requester_of_channel: bool, data: bytes,
                metadata: bytes | None, next: bool, complete: bool) -> Frame:  # fmt: skip
        """A stream data message: PAYLOAD/RESPONSE, or in 0.2 a channel requester's
        later REQUEST_CHANNEL (without Initial Request N)."""
        if requester_of_channel and self.channel_requester_messages_are_requests:
            return self.codec.RequestChannel(stream_id=stream_id, data=data, metadata=metadata,
                                             complete=complete)  # fmt: skip
        return self.payload(stream_id=stream_id, data=data, metadata=metadata, next=next,
                            complete=complete)  # fmt: skip


def _codes(codec: ModuleType) -> dict[str, int]:
    return {member.name: int(member) for member in codec.ErrorCode}


def rsocket_1_0(codec: ModuleType, machines: ModuleType) -> Version:
    """RSocket 1.0 over a generated codec and its machines (``V1_0``; a test may pass a
    package generated from an edited IDL)."""
    c = _codes(codec)
    return Version(
        name="1.0", codec=codec, machines=machines, major_version=1, minor_version=0,
        payload=codec.Payload, continuation_is_payload=True,
        channel_requester_messages_are_requests=False, lenient_decode=False,
        resume_token_size=None,
        setup_error_codes=frozenset({c["INVALID_SETUP"], c["UNSUPPORTED_SETUP"],
                                     c["REJECTED_SETUP"]}),
        connection_error=c["CONNECTION_ERROR"], connection_close=c["CONNECTION_CLOSE"],
        graceful_close=c["CONNECTION_CLOSE"],
        resume_rejected=c["REJECTED_RESUME"], resume_no_retry=c["REJECTED_RESUME"],
        resume_unsupported_setup=c["REJECTED_SETUP"], rejected_setup=c["REJECTED_SETUP"],
        invalid_setup=c["INVALID_SETUP"],
        unsupported_setup=c["UNSUPPORTED_SETUP"], rejected=c["REJECTED"],
        invalid=c["INVALID"], application_error=c["APPLICATION_ERROR"],
    )  # fmt: skip


def reactivesocket_0_2(codec: ModuleType, machines: ModuleType) -> Version:
    """ReactiveSocket 0.2 over a generated codec and its machines (``V0_2``)."""
    c = _codes(codec)
    return Version(
        name="0.2", codec=codec, machines=machines, major_version=0, minor_version=2,
        payload=codec.Response, continuation_is_payload=False,
        channel_requester_messages_are_requests=True, lenient_decode=True,
        resume_token_size=16,
        setup_error_codes=frozenset({c["INVALID_SETUP"], c["UNSUPPORTED_SETUP"],
                                     c["REJECTED_SETUP"]}),
        connection_error=c["CONNECTION_ERROR"], connection_close=c["CONNECTION_ERROR_NO_RETRY"],
        graceful_close=None,
        # Seed: "A Server implementation MAY use CONNECTION_ERROR or CONNECTION_ERROR_NO_RETRY
        # as it sees fit for each error condition."
        resume_rejected=c["CONNECTION_ERROR"], resume_no_retry=c["CONNECTION_ERROR_NO_RETRY"],
        # Seed: "must reject the SETUP with an ERROR" (no code given; R02-14).
        resume_unsupported_setup=c["UNSUPPORTED_SETUP"], rejected_setup=c["REJECTED_SETUP"],
        invalid_setup=c["INVALID_SETUP"],
        unsupported_setup=c["UNSUPPORTED_SETUP"], rejected=c["REJECTED"],
        invalid=c["INVALID"], application_error=c["APPLICATION_ERROR"],
    )  # fmt: skip


V1_0: Final = rsocket_1_0(codec_v1_0, machines_v1_0)
V0_2: Final = reactivesocket_0_2(codec_v0_2, machines_v0_2)

VERSIONS: Final = {"1.0": V1_0, "0.2": V0_2}


def get_version(name: str | Version) -> Version:
    """The version named ``name`` ("1.0" or "0.2"); a ``Version`` is taken as it is."""
    if isinstance(name, Version):
        return name
    try:
        return VERSIONS[name]
    except KeyError:
        raise ValueError(f"unknown RSocket version {name!r} (known: 1.0, 0.2)") from None
