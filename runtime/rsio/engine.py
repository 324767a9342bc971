"""The sans-I/O engine of the Reactive Streams network protocol, version 0.

One ``RsioConnection`` per transport connection, for the client (the side that opened
it) or the server; after the hellos both are the same: either can subscribe to the
other ("The protocol is fully bidirectional; either party can act in the --> direction").
It keeps the engine contract of ``wirestream.runtime.engine``: bytes in,
``receive_data(data) -> list[Event]`` (``b""`` = EOF); bytes out, ``data_to_send()``;
no timers (the protocol has none).  Commands queue messages and raise
``LocalProtocolError``s.

Every message sent or received goes through the generated machines
(``wirestream.generated.rsio.v0.machines``), one instance per IDL ``scope:``:

- ``connection`` (one): every message moves it (the phase: hellos, open, closing);
  hellos and goodbye go to its handlers ``on_connection_<frame>``; the data messages it
  only ``observes:`` (IDL) and passes on to their subscription;
- ``subscription`` (one per Id and direction, ``MachineRegistry``): a ``subscriber``
  table for the subscriptions we opened, a ``publisher`` table for those the peer opened
  (the Id spaces are per direction: subscribe, request and cancel go to the publisher,
  the rest to the subscriber); handlers ``on_subscription_<frame>``;
- ``element`` (one per unfinished split element of a subscription): the subscription's
  part handlers pick the instance, the ``split_element`` machine's handlers
  ``on_element_<frame>`` join the parts.

A scope's handler runs only when its machine let the frame in (``Dispatch``): a row
that says ignore drops the frame (``ignored_messages``), an error row or no row is the
peer's violation.  Sends pass through the same machines (``send_all``).  Demand is
``wirestream.runtime.flow.Window(cap=LONG_MAX, unbounded_at_cap=True)`` in both
directions (RS §1.1, §3.9, §3.17).

The engine is one class in parts by scope: ``engine_core.RsioEngineCore`` (state, bytes in
and out, the connection's receive loop, ending every stream), ``publications``
(``PublisherSide``: the subscriptions the peer opened), ``subscriptions``
(``SubscriberSide``: ours, with split-element reassembly), and here ``RsioConnection``,
which adds the connection's handlers and binds the generated dispatch.

A hello with a version we do not speak is not a violation but the end of the
connection: the machine moves to ``rejecting``, we send goodbye, every stream ends, and
``receive_data`` returns ``RsioConnectionClosed(cause=UnsupportedVersion)`` ("it MUST send
a goodbye message ... and close the connection").

How peer violations are answered (the seed prescribes nothing for them):

- connection level (malformed bytes, a message the connection or subscription machine
  refuses, e.g. onNextPacked on a variable-size stream or a subscribe for an open Id):
  goodbye with the reason, every stream ends with an event, the connection is closed
  at once (no wait for the peer's goodbye, as for an unsupported version), and
  ``receive_data`` raises the error.  The events produced before the error (frames
  decoded before it, the stream endings) are on the exception's ``events``;
- subscription level, the connection goes on: a publisher exceeding demand, a split
  element over the limits or of the wrong size -> we send cancel and report
  ``SubscriptionFailed`` (RS §2.13: a subscriber signals failure by cancelling);
  request(0) -> we send onError "RS 3.9 ..." and report ``SubscriptionCancelled``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import ConnectionState
from wirestream.runtime.machine import Dispatch
from wirestream.runtime.rsio.events import (
    RsioConnectionClosed,
    Event,
    GoodbyeReceived,
    HelloReceived,
)
from wirestream.runtime.rsio.framing import Encoding
from wirestream.runtime.rsio.engine_core import (
    PROTOCOL_VERSION,
    RsioConfig,
    _TO_PUBLISHER,
    _TO_SUBSCRIBER,
)
from wirestream.runtime.rsio.publications import PublisherSide
from wirestream.runtime.rsio.subscriptions import SubscriberSide

__all__ = ["RsioConfig", "RsioConnection", "PROTOCOL_VERSION"]


class RsioConnection(SubscriberSide, PublisherSide):
    """One end of a Reactive Streams network protocol connection (sans-I/O)."""

    def __init__(
        self,
        role: Literal["client", "server"],
        *,
        encoding: Encoding = "binary",
        extensions: Iterable[int] = (),
        config: RsioConfig | None = None,
    ) -> None:
        super().__init__(role, encoding=encoding, extensions=extensions, config=config)
        # Received frames -> handler methods, by the generated typed binders (bound once).
        conn, subscription, element = (self.CONNECTION_MACHINE, self.SUBSCRIPTION_MACHINE,
                                       self.SPLIT_ELEMENT_MACHINE)  # fmt: skip
        bound = conn.bind_client(self) if role == "client" else conn.bind_server(self)
        self._on_connection = Dispatch(conn, role, bound)
        self._on_publication = Dispatch(subscription, "publisher",
                                        subscription.bind_publisher(self))  # fmt: skip
        self._on_subscription = Dispatch(subscription, "subscriber",
                                         subscription.bind_subscriber(self))  # fmt: skip
        self._on_element = Dispatch(element, "subscriber", element.bind_subscriber(self))
        # What the connection machine only observes goes on to the subscription of its Id.
        self._to_scope: dict[type, Callable[[Any, list[Event]], None]] = {
            **dict.fromkeys(_TO_PUBLISHER, self._receive_for_publication),
            **dict.fromkeys(_TO_SUBSCRIBER, self._receive_for_subscription),
        }

    # --- connection handlers ----------------------------------------------------------

    def _on_hello(self, frame: rsio.ClientHello | rsio.ServerHello, events: list[Event]) -> None:
        if self._connection.state is ConnectionState.REJECTING:
            self._reject_version(frame.version, events)
            return
        self.peer_extensions = tuple(frame.extensions)
        events.append(HelloReceived(frame.version, self.peer_extensions))
        if self._connection.state is ConnectionState.HELLO_RECEIVED:
            self._send(self._hello())  # answer a hello that came first

    on_connection_client_hello = _on_hello
    on_connection_server_hello = _on_hello

    def on_connection_goodbye(self, frame: rsio.Goodbye, events: list[Event]) -> None:
        events.append(GoodbyeReceived(frame.reason))
        self._end_all_streams(f"goodbye received: {frame.reason}", None, events)
        if self._connection.state is ConnectionState.GOODBYE_RECEIVED:
            self._send(rsio.Goodbye(frame.reason))  # the acknowledgement
        events.append(RsioConnectionClosed(frame.reason))
