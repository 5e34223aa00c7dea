"""A real rollout worker makes a history on the embedded broker (topic clock): a canary group, a
soak ending on the timer, a failure breaching maxFailures, a new revision, a cluster leaving the
placement, a deletion; a second rollout on another strategy. The audit reproduces every rollout
diff from the topics; a tampered diff is reported naming the field that differs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.rollouts import (
    RolloutLog,
    audit_rollouts,
    explain_rollout,
    read_rollout_topics,
)
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, ensure_topics, rollout_partition
from fleetplace.shared.testing import unique_topic_prefix
from tests.rollout_worker.builders import CANARY, placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus, running, settings_for

pytestmark = pytest.mark.integration

GROUPS = [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4", "c5"])]
T = "2026-01-01T00:%02d:00Z"
PROGRESSIVE = {
    "type": "Progressive",
    "progressive": {"maxConcurrency": 2, "minSuccessTime": "1m", "maxFailures": 0},
}


@dataclass(frozen=True)
class Run:
    prefix: str
    diffs: list[dict[str, Any]]


async def _record_rollouts(broker: str, prefix: str) -> list[dict[str, Any]]:
    topics = Topics(prefix)
    await ensure_topics(broker, topics)
    settings = settings_for(broker, prefix, clock="topic")
    group = settings.rollout_group_id
    async with RolloutBus(broker, topics) as bus, running(settings):

        def last(key: str) -> dict[str, Any]:
            return bus.last(key) or {}

        async def until(key: str, check: Any, what: str) -> None:
            await bus.wait_for(lambda: check(last(key)), what=what)

        await bus.set_clock(T % 0, group)
        await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
        await bus.send("placement-decisions", "ops/db", placement_decisions("ops/db", GROUPS))
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
        await bus.send("rollouts", "ops/db", rollout_object("ops/db", strategy=PROGRESSIVE, placement="db"))
        await until("apps/web", lambda d: d.get("clusters") == ["c1"], "the canary first")
        await until("ops/db", lambda d: d.get("clusters") == ["c1", "c2"], "two at a time")
        await bus.report("apps/web/c1", report("Succeeded", at=T % 1))
        await bus.report("ops/db/c1", report("Succeeded", at=T % 1))
        await bus.report("ops/db/c2", report("Progressing", at=T % 1))
        await until("apps/web", lambda d: d.get("nextRecheckAt") == T % 6, "the soak's end")
        await bus.set_clock(T % 6, group)  # the soak ends on the timer, with no event
        await until("apps/web", lambda d: d.get("clusters") == ["c2", "c3"], "the next group")
        await until("ops/db", lambda d: d.get("clusters") == ["c2", "c3"], "the soak over, c3 next")
        for c in ("c2", "c3"):
            await bus.report(f"apps/web/{c}", report("Failed", at=T % 6))
        await until("apps/web", lambda d: d.get("nextRecheckAt") == T % 16, "the deadline")
        await bus.set_clock(T % 16, group)  # the deadline passes on the timer: both time out
        await until("apps/web", lambda d: d.get("clusters") == [], "both timed out")
        await bus.report("ops/db/c3", report("Failed", at=T % 16))
        await until("ops/db", lambda d: d.get("maxFailureBreach") is True, "the breach")
        # c5 leaves the db placement; c2 succeeds
        await bus.send(
            "placement-decisions",
            "ops/db",
            placement_decisions("ops/db", [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4"])], 2),
        )
        await bus.report("ops/db/c2", report("Succeeded", at=T % 16))
        await bus.set_clock(T % 18, group)
        await until("ops/db", lambda d: "c2" not in d.get("clusters", ["c2"]), "c2 soaked")
        await bus.send("rollouts", "apps/web", rollout_object("apps/web", revision="v2", strategy=CANARY))
        await until("apps/web", lambda d: d.get("revision") == "v2" and d.get("clusters") == ["c1"], "v2")
        await bus.report("apps/web/c1", report("Succeeded", revision="v2", at=T % 19))
        await until("apps/web", lambda d: d.get("nextRecheckAt") == T % 24, "the v2 soak")
        await bus.send("rollouts", "ops/db", None)
        await until("ops/db", lambda d: d.get("deleted") is True, "the final diff")
        await asyncio.sleep(0.5)  # anything still in flight lands before the history is read
        return list(bus.diffs)


@pytest.fixture(scope="module")
def run(broker: str) -> Run:
    prefix = unique_topic_prefix()
    return Run(prefix, asyncio.run(_record_rollouts(broker, prefix)))


async def _history(broker: str, prefix: str) -> History:
    history = History()
    assert await read_rollout_topics(broker, Topics(prefix), history)
    return history


def history_of(broker: str, prefix: str) -> History:
    return asyncio.run(_history(broker, prefix))


def test_every_rollout_diff_of_a_real_worker_reproduces(broker: str, run: Run) -> None:
    history = history_of(broker, run.prefix)
    report = audit_rollouts(history)
    assert report.mismatches == []
    assert report.seq_problems == [] and report.invalid == []
    assert report.checked == report.reproduced == len(run.diffs)
    kinds = {d["trigger"]["kind"] for d in run.diffs}
    assert {"rollout", "status", "recheck", "placement"} <= kinds  # the history exercises them all
    assert report.per_rollout.keys() == {"apps/web", "ops/db"}
