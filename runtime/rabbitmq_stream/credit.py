"""A consumer credit strategy like the Java client's default.

PROTOCOL.adoc, Credit: 'Credit => uint16 // the number of chunks that can be sent'.
The Java client subscribes with an initial credit and gives one credit back each time
the application has *handled* a chunk, so the chunks granted but not yet handled never
exceed the initial credit: memory stays bounded by the consumer's pace. The counting
is ``wirestream.runtime.flow.Replenisher`` (grant back every ``low_tide`` chunks consumed).
"""

from __future__ import annotations

from wirestream.runtime.flow import Replenisher

__all__ = ["CreditOnConsumption"]


class CreditOnConsumption:
    """Grant ``initial`` chunks at subscribe time, then ``low_tide`` more each time
    ``low_tide`` chunks were consumed (default 1: one credit per chunk, the Java
    client's behaviour)."""

    __slots__ = ("initial", "_replenisher")

    def __init__(self, initial: int = 10, low_tide: int = 1) -> None:
        if not 0 < initial <= 0xFFFF:
            raise ValueError("the initial credit must be 1..65535 (Subscribe's Credit is a uint16)")
        self.initial = initial
        self._replenisher = Replenisher(initial, low_tide)

    def consumed(self, chunks: int = 1) -> int:
        """Record chunks the application is done with; the credit to grant now (often 0)."""
        return self._replenisher.delivered(chunks)
