"""The bridge's client-side limit on the hub (client-go's token bucket): `burst` requests at once,
then `qps` per second; each request reports how long it waited, which the bridge counts in
`fleetplace_hub_rate_limit_wait_seconds_total`."""

from __future__ import annotations

import asyncio

from fleetplace.services.hub.api import TokenBucket


async def test_requests_beyond_the_burst_wait_for_tokens_and_say_how_long() -> None:
    bucket = TokenBucket(qps=20, burst=3)
    waits = sorted(await asyncio.gather(*(bucket.take() for _ in range(7))))
    # 3 tokens at once, then one per 1/20 s: the n-th request after the burst waits n/20 s at least
    for n, waited in enumerate(waits[3:], start=1):
        assert waited >= n / 20 * 0.99, waits
    assert sum(waits) >= (1 + 2 + 3 + 4) / 20 * 0.99
