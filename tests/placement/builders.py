"""Raw Kubernetes dicts for placement tests, and one call to schedule them.

Objects are built exactly as a user would write them (camelCase, absent fields left out), because
the engine reads objects "as written" (no API server defaults). `run` parses them the way `fleetplace simulate`
does and schedules one placement at a fixed `now`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import ScheduleResult, fleet_of, schedule

GROUP = "cluster.open-cluster-management.io"
CLUSTERSET_LABEL = f"{GROUP}/clusterset"
PLACEMENT_LABEL = f"{GROUP}/placement"

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NS = "ns1"
PLACEMENT = "placement1"
ABSENT: Any = object()  # marks a field that must not be written at all

Obj = dict[str, Any]


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(seconds: float) -> str:
    return iso(NOW - timedelta(seconds=seconds))


def cluster(
    name: str,
    *,
    clusterset: str | None = "set1",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Obj] = (),
    allocatable: Mapping[str, Any] | None = None,
    capacity: Mapping[str, Any] | None = None,
    claims: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    deleting: bool = False,
) -> Obj:
    """A ManagedCluster; `clusterset` sets the exclusive set label (None: no such label)."""
    all_labels = dict(labels or {})
    if clusterset is not None:
        all_labels[CLUSTERSET_LABEL] = clusterset
    metadata: Obj = {"name": name}
    if all_labels:
        metadata["labels"] = all_labels
    if deleting:
        metadata["deletionTimestamp"] = ago(60)
        metadata["finalizers"] = ["cluster.open-cluster-management.io/api-resource-cleanup"]
    spec: Obj = {"hubAcceptsClient": True}
    if taints:
        spec["taints"] = list(taints)
    status: Obj = {}
    if allocatable is not None:
        status["allocatable"] = dict(allocatable)
    if capacity is not None:
        status["capacity"] = dict(capacity)
    if claims is not None:
        pairs = claims.items() if isinstance(claims, Mapping) else claims
        status["clusterClaims"] = [{"name": k, "value": v} for k, v in pairs]
    obj: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "ManagedCluster", "metadata": metadata, "spec": spec}
    if status:
        obj["status"] = status
    return obj


def memory_cluster(name: str, memory: Any, **kw: Any) -> Obj:
    """A cluster whose allocatable and capacity memory are both `memory` (the resource prioritizers need both)."""
    return cluster(name, allocatable={"memory": memory}, capacity={"memory": memory}, **kw)


def taint(key: str, effect: str = "NoSelect", value: str | None = None, added: Any = ABSENT) -> Obj:
    """A taint; `added` is an RFC 3339 string, None for JSON null, or left out."""
    t: Obj = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    if added is not ABSENT:
        t["timeAdded"] = added
    return t


def toleration(
    key: str | None = None,
    operator: str | None = None,
    value: str | None = None,
    effect: str | None = None,
    seconds: int | None = None,
) -> Obj:
    t: Obj = {}
    for field, v in (("key", key), ("operator", operator), ("value", value), ("effect", effect)):
        if v is not None:
            t[field] = v
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


def cluster_set(name: str, selector_type: str | None = None, label_selector: Any = ABSENT) -> Obj:
    """A ManagedClusterSet: exclusive by default; `label_selector` may be None (JSON null) or a dict."""
    selector: Obj = {}
    if selector_type is not None:
        selector["selectorType"] = selector_type
    if label_selector is not ABSENT:
        selector["labelSelector"] = label_selector
    obj: Obj = {"apiVersion": f"{GROUP}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": name}}
    if selector:
        obj["spec"] = {"clusterSelector": selector}
    return obj


def global_set(name: str = "global") -> Obj:
    return cluster_set(name, "LabelSelector", {})


def binding(name: str, namespace: str = NS, cluster_set: str | None = None) -> Obj:
    """A binding named `name`; `spec.clusterSet` defaults to the same name (the webhook's rule)."""
    return {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterSet": cluster_set if cluster_set is not None else name},
    }


def placement(
    spec: Mapping[str, Any] | None = None,
    *,
    name: str = PLACEMENT,
    namespace: str = NS,
    annotations: Mapping[str, str] | None = None,
    deleting: bool = False,
) -> Obj:
    metadata: Obj = {"namespace": namespace, "name": name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    if deleting:
        metadata["deletionTimestamp"] = ago(10)
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Placement",
        "metadata": metadata,
        "spec": dict(spec or {}),
    }


def decision(
    name: str,
    clusters: Iterable[str],
    *,
    placement_name: str | None = PLACEMENT,
    namespace: str = NS,
) -> Obj:
    """A PlacementDecision; `placement_name=None` leaves the placement label off."""
    metadata: Obj = {"namespace": namespace, "name": name}
    if placement_name is not None:
        metadata["labels"] = {PLACEMENT_LABEL: placement_name}
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "PlacementDecision",
        "metadata": metadata,
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def own_decision(clusters: Iterable[str], index: int = 1) -> Obj:
    return decision(f"{PLACEMENT}-decision-{index}", clusters)


def foreign_decision(name: str, clusters: Iterable[str], namespace: str = NS) -> Obj:
    return decision(name, clusters, placement_name=f"other-{name}", namespace=namespace)


def addon_score(
    cluster_name: str,
    resource: str,
    scores: Mapping[str, int] | Sequence[tuple[str, int]],
    valid_until: Any = None,
) -> Obj:
    pairs = scores.items() if isinstance(scores, Mapping) else scores
    status: Obj = {"scores": [{"name": k, "value": v} for k, v in pairs]}
    if valid_until is not None:
        status["validUntil"] = valid_until
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"namespace": cluster_name, "name": resource},
        "status": status,
    }


# -- prioritizer policy pieces --------------------------------------------------------------------


def builtin(name: str, weight: Any = ABSENT, type_: str = "BuiltIn") -> Obj:
    config: Obj = {"scoreCoordinate": {"type": type_, "builtIn": name}}
    if weight is not ABSENT:
        config["weight"] = weight
    return config


def addon(resource: str, score: str, weight: Any = ABSENT) -> Obj:
    config: Obj = {
        "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": resource, "scoreName": score}}
    }
    if weight is not ABSENT:
        config["weight"] = weight
    return config


def policy(mode: str | None, *configurations: Obj) -> Obj:
    p: Obj = {"configurations": list(configurations)}
    if mode is not None:
        p["mode"] = mode
    return p


def label_predicate(match_labels: Mapping[str, str] | None = None, *expressions: Obj) -> Obj:
    selector: Obj = {}
    if match_labels:
        selector["matchLabels"] = dict(match_labels)
    if expressions:
        selector["matchExpressions"] = list(expressions)
    return {"requiredClusterSelector": {"labelSelector": selector}}


def claim_predicate(*expressions: Obj) -> Obj:
    return {"requiredClusterSelector": {"claimSelector": {"matchExpressions": list(expressions)}}}


def expr(key: str, operator: str, *values: str) -> Obj:
    e: Obj = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


# -- running ---------------------------------------------------------------------------------------


def bound_set(*clusters: Obj, set_name: str = "set1") -> list[Obj]:
    """The usual frame: one exclusive set bound into ns1, plus the given clusters."""
    return [cluster_set(set_name), binding(set_name), *clusters]


def run(objects: Iterable[Obj], *, key: str = f"{NS}/{PLACEMENT}", now: datetime = NOW) -> ScheduleResult:
    """Parse the objects as `fleetplace simulate` does and schedule placement `key` at `now`."""
    raws = list(objects)
    fleet = fleet_of((parse_object(raw), raw) for raw in raws)
    return schedule(fleet.placements[key], fleet, now)


def schedule_spec(spec: Mapping[str, Any], *others: Obj, now: datetime = NOW) -> ScheduleResult:
    """Schedule ns1/placement1 with this spec against the other objects."""
    return run([*others, placement(spec)], now=now)


def condition(result: ScheduleResult, type_: str) -> tuple[str, str, str]:
    """(status, reason, message) of one condition."""
    for c in result.conditions:
        if c.type == type_:
            return c.status, c.reason, c.message
    raise AssertionError(f"no {type_} condition")


def satisfied(result: ScheduleResult) -> tuple[str, str, str]:
    return condition(result, "PlacementSatisfied")


def misconfigured(result: ScheduleResult) -> tuple[str, str, str]:
    return condition(result, "PlacementMisconfigured")


def groups_of(result: ScheduleResult) -> list[tuple[int, str, list[str]]]:
    return [(g.index, g.name, list(g.clusters)) for g in result.groups]


def prioritizer_scores(result: ScheduleResult, name: str) -> dict[str, int]:
    """Raw scores of one executed prioritizer (empty dict when it did not run)."""
    for p in result.prioritizers:
        if p.name == name:
            return dict(p.scores)
    return {}


def prioritizer_names(result: ScheduleResult) -> list[str]:
    return sorted(p.name for p in result.prioritizers)


def requeue_seconds(result: ScheduleResult) -> float | None:
    return result.requeue_after_seconds()


def names(prefix: str, count: int, start: int = 1) -> list[str]:
    return [f"{prefix}{i}" for i in range(start, start + count)]


OK_MISCONFIGURED = ("False", "Succeedconfigured", "Placement configurations check pass")
ALL_SCHEDULED = ("True", "AllDecisionsScheduled", "All cluster decisions scheduled")
NO_MATCH = ("False", "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate")
NO_BINDINGS = (
    "False",
    "NoManagedClusterSetBindings",
    "No valid ManagedClusterSetBindings found in placement namespace",
)
