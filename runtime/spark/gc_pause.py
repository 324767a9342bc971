"""The cyclic garbage collector kept off the executors' hot paths.

``cyclic_gc_paused``: the collector paused while a batch of rows is built.

Building one Arrow batch makes tens of thousands of short-lived objects (decoded maps,
tuples, frames) that stay alive until the batch is done: each allocation threshold then
sets off a collection that walks all of them, again and again, for nothing -- none of
them can be in a cycle.  Measured: over half the time per frame in the capture source
under load, ~10% per row in the rabbitmq_stream source.  Reference counting still frees
everything; the collector runs again once the batch is built.

``freeze_survivors``: a PySpark worker process runs task after task, and after each one
its daemon runs a full collection (``gc.collect()`` in ``pyspark/daemon.py``), which walks
every object the worker holds: pyspark's, pyarrow's and wirestream's modules, ~50,000
objects, 6 ms and more apiece.  A task that starts by freezing what is alive (``gc.freeze``:
those objects move to a permanent generation no collection walks) leaves that collection
only what later tasks make.  What a freeze keeps is what survived the daemon's collection
after the previous task, imports and caches: nothing is lost, as reference counting still
frees a frozen object, and only a reference cycle among objects alive at a task's start
that dies later would wait (for the worker's exit).  Measured on 2 cores, the capture
source's lean frame log (``bench.spark_pipeline``): the workers' collections fell from ~28%
to ~8% of their CPU, the query went ~5% faster.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator
from typing import Final

__all__ = ["cyclic_gc_paused", "freeze_survivors"]

WORKER_MODULE: Final = "pyspark.worker"
"""What a PySpark worker process imports to run tasks (``python -m pyspark.daemon
pyspark.worker``): the sign that ``freeze_survivors`` runs in one."""


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def freeze_survivors() -> None:
    """At a task's start in a PySpark worker, freeze every object alive (module docstring);
    anywhere else (a driver, a test calling a reader in-process) do nothing: the process's
    collector is not the data source's to change."""
    if WORKER_MODULE in sys.modules:
        gc.freeze()
