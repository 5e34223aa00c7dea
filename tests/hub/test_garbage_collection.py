"""A Placement deleted on a hub takes the PlacementDecisions fleetplace wrote for it in replace
mode. Kubernetes' garbage collector removes them (kube-controller-manager runs beside the API
server here, as on every real hub): fleetplace writes each page owned by its Placement, as OCM's
controller does, and does not write them again once the Placement is gone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ApiError, ControlPlane, garbage_collector
from tests.hub.conftest import _binaries
from tests.hub.test_bridge import eventually, running, settings_for, topic_records
from tests.hub.test_status import create_fleet
from tests.hub.test_writeback import new_namespace, owned_by
from tests.scheduler.harness import running as running_scheduler
from tests.scheduler.harness import settings_for as scheduler_settings

pytestmark = pytest.mark.integration

_OCM = "/apis/cluster.open-cluster-management.io/v1beta1"


@pytest.fixture(scope="module")
def collector(hub: ControlPlane) -> Iterator[int]:
    with garbage_collector(hub, binaries=_binaries()) as pid:
        yield pid


def pages(hub: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    answer = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placementdecisions")
    return sorted(answer["items"], key=lambda p: p["metadata"]["name"])


def chosen(page: dict[str, Any]) -> list[str]:
    return sorted(d["clusterName"] for d in (page.get("status") or {}).get("decisions") or [])


async def test_a_deleted_placement_takes_the_decisions_fleetplace_wrote_with_it(
    hub: ControlPlane, collector: int, broker: str, topics: Topics
) -> None:
    namespace = new_namespace(hub)
    tag = f"g{namespace}"
    create_fleet(hub, namespace, tag)  # three clusters, the third tainted: web takes the first two
    key = f"{namespace}/web"
    placement = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")
    bridge_settings = settings_for(broker, topics.prefix, hub, hub_mode="replace")
    async with (
        running(bridge_settings) as bridge,
        running_scheduler(scheduler_settings(broker, topics.prefix)),
    ):

        async def decided() -> bool:
            return [chosen(p) for p in pages(hub, namespace)] == [[f"{tag}-c1", f"{tag}-c2"]]

        await eventually(decided, "fleetplace's decision written as OCM's page")
        (page,) = pages(hub, namespace)
        assert page["metadata"]["ownerReferences"] == owned_by(placement)

        hub.request("DELETE", f"{_OCM}/namespaces/{namespace}/placements/web")

        async def collected() -> bool:
            return not pages(hub, namespace)

        await eventually(collected, "the garbage collector to remove the deleted Placement's page")

        async def deletion_published() -> int | None:
            for record_key, value in reversed(await topic_records(broker, topics.decisions)):
                if record_key == key:
                    return int(value["seq"]) if value is not None and value.get("deleted") else None
            return None

        final = await eventually(deletion_published, "the scheduler's final diff for the deleted Placement")

        async def heard() -> bool:
            return bridge.writeback.published.seq(key) == final and key not in bridge.writeback.dirty

        await eventually(heard, "the bridge to hear the deletion and have nothing left to write")
    # the bridge, stopped after it heard the deletion, wrote nothing back: a page without its
    # owner would never be collected
    assert pages(hub, namespace) == []
    with pytest.raises(ApiError) as gone:
        hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")
    assert gone.value.status == 404
