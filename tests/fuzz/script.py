"""Choices read from a fuzzer's bytes (structure-aware fuzzing without the fuzzer).

A harness asks ``Script`` for a byte, a number below n, a slice or one of a list; the
same bytes always give the same choices, so the committed corpus replays identically
under pytest, with or without atheris installed.  When the bytes run out every choice
is 0 (the first option), so a short input is still a complete, valid run.

We read the bytes ourselves rather than through ``atheris.FuzzedDataProvider`` (whose
reads the pytest replay could not reproduce without atheris) or Hypothesis'
``fuzz_one_input`` (whose reading of a buffer is, by its documentation, "specific to the
exact version of Hypothesis": a committed corpus would silently change meaning on an
upgrade).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

__all__ = ["Script"]


class Script:
    """A cursor over the fuzzer's bytes."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def __bool__(self) -> bool:
        return self.pos < len(self.data)

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u16(self) -> int:
        return self.byte() << 8 | self.byte()

    def u32(self) -> int:
        return self.u16() << 16 | self.u16()

    def below(self, n: int) -> int:
        """A number in 0..n-1 (one byte when n <= 256, two otherwise)."""
        return (self.byte() if n <= 256 else self.u16()) % n

    def flag(self) -> bool:
        return self.byte() & 1 == 1

    def take(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer when the input ends)."""
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk

    def blob(self, limit: int = 64) -> bytes:
        """A length byte (below ``limit``), then that many bytes."""
        return self.take(self.byte() % limit)

    def rest(self) -> bytes:
        chunk = self.data[self.pos :]
        self.pos = len(self.data)
        return chunk

    def pick(self, options: Sequence[T]) -> T:
        return options[self.below(len(options))]
