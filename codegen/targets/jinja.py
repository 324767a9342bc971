"""The one jinja2 set-up every target renders with (as betterproto's: trim_blocks,
lstrip_blocks, StrictUndefined, so a template that names a missing plan field fails
the generator instead of writing an empty string)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NoReturn

import jinja2

from wirestream.codegen.targets.cache_dir import cache_dir


def _raise(message: str) -> NoReturn:
    """``{{ raise("...") }}``: a template refuses what its language cannot spell."""
    raise NotImplementedError(message)


def environment(
    templates: Path,
    filters: dict[str, Callable[..., Any]] | None = None,
    tests: dict[str, Callable[..., bool]] | None = None,
    **globals_: object,
) -> jinja2.Environment:
    """An environment over the folder ``templates`` (a target's own) with ``filters``, ``tests`` and
    ``globals_``; every one has ``zip``, ``raise`` and the ``do`` statement."""
    folder = cache_dir("jinja")  # compiled templates, checked against their source
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(folder)) if folder else None,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        extensions=["jinja2.ext.do"],
    )
    env.globals.update({"zip": zip, "raise": _raise, **globals_})
    env.filters.update(filters or {})
    env.tests.update(tests or {})
    return env
