"""The Java stream client peer runs against the project's broker (the harness itself)."""

from __future__ import annotations

import pytest

from tests.support.rabbitmq_java_peer import rabbitmq_java, run_java  # noqa: F401
from tests.support.rabbitmq_stream_client_support import URI

pytestmark = pytest.mark.usefixtures("rabbitmq_broker")


def test_the_java_stream_client_connects_creates_and_deletes_a_stream(rabbitmq_java: str) -> None:
    [answer] = run_java(rabbitmq_java, "Hello", URI)
    assert answer == {"ok": True, "client": "1.11.0"}
