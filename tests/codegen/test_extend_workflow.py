"""The extend-by-editing workflow, end to end: a user adds a frame type to a protocol's
YAML, generates, imports the new package and round-trips the new frame -- in Python and,
from the same edit, in TypeScript; then adds the frame with behaviour (machine rows and
one handler method) and exchanges it over TCP.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from wirestream.runtime.errors import UnexpectedFrame, UnknownFrameType
from wirestream.runtime.machine import IGNORE
from tests.support.doc_examples import block_after
from tests.support.protocols import IDL, ROOT, generate_into
from tests.support.typescript_support import TSC, run

# The workflow as idl/README.md, "Adding a frame with behaviour", shows it: the YAML edit
# and the engine method are read out of that section, so the documented example is
# exactly what these tests run.
README = ROOT / "idl" / "README.md"
SECTION = "### Adding a frame with behaviour"
EDIT = yaml.safe_load(block_after(README, SECTION, "yaml"))
NEW_FRAME = EDIT["frames"]["Sequenced"]
HANDLER_METHOD = textwrap.indent(block_after(README, SECTION, "python"), "    ")


def test_a_frame_added_to_the_yaml_is_generated_and_round_trips(tmp_path: Path) -> None:
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    spec["frames"]["Sequenced"] = NEW_FRAME
    codec, strategies = generate_into(tmp_path, spec, "wsext", "strategies")

    frame = codec.Sequenced(stream_id=3, urgent=True, sequence=7, metadata=b"m", data=b"hello")
    data = codec.encode(frame)
    assert data.hex() == "00000003" "8180" "00000007" "000001" "6d" "68656c6c6f"
    assert codec.decode(data) == frame
    assert codec.FrameType.SEQUENCED == 0x20
    assert hasattr(strategies, "sequenced")  # the new frame gets a strategy for free

    # The committed codec, generated before the edit, does not know the frame.
    from wirestream.generated.rsocket import v1_0

    with pytest.raises(UnknownFrameType):
        v1_0.decode(data)


TS_ROUND_TRIP = """
import { Sequenced, FrameType, decode, encode } from "./out/typescript/dist/rsocket/v1_0/index.js";
import { ConnectionMachine } from "./out/typescript/dist/rsocket/v1_0/machines.js";
const text = new TextEncoder();
const frame = new Sequenced({ streamId: 3, urgent: true, sequence: 7,
                              metadata: text.encode("m"), data: text.encode("hello") });
const bytes = encode(frame);
const back = decode(bytes);
console.log(JSON.stringify({
  hex: Buffer.from(bytes).toString("hex"),
  same: back instanceof Sequenced && back.sequence === 7 && back.urgent && back.streamId === 3,
  code: FrameType.SEQUENCED,
  machine: ConnectionMachine.NAME,
}));
"""


def test_the_same_yaml_edit_reaches_typescript(tmp_path: Path, node: str) -> None:
    """One YAML edit, one `generate --target all`: the TypeScript package gets the frame
    too, type-checks strictly, and encodes it to the bytes Python does."""
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    spec["frames"]["Sequenced"] = NEW_FRAME
    (tmp_path / "idl" / "rsocket").mkdir(parents=True)
    (tmp_path / "idl" / "rsocket" / "v1_0.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run([sys.executable, "-m", "wirestream.codegen", "generate", "--target", "all", "--idl",
         str(tmp_path / "idl"), "--out", str(tmp_path / "out")], "wirestream generate")  # fmt: skip
    package = tmp_path / "out" / "typescript"
    assert "export class Sequenced" in (package / "src/rsocket/v1_0/index.ts").read_text()
    # An IDL outside idl/ gets a standalone package: it finds its runtime as a dependency,
    # node_modules/@wirestream/runtime (this checkout's, built by the node fixture).
    (tmp_path / "node_modules").symlink_to(ROOT / "node_modules")
    run([node, str(TSC), "-b", str(package)], "tsc -b of the regenerated package")
    (tmp_path / "round_trip.mjs").write_text(TS_ROUND_TRIP)
    result = json.loads(run([node, "round_trip.mjs"], "the TypeScript round trip", tmp_path))
    assert result == {"hex": "00000003" "8180" "00000007" "000001" "6d" "68656c6c6f",
                      "same": True, "code": 0x20, "machine": "connection"}  # fmt: skip


# --- a frame with behaviour, end to end ------------------------------------------------

EXCHANGE = """
import asyncio
from wirestream.generated.rsocket.v1_0 import Sequenced
from wirestream.runtime.rsocket import RSocketHandler, connect, serve


class Recorder(RSocketHandler):
    def __init__(self) -> None:
        self.frames: asyncio.Queue[object] = asyncio.Queue()

    async def on_frame(self, frame: object) -> None:
        await self.frames.put(frame)


async def main() -> None:
    at_server, at_client = Recorder(), Recorder()
    async with await serve("tcp://127.0.0.1:0", at_server) as server:
        async with await connect(server.url, at_client) as client:
            await client.send_frame(Sequenced(sequence=7, data=b"ping"))
            got = await asyncio.wait_for(at_server.frames.get(), 10)
            print("server got", got.sequence, got.data)
            (peer,) = server.peers
            await peer.send_frame(Sequenced(sequence=8, urgent=True, metadata=b"m", data=b"pong"))
            got = await asyncio.wait_for(at_client.frames.get(), 10)
            print("client got", got.sequence, got.urgent, got.metadata, got.data)


asyncio.run(main())
"""

COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".hypothesis",
    "out",
    ".broker",
    ".servers",  # the private servers' data and sockets (tests/support/servers.py)
    "*.egg-info",
    "build",
)


def add_sequenced(spec: dict[str, Any]) -> None:
    """The one YAML edit: the frame, and its rows in the connection machine (both sides
    may send it once SETUP is out; receiving it confirms a client's SETUP, as any frame
    from the server does)."""
    spec["frames"]["Sequenced"] = NEW_FRAME
    rows = spec["machines"]["connection"]["transitions"]
    rows[:0] = EDIT["machines"]["connection"]["transitions"]


def test_a_frame_added_with_machine_rows_and_one_handler_is_exchanged_over_tcp(
    tmp_path: Path,
) -> None:
    """The workflow of idl/README.md, "Adding a frame with behaviour", in a copy of the
    repository: one YAML edit, `make generate`'s command, one engine method; then the
    asyncio peers exchange the new frame both ways over TCP."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, symlinks=True, ignore=COPY_IGNORE)
    idl = repo / "idl" / "rsocket" / "v1_0.yaml"
    spec = yaml.safe_load(idl.read_text(encoding="utf-8"))
    add_sequenced(spec)
    idl.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    generate = [sys.executable, "-m", "wirestream.codegen", "generate", "--idl", "idl",
                "--out", "generated", "--package", "wirestream.generated"]  # fmt: skip
    subprocess.run(generate, cwd=repo, check=True, capture_output=True)

    # Before the handler exists, the generated dispatch refuses to build the engine: the
    # new rows would otherwise deliver the frame nowhere.
    probe = ("from wirestream.runtime.rsocket.engine import RSocketConnection\n"
             "RSocketConnection('server')")  # fmt: skip
    refused = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True,
                             text=True)  # fmt: skip
    assert refused.returncode != 0
    assert "on_connection_sequenced" in refused.stderr

    engine = repo / "runtime" / "rsocket" / "engine.py"
    source = engine.read_text(encoding="utf-8")
    anchor = "    @staticmethod\n    def report_frame("
    assert anchor in source
    engine.write_text(source.replace(anchor, HANDLER_METHOD.lstrip("\n") + "\n" + anchor, 1),
                      encoding="utf-8")  # fmt: skip

    done = subprocess.run([sys.executable, "-c", EXCHANGE], cwd=repo, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "server got 7 b'ping'",
        "client got 8 True b'm' b'pong'",
    ]


def test_without_its_machine_row_the_added_frame_is_ignored_not_handled(tmp_path: Path) -> None:
    """The generated dispatch is what runs: with the server's receive row gone, the
    frame falls to the established state's `*` row ("All other received frames ... MUST
    be ignored"), so the dispatch table gives the server no handler for it; the client
    may still send it."""
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    add_sequenced(spec)
    spec["machines"]["connection"]["transitions"] = [
        row
        for row in spec["machines"]["connection"]["transitions"]
        if not (row.get("role") == "server" and row.get("receive") == "Sequenced")
    ]
    codec, machines = generate_into(tmp_path, spec, "wsnorow", "machines")
    assert codec.Sequenced not in machines.ConnectionMachine.HANDLERS["server"]
    assert machines.ConnectionMachine.HANDLERS["client"][codec.Sequenced] == (
        "on_connection_sequenced"
    )
    server = machines.ConnectionMachine("server", machines.ConnectionState.ESTABLISHED)
    assert server.receive(codec.Sequenced(sequence=1, data=b"")) is IGNORE
    fresh = machines.ConnectionMachine("server")  # before SETUP: the first frame must be it
    with pytest.raises(UnexpectedFrame):
        fresh.receive(codec.Sequenced(sequence=1, data=b""))
