"""`fleetplace demo` end to end, as `make demo` runs it: its own embedded broker, the workers, every act."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from fleetplace.services.commands.demo import ExpectedDiff, unmatched
from fleetplace.services.commands.demo_rollout import ExpectedRolloutDiff, Recheck
from fleetplace.services.scores.local import prometheus_missing

pytestmark = pytest.mark.integration


def test_demo_plays_every_act_and_exits_zero_within_a_minute() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_"))}
    external = os.environ.get("FLEETPLACE_TEST_BOOTSTRAP")
    if external:  # the suite runs against a real Kafka: so does the demo
        env["KAFKA_BOOTSTRAP_SERVERS"] = external
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fleetplace.services.cli", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < 60
    out = done.stdout
    assert "all 15 acts passed" in out
    # the summary table: one row per act, each marked passed, with the diffs it saw
    for number, act, diffs in [
        (1, "worker starts", 4),
        (2, "cluster added", 2),
        (3, "label changed", 1),
        (4, "AddOn score changed", 1),
        (5, "cluster unreachable", 1),
        (6, "toleration expired", 1),
        (7, "placement deleted", 1),
        (8, "rollout started", 1),
        (9, "canary applied", 1),
        (10, "canary healthy", 1),
        (11, "soak over", 1),
        (12, "new revision", 1),
        (13, "canary failed", 1),
        # a Prometheus metric steers apps/batch (services/commands/demo_scores.py), or both acts
        # say they were skipped when /usr/bin/prometheus is missing
        *(
            [(14, "scores from Prometheus", 1), (15, "metric changed", 1)]
            if prometheus_missing() is None
            else [(14, r"scores from Prometheus \(skipped\)", 0), (15, r"metric changed \(skipped\)", 0)]
        ),
    ]:
        row = re.search(rf"│ +{number} │ {act} +│.*│ +{diffs} │ +([0-9.]+) s │ ✔", out)
        assert row is not None, f"no passing summary row for act {number} ({act}):\n{out}"
    # the toleration act really waited for the toleration (5 s from a taint stamped in whole seconds)
    toleration_row = re.search(r"│ +6 │ toleration expired +│.*│ +1 │ +([0-9.]+) s │", out)
    assert toleration_row is not None and 3.0 < float(toleration_row.group(1)) < 6.5
    assert "web +east-2 −west-2" in out
    # the rollout: the canary first, the rest once its 3 s soak ended on the worker's timer (the
    # report is stamped in whole seconds, and the act starts half a second after it), a new
    # revision back to the canary, and a failing canary breaching maxFailures
    soak_row = re.search(r"│ +11 │ soak over +│.*│ +1 │ +([0-9.]+) s │", out)
    assert soak_row is not None and 1.0 < float(soak_row.group(1)) < 3.5
    assert "seq 4 (recheck apps/api) v1 +east-1 +east-2 +edge-2 −edge-1 → east-1, east-2, edge-2" in out
    assert "seq 5 (rollout apps/api) v2 +edge-1 −east-1 −east-2 −edge-2 → edge-1" in out
    assert re.search(r"│ apps/api +│ 6 +│ v2 +│ edge-1 +│ true +│ false +│", out), out
    if not external:
        assert "embedded Tansu broker at 127.0.0.1:" in out


def test_an_act_fails_on_a_missing_or_an_extra_diff() -> None:
    expected = [ExpectedDiff("apps/web", ("b",), ("a",), trigger="cluster")]
    right = {"placement": "apps/web", "added": ["b"], "removed": ["a"], "trigger": {"kind": "cluster"}}
    assert unmatched(expected, [right]) == ([], [])
    other = {**right, "placement": "apps/other"}
    assert unmatched(expected, [right, other]) == ([], [other])
    wrong_trigger = {**right, "trigger": {"kind": "resync"}}
    assert unmatched(expected, [wrong_trigger]) == (expected, [wrong_trigger])


def _rollout_diff(**changes: Any) -> dict[str, Any]:
    diff: dict[str, Any] = {
        "schemaVersion": 1,
        "rollout": "apps/api",
        "seq": 2,
        "revision": "v1",
        "evaluatedAt": "2026-01-01T00:00:01Z",
        "trigger": {"kind": "status", "key": "apps/api/edge-1"},
        "clusters": ["edge-1"],
        "added": [],
        "removed": [],
        "placements": [],
        "maxFailureBreach": False,
        "nextRecheckAt": "2026-01-01T00:01:00Z",
        "complete": False,
        "answerDigest": "0",
        "inputs": {},
    }
    return {**diff, **changes}


def test_a_rollout_act_checks_the_change_the_breach_and_the_next_recheck() -> None:
    since = datetime(2026, 1, 1, tzinfo=UTC)
    expected = [
        ExpectedRolloutDiff(
            "apps/api",
            "v1",
            trigger="status",
            recheck=Recheck("its deadline", lambda: since + timedelta(minutes=1)),
        )
    ]
    right = _rollout_diff()
    assert unmatched(expected, [right]) == ([], [])
    for wrong in (
        _rollout_diff(nextRecheckAt="2026-01-01T00:00:03Z"),  # a soak end, not the deadline
        _rollout_diff(nextRecheckAt=None),
        _rollout_diff(maxFailureBreach=True),
        _rollout_diff(revision="v2"),
        _rollout_diff(added=["east-1"]),
        _rollout_diff(trigger={"kind": "recheck", "key": "apps/api"}),
        _rollout_diff(deleted=True),
    ):
        assert unmatched(expected, [wrong]) == (expected, [wrong])
    # a rollout diff never stands for a placement's diff, nor the other way round
    placement = ExpectedDiff("apps/api", ("edge-1",))
    assert unmatched([placement], [_rollout_diff(added=["edge-1"])])[0] == [placement]
    decision = {"placement": "apps/api", "added": [], "removed": [], "trigger": {"kind": "status"}}
    assert unmatched(expected, [decision]) == (expected, [decision])
    # without a recheck expected, a diff with one does not match
    started = ExpectedRolloutDiff("apps/api", "v1", ("edge-1",), trigger="rollout")
    first = _rollout_diff(seq=1, added=["edge-1"], trigger={"kind": "rollout", "key": "apps/api"})
    assert unmatched([started], [{**first, "nextRecheckAt": None}]) == ([], [])
    assert unmatched([started], [first]) == ([started], [first])
