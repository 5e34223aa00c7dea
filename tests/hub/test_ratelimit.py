"""The bridge's rate limit, on a clock the test moves: a burst goes at once, then qps per second,
and no window ever lets more through than burst + qps × its length."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetplace.services.hub.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_defaults_are_ocms_and_a_full_burst_goes_without_waiting() -> None:
    clock = Clock()
    bucket = TokenBucket(clock=clock, sleep=clock.sleep)
    assert (bucket.qps, bucket.burst) == (50.0, 100)
    assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
    assert bucket.reserve() == pytest.approx(1 / 50)
    assert bucket.reserve() == pytest.approx(2 / 50)


def test_waiting_requests_go_out_one_per_token_in_order() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock, sleep=clock.sleep)

    async def five() -> None:
        for _ in range(5):
            await bucket.acquire()

    asyncio.run(five())
    assert clock.slept == [pytest.approx(0.1)] * 3
    assert clock.now == pytest.approx(0.3)


def test_an_idle_bucket_refills_only_up_to_its_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        bucket.reserve()
    clock.now = 100.0
    assert [bucket.reserve() for _ in range(3)] == [0.0] * 3
    assert bucket.reserve() > 0


def test_a_limit_without_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="qps > 0"):
        TokenBucket(qps=0)


@given(
    qps=st.floats(min_value=0.5, max_value=100),
    burst=st.integers(min_value=1, max_value=20),
    gaps=st.lists(st.floats(min_value=0, max_value=0.5), min_size=1, max_size=80),
)
def test_no_window_lets_more_requests_through_than_burst_plus_qps_times_its_length(
    qps: float, burst: int, gaps: list[float]
) -> None:
    clock = Clock()
    bucket = TokenBucket(qps=qps, burst=burst, clock=clock, sleep=clock.sleep)
    sent: list[float] = []
    asked = 0.0
    for gap in gaps:
        asked += gap
        clock.now = max(clock.now, asked)
        sent.append(clock.now + bucket.reserve())
    for i, start in enumerate(sent):
        for j in range(i, len(sent)):
            assert j - i + 1 <= burst + qps * (sent[j] - start) + 1e-6
