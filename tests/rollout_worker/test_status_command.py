"""`fleetplace rollout status` on the embedded broker: a finished rollout still shows its clusters."""

from __future__ import annotations

import asyncio
import re

import pytest

from fleetplace.shared.bus.topics import Topics
from tests.rollout_worker.builders import placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for
from tests.rollout_worker.test_worker import cli

pytestmark = pytest.mark.integration

GROUPS = [("", ["c1", "c2"]), ("", ["c3"])]


async def test_a_complete_rollout_shows_every_cluster_and_its_final_status(
    broker: str, topics: Topics
) -> None:
    common = ("--bootstrap", broker, "--prefix", topics.prefix)
    async with RolloutBus(broker, topics) as bus, running(settings_for(broker, topics.prefix)):
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web"))
        await bus.wait_for(lambda: bus.state.get("apps/web") is not None, what="the state")
        await bus.report("apps/web/c1", report("Succeeded", at="2026-01-01T00:01:00.250000Z"))
        await bus.report("apps/web/c2", {**report("Skip"), "message": "not needed here"})
        await bus.report("apps/web/c3", report("Succeeded", at="2026-01-01T00:02:00Z"))
        await bus.wait_for(
            lambda: (bus.state.get("apps/web") or {}).get("complete") is True, what="completion"
        )
        shown = await asyncio.to_thread(cli, "status", "apps/web", *common)
    assert shown.returncode == 0, shown.stderr
    found = {c: [row for row in shown.stdout.splitlines() if f" {c} " in row] for c in ("c1", "c2", "c3")}
    assert all(len(lines) == 1 for lines in found.values()), shown.stdout  # each cluster, once
    rows = {c: lines[0] for c, lines in found.items()}
    assert "Succeeded" in rows["c1"] and "#0" in rows["c1"] and "done" in rows["c1"]
    assert "Skip" in rows["c2"] and "not needed here" in rows["c2"]
    assert "Succeeded" in rows["c3"] and "#1" in rows["c3"]
    assert "state: Complete" in shown.stdout
    # one time format in the output, to the second, whatever precision a deployer reported
    assert "2026-01-01T00:01:00Z" in rows["c1"] and "2026-01-01T00:02:00Z" in rows["c3"]
    assert re.search(r"\d\d:\d\d:\d\d\.\d", shown.stdout) is None, shown.stdout
