"""A known rollout history for the explorer's tests, played on the test broker.

A scheduler places a five-cluster fleet in three decision groups (canary c1; wave c2, c3; the
rest c4, c5); a rollout worker on the `clock` topic rolls `apps/web` out over them with a
mandatory canary, a 5-minute soak and a 10-minute deadline: the canary succeeds, its soak ends on
the timer, and of the wave c2 is progressing and c3 has failed (the deployer says why). `apps/batch` is rolled out at
once and deleted.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.publish import Document, plan_document, to_outgoing
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import Settings
from tests.rollout_worker.builders import CANARY, report, rollout_object
from tests.rollout_worker.harness import RolloutBus

G = "cluster.open-cluster-management.io"
RINGS = {"c1": "canary", "c2": "wave", "c3": "wave", "c4": "", "c5": ""}
REPORTS = {"c1": "Succeeded", "c2": "Progressing", "c3": "Failed"}
FAILURE = "apply failed: cannot reach c3"  # the deployer's message with c3's Failed report


def at(start: datetime, minutes: int) -> str:
    return (start + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


def fleet() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "prod"}},
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": "apps", "name": "prod"},
            "spec": {"clusterSet": "prod"},
        },
    ]
    for name, ring in RINGS.items():
        labels = {f"{G}/clusterset": "prod", **({"ring": ring} if ring else {})}
        docs.append(
            {
                "apiVersion": f"{G}/v1",
                "kind": "ManagedCluster",
                "metadata": {"name": name, "labels": labels},
                "spec": {"hubAcceptsClient": True},
            }
        )
    groups = [
        {"groupName": g, "groupClusterSelector": {"labelSelector": {"matchLabels": {"ring": g}}}}
        for g in ("canary", "wave")
    ]
    docs.append(
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": "apps", "name": "web"},
            "spec": {"decisionStrategy": {"groupStrategy": {"decisionGroups": groups}}},
        }
    )
    return docs


async def publish(bootstrap: str, topics: Topics, docs: list[dict[str, Any]]) -> None:
    producer = make_producer(bootstrap)
    await start_client(producer)
    try:
        for i, doc in enumerate(docs):
            await send_all(producer, to_outgoing(plan_document(Document(f"test#{i}", doc)), topics))
    finally:
        await producer.stop()


def expected_statuses(state: dict[str, Any], reports: dict[str, str]) -> dict[str, str]:
    """Per placed cluster: the status the state lists it with, else the one reported, else ToApply."""
    (placement,) = state["placements"]
    listed = {
        e["clusterName"]: e["status"]
        for field in ("clustersToRollout", "clustersTimeOut")
        for e in placement[field]
    }
    return {c: listed.get(c) or reports.get(c) or "ToApply" for c in RINGS}


async def play(bus: RolloutBus, settings: Settings, start: datetime) -> None:
    """The history, with a scheduler and a rollout worker (clock `topic`) running on `bus`."""
    group = settings.rollout_group_id

    def last(key: str) -> dict[str, Any]:
        return bus.last(key) or {}

    await bus.set_clock(at(start, 0), group)
    await publish(bus.bootstrap, bus.topics, fleet())
    await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
    await bus.wait_for(lambda: last("apps/web").get("clusters") == ["c1"], what="the canary")
    await bus.report("apps/web/c1", report("Succeeded", at=at(start, 1)))
    await bus.wait_for(lambda: last("apps/web").get("nextRecheckAt") == at(start, 6), what="the soak")
    await bus.set_clock(at(start, 6), group)
    await bus.wait_for(lambda: last("apps/web").get("clusters") == ["c2", "c3"], what="the wave")
    await bus.report("apps/web/c2", report("Progressing", at=at(start, 6)))
    await bus.report("apps/web/c3", {**report("Failed", at=at(start, 7)), "message": FAILURE})
    await bus.wait_for(
        lambda: any(
            e["status"] == "Failed"
            for p in (bus.state.get("apps/web") or {}).get("placements", [])
            for e in p["clustersToRollout"]
        ),
        what="the failure",
    )
    await bus.send("rollouts", "apps/batch", rollout_object("apps/batch"))
    await bus.wait_for(lambda: bus.state.get("apps/batch") is not None, what="batch")
    await bus.send("rollouts", "apps/batch", None)
    await bus.wait_for(lambda: last("apps/batch").get("deleted") is True, what="the deletion")
    await bus.wait_for(
        lambda: "apps/batch" in bus.state and bus.state["apps/batch"] is None, what="tombstone"
    )
    await bus.wait_for(
        lambda: (bus.state.get("apps/web") or {}).get("seq") == last("apps/web").get("seq"),
        what="the state of the last diff",
    )
