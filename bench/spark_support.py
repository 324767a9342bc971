"""What the Spark benchmarks share: a quiet session and the broker check."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench.broker import BROKER, broker_up

__all__ = ["BROKER", "broker_up", "quiet_session", "SPARK_LOG"]

SPARK_LOG = Path(tempfile.gettempdir()) / "wirestream-bench-spark.log"


def quiet_session(app_name: str, master: str = "local[2]") -> Any:
    """A session whose JVM writes its console output (startup notes, WARN lines, progress
    bars) to ``SPARK_LOG`` instead of between the benchmark's lines."""
    from wirestream.apps.demo import SHORT_JOB_CONF, jvm_output_to
    from wirestream.runtime.spark import session

    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with jvm_output_to(SPARK_LOG):
        return session(master, app_name=app_name, log_level="ERROR", conf=SHORT_JOB_CONF)
