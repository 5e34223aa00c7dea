"""Which fields of a document the OCM schemas do not know, and which API versions they serve.

The models in :mod:`fleetplace.shared.api.ocm` read what scheduling needs and ignore the rest, as
the placement controller's typed client does. The API server's schemas know more fields than
scheduling reads (a ManagedCluster's `leaseDurationSeconds`, every object's `status.conditions`,
the whole of `metadata`); those are listed here so that an object copied from a hub
(`kubectl get placements -o yaml`) has no unknown field, while a typo (`numberOfCluster`,
`predicate`) is found. Like `kubectl --validate=strict`, `publish` and `simulate` refuse
unknown fields; like the API server, the worker drops them and counts them.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Union

from pydantic import BaseModel

from fleetplace.shared.api.cluster_profiles import API_VERSIONS as PROFILE_API_VERSIONS
from fleetplace.shared.api.cluster_profiles import ClusterProfile, ClusterProfileStatus
from fleetplace.shared.api.ocm import (
    GROUP,
    TAINTS_API_VERSION,
    AddOnPlacementScore,
    AddOnPlacementScoreStatus,
    ClusterTaints,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    ManagedClusterSetSpec,
    ManagedClusterSpec,
    ManagedClusterStatus,
    ObjectMeta,
    Placement,
    PlacementDecision,
)
from fleetplace.shared.api.rollouts import API_VERSION as ROLLOUT_API_VERSION
from fleetplace.shared.api.rollouts import Rollout
from fleetplace.shared.api.score_sources import API_VERSION as SCORE_SOURCE_API_VERSION
from fleetplace.shared.api.score_sources import ScoreSource

__all__ = ["API_VERSIONS", "unknown_fields"]

# The versions each kind is served in; any other apiVersion is refused, as by the API server.
API_VERSIONS: dict[str, tuple[str, ...]] = {
    "ManagedCluster": (f"{GROUP}/v1",),
    "ManagedClusterSet": (f"{GROUP}/v1beta2", f"{GROUP}/v1beta1"),
    "ManagedClusterSetBinding": (f"{GROUP}/v1beta2", f"{GROUP}/v1beta1"),
    "Placement": (f"{GROUP}/v1beta1",),
    "PlacementDecision": (f"{GROUP}/v1beta1",),
    "AddOnPlacementScore": (f"{GROUP}/v1alpha1",),
    "ClusterTaints": (TAINTS_API_VERSION,),
    "ClusterProfile": PROFILE_API_VERSIONS,
    "Rollout": (ROLLOUT_API_VERSION,),
    "ScoreSource": (SCORE_SOURCE_API_VERSION,),
}

# Fields the API schemas define and scheduling does not read: known, not descended into.
_UNREAD: dict[type[BaseModel], frozenset[str]] = {
    ObjectMeta: frozenset(
        {
            "generateName",
            "selfLink",
            "deletionGracePeriodSeconds",
            "ownerReferences",
            "finalizers",
            "managedFields",
        }
    ),
    ManagedClusterSpec: frozenset({"managedClusterClientConfigs", "leaseDurationSeconds"}),
    ManagedClusterStatus: frozenset({"conditions", "version", "managedNamespaces"}),
    # the namespaces a set asks to be created on its clusters (OCM api#390): not a scheduling input
    ManagedClusterSetSpec: frozenset({"managedNamespaces"}),
    AddOnPlacementScoreStatus: frozenset({"conditions"}),
    # how to reach a cluster (v1alpha1 has both credentialProviders and accessProviders)
    ClusterProfileStatus: frozenset({"credentialProviders", "accessProviders"}),
    # kinds whose status scheduling does not read at all
    Placement: frozenset({"status"}),
    ManagedClusterSet: frozenset({"status"}),
    ManagedClusterSetBinding: frozenset({"status"}),
}

_Shape = type[BaseModel] | None  # a nested object to check, or a value not checked further


def _element(annotation: Any) -> tuple[_Shape, bool]:
    """The model a field holds (directly, optionally, or as list items) and whether it is a list."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _element(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            shape, many = _element(arg)
            if shape is not None:
                return shape, many
        return None, False
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        shape, _ = _element(args[0]) if args else (None, False)
        return shape, True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


@dataclass(frozen=True, slots=True)
class _Schema:
    """What one model knows: every JSON name, and the names that hold nested models to check."""

    known: frozenset[str]
    nested: tuple[tuple[str, type[BaseModel], bool], ...]  # (name, model, is a list)


@cache
def _schema(model: type[BaseModel]) -> _Schema:
    known: set[str] = set(_UNREAD.get(model, frozenset()))
    nested: list[tuple[str, type[BaseModel], bool]] = []
    for name, info in model.model_fields.items():
        json_name = info.alias or name
        known.add(json_name)
        shape, many = _element(info.annotation)
        if shape is not None:
            nested.append((json_name, shape, many))
    return _Schema(frozenset(known), tuple(nested))


def _walk(value: Any, model: type[BaseModel], path: str, out: list[str]) -> None:
    if not isinstance(value, Mapping):
        return  # a wrong type is the models' error to report, not an unknown field
    schema = _schema(model)
    if not value.keys() <= schema.known:
        out.extend(f"{path}.{key}" if path else str(key) for key in value if key not in schema.known)
    for key, shape, many in schema.nested:
        item = value.get(key)
        if item is None:
            continue
        where = f"{path}.{key}" if path else key
        if not many:
            _walk(item, shape, where, out)
        elif isinstance(item, list):
            for i, element in enumerate(item):
                _walk(element, shape, f"{where}[{i}]", out)


_MODELS: dict[str, type[BaseModel]] = {
    "ManagedCluster": ManagedCluster,
    "ManagedClusterSet": ManagedClusterSet,
    "ManagedClusterSetBinding": ManagedClusterSetBinding,
    "Placement": Placement,
    "PlacementDecision": PlacementDecision,
    "AddOnPlacementScore": AddOnPlacementScore,
    "ClusterTaints": ClusterTaints,
    "ClusterProfile": ClusterProfile,
    "Rollout": Rollout,
    "ScoreSource": ScoreSource,
}


def unknown_fields(doc: Mapping[str, Any]) -> list[str]:
    """The paths (`spec.numberOfCluster`, `spec.predicates[0].labelSelector`) no schema of the
    document's kind defines; empty for a kind it does not know."""
    kind = doc.get("kind")
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        return []
    out: list[str] = []
    _walk(doc, model, "", out)
    return out
