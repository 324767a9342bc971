"""The distribution as a user gets it: ``pip install .`` (not editable) into a fresh
virtual environment exposes one top-level import name, ``wirestream``, and code generated
there for an IDL that lives outside the repository imports only ``wirestream.runtime``
and round-trips a frame.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

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


def test_a_users_idl_generated_outside_the_repo_works_against_the_installed_package(
    wheel: Path, tmp_path: Path
) -> None:
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
    codec_source = (project / "toypkg" / "toy" / "v1" / "__init__.py").read_text(encoding="utf-8")
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
    done = subprocess.run([str(python), "-c", script], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "01" "00000007" "026869"  # frame type, nonce, note
