"""Compaction for real, on Apache Kafka: the cleaner is made to run within seconds (small
segments, any dirty ratio, no lag, tombstones kept 0.1 s), then a worker that starts afterwards
must build the state and the decisions of the worker that read every version, a deleted cluster
must stay deleted, and the audit must reproduce every decision whose inputs are left and name the
others "not reproducible: inputs compacted" (exit status 3), never a mismatch."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from fleetplace.services.auditor import audit, read_history
from fleetplace.services.commands.audit import INPUTS_COMPACTED_EXIT
from fleetplace.shared.bus.kafka import BroadcastReader, partition_for_key
from fleetplace.shared.bus.topics import Topics, ensure_topics, spec
from tests.apache_fixture import apache_kafka_bootstrap as apache_kafka_bootstrap
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

pytestmark = [pytest.mark.integration, pytest.mark.apache]

# The cleaner compacts a rolled segment as soon as it looks (every 0.5 s: tests/apache_fixture.py).
FAST_COMPACTION = {
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.001",
    "min.compaction.lag.ms": "0",
    "delete.retention.ms": "100",
}
GOLD = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]


def _cli() -> Any:
    from fleetplace.services.cli import app

    return app


def _state(worker: Any) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    """The clusters a worker holds (labels by name) and the decision in force per placement."""
    fleet = worker.processor.fleet
    clusters = {name: dict(info.labels) for name, info in fleet.clusters.items()}
    decisions = {k: sorted(p.decisions) for k, p in worker.processor.published.items() if not p.deleted}
    return clusters, decisions


FILLER = "zz-segment-roll"  # tombstones of clusters that never existed: they change no state


async def _compacted(bus: Bus, topic: str, partitions: int, timeout: float = 120.0) -> None:
    """Until the cleaner has removed every superseded version and every tombstone of `topic`
    (each real key once, no tombstone), roll the active segments: a write after `segment.ms` starts
    a new segment on each partition, and only rolled segments are cleaned. A deadline, not a
    measured time: the cleaner runs when it runs."""
    rolls = _filler_keys(partitions)
    deadline = time.monotonic() + timeout
    while True:
        await asyncio.sleep(0.2)  # past segment.ms
        for key in rolls:
            await bus.send("clusters", key, None)
        async with BroadcastReader(bus.bootstrap, [topic]) as reader:
            records = [r for r in await reader.read_to_end(timeout=30) if not str(r.key).startswith(FILLER)]
        keys = [r.key for r in records]
        if len(keys) == len(set(keys)) and all(r.value is not None for r in records):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}: not compacted in {timeout} s: {len(records)} records")


def _filler_keys(partitions: int) -> list[str]:
    """One filler key per partition."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < partitions:
        key = f"{FILLER}-{n}"
        found.setdefault(partition_for_key(key, partitions), key)
        n += 1
    return sorted(found.values())


async def test_a_worker_after_compaction_builds_the_same_state_and_the_audit_tells_compacted_apart(
    apache_kafka_bootstrap: str, topic_prefix: str
) -> None:
    bootstrap = apache_kafka_bootstrap
    topics = Topics(topic_prefix)
    await ensure_topics(bootstrap, topics, work_partitions=3, compaction=FAST_COMPACTION)
    settings = settings_for(bootstrap, topics.prefix)
    async with Bus(bootstrap, topics) as bus:
        async with running(settings) as first:
            await bus.publish(
                *base_fleet(),
                *(cluster(f"c{i}", {"tier": "gold"}) for i in range(1, 5)),
                placement("ns1", "gold", predicates=GOLD),
                placement("ns1", "two", numberOfClusters=2),
            )
            await bus.wait_for(lambda: len(bus.latest()) == 2, what="both placements decided")
            # versions the cleaner will drop: each relabel is decided on before the next
            for step, tier in enumerate(["silver", "gold", "silver"], start=2):
                await bus.publish(cluster("c1", {"tier": tier}))
                await bus.wait_for(
                    lambda s=step: bus.latest()["ns1/gold"]["seq"] == s, what=f"gold seq {step}"
                )
            await bus.delete("ManagedCluster", "c2")
            await bus.wait_for(
                lambda: (
                    bus.latest()["ns1/gold"]["decisions"] == ["c3", "c4"]
                    and "c2" not in bus.latest()["ns1/two"]["decisions"]
                ),
                what="c2 deleted from both placements",
            )
            expected = _state(first)
        published = len(bus.decisions)
        await _compacted(bus, topics.clusters, partitions=spec("clusters").partitions)

        async with running(settings) as second:
            await bus.wait_for(lambda: second.ready, what="the second worker caught up")
            assert _state(second) == expected
            assert "c2" not in second.processor.fleet.clusters  # deleted stays deleted
        assert len(bus.decisions) == published  # the same decisions: nothing new to publish

    history = await read_history(bootstrap, topics)
    report = await asyncio.to_thread(audit, history)
    assert report.ok, [m.to_json() for m in report.mismatches]
    assert report.mismatches == []
    assert report.compacted, "some early decisions lost their inputs to the cleaner"
    assert report.reproduced + len(report.compacted) == report.checked == published
    for entry in report.compacted:
        assert entry.inputs and all(name.startswith("clusters/") for name in entry.inputs), entry
    # the latest decision of each placement read the compacted topic's surviving versions only
    latest = {d["placement"]: d["seq"] for d in bus.decisions}
    assert not {(c.placement, c.seq) for c in report.compacted} & set(latest.items())

    figures = {
        "scenario": "audit-over-compaction",
        "checked": report.checked,
        "reproduced": report.reproduced,
        "inputs_compacted": len(report.compacted),
        "mismatched": len(report.mismatches),
    }
    print(json.dumps(figures))
    command = ["audit", "--bootstrap", bootstrap, "--prefix", topics.prefix]
    result = await asyncio.to_thread(CliRunner().invoke, _cli(), command)
    assert result.exit_code == INPUTS_COMPACTED_EXIT, result.output
    assert "not reproducible: inputs compacted" in result.output
