"""Two scheduler processes split the placements; SIGKILL one and the other takes over."""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.placement import PlacementEngine, apply_object
from tests.faults.processes import WorkerProcess
from tests.scheduler.harness import Bus, base_fleet, cluster, placement

pytestmark = pytest.mark.integration

PLACEMENTS = 24


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


def owned(worker: WorkerProcess) -> int:
    """The placements the instance owns (0 while its HTTP server is not up yet)."""
    try:
        return int(worker.metrics().get("fleetplace_placements_owned", 0))
    except OSError:
        return 0


async def test_sigkilled_worker_is_replaced_and_every_decision_is_right(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    group = f"{topics.prefix}sched"
    w1 = WorkerProcess(broker, topics.prefix, group, "w1", tmp_path).start()
    w2 = WorkerProcess(broker, topics.prefix, group, "w2", tmp_path).start()
    try:
        async with Bus(broker, topics) as bus:
            fleet = [*base_fleet(), cluster("c1"), cluster("c2"), cluster("c3")]
            placements = [placement("ns1", f"p{i:02d}") for i in range(PLACEMENTS)]
            await bus.publish(*fleet, *placements)
            await bus.wait_for(
                lambda: len(bus.latest()) == PLACEMENTS, timeout=60, what="all placements decided"
            )
            # the instance killed owns placements (on a loaded machine the second could have
            # joined late, or not at all, and then nothing would be taken over)
            await bus.wait_for(
                lambda: owned(w1) + owned(w2) == PLACEMENTS and owned(w1) > 0,
                timeout=60,
                what="the two to split",
            )

            w1.kill()
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
            assert owned(w2) == PLACEMENTS
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
        w1.stop()
        status = w2.stop()
    assert status == 0, "\n".join(list(w2.log_lines())[-20:])
