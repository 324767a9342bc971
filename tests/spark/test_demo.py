"""`make demo`'s pipeline, on the shared SparkSession: the windows it writes to Parquet
are exactly the ones computed by hand from the same deterministic ticks."""

from __future__ import annotations

import datetime
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgpack
import pytest

from wirestream.apps.demo import Clock, rsocket_ticker, start_query, watch
from wirestream.apps.demo_chart import windows_from_rows, windows_from_ticks
from wirestream.runtime.spark.background import BackgroundLoop
from wirestream.apps.ticker import SYMBOLS, ticks

pytestmark = pytest.mark.spark

TICKS = 20_000
WATERMARK = datetime.timedelta(seconds=10)


def expected_windows(count: int) -> dict[tuple[datetime.datetime, str], dict[str, Any]]:
    """One-minute windows per symbol that the final watermark has closed."""
    groups: dict[tuple[datetime.datetime, str], list[tuple[float, int]]] = defaultdict(list)
    latest = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    for raw in ticks(count):
        tick = msgpack.unpackb(raw, timestamp=3)
        ts = tick["ts"]
        latest = max(latest, ts)
        start = ts.replace(second=0, microsecond=0)
        groups[(start, tick["symbol"])].append((tick["price"], tick["qty"]))
    closed = latest - WATERMARK
    result = {}
    for (start, symbol), trades in groups.items():
        if start + datetime.timedelta(minutes=1) <= closed:
            volume = sum(q for _, q in trades)
            result[(start, symbol)] = {
                "trades": len(trades),
                "volume": volume,
                "vwap": sum(p * q for p, q in trades) / volume,
                "low": min(p for p, _ in trades),
                "high": max(p for p, _ in trades),
            }
    return result


def test_ticks_are_deterministic_msgpack_trades_in_market_time() -> None:
    first = [msgpack.unpackb(raw, timestamp=3) for raw in ticks(100)]
    assert first == [msgpack.unpackb(raw, timestamp=3) for raw in ticks(100)]
    assert {tick["symbol"] for tick in first} <= set(SYMBOLS)
    assert all(isinstance(tick["ts"], datetime.datetime) for tick in first)


def test_demo_pipeline_writes_the_windows_computed_by_hand(spark: Any, tmp_path: Path) -> None:
    background = BackgroundLoop("test ticker")
    options, close = rsocket_ticker(background, TICKS)
    try:
        query = start_query(spark, "rsocket", options, tmp_path, batch=5_000)
        try:
            assert watch(query, TICKS, timeout=120, clock=Clock())
        finally:
            query.stop()
    finally:
        close()
        background.close()
    rows = spark.read.parquet(str(tmp_path / "windows")).collect()
    got = {
        (row.window_start.astimezone(datetime.timezone.utc), row.symbol): row.asDict()
        for row in rows
    }
    want = expected_windows(TICKS)
    assert len(want) >= 3 * len(SYMBOLS)  # the run spans several closed minutes
    assert set(got) == set(want)
    for key, values in want.items():
        row = got[key]
        assert (row["trades"], row["volume"], row["low"], row["high"]) == (
            values["trades"],
            values["volume"],
            values["low"],
            values["high"],
        ), key
        assert row["vwap"] == pytest.approx(values["vwap"], rel=1e-12)
    # The chart's windows: from Spark's rows (what `make demo` draws) as computed without
    # Spark (what tests/project/test_demo_chart.py draws).
    drawn = [
        (w.symbol, w.start, w.trades, w.volume, w.low, w.high) for w in windows_from_rows(rows)
    ]
    assert drawn == [(w.symbol, w.start, w.trades, w.volume, w.low, w.high)
                     for w in windows_from_ticks(ticks(TICKS))]  # fmt: skip
