"""The TLS side of the project's broker (``tools/broker.sh start``), as ``ssl`` contexts.

``tools/broker.sh start`` makes, in ``<broker folder>/tls/``:

* ``ca_certificate.pem``: a private CA, the only one the broker and these contexts trust;
* ``server_certificate.pem``: CN ``localhost``, SAN ``DNS:localhost, IP:127.0.0.1``;
* ``client_certificate.pem`` / ``client_key.pem``: CN ``wirestream-client``, the user
  SASL EXTERNAL logs in as (``ssl_cert_login_from = common_name``).

The broker listens for the stream protocol over TLS on 127.0.0.1:5551 (``verify_peer``
without ``fail_if_no_peer_cert``: a client certificate is asked for, not required).

Environment, to point the tests at another node (tools/broker.sh's ``BROKER_*``):
``WIRESTREAM_BROKER_DIR`` (the broker folder; default: the running node's, see
tests/support/rabbitmq_broker.py),
``WIRESTREAM_TLS_PORT`` (default 5551), ``WIRESTREAM_STREAM_PORT`` (default 5552).
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
from pathlib import Path
from typing import Any

from tests.support.rabbitmq_broker import BROKER_DIR

__all__ = [
    "BROKER_DIR",
    "CLIENT_USER",
    "HOST",
    "STREAM_PORT",
    "TLS_DIR",
    "TLS_PORT",
    "client_context",
    "context_trusting",
    "listening",
    "make_unrelated_ca",
    "stream_connections",
]

TLS_DIR = BROKER_DIR / "tls"  # the running node's (tests/support/rabbitmq_broker.py)
HOST = "127.0.0.1"
TLS_PORT = int(os.environ.get("WIRESTREAM_TLS_PORT", "5551"))
STREAM_PORT = int(os.environ.get("WIRESTREAM_STREAM_PORT", "5552"))
CLIENT_USER = "wirestream-client"

CA_FILE = TLS_DIR / "ca_certificate.pem"
CLIENT_CERTIFICATE = TLS_DIR / "client_certificate.pem"
CLIENT_KEY = TLS_DIR / "client_key.pem"


def listening(port: int, host: str = HOST) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def context_trusting(ca_file: Path) -> ssl.SSLContext:
    """A client context that verifies the server (chain and host name) against
    ``ca_file`` only, and presents no certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, check_hostname
    context.load_verify_locations(cafile=str(ca_file))
    return context


def client_context(*, certificate: bool = True) -> ssl.SSLContext:
    """Trusts the broker's private CA; presents the ``wirestream-client`` certificate
    unless ``certificate`` is False."""
    context = context_trusting(CA_FILE)
    if certificate:
        context.load_cert_chain(certfile=str(CLIENT_CERTIFICATE), keyfile=str(CLIENT_KEY))
    return context


def make_unrelated_ca(folder: Path) -> Path:
    """A fresh self-signed CA in ``folder`` (openssl), which signed nothing the broker
    holds; returns its certificate file."""
    certificate = folder / "unrelated_ca.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=unrelated test CA", "-keyout", str(folder / "unrelated_ca_key.pem"),
         "-out", str(certificate)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return certificate


def stream_connections(*columns: str) -> list[dict[str, Any]]:
    """``rabbitmq-streams list_stream_connections <columns>`` on the node of
    ``BROKER_DIR`` (its ``env.sh``), one dict per connection. Columns seen on 3.10.8:
    ``conn_name, client_properties, user, auth_mechanism, ssl, ssl_protocol,
    peer_cert_subject, ...``."""
    from tests.support import rabbitmq_broker_ctl

    return rabbitmq_broker_ctl.list_stream_connections(columns, env_file=BROKER_DIR / "env.sh")
