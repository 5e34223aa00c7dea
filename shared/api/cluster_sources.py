"""The clusters the engine sees, from every source that describes them.

A cluster's document is its ManagedCluster, or else the ManagedCluster a ClusterProfile stands
for (`cluster_profiles.chosen_document` says which one wins); its taints are that document's
`spec.taints` united with the set its taint owners publish (a `ClusterTaints` document, the
`taints` topic), the published set winning where both hold the same key and effect
(docs/topics.md#taints). The scheduler's processor applies these rules record by record;
`fold_cluster_sources` applies them to a whole set of objects at once (`simulate`'s scenarios).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from fleetplace.shared.api.cluster_profiles import (
    ClusterProfile,
    chosen_document,
    managed_cluster_document,
    winning_namespace,
)
from fleetplace.shared.api.objects import Document, parse_object
from fleetplace.shared.api.ocm import ClusterTaints, ManagedCluster

__all__ = ["fold_cluster_sources", "merged_taints", "profile_namespaces", "taint_keys"]


def taint_keys(taints: Iterable[Mapping[str, Any]]) -> frozenset[tuple[str, str]]:
    return frozenset((t.get("key", ""), t.get("effect", "")) for t in taints)


def merged_taints(
    own: Sequence[Mapping[str, Any]] | None,
    published: Sequence[Mapping[str, Any]],
    published_keys: Collection[tuple[str, str]],
) -> list[dict[str, Any]]:
    """A cluster's own taints united with the published set (`published_keys` = its key+effect
    pairs): the published taint wins where both hold the same key and effect."""
    kept = [dict(t) for t in own or () if (t.get("key", ""), t.get("effect", "")) not in published_keys]
    return kept + [dict(t) for t in published]


def fold_cluster_sources(
    items: Sequence[tuple[Document, Mapping[str, Any]]],
) -> list[tuple[Document, Mapping[str, Any]]]:
    """`items` with every ClusterProfile and ClusterTaints folded into the ManagedCluster the engine
    sees for its name, at the place of the first document about that cluster; other objects pass
    through in order. Later documents of the same source replace earlier ones, as later records
    of a topic would."""
    managed: dict[str, Mapping[str, Any]] = {}
    parsed: dict[str, ManagedCluster] = {}
    profiles: dict[str, dict[str, Mapping[str, Any]]] = {}
    published: dict[str, list[dict[str, Any]]] = {}
    order: list[tuple[str, Any]] = []  # ("cluster", name) or ("object", item)
    placed: set[str] = set()
    for obj, raw in items:
        if isinstance(obj, ManagedCluster):
            name = obj.metadata.name
            managed[name] = raw
            parsed[name] = obj
        elif isinstance(obj, ClusterProfile):
            name = obj.metadata.name
            profiles.setdefault(name, {})[obj.metadata.namespace] = managed_cluster_document(obj)
        elif isinstance(obj, ClusterTaints):
            name = obj.metadata.name
            published[name] = [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in obj.spec.taints
            ]
        else:
            order.append(("object", (obj, raw)))
            continue
        if name not in placed:
            placed.add(name)
            order.append(("cluster", name))
    out: list[tuple[Document, Mapping[str, Any]]] = []
    for what, item in order:
        if what == "object":
            out.append(item)
            continue
        name = item
        doc = chosen_document(managed.get(name), profiles.get(name, {}))
        if doc is None:
            continue  # taints for a cluster no source describes wait for it, as on the topic
        taints = published.get(name)
        if taints is None and doc is managed.get(name):
            out.append((parsed[name], doc))
            continue
        if taints is not None:
            spec = dict(doc.get("spec") or {})
            spec["taints"] = merged_taints(spec.get("taints"), taints, taint_keys(taints))
            doc = {**doc, "spec": spec}
        cluster = parse_object(doc, f"clusters/{name}")
        out.append((cluster, doc))
    return out


def profile_namespaces(items: Sequence[tuple[Document, Mapping[str, Any]]]) -> dict[str, str]:
    """cluster name -> the namespace of the ClusterProfile that stands for it (by the rule of
    `chosen_document`), for the clusters that no ManagedCluster describes."""
    managed = {obj.metadata.name for obj, _ in items if isinstance(obj, ManagedCluster)}
    namespaces: dict[str, list[str]] = {}
    for obj, _ in items:
        if isinstance(obj, ClusterProfile) and obj.metadata.name not in managed:
            namespaces.setdefault(obj.metadata.name, []).append(obj.metadata.namespace)
    return {name: winning_namespace(found) for name, found in namespaces.items()}
