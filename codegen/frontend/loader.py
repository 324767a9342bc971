"""YAML loading that remembers where every key and item came from.

PyYAML's SafeLoader builds plain dicts and lists; ours build ``Mapping``/``Sequence``
nodes that also record the line of each key and item, so that validation errors can
say ``file:line: key``.
"""

from __future__ import annotations

from typing import Any

import yaml

from wirestream.codegen.frontend.errors import IdlError


class Mapping(dict[Any, Any]):
    """A YAML mapping with the 1-based line of itself and of each key."""

    line: int
    key_lines: dict[Any, int]


class Sequence(list[Any]):
    """A YAML sequence with the 1-based line of itself and of each item."""

    line: int
    item_lines: list[int]


# libyaml's parser (PyYAML's C binding, when built with it) composes the same nodes with
# the same marks about 10x faster than the pure-Python one: the IDL of a large protocol
# parses in ~40 ms instead of ~600 ms, which the edit loop (regenerate on every save) feels
_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[misc]  # the base is chosen at import
    file_name = "<idl>"


def _mapping(loader: _Loader, node: yaml.MappingNode) -> Mapping:
    loader.flatten_mapping(node)
    result = Mapping()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            raise IdlError(loader.file_name, line, "?", "a key must be a scalar") from None
        if key in result:
            raise IdlError(loader.file_name, line, str(key), "duplicate key")
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> Sequence:
    result = Sequence()
    result.line = node.start_mark.line + 1
    result.item_lines = []
    for item in node.value:
        result.append(loader.construct_object(item, deep=True))
        result.item_lines.append(item.start_mark.line + 1)
    return result


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_yaml(text: str, file_name: str) -> Any:
    """Parse ``text``; YAML syntax errors become IdlError with their line."""

    class Loader(_Loader):
        pass

    Loader.file_name = file_name
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise IdlError(file_name, line, "<yaml>", str(error.problem or error)) from None
    except yaml.YAMLError as error:
        raise IdlError(file_name, 1, "<yaml>", str(error)) from None


def key_paths(node: Any, path: str = "") -> dict[str, int]:
    """Every key and item under ``node`` by its key path (``frames.Setup.flags.lease``,
    ``header.fields[1]``, as ``IdlError`` names them) -> its line."""
    found: dict[str, int] = {}
    if isinstance(node, Mapping):
        for key, value in node.items():
            child = f"{path}.{key}" if path else str(key)
            found[child] = node.key_lines[key]
            found.update(key_paths(value, child))
    elif isinstance(node, Sequence):
        for index, value in enumerate(node):
            child = f"{path}[{index}]"
            found[child] = node.item_lines[index]
            found.update(key_paths(value, child))
    return found
