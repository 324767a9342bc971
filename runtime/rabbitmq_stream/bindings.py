"""The RabbitMQ stream engine's typed dispatch: the generated binders of its machines.

Each generated machine class has a ``bind_<role>(h)`` that maps the frames its role hands
on to ``h``'s methods, ``h`` typed as the scope's handler protocol
(``ConnectionClientHandlers``, ``PublisherClientHandlers``, ``SubscriptionClientHandlers``).
The engine binds through its class attributes ``CONNECTION_MACHINE``... (an engine may run
on tables regenerated from an edited IDL, which bring their own binders), hence
``engine: object`` in ``bind_client``; ``_implements`` below hands a ``ClientConnection``
to every binder of the committed version, so that ``mypy --strict`` refuses the engine
with a handler missing or taking another frame (its per-scope handlers are ``Delegated``
to the publisher and subscription parts: mypy reads them through the descriptor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wirestream.runtime.machine import Handlers

if TYPE_CHECKING:
    import wirestream.generated.rabbitmq_stream.v1.machines as v1
    from wirestream.runtime.rabbitmq_stream.engine import ClientConnection

__all__ = ["bind_client"]


def bind_client(machine: Any, engine: object) -> Handlers:
    """The client's handlers of ``machine`` (a generated machine class), bound on ``engine``."""
    bound: Handlers = machine.bind_client(engine)
    return bound


if TYPE_CHECKING:

    def _implements(engine: ClientConnection) -> None:
        """Never called: every client binder of the committed version, given the engine
        (mypy checks it has each handler the binder names, taking a compatible frame)."""
        v1.ConnectionMachine.bind_client(engine)
        v1.PublisherMachine.bind_client(engine)
        v1.SubscriptionMachine.bind_client(engine)
