"""``rabbitmq-stream://`` URIs, as the Java stream client reads them.

``rabbitmq-stream://user:password@host:port/vhost`` (plain TCP, default port 5552)
and ``rabbitmq-stream+tls://...`` (TLS, default port 5551). The virtual host is the
percent-decoded path without its leading slash; an empty path is ``/`` (so ``%2f``
and nothing both mean the default vhost). Credentials default to guest/guest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

__all__ = ["StreamUri", "parse_stream_uri", "DEFAULT_URI"]

DEFAULT_URI: Final = "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f"
_SCHEMES: Final = {"rabbitmq-stream": (False, 5552), "rabbitmq-stream+tls": (True, 5551)}


@dataclass(frozen=True, slots=True)
class StreamUri:
    host: str
    port: int
    username: str
    password: str
    virtual_host: str
    tls: bool

    @property
    def transport_url(self) -> str:
        """The ``wirestream.runtime.aio`` endpoint (``tcp://`` or ``tls://``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'tls' if self.tls else 'tcp'}://{host}:{self.port}"

    def __str__(self) -> str:  # never print the password
        scheme = "rabbitmq-stream+tls" if self.tls else "rabbitmq-stream"
        return f"{scheme}://{self.username}@{self.host}:{self.port}/{self.virtual_host}"


def parse_stream_uri(uri: str) -> StreamUri:
    """Parse ``uri``; ``ValueError`` naming what is wrong."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(
            f"{uri!r}: the scheme must be rabbitmq-stream:// or rabbitmq-stream+tls://"
        )
    tls, default_port = _SCHEMES[scheme]
    if not parts.hostname:
        raise ValueError(f"{uri!r}: no host")
    try:
        port = parts.port or default_port
    except ValueError as error:
        raise ValueError(f"{uri!r}: {error}") from None
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    return StreamUri(
        host=parts.hostname,
        port=port,
        username=unquote(parts.username) if parts.username is not None else "guest",
        password=unquote(parts.password) if parts.password is not None else "guest",
        virtual_host=unquote(path) or "/",
        tls=tls,
    )
