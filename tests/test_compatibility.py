"""The documented deviations from OCM (docs/compatibility.md), each shown once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement import fleet_of, schedule

G = "cluster.open-cluster-management.io"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def objects(spec: dict[str, Any]) -> list[Any]:
    raws = [
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "s"}},
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": "ns", "name": "s"},
            "spec": {"clusterSet": "s"},
        },
        *[
            {
                "apiVersion": f"{G}/v1",
                "kind": "ManagedCluster",
                "metadata": {"name": f"c{i}", "labels": {f"{G}/clusterset": "s"}},
            }
            for i in (1, 2, 3)
        ],
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": "ns", "name": "p"},
            "spec": spec,
        },
    ]
    return [parse_object(r) for r in raws]


def run(spec: dict[str, Any]) -> Any:
    fleet = fleet_of(objects(spec))
    placement = fleet.placements["ns/p"]
    assert isinstance(placement, Placement)
    return schedule(placement, fleet, NOW)


def test_negative_number_of_clusters_is_misconfigured_instead_of_a_panic() -> None:
    result = run({"numberOfClusters": -1})
    misconfigured, satisfied = result.conditions
    assert (misconfigured.status, misconfigured.reason) == ("True", "Misconfigured")
    assert misconfigured.message == ":numberOfClusters must not be negative: -1"
    assert result.decisions == () and satisfied.reason == "NoManagedClusterMatched"


def test_decision_group_misconfiguration_empties_the_selection_and_says_so() -> None:
    result = run({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "5"}}})
    misconfigured, satisfied = result.conditions
    assert misconfigured.message == ":5 invalid type: string is not a percentage"
    assert result.number_selected == 0 and result.decisions == ()
    assert [(g.name, g.index, g.clusters) for g in result.groups] == [("", 0, ())]
    assert [p.name for p in result.pages] == ["p-decision-1"]
    assert (satisfied.status, satisfied.reason) == ("False", "NoManagedClusterMatched")
