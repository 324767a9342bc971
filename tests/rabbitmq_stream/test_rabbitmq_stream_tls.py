"""The asyncio stream client over TLS, and SASL EXTERNAL, against a real RabbitMQ broker.

The broker is the one of ``tools/broker.sh start``: stream over TLS on 127.0.0.1:5551
(a private CA, ``verify_peer`` without ``fail_if_no_peer_cert``), EXTERNAL enabled with
``ssl_cert_login_from = common_name`` and the user ``wirestream-client`` (see
tests/support/rabbitmq_tls.py); the session fixture ``rabbitmq_broker`` (tests/support/rabbitmq_broker.py)
starts it when the TLS port does not answer.
``WIRESTREAM_TLS_PORT`` / ``WIRESTREAM_STREAM_PORT`` / ``WIRESTREAM_BROKER_DIR`` point
them at another node.

PROTOCOL.adoc, Authentication: "SaslHandshake: the client asks about the SASL mechanisms
the server supports. It can then pick one from the list the server returns." RabbitMQ
lists EXTERNAL only on a TLS connection (rabbit_auth_mechanism_ssl:should_offer/1 is false
for a plain socket, true on TLS with or without a client certificate).

RabbitMQ 3.10.8 (the Debian broker of this project) cannot complete EXTERNAL on the
stream port: its stream reader hands the mechanism the atom ``peer_properties_exchanged``
instead of the mechanism's state, the connection process dies with ``function_clause``
in ``rabbit_auth_mechanism_ssl:handle_response/2`` and the socket closes with no answer.
Fixed upstream by rabbitmq-server PR #8488 ("Fix SASL external authentication in stream
plugin", June 2023, backported to 3.10.x, 3.11.x and 3.12.x). The EXTERNAL tests expect
that crash from the versions in ``STREAM_EXTERNAL_BROKEN`` and a real login otherwise.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from wirestream.runtime.errors import ConnectionLost, ProtocolError
from wirestream.runtime.rabbitmq_stream.aio import Client, connect
from wirestream.runtime.rabbitmq_stream.errors import AuthenticationError, MechanismNotOffered
from tests.support.aio_support import run
from tests.support.rabbitmq_tls import (
    CLIENT_USER,
    HOST,
    STREAM_PORT,
    TLS_PORT,
    client_context,
    context_trusting,
    make_unrelated_ca,
    stream_connections,
)

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")

TLS_URI = f"rabbitmq-stream+tls://guest:guest@{HOST}:{TLS_PORT}/%2f"
EXTERNAL_URI = f"rabbitmq-stream+tls://{HOST}:{TLS_PORT}/%2f"  # no credentials at all
TCP_URI = f"rabbitmq-stream://guest:guest@{HOST}:{STREAM_PORT}/%2f"

STREAM_EXTERNAL_BROKEN = frozenset({"3.10.8"})
"""Broker versions seen dropping an EXTERNAL login on the stream port (module docstring)."""

FAILS_FAST = 3.0  # seconds: a refused connection is an answer, not a wait for a timeout


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def connection_row(connection_name: str, *columns: str) -> dict[str, Any]:
    """The broker's view of our connection (found by its ``connection_name``)."""
    rows = await asyncio.to_thread(stream_connections, "client_properties", *columns)
    for row in rows:
        for key, _type, value in row.get("client_properties") or []:
            if key == "connection_name" and value == connection_name:
                return row
    raise AssertionError(f"the broker lists no stream connection named {connection_name!r}")


async def connect_error(uri: str, **options: Any) -> tuple[Exception, float]:
    """What ``connect`` raises, and after how many seconds. When it connects instead, the
    client is closed and the test fails (pytest.raises would raise its BaseException
    through the event loop and leave the connection open)."""
    started = time.monotonic()
    try:
        client = await connect(uri, timeout=10, **options)
    except Exception as error:
        return error, time.monotonic() - started
    await client.close()
    raise AssertionError(f"{uri} {options}: connected; a failure was expected")


async def broker_version() -> str:
    async with await connect(TLS_URI, ssl=client_context(certificate=False)) as client:
        return str(client.server_properties.get("version"))


async def publish_and_consume(client: Client, bodies: list[bytes]) -> list[bytes]:
    """Create a stream, publish ``bodies`` (confirmed), read them back from the first
    offset, delete the stream."""
    stream = unique("tls")
    await client.create_stream(stream)
    try:
        producer = await client.producer(stream)
        await producer.send_many(bodies)
        await producer.close()
        received = []
        async with await client.consumer(stream, offset="first") as consumer:
            async for message in consumer:
                received.append(message.body)
                if len(received) == len(bodies):
                    break
        return received
    finally:
        await client.delete_stream(stream)


def test_plain_login_over_tls_publishes_and_consumes() -> None:
    """PLAIN (guest/guest) over the TLS listener; the broker sees a TLS connection of
    ``guest`` authenticated with PLAIN, even though no client certificate was sent."""
    name = unique("tls-plain")

    async def main() -> None:
        client = await connect(TLS_URI, ssl=client_context(certificate=False), connection_name=name)
        async with client:
            bodies = [b"over tls %d" % i for i in range(5)]
            assert await publish_and_consume(client, bodies) == bodies
            row = await connection_row(name, "user", "auth_mechanism", "ssl", "ssl_protocol")
            assert row["user"] == "guest"
            assert row["auth_mechanism"] == "PLAIN"
            assert row["ssl"] is True, row
            assert str(row["ssl_protocol"]).startswith("tlsv1."), row

    run(main(), timeout=60)


def test_external_with_the_client_certificate_logs_in_as_its_common_name() -> None:
    """EXTERNAL with the ``wirestream-client`` certificate and no password: the broker
    takes the user from the certificate's CN and a producer works (on a broker with
    the stream EXTERNAL bug, the connection is dropped at once: ConnectionLost)."""
    name = unique("tls-external")

    async def main() -> None:
        version = await broker_version()
        if version in STREAM_EXTERNAL_BROKEN:
            error, seconds = await connect_error(
                EXTERNAL_URI, ssl=client_context(), mechanism="EXTERNAL"
            )
            assert isinstance(error, ConnectionLost), repr(error)
            assert error.reason == "eof"  # closed, SaslAuthenticate never answered
            assert "during SASL EXTERNAL authentication" in str(error), str(error)
            assert seconds < FAILS_FAST
            return
        client = await connect(
            EXTERNAL_URI, ssl=client_context(), mechanism="EXTERNAL", connection_name=name
        )
        async with client:
            stream = unique("tls-external")
            await client.create_stream(stream)
            try:
                producer = await client.producer(stream)
                assert await producer.send_wait(b"who am i") == 1
                await producer.close()
                row = await connection_row(name, "user", "auth_mechanism", "peer_cert_subject")
                assert row["user"] == CLIENT_USER
                assert row["auth_mechanism"] == "EXTERNAL"
                assert f"CN={CLIENT_USER}" in str(row["peer_cert_subject"])
            finally:
                await client.delete_stream(stream)

    run(main(), timeout=60)


def test_external_without_a_client_certificate_is_refused() -> None:
    """EXTERNAL over TLS without a client certificate: RabbitMQ offers EXTERNAL on every
    TLS connection, then refuses ('connection peer presented no TLS (x.509)
    certificate'): AUTHENTICATION_FAILURE (0x08), ``AuthenticationError``, not
    retried. On a broker with the stream EXTERNAL bug: ConnectionLost at once."""

    async def main() -> None:
        version = await broker_version()
        error, seconds = await connect_error(
            EXTERNAL_URI, ssl=client_context(certificate=False), mechanism="EXTERNAL"
        )
        if version in STREAM_EXTERNAL_BROKEN:
            assert isinstance(error, ConnectionLost) and error.reason == "eof", repr(error)
        else:
            assert isinstance(error, AuthenticationError), repr(error)
            assert error.name == "AUTHENTICATION_FAILURE"
        assert seconds < FAILS_FAST

    run(main(), timeout=60)


def test_external_over_plain_tcp_is_not_offered() -> None:
    """Without TLS the broker's SaslHandshake answer lists no EXTERNAL: the client stops
    with ``MechanismNotOffered`` naming what is offered."""

    async def main() -> None:
        error, _ = await connect_error(TCP_URI, mechanism="EXTERNAL")
        assert isinstance(error, MechanismNotOffered), repr(error)
        assert "PLAIN" in str(error) and "not EXTERNAL" in str(error)

    run(main(), timeout=30)


def test_server_certificate_from_an_untrusted_ca_fails_the_handshake(tmp_path: Path) -> None:
    """Trusting only a CA that did not sign the broker's certificate: the TLS handshake
    fails certificate verification at once (``ConnectionLost`` caused by
    ``ssl.SSLCertVerificationError``), no hang, no retry."""
    untrusting = context_trusting(make_unrelated_ca(tmp_path))

    async def main() -> None:
        error, seconds = await connect_error(TLS_URI, ssl=untrusting)
        assert isinstance(error, ConnectionLost), repr(error)
        assert isinstance(error.__cause__, ssl.SSLCertVerificationError)
        assert "CERTIFICATE_VERIFY_FAILED" in str(error)
        assert seconds < FAILS_FAST

    run(main(), timeout=30)


def test_default_context_does_not_trust_the_private_ca() -> None:
    """A ``rabbitmq-stream+tls://`` URI without ``ssl=`` verifies against the system CAs,
    which do not include the broker's private CA: certificate verification fails."""

    async def main() -> None:
        error, _ = await connect_error(TLS_URI)
        assert isinstance(error, ConnectionLost), repr(error)
        assert isinstance(error.__cause__, ssl.SSLCertVerificationError)

    run(main(), timeout=30)


def test_plain_login_over_tcp_still_works() -> None:
    """The plain TCP listener is unchanged by the TLS configuration."""
    name = unique("tcp-plain")

    async def main() -> None:
        async with await connect(TCP_URI, connection_name=name) as client:
            assert await publish_and_consume(client, [b"over tcp"]) == [b"over tcp"]
            row = await connection_row(name, "user", "ssl")
            assert (row["user"], row["ssl"]) == ("guest", False)

    run(main(), timeout=60)


def test_tls_listener_refuses_a_plain_tcp_client_without_a_hang() -> None:
    """Plain frames sent to the TLS port: the broker answers with a TLS alert, which our
    decoder reads as an absurd frame size, a precise ``ProtocolError``, not a hang."""

    async def main() -> None:
        error, seconds = await connect_error(f"rabbitmq-stream://guest:guest@{HOST}:{TLS_PORT}/%2f")
        assert isinstance(error, ProtocolError), repr(error)
        assert seconds < FAILS_FAST

    run(main(), timeout=30)
