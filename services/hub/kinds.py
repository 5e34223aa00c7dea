"""The kinds the bridge copies from the hub, each with its topic and the contract's key
(docs/topics.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetplace.shared.bus.topics import (
    CLUSTER_PROFILES,
    CLUSTERS,
    CLUSTERSETBINDINGS,
    CLUSTERSETS,
    PLACEMENTS,
    SCORES,
)


@dataclass(frozen=True, slots=True)
class HubKind:
    """One kind on the hub: where the API server serves it and where it goes on the bus."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    topic: str  # the catalogue name, without prefix

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def resource(self) -> str:
        """`plural.group`, as RBAC and error messages name it."""
        return f"{self.plural}.{self.group}"

    def list_path(self) -> str:
        """The path listing and watching every object of the kind, in every namespace."""
        return f"/apis/{self.group}/{self.version}/{self.plural}"

    def key(self, obj: Mapping[str, Any]) -> str:
        """The record key of an object: `name`, or `namespace/name` for a namespaced kind."""
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if self.namespaced else str(meta["name"])


_OCM = "cluster.open-cluster-management.io"
_SIGMC = "multicluster.x-k8s.io"

# The versions are the storage versions of the upstream CRDs (docs/hub.md#what-the-bridge-reads).
HUB_KINDS: tuple[HubKind, ...] = (
    HubKind("ManagedCluster", _OCM, "v1", "managedclusters", False, CLUSTERS),
    HubKind("ManagedClusterSet", _OCM, "v1beta2", "managedclustersets", False, CLUSTERSETS),
    HubKind(
        "ManagedClusterSetBinding", _OCM, "v1beta2", "managedclustersetbindings", True, CLUSTERSETBINDINGS
    ),
    HubKind("Placement", _OCM, "v1beta1", "placements", True, PLACEMENTS),
    HubKind("AddOnPlacementScore", _OCM, "v1alpha1", "addonplacementscores", True, SCORES),
    HubKind("ClusterProfile", _SIGMC, "v1alpha1", "clusterprofiles", True, CLUSTER_PROFILES),
)


def as_published(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the API server serves it, without `metadata.managedFields` (bookkeeping of
    server-side apply that no consumer reads and that is often most of an object's size)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}
