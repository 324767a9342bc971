"""What a producer refuses alone, before a message joins others in a frame or a batch.

One Publish frame carries many messages and one sub-entry batch many records, so a
message that cannot go must fail on its own, not take the frame or batch with it (the
Go and Java clients refuse only it): here are the two bounds -- the negotiated frame_max
('FrameMax => uint32 // in bytes', [Tune]) and the uncompressed size of a sub-entry
batch, which consumers with the same limits refuse beyond ``max_batch_size``
(``BatchTooLarge``: it is what decompressing would allocate) -- and the open batch a
producer fills up to them.
"""

from __future__ import annotations

from typing import Final, Generic, TypeVar

from wirestream.runtime.rabbitmq_stream.errors import MessageTooLarge
from wirestream.runtime.rabbitmq_stream.publish_frames import entry_fits

__all__ = [
    "RECORD_HEAD",
    "OpenBatch",
    "frame_refusal",
    "batch_refusal",
    "record_refusal",
    "unchecked_size",
]

RECORD_HEAD: Final = 4  # a sub-entry batch's record: 'Size => uint32', then the message

W = TypeVar("W")


def unchecked_size(frame_max: int, filtered: bool) -> int:
    """The longest message that fits a Publish frame whatever else it carries, so a
    producer looks only at longer ones: 13 bytes of frame head and 12 of entry head
    ('Publish'); a filtered message's filter value counts too, so then every one (0)."""
    if filtered:
        return 0
    return frame_max - 25 if frame_max else 0x7FFFFFFF


def frame_refusal(frame_max: int, size: int, filter_value: str | None = None,
                  filtered: bool = False) -> MessageTooLarge | None:  # fmt: skip
    """Why a message of ``size`` bytes fits no Publish frame (None: it fits one)."""
    if entry_fits(frame_max, size, filter_value, filtered):
        return None
    return MessageTooLarge(
        f"a message of {size} bytes does not fit a Publish frame of the negotiated "
        f"frame_max {frame_max}"
    )


def record_refusal(max_batch_size: int, size: int) -> MessageTooLarge | None:
    """Why a message of ``size`` bytes fits no sub-entry batch (None: it fits one)."""
    if RECORD_HEAD + size <= max_batch_size:
        return None
    return MessageTooLarge(
        f"a message of {size} bytes does not fit a sub-entry batch of at most "
        f"{max_batch_size} bytes uncompressed (connect(max_batch_size=))"
    )


def batch_refusal(max_batch_size: int, uncompressed: int) -> MessageTooLarge | None:
    """Why a whole sub-entry batch of ``uncompressed`` bytes cannot go (None: it can)."""
    if uncompressed <= max_batch_size:
        return None
    return MessageTooLarge(
        f"a sub-entry batch of {uncompressed} bytes uncompressed exceeds max_batch_size "
        f"{max_batch_size} (connect): consumers with these limits refuse it (BatchTooLarge)"
    )


class OpenBatch(Generic[W]):
    """The sub-entry batch a producer is filling: its messages, their publishing ids and
    who waits for each, and its uncompressed size (records with their size fields)."""

    __slots__ = ("messages", "ids", "waiters", "size")

    def __init__(self) -> None:
        self.messages: list[bytes] = []
        self.ids: list[int] = []
        self.waiters: list[W] = []
        self.size = 0

    def __len__(self) -> int:
        return len(self.messages)

    def add(self, message: bytes, publishing_id: int, waiter: W) -> None:
        self.messages.append(message)
        self.ids.append(publishing_id)
        self.waiters.append(waiter)
        self.size += RECORD_HEAD + len(message)

    def would_pass(self, size: int, max_batch_size: int) -> bool:
        """Whether a message of ``size`` bytes would take a non-empty batch past
        ``max_batch_size`` (then the batch is closed first)."""
        return bool(self.messages) and self.size + RECORD_HEAD + size > max_batch_size

    def take(self) -> tuple[list[bytes], list[int], list[W]]:
        """Everything in the batch; it is empty again."""
        taken = self.messages, self.ids, self.waiters
        self.messages, self.ids, self.waiters, self.size = [], [], [], 0
        return taken
