"""SIG-Multicluster `ClusterProfile` (KEP-4322, `multicluster.x-k8s.io`), read as a cluster.

The engine sees one kind of cluster, OCM's `ManagedCluster`. A profile from any inventory (OCM's
hub, GKE Fleet, KubeFleet, ...) becomes one by a fixed mapping (docs/cluster-inventory.md):

- `metadata.name` is the cluster's name; `metadata.labels` its labels, verbatim;
- every `status.properties[]` `{name, value}` is a cluster claim, verbatim;
- KubeFleet's resource properties (`resources.kubernetes-fleet.io/allocatable-cpu`, ...) are also
  the cluster's `status.allocatable` / `status.capacity` cpu and memory;
- the `ControlPlaneHealthy` condition is OCM's availability taint: True none, False
  `cluster.open-cluster-management.io/unavailable:NoSelect`, Unknown or absent
  `cluster.open-cluster-management.io/unreachable:NoSelect`, added at the condition's
  `lastTransitionTime` (an absent condition: the profile's `creationTimestamp`), so a replay gives
  the same toleration expiries as the live run;
- `metadata.deletionTimestamp` marks a terminating cluster, `status.version` is the cluster's.

`managed_cluster_document` builds the ManagedCluster document the rest of the product reads (the
CEL variable `managedCluster` included), and `chosen_document` says which source stands for a
name that several sources describe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from fleetplace.shared.api.ocm import GROUP, ObjectMeta, Time, _Model, _null_to_empty_list

__all__ = [
    "API_VERSIONS",
    "CONTROL_PLANE_HEALTHY",
    "RESOURCE_PROPERTIES",
    "UNAVAILABLE_TAINT",
    "UNREACHABLE_TAINT",
    "ClusterProfile",
    "chosen_document",
    "managed_cluster_document",
    "profile_problems",
    "winning_namespace",
]

PROFILE_GROUP = "multicluster.x-k8s.io"
# the only version any upstream CRD serves (cluster-inventory-api, OCM, KubeFleet): a v1alpha2
# object would be refused by an API server, so it is refused here too
API_VERSIONS = (f"{PROFILE_GROUP}/v1alpha1",)
CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy"
# OCM's registration taint controller puts these on a cluster whose Available condition is False
# (unavailable) or Unknown / missing (unreachable)
UNAVAILABLE_TAINT = f"{GROUP}/unavailable"
UNREACHABLE_TAINT = f"{GROUP}/unreachable"

_FLEET_RESOURCES = "resources.kubernetes-fleet.io"
# KubeFleet's well-known property names -> (the ManagedCluster status map, the resource)
RESOURCE_PROPERTIES: dict[str, tuple[str, str]] = {
    f"{_FLEET_RESOURCES}/allocatable-cpu": ("allocatable", "cpu"),
    f"{_FLEET_RESOURCES}/allocatable-memory": ("allocatable", "memory"),
    f"{_FLEET_RESOURCES}/total-cpu": ("capacity", "cpu"),
    f"{_FLEET_RESOURCES}/total-memory": ("capacity", "memory"),
}


class ClusterManager(_Model):
    name: str = ""


class ClusterProfileSpec(_Model):
    display_name: str = ""
    cluster_manager: ClusterManager = Field(default_factory=ClusterManager)


class Condition(_Model):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    observed_generation: int = 0
    last_transition_time: Time | None = None


class ClusterVersion(_Model):
    kubernetes: str = ""


class Property(_Model):
    name: str = ""
    value: str = ""
    last_observed_time: Time | None = None


class ClusterProfileStatus(_Model):
    conditions: Annotated[list[Condition], BeforeValidator(_null_to_empty_list)] = Field(default_factory=list)
    version: ClusterVersion = Field(default_factory=ClusterVersion)
    properties: Annotated[list[Property], BeforeValidator(_null_to_empty_list)] = Field(default_factory=list)


class ClusterProfile(_Model):
    api_version: str = API_VERSIONS[0]
    kind: Literal["ClusterProfile"] = "ClusterProfile"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterProfileSpec = Field(default_factory=ClusterProfileSpec)
    status: ClusterProfileStatus = Field(default_factory=ClusterProfileStatus)

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"


def _obj(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def profile_problems(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the API server (the upstream CRD's schema) refuses in a ClusterProfile, and what the
    mapping cannot read: a resource property whose value is not a Kubernetes quantity."""
    # the quantity grammar is the engine's; imported here so that reading objects does not load it
    from fleetplace.shared.placement.quantity import InvalidQuantity, parse_quantity

    problems: list[tuple[str, str]] = []
    meta, spec, status = _obj(doc.get("metadata")), _obj(doc.get("spec")), _obj(doc.get("status"))
    if not meta.get("namespace"):
        problems.append(("metadata.namespace", "Required value"))
    manager = _obj(spec.get("clusterManager")).get("name")
    if not isinstance(manager, str) or not manager:
        problems.append(("spec.clusterManager.name", "Required value"))
    elif len(manager) > 63:
        problems.append(("spec.clusterManager.name", "may not be longer than 63"))
    for i, p in enumerate(_list(status.get("properties"))):
        path = f"status.properties[{i}]"
        if not isinstance(p, Mapping):
            continue
        name, value = p.get("name"), p.get("value")
        if not isinstance(name, str) or not 1 <= len(name) <= 253:
            problems.append((f"{path}.name", "Required value of 1..253 characters"))
        if not isinstance(value, str) or not 1 <= len(value) <= 1024:
            problems.append((f"{path}.value", "Required value of 1..1024 characters"))
        elif name in RESOURCE_PROPERTIES:
            try:
                parse_quantity(value)
            except InvalidQuantity as e:
                problems.append((f"{path}.value", f"{name} is not a Kubernetes quantity: {e}"))
    seen: set[str] = set()
    for i, c in enumerate(_list(status.get("conditions"))):
        path = f"status.conditions[{i}]"
        if not isinstance(c, Mapping):
            continue
        kind = c.get("type")
        if not isinstance(kind, str) or not kind:
            problems.append((f"{path}.type", "Required value"))
        elif kind in seen:
            problems.append((f"{path}.type", f"Duplicate value: {kind!r}"))
        else:
            seen.add(kind)
        if c.get("status") not in ("True", "False", "Unknown"):
            problems.append(
                (f"{path}.status", f"Unsupported value: {c.get('status')!r}: True, False or Unknown")
            )
        if not c.get("lastTransitionTime"):
            problems.append((f"{path}.lastTransitionTime", "Required value"))
    return problems


def _time(t: datetime) -> str:
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def managed_cluster_document(profile: ClusterProfile) -> dict[str, Any]:
    """The ManagedCluster document that stands for `profile` (the mapping of the module doc)."""
    meta = profile.metadata
    metadata: dict[str, Any] = {"name": meta.name}
    if meta.labels:
        metadata["labels"] = dict(meta.labels)
    if meta.annotations:
        metadata["annotations"] = dict(meta.annotations)
    if meta.creation_timestamp is not None:
        metadata["creationTimestamp"] = _time(meta.creation_timestamp)
    if meta.deletion_timestamp is not None:
        metadata["deletionTimestamp"] = _time(meta.deletion_timestamp)
    status: dict[str, Any] = {}
    claims = [{"name": p.name, "value": p.value} for p in profile.status.properties]
    if claims:
        status["clusterClaims"] = claims
    for p in profile.status.properties:
        where = RESOURCE_PROPERTIES.get(p.name)
        if where is not None:
            status.setdefault(where[0], {})[where[1]] = p.value
    if profile.status.version.kubernetes:
        status["version"] = {"kubernetes": profile.status.version.kubernetes}
    spec: dict[str, Any] = {}
    taint = _health_taint(profile)
    if taint is not None:
        spec["taints"] = [taint]
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ManagedCluster",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def _health_taint(profile: ClusterProfile) -> dict[str, Any] | None:
    healthy = next((c for c in profile.status.conditions if c.type == CONTROL_PLANE_HEALTHY), None)
    if healthy is not None and healthy.status == "True":
        return None
    key = UNAVAILABLE_TAINT if healthy is not None and healthy.status == "False" else UNREACHABLE_TAINT
    since = healthy.last_transition_time if healthy is not None else profile.metadata.creation_timestamp
    taint: dict[str, Any] = {"key": key, "effect": "NoSelect"}
    if since is not None:
        taint["timeAdded"] = _time(since)
    return taint


def chosen_document(
    managed: Mapping[str, Any] | None, profiles: Mapping[str, Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The ManagedCluster document that stands for one cluster name.

    `managed`: the ManagedCluster of that name, if any; `profiles`: the ManagedCluster documents of
    its profiles, by namespace. A ManagedCluster wins over profiles (it is the cluster manager's
    own record, of which OCM's profiles are copies); among profiles, the one in the first namespace
    in sort order wins, so the answer does not depend on the order records arrive in."""
    if managed is not None:
        return managed
    if not profiles:
        return None
    return profiles[winning_namespace(profiles)]


def winning_namespace(namespaces: Iterable[str]) -> str:
    """Of the namespaces holding a profile of one name, the one whose profile stands for it."""
    return min(namespaces)
