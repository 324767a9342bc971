"""wirestream on Spark: the data sources, and a SparkSession set up to run them.

>>> from wirestream.runtime.spark import session
>>> spark = session("local[2]")          # registers every wirestream data source
>>> frames = spark.read.format("wirestream").option("protocol", "rsocket/1.0").load("caps/")

Data sources (PySpark's Python Data Source API; each module documents its options):

======================  =====================================================  ==========
format                  what                                                   module
======================  =====================================================  ==========
``wirestream``          capture files -> decoded frame log (batch)             capture_source
``rabbitmq_stream``     a RabbitMQ stream: streaming source and sink (batch,   rabbitmq_stream
                        streaming), offsets checkpointed, idempotent publish
``rsocket``             an RSocket request-stream/channel: streaming source,   rsocket_source
                        request-n per micro-batch
``rsio``                a Reactive Streams (rsio) subscription: streaming      rsio_source
                        source, demand per micro-batch
======================  =====================================================  ==========

On a cluster, install wirestream (with the ``spark`` extra) on every executor: sources and
sinks carry only their options and offsets to executors, which open their own connections.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DATA_SOURCES", "register", "session"]

DATA_SOURCES: tuple[tuple[str, str], ...] = (
    ("wirestream.runtime.spark.capture_source", "WirestreamCaptureSource"),
    ("wirestream.runtime.spark.rabbitmq_stream", "RabbitMQStreamDataSource"),
    ("wirestream.runtime.spark.rsocket_source", "RSocketDataSource"),
    ("wirestream.runtime.spark.rsio_source", "RsioDataSource"),
)
"""(module, class) of every data source ``register`` adds to a session."""


def register(spark: "SparkSession") -> None:
    """Register every wirestream data source with ``spark`` (idempotent)."""
    for module_name, class_name in DATA_SOURCES:
        source = getattr(importlib.import_module(module_name), class_name)
        spark.dataSource.register(source)


def session(
    master: str = "local[2]",
    app_name: str = "wirestream",
    conf: dict[str, Any] | None = None,
    log_level: str = "WARN",
) -> "SparkSession":
    """A SparkSession with the wirestream data sources registered.

    Python workers run this interpreter (``PYSPARK_PYTHON``), so the executors import the
    same wirestream and generated code as the driver; on a cluster set ``PYSPARK_PYTHON``
    to the executors' environment instead (an existing value is kept).  The web UI is off
    and shuffles use as many partitions as there are cores: small local jobs do not pay
    for Spark's default 200.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    }
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark
