"""What tests know about the protocol versions: one entry per IDL file."""

from __future__ import annotations

import enum
import importlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from wirestream.runtime.machine import ANY, StateMachine

ROOT = Path(__file__).resolve().parent.parent.parent
IDL = ROOT / "idl"
VECTORS = Path(__file__).resolve().parent.parent / "vectors"


@dataclass(frozen=True)
class Version:
    protocol: str
    version: str

    @property
    def id(self) -> str:
        return f"{self.protocol}.{self.version}"

    @property
    def idl(self) -> Path:
        return IDL / self.protocol / f"{self.version}.yaml"

    def codec(self) -> ModuleType:
        return importlib.import_module(f"wirestream.generated.{self.protocol}.{self.version}")

    def strategies(self) -> ModuleType:
        return importlib.import_module(
            f"wirestream.generated.{self.protocol}.{self.version}.strategies"
        )

    def vectors(self, suffix: str = "") -> list[dict[str, Any]]:
        path = VECTORS / f"{self.protocol}_{self.version}{suffix}.yaml"
        if not path.exists():
            return []
        return yaml.safe_load(path.read_text(encoding="utf-8")) or []


VERSIONS = [Version(p.parent.name, p.stem) for p in sorted(IDL.glob("*/*.yaml"))]


def plain(value: Any) -> Any:
    """A frame as the plain data the vector files use (bytes as {hex: ...})."""
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    names = getattr(type(value), "__match_args__", None)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    raise TypeError(f"cannot make {value!r} plain")


def build(codec: ModuleType, cls_name: str, fields: dict[str, Any]) -> Any:
    """The inverse of `plain` for a frame (used to encode expected frames)."""
    cls = getattr(codec, cls_name)
    return cls(**{name: unplain(codec, cls, name, value) for name, value in fields.items()})


def unplain(codec: ModuleType, cls: type, name: str, value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"hex"}:
        return bytes.fromhex(value["hex"])
    if isinstance(value, list):
        return [unplain(codec, cls, name, item) for item in value]
    return value


def context(codec: ModuleType, spec: dict[str, Any] | None) -> Any:
    if not spec:
        return None
    return codec.Context(**spec)


def is_startup(codec: ModuleType, vector: dict[str, Any]) -> bool:
    """Whether a vector holds a frame that opens a connection (PostgreSQL's startup
    messages): its ``startup`` key, else its frame class's ``STARTUP``."""
    if "startup" in vector:
        return bool(vector["startup"])
    return bool(getattr(getattr(codec, vector.get("frame", ""), None), "STARTUP", False))


def decode_vector(codec: ModuleType, vector: dict[str, Any], ctx: Any, key: str = "hex") -> Any:
    """Decode ``vector[key]`` as its receiver would: a startup frame with
    ``decode_startup``, any other with ``decode`` and the vector's ``sender``."""
    data = bytes.fromhex(vector[key])
    if is_startup(codec, vector):
        return codec.decode_startup(data, ctx)
    return codec.decode(data, ctx, vector.get("sender"))


def generate_into(tmp_path: Path, spec: dict[str, Any], package: str,
                  *modules: str) -> list[ModuleType]:  # fmt: skip
    """Write ``spec`` as ``idl/<protocol>/<version>.yaml`` under ``tmp_path``, generate
    it into the package ``package`` there, and import ``package.<protocol>.<version>``
    followed by each of ``modules`` in it (e.g. "machines"): the edit workflow."""
    idl = tmp_path / "idl" / spec["protocol"]
    idl.mkdir(parents=True)
    (idl / f"{spec['version']}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    command = [sys.executable, "-m", "wirestream.codegen", "generate", "--idl", str(tmp_path / "idl"),
               "--out", str(tmp_path / package), "--target", "python"]  # fmt: skip
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    base = f"{package}.{spec['protocol']}.{spec['version']}"
    sys.path.insert(0, str(tmp_path))
    try:
        return [importlib.import_module(m) for m in [base, *(f"{base}.{n}" for n in modules)]]
    finally:
        sys.path.remove(str(tmp_path))


def tables_over(
    edited: type[StateMachine[Any]], committed: type[StateMachine[Any]], codec: ModuleType
) -> type[StateMachine[Any]]:
    """``committed`` with the tables of ``edited`` (a machine regenerated from an edited
    IDL), keyed by ``codec``'s frame classes and ``committed``'s states: a regenerated
    package has classes of its own under the same names, while an engine decodes into the
    committed ones and compares the committed states.  Rows, guards and handler names
    and the binders (``bind_<role>``) are the edited ones; only keys and target states are
    looked up by name and value."""
    states = type(next(iter(committed.INITIAL.values())))

    def state(value: Any) -> Any:
        return states(value.value) if isinstance(value, enum.Enum) else value

    def frame(cls: Any) -> Any:
        return cls if cls is ANY else getattr(codec, cls.__name__)

    def table(rows: Any) -> dict[Any, Any]:
        return {
            (state(s), frame(f)): tuple((guard, state(outcome)) for guard, outcome in row)
            for (s, f), row in rows.items()
        }

    def binder(bind: Any) -> Any:
        # The edited binder, keyed by the committed frame classes like its table.
        return staticmethod(lambda h: {frame(f): m for f, m in bind(h).items()})

    binders = {name: binder(getattr(edited, name)) for name in vars(edited)
               if name.startswith("bind_")}  # fmt: skip
    return type(committed.__name__, (committed,), {
        "__slots__": (),
        **binders,
        "SEND": {role: table(rows) for role, rows in edited.SEND.items()},
        "RECEIVE": {role: table(rows) for role, rows in edited.RECEIVE.items()},
        "HANDLERS": {role: {frame(f): name for f, name in handlers.items()}
                     for role, handlers in edited.HANDLERS.items()},
    })  # fmt: skip
