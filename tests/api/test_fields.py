"""Unknown fields and API versions: found by path, reported to the worker's counter, refused by
admission when the apiVersion is not served."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetplace.shared.api.admission import AdmissionError, admit
from fleetplace.shared.api.fields import unknown_fields

from ..bench.large_fleet import hub_cluster

G = "cluster.open-cluster-management.io"


def typo_placement() -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": "ns", "name": "p", "managedFields": [{"manager": "kubectl"}]},
        "spec": {
            "numberOfCluster": 2,
            "predicates": [{"requiredClusterSelector": {"labelSelectors": {}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSecond": 5}],
        },
        "status": {"numberOfSelectedClusters": 0},
    }


def test_unknown_fields_are_named_by_their_path() -> None:
    assert unknown_fields(typo_placement()) == [
        "spec.numberOfCluster",
        "spec.predicates[0].requiredClusterSelector.labelSelectors",
        "spec.tolerations[0].tolerationSecond",
    ]


def test_a_cluster_as_a_hub_writes_it_has_none() -> None:
    assert unknown_fields(hub_cluster(7)) == []


def test_admission_tells_the_worker_what_it_dropped_and_still_admits() -> None:
    dropped: list[list[str]] = []
    admitted = admit(typo_placement(), "placements/ns/p", dropped=dropped.append)
    assert admitted["spec"]["sortBy"] == "ClusterName"
    assert dropped == [unknown_fields(typo_placement())]
    admit(hub_cluster(1), "clusters/cluster-00001", dropped=dropped.append)
    assert len(dropped) == 1  # nothing to report: not called


@pytest.mark.parametrize("version", [f"{G}/v9", f"{G}/v1beta1", "v1"])
def test_admission_refuses_an_api_version_the_kind_is_not_served_in(version: str) -> None:
    cluster = {**hub_cluster(1), "apiVersion": version}
    with pytest.raises(AdmissionError, match=r"apiVersion: .* does not serve ManagedCluster"):
        admit(cluster, "clusters/c")


SPEC_FIELDS = {"clusterSets", "numberOfClusters", "predicates", "prioritizerPolicy", "tolerations"}
SPEC_FIELDS |= {"decisionStrategy", "spreadPolicy", "sortBy", "scoreRateLimit"}
# random lower-case words are (almost) never a field of the spec: the known names are drawn too,
# so that both sides of "exactly when" are tried
keys = st.one_of(
    st.sampled_from(sorted(SPEC_FIELDS)),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12),
)


@given(st.dictionaries(keys, st.integers(), max_size=4))
def test_a_field_is_unknown_exactly_when_the_spec_schema_lacks_it(extra: dict[str, int]) -> None:
    placement = {"kind": "Placement", "metadata": {"name": "p"}, "spec": dict(extra)}
    assert set(unknown_fields(placement)) == {f"spec.{k}" for k in extra if k not in SPEC_FIELDS}
