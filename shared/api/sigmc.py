"""A decision as SIG-Multicluster `PlacementDecision` slices (KEP-5313, `multicluster.x-k8s.io/v1alpha1`).

Following the EndpointSlice convention the KEP adopts, one decision fans out to slices of at most
100 `decisions[]`, each `{clusterProfileRef: {name, namespace}, reason}` (the reference has
only those two fields upstream; an empty namespace would mean the slice's). Every slice of one
placement carries the same `multicluster.x-k8s.io/decision-key` label and its place in the
placement's order as `multicluster.x-k8s.io/decision-index` (0, 1, ...). The slices follow the
decision groups in order and split each into pages of 100, as OCM pages its own
PlacementDecisions, and keep OCM's placement and decision-group labels, so a consumer of either
format sees the same grouping. A slice is named `<placement>-<index>` in the placement's
namespace; names and label values too long for the API server are shortened as docs/names.md
says, and the full placement name is kept in the `fleetplace.dev/placement` annotation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fleetplace.shared.api.names import derived_label_value, derived_object_name
from fleetplace.shared.api.ocm import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
    ObjectMeta,
)

__all__ = [
    "API_VERSION",
    "DECISION_INDEX_LABEL",
    "DECISION_KEY_LABEL",
    "MAX_DECISIONS",
    "PLACEMENT_ANNOTATION",
    "SCHEDULER_NAME",
    "SEQ_ANNOTATION",
    "SigmcPlacementDecision",
    "decision_key",
    "slice_count",
    "slice_names",
    "slices",
]

API_VERSION = "multicluster.x-k8s.io/v1alpha1"
DECISION_KEY_LABEL = "multicluster.x-k8s.io/decision-key"
DECISION_INDEX_LABEL = "multicluster.x-k8s.io/decision-index"
MAX_DECISIONS = 100  # the CRD's maxItems
SCHEDULER_NAME = "fleetplace"
# the decision (its `seq` on the decisions topic) a slice was written for: what `audit` checks it against
SEQ_ANNOTATION = "fleetplace.dev/decision-seq"
# the placement's name, whole: its label may be shortened (docs/names.md)
PLACEMENT_ANNOTATION = "fleetplace.dev/placement"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ClusterProfileRef(_Strict):
    """The chosen ClusterProfile, as upstream's `ClusterProfileReference`: its name and namespace
    (empty: the slice's namespace)."""

    namespace: str = ""
    name: str = Field(min_length=1)


class SigmcClusterDecision(_Strict):
    cluster_profile_ref: ClusterProfileRef = Field(alias="clusterProfileRef")
    reason: str = ""


class SigmcPlacementDecision(_Strict):
    """One slice, as the upstream CRD defines it: `decisions` required, at most 100."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: ObjectMeta
    decisions: list[SigmcClusterDecision] = Field(max_length=MAX_DECISIONS)
    scheduler_name: str = Field(default="", alias="schedulerName")


Groups = Sequence[tuple[str, int, Sequence[str]]]  # (group name, group index, clusters in order)


def decision_key(placement_name: str) -> str:
    """The decision-key label value: the placement's name where it is a valid label value (at most
    63 characters), else its first 52 characters and a digest of the whole (docs/names.md)."""
    return derived_label_value(placement_name)


def _pages(groups: Groups) -> list[tuple[str, int, Sequence[str]]]:
    out: list[tuple[str, int, Sequence[str]]] = []
    for name, index, clusters in groups:
        chunks = [clusters[i : i + MAX_DECISIONS] for i in range(0, len(clusters), MAX_DECISIONS)]
        out.extend((name, index, chunk) for chunk in chunks or [()])
    return out


def slice_count(groups: Groups) -> int:
    return len(_pages(groups))


def slice_name(placement_name: str, index: int) -> str:
    """`<placement>-<index>`, the placement's name shortened if the whole would pass 253 characters."""
    return derived_object_name(placement_name, f"-{index}")


def slice_names(placement_name: str, count: int) -> list[str]:
    return [slice_name(placement_name, i) for i in range(count)]


def slices(
    placement_key: str,
    groups: Groups,
    reasons: Mapping[str, str],
    profile_namespace: Callable[[str], str],
    seq: int | None = None,
) -> list[dict[str, Any]]:
    """The slices of one decision. `profile_namespace(cluster)`: the namespace of the
    ClusterProfile a decision references; `seq`: the decision's seq on the decisions topic."""
    namespace, _, name = placement_key.partition("/")
    key = decision_key(name)
    out: list[dict[str, Any]] = []
    for index, (group_name, group_index, clusters) in enumerate(_pages(groups)):
        metadata: dict[str, Any] = {
            "name": slice_name(name, index),
            "namespace": namespace,
            "labels": {
                DECISION_KEY_LABEL: key,
                DECISION_INDEX_LABEL: str(index),
                PLACEMENT_LABEL: key,
                DECISION_GROUP_NAME_LABEL: group_name,
                DECISION_GROUP_INDEX_LABEL: str(group_index),
            },
        }
        annotations = {PLACEMENT_ANNOTATION: name} if key != name else {}
        if seq is not None:
            annotations[SEQ_ANNOTATION] = str(seq)
        if annotations:
            metadata["annotations"] = annotations
        decisions = []
        for cluster in clusters:
            entry: dict[str, Any] = {
                "clusterProfileRef": {
                    "namespace": profile_namespace(cluster),
                    "name": cluster,
                }
            }
            reason = reasons.get(cluster)
            if reason:
                entry["reason"] = reason
            decisions.append(entry)
        out.append(
            {
                "apiVersion": API_VERSION,
                "kind": "PlacementDecision",
                "metadata": metadata,
                "decisions": decisions,
                "schedulerName": SCHEDULER_NAME,
            }
        )
    return out
