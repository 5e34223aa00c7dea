"""A placement whose CEL exhausts its cost budget on every cluster does not stall the worker.

Reaching the 1,000,000 cost limit takes a sizeable fraction of a second per cluster in Python. The
worker does those verdicts ahead of the evaluation in short steps (`SchedulerProcessor.prepare`),
so while it works through them its event loop keeps turning: `/healthz` answers in between (and so
do the group heartbeats), and the placement is then decided as OCM decides it (no cluster matches).

What is measured is the loop turning, not a time: how often `/healthz` answered while the CEL work
went on, and the longest stall as a share of that work. A loaded machine slows the verdicts and the
answers alike; a worker that did the work in one go answers once and stalls for all of it.
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
MIN_ANSWERS = CLUSTERS // 2  # each step does at least one cluster's verdict, then pauses
MAX_STALL_SHARE = 0.5  # the longest stall, as a share of the whole CEL work


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
        # the loop turned again and again while the verdicts were worked through ...
        assert len(answered) >= MIN_ANSWERS, f"/healthz answered {len(answered)} times in {took:.2f} s"
        # ... and never stood still for a large part of that work
        stall = max(gaps, default=took)
        assert stall < MAX_STALL_SHARE * took, f"the loop stood still {stall:.2f} s of {took:.2f} s"
