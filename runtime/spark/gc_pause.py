"""The cyclic garbage collector paused while a batch of rows is built.

Building one Arrow batch makes tens of thousands of short-lived objects (decoded maps,
tuples, frames) that stay alive until the batch is done: each allocation threshold then
sets off a collection that walks all of them, again and again, for nothing -- none of
them can be in a cycle.  Measured: over half the time per frame in the capture source
under load, ~10% per row in the rabbitmq_stream source.  Reference counting still frees
everything; the collector runs again once the batch is built.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["cyclic_gc_paused"]


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
