"""The RabbitMQ stream engine's typed dispatch: the generated binders of its machines.

Each generated machine class has a ``bind_<role>(h)`` that maps the frames its role hands
on to ``h``'s methods, ``h`` typed as the scope's handler protocol
(``ConnectionClientHandlers``, ``PublisherClientHandlers``, ``SubscriptionClientHandlers``).
The engine binds through its class attributes ``CONNECTION_MACHINE``... (an engine may run
on tables regenerated from an edited IDL, which bring their own binders), hence
``engine: object`` in ``bind_client``; ``engine._implements`` hands a ``ClientConnection``
to every binder of the committed version, so that ``mypy --strict`` refuses the engine
with a handler missing or taking another frame (its per-scope handlers are ``Delegated``
to the publisher and subscription parts: mypy reads them through the descriptor).
"""

from __future__ import annotations

from typing import Any

from wirestream.runtime.machine import Handlers

__all__ = ["bind_client"]


def bind_client(machine: Any, engine: object) -> Handlers:
    """The client's handlers of ``machine`` (a generated machine class), bound on ``engine``."""
    bound: Handlers = machine.bind_client(engine)
    return bound
