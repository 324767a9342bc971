"""Where the generator keeps what it can reuse across runs (and checkouts): the user's
cache folder, ``$XDG_CACHE_HOME/wirestream`` (``~/.cache/wirestream``), or
``$WIRESTREAM_CACHE_DIR``.  Everything kept there is keyed by the hash of all it was made
from, so a stale entry is never found, only unused; deleting the folder is always safe."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def cache_dir(kind: str) -> Path | None:
    """The folder for ``kind`` (made on first use), or None when it cannot be made."""
    base = os.environ.get("WIRESTREAM_CACHE_DIR")
    if base is None:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = str(Path(xdg) / "wirestream")
    folder = Path(base) / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder


class TextMemo:
    """Texts kept by a key (any string; hashed): what a slow, deterministic function
    returned for an input, so the next run with the same input reads it back."""

    def __init__(self, kind: str, salt: bytes) -> None:
        self.folder = cache_dir(kind)
        self.salt = salt

    def _path(self, key: str) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / hashlib.sha256(self.salt + key.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        path = self._path(key)
        try:
            return path.read_text(encoding="utf-8") if path is not None else None
        except OSError:
            return None

    def put(self, key: str, text: str) -> None:
        path = self._path(key)
        if path is None:
            return
        try:  # another process may write the same entry: each writes whole, then renames
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, path)
        except OSError:
            pass
