"""The broker's CLI tools (rabbitmq-streams, rabbitmqctl) as Python calls, for tests.

Each call runs the tool against the project's node (``make broker``: the environment of
``.broker/env.sh``, node ``ws@localhost``) and returns parsed data, or raises
``BrokerCtlError`` carrying the tool's exit status and stderr. A call starts an Erlang VM:
about a second each.

The tools authenticate to the node with the Erlang cookie of the user that runs them.
The node runs as ``rabbitmq`` (its start script drops root privileges), so when we are
root the tool runs as that user (``su rabbitmq``), as Debian's own ``/usr/sbin/rabbitmqctl``
wrapper does; otherwise it runs as we are (the user who started the node).

Recipes found on RabbitMQ 3.10.8 (see tests/rabbitmq_stream/test_rabbitmq_stream_tools.py):

* ``rabbitmq-streams list_stream_connections --formatter json conn_name
  client_properties``: ``client_properties`` is a list of ``[key, type, value]``
  triples from the client's PeerProperties, e.g. ``["connection_name", "longstr",
  "probe"]``; ``conn_name`` is ``"127.0.0.1:55714 -> 127.0.0.1:5552"`` (client address,
  then broker address).
* Closing a stream connection: ``rabbitmqctl close_connection`` takes an Erlang pid
  (``"<ws@localhost.1795272475.2164.0>"``; a conn_name fails with
  ``invalid_pid_syntax``) but does nothing to a stream connection in 3.10.8 (see
  ``close_stream_connections``), and no rabbitmq-streams list shows a connection's pid
  beside its properties. ``rabbitmqctl eval`` with ``rabbit_stream:list(<<"/">>)``,
  ``rabbit_stream_reader:info(Pid, [conn_name, client_properties])`` and
  ``gen_statem:call(Pid, {shutdown, Reason})`` does it. (``rabbitmqctl eval
  'rabbit_stream:kill_connection("exact name").'``, what RabbitMQ's Java client tests
  use, kills the connection process instead: the socket closes the same way.)
* ``rabbitmq-streams add_super_stream NAME --partitions N`` creates the exchange NAME
  and streams ``NAME-0`` .. ``NAME-{N-1}`` bound with routing keys ``"0"`` .. ``"N-1"``
  (``--routing-keys a,b`` instead: streams ``NAME-a``, ``NAME-b`` bound with ``a``, ``b``);
  ``delete_super_stream NAME`` removes them all. ``rabbitmqctl list_bindings`` shows
  them (``super_stream_bindings``). rstream 1.1.1's ``Client.route``/``partitions``
  cannot read 3.10.8's answers (sent without the response bit, key 0x0018/0x0019:
  rstream decodes them as requests and its reader task dies), so tests check super
  streams through the CLI, or through our own client.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.rabbitmq_broker import BROKER_DIR

__all__ = [
    "BrokerCtlError",
    "add_super_stream",
    "client_property",
    "close_stream_connections",
    "delete_super_stream",
    "list_stream_connections",
    "list_stream_consumers",
    "list_stream_publishers",
    "run_tool",
    "super_stream_bindings",
]

ENV_FILE = BROKER_DIR / "env.sh"  # the running node's (tests/support/rabbitmq_broker.py)
TOOLS = Path("/usr/lib/rabbitmq/bin")
BROKER_USER = "rabbitmq"
TIMEOUT = 60.0  # seconds one tool may take

CONNECTION_COLUMNS = (
    "conn_name",
    "client_properties",
    "user",
    "vhost",
    "peer_host",
    "peer_port",
    "connected_at",
    "subscriptions",
)
PUBLISHER_COLUMNS = (
    "connection_pid",
    "publisher_id",
    "stream",
    "reference",
    "messages_published",
    "messages_confirmed",
    "messages_errored",
)
CONSUMER_COLUMNS = (
    "connection_pid",
    "subscription_id",
    "stream",
    "messages_consumed",
    "offset",
    "offset_lag",
    "credits",
    "properties",
)


class BrokerCtlError(RuntimeError):
    """A CLI tool failed (or could not run); ``stderr`` is what it printed."""

    def __init__(self, command: list[str], returncode: int, stderr: str) -> None:
        self.command = command
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"{shlex.join(command)} exited with {returncode}: {stderr.strip()}")


def _runs_as_broker_user() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        pwd.getpwnam(BROKER_USER)
    except KeyError:
        return False
    return True


def run_tool(tool: str, *args: str, timeout: float = TIMEOUT, env_file: Path | None = None) -> str:
    """Run ``tool`` (e.g. "rabbitmq-streams") with ``args`` against the node of ``env_file``
    (default: ``ENV_FILE``, the running node's); its stdout."""
    command = [tool, *args]
    env_file = env_file or ENV_FILE
    if not env_file.is_file():
        raise BrokerCtlError(command, -1, f"{env_file} is missing: start the broker (make broker)")
    script = f". {shlex.quote(str(env_file))} && exec {shlex.quote(str(TOOLS / tool))} " + (
        shlex.join(args)
    )
    if _runs_as_broker_user():
        # su keeps the environment but sets HOME to the broker user's (its Erlang cookie)
        argv = ["su", BROKER_USER, "-s", "/bin/sh", "-c", script]
        cwd = "/"
    else:
        argv = ["/bin/sh", "-c", script]
        cwd = None
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise BrokerCtlError(command, -1, f"no answer in {timeout} s") from error
    # rabbitmq-streams list commands print a stack trace and still exit 0 when the node
    # is unreachable ("{:badrpc, :nodedown}"): treat any "Error" report as a failure.
    if done.returncode != 0 or done.stderr.lstrip().startswith(("Error", "Stack trace")):
        raise BrokerCtlError(command, done.returncode, done.stderr or done.stdout)
    return done.stdout


# 3.10.8's stream reader has no clause for the listing's info call in a connection's first
# states (function_clause in rabbit_stream_reader:tcp_connected or
# peer_properties_exchanged): while any stream connection is mid-handshake -- another test's,
# on the shared broker; under load a handshake can take a while -- a listing fails. Ask
# again, backing off, for up to LISTING_PATIENCE seconds.
LISTING_PATIENCE = 30.0


def _list(
    tool: str, command: str, columns: tuple[str, ...], env_file: Path | None = None
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + LISTING_PATIENCE
    pause = 0.1
    while True:
        try:
            out = run_tool(tool, command, "--formatter", "json", "--silent", *columns,
                           env_file=env_file)  # fmt: skip
            break
        except BrokerCtlError as error:
            if "function_clause" not in error.stderr or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 2.0)
    try:
        rows = json.loads(out) if out.strip() else []
    except json.JSONDecodeError as error:
        raise BrokerCtlError([tool, command], 0, f"not JSON: {out[:500]!r}") from error
    if not isinstance(rows, list):
        raise BrokerCtlError([tool, command], 0, f"not a JSON list: {out[:500]!r}")
    return rows


def list_stream_connections(
    columns: tuple[str, ...] = CONNECTION_COLUMNS, env_file: Path | None = None
) -> list[dict[str, Any]]:
    """Stream connections: ``columns`` per connection (module docstring), on the node of
    ``env_file`` (default: the running node's)."""
    return _list("rabbitmq-streams", "list_stream_connections", columns, env_file)


def client_property(connection: dict[str, Any], key: str) -> str | None:
    """A client property of a ``list_stream_connections`` row (``[key, type, value]``)."""
    for entry in connection.get("client_properties") or []:
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == key:
            return str(entry[2])
    return None


def _erlang_binary(text: str) -> str:
    """``text`` as an Erlang binary literal of its UTF-8 bytes (nothing to escape)."""
    return "<<" + ",".join(str(b) for b in text.encode()) + ">>"


# For each stream connection of the default vhost whose client-provided connection_name
# contains MATCH: the call RabbitMQ's own close paths make (rabbit_reader:shutdown/2,
# which `rabbitmqctl close_connection` and the management UI use), then print conn_name.
_CLOSE_MATCHING = """
lists:foreach(fun(P) ->
    case catch rabbit_stream_reader:info(P, [conn_name, client_properties]) of
        [{conn_name, N}, {client_properties, Props}] ->
            Names = [V || {<<"connection_name">>, _, V} <- Props, is_binary(V)],
            case [V || V <- Names, binary:match(V, MATCH) =/= nomatch] of
                [] -> ok;
                _ ->
                    catch gen_statem:call(P, {shutdown, REASON}, 5000),
                    io:format("~s~n", [N])
            end;
        _ -> ok
    end
end, rabbit_stream:list(<<"/">>)).
"""


def close_stream_connections(match: str, reason: str = "closed by test") -> list[str]:
    """Close each stream connection whose client ``connection_name`` contains ``match``.

    RabbitMQ 3.10.8 answers by closing the socket (FIN): it sends no CloseRequest
    (tests/rabbitmq_stream/test_rabbitmq_stream_tools.py). ``rabbitmqctl close_connection`` cannot do
    this: stream connections are not in ``rabbit_networking:connections()``, so it
    logs "no running cluster node reported it as an active connection" and exits 0
    having done nothing. This sends the same ``{shutdown, Reason}`` call through
    ``rabbitmqctl eval``; the broker logs "Forcing stream connection <pid> closing".
    Returns the ``conn_name`` of each connection closed.
    """
    if not match:
        raise ValueError("an empty match would close every stream connection on the broker")
    expression = _CLOSE_MATCHING.replace("MATCH", _erlang_binary(match)).replace(
        "REASON", _erlang_binary(reason)
    )
    out = run_tool("rabbitmqctl", "eval", expression)
    return [line for line in out.splitlines() if " -> " in line]


def add_super_stream(
    name: str, partitions: int | None = None, *, routing_keys: Sequence[str] | None = None
) -> None:
    """Streams ``name-0`` .. ``name-{partitions-1}`` behind the exchange ``name``, bound
    with keys "0" .., or with ``routing_keys`` streams ``name-<key>`` bound with each key
    (``--routing-keys k1,k2``: partition order = the keys' order)."""
    if (partitions is None) == (routing_keys is None):
        raise ValueError("give partitions or routing_keys")
    if routing_keys is not None:
        if not routing_keys or any("," in key or not key for key in routing_keys):
            raise ValueError(f"routing keys {routing_keys!r}: non-empty, without commas")
        option = ["--routing-keys", ",".join(routing_keys)]
    else:
        option = ["--partitions", str(partitions)]
    run_tool("rabbitmq-streams", "add_super_stream", name, *option)


def delete_super_stream(name: str) -> None:
    run_tool("rabbitmq-streams", "delete_super_stream", name)


def super_stream_bindings(name: str) -> list[tuple[str, str, int]]:
    """``(routing_key, partition stream, x-stream-partition-order)`` per binding of the
    super stream's exchange ``name``, in partition order (empty when it does not exist).

    What the broker answers Partitions (streams in this order) and Route (the streams
    bound with the routing key) from.
    """
    rows = _list(
        "rabbitmqctl",
        "list_bindings",
        ("source_name", "routing_key", "destination_name", "arguments"),
    )
    bindings = []
    for row in rows:
        if row.get("source_name") != name:
            continue
        order = [a[2] for a in row.get("arguments") or [] if a[0] == "x-stream-partition-order"]
        bindings.append((str(row["routing_key"]), str(row["destination_name"]), int(order[0])))
    return sorted(bindings, key=lambda binding: binding[2])


def list_stream_publishers() -> list[dict[str, Any]]:
    """Publishers of the default vhost: ``PUBLISHER_COLUMNS`` per publisher."""
    return _list("rabbitmq-streams", "list_stream_publishers", PUBLISHER_COLUMNS)


def list_stream_consumers() -> list[dict[str, Any]]:
    """Consumers of the default vhost: ``CONSUMER_COLUMNS`` per consumer."""
    return _list("rabbitmq-streams", "list_stream_consumers", CONSUMER_COLUMNS)
