"""The explorer's Rollouts pages over a known rollout history on the test broker.

A scheduler places a five-cluster fleet in three decision groups; a rollout worker (on a clock
the test moves) rolls `apps/web` out over them as reports arrive — the canary, its soak ending on
the timer, a wave with one cluster progressing and one failing — and `apps/batch` is rolled out
at once and deleted. The pages must show what the rollout state says and every diff.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from fleetplace.services.explorer import Explorer
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.publish import Document, plan_document, to_outgoing
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings
from fleetplace.shared.testing import running_scheduler
from tests.explorer.pages import Elements
from tests.rollout_worker.builders import CANARY, report, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

G = "cluster.open-cluster-management.io"
T = "2026-01-01T00:%02d:00Z"
RINGS = {"c1": "canary", "c2": "wave", "c3": "wave", "c4": "", "c5": ""}
REPORTS = {"c1": "Succeeded", "c2": "Progressing", "c3": "Failed"}


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


async def _get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.text()


def expected_statuses(state: dict[str, Any], reports: dict[str, str]) -> dict[str, str]:
    """Per placed cluster: the status the state lists it with, else the one reported, else ToApply."""
    (placement,) = state["placements"]
    listed = {
        e["clusterName"]: e["status"]
        for field in ("clustersToRollout", "clustersTimeOut")
        for e in placement[field]
    }
    return {c: listed.get(c) or reports.get(c) or "ToApply" for c in RINGS}


def counts_of(attr: str) -> dict[str, int]:
    return {s: int(n) for s, n in (part.split(":") for part in attr.split(",")) if int(n)}


@pytest.fixture
async def history(broker: str, topics: Topics) -> AsyncIterator[tuple[RolloutBus, Settings]]:
    """The rollout history, played; the bus keeps reading, the workers keep running."""
    worker_settings = settings_for(broker, topics.prefix, clock="topic")
    group = worker_settings.rollout_group_id
    async with (
        running_scheduler(broker, topics.prefix),
        RolloutBus(broker, topics) as bus,
        running(worker_settings),
    ):
        await bus.set_clock(T % 0, group)
        await publish(broker, topics, fleet())
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
        await bus.wait_for(lambda: (bus.last("apps/web") or {}).get("clusters") == ["c1"], what="the canary")
        await bus.report("apps/web/c1", report("Succeeded", at=T % 1))
        await bus.wait_for(lambda: (bus.last("apps/web") or {}).get("nextRecheckAt") == T % 6, what="soak")
        await bus.set_clock(T % 6, group)
        await bus.wait_for(lambda: (bus.last("apps/web") or {}).get("clusters") == ["c2", "c3"], what="wave")
        await bus.report("apps/web/c2", report("Progressing", at=T % 6))
        await bus.report("apps/web/c3", report("Failed", at=T % 7))
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
        await bus.wait_for(lambda: (bus.last("apps/batch") or {}).get("deleted") is True, what="deletion")
        await bus.wait_for(
            lambda: "apps/batch" in bus.state and bus.state["apps/batch"] is None, what="tombstone"
        )
        await bus.wait_for(
            lambda: (bus.state.get("apps/web") or {}).get("seq") == (bus.last("apps/web") or {}).get("seq"),
            what="the state of the last diff",
        )
        yield bus, Settings(kafka=KafkaSettings(bootstrap_servers=broker), topic_prefix=topics.prefix)


async def test_rollout_pages_show_the_state_and_every_diff(history: tuple[RolloutBus, Settings]) -> None:
    bus, settings = history
    state = bus.state["apps/web"]
    assert state is not None
    expected = expected_statuses(state, REPORTS)
    assert expected == {
        "c1": "Succeeded",
        "c2": "Progressing",
        "c3": "Failed",
        "c4": "ToApply",
        "c5": "ToApply",
    }
    async with Explorer(settings, port=0) as explorer:
        await explorer.wait_caught_up(30)

        status, text = await _get(explorer.url + "/rollouts")
        assert status == 200
        rows = {a["data-rollout"]: a for a in Elements(text).with_attr("data-rollout")}
        assert set(rows) == {"apps/web", "apps/batch"}
        web = rows["apps/web"]
        assert counts_of(web["data-counts"]) == dict(Counter(expected.values()))
        assert web["data-complete"] == str(int(state["complete"]))
        assert web["data-breach"] == str(int(state["maxFailureBreach"]))
        assert "Deleted" in Elements(text).text

        status, text = await _get(explorer.url + "/rollouts/apps/web")
        assert status == 200
        page = Elements(text)
        shown = {a["data-cluster"]: a["data-status"] for a in page.with_attr("data-status")}
        assert shown == expected
        listed = {
            e["clusterName"]: e["timeOutTime"]
            for e in state["placements"][0]["clustersToRollout"]
            if e["timeOutTime"]
        }
        deadlines = {a["data-deadline"] for a in page.with_attr("data-deadline")}
        assert set(listed.values()) <= deadlines  # the soak ends and deadlines count down
        diffs = sorted(bus.of("apps/web"), key=lambda d: d["seq"])
        assert [d["seq"] for d in diffs] == list(range(1, len(diffs) + 1))
        timeline = [(int(a["data-seq"]), a["data-trigger"]) for a in page.with_attr("data-seq")]
        assert timeline == [(d["seq"], d["trigger"]["kind"]) for d in reversed(diffs)]
        assert ("recheck") in {kind for _, kind in timeline}  # the soak ended on the timer
        assert "+c2" in page.text and "+c3" in page.text and "−c1" in page.text
        assert "/placements/apps/web" in {a["href"] for a in page.with_attr("href")}

        _, api = await _get(explorer.url + "/api/rollouts/apps/web")
        body = orjson.loads(api)
        assert body["state"] == state
        assert body["timeline"] == diffs
        assert {c["cluster"]: c["status"] for c in body["clusters"]} == expected

        _, text = await _get(explorer.url + "/placements/apps/web")
        assert "/rollouts/apps/web" in {a["href"] for a in Elements(text).with_attr("href")}
        status, _ = await _get(explorer.url + "/rollouts/apps/nothing")
        assert status == 404

        # live: a new report becomes a new diff, and the page shows it without a restart
        before = len(diffs)
        await bus.report("apps/web/c2", report("Succeeded", at=T % 8))
        for _ in range(200):
            if len(explorer.store.rollouts.timeline("apps/web")) > before:
                break
            await asyncio.sleep(0.05)
        _, text = await _get(explorer.url + "/rollouts/apps/web")
        newest = Elements(text).with_attr("data-seq")[0]
        assert (int(newest["data-seq"]), newest["data-trigger"]) == (before + 1, "status")
