"""OCM objects rewritten as an inventory publishes them: every ManagedCluster as the
SIG-Multicluster ClusterProfile of docs/cluster-inventory.md's table (labels verbatim, claims and
KubeFleet's resource properties in `status.properties`, `ControlPlaneHealthy` True), its
`spec.taints` moved to a ClusterTaints document. Written from the table, not from the code that
reads profiles: the tests hold the two readings equal."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FLEET = "resources.kubernetes-fleet.io"
RESOURCE_NAMES = {
    ("allocatable", "cpu"): f"{FLEET}/allocatable-cpu",
    ("allocatable", "memory"): f"{FLEET}/allocatable-memory",
    ("capacity", "cpu"): f"{FLEET}/total-cpu",
    ("capacity", "memory"): f"{FLEET}/total-memory",
}
HEALTHY_SINCE = "2020-01-01T00:00:00Z"


def profile_of(cluster: Mapping[str, Any], namespace: str, api_version: str = "v1alpha1") -> dict[str, Any]:
    meta = cluster.get("metadata") or {}
    status = cluster.get("status") or {}
    properties = [{"name": c["name"], "value": c["value"]} for c in status.get("clusterClaims") or []]
    for (where, resource), name in RESOURCE_NAMES.items():
        value = (status.get(where) or {}).get(resource)
        if value is not None:
            properties.append({"name": name, "value": str(value)})
    metadata: dict[str, Any] = {"namespace": namespace, "name": meta["name"]}
    for field in ("labels", "annotations", "creationTimestamp", "deletionTimestamp"):
        if meta.get(field) is not None:
            metadata[field] = meta[field]
    out_status: dict[str, Any] = {
        "conditions": [
            {
                "type": "ControlPlaneHealthy",
                "status": "True",
                "reason": "ManagedClusterAvailable",
                "message": "",
                "lastTransitionTime": HEALTHY_SINCE,
            }
        ],
        "properties": properties,
    }
    version = (status.get("version") or {}).get("kubernetes")
    if version:
        out_status["version"] = {"kubernetes": version}
    return {
        "apiVersion": f"multicluster.x-k8s.io/{api_version}",
        "kind": "ClusterProfile",
        "metadata": metadata,
        "spec": {"displayName": meta["name"], "clusterManager": {"name": "open-cluster-management"}},
        "status": out_status,
    }


def taints_of(cluster: Mapping[str, Any]) -> dict[str, Any] | None:
    taints = (cluster.get("spec") or {}).get("taints")
    if not taints:
        return None
    return {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "ClusterTaints",
        "metadata": {"name": cluster["metadata"]["name"]},
        "spec": {"taints": taints},
    }


def as_profiles(objects: Iterable[Mapping[str, Any]], namespace: str = "ns1") -> list[dict[str, Any]]:
    """The objects with every ManagedCluster replaced by its profile (and its taints document)."""
    out: list[dict[str, Any]] = []
    for obj in objects:
        if obj.get("kind") != "ManagedCluster":
            out.append(dict(obj))
            continue
        out.append(profile_of(obj, namespace))
        taints = taints_of(obj)
        if taints is not None:
            out.append(taints)
    return out
