"""SIG-Multicluster PlacementDecision slices from the scheduler: published exactly when a
decision's clusters or groups change or its slices on the topic are not the decision's (the output
turned on later), a tombstone for every slice no longer needed, each decision with its reason."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from fleetplace.services.auditor.audit import audit
from fleetplace.services.auditor.history import read_history
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


def _fleet(p: SchedulerProcessor, clusters: int = 3) -> None:
    for i in range(clusters):
        p.apply("cluster-profiles", f"ns1/c{i}", profile(f"c{i}"))
    p.apply("placements", "ns1/web", placement("ns1", "web"))


def test_a_decision_made_with_the_output_off_is_published_again_with_its_slices_once() -> None:
    off = SchedulerProcessor(SchedulerOptions())
    for o in base_fleet():
        key = o["metadata"]["name"] if o["kind"] == "ManagedClusterSet" else "ns1/prod"
        off.apply("clustersets" if o["kind"] == "ManagedClusterSet" else "clustersetbindings", key, o)
    _fleet(off)
    (first,) = off.evaluate(NOW)
    # a scheduler with the output on starts from the same topics: the decision, no slice
    on = _processor()
    _fleet(on)
    on.apply("decisions", "ns1/web", first)
    assert not on.slices_current("ns1/web")
    on.mark_all("startup")
    (again,) = on.evaluate(NOW)
    assert (again["seq"], again["decisions"], again["added"], again["removed"]) == (
        2,
        first["decisions"],
        [],
        [],
    )
    written = on.sigmc_changes("ns1/web", on.take_pending("ns1/web"))
    assert [k for k, _ in written] == ["ns1/web-0"]
    piece = written[0][1]
    assert piece is not None and piece["metadata"]["annotations"][SEQ] == "2"
    assert union({k: v for k, v in written if v}, "web") == first["decisions"]
    assert on.slices_current("ns1/web")
    # the next start reads the slices back: nothing is published again
    restarted = _processor()
    _fleet(restarted)
    for diff in (first, again):
        restarted.apply("decisions", "ns1/web", diff)
    for key, value in written:
        restarted.apply("sigmc-placement-decisions", key, value)
    restarted.mark_all("startup")
    assert restarted.evaluate(NOW) == []


def test_slices_that_do_not_match_the_decision_are_rewritten_and_extra_ones_tombstoned() -> None:
    p = _processor()
    _fleet(p)
    (first,) = p.evaluate(NOW)
    made = dict(p.sigmc_changes("ns1/web", p.take_pending("ns1/web")))
    piece = made["ns1/web-0"]
    assert piece is not None
    # a slice left by an older, larger decision, and one with a cluster the decision does not have
    restarted = _processor()
    _fleet(restarted)
    restarted.apply("decisions", "ns1/web", first)
    wrong = {**piece, "decisions": piece["decisions"][:1]}
    extra = {**piece, "metadata": {**piece["metadata"], "name": "web-1"}}
    restarted.apply("sigmc-placement-decisions", "ns1/web-0", wrong)
    restarted.apply("sigmc-placement-decisions", "ns1/web-1", extra)
    restarted.mark_all("startup")
    (again,) = restarted.evaluate(NOW)
    written = dict(restarted.sigmc_changes("ns1/web", restarted.take_pending("ns1/web")))
    assert written["ns1/web-1"] is None
    rewritten = written["ns1/web-0"]
    assert rewritten is not None
    assert union({"ns1/web-0": rewritten}, "web") == again["decisions"] == first["decisions"]


def test_the_slices_of_a_placement_deleted_while_the_output_was_off_get_tombstones_once() -> None:
    p = _processor()
    _fleet(p)
    (first,) = p.evaluate(NOW)
    made = p.sigmc_changes("ns1/web", p.take_pending("ns1/web"))
    off = SchedulerProcessor(SchedulerOptions())
    _fleet(off)
    off.apply("decisions", "ns1/web", first)
    off.apply("placements", "ns1/web", None)
    (gone,) = off.evaluate(NOW)
    assert gone["deleted"]
    restarted = _processor()
    _fleet(restarted)
    restarted.apply("placements", "ns1/web", None)
    for diff in (first, gone):
        restarted.apply("decisions", "ns1/web", diff)
    for key, value in made:
        restarted.apply("sigmc-placement-decisions", key, value)
    restarted.mark_all("startup")
    assert restarted.evaluate(NOW) == []  # the deletion is published already
    assert restarted.orphan_slices() == [("ns1/web-0", 2)]
    assert restarted.orphan_slices() == [] and restarted.slices_current("ns1/web")


def test_a_slice_without_its_placement_label_is_refused() -> None:
    p = _processor()
    with pytest.raises(ValueError, match=re.escape("cluster.open-cluster-management.io/placement")):
        p.apply("sigmc-placement-decisions", "ns1/x-0", {"metadata": {"namespace": "ns1", "name": "x-0"}})


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


def _export(broker: str, topics: Topics, *args: str) -> Any:
    from fleetplace.services.cli import app

    argv = ["export", "placementdecisions", "--bootstrap", broker, "--prefix", topics.prefix, *args]
    return CliRunner().invoke(app, argv)


@pytest.mark.integration
async def test_turning_the_output_on_at_a_restart_writes_every_placements_slices_once(
    broker: str, topics: Topics
) -> None:
    async with Bus(broker, topics) as bus:
        async with running(settings_for(broker, topics.prefix)):
            await bus.publish(*base_fleet(), *[profile(f"c{i}") for i in range(3)])
            await bus.publish(placement("ns1", "web"))
            await bus.wait_for(lambda: "ns1/web" in bus.latest(), what="the decision")
        decided = bus.latest()["ns1/web"]
        missing = await asyncio.to_thread(
            _export, broker, topics, "--format", "sig-mc", "--placement", "ns1/web"
        )
        assert missing.exit_code == 1, missing.output
        assert "'ns1/web' has no SIG-MC slices" in missing.stderr and missing.stdout == ""

        async with running(settings_for(broker, topics.prefix, sigmc_decisions=True)):
            await bus.wait_for(lambda: bus.latest()["ns1/web"]["seq"] == 2, what="the decision again")
        again = bus.latest()["ns1/web"]
        assert (again["decisions"], again["added"], again["removed"]) == (decided["decisions"], [], [])
        exported = await asyncio.to_thread(
            _export, broker, topics, "--format", "sig-mc", "--placement", "ns1/web", "-o", "json"
        )
        assert exported.exit_code == 0, exported.output
        (piece,) = orjson.loads(exported.stdout)["items"]
        assert piece["metadata"]["annotations"][SEQ] == "2"
        assert [d["clusterProfileRef"]["name"] for d in piece["decisions"]] == decided["decisions"]

        # a restart finds the slices current and publishes nothing for the placement: a placement
        # published after the start is evaluated after it, so once its decision is out, so is any
        async with running(settings_for(broker, topics.prefix, sigmc_decisions=True)):
            await bus.publish(placement("ns1", "zz-later"))
            await bus.wait_for(lambda: "ns1/zz-later" in bus.latest(), what="the later placement")
    async with BroadcastReader(broker, [topics.decisions]) as reader:
        values = [decode_object(r.value) for r in await reader.read_to_end()]
    seqs = [v["seq"] for v in values if v is not None and v["placement"] == "ns1/web"]
    assert seqs == [1, 2]
    # the decision published again is one the audit reproduces, reasons of its slices included
    history = await read_history(broker, topics)
    assert ("ns1/web", 2) in history.recorded_reasons()
    report = audit(history)
    assert (report.checked, report.mismatches) == (3, [])


@pytest.mark.integration
async def test_a_start_with_the_output_on_tombstones_the_slices_of_a_placement_deleted_meanwhile(
    broker: str, topics: Topics
) -> None:
    async def current_slices() -> dict[str, Any]:
        async with BroadcastReader(broker, [topics.sigmc_placement_decisions]) as reader:
            records = await reader.read_to_end()
        out: dict[str, Any] = {}
        for r in sorted(records, key=lambda r: (r.partition, r.offset)):
            out[r.key.decode() if isinstance(r.key, bytes) else str(r.key)] = decode_object(r.value)
        return {k: v for k, v in out.items() if v is not None}

    async with Bus(broker, topics) as bus:
        async with running(settings_for(broker, topics.prefix, sigmc_decisions=True)):
            await bus.publish(*base_fleet(), *[profile(f"c{i}") for i in range(3)], placement("ns1", "web"))
            await bus.wait_for(lambda: "ns1/web" in bus.latest(), what="the decision")
        assert sorted(await current_slices()) == ["ns1/web-0"]
        async with running(settings_for(broker, topics.prefix)):
            await bus.delete("Placement", "ns1/web")
            await bus.wait_for(lambda: bus.latest()["ns1/web"].get("deleted", False), what="the deletion")
        assert sorted(await current_slices()) == ["ns1/web-0"]  # the output was off
        async with running(settings_for(broker, topics.prefix, sigmc_decisions=True)):
            await bus.publish(placement("ns1", "zz-later"))
            await bus.wait_for(lambda: "ns1/zz-later" in bus.latest(), what="the later placement")
    assert sorted(await current_slices()) == ["ns1/zz-later-0"]
