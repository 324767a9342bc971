"""The one error type of the IDL compiler: it names the file, the line and the key."""

from __future__ import annotations


class IdlError(Exception):
    """An IDL file is malformed: ``file:line: key.path: message``."""

    def __init__(self, file: str, line: int, key: str, message: str) -> None:
        self.file = file
        self.line = line
        self.key = key
        self.message = message
        super().__init__(f"{file}:{line}: {key}: {message}")
