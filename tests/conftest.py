"""Shared test set-up: hypothesis profiles (CI runs many more examples), the SparkSession,
the session fixtures of the real servers and the RabbitMQ broker (started when needed)."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support import shared_services
from tests.support.crosslang_corpus import crosslang_corpus  # noqa: F401  (the fixture)
from tests.support.rabbitmq_broker import rabbitmq_broker  # noqa: F401  (the fixture)
from tests.support.servers import mariadb_server, mosquitto_server, postgresql_server  # noqa: F401
from tests.support.spark_connect import connect_server, spark_connect  # noqa: F401  (fixtures)
from tests.support.typescript_support import node  # noqa: F401  (the fixture, for every module)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.spark_cluster import ClusterDriver, SparkCluster

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything collection made (every test module, the generated packages, hypothesis,
    pyarrow, ...: about 200,000 objects) goes to the permanent generation: the garbage
    collector no longer walks it. A full ``gc.collect()`` -- ``run()`` does two per asyncio
    test for its file-descriptor check, Python many more on its own -- then costs what the
    test allocated, not ~0.5 s. Measured (36 tests of tests/bpmux/test_bpmux_aio.py in a
    full collection): ~1.3 s a test -> ~0.13 s."""
    gc.collect()  # what is garbage now (sockets included) is freed, not frozen
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the broker (``rabbitmq_broker``, directly or through another
    fixture) is marked ``broker``, before ``-m`` selects: ``-m "not broker"`` works."""
    for item in items:
        if "rabbitmq_broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.broker)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with every Spark file in one worker (tests/support/scheduling.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.support.scheduling import OneSparkWorker

    return OneSparkWorker(config, log)


# Under pytest-xdist (``make test`` runs ``-n 3 --dist loadfile``) the servers and the
# broker are shared by the worker processes: a worker starts one when it needs it and it
# is not running (under a lock), none stops one, and the controller stops, at the end,
# those that were not running when the run began (tests/support/shared_services.py).
def pytest_sessionstart(session: pytest.Session) -> None:
    if shared_services.is_controller(session.config):
        session.config.stash[_RUNNING_BEFORE] = shared_services.running()


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_RUNNING_BEFORE, None)
    if before is not None:
        shared_services.stop_all_but(before)


_RUNNING_BEFORE = pytest.StashKey[frozenset[str]]()


# One SparkSession for the whole test run (each start costs seconds): local[2] -- two
# cores -- with up to 4 attempts per task ("local[2,4]"), so a failed task is retried as
# on a cluster and the sink's retry idempotence is Spark's own retry, not a simulation.
SPARK_MASTER = "local[2,4]"


@pytest.fixture(scope="session")
def spark() -> Iterator["SparkSession"]:
    from wirestream.runtime.spark import session

    spark_session = session(SPARK_MASTER, app_name="wirestream-tests")
    try:
        yield spark_session
    finally:
        spark_session.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator["SparkCluster"]:
    """A standalone Spark cluster (a master and two workers, each a JVM) for the tests
    that need executors in other processes (tests/support/spark_cluster.py); started once."""
    from tests.support.spark_cluster import start_cluster

    with start_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster_driver(spark_cluster: "SparkCluster") -> Iterator["ClusterDriver"]:
    """The cluster tests' driver process (one SparkContext per process: not this one),
    one application for them all (tests/support/spark_cluster_driver.py)."""
    from tests.support.spark_cluster import cluster_driver

    with cluster_driver(spark_cluster) as driver:
        yield driver
