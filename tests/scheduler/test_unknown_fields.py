"""The worker, like the API server, drops the fields no schema knows and counts them."""

from __future__ import annotations

import aiohttp
import pytest

from fleetplace.shared.bus.topics import Topics
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

pytestmark = pytest.mark.integration


async def test_a_misspelt_field_is_dropped_and_counted_and_the_placement_decides_without_it(
    broker: str, topics: Topics
) -> None:
    async with Bus(broker, topics) as bus, running(settings_for(broker, topics.prefix)) as worker:
        assert worker.http is not None
        metrics = f"{worker.http.url}/metrics"
        await bus.publish(*base_fleet(), cluster("c1"), cluster("c2"), cluster("c3"))
        # `numberOfCluster` (no s) is not `numberOfClusters`: every cluster is selected
        await bus.publish(placement("ns1", "typo", numberOfCluster=2))
        await bus.wait_for(lambda: "ns1/typo" in bus.latest(), what="the decision")
        assert bus.latest()["ns1/typo"]["decisions"] == ["c1", "c2", "c3"]
        assert bus.deadletters == []
        async with aiohttp.ClientSession() as http, http.get(metrics) as r:
            text = await r.text()
        assert 'fleetplace_unknown_fields_dropped_total{topic="placements"} 1.0' in text
        assert 'fleetplace_unknown_fields_dropped_total{topic="clusters"}' not in text
