"""A self-signed certificate for TLS tests (``openssl``, Debian's, as everywhere here), for
127.0.0.1 and localhost, and the ``ssl`` contexts of a server that has it and a client
that trusts it."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """``(cert.pem, key.pem)`` in ``folder``: valid a day, for IP 127.0.0.1 and localhost."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def tls_contexts(folder: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client): the server has a fresh self-signed certificate, the client trusts
    exactly that one (and verifies the name, as by default)."""
    cert, key = self_signed_certificate(folder)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    return server, client
