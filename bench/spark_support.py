"""What the Spark benchmarks share: a quiet session and the broker check."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench.broker import BROKER, broker_up

__all__ = ["BROKER", "broker_up", "quiet_session", "SPARK_LOG"]

SPARK_LOG = Path(tempfile.gettempdir()) / "wirestream-bench-spark.log"


def quiet_session(app_name: str, master: str = "local[2]", short_jobs: bool = True) -> Any:
    """A session whose JVM writes its console output (startup notes, WARN lines, progress
    bars) to ``SPARK_LOG`` instead of between the benchmark's lines.

    ``short_jobs``: the JVM the demo runs (``SHORT_JOB_CONF``: C1 only, for its
    micro-batches of seconds), as the streaming benchmarks measure it; ``False``: the
    JVM ``wirestream.runtime.spark.session`` gives a user (C2 as well), for batch scans
    of a million rows, the steady state C2's compiling pays back in (bench.spark_pipeline:
    C1 alone cost the native capture path ~1/3 of its JVM time per row)."""
    from wirestream.apps.demo import SHORT_JOB_CONF, jvm_output_to
    from wirestream.runtime.spark import session

    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = SHORT_JOB_CONF if short_jobs else {"spark.ui.showConsoleProgress": "false"}
    with jvm_output_to(SPARK_LOG):
        return session(master, app_name=app_name, log_level="ERROR", conf=conf)
