"""The generated dispatch is what runs in the rsio engine: a frame reaches its handler
only through a row of its machine.

Each case removes one receive row from a copy of idl/rsio/v0.yaml, generates it, and runs
the engine on the generated tables (``RsioConnection``'s machine class attributes); the
frame that row let in is then refused (``UnexpectedFrame``, the connection ends) or
ignored (a ``*`` ignore row takes over), and the handler the row led to does not run.
With the committed IDL the same frame reaches that handler.

The copy's frame classes and state enums are new objects, while the engine builds and
compares v0's (``rsio.Goodbye(...)``, ``ConnectionState.OPEN``); so the edited tables are
keyed onto v0's classes and states by name and value (``_on_v0``): the rows, their
guards and the HANDLERS are the generated ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

import wirestream.generated.rsio.v0 as rsio
from wirestream.generated.rsio.v0.machines import (
    ConnectionMachine,
    ConnectionState,
    SplitElementMachine,
    SubscriptionMachine,
    SubscriptionState,
)
from wirestream.runtime.errors import UnexpectedFrame
from wirestream.runtime.rsio import (
    RsioConnectionClosed,
    DemandReceived,
    ElementReceived,
    GoodbyeReceived,
    HelloReceived,
    RsioConnection,
    SubscribeReceived,
)
from tests.support.engine_pair import shuttle
from tests.support.protocols import IDL, generate_into, tables_over

# One receive row per scope, as written in idl/rsio/v0.yaml (matched on these keys).
REMOVED: dict[str, list[dict[str, Any]]] = {
    "connection": [
        # the client's hello_sent --ServerHello--> open: the `*` error row takes over
        {"role": "client", "from": "hello_sent", "receive": "ServerHello", "to": "open"},
        # goodbye_sent --Goodbye--> closed: the `*` ignore row takes over
        {"role": ["client", "server"], "from": "goodbye_sent", "receive": "Goodbye"},
    ],
    # subscribing --Request--> subscribing (publisher): no row is left
    "subscription": [{"role": "publisher", "from": "subscribing", "receive": "Request"}],
    # idle --OnNextLastPart--> idle (the lone last part): no row is left
    "split_element": [{"role": "subscriber", "from": "idle", "receive": "OnNextLastPart"}],
}

HANDLER_NAMES = sorted(
    {name for machine in (ConnectionMachine, SubscriptionMachine, SplitElementMachine)
     for handlers in machine.HANDLERS.values() for name in handlers.values()}
)  # fmt: skip

_packages = itertools.count()


def _without_rows(spec: dict[str, Any]) -> dict[str, Any]:
    for machine, rows in REMOVED.items():
        transitions = spec["machines"][machine]["transitions"]
        for row in rows:
            matching = [t for t in transitions if all(t.get(k) == v for k, v in row.items())]
            assert len(matching) == 1, (machine, row, matching)
            transitions.remove(matching[0])
    return spec


class Recording(RsioConnection):
    """Records every handler the dispatch calls (the instance attributes shadow the
    methods when ``Dispatch`` binds them at construction)."""

    def __init__(self, role: Any, **kwargs: Any) -> None:
        self.handled: list[str] = []
        for name in HANDLER_NAMES:
            setattr(self, name, self._recorder(name, getattr(self, name)))
        super().__init__(role, **kwargs)

    def _recorder(self, name: str, handler: Callable[..., None]) -> Callable[..., None]:
        def record(*context: Any) -> None:
            self.handled.append(name)
            handler(*context)

        return record


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> type[Recording]:
    spec = _without_rows(yaml.safe_load((IDL / "rsio" / "v0.yaml").read_text(encoding="utf-8")))
    tmp = tmp_path_factory.mktemp("rsio_dispatch")
    _, machines = generate_into(tmp, spec, f"wsrsio{next(_packages)}", "machines")

    class Edited(Recording):
        CONNECTION_MACHINE = tables_over(machines.ConnectionMachine, ConnectionMachine, rsio)
        SUBSCRIPTION_MACHINE = tables_over(machines.SubscriptionMachine, SubscriptionMachine, rsio)
        SPLIT_ELEMENT_MACHINE = tables_over(machines.SplitElementMachine, SplitElementMachine, rsio)

    return Edited


@pytest.fixture(params=["committed", "edited"])
def engine(request: pytest.FixtureRequest, edited: type[Recording]) -> Iterator[type[Recording]]:
    yield Recording if request.param == "committed" else edited


def _connected(client: RsioConnection, server: RsioConnection) -> None:
    server.initiate_connection()  # the server first: the edited client's start row is kept
    shuttle(client, server)
    assert client.state is server.state is ConnectionState.OPEN
    for engine in (client, server):
        if isinstance(engine, Recording):
            engine.handled.clear()  # the hellos


def test_the_edited_tables_are_the_generated_ones(edited: type[Recording]) -> None:
    """The copy differs from v0 by the removed rows only (so the cases below test them)."""
    committed = SubscriptionMachine.RECEIVE["publisher"]
    rows = edited.SUBSCRIPTION_MACHINE.RECEIVE["publisher"]
    missing = set(committed) - set(rows)
    assert missing == {(SubscriptionState.SUBSCRIBING, rsio.Request)}
    assert set(rows) <= set(committed)


def test_connection_scope_hello(engine: type[Recording]) -> None:
    """The client's ServerHello after its own hello: handled, or refused once its row is
    gone (the `*` error row of hello_sent)."""
    client, server = engine("client"), RsioConnection("server")
    client.initiate_connection()
    server.initiate_connection()
    data = server.data_to_send()
    if engine is Recording:
        assert client.receive_data(data) == [HelloReceived(0, ())]
        assert client.handled == ["on_connection_server_hello"]
        return
    with pytest.raises(UnexpectedFrame, match="ServerHello"):
        client.receive_data(data)
    assert client.handled == []
    assert client.closed


def test_connection_scope_goodbye_ignored(engine: type[Recording]) -> None:
    """The peer's Goodbye answering ours: handled (closed), or dropped by the `*` ignore
    row of goodbye_sent once its own row is gone."""
    client, server = engine("client"), RsioConnection("server")
    client.initiate_connection()
    client.close("bye")
    server.receive_data(client.data_to_send())  # answers hello, then goodbye
    events = client.receive_data(server.data_to_send())
    if engine is Recording:
        assert events == [GoodbyeReceived("bye"), RsioConnectionClosed("bye")]
        assert client.handled == ["on_connection_goodbye"]
        assert client.state is ConnectionState.CLOSED
        return
    assert events == []
    assert client.handled == []
    assert client.ignored_messages == 2  # the ServerHello (as before) and the Goodbye
    assert client.state is ConnectionState.GOODBYE_SENT


def test_subscription_scope_request(engine: type[Recording]) -> None:
    """A request before our Subscribed: demand, or refused once its row is gone."""
    client, server = RsioConnection("client"), engine("server")
    _connected(client, server)
    sid = client.subscribe("p")
    client.request(sid, 5)
    data = client.data_to_send()
    if engine is Recording:
        assert server.receive_data(data) == [SubscribeReceived(sid, "p", 0),
                                             DemandReceived(sid, 5)]  # fmt: skip
        assert server.handled == ["on_subscription_subscribe", "on_subscription_request"]
        return
    with pytest.raises(UnexpectedFrame, match="Request") as caught:
        server.receive_data(data)
    assert caught.value.events[0] == SubscribeReceived(sid, "p", 0)
    assert server.handled == ["on_subscription_subscribe"]
    assert server.available_demand(sid) == 0


def test_element_scope_lone_last_part(engine: type[Recording]) -> None:
    """A lone onNextLastPart: a one-part element, or refused by the split element machine
    once its row is gone (the subscription let it in; the element handler never runs)."""
    client, server = engine("client"), RsioConnection("server")
    _connected(client, server)
    sid = client.subscribe("p", initial_demand=4)
    shuttle(client, server)
    server.accept(sid)
    shuttle(client, server)
    client.handled.clear()  # subscribed
    data = rsio.encode(rsio.OnNextLastPart(sid, 7, b"abc"))
    if engine is Recording:
        assert client.receive_data(data) == [ElementReceived(sid, b"abc")]
        assert client.handled == ["on_subscription_on_next_last_part",
                                  "on_element_on_next_last_part"]  # fmt: skip
        return
    with pytest.raises(UnexpectedFrame, match="OnNextLastPart"):
        client.receive_data(data)
    assert client.handled == ["on_subscription_on_next_last_part"]


def test_every_handler_the_tables_name_exists() -> None:
    """``Dispatch`` binds each HANDLERS name at construction: a row without a handler
    fails there, not at run time."""
    RsioConnection("client")
    RsioConnection("server")

    class Missing(RsioConnection):
        on_subscription_request = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="on_subscription_request"):
        Missing("client")
