"""The one rate limit every request of the bridge to the API server passes through.

A token bucket, as Kubernetes clients limit themselves: `burst` requests may go at once, then
`qps` per second; a request that finds the bucket empty reserves the next token and waits for
it, so waiting requests go out in the order they asked. The defaults are OCM's controllers'
(50 requests per second, bursts of 100). The clock and the sleep are parameters, so the limit is
tested on a clock the test moves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

__all__ = ["DEFAULT_BURST", "DEFAULT_QPS", "TokenBucket"]

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100


class TokenBucket:
    def __init__(
        self,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a rate limit needs qps > 0 and burst >= 1, not qps={qps} burst={burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)  # may go below 0: tokens reserved by waiting requests
        self._at = clock()

    def reserve(self) -> float:
        """Take a token; the seconds until it is there (0 when the bucket had one)."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
