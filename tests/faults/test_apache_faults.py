"""Fault injection on a three-node Apache Kafka (KRaft; replication factor 3, min.insync.replicas=2)
while two scheduler workers publish, and again while two rollout workers publish: the node leading
the outputs' first partitions (`decisions` and `placements`; `rollout-decisions` and
`rollout-state`) SIGKILLed, the active controller SIGKILLed, a rolling restart of every node, one
node SIGSTOPped for 20 s, and the worker kills on top. The checks are those of every fault run
(tests/faults/outputs.py, tests/faults/rollout_scenario.py): no decision lost or repeated, `seq`
contiguous per placement and per rollout, the final state equal to a from-scratch evaluation,
`fleetplace audit` reproducing every decision and every rollout diff. `make faults-apache` runs
them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.rollout_scenario import RolloutPlan, run_rollouts
from tests.faults.scenario import Plan, run

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.slow, pytest.mark.apache]

PLANS = [
    Plan("apache-partition-leader-sigkill", broker="apache", seconds=40, leader_kill=10),
    Plan("apache-controller-sigkill", broker="apache", seconds=40, controller_kill=10),
    Plan("apache-rolling-restart", broker="apache", seconds=60, rolling_restart=10),
    Plan("apache-node-sigstop-20s", broker="apache", seconds=50, node_pause=(10, 20)),
    Plan("apache-worker-sigkill", broker="apache", seconds=40, kill_every=6),
]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("plan", PLANS, ids=[p.name for p in PLANS])
async def test_the_scheduler_keeps_its_guarantees_through_apache_kafka_node_faults(
    plan: Plan, tmp_path: Path
) -> None:
    report = await run(plan, tmp_path)
    assert report.ok, report.explain()
    assert sum(report.faults.values()) >= 1, report.explain()


ROLLOUT_PLANS = [
    RolloutPlan(f"rollout-{p.name}", p, rollouts=4, clusters=100, soak="1s", converge_timeout=180)
    for p in PLANS
]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("plan", ROLLOUT_PLANS, ids=[p.name for p in ROLLOUT_PLANS])
async def test_the_rollout_workers_keep_their_guarantees_through_apache_kafka_node_faults(
    plan: RolloutPlan, tmp_path: Path
) -> None:
    report = await run_rollouts(plan, tmp_path)
    assert report.ok, report.explain()
    assert sum(report.faults.values()) >= 1, report.explain()
    # every rollout's final state was compared, and the diffs a read_committed reader sees are each
    # seen once (exactly-once output on Apache Kafka)
    assert report.checks["final_states_compared"] == plan.rollouts, report.explain()
    assert report.checks["diffs_repeated"] == 0 and report.diffs > 0, report.explain()
