"""SIG-Multicluster PlacementDecision slices from the scheduler: published exactly when a
decision's clusters or groups change, a tombstone for every slice no longer needed, each decision
with its reason."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

import pytest

from fleetplace.services.scheduler.core import SchedulerOptions, SchedulerProcessor
from fleetplace.shared.bus.codec import decode_object
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import Topics
from tests.api.profiles import profile_of
from tests.placement.builders import NOW
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

SEQ = "fleetplace.dev/decision-seq"


def profile(name: str, healthy: bool = True) -> dict[str, Any]:
    doc = profile_of(cluster(name), "ns1")
    doc["status"]["conditions"][0]["status"] = "True" if healthy else "False"
    return doc


def union(slices: Mapping[str, dict[str, Any]], placement_name: str) -> list[str]:
    mine = sorted(
        (
            s
            for s in slices.values()
            if s["metadata"]["labels"]["multicluster.x-k8s.io/decision-key"] == placement_name
        ),
        key=lambda s: int(s["metadata"]["labels"]["multicluster.x-k8s.io/decision-index"]),
    )
    return [d["clusterProfileRef"]["name"] for s in mine for d in s["decisions"]]


# ---- the processor's rule -----------------------------------------------------------------------------


def _processor() -> SchedulerProcessor:
    p = SchedulerProcessor(SchedulerOptions(sigmc=True))
    for o in base_fleet():
        key = o["metadata"]["name"] if o["kind"] == "ManagedClusterSet" else "ns1/prod"
        p.apply("clustersets" if o["kind"] == "ManagedClusterSet" else "clustersetbindings", key, o)
    return p


def _publish(p: SchedulerProcessor) -> dict[str, dict[str, Any] | None]:
    out: dict[str, dict[str, Any] | None] = {}
    for diff in p.evaluate(NOW):
        pending = p.take_pending(diff["placement"])
        out.update(p.sigmc_changes(diff["placement"], pending))
    return out


def test_slices_shrink_with_tombstones_and_a_deleted_placement_leaves_none() -> None:
    p = _processor()
    for i in range(230):
        p.apply("cluster-profiles", f"ns1/c{i:03d}", profile(f"c{i:03d}"))
    p.apply("placements", "ns1/web", placement("ns1", "web"))
    first = _publish(p)
    assert sorted(first) == ["ns1/web-0", "ns1/web-1", "ns1/web-2"]
    assert [len(s["decisions"]) for s in first.values() if s] == [100, 100, 30]
    for i in range(120):
        p.apply("cluster-profiles", f"ns1/c{i:03d}", profile(f"c{i:03d}", healthy=False))
    second = _publish(p)
    assert second["ns1/web-2"] is None  # 110 clusters: two slices, the third a tombstone
    assert [len(s["decisions"]) for k, s in sorted(second.items()) if s] == [100, 10]
    p.apply("placements", "ns1/web", None)
    third = _publish(p)
    assert third == {"ns1/web-0": None, "ns1/web-1": None}


def test_a_change_of_status_alone_publishes_no_slice() -> None:
    p = _processor()
    for i in range(3):
        p.apply("cluster-profiles", f"ns1/c{i}", profile(f"c{i}"))
    p.apply("placements", "ns1/web", placement("ns1", "web", numberOfClusters=5))
    assert len(_publish(p)) == 1
    # five wanted, three there: the status says so; a new generation with the same answer changes
    # the status (observed generation) but not the clusters
    again = placement("ns1", "web", numberOfClusters=4)
    p.apply("placements", "ns1/web", again)
    diffs = p.evaluate(NOW)
    assert diffs, "the status changed: a diff is published"
    assert p.sigmc_changes("ns1/web", p.take_pending("ns1/web")) == []


def test_references_name_the_profile_namespace_or_the_operators_setting() -> None:
    p = SchedulerProcessor(SchedulerOptions(sigmc=True, sigmc_cluster_namespace="inventory"))
    doc = profile("from-profile")
    doc["metadata"]["namespace"] = "fleet-a"
    p.apply("cluster-profiles", "fleet-a/from-profile", doc)
    p.apply("clusters", "managed", cluster("managed"))
    assert p.profile_namespace("from-profile", "ns1") == "fleet-a"
    assert p.profile_namespace("managed", "ns1") == "inventory"


# ---- on the bus ---------------------------------------------------------------------------------------


@pytest.mark.integration
async def test_the_worker_publishes_slices_exactly_when_the_decision_changes(
    broker: str, topics: Topics
) -> None:
    slices: dict[str, dict[str, Any]] = {}
    records: list[tuple[str, dict[str, Any] | None]] = []
    reader = BroadcastReader(broker, [topics.sigmc_placement_decisions])
    await reader.start()

    async def follow() -> None:
        while True:
            for r in (await reader.poll()).records:
                key = r.key.decode() if isinstance(r.key, bytes) else str(r.key)
                value = decode_object(r.value)
                records.append((key, value))
                if value is None:
                    slices.pop(key, None)
                else:
                    slices[key] = value

    task = asyncio.create_task(follow())
    try:
        async with (
            Bus(broker, topics) as bus,
            running(settings_for(broker, topics.prefix, sigmc_decisions=True)),
        ):
            await bus.publish(*base_fleet(), *[profile(f"c{i:03d}") for i in range(150)])
            await bus.publish(placement("ns1", "web"))
            await bus.wait_for(
                lambda: union(slices, "web") == bus.latest().get("ns1/web", {}).get("decisions"),
                what="the first slices",
            )
            assert sorted(slices) == ["ns1/web-0", "ns1/web-1"]
            assert all(d["reason"].startswith("rank ") for s in slices.values() for d in s["decisions"])
            # 70 profiles turn unhealthy: 80 clusters, one slice, a tombstone for the other
            await bus.publish(*[profile(f"c{i:03d}", healthy=False) for i in range(70)])
            await bus.wait_for(lambda: len(bus.latest()["ns1/web"]["decisions"]) == 80, what="80 clusters")
            await bus.wait_for(
                lambda: union(slices, "web") == bus.latest()["ns1/web"]["decisions"],
                what="the slices to follow",
            )
            assert sorted(slices) == ["ns1/web-0"]
            assert ("ns1/web-1", None) in records
            # every slice record was written for a diff that changed the clusters
            changed, previous = set(), None
            for d in sorted(bus.decisions, key=lambda d: d["seq"]):
                if d["placement"] == "ns1/web":
                    if d["decisions"] != previous:
                        changed.add(d["seq"])
                    previous = d["decisions"]
            written = {int(v["metadata"]["annotations"][SEQ]) for _, v in records if v is not None}
            assert written == changed
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await reader.stop()


@pytest.mark.integration
async def test_no_slice_is_written_unless_asked_for(broker: str, topics: Topics) -> None:
    async with Bus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.publish(*base_fleet(), profile("c1"), placement("ns1", "web"))
        await bus.wait_for(lambda: "ns1/web" in bus.latest(), what="the decision")
    async with BroadcastReader(broker, [topics.sigmc_placement_decisions]) as reader:
        assert await reader.read_to_end() == []
