"""The upstream CRDs come from the Go modules pinned in shared/upstream/go.mod, whole."""

from __future__ import annotations

import pytest

from tests.upstream import crds


def test_every_crd_fleetplace_uses_is_read_from_the_pinned_modules() -> None:
    paths = crds.upstream_crds()
    assert len(paths) == len(crds.CRD_FILES) == 8
    assert all(
        f"@{crds.pinned_version(f.module)}" in str(p) for f, p in zip(crds.CRD_FILES, paths, strict=True)
    )
    kinds = set(crds.crd_documents())
    assert kinds == {
        ("cluster.open-cluster-management.io", "ManagedCluster"),
        ("cluster.open-cluster-management.io", "ManagedClusterSet"),
        ("cluster.open-cluster-management.io", "ManagedClusterSetBinding"),
        ("cluster.open-cluster-management.io", "Placement"),
        ("cluster.open-cluster-management.io", "PlacementDecision"),
        ("cluster.open-cluster-management.io", "AddOnPlacementScore"),
        ("multicluster.x-k8s.io", "ClusterProfile"),
        ("multicluster.x-k8s.io", "PlacementDecision"),
    }


def test_the_pins_are_the_teams() -> None:
    assert crds.pinned_version(crds.OCM_API) == "v1.3.0"
    assert crds.pinned_version(crds.CLUSTER_INVENTORY_API) == "v0.1.0"


def test_schemas_are_those_of_served_versions() -> None:
    schema = crds.openapi_schema("multicluster.x-k8s.io", "PlacementDecision", "v1alpha1")
    assert schema["type"] == "object"
    assert crds.served_versions("multicluster.x-k8s.io", "ClusterProfile") == ["v1alpha1"]
    with pytest.raises(KeyError, match="serves no version 'v1alpha2'"):
        crds.openapi_schema("multicluster.x-k8s.io", "ClusterProfile", "v1alpha2")
