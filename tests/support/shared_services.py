"""The servers and the broker when pytest-xdist runs the suite in several processes.

``make test`` runs ``pytest -n 3 --dist loadfile``: three worker processes, each with its own
session fixtures. The real servers (``tests/support/servers.py``) and the RabbitMQ broker
(``tests/support/rabbitmq_broker.py``) listen on fixed ports, so there is one of each for
the whole run, whichever process needs it first:

* a worker starts a service when a test needs it and it does not answer, holding a lock
  (``start_lock``) so that two workers never start the same one at once (the second finds
  it answering), and never stops one: another worker may still be using it;
* the controller (the process that runs no test) notes which services answered when the
  run began (``running``) and stops the others at its end (``stop_all_but``), after every
  worker has finished.

Without xdist the session fixtures keep their own rule: a service started by the session
is stopped by it.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["in_worker", "is_controller", "running", "start", "start_lock", "stop_all_but"]

LOCK_DIR = Path(tempfile.gettempdir())


def in_worker() -> bool:
    """Whether this process is a pytest-xdist worker (xdist sets the variable in each)."""
    return "PYTEST_XDIST_WORKER" in os.environ


def is_controller(config: pytest.Config) -> bool:
    """Whether this process distributes tests to workers and runs none itself."""
    return bool(config.getoption("numprocesses", None)) and not hasattr(config, "workerinput")


@contextmanager
def start_lock(name: str) -> Iterator[None]:
    """Held while a service is checked and started: one process at a time (the lock is
    the kernel's, on a file, so a killed holder never leaves it taken)."""
    with open(LOCK_DIR / f"wirestream-tests-{name}.lock", "w") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def start(name: str, start_it: Callable[[], bool]) -> bool:
    """Start the service ``name`` with ``start_it`` (True when it started it, False when it
    found it running) under its lock; whether this session is to stop it at its end: never
    in a worker (the other may use it: the controller stops it)."""
    with start_lock(name):
        started = start_it()
    return started and not in_worker()


def running() -> frozenset[str]:
    """The services that answer now: ``broker`` and the servers' names."""
    from tests.support import rabbitmq_broker, servers

    up = {name for name, port in servers.PORTS.items() if servers.answers(port)}
    if rabbitmq_broker.answers(rabbitmq_broker.STREAM_PORT):
        up.add("broker")
    return frozenset(up)


def stop_all_but(before: frozenset[str]) -> None:
    """Stop every service that answers now and did not when the run began."""
    from tests.support import rabbitmq_broker, servers

    for name in sorted(running() - before):
        if name == "broker":
            rabbitmq_broker.stop()
        else:
            servers.stop(name)
