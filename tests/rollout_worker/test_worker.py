"""The rollout worker on the embedded broker: progress as deployers report, timers, deletion."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from fleetplace.shared.bus.topics import ROLLOUTS, Topics, planned_partitions, rollout_partition
from tests.rollout_worker.builders import CANARY, placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

GROUPS = [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4", "c5"])]
T = "2026-01-01T00:%02d:00Z"


def clusters_of(diff: dict[str, Any] | None) -> list[str]:
    return [] if diff is None else list(diff["clusters"])


async def test_canary_rollout_progresses_as_deployers_report_and_a_soak_ends_on_the_clock(
    broker: str, topics: Topics
) -> None:
    settings = settings_for(broker, topics.prefix, clock="topic")
    async with RolloutBus(broker, topics) as bus, running(settings):
        group = settings.rollout_group_id
        await bus.set_clock(T % 0, group)
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
        await bus.wait_for(lambda: clusters_of(bus.last("apps/web")) == ["c1"], what="the canary first")
        await bus.report("apps/web/c1", report("Succeeded", at=T % 1))
        await bus.wait_for(
            lambda: (bus.last("apps/web") or {}).get("nextRecheckAt") == T % 6, what="the soak's end"
        )
        await bus.set_clock(T % 6, group)  # no event but the time: the soak ends on the timer
        await bus.wait_for(lambda: clusters_of(bus.last("apps/web")) == ["c2", "c3"], what="the next group")
        last = bus.last("apps/web")
        assert last is not None and last["trigger"]["kind"] == "recheck"
        assert bus.state.get("apps/web", {}) and bus.state["apps/web"]["seq"] == last["seq"]  # type: ignore[index]
        seqs = [d["seq"] for d in bus.of("apps/web")]
        assert seqs == list(range(1, len(seqs) + 1))


async def test_breach_new_revision_and_deletion(broker: str, topics: Topics) -> None:
    strategy = {"type": "Progressive", "progressive": {"maxFailures": 1, "maxConcurrency": 3}}
    settings = settings_for(broker, topics.prefix, clock="topic")
    async with RolloutBus(broker, topics) as bus, running(settings):
        group = settings.rollout_group_id
        await bus.set_clock(T % 10, group)
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=strategy))
        await bus.wait_for(
            lambda: clusters_of(bus.last("apps/web")) == ["c1", "c2", "c3"], what="three at once"
        )
        for c in ("c1", "c2"):
            await bus.report(f"apps/web/{c}", report("Failed", at=T % 10))
        await bus.wait_for(
            lambda: (bus.last("apps/web") or {}).get("maxFailureBreach") is True, what="breach"
        )
        breach = bus.last("apps/web")
        assert breach is not None and "c4" not in breach["clusters"]
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", revision="v2", strategy=strategy))
        await bus.wait_for(
            lambda: (bus.last("apps/web") or {}).get("revision") == "v2", what="the new revision"
        )
        restart = bus.last("apps/web")
        assert restart is not None and restart["maxFailureBreach"] is False
        assert restart["clusters"] == ["c1", "c2", "c3"]
        await bus.send("rollouts", "apps/web", None)
        await bus.wait_for(lambda: (bus.last("apps/web") or {}).get("deleted") is True, what="the final diff")
        await bus.wait_for(
            lambda: "apps/web" in bus.state and bus.state["apps/web"] is None, what="tombstone"
        )
        final = bus.last("apps/web")
        assert final is not None and final["removed"] == ["c1", "c2", "c3"]


async def test_a_misrouted_or_invalid_report_goes_to_the_dead_letter_topic(
    broker: str, topics: Topics
) -> None:
    # the default partitioner hashes the whole key "apps/web/c1", which lands off the partition of
    # the rollout "apps/web": each of the two records has its own dead letter
    own = rollout_partition("apps/web", planned_partitions()[ROLLOUTS])
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.report("apps/web/c1", {"revision": "v1", "status": "Done"})
        await bus.send("rollout-status", "apps/web/c1", report("Succeeded"), by_rollout=False)
        await bus.wait_for(lambda: len(bus.deadletters) >= 2, what="two dead letters")
        errors = [d["error"] for d in bus.deadletters]
        assert any("status" in e and "belong on partition" not in e for e in errors), errors
        assert any(f"belong on partition {own}" in e for e in errors), errors


async def test_a_rollout_on_another_partition_than_its_keys_goes_to_the_dead_letter_topic(
    broker: str, topics: Topics
) -> None:
    """Whether it would be evaluated depends on which instance owns which partition (this one
    owns all); the worker refuses it in a dead letter, and the auditor's replay skips it alike
    (test_ingest.py), so the decisions published are the ones the audit reproduces."""
    partitions = planned_partitions()[ROLLOUTS]
    own = rollout_partition("apps/web", partitions)
    elsewhere = next(k for k in (f"x/{i}" for i in range(100)) if rollout_partition(k, partitions) != own)
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.send("rollouts", "apps/web", rollout_object("apps/web"), partition_of=elsewhere)
        await bus.wait_for(lambda: len(bus.deadletters) >= 1, what="the dead letter")
        (letter,) = bus.deadletters
        assert f"belong on partition {own}" in letter["error"], letter


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "rollout", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_rollout_report_and_status_commands(broker: str, topics: Topics) -> None:
    common = ("--bootstrap", broker, "--prefix", topics.prefix)
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
        await bus.wait_for(lambda: bus.state.get("apps/web") is not None, what="the state")
        reported = await asyncio.to_thread(
            cli, "report", "apps/web", "c1", "--status", "Progressing", *common
        )
        assert reported.returncode == 0, reported.stderr
        await bus.wait_for(
            lambda: (bus.last("apps/web") or {}).get("seq") == 2, what="the diff of the report"
        )
        shown = await asyncio.to_thread(cli, "status", "apps/web", *common)
        assert shown.returncode == 0, shown.stderr
        line = next(row for row in shown.stdout.splitlines() if " c1 " in row)
        assert "Progressing" in line and "waits for a report; times out at" in line
