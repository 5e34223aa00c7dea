"""Two rollout worker processes split the rollouts; SIGKILL one and the other takes over."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections import defaultdict

import pytest

from fleetplace.shared.bus.topics import Topics
from tests.proc import stop_process
from tests.rollout_worker.builders import placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus

pytestmark = pytest.mark.integration

ROLLOUTS = 24
GROUPS = [("", ["c1", "c2"]), ("", ["c3"])]
PER_GROUP = {"type": "ProgressivePerGroup"}


def start_worker(broker: str, topics: Topics, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FLEETPLACE_LOG_FORMAT": "console", "FLEETPLACE_LOG_LEVEL": "warning"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fleetplace.services.cli",
            "worker",
            "rollout",
            "--bootstrap",
            broker,
            "--prefix",
            topics.prefix,
            "--group",
            f"{topics.prefix}rollout",
            "--instance",
            name,
            "--http-port",
            "0",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def test_sigkilled_worker_is_replaced_with_no_lost_or_rewritten_diff(
    broker: str, topics: Topics
) -> None:
    w1 = start_worker(broker, topics, "w1")
    w2 = start_worker(broker, topics, "w2")
    keys = [f"ns1/r{i:02d}" for i in range(ROLLOUTS)]
    try:
        async with RolloutBus(broker, topics) as bus:
            await bus.send("placement-decisions", "ns1/web", placement_decisions("ns1/web", GROUPS))
            for key in keys:
                await bus.send("rollouts", key, rollout_object(key, strategy=PER_GROUP))

            def latest() -> dict[str, list[str]]:
                return {k: list(d["clusters"]) for k in keys if (d := bus.last(k)) is not None}

            await bus.wait_for(
                lambda: latest() == {k: ["c1", "c2"] for k in keys}, timeout=60, what="every rollout started"
            )
            w1.send_signal(signal.SIGKILL)
            w1.wait(10)
            for key in keys:
                for c in ("c1", "c2"):
                    await bus.report(f"{key}/{c}", report("Succeeded", at="2026-01-01T00:00:00Z"))
            await bus.wait_for(
                lambda: latest() == {k: ["c3"] for k in keys},
                timeout=60,
                what="the survivor to move every rollout on",
            )
            seqs: dict[str, list[int]] = defaultdict(list)
            content: dict[tuple[str, int], bytes] = {}
            for d in bus.diffs:
                seqs[d["rollout"]].append(d["seq"])
                answer = repr(
                    {k: d[k] for k in ("clusters", "answerDigest", "revision", "complete")}
                ).encode()
                assert content.setdefault((d["rollout"], d["seq"]), answer) == answer, (
                    f"{d['rollout']} seq {d['seq']} rewritten"
                )
            for key, got in seqs.items():
                distinct = sorted(set(got))
                assert distinct == list(range(1, len(distinct) + 1)), f"{key}: seq {got} has a gap"
            for key in keys:
                answers = [content[(key, seq)] for seq in sorted(set(seqs[key]))]
                assert all(a != b for a, b in itertools.pairwise(answers)), f"{key}: the same answer twice"
    finally:
        for w in (w1, w2):
            stop_process(w)
    assert w2.returncode == 0, (w2.stderr.read() if w2.stderr else b"").decode()[-2000:]
