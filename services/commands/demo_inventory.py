"""The demo's inventory act: a fleet known only as SIG-Multicluster ClusterProfiles (as OCM's hub
writes them), placed by `inventory/edge`; then one profile's control plane turns unhealthy and
the placement moves (docs/cluster-inventory.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

EDGE = "inventory/edge"
SET = "inventory"
NAMESPACE = "inventory"
# name -> allocatable CPUs: edge wants the two with the most
PROFILES = {"dublin": 12, "oslo": 8, "lisbon": 4}
_G = "cluster.open-cluster-management.io"


def _time(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def profile(name: str, healthy: bool, since: datetime) -> dict[str, Any]:
    """A ClusterProfile as OCM's hub writes one for a cluster of the set `inventory`."""
    cpu = PROFILES[name]
    return {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "namespace": NAMESPACE,
            "name": name,
            "labels": {
                "x-k8s.io/cluster-manager": "open-cluster-management",
                "multicluster.x-k8s.io/clusterset": SET,
                "open-cluster-management.io/cluster-name": name,
            },
        },
        "spec": {"displayName": name, "clusterManager": {"name": "open-cluster-management"}},
        "status": {
            "conditions": [
                {
                    "type": "ControlPlaneHealthy",
                    "status": "True" if healthy else "False",
                    "reason": "ManagedClusterAvailable" if healthy else "ManagedClusterLeaseUpdateStopped",
                    "message": "",
                    "lastTransitionTime": _time(since),
                }
            ],
            "properties": [
                {"name": "resources.kubernetes-fleet.io/allocatable-cpu", "value": str(cpu)},
                {"name": "resources.kubernetes-fleet.io/total-cpu", "value": "16"},
            ],
        },
    }


def edge_placement() -> dict[str, Any]:
    return {
        "apiVersion": f"{_G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": NAMESPACE, "name": "edge"},
        "spec": {
            "numberOfClusters": 2,
            "prioritizerPolicy": {
                "mode": "Exact",
                "configurations": [
                    {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1}
                ],
            },
        },
    }


def inventory(since: datetime) -> list[dict[str, Any]]:
    """The set selecting the profiles by the hub's label, its binding, and the profiles."""
    return [
        {
            "apiVersion": f"{_G}/v1beta2",
            "kind": "ManagedClusterSet",
            "metadata": {"name": SET},
            "spec": {
                "clusterSelector": {
                    "selectorType": "LabelSelector",
                    "labelSelector": {"matchLabels": {"multicluster.x-k8s.io/clusterset": SET}},
                }
            },
        },
        {
            "apiVersion": f"{_G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": NAMESPACE, "name": SET},
            "spec": {"clusterSet": SET},
        },
        *[profile(name, True, since) for name in PROFILES],
    ]
