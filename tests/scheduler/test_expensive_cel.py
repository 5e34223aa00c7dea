"""A placement whose CEL exhausts its cost budget on every cluster does not stall the worker.

Reaching the 1,000,000 cost limit takes a sizeable fraction of a second per cluster in Python. The
worker does those verdicts ahead of the evaluation in short steps (`SchedulerProcessor.prepare`),
so while it works through them its event loop keeps turning: `/healthz` answers promptly (and so
do the group heartbeats), and the placement is then decided as OCM decides it (no cluster matches).
"""

from __future__ import annotations

import asyncio
import itertools
import time

import aiohttp
import pytest

from fleetplace.shared.bus.topics import Topics
from tests.fuzz.hostile import EXPENSIVE_CEL
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

pytestmark = pytest.mark.integration

CLUSTERS = 12
MAX_HEALTHZ_S = 0.5


async def test_expensive_cel_leaves_the_worker_responsive(broker: str, topics: Topics) -> None:
    async with Bus(broker, topics) as bus, running(settings_for(broker, topics.prefix)) as worker:
        await bus.publish(*base_fleet(), *[cluster(f"c{i:02d}") for i in range(CLUSTERS)])
        await bus.publish(placement("ns1", "cheap"))
        await bus.wait_for(lambda: "ns1/cheap" in bus.latest(), what="the cheap placement decided")
        assert worker.http is not None
        url = f"{worker.http.url}/healthz"
        cel = [{"requiredClusterSelector": {"celSelector": {"celExpressions": [EXPENSIVE_CEL[0]]}}}]
        # the worker runs in this event loop: the longest gap between two answers of /healthz is
        # how long the loop stood still (what a heartbeat or a probe from outside would wait)
        answered: list[float] = []
        async with aiohttp.ClientSession() as http:
            started = time.monotonic()
            await bus.publish(placement("ns1", "hostile", predicates=cel))
            while "ns1/hostile" not in bus.latest():
                async with http.get(url) as r:
                    assert r.status == 200
                answered.append(time.monotonic())
                await asyncio.sleep(0.02)
                assert time.monotonic() - started < 120, "the hostile placement was never decided"
            took = time.monotonic() - started
        gaps = [b - a for a, b in itertools.pairwise(answered)]
        decision = bus.latest()["ns1/hostile"]
        assert decision["decisions"] == []  # over the cost limit: no cluster matches
        # the CEL work was long enough to have blocked the loop for well over the bound ...
        assert took > 2 * MAX_HEALTHZ_S, f"the CEL work took only {took:.2f} s: the test proves nothing"
        # ... yet the worker answered all along
        assert gaps and max(gaps) < MAX_HEALTHZ_S, f"the loop stood still {max(gaps, default=0):.2f} s"
