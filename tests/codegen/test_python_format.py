"""The generator formats Python one top-level definition at a time (``render._black``) and
keeps each piece in its cache; the text must be black's for the whole module all the same.

The committed ``generated/`` also proves it (``make check-generated`` renders with the
pieces, ``make lint`` runs black over the result), but only for the IDL of ``idl/``; these
tests name the rule and try the places where joining pieces could differ from black.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import black
import pytest

from wirestream.codegen.frontend.build import load_protocol
from wirestream.codegen.plan.codec import plan_codec
from wirestream.codegen.targets.python import render
from wirestream.codegen.targets.python.codec import render_codec

ROOT = Path(__file__).resolve().parent.parent.parent

TRICKY = '''\
"""A module."""
import os
X = 1
def after_a_statement(a,b):
    return a+b
# a comment that belongs to the function below: no cut between them
def after_a_comment():
    pass



@decorated
@twice
class AfterThreeBlankLines:
    y: int=2
    def method(self):   pass
if os.name:
    def inside_an_if():
        pass
Y = [1,
  2,]
def last(): return Y
'''


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No piece comes from another run's cache: each is formatted here."""
    monkeypatch.setattr(render._CHUNKS, "folder", tmp_path)
    yield


def test_pieces_cut_only_before_definitions_after_blank_lines() -> None:
    pieces = render._pieces(TRICKY)
    assert pieces is not None and "".join(pieces) == TRICKY
    assert [p.splitlines()[0] for p in pieces] == [
        '"""A module."""',
        "def after_a_statement(a,b):",
        "@decorated",
        "def last(): return Y",
    ]


def test_formatting_by_pieces_is_black_on_the_whole_module() -> None:
    assert render._black(TRICKY) == render._black_whole(TRICKY)


def test_a_syntax_error_is_reported_by_black() -> None:
    with pytest.raises(black.InvalidInput, match="(?i)cannot parse: 1:11"):
        render._black("def broken(:\n    pass\n")


def test_formatting_by_pieces_is_black_on_a_generated_codec() -> None:
    idl = "idl/mqtt/v5.yaml"
    source = render_codec(plan_codec(load_protocol(ROOT / idl, idl)))
    assert render._black(source) == render._black_whole(source)
