"""Two scheduler processes split the placements; SIGKILL one and the other takes over."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections import defaultdict
from datetime import UTC, datetime

import pytest

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.placement import PlacementEngine, apply_object
from tests.proc import stop_process
from tests.scheduler.harness import Bus, base_fleet, cluster, placement

pytestmark = pytest.mark.integration

PLACEMENTS = 24


def start_worker(broker: str, topics: Topics, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FLEETPLACE_LOG_FORMAT": "console", "FLEETPLACE_LOG_LEVEL": "warning"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fleetplace.services.cli",
            "worker",
            "scheduler",
            "--bootstrap",
            broker,
            "--prefix",
            topics.prefix,
            "--group",
            f"{topics.prefix}sched",
            "--instance",
            name,
            "--http-port",
            "0",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def expected(objects: list[dict[str, object]]) -> dict[str, list[str]]:
    """A from-scratch evaluation of the final state, placements in namespace/name order."""
    engine = PlacementEngine()
    for raw in objects:
        apply_object(engine.fleet, parse_object(raw), raw)
    now = datetime.now(UTC)
    out = {}
    for key in sorted(engine.fleet.placements):
        result = engine.evaluate(key, now)
        assert result is not None
        engine.commit(result)
        out[key] = list(result.decisions)
    return out


async def test_sigkilled_worker_is_replaced_and_every_decision_is_right(broker: str, topics: Topics) -> None:
    w1 = start_worker(broker, topics, "w1")
    w2 = start_worker(broker, topics, "w2")
    try:
        async with Bus(broker, topics) as bus:
            fleet = [*base_fleet(), cluster("c1"), cluster("c2"), cluster("c3")]
            placements = [placement("ns1", f"p{i:02d}") for i in range(PLACEMENTS)]
            await bus.publish(*fleet, *placements)
            await bus.wait_for(
                lambda: len(bus.latest()) == PLACEMENTS, timeout=60, what="all placements decided"
            )
            sources = {d["placement"]: d for d in bus.decisions}
            assert len(sources) == PLACEMENTS

            w1.send_signal(signal.SIGKILL)
            w1.wait(10)
            await bus.publish(cluster("c4"))
            fleet.append(cluster("c4"))
            await bus.wait_for(
                lambda: (
                    all("c4" in d["decisions"] for d in bus.latest().values())
                    and len(bus.latest()) == PLACEMENTS
                ),
                timeout=60,
                what="the survivor to place every placement on c4",
            )
            final = {k: d["decisions"] for k, d in bus.latest().items()}
            assert final == expected(fleet + placements)

            seqs: dict[str, list[int]] = defaultdict(list)
            for d in bus.decisions:
                seqs[d["placement"]].append(d["seq"])
            for key, got in seqs.items():
                assert got == list(range(1, len(got) + 1)), f"{key}: seq {got} not contiguous or repeated"
            by_key: dict[str, list[list[str]]] = defaultdict(list)
            for d in bus.decisions:
                by_key[d["placement"]].append(d["decisions"])
            for key, states in by_key.items():
                assert all(a != b for a, b in itertools.pairwise(states)), f"{key}: same state twice"
    finally:
        for w in (w1, w2):
            stop_process(w)
    assert w2.returncode == 0, (w2.stderr.read() if w2.stderr else b"").decode()[-2000:]
