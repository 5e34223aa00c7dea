"""Objects used exactly as written: absent fields and JSON nulls are Go zero values."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import ManagedClusterSet, Placement

from .builders import (
    binding,
    bound_set,
    cluster,
    misconfigured,
    own_decision,
    placement,
    run,
    satisfied,
    schedule_spec,
)


def test_null_weight_is_zero_and_switches_a_default_off() -> None:
    spec = {
        "prioritizerPolicy": {
            "mode": None,
            "configurations": [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"}, "weight": None}],
        }
    }
    result = schedule_spec(spec, *bound_set(cluster("c1"), cluster("c2")), own_decision(["c2"]))
    assert [(p.name, p.weight) for p in result.prioritizers] == [("Balance", 1)]


def test_null_operator_is_equal_and_null_value_is_empty() -> None:
    c = cluster("c1", taints=[{"key": "k", "effect": "NoSelect", "value": None, "timeAdded": None}])
    result = schedule_spec({"tolerations": [{"key": "k", "operator": None, "value": None}]}, *bound_set(c))
    assert result.decisions == ("c1",)


def test_null_type_of_a_score_coordinate_is_not_builtin() -> None:
    config = {"scoreCoordinate": {"type": None, "builtIn": "Balance"}, "weight": 1}
    result = schedule_spec({"prioritizerPolicy": {"configurations": [config]}}, *bound_set(cluster("c1")))
    assert misconfigured(result) == ("True", "Misconfigured", ":addOn should not be empty")


def test_null_set_spec_and_selector_mean_the_exclusive_label() -> None:
    for spec in (None, {"clusterSelector": None}, {"clusterSelector": {"selectorType": None}}):
        raw = {"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet"}
        raw |= {"metadata": {"name": "set1"}, "spec": spec}
        result = schedule_spec({}, raw, binding("set1"), cluster("c1"), cluster("c2", clusterset="x"))
        assert result.decisions == ("c1",)


def test_null_label_selector_of_a_label_selector_set_has_no_members() -> None:
    raw: dict[str, Any] = {
        "kind": "ManagedClusterSet",
        "metadata": {"name": "ls"},
        "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": None}},
    }
    s = parse_object(raw)
    assert isinstance(s, ManagedClusterSet)
    assert s.spec.cluster_selector.label_selector is None
    result = schedule_spec({}, raw, binding("ls"), cluster("c1"))
    assert satisfied(result)[1] == "AllManagedClusterSetsEmpty"


def test_null_cluster_spec_and_status() -> None:
    raw = cluster("c1")
    raw["spec"] = None
    raw["status"] = None
    assert schedule_spec({}, *bound_set(raw)).decisions == ("c1",)


@pytest.mark.parametrize(
    "spec",
    [
        None,
        {"prioritizerPolicy": None, "decisionStrategy": None, "predicates": None, "tolerations": None},
        {"decisionStrategy": {"groupStrategy": None}},
        {"numberOfClusters": None, "clusterSets": None},
        {"predicates": [{"requiredClusterSelector": None}]},
    ],
)
def test_null_placement_parts_are_their_defaults(spec: dict[str, Any] | None) -> None:
    raw = placement()
    raw["spec"] = spec
    assert isinstance(parse_object(raw), Placement)
    # schedule this very object: a null spec must select like an empty one
    assert run([*bound_set(cluster("c1")), raw]).decisions == ("c1",)


def test_null_statuses_of_decisions_and_scores() -> None:
    pd = own_decision(["c1"])
    pd["status"] = None
    score = {"kind": "AddOnPlacementScore", "metadata": {"namespace": "c1", "name": "demo"}, "status": None}
    result = schedule_spec({}, *bound_set(cluster("c1")), pd, score)
    assert result.decisions == ("c1",)
