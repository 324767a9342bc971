"""The broker every RabbitMQ benchmark needs (``make broker``), and the check for it."""

from __future__ import annotations

import socket

__all__ = ["BROKER", "broker_up"]

BROKER = ("127.0.0.1", 5552)


def broker_up() -> bool:
    """Whether something answers on the broker's stream port (within a second)."""
    try:
        socket.create_connection(BROKER, timeout=1).close()
        return True
    except OSError:
        return False
