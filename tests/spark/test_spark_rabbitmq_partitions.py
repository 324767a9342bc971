"""How the rabbitmq_stream source splits a micro-batch's offsets into Spark partitions
(no broker, no Spark): a function of the range and the options only, so a replayed
micro-batch gets the same partitions and the sink's publishing ids stay the same."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wirestream.runtime.spark.rabbitmq_source import SourceSettings, plan_ranges

URI = "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2f"


def settings(**options: str) -> SourceSettings:
    return SourceSettings.parse({"uri": URI, "stream": "s", **options})


def spans(start: int, end: int, **options: str) -> list[tuple[int, int]]:
    return [(r.start, r.end) for r in plan_ranges(settings(**options), start, end)]


def test_partitions_are_slices_of_records_per_partition_by_default_250000() -> None:
    assert spans(0, 600_000) == [(0, 250_000), (250_000, 500_000), (500_000, 600_000)]
    assert spans(15, 26, recordsPerPartition="4") == [(15, 19), (19, 23), (23, 26)]
    assert spans(7, 7) == []


def test_min_partitions_splits_a_small_batch_in_equal_pieces_never_empty() -> None:
    assert spans(0, 10_000, minPartitions="4") == [
        (0, 2_500), (2_500, 5_000), (5_000, 7_500), (7_500, 10_000)
    ]  # fmt: skip
    assert spans(0, 3, minPartitions="8") == [(0, 1), (1, 2), (2, 3)]
    # recordsPerPartition already makes more: its slices
    assert len(spans(0, 1_000, recordsPerPartition="100", minPartitions="2")) == 10


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**5),
    st.integers(1, 5_000),
    st.integers(1, 16),
)
def test_partitions_cover_the_range_once_in_order_and_depend_only_on_it(
    start: int, length: int, size: int, minimum: int
) -> None:
    options = {"recordsPerPartition": str(size), "minPartitions": str(minimum)}
    got = spans(start, start + length, **options)
    assert got == spans(start, start + length, **options)  # the same every time
    assert [a for a, _ in got[1:]] == [b for _, b in got[:-1]]  # contiguous
    if length:
        assert got[0][0] == start and got[-1][1] == start + length
        assert all(b > a for a, b in got)
        assert len(got) >= min(minimum, length)
    else:
        assert got == []
