"""A prioritizer added by one entry in the registry, and nothing else, takes part everywhere.

`Toy` scores a cluster by its `toy/score` label. Registered for the test only, it is scored by
`schedule`, shown in the explanation, re-evaluated by the scheduler processor when (and only
when) that label changes, and reproduced by the auditor.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import numpy as np

from fleetplace.services.auditor.audit import audit
from fleetplace.services.auditor.history import History
from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import fleet_of, schedule
from fleetplace.shared.placement.explain import explain
from fleetplace.shared.placement.framework import (
    IntArray,
    PlacementIndependent,
    Requeue,
    ScheduleContext,
    ScoreResult,
    SharedScores,
)
from fleetplace.shared.placement.options import EngineOptions
from fleetplace.shared.placement.plugins import registry
from fleetplace.shared.placement.reads import Reads
from tests.auditor.offline import T0, OfflineWorker, base_fleet, cluster, placement

LABEL = "toy/score"
PREFIX = "p."


class Toy:
    """The cluster's `toy/score` label as its score (0 without it)."""

    name = "Toy"
    reads = Reads(label_keys=frozenset({LABEL}))

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        fleet = ctx.fleet
        values = [int(fleet.clusters[fleet.name_of(int(s))].labels.get(LABEL, "0")) for s in slots]
        return ScoreResult(np.asarray(values, dtype=np.int64))

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        return None

    def shared(self) -> SharedScores | None:
        return PlacementIndependent(self)


@contextmanager
def toy_registered() -> Iterator[None]:
    def make(options: EngineOptions) -> Toy:
        return Toy()

    registry.BUILT_IN["Toy"] = make
    try:
        yield
    finally:
        del registry.BUILT_IN["Toy"]


TOY_ONLY = {
    "numberOfClusters": 1,
    "prioritizerPolicy": {
        "mode": "Exact",
        "configurations": [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Toy"}, "weight": 3}],
    },
}


def objects(toy: dict[str, str]) -> list[dict[str, Any]]:
    """The base fleet, c1..c3 with the given toy labels, and the placement ns1/toy."""
    clusters = [cluster(name, {LABEL: value, "tier": "gold"}) for name, value in sorted(toy.items())]
    return [*base_fleet(), *clusters, placement("ns1", "toy", **TOY_ONLY)]


def test_a_registered_toy_prioritizer_is_scored_and_explained() -> None:
    with toy_registered():
        raws = objects({"c1": "10", "c2": "50", "c3": "20"})
        fleet = fleet_of(parse_object(raw) for raw in raws)
        p = fleet.placements["ns1/toy"]
        result = schedule(p, fleet, T0)
        assert result.decisions == ("c2",)
        assert result.scores == {"c1": 30, "c2": 150, "c3": 60}
        assert [(s.name, s.weight, dict(s.scores)) for s in result.prioritizers] == [
            ("Toy", 3, {"c1": 10, "c2": 50, "c3": 20})
        ]
        why = explain(result, p, fleet, T0)
        assert why["c2"] == {
            "total": 150,
            "selected": True,
            "prioritizers": {"Toy": {"score": 50, "weight": 3}},
        }
        assert why["c1"]["prioritizers"] == {"Toy": {"score": 10, "weight": 3}}


def test_unregistered_the_toy_prioritizer_is_a_misconfiguration() -> None:
    raws = objects({"c1": "10"})
    fleet = fleet_of(parse_object(raw) for raw in raws)
    result = schedule(fleet.placements["ns1/toy"], fleet, T0)
    assert result.status.message == "incorrect builtin prioritizer: Toy"


def test_the_processor_reevaluates_on_the_label_the_toy_reads_and_not_on_another() -> None:
    with toy_registered():
        processor = SchedulerProcessor()
        raws = objects({"c1": "10", "c2": "50", "c3": "20"})
        for raw in raws:
            processor.apply(TOPICS[raw["kind"]], key(raw), raw)
        assert [d["decisions"] for d in processor.evaluate(T0)] == [["c2"]]

        processor.apply("clusters", "c1", cluster("c1", {LABEL: "10", "tier": "gold", "team": "a"}))
        assert processor.dirty == {}  # a label the toy does not read

        processor.apply("clusters", "c1", cluster("c1", {LABEL: "90", "tier": "gold", "team": "a"}))
        assert list(processor.dirty) == ["ns1/toy"]
        [diff] = processor.evaluate(T0 + timedelta(seconds=1))
        assert diff["trigger"] == {"kind": "cluster", "key": "c1"}
        assert diff["decisions"] == ["c1"] and diff["removed"] == ["c2"]


def test_the_auditor_reproduces_the_toy_prioritizers_decisions() -> None:
    with toy_registered():
        worker = OfflineWorker(PREFIX)
        worker.publish(*objects({"c1": "10", "c2": "50", "c3": "20"}))
        worker.step(T0)
        worker.publish(cluster("c3", {LABEL: "70", "tier": "gold"}))
        worker.step(T0 + timedelta(seconds=1))
        worker.publish(cluster("c1", {LABEL: "10", "tier": "silver"}))  # not read: no decision
        worker.step(T0 + timedelta(seconds=2))
        worker.drain(T0 + timedelta(seconds=2))
        assert [d["decisions"] for d in worker.diffs] == [["c2"], ["c3"]]
        report = audit(History.of(worker.records(), prefix=PREFIX))
        assert report.checked == 2 and report.reproduced == 2 and report.ok


TOPICS = {
    "ManagedCluster": "clusters",
    "ManagedClusterSet": "clustersets",
    "ManagedClusterSetBinding": "clustersetbindings",
    "Placement": "placements",
}


def key(raw: dict[str, Any]) -> str:
    meta = raw["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else str(meta["name"])
