"""The native ``pack`` of a frame class gives its Python ``pack``'s bytes and errors.

Every generated frame class has ``pack(field, ..., ctx=None)``, the bytes of that frame
without keeping it. Where ``wirestream.runtime._native`` is built, the generated module puts
the native one in place (``_support.use_native_packers``): the generated Rust frame built
from the arguments and encoded by the Rust encoder (codegen/targets/rust/py_pack.py), which
returns to the Python one (``_pack_python``) for whatever it does not take. Here both must
agree: on every frame the generated strategies draw (the same bytes as ``to_bytes``), and
on bad arguments of every kind -- out of range, wrong types, ``None``, forbidden bytes --
the same exception, class and message.
"""

from __future__ import annotations

import functools
import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.plan.codec import layout_fingerprint, plan_codec
from wirestream.codegen.targets.rust.py_pack import Packers, python_module
from wirestream.runtime import _support

ROOT = Path(__file__).resolve().parents[2]
IDLS = sorted((ROOT / "idl").rglob("*.yaml"))


@functools.cache
def version_of(idl: Path) -> tuple[ModuleType, Packers]:
    packers = Packers(plan_codec(load_protocol(idl, str(idl.relative_to(ROOT)))))
    return importlib.import_module(python_module(packers.m)), packers


VERSIONS = {idl.relative_to(ROOT / "idl").with_suffix("").as_posix(): idl for idl in IDLS}


def native(pack: Any) -> bool:
    return type(pack).__name__ == "builtin_function_or_method"


def outcome(pack: Any, *args: Any, **kwargs: Any) -> tuple[str, object]:
    try:
        return "bytes", pack(*args, **kwargs)
    except Exception as error:  # the class and message are what is compared
        return type(error).__name__, str(error)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_frame_without_records_or_context_packs_natively(version: str) -> None:
    """The frames the Rust target can pack have the native ``pack`` in place; the others
    (a record or float field, an encoding that reads the context) keep the Python one."""
    module, packers = version_of(VERSIONS[version])
    assert _support.native_module() is not None, "make native builds the extension"
    packed = {f.name for f in packers.frames()}
    assert packed, "every version has frames of plain fields"
    for frame in packers.m.frames:
        cls = getattr(module, frame.name)
        assert native(cls.pack) == (frame.name in packed), frame.name
        assert not native(cls._pack_python)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_native_pack_gives_the_bytes_of_to_bytes(version: str, data: st.DataObject) -> None:
    module, _ = version_of(VERSIONS[version])
    strategies = importlib.import_module(module.__name__ + ".strategies")
    frame, _ctx = data.draw(strategies.frames())
    cls = type(frame)
    if not native(cls.pack):
        return
    values = [getattr(frame, name) for name in cls.__match_args__]
    expected = frame.to_bytes()
    assert cls.pack(*values) == expected
    assert cls.pack(**dict(zip(cls.__match_args__, values))) == expected
    assert cls._pack_python(*values) == expected
    assert module.encode(frame) == expected
    assert module.frame_bytes(frame) == python_path(module, module.frame_bytes, frame)


def python_path(module: ModuleType, function: Any, *args: Any) -> tuple[str, object] | Any:
    """``function(*args)`` with the module's native frame bytes switched off."""
    native_bytes = module._native_bytes
    module._native_bytes = None
    try:
        return function(*args)
    finally:
        module._native_bytes = native_bytes


# Arguments of every kind that are wrong somewhere: out of every integer range, the wrong
# type for each field kind, None, a NUL (terminated strings), lists of the wrong things.
BAD: list[object] = [-1, 2**8, 2**16, 2**31, 2**32, 2**63, 2**64, -(2**63) - 1, 1.5, True,
                     "", "a\x00b", "\udc80", b"", b"a\x00b", bytearray(b"ab"), None, [], [None],
                     [-1], [2**64], ["x"], [b"x"], [1.0], (b"a", b"b"), {1, 2}, object()]  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_native_pack_raises_what_python_raises(version: str) -> None:
    """Each argument of each native ``pack`` swapped for each bad value: the native and the
    Python ``pack`` return the same bytes or raise the same exception and message."""
    module, packers = version_of(VERSIONS[version])
    for frame in packers.frames():
        cls = getattr(module, frame.name)
        assert outcome(cls.pack) == outcome(cls._pack_python)
        for name in cls.__match_args__:
            for bad in BAD:
                got = outcome(cls.pack, **{name: bad})
                assert got == outcome(cls._pack_python, **{name: bad}), (frame.name, name, bad)
        assert outcome(cls.pack, ctx=object()) == outcome(cls._pack_python, ctx=object())


@pytest.mark.parametrize("version", VERSIONS)
def test_native_encode_of_a_frame_object_raises_what_python_raises(version: str) -> None:
    """``encode(frame)`` and ``frame_bytes(frame)`` natively (a frame object's attributes
    read in Rust) against the Python path, with each attribute of each frame set to each
    bad value: the same bytes, or the same exception and message."""
    module, packers = version_of(VERSIONS[version])
    assert module._native_bytes is not None
    for plan in packers.frames():
        cls = getattr(module, plan.name)
        stored = [n for n in cls.__slots__]  # the attributes as kept (flags in _flags)
        for name in stored:
            for bad in BAD:
                frame = cls()
                setattr(frame, name, bad)
                for function in (module.encode, module.frame_bytes):
                    got = outcome(function, frame)
                    want = python_path(module, outcome, function, frame)
                    assert got == want, (plan.name, name, bad, function.__name__)


def test_native_encode_of_a_frame_object_is_only_for_its_own_module() -> None:
    """A frame of another version's class (same class name) is not this module's to
    encode natively: the Python path encodes it by its own ``to_bytes``."""
    v1, _ = version_of(VERSIONS["rsocket/v1_0"])
    v02, _ = version_of(VERSIONS["rsocket/v0_2"])
    other = v02.RequestN(stream_id=1, request_n=5)
    assert v1._native_bytes(other, False) is None
    assert v1.encode(other) == other.to_bytes() != v1.RequestN(stream_id=1, request_n=5).to_bytes()


def test_native_pack_of_another_layout_is_not_used() -> None:
    """A module whose plan is not the one the extension was built from (an IDL edited since
    ``make native``) keeps its Python ``pack``."""
    module, packers = version_of(VERSIONS["postgresql/v3"])
    fingerprint = layout_fingerprint(packers.m)

    class Query:
        @staticmethod
        def pack() -> bytes:
            return b"python"

    assert _support.use_native_packers(module.__name__, "0" * 16, (Query,))[0] is None
    assert Query.pack() == b"python"
    other = "some.other.package.postgresql.v3"
    assert _support.use_native_packers(other, fingerprint, (Query,))[0] is None
    assert Query.pack() == b"python"
    assert _support.use_native_packers(module.__name__, fingerprint, (Query,))[0] is not None
    assert native(Query.pack)


def test_wirestream_native_0_keeps_every_pack_python() -> None:
    script = (
        "import wirestream.generated.mysql.v10 as my\n"
        "print(type(my.ComQuery.pack).__name__, my.ComQuery.pack(query='SELECT 1').hex(),"
        " my._native_bytes)\n"
    )
    env = {**os.environ, "WIRESTREAM_NATIVE": "0"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, check=True, timeout=60)  # fmt: skip
    assert done.stdout.split() == ["function", "0900000003" + b"SELECT 1".hex(), "None"]
