"""CEL built to be expensive: the cost limit holds (the cluster simply does not match), but the price
of reaching it is what a hostile Placement can make a worker pay, per cluster, per evaluation.

OCM's cel-go reaches its 1,000,000 cost limit in milliseconds; ours takes about 0.1 s per cluster
on the development machine. The worker does these verdicts ahead in short steps and keeps
answering meanwhile (tests/scheduler/test_expensive_cel.py), and caches them per cluster version,
but the CPU time is spent: a placement with such an expression over 1,000 clusters costs about
100 s of one core when it is first evaluated, and 0.1 s per cluster that changes after that. Reported; strict xfail so a fix shows up here.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from fleetplace.shared.api.admission import admit
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import PlacementEngine, apply_object
from tests.fuzz import hostile as H

CLUSTERS = 4
BUDGET_PER_CLUSTER_S = 0.05


def _engine(expression: str) -> PlacementEngine:
    engine = PlacementEngine()
    prod = {H.SET_LABEL: "prod"}
    objects = [
        H.clusterset("prod"),
        H.binding("cel", "prod"),
        *[H.cluster(f"c{i}", prod) for i in range(CLUSTERS)],
        H.placement(
            "cel",
            "p",
            predicates=[{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}],
        ),
    ]
    for raw in objects:
        admitted = admit(raw)
        apply_object(engine.fleet, parse_object(admitted), admitted)
    return engine


def test_an_expression_over_the_cost_limit_matches_no_cluster() -> None:
    engine = _engine(H.EXPENSIVE_CEL[0])
    result = engine.evaluate("cel/p", datetime(2026, 1, 1, tzinfo=UTC))
    assert result is not None and result.decisions == ()


# only the time bound is the known gap: an evaluation that raises is a failure, not this one
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="CEL cost metering: reaching the 1,000,000 cost limit takes ~0.1 s per cluster (cel-go: ms)",
)
def test_reaching_the_cost_limit_is_cheap_per_cluster() -> None:
    engine = _engine(H.EXPENSIVE_CEL[0])
    started = time.perf_counter()
    engine.evaluate("cel/p", datetime(2026, 1, 1, tzinfo=UTC))
    per_cluster = (time.perf_counter() - started) / CLUSTERS
    assert per_cluster < BUDGET_PER_CLUSTER_S, f"{per_cluster:.3f} s per cluster"
