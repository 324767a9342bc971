"""The RSocket engine's typed dispatch: the generated binders of the version it runs.

Each generated machine class has a ``bind_<role>(h)`` that maps the frames its role
hands on to ``h``'s methods, ``h`` typed as the scope's handler protocol
(``ConnectionClientHandlers``, ``StreamResponderHandlers`` ...).  The engine runs either
protocol version, so at run time it binds through the classes of its ``Version`` (a
version built from an edited IDL brings its own), from ``RSocketEngineCore.__init__`` (hence
``engine: object`` there); ``engine._implements`` hands an ``RSocketConnection`` to every
binder of both committed versions, so that ``mypy --strict`` refuses the engine with a
handler missing or taking another frame.
"""

from __future__ import annotations

from typing import Any

from wirestream.runtime.machine import Handlers

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
