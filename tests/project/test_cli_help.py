"""Every command of ``wirestream`` prints its help: argparse expands ``%`` in help texts,
so a default such as a URI's ``%2f`` must be escaped or ``--help`` raises TypeError."""

from __future__ import annotations

import argparse

import pytest

from wirestream.apps import cli


def _parsers(
    parser: argparse.ArgumentParser, name: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                found += _parsers(child, f"{name} {sub}")
    return found


PARSERS = _parsers(cli.build_parser(), "wirestream")


@pytest.mark.parametrize("parser", [p for _, p in PARSERS], ids=[n for n, _ in PARSERS])
def test_every_command_prints_its_help(parser: argparse.ArgumentParser) -> None:
    assert parser.format_help().strip()
