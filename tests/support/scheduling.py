"""How ``make test`` shares the test files among pytest-xdist's workers (``--dist loadfile``).

Each test file runs whole in one worker, as ``loadfile`` does, except that every file that
uses the session's local SparkSession (the ``spark`` fixture: ``tests/spark/`` and the docs'
examples, which run ``docs/spark.md`` against it) is one unit: one worker runs them all, so
the run starts one Spark JVM, and one Spark Connect server, instead of one per worker.
Each start costs ~15-30 s of a loaded 2-core machine's time, and each JVM keeps its
threads busy for as long as it lives.

That unit (~800 s of a ~2,800 s run, over 400 tests) is handed out at the start, second:
xdist's ``--loadscope-reorder`` (its default) queues units by their number of tests, and
only ``tests/codegen/test_vectors.py`` (a few seconds) has more. A file outside
``SPARK_FILES`` that uses ``spark`` still works; it only starts its worker's own JVM.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

__all__ = ["SPARK_FILES", "OneSparkWorker"]

SPARK_FILES = ("tests/spark/", "tests/project/test_docs_examples.py")
"""Node-id prefixes of the files that use the ``spark`` fixture (tests/conftest.py)."""


class OneSparkWorker(LoadFileScheduling):
    """``loadfile``, with the Spark files as one unit."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path.startswith(SPARK_FILES):
            return "spark"
        return path
