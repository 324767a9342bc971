"""The RSocket engine's typed dispatch: the generated binders of the version it runs.

Each generated machine class has a ``bind_<role>(h)`` that maps the frames its role
hands on to ``h``'s methods, ``h`` typed as the scope's handler protocol
(``ConnectionClientHandlers``, ``StreamResponderHandlers`` ...).  The engine runs either
protocol version, so at run time it binds through the classes of its ``Version`` (a
version built from an edited IDL brings its own), from ``RSocketEngineCore.__init__`` (hence
``engine: object`` there); ``_implements`` below hands an ``RSocketConnection`` to every
binder of both committed versions, so that ``mypy --strict`` refuses the engine with a
handler missing or taking another frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wirestream.runtime.machine import Handlers

if TYPE_CHECKING:
    import wirestream.generated.rsocket.v0_2.machines as v0_2
    import wirestream.generated.rsocket.v1_0.machines as v1_0
    from wirestream.runtime.rsocket.engine import RSocketConnection

__all__ = ["bind_connection", "bind_stream"]


def bind_connection(machine: Any, role: str, engine: object) -> Handlers:
    """Stream 0: the ``connection`` machine's handlers of ``role`` (client or server)."""
    bound: Handlers
    if role == "client":
        bound = machine.bind_client(engine)
    else:
        bound = machine.bind_server(engine)
    return bound


def bind_stream(machine: Any, role: str, engine: object) -> Handlers:
    """A stream's frames: the handlers of its interaction model's machine, as ``role``
    (requester or responder)."""
    bound: Handlers
    if role == "requester":
        bound = machine.bind_requester(engine)
    else:
        bound = machine.bind_responder(engine)
    return bound


if TYPE_CHECKING:

    def _implements(engine: RSocketConnection) -> None:
        """Never called: every binder of both committed versions, given the engine (mypy
        checks it has each handler the binder names, taking a compatible frame)."""
        v1_0.ConnectionMachine.bind_client(engine)
        v1_0.ConnectionMachine.bind_server(engine)
        v1_0.RequestResponseMachine.bind_requester(engine)
        v1_0.RequestResponseMachine.bind_responder(engine)
        v1_0.RequestFnfMachine.bind_requester(engine)
        v1_0.RequestFnfMachine.bind_responder(engine)
        v1_0.RequestStreamMachine.bind_requester(engine)
        v1_0.RequestStreamMachine.bind_responder(engine)
        v1_0.RequestChannelMachine.bind_requester(engine)
        v1_0.RequestChannelMachine.bind_responder(engine)
        v0_2.ConnectionMachine.bind_client(engine)
        v0_2.ConnectionMachine.bind_server(engine)
        v0_2.RequestResponseMachine.bind_requester(engine)
        v0_2.RequestResponseMachine.bind_responder(engine)
        v0_2.RequestFnfMachine.bind_requester(engine)
        v0_2.RequestFnfMachine.bind_responder(engine)
        v0_2.RequestStreamMachine.bind_requester(engine)
        v0_2.RequestStreamMachine.bind_responder(engine)
        v0_2.RequestChannelMachine.bind_requester(engine)
        v0_2.RequestChannelMachine.bind_responder(engine)
