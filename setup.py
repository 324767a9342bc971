"""The package map that pyproject.toml cannot state: the import names ``wirestream.codegen``,
``wirestream.generated`` and ``wirestream.runtime`` are the repository's top-level folders
``codegen/``, ``generated/`` and ``runtime/`` (the design card's layout), with every
sub-package found in them, so a new protocol or module needs no edit here. The wheel holds
them as plain folders under ``wirestream/``; an editable install maps the names onto the
folders (setuptools' editable finder), so every file has one path and no links are needed.
Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, find_packages, setup

PARTS = ("codegen", "generated", "runtime")

# The generator's template folders are data packages (no __init__), listed so setuptools
# ships their *.j2 (pyproject's package-data) without warning that it would ignore them.
TEMPLATES = [
    name for name in find_namespace_packages(include=["codegen.*"]) if name.endswith(".templates")
]
# The TypeScript runtime's sources (runtime/typescript: its manifests and src/*.ts, not its
# build output) are data too: `wirestream generate --target typescript` copies them into a
# standalone package (codegen/targets/typescript/package.py).
TYPESCRIPT_RUNTIME = ["runtime.typescript", "runtime.typescript.src"]

setup(
    packages=[
        *find_packages(include=["wirestream", "wirestream.*"]),
        *(
            f"wirestream.{name}"
            for name in find_packages(include=[f"{p}{s}" for p in PARTS for s in ("", ".*")])
        ),
        *(f"wirestream.{name}" for name in [*TEMPLATES, *TYPESCRIPT_RUNTIME]),
    ],
    package_dir={"wirestream": "wirestream", **{f"wirestream.{part}": part for part in PARTS}},
)
