"""`fleetplace watch --topic rollout-decisions`: one readable line per rollout diff, or the diffs
themselves as JSON or YAML, from diffs a rollout worker published on the embedded broker."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.services.commands.worker import describe_rollout_decision
from fleetplace.shared.bus.topics import Topics
from tests.rollout_worker.builders import CANARY, placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for

T = "2026-01-01T00:%02d:00Z"


def _diff(**changes: Any) -> dict[str, Any]:
    diff: dict[str, Any] = {
        "schemaVersion": 1,
        "rollout": "apps/web",
        "seq": 1,
        "revision": "v42",
        "evaluatedAt": "2026-01-01T00:00:00Z",
        "trigger": {"kind": "rollout", "key": "apps/web"},
        "clusters": ["c1"],
        "added": ["c1"],
        "removed": [],
        "placements": [{"name": "web", "decided": True}],
        "maxFailureBreach": False,
        "nextRecheckAt": None,
        "complete": False,
        "answerDigest": "0",
        "inputs": {},
    }
    return {**diff, **changes}


def test_a_rollout_diff_reads_as_one_line() -> None:
    assert (
        describe_rollout_decision(_diff())
        == "2026-01-01T00:00:00Z apps/web seq=1 v42 [rollout:apps/web] +c1  -> c1"
    )
    moved = _diff(
        seq=4,
        trigger={"kind": "recheck", "key": "apps/web"},
        clusters=["c2", "c3"],
        added=["c2", "c3"],
        removed=["c1"],
        nextRecheckAt="2026-01-01T00:10:00Z",
    )
    assert describe_rollout_decision(moved).endswith(
        "[recheck:apps/web] +c2 +c3 -c1 -> c2,c3 (recheck at 2026-01-01T00:10:00Z)"
    )
    timed_out = {
        "clusterName": "c2",
        "groupName": "wave",
        "groupIndex": 1,
        "status": "TimeOut",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "timeOutTime": "2026-01-01T00:10:00Z",
    }
    stopped = _diff(
        clusters=[],
        added=[],
        removed=["c1"],
        placements=[
            {"name": "web", "decided": True, "clustersTimeOut": [timed_out], "maxFailureBreach": True},
            {"name": "api", "decided": True, "error": "invalid timeout format"},
        ],
        maxFailureBreach=True,
    )
    assert describe_rollout_decision(stopped).endswith(
        "-c1 -> (none) (web: timed out c2; api: error: invalid timeout format; maxFailureBreach)"
    )
    assert describe_rollout_decision(_diff(complete=True, clusters=[], added=[])).endswith(
        "-> (none) (complete)"
    )
    assert describe_rollout_decision(_diff(deleted=True, clusters=[], added=[], removed=["c1"])).endswith(
        " -c1 -> (deleted)"
    )
    # a record that is not a rollout diff still gets its line, saying so
    assert describe_rollout_decision({"rollout": "apps/web", "seq": 2}).startswith(
        "apps/web seq=2: not a rollout diff ("
    )


async def _roll_out(broker: str, topics: Topics) -> list[dict[str, Any]]:
    """Diffs of a real worker: apps/web's canary, its soak, then apps/api's start and deletion."""
    settings = settings_for(broker, topics.prefix, clock="topic")
    groups = [("canary", ["c1"]), ("rest", ["c2", "c3"])]
    async with RolloutBus(broker, topics) as bus, running(settings):
        await bus.set_clock(T % 0, settings.rollout_group_id)
        for key in ("apps/web", "apps/api"):
            await bus.send("placement-decisions", key, placement_decisions(key, groups))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
        await bus.wait_for(lambda: len(bus.of("apps/web")) == 1, what="the canary first")
        await bus.report("apps/web/c1", report("Succeeded", at=T % 1))
        await bus.wait_for(lambda: len(bus.of("apps/web")) == 2, what="the canary soaking")
        await bus.send("rollouts", "apps/api", rollout_object("apps/api", placement="api"))
        await bus.wait_for(lambda: len(bus.of("apps/api")) == 1, what="api at once")
        await bus.send("rollouts", "apps/api", None)
        await bus.wait_for(lambda: len(bus.of("apps/api")) == 2, what="api's final diff")
        return list(bus.diffs)


@pytest.mark.integration
def test_watch_follows_rollout_decisions(broker: str, topics: Topics) -> None:
    diffs = asyncio.run(_roll_out(broker, topics))
    common = ["watch", "--topic", "rollout-decisions", "--no-follow", "-b", broker, "--prefix", topics.prefix]

    # each rollout's diffs in order; rollouts on different partitions interleave as they come, so
    # they are compared grouped by rollout (a stable sort)
    lines = CliRunner().invoke(app, common)
    assert lines.exit_code == 0, lines.output
    assert sorted(
        [line.split(" ", 1)[1] for line in lines.stdout.splitlines()], key=lambda t: t.split()[0]
    ) == [
        "apps/api seq=1 v1 [rollout:apps/api] +c1 +c2 +c3  -> c1,c2,c3",
        "apps/api seq=2 v1 [rollout:apps/api]  -c1 -c2 -c3 -> (deleted)",
        "apps/web seq=1 v1 [rollout:apps/web] +c1  -> c1",
        "apps/web seq=2 v1 [status:apps/web/c1]   -> c1 (recheck at 2026-01-01T00:06:00Z)",
    ]
    assert all(line.startswith(f"{T % 0} ") for line in lines.stdout.splitlines())  # the worker's clock

    only_api = CliRunner().invoke(app, [*common, "--rollout", "apps/api"])
    assert [line.split(" ")[1:3] for line in only_api.stdout.splitlines()] == [
        ["apps/api", "seq=1"],
        ["apps/api", "seq=2"],
    ]

    def rollout_of(diff: dict[str, Any]) -> str:
        return str(diff["rollout"])

    as_json = CliRunner().invoke(app, [*common, "-o", "json"])
    printed = [orjson.loads(line) for line in as_json.stdout.splitlines()]
    assert sorted(printed, key=rollout_of) == sorted(diffs, key=rollout_of)
    as_yaml = CliRunner().invoke(app, [*common, "-o", "yaml", "--placement", "apps/web"])
    assert list(yaml.safe_load_all(as_yaml.stdout)) == [d for d in diffs if d["rollout"] == "apps/web"]
