"""The stream decoders' ``after_frame`` hook: each frame with its size on the wire, in
stream order, before the next frame is decoded (length-prefixed, self-delimiting and
MessagePack decoders alike)."""

from __future__ import annotations

from wirestream.generated.bpmux.rel import InnerItem, MainCredit
from wirestream.generated.bpmux.rel import StreamDecoder as BpmuxDecoder
from wirestream.generated.bpmux.rel import encode as bpmux_encode
from wirestream.generated.rsio.v0 import MsgpackStreamDecoder, Subscribe, encode_msgpack
from wirestream.generated.rsocket.v1_0 import Payload, RequestN
from wirestream.generated.rsocket.v1_0 import StreamDecoder as RSocketDecoder
from wirestream.generated.rsocket.v1_0 import encode as rsocket_encode
from wirestream.generated.rsocket.v1_0 import frame_bytes


def test_length_prefixed_sizes_exclude_the_prefix() -> None:
    frames = [Payload(stream_id=1, next=True, data=b"x" * 30), RequestN(stream_id=1, request_n=5)]
    seen: list[tuple[object, int]] = []
    decoder = RSocketDecoder()
    decoder.after_frame = lambda frame, size: seen.append((frame, size))
    assert decoder.feed(b"".join(frame_bytes(f) for f in frames)) == frames
    assert seen == [(f, len(rsocket_encode(f))) for f in frames]


def test_self_delimiting_sizes() -> None:
    frames = [MainCredit(credit=300), InnerItem(inner_id=3, payload=b"abc")]
    seen: list[int] = []
    decoder = BpmuxDecoder()
    decoder.after_frame = lambda frame, size: seen.append(size)
    data = b"".join(bpmux_encode(f) for f in frames)
    assert decoder.feed(data[:3]) + decoder.feed(data[3:]) == frames
    assert seen == [len(bpmux_encode(f)) for f in frames]


def test_msgpack_sizes_across_chunks() -> None:
    frames = [Subscribe(publisher="p" * 40, subscriber=n, initial_demand=n) for n in range(3)]
    seen: list[int] = []
    decoder = MsgpackStreamDecoder()
    decoder.after_frame = lambda frame, size: seen.append(size)
    data = b"".join(encode_msgpack(f) for f in frames)
    assert decoder.feed(data[:50]) + decoder.feed(data[50:]) == frames
    assert seen == [len(encode_msgpack(f)) for f in frames]
