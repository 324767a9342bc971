"""Per-stream state: the lifecycle machine, request-n windows, fragment machines; and
stream-id allocation.

Protocol.md, Stream Identifiers: "Stream IDs on the client MUST start at 1 and increment
by 2 sequentially ... on the server MUST start at 2"; "the Stream ID MUST NOT be
re-used" -- until "the max Stream ID has been used (2^31-1)", after which "the Requester
MAY re-use Stream IDs ... by wrapping and restarting at ID 1 for client, and ID 2 for
server" and "MUST skip IDs still in use" (an engine option, off by default).
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any, Final

from wirestream.runtime.flow import Window
from wirestream.runtime.machine import Dispatch, StateMachine
from wirestream.runtime.rsocket.errors import StreamIdsExhausted
from wirestream.runtime.rsocket.events import InteractionModel
from wirestream.runtime.rsocket.fragmentation import Reassembly

__all__ = ["MAX_STREAM_ID", "Stream", "StreamIds", "machine_of"]

MAX_STREAM_ID: Final = (1 << 31) - 1


class Stream:
    """One open stream as seen by this side (``requester`` or ``responder``)."""

    __slots__ = (
        "stream_id",
        "model",
        "role",
        "machine",
        "dispatch",
        "outbound",
        "inbound",
        "send_fragments",
        "receive_fragments",
        "reassembly",
        "opened",
    )

    def __init__(self, stream_id: int, model: InteractionModel, role: str,
                 machine: StateMachine[Any], dispatch: Dispatch) -> None:  # fmt: skip
        self.stream_id = stream_id
        self.model = model
        self.role = role
        self.machine = machine
        # The generated dispatch of the machine's class and role, bound to the engine
        # that drives the stream (rebound when a resumed session is adopted).
        self.dispatch = dispatch
        # Items we may still send (the peer's initial n + REQUEST_N) and items the peer
        # may still send us (what we granted); None where the model has no request-n.
        self.outbound: Window | None = None
        self.inbound: Window | None = None
        # The `fragments` machines of each direction and the message being reassembled;
        # created only when a direction first sees a fragment.
        self.send_fragments: StateMachine[Any] | None = None
        self.receive_fragments: StateMachine[Any] | None = None
        self.reassembly: Reassembly | None = None
        # Whether the request that opens the stream went out (requester) or came in whole
        # and through the stream's machine (responder): until then the application does
        # not know the stream, and a 0.2 REQUEST_CHANNEL on it opens it rather than
        # carrying a message.
        self.opened = role == "requester"

    @property
    def is_channel_requester(self) -> bool:
        return self.model is InteractionModel.REQUEST_CHANNEL and self.role == "requester"

    def __repr__(self) -> str:
        return f"<Stream {self.stream_id} {self.model.value} {self.role} {self.machine.state}>"


def machine_of(stream: Stream) -> StateMachine[Any]:
    """A stream's lifecycle machine (``MachineRegistry``'s ``machine_of``)."""
    return stream.machine


class StreamIds:
    """Hands out our stream ids: odd (client) or even (server), never one in use."""

    __slots__ = ("first", "next_id", "reuse", "wrapped")

    def __init__(self, first: int, *, reuse: bool = False) -> None:
        self.first = first
        self.next_id = first
        self.reuse = reuse
        self.wrapped = False

    def allocate(self, in_use: Container[int]) -> int:
        tried = 0
        while True:
            if self.next_id > MAX_STREAM_ID:
                if not self.reuse:
                    raise StreamIdsExhausted(
                        "all stream ids up to 2^31-1 were used: 'If Stream IDs are not"
                        " re-used ... a new connection MUST be established'"
                    )
                self.next_id = self.first
                self.wrapped = True
            candidate = self.next_id
            self.next_id += 2
            if candidate not in in_use:
                return candidate
            tried += 1
            if tried > (MAX_STREAM_ID + 1) // 2:
                raise StreamIdsExhausted(
                    "'If all Stream IDs are concurrently in use, no new streams can be created'"
                )

    def is_peer_id(self, stream_id: int) -> bool:
        """Whether ``stream_id`` has the peer's parity (it may open a stream with it)."""
        return stream_id != 0 and (stream_id & 1) != (self.first & 1)
