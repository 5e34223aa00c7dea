"""The running bridge writes the scheduler's decisions back: records on `decisions` and
`sigmc-placement-decisions` (the embedded broker) reach the real hub as PlacementDecisions, in
shadow mode as the slices and in replace mode as OCM's pages and Placement status."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.services.hub.kinds import HUB_KINDS
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ControlPlane
from tests.hub.slices import diff, ocm_pages, sigmc_slices
from tests.hub.test_bridge import eventually, running, settings_for
from tests.hub.test_writeback import make_placement, new_namespace
from tests.scheduler.harness import Bus

pytestmark = pytest.mark.integration

_OCM = "/apis/cluster.open-cluster-management.io/v1beta1"
_SIGMC = "/apis/multicluster.x-k8s.io/v1alpha1"


async def publish(bus: Bus, key: str, groups: Any, seq: int, before: Any = ()) -> None:
    """The records the scheduler publishes for one decision: the diff, its slices and a tombstone
    for each slice of the decision `before` it that it no longer has."""
    namespace = key.partition("/")[0]
    await bus.send("decisions", key, encode_json(diff(key, groups, seq).to_value()))
    made = sigmc_slices(key, groups, {}, seq)
    for s in made:
        await bus.send("sigmc-placement-decisions", f"{namespace}/{s['metadata']['name']}", encode_json(s))
    for s in sigmc_slices(key, before, {}, seq)[len(made) :] if before else []:
        await bus.send("sigmc-placement-decisions", f"{namespace}/{s['metadata']['name']}", None)


def clusters_on_hub(hub: ControlPlane, base: str, namespace: str, of: str) -> list[str]:
    items = hub.request("GET", f"{base}/namespaces/{namespace}/placementdecisions")["items"]
    names = []
    for obj in sorted(items, key=lambda o: o["metadata"]["name"]):
        entries = obj.get("decisions") if of == "sigmc" else (obj.get("status") or {}).get("decisions")
        for e in entries or []:
            names.append(e["clusterProfileRef"]["name"] if of == "sigmc" else e["clusterName"])
    return sorted(names)


@pytest.mark.parametrize("mode", ["shadow", "replace"])
async def test_the_running_bridge_writes_published_decisions_onto_the_hub(
    hub: ControlPlane, broker: str, topics: Topics, mode: str
) -> None:
    namespace = new_namespace(hub)
    make_placement(hub, namespace)
    key = f"{namespace}/web"
    base, of = (_SIGMC, "sigmc") if mode == "shadow" else (_OCM, "ocm")
    first = [("", 0, [f"c{i:03d}" for i in range(120)])]
    then = [("", 0, [f"c{i:03d}" for i in range(60, 130)])]
    async with (
        Bus(broker, topics) as bus,
        running(settings_for(broker, topics.prefix, hub, hub_mode=mode)) as bridge,
    ):
        await publish(bus, key, first, 1)

        async def written(groups: Any) -> bool:
            return clusters_on_hub(hub, base, namespace, of) == sorted(c for _, _, cs in groups for c in cs)

        await eventually(lambda: written(first), "the first decision on the hub")
        await publish(bus, key, then, 2, before=first)
        await eventually(lambda: written(then), "the second decision on the hub")
        if mode == "replace":  # the Placement's status is written after its pages

            async def status_written() -> bool:
                placement = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")
                return bool((placement.get("status") or {}).get("numberOfSelectedClusters") == 70)

            await eventually(status_written, "the Placement's status after the second decision")

        def sent(request: str) -> float:
            value = bridge.registry.get_sample_value("fleetplace_hub_requests_total", {"request": request})
            return value or 0.0

        # what it asked of the hub, counted: a watch per kind, the pages or slices created, then
        # updated for the second decision
        assert sent("watch") >= len(HUB_KINDS)
        assert sent("create") >= 1 and sent("update") >= 1
    if mode == "replace":
        pages = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placementdecisions")["items"]
        assert [p["metadata"]["name"] for p in pages] == [p["metadata"]["name"] for p in ocm_pages(key, then)]
        status = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")["status"]
        assert status["numberOfSelectedClusters"] == 70
