"""The extend-by-editing workflow, end to end: a user adds a frame type to a protocol's
YAML, generates, imports the new package and round-trips the new frame.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wirestream.runtime.errors import UnknownFrameType
from tests.protocols import IDL, generate_into

NEW_FRAME = {
    "code": 0x20,
    "doc": "A frame this test adds: a 31-bit sequence number, metadata and data.",
    "spec": "tests/test_extend_workflow.py",
    "flags": {"metadata": 0x100, "urgent": 0x80},
    "fields": [
        {"word": "u32", "bits": [{"reserved": 1}, {"name": "sequence", "width": 31, "min": 1}]},
        {"name": "metadata", "type": "bytes", "length": "u24", "if": "metadata"},
        {"name": "data", "type": "bytes", "length": "rest"},
    ],
}


def test_a_frame_added_to_the_yaml_is_generated_and_round_trips(tmp_path: Path) -> None:
    spec = yaml.safe_load((IDL / "rsocket" / "v1_0.yaml").read_text(encoding="utf-8"))
    spec["frames"]["Sequenced"] = NEW_FRAME
    codec, strategies = generate_into(tmp_path, spec, "wsext", "strategies")

    frame = codec.Sequenced(stream_id=3, urgent=True, sequence=7, metadata=b"m", data=b"hello")
    data = codec.encode(frame)
    assert data.hex() == "00000003" "8180" "00000007" "000001" "6d" "68656c6c6f"
    assert codec.decode(data) == frame
    assert codec.FrameType.SEQUENCED == 0x20
    assert hasattr(strategies, "sequenced")  # the new frame gets a strategy for free

    # The committed codec, generated before the edit, does not know the frame.
    from wirestream.generated.rsocket import v1_0

    with pytest.raises(UnknownFrameType):
        v1_0.decode(data)
