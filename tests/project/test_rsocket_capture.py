"""The browser tests' reading of a server capture (tests/support/rsocket_capture.py) catches
what it guards: each check is shown a planted server that broke the rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.rsocket_capture import (
    Seen,
    credit_excess,
    grants,
    items,
    read_capture,
    sent_after_cancel,
)
from wirestream.generated.rsocket.v1_0 import (
    Cancel,
    Frame,
    Payload,
    RequestChannel,
    RequestN,
    RequestStream,
    encode,
)
from wirestream.runtime.capture.writer import CaptureWriter


def client(frame: Frame) -> Seen:
    return Seen(1, "client", frame)


def server(frame: Frame) -> Seen:
    return Seen(1, "server", frame)


def item(n: int, stream_id: int = 1) -> Seen:
    return server(Payload(stream_id=stream_id, next=True, data=b"%d" % n))


def test_a_server_within_its_credit_has_no_excess() -> None:
    seen = [client(RequestStream(stream_id=1, initial_request_n=2, data=b"4")),
            item(0), item(1), client(RequestN(stream_id=1, request_n=2)), item(2), item(3),
            server(Payload(stream_id=1, complete=True))]  # fmt: skip
    assert credit_excess(seen, 1, "server") == 0
    assert grants(seen, 1, "server") == [2, 2]
    assert items(seen, 1, "server") == [b"0", b"1", b"2", b"3"]


def test_an_item_sent_before_the_request_n_that_allows_it_is_an_excess() -> None:
    seen = [client(RequestStream(stream_id=1, initial_request_n=2, data=b"4")),
            item(0), item(1), item(2),
            client(RequestN(stream_id=1, request_n=2)), item(3)]  # fmt: skip
    assert credit_excess(seen, 1, "server") == 1


def test_a_client_sending_on_a_channel_beyond_the_servers_grants_is_an_excess() -> None:
    first = RequestChannel(stream_id=1, initial_request_n=8, data=b"first")
    seen = [client(first), server(RequestN(stream_id=1, request_n=1)),
            client(Payload(stream_id=1, next=True, data=b"a")),
            client(Payload(stream_id=1, next=True, data=b"b"))]  # fmt: skip
    assert credit_excess(seen, 1, "client") == 1
    assert credit_excess(seen, 1, "server") < 0  # granted 8, sent none
    assert grants(seen, 1, "client") == [1]


def test_other_streams_count_for_nothing() -> None:
    seen = [client(RequestStream(stream_id=1, initial_request_n=1, data=b"9")),
            client(RequestStream(stream_id=3, initial_request_n=5, data=b"9")),
            item(0), item(0, stream_id=3), item(1, stream_id=3)]  # fmt: skip
    assert credit_excess(seen, 1, "server") == 0
    assert credit_excess(seen, 3, "server") == -3


def test_what_the_server_sent_after_reading_the_cancel_is_found() -> None:
    seen = [client(RequestStream(stream_id=1, initial_request_n=8, data=b"9")),
            item(0), client(Cancel(stream_id=1)), item(1), item(0, stream_id=3)]  # fmt: skip
    assert sent_after_cancel(seen, 1) == [Payload(stream_id=1, next=True, data=b"1")]
    assert sent_after_cancel(seen, 3) is None  # never cancelled


def test_read_capture_reads_frames_in_order_with_their_sender(tmp_path: Path) -> None:
    with CaptureWriter(tmp_path / "c.wscap", "rsocket/1.0", max_file_bytes=None) as capture:
        capture.record(7, "in", encode(RequestN(stream_id=1, request_n=3)), side="server")
        capture.record(7, "out", encode(Payload(stream_id=1, next=True)), side="server")
    assert read_capture(tmp_path / "c.wscap") == [
        Seen(7, "client", RequestN(stream_id=1, request_n=3)),
        Seen(7, "server", Payload(stream_id=1, next=True)),
    ]


def test_read_capture_refuses_fragments_whose_items_it_would_miscount(tmp_path: Path) -> None:
    with CaptureWriter(tmp_path / "c.wscap", "rsocket/1.0", max_file_bytes=None) as capture:
        fragment = Payload(stream_id=1, follows=True, next=True, data=b"part")
        capture.record(7, "out", encode(fragment), side="server")
    with pytest.raises(AssertionError, match="a fragment"):
        read_capture(tmp_path / "c.wscap")
