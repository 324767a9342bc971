"""Which BPMUX packet costs which credit, and outgoing credit with reservations.

Seed 002: "Unless indicated otherwise, sending a message consumes top-level credit (1
credit per byte sent, including metadata)" (L17); inner packets: "These consume inner
credit, not top-level credit" (L58); every packet marked "(does not consume credit)"
costs nothing.  The arithmetic is ``wirestream.runtime.flow.Window``'s (cap 2^64-1, the VarU64
range; grants saturate there).

DECISIONS (also in idl/bpmux/rel.yaml):

- A packet costs its whole encoding: type byte, every VarU64 (ids, credit, lengths,
  total_length) and every payload byte ("including metadata"), so a batch costs its
  one packet, not the packets it replaces.
- Minimum and InnerEnd/InnerError have no exemption in the seed, so they cost credit.
- Packets of unknown type (skipped per L19) cost nothing: a newer peer exempting them
  must not look like an overrun.
- GreedySink/GreedyDuplex (our layout) cost top-level credit, items included; their
  items do not touch the new flow's inner credit.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from wirestream.generated.bpmux.rel import (
    CancelAll,
    Close,
    CreateDuplex,
    CreateSink,
    CreateStream,
    GreedyDuplex,
    GreedySink,
    InnerCancel,
    InnerCredit,
    InnerEnd,
    InnerError,
    InnerItem,
    InnerItems,
    MainCredit,
    Message,
    Messages,
    Minimum,
    Request,
    RequestCancel,
    Requests,
    Response,
    ResponseError,
)
from wirestream.runtime.bpmux.errors import CreditExceeded
from wirestream.runtime.flow import VARU64_MAX, Window

__all__ = ["Charge", "CHARGE", "charge_of", "OutboundCredit"]


class Charge(enum.Enum):
    """The credit a packet consumes."""

    NONE = "none"
    TOP_LEVEL = "top-level"
    INNER = "inner"


CHARGE: Final[Mapping[type, Charge]] = {
    MainCredit: Charge.NONE,  # L29 "(does not consume credit)"
    Close: Charge.NONE,  # L31 "(does not consume credit)"
    Minimum: Charge.TOP_LEVEL,  # L33: no exemption -> L17 default
    CancelAll: Charge.NONE,  # L35 "(does not consume credit)"
    Message: Charge.TOP_LEVEL,  # L17 default
    Messages: Charge.TOP_LEVEL,
    Request: Charge.TOP_LEVEL,
    Requests: Charge.TOP_LEVEL,
    RequestCancel: Charge.NONE,  # L45
    Response: Charge.NONE,  # L47
    ResponseError: Charge.NONE,  # L49
    CreateStream: Charge.TOP_LEVEL,
    CreateSink: Charge.TOP_LEVEL,
    GreedySink: Charge.TOP_LEVEL,  # TODO L25 "consume top-level credit to attach ... items"
    CreateDuplex: Charge.TOP_LEVEL,
    GreedyDuplex: Charge.TOP_LEVEL,
    InnerCredit: Charge.NONE,  # L59
    InnerCancel: Charge.NONE,  # L61
    InnerItem: Charge.INNER,  # L58 "These consume inner credit"
    InnerItems: Charge.INNER,
    InnerEnd: Charge.INNER,  # L58: no exemption
    InnerError: Charge.INNER,
}


def charge_of(frame: object) -> Charge:
    """The credit ``frame`` consumes (unknown packets: none)."""
    return CHARGE.get(type(frame), Charge.NONE)


class OutboundCredit:
    """Credit the peer granted us, and the part of it promised to queued packets.

    Commands queue packets and ``reserve`` their cost at once (so a command beyond
    credit fails at the call, ``CreditExceeded``); ``data_to_send`` writes them, maybe
    batched (never costlier than the packets it replaces), and ``spend``s what was
    written.  So the window is charged exactly the bytes on the wire.
    """

    __slots__ = ("window", "reserved", "level")

    def __init__(self, level: Charge, initial: int = 0) -> None:
        self.window = Window.outbound_window(cap=VARU64_MAX, initial=initial)
        self.reserved = 0
        self.level = level

    @property
    def available(self) -> int:
        """Bytes still free for new packets."""
        return self.window.available - self.reserved

    def fits(self, cost: int, keep: int = 0) -> bool:
        """Whether a packet of ``cost`` bytes fits, leaving ``keep`` bytes unused."""
        return self.window.can_consume(self.reserved + cost + keep)

    def reserve(self, cost: int, keep: int = 0) -> None:
        """Promise ``cost`` bytes to a queued packet, or raise ``CreditExceeded``."""
        if not self.fits(cost, keep):
            extra = f" (keeping {keep} for the end of the stream)" if keep else ""
            raise CreditExceeded(
                f"a {cost}-byte packet needs more {self.level.value} credit than the"
                f" {self.available} bytes left{extra}",
                level=self.level.value,
                needed=cost + keep,
                available=self.available,
            )
        self.reserved += cost

    def release(self, cost: int) -> None:
        """Give back a reservation whose packet will not be written."""
        self.reserved -= cost

    def spend(self, reserved: int, written: int) -> None:
        """A queued packet (or a batch of them) costing ``reserved`` was written as
        ``written`` bytes (``written <= reserved``)."""
        self.reserved -= reserved
        self.window.consume(written)

    def grant(self, amount: int) -> None:
        """The peer's grant (MainCredit / InnerCredit). DECISION: a grant of 0 is
        harmless and dropped (``Window`` refuses it)."""
        if amount:
            self.window.grant(amount)

    def __repr__(self) -> str:
        return f"<OutboundCredit {self.level.value} available={self.available}>"
