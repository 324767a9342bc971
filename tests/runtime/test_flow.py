"""Flow control (runtime.flow): the laws every engine relies on, as properties.

- a sender never has more in flight than granted, for any interleaving of grants and
  sends (outbound: we refuse to overrun; inbound: the peer's overrun is an error);
- non-positive grants are refused (RS 3.9; RSocket request-n "Only positive values");
- windows saturate at their cap and never overflow (RS 3.17 for 2^63-1; RSocket 2^31-1
  is not an "unbounded" magic value);
- a limitRate-style replenisher never has more than its batch outstanding.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wirestream.runtime.errors import (
    DemandExceeded,
    InvalidGrant,
    LocalProtocolError,
    PeerExceededDemand,
    PeerInvalidGrant,
    RemoteProtocolError,
)
from wirestream.runtime.flow import LONG_MAX, RSOCKET_MAX_N, VARU64_MAX, Replenisher, Window

CAPS = st.sampled_from([RSOCKET_MAX_N, LONG_MAX, VARU64_MAX, 0xFFFF, 10])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("grant"), st.integers(1, 1 << 64)),
        st.tuples(st.just("send"), st.integers(0, 1 << 64)),
    ),
    max_size=60,
)


@given(cap=CAPS, ops=OPS)
def test_sender_never_has_more_in_flight_than_granted(cap: int, ops: list[tuple[str, int]]) -> None:
    window = Window.outbound_window(cap=cap)
    for op, amount in ops:
        if op == "grant":
            if amount > cap:
                with pytest.raises(PeerInvalidGrant):
                    window.grant(amount)
                continue
            window.grant(amount)
        elif window.can_consume(amount):
            window.consume(amount)
        else:
            before = window.available
            with pytest.raises(DemandExceeded):
                window.consume(amount)
            assert window.available == before  # a refused send changes nothing
        assert 0 <= window.available <= cap
        assert window.consumed <= window.granted


@given(cap=CAPS, ops=OPS)
def test_peer_overrun_is_a_remote_error_and_nothing_is_counted(
    cap: int, ops: list[tuple[str, int]]
) -> None:
    window = Window.inbound_window(cap=cap)
    for op, amount in ops:
        if op == "grant":
            window.grant(min(amount, cap))
        else:
            try:
                window.consume(amount)
            except PeerExceededDemand as error:
                assert isinstance(error, RemoteProtocolError)
        assert window.consumed <= window.granted


@given(amount=st.integers(max_value=0))
def test_rs_3_9_non_positive_request_is_refused(amount: int) -> None:
    with pytest.raises(InvalidGrant) as ours:
        Window.inbound_window(cap=LONG_MAX).grant(amount)
    assert isinstance(ours.value, LocalProtocolError)
    with pytest.raises(PeerInvalidGrant):
        Window.outbound_window(cap=LONG_MAX).grant(amount)


@given(grants=st.lists(st.integers(1, LONG_MAX), min_size=1, max_size=20))
def test_rs_3_17_demand_saturates_at_long_max_and_is_then_unbounded(grants: list[int]) -> None:
    window = Window.outbound_window(cap=LONG_MAX, unbounded_at_cap=True)
    for amount in grants:
        window.grant(amount)
    assert window.available == min(LONG_MAX, sum(grants))
    if sum(grants) >= LONG_MAX:
        assert window.unbounded
        window.consume(10**6)
        assert window.unbounded and window.available == LONG_MAX


def test_rsocket_request_n_saturates_at_2_31_minus_1_without_a_magic_value() -> None:
    window = Window.outbound_window(cap=RSOCKET_MAX_N)
    window.grant(RSOCKET_MAX_N)
    window.grant(5)
    assert window.available == RSOCKET_MAX_N and not window.unbounded
    window.consume(1)
    assert window.available == RSOCKET_MAX_N - 1


@given(
    batch=st.integers(1, 64),
    low_tide=st.integers(1, 64),
    deliveries=st.lists(st.integers(1, 8), max_size=100),
)
def test_replenisher_keeps_outstanding_demand_within_the_batch(
    batch: int, low_tide: int, deliveries: list[int]
) -> None:
    low_tide = min(low_tide, batch)
    replenisher = Replenisher(batch, low_tide)
    window = Window.inbound_window(cap=LONG_MAX, initial=batch)
    buffered = 0
    for count in deliveries:
        arrived = window.take_up_to(count)  # the peer sends what it may
        buffered += arrived
        delivered, buffered = buffered, 0  # the application takes them all
        grant = replenisher.delivered(delivered) if delivered else 0
        if grant:
            window.grant(grant)
        # granted-but-unsent plus buffered never exceeds one batch
        assert window.available + buffered <= batch


def test_replenisher_flush_returns_everything_delivered_and_not_yet_granted() -> None:
    replenisher = Replenisher(100)  # grants back at 75 delivered
    assert replenisher.delivered(30) == 0
    assert replenisher.flush() == 30
    assert replenisher.flush() == 0
    assert replenisher.delivered(74) == 0  # the flushed 30 no longer count


# --- what mutation testing found untested (docs/mutation.md) ----------------------------


def test_window_starts_empty_with_a_positive_cap_and_bounded_by_default() -> None:
    """A window holds nothing until granted; a cap must be positive (1 is); demand is
    unbounded at the cap only when asked (RS 3.17 windows)."""
    with pytest.raises(ValueError, match="^cap must be positive$"):
        Window(cap=0, outbound=True)
    one = Window(cap=1, outbound=True)
    assert (one.available, one.granted, one.consumed) == (0, 0, 0)
    assert not Window(cap=3, outbound=False, initial=3).unbounded
    inbound = Window.inbound_window(cap=3, unbounded_at_cap=True, initial=3)
    assert inbound.unbounded and inbound.outbound is False
    assert Window.outbound_window(cap=3).outbound is True


def test_window_counts_every_consumption_one_by_default() -> None:
    """Consumed totals are kept whether the window is bounded or unbounded; the default
    amount is one item."""
    window = Window.outbound_window(cap=10, initial=2)
    window.consume()
    assert (window.available, window.consumed) == (1, 1)
    assert window.can_consume()
    window.consume(1)
    assert window.consumed == 2 and not window.can_consume()
    unbounded = Window.inbound_window(cap=5, unbounded_at_cap=True, initial=5)
    unbounded.consume(2)
    unbounded.consume(3)
    assert unbounded.consumed == 5 and unbounded.unbounded
    assert unbounded.take_up_to(100) == 100
    with pytest.raises(ValueError, match="^amount must not be negative$"):
        window.consume(-1)


def test_window_errors_say_who_sent_or_granted_what() -> None:
    """Bad input gets a clear error: which side overran, by how much, and a grant's
    bounds."""
    with pytest.raises(DemandExceeded, match="^we sent 3 with only 2 granted$"):
        Window.outbound_window(cap=10, initial=2).consume(3)
    with pytest.raises(PeerExceededDemand, match="^the peer sent 3 with only 2 granted$"):
        Window.inbound_window(cap=10, initial=2).consume(3)
    with pytest.raises(InvalidGrant, match="^a grant must be between 1 and 10, got 0$"):
        Window.inbound_window(cap=10).grant(0)


def test_window_repr_shows_side_available_and_cap() -> None:
    assert repr(Window.outbound_window(cap=9, initial=4)) == "<Window outbound available=4 cap=9>"
    unbounded = Window.inbound_window(cap=5, unbounded_at_cap=True, initial=5)
    assert repr(unbounded) == "<Window inbound available=unbounded cap=5>"


def test_replenisher_low_tide_defaults_to_three_quarters_of_the_batch() -> None:
    """Like rsocket-java's ``limitRate(n)``: more is requested once 75% of a batch was
    delivered; the batch must be positive and the low tide within it."""
    assert (Replenisher(8).batch, Replenisher(8).low_tide) == (8, 6)
    assert Replenisher(5).low_tide == 4 and Replenisher(1).low_tide == 1
    with pytest.raises(ValueError, match="^batch must be positive$"):
        Replenisher(0)
    with pytest.raises(ValueError, match="^low_tide must not exceed batch$"):
        Replenisher(4, low_tide=5)


def test_replenisher_grants_back_what_was_delivered_once_low_tide_is_reached() -> None:
    replenisher = Replenisher(4, low_tide=3)
    assert [replenisher.delivered() for _ in range(4)] == [0, 0, 3, 0]
    assert replenisher.delivered(2) == 3
