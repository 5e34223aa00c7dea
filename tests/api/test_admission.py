"""CRD defaults and validation, as an API server applies them before the controller sees objects."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.api.admission import AdmissionError, admit
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import Placement

G = "cluster.open-cluster-management.io"


def placement(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": "ns", "name": "p"},
        "spec": spec,
    }


def test_nested_defaults_apply_only_where_the_parent_is_present() -> None:
    bare = admit(placement())
    assert "prioritizerPolicy" not in bare["spec"] and "decisionStrategy" not in bare["spec"]
    assert bare["spec"]["sortBy"] == "ClusterName" and bare["spec"]["scoreRateLimit"] == "1m"
    full = admit(
        placement(
            prioritizerPolicy={
                "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}]
            },
            tolerations=[{"key": "k"}],
            decisionStrategy={"groupStrategy": {}},
        )
    )
    config = full["spec"]["prioritizerPolicy"]["configurations"][0]
    assert full["spec"]["prioritizerPolicy"]["mode"] == "Additive"
    assert config["weight"] == 1 and config["scoreCoordinate"]["type"] == "BuiltIn"
    assert full["spec"]["tolerations"][0]["operator"] == "Equal"
    assert full["spec"]["decisionStrategy"]["groupStrategy"]["clustersPerDecisionGroup"] == "100%"


def test_a_weight_written_without_value_means_one_after_admission_and_zero_as_written() -> None:
    raw = placement(
        prioritizerPolicy={"configurations": [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"}}]}
    )
    as_written = parse_object(raw)
    admitted = parse_object(admit(raw))
    assert isinstance(as_written, Placement) and isinstance(admitted, Placement)
    assert as_written.spec.prioritizer_policy.configurations[0].weight == 0
    assert admitted.spec.prioritizer_policy.configurations[0].weight == 1


def test_admission_does_not_mutate_its_input() -> None:
    raw = placement(tolerations=[{"key": "k"}])
    admit(raw)
    assert raw["spec"]["tolerations"] == [{"key": "k"}]


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        (
            {
                "prioritizerPolicy": {
                    "configurations": [
                        {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Balance"}, "weight": 11}
                    ]
                }
            },
            "weight",
        ),
        ({"prioritizerPolicy": {"configurations": [{"weight": 1}]}}, "scoreCoordinate"),
        (
            {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"type": "Plugin"}}]}},
            "scoreCoordinate.type",
        ),
        ({"tolerations": [{"key": "k", "effect": "NoExecute"}]}, "tolerations[0].effect"),
        (
            {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "150%"}}},
            "clustersPerDecisionGroup",
        ),
        ({"decisionStrategy": {"groupStrategy": {"decisionGroups": [{"groupName": "-bad"}]}}}, "groupName"),
        ({"sortBy": "Random"}, "sortBy"),
        ({"scoreRateLimit": "1d"}, "scoreRateLimit"),
        (
            {
                "spreadPolicy": {
                    "spreadConstraints": [{"topologyKey": "zone", "topologyKeyType": "Label", "maxSkew": 0}]
                }
            },
            "maxSkew",
        ),
    ],
)
def test_invalid_placements_are_rejected_naming_the_field(spec: dict[str, Any], path: str) -> None:
    with pytest.raises(AdmissionError) as info:
        admit(placement(**spec), "fleet.yaml#3")
    message = str(info.value)
    assert message.startswith("fleet.yaml#3: Placement 'ns/p': ")
    assert path in message


def test_every_problem_is_reported_not_only_the_first() -> None:
    with pytest.raises(AdmissionError) as info:
        admit(placement(sortBy="x", scoreRateLimit="y"))
    assert {p for p, _ in info.value.problems} == {"spec.sortBy", "spec.scoreRateLimit"}


def test_cluster_taints_and_scores_and_bindings_are_validated() -> None:
    cluster = {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "c"},
        "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]},
    }
    with pytest.raises(AdmissionError, match=r"spec.taints\[0\].effect"):
        admit(cluster)
    score = {
        "apiVersion": f"{G}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"namespace": "c", "name": "s"},
        "status": {"scores": [{"name": "x", "value": 101}]},
    }
    with pytest.raises(AdmissionError, match=r"status.scores\[0\].value"):
        admit(score)
    binding = {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"namespace": "ns", "name": "a"},
        "spec": {"clusterSet": "b"},
    }
    with pytest.raises(AdmissionError, match=r"must equal spec\.clusterSet"):
        admit(binding)


def test_cluster_set_gets_the_exclusive_label_selector_by_default() -> None:
    out = admit({"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "s"}})
    assert out["spec"]["clusterSelector"]["selectorType"] == "ExclusiveClusterSetLabel"


@pytest.mark.parametrize("value", ["3", 3.0, True])
def test_integer_fields_take_only_json_integers_as_go_decodes_them(value: object) -> None:
    from fleetplace.shared.api.objects import ObjectError

    with pytest.raises(ObjectError, match=r"spec\.numberOfClusters"):
        parse_object(placement(numberOfClusters=value))
