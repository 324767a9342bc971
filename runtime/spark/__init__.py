"""wirestream on Spark: the data sources, and a SparkSession set up to run them.

>>> from wirestream.runtime.spark import session
>>> spark = session("local[2]")          # registers every wirestream data source
>>> frames = spark.read.format("wirestream").option("protocol", "rsocket/1.0").load("caps/")

``session`` takes what a master URL takes (``local[2]``, ``spark://host:7077``: a classic
session, a SparkContext in this process) or a Spark Connect URL (``sc://host:15002``: a
client of a Spark Connect server, no JVM here).

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
Through Spark Connect the server runs the sources (its driver plans micro-batches, its
executors read): install wirestream where the server's ``PYSPARK_PYTHON`` runs; the client
needs only the ``spark`` extra (PySpark's Connect client: grpcio, protobuf, zstandard).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

__all__ = ["DATA_SOURCES", "connect_session", "register", "session"]

DATA_SOURCES: tuple[tuple[str, str], ...] = (
    ("wirestream.runtime.spark.capture_source", "WirestreamCaptureSource"),
    ("wirestream.runtime.spark.rabbitmq_stream", "RabbitMQStreamDataSource"),
    ("wirestream.runtime.spark.rsocket_source", "RSocketDataSource"),
    ("wirestream.runtime.spark.rsio_source", "RsioDataSource"),
)
"""(module, class) of every data source ``register`` adds to a session."""


CONNECT_SCHEME = "sc://"
"""A master that starts so is a Spark Connect URL: ``session`` makes a Connect client."""


def register(spark: "SparkSession | ConnectSession") -> None:
    """Register every wirestream data source with ``spark`` (idempotent), a classic session
    or a Spark Connect one (which sends each class, pickled by reference, to the server)."""
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

    ``master`` ``sc://...`` makes a Spark Connect session (``connect_session``); anything
    else a classic one, whose Python workers run this interpreter (``PYSPARK_PYTHON``), so the executors import the
    same wirestream and generated code as the driver; on a cluster set ``PYSPARK_PYTHON``
    to the executors' environment instead (an existing value is kept).  The web UI is off
    and shuffles use as many partitions as there are cores: small local jobs do not pay
    for Spark's default 200.
    """
    if master.startswith(CONNECT_SCHEME):
        return connect_session(master, conf)
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


def connect_session(url: str, conf: dict[str, Any] | None = None) -> "SparkSession":
    """A Spark Connect session on ``url`` (``sc://host:port``, PySpark's connection string)
    with the wirestream data sources registered.

    A Connect client sets only session settings (``spark.sql.*`` and the like): what the
    classic ``session`` sets for the application (web UI, shuffle partitions, log level)
    belongs to whoever started the server (so does the application's name).  Each call
    opens a new server-side session (``create``: ``getOrCreate`` would hand back an earlier
    session, whatever its URL).

    In a client process -- no classic SparkContext here -- this is what
    ``SparkSession.builder.remote(url)`` makes, Connect mode included
    (``SPARK_CONNECT_MODE_ENABLED``: ``pyspark.sql.functions`` then build Connect columns).
    A process that already holds a classic SparkContext (a test run, a notebook with both)
    keeps it working: PySpark's builder would refuse there, and Connect mode would turn
    that context's ``functions`` into Connect ones; such a process gets the Connect session
    alone, whose DataFrames then take SQL expressions or ``pyspark.sql.connect.functions``.
    Typed as PySpark types it, ``pyspark.sql.SparkSession``: the Connect class has that
    API without inheriting from it.
    """
    if not url.startswith(CONNECT_SCHEME):
        raise ValueError(f"a Spark Connect URL starts with {CONNECT_SCHEME!r}: {url!r}")
    from pyspark import SparkContext
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    if SparkContext._active_spark_context is None:
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # as PySpark's builder.remote sets it
    spark = ConnectSession.builder.remote(url).create()
    settings: dict[str, Any] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    }
    settings.update(conf or {})
    for key, value in settings.items():
        spark.conf.set(key, value)  # a static or unknown setting fails here, by name
    register(spark)
    return cast("SparkSession", spark)
