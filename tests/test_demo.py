"""`fleetplace demo` end to end, as `make demo` runs it: its own embedded broker, a worker, every act."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from fleetplace.services.commands.demo import ExpectedDiff, unmatched

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
    assert "all 7 acts passed" in out
    # the summary table: one row per act, each marked passed, with the diffs it saw
    for number, act, diffs in [
        (1, "worker starts", 3),
        (2, "cluster added", 2),
        (3, "label changed", 1),
        (4, "AddOn score changed", 1),
        (5, "cluster unreachable", 1),
        (6, "toleration expired", 1),
        (7, "placement deleted", 1),
    ]:
        row = re.search(rf"│ {number} │ {act} +│.*│ +{diffs} │ +([0-9.]+) s │ ✔", out)
        assert row is not None, f"no passing summary row for act {number} ({act}):\n{out}"
    # the toleration act really waited for the toleration (5 s from a taint stamped in whole seconds)
    toleration_row = re.search(r"│ 6 │ toleration expired +│.*│ +1 │ +([0-9.]+) s │", out)
    assert toleration_row is not None and 3.0 < float(toleration_row.group(1)) < 6.5
    assert "web +east-2 −west-2" in out
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
