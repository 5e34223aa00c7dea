"""The test validator refuses what the API server refuses, and accepts what it accepts."""

from __future__ import annotations

from typing import Any

from tests.upstream.schema import problems


def _slice(**decision: Any) -> dict[str, Any]:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "PlacementDecision",
        "metadata": {
            "name": "web-0",
            "namespace": "apps",
            "labels": {"multicluster.x-k8s.io/decision-key": "web"},
        },
        "decisions": [decision],
    }


def _page(**entry: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {"name": "web-decision-1", "namespace": "apps"},
        "status": {"decisions": [entry]},
    }


def test_a_valid_slice_and_page_pass() -> None:
    assert problems(_slice(clusterProfileRef={"name": "east", "namespace": "fleet"}, reason="r")) == []
    assert problems(_page(clusterName="east", reason="", score=160)) == []


def test_unknown_fields_missing_required_and_wrong_types_are_refused() -> None:
    ref = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile", "name": "east"}
    assert problems(_slice(clusterProfileRef=ref)) == [
        "decisions[0].clusterProfileRef.apiVersion: unknown field",
        "decisions[0].clusterProfileRef.kind: unknown field",
    ]
    assert problems(_page(clusterName="east", reason="", score="160")) == [
        "status.decisions[0].score: must be of type integer, got str"
    ]
    assert problems(_page(clusterName="east")) == ["status.decisions[0].reason: Required value"]
    assert problems(_page(clusterName="east", reason="", score=2**63)) == [
        "status.decisions[0].score: out of the int64 range"
    ]


def test_max_items_and_metadata_rules() -> None:
    many = _slice(clusterProfileRef={"name": "c"})
    many["decisions"] = many["decisions"] * 101
    assert problems(many) == ["decisions: must have at most 100 items, has 101"]
    bad = _slice(clusterProfileRef={"name": "c"})
    bad["metadata"] = {"name": "Bad Name!", "namespace": "Fleet_NS", "labels": {"bad key!": "x" * 64}}
    assert len(problems(bad)) == 4


def test_enum_and_pattern_of_a_placement() -> None:
    placement = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "p", "namespace": "n"},
        "spec": {"sortBy": "Sometimes", "scoreRateLimit": "1d"},
    }
    found = problems(placement)
    assert any(p.startswith("spec.sortBy: Unsupported value") for p in found)
    assert any(p.startswith("spec.scoreRateLimit: '1d' does not match") for p in found)
