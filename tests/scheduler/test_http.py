"""The scheduler's HTTP surface: health, readiness, metrics and the debug endpoint."""

from __future__ import annotations

import aiohttp
import pytest

from fleetplace.shared.bus.topics import Topics
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

pytestmark = pytest.mark.integration


async def test_debug_endpoint_explains_a_live_placement_and_metrics_count_work(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix, debug_token="s3cret")
    async with Bus(broker, topics) as bus, running(settings) as worker:
        await bus.publish(*base_fleet(), cluster("c1", {"zone": "a"}), cluster("c2", {"zone": "b"}))
        pred = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}}}]
        await bus.publish(placement("ns1", "p", predicates=pred))
        await bus.wait_for(lambda: "ns1/p" in bus.latest(), what="decision")
        assert worker.http is not None
        url = worker.http.url
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{url}/healthz") as r:
                assert r.status == 200
            async with http.get(f"{url}/readyz") as r:
                assert r.status == 200
            async with http.get(f"{url}/debug/placements/ns1/p") as r:
                assert r.status == 401
            auth = {"Authorization": "Bearer s3cret"}
            async with http.get(f"{url}/debug/placements/ns1/p", headers=auth) as r:
                body = await r.json()
            assert body["decisions"] == ["c1"]
            assert body["explain"]["c2"]["filteredBy"] == "Predicate"
            assert body["explain"]["c1"]["selected"] is True
            async with http.get(f"{url}/debug/placements/ns1/nope", headers=auth) as r:
                assert r.status == 404
            async with http.get(f"{url}/metrics") as r:
                text = await r.text()
        assert "fleetplace_diffs_published_total 1.0" in text
        assert 'fleetplace_records_consumed_total{topic="clusters"} 2.0' in text
