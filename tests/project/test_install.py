"""The distribution as a user gets it: ``pip install .`` (not editable) into a fresh
virtual environment exposes one top-level import name, ``wirestream``, and its
``wirestream generate`` writes every target for an IDL that lives outside the repository:
the Python package imports only ``wirestream.runtime`` and round-trips a frame; the
TypeScript package carries the runtime's sources (shipped in the wheel), refers to nothing
outside its folder, compiles with this repository's tsc (no network: ``node_modules`` is
laid out as ``npm install`` would) and encodes the frame to the same bytes; tshark loads
the Wireshark dissector and shows the frame from a capture.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.pcap_support import Flow, link, write_pcap
from tests.support.typescript_support import TSC
from tests.support.typescript_support import run as run_checked
from tests.support.wireshark_support import run_tshark

ROOT = Path(__file__).resolve().parent.parent.parent

TOY_IDL = """\
wirestream: 1
protocol: toy
version: v1
title: Toy protocol
framing: {length_prefix: u32, max_frame_size: 1024}
header:
  fields:
    - {name: frame_type, type: u8}
  discriminator: frame_type
unknown: {policy: error}
frames:
  Ping:
    code: 1
    doc: Asks for a Pong.
    fields:
      - {name: nonce, type: u32}
      - {name: note, type: string, length: u8}
  Pong:
    code: 2
    doc: Answers a Ping.
    fields:
      - {name: nonce, type: u32}
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True, cwd=out)  # fmt: skip
    (built,) = out.glob("wirestream-*.whl")
    return built


def test_the_wheel_installs_exactly_one_top_level_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/", 1)[0] for name in names if ".dist-info/" not in name}
    assert top == {"wirestream"}
    # the three parts, as plain folders, and the generator's templates
    for part in ("codegen", "generated", "runtime", "apps"):
        assert f"wirestream/{part}/__init__.py" in names
    # every target's templates (package data by glob: a new target's ship unlisted)
    for target in ("python", "typescript", "wireshark", "docs"):
        assert any(n.startswith(f"wirestream/codegen/targets/{target}/templates/") and n.endswith(".j2")
                   for n in names), target  # fmt: skip
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)
    # the TypeScript runtime's sources, which a standalone TypeScript package carries, and
    # not its build output
    runtime = "wirestream/runtime/typescript/"
    for name in ("package.json", "tsconfig.json", "src/index.ts", "src/wire.ts"):
        assert runtime + name in names, name
    assert not any(n.startswith(runtime) and "/dist/" in n for n in names)
    # the demo pages' committed scripts, which the demo's charts inline
    for name in ("static.js", "live.js"):
        assert f"wirestream/apps/demo_web/{name}" in names, name


@pytest.fixture(scope="module")
def project(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh venv with the wheel installed, and a project outside the repository whose
    ``idl/toy/v1.yaml`` the installed ``wirestream generate`` (its defaults: every target)
    wrote into ``toypkg/``: (the venv's python, the project folder)."""
    tmp_path = tmp_path_factory.mktemp("installed")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # The dependencies come from this interpreter's site-packages (no network needed);
    # wirestream itself only from the wheel (a path line in a .pth is not searched for
    # further .pth files, so this environment's editable install stays out).
    purelib = Path(
        subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       check=True, capture_output=True, text=True).stdout.strip()
    )  # fmt: skip
    (purelib / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)],
                   check=True, capture_output=True)  # fmt: skip

    project = tmp_path / "project"
    (project / "idl" / "toy").mkdir(parents=True)
    (project / "idl" / "toy" / "v1.yaml").write_text(TOY_IDL, encoding="utf-8")
    generate = [str(python), "-m", "wirestream", "generate", "--idl", "idl", "--out", "toypkg"]
    done = subprocess.run(generate, cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    check = [str(python), "-m", "wirestream", "check", "--idl", "idl", "--out", "toypkg"]
    done = subprocess.run(check, cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return python, project


def test_a_users_idl_generated_outside_the_repo_works_against_the_installed_package(
    project: tuple[Path, Path],
) -> None:
    python, project_dir = project
    codec_source = (project_dir / "toypkg" / "toy" / "v1" / "__init__.py").read_text(
        encoding="utf-8"
    )
    assert "from wirestream.runtime" in codec_source
    assert "import runtime" not in codec_source and "from runtime" not in codec_source

    script = textwrap.dedent("""
        import sys
        import wirestream
        from toypkg.toy.v1 import Ping, decode, encode
        frame = Ping(nonce=7, note="hi")
        data = encode(frame)
        assert decode(data) == frame, decode(data)
        assert wirestream.__file__.startswith(sys.prefix), wirestream.__file__
        for name in ("runtime", "codegen", "generated"):
            try:
                __import__(name)
            except ModuleNotFoundError:
                pass
            else:
                raise SystemExit(f"{name} is importable at the top level")
        print(data.hex())
        """)
    done = subprocess.run([str(python), "-c", script], cwd=project_dir, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == PING_HEX


PING_HEX = "01" "00000007" "026869"  # frame type, nonce, note

ROUND_TRIP = """
import { Ping, decode, encode } from "./dist/toy/v1/index.js";
const bytes = encode(new Ping({ nonce: 7, note: "hi" }));
const back = decode(bytes);
console.log(JSON.stringify({ hex: Buffer.from(bytes).toString("hex"),
                             same: back instanceof Ping && back.nonce === 7 && back.note === "hi" }));
"""


def test_the_typescript_package_generated_outside_the_repo_compiles_on_its_own(
    project: tuple[Path, Path], node: str
) -> None:
    package = project[1] / "toypkg" / "typescript"
    manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    assert manifest["dependencies"] == {"@wirestream/runtime": "file:runtime"}
    assert (package / "runtime" / "src" / "index.ts").is_file()
    # nothing in the package's build configuration leaves its folder or names this checkout
    for config in (package / "tsconfig.json", package / "runtime" / "tsconfig.json"):
        text = config.read_text(encoding="utf-8")
        assert "../" not in text and str(ROOT) not in text, config
    # node_modules as `npm install` lays it out: the file: dependency linked to runtime/,
    # and the runtime's own dependency (from this checkout's node_modules: no network)
    modules = package / "node_modules"
    (modules / "@wirestream").mkdir(parents=True)
    (modules / "@wirestream" / "runtime").symlink_to("../../runtime", target_is_directory=True)
    (modules / "@msgpack").symlink_to(ROOT / "node_modules" / "@msgpack", target_is_directory=True)
    run_checked([node, str(TSC), "-b"], "tsc -b (the standalone package)", cwd=package)
    assert (package / "runtime" / "dist" / "index.js").is_file()  # built from its own copy
    (package / "round_trip.mjs").write_text(ROUND_TRIP, encoding="utf-8")
    result = json.loads(run_checked([node, "round_trip.mjs"], "the round trip", cwd=package))
    assert result == {"hex": PING_HEX, "same": True}


def test_tshark_loads_the_dissector_generated_outside_the_repo(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    lua = project[1] / "toypkg" / "wireshark" / "toy_v1.lua"
    flow = Flow(server_port=7878)
    ping = bytes.fromhex(PING_HEX)
    packets = [*flow.handshake(), *flow.send("client", len(ping).to_bytes(4, "big") + ping)]
    pcap = tmp_path / "toy.pcap"
    write_pcap(pcap, [(n * 1000, link(1, p)) for n, p in enumerate(packets)], 1)
    pdus = run_tshark(pcap, "ws_toy_v1", 7878, scripts=[lua], prefs={"ws_toy_v1.tcp_port": "7878"})
    assert len(pdus) == 1 and pdus[0].sender == "client" and not pdus[0].errors()
    shown = {}

    def walk(nodes: list[Any]) -> None:
        for item in nodes:
            shown[item.name] = item.value
            walk(item.children)

    walk(pdus[0].tree)
    assert shown.get("ws_toy_v1.ping.nonce") == "7", shown
    assert shown.get("ws_toy_v1.ping.note") == "hi", shown
