"""`fleetplace demo` end to end, as `make demo` runs it: its own embedded broker, the workers, every act."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetplace.services.commands.demo import ExpectedDiff, unmatched
from fleetplace.services.commands.demo_hub import hub_missing
from fleetplace.services.commands.demo_rollout import ExpectedRolloutDiff, Recheck
from fleetplace.services.scores.local import prometheus_missing
from tests.demo_verdict import expected_verdict
from tests.piped import assert_lines_fit_content

pytestmark = pytest.mark.integration


def test_demo_plays_every_act_and_exits_zero_within_a_minute() -> None:
    if hub_missing() is not None and os.environ.get("FLEETPLACE_REQUIRE_HUB", "") not in ("", "0"):
        pytest.fail(f"the demo's hub acts cannot run: {hub_missing()}")
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
    # without Prometheus its two acts are skipped, and so are the hub's two without a control
    # plane: shown and counted apart, never as passed
    assert expected_verdict() in out
    # the summary table: one row per act, each marked passed, with the diffs it saw
    for number, act, diffs in [
        (1, "worker starts", 4),
        (2, "cluster added", 2),
        (3, "label changed", 1),
        (4, "AddOn score changed", 1),
        (5, "cluster unreachable", 1),
        (6, "toleration expired", 1),
        (7, "placement deleted", 1),
        (8, "inventory placed", 1),
        (9, "control plane unhealthy", 1),
        (10, "rollout started", 1),
        (11, "canary applied", 1),
        (12, "canary healthy", 1),
        (13, "soak over", 1),
        (14, "new revision", 1),
        (15, "canary failed", 1),
        # a Prometheus metric steers apps/batch (services/commands/demo_scores.py), or both acts
        # say they were skipped when /usr/bin/prometheus is missing
        *(
            [(16, "scores from Prometheus", 1), (17, "metric changed", 1)]
            if prometheus_missing() is None
            else []
        ),
        # a Placement decided on a real API server (services/commands/demo_hub.py)
        *([(18, "decided on the hub", 1), (19, "tainted on the hub", 1)] if hub_missing() is None else []),
    ]:
        row = re.search(rf"│ +{number} │ {act} +│.*│ +{diffs} │ +([0-9.]+) s │ ✔", out)
        assert row is not None, f"no passing summary row for act {number} ({act}):\n{out}"
    if prometheus_missing() is not None:
        for number, act in [(16, "scores from Prometheus"), (17, "metric changed")]:
            assert re.search(rf"│ +{number} │ {act} +│.*│ skipped │", out), out
    if hub_missing() is not None:
        for number, act in [(18, "decided on the hub"), (19, "tainted on the hub")]:
            assert re.search(rf"│ +{number} │ {act} +│.*│ skipped │", out), out
    else:  # the decision appeared on the hub as a PlacementDecision, then the taint moved it
        assert "fleet/site seq 1 (hub site-decision-1) +hub-a +hub-b → hub-a, hub-b" in out
        assert "fleet/site seq 2 (hub site-decision-1) +hub-c −hub-b → hub-a, hub-c" in out
    # the toleration act really waited for the toleration (5 s from a taint stamped in whole seconds)
    toleration_row = re.search(r"│ +6 │ toleration expired +│.*│ +1 │ +([0-9.]+) s │", out)
    assert toleration_row is not None and 3.0 < float(toleration_row.group(1)) < 6.5
    assert "web +east-2 −west-2" in out
    assert "edge +lisbon −dublin" in out  # a ClusterProfile's control plane turned unhealthy
    # the rollout: the canary first, the rest once its 3 s soak ended on the worker's timer (the
    # report is stamped in whole seconds, and the act starts half a second after it), a new
    # revision back to the canary, and a failing canary breaching maxFailures
    soak_row = re.search(r"│ +13 │ soak over +│.*│ +1 │ +([0-9.]+) s │", out)
    assert soak_row is not None and 1.0 < float(soak_row.group(1)) < 3.5
    assert "seq 4 (recheck apps/api) v1 +east-1 +east-2 +edge-2 −edge-1 → east-1, east-2, edge-2" in out
    assert "seq 5 (rollout apps/api) v2 +edge-1 −east-1 −east-2 −edge-2 → edge-1" in out
    assert re.search(r"│ apps/api +│ 6 +│ v2 +│ edge-1 +│ true +│ false +│", out), out
    if not external:
        assert "embedded Tansu broker at 127.0.0.1:" in out
    assert_lines_fit_content(out)  # its stdout is a pipe here


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.parametrize(
    ("args", "stage"),
    [
        (["demo"], "Topics: prefix"),  # while the acts play
        (["demo", "--explore"], "fleetplace explorer: http://"),  # while the explorer serves
    ],
    ids=["acts", "explore"],
)
def test_sigterm_stops_the_demo_and_the_broker_it_started(
    args: list[str], stage: str, tmp_path: Path
) -> None:
    if os.environ.get("FLEETPLACE_TEST_BOOTSTRAP"):
        pytest.skip("on an external Kafka the demo starts no broker")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_"))}
    env["PYTHONUNBUFFERED"] = "1"
    stderr = (tmp_path / "stderr").open("w")
    demo = subprocess.Popen(
        [sys.executable, "-m", "fleetplace.services.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert demo.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in demo.stdout or ()], daemon=True)
    reader.start()
    broker_pid = port = None
    try:
        seen = []
        while not seen or stage not in seen[-1]:
            seen.append(lines.get(timeout=120))
            found = re.search(r"embedded Tansu broker at 127\.0\.0\.1:(\d+) \(pid (\d+)", seen[-1])
            if found:
                port, broker_pid = int(found.group(1)), int(found.group(2))
        assert broker_pid is not None and port is not None, "".join(seen)
        assert _parent_of(broker_pid) == demo.pid and _listening(port)

        demo.send_signal(signal.SIGTERM)
        status = demo.wait(timeout=60)
        # the demo stopped the broker and reaped it before it exited: no such process is left
        assert _parent_of(broker_pid) is None, f"the broker (pid {broker_pid}) outlived the demo"
        assert not _listening(port)
        assert status >= 0, f"ended by the signal itself (status {status})"
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        if broker_pid is not None and "broker" in _cmdline(broker_pid):
            os.kill(broker_pid, signal.SIGKILL)  # left behind by a failing run: ours, by its PID
        reader.join(timeout=5)
        stderr.close()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


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
