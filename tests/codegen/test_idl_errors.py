"""Bad IDL gets one precise error naming the file, the line and the key.

Each file in tests/idl_errors/ is a malformed IDL whose first line says what the
generator must answer: ``# expect: LINE KEY :: MESSAGE`` (the message may be a prefix).
Lines count from the top of the file, that comment included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wirestream.codegen import IdlError, load_protocol

CASES = sorted((Path(__file__).parent.parent / "idl_errors").glob("*.yaml"))


def test_there_are_at_least_twelve_malformed_idl_cases() -> None:
    assert len(CASES) >= 12


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_malformed_idl_is_reported_with_file_line_and_key(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: ")
    where, message = first[len("# expect: ") :].split(" :: ", 1)
    line, key = where.split(" ", 1)
    with pytest.raises(IdlError) as caught:
        load_protocol(path, path.name)
    error = caught.value
    assert (error.file, error.line, error.key) == (path.name, int(line), key), str(error)
    assert error.message.startswith(message), str(error)
    assert str(error).startswith(f"{path.name}:{line}: {key}: ")
