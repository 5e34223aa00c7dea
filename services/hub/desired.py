"""What the hub should serve for one placement, built from what the scheduler published.

Nothing here renders a decision: shadow mode takes the SIG-MC slices the scheduler keeps on
`sigmc-placement-decisions` (built by `fleetplace.shared.api.sigmc.slices`), replace mode takes
the OCM PlacementDecision pages the scheduler pages (`SchedulerProcessor.placement_decisions`,
what `fleetplace export` prints) and adds what only the hub has: the owner reference to the
Placement's uid. Each format is a `SliceFormat`: how to read a slice's clusters, how to write a
slice holding other clusters (the union and carry versions of the move plan, docs/hub.md), and
which fields of a served object are the bridge's (the rest — uid, resourceVersion,
managedFields, labels of other owners on SIG-MC slices — is the API server's or someone else's).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetplace.shared.api.ocm import (
    DECISION_GROUP_INDEX_LABEL,
    DECISION_GROUP_NAME_LABEL,
    PLACEMENT_LABEL,
    decision_page_name,
)
from fleetplace.shared.api.sigmc import (
    DECISION_INDEX_LABEL,
    DECISION_KEY_LABEL,
    SEQ_ANNOTATION,
    slice_name,
)

__all__ = [
    "OCM",
    "PLACEMENT_ANNOTATION",
    "SIGMC",
    "SliceFormat",
    "placement_label",
    "placement_name",
    "placement_status",
    "replace_desired",
    "shadow_desired",
]

Obj = dict[str, Any]

OCM_API_VERSION = "cluster.open-cluster-management.io/v1beta1"
# the placement's whole name, which the scheduler writes beside a placement label it had to
# shorten (a label value holds at most 63 characters)
PLACEMENT_ANNOTATION = "fleetplace.dev/placement"


def placement_name(obj: Mapping[str, Any]) -> str | None:
    """The name of the placement a slice or page belongs to."""
    meta = obj.get("metadata") or {}
    whole = (meta.get("annotations") or {}).get(PLACEMENT_ANNOTATION)
    label = (meta.get("labels") or {}).get(PLACEMENT_LABEL)
    return str(whole or label) if whole or label else None


def placement_label(objects: Iterable[Mapping[str, Any]]) -> str | None:
    """The placement label value the objects carry (what the hub is asked to select by)."""
    for obj in objects:
        label = ((obj.get("metadata") or {}).get("labels") or {}).get(PLACEMENT_LABEL)
        if label:
            return str(label)
    return None


@dataclass(frozen=True)
class SliceFormat:
    name: str
    capacity: int
    entries_of: Callable[[Mapping[str, Any]], list[Obj]]
    entry_cluster: Callable[[Mapping[str, Any]], str]
    set_entries: Callable[[Obj, list[Obj]], None]
    carry_name: Callable[[str, int], Callable[[int], str]]  # (placement, slices in use) → i → name
    owned: Callable[[Mapping[str, Any]], Obj]
    with_name: Callable[[Obj, str], None]

    def clusters(self, obj: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(self.entry_cluster(e) for e in self.entries_of(obj))

    def entries(self, objects: Iterable[Mapping[str, Any]]) -> dict[str, Obj]:
        """Every cluster's entry across `objects`."""
        return {self.entry_cluster(e): e for obj in objects for e in self.entries_of(obj)}

    def version(
        self, template: Mapping[str, Any], name: str, clusters: Sequence[str], entries: Mapping[str, Obj]
    ) -> Obj:
        """`template` renamed to `name` and holding `clusters`, each with its final entry."""
        out: Obj = copy.deepcopy(dict(template))
        self.with_name(out, name)
        self.set_entries(out, [entries[c] for c in clusters])
        return out


# ---- SIG-MC slices ----------------------------------------------------------------------------


def _sigmc_entries(obj: Mapping[str, Any]) -> list[Obj]:
    return list(obj.get("decisions") or [])


def _sigmc_cluster(entry: Mapping[str, Any]) -> str:
    return str((entry.get("clusterProfileRef") or {}).get("name", ""))


def _sigmc_set(obj: Obj, entries: list[Obj]) -> None:
    obj["decisions"] = entries


def _sigmc_carry(placement: str, in_use: int) -> Callable[[int], str]:
    # named as a slice past the ones in use, shortened as every slice name is (docs/names.md)
    return lambda i: slice_name(placement, in_use + i)


_INDEX_SUFFIX = re.compile(r"-(\d+)$")


def _sigmc_rename(obj: Obj, name: str) -> None:
    obj["metadata"]["name"] = name
    found = _INDEX_SUFFIX.search(name)
    if found:
        obj["metadata"].setdefault("labels", {})[DECISION_INDEX_LABEL] = found.group(1)


_SIGMC_LABELS = (
    DECISION_KEY_LABEL,
    DECISION_INDEX_LABEL,
    PLACEMENT_LABEL,
    DECISION_GROUP_NAME_LABEL,
    DECISION_GROUP_INDEX_LABEL,
)


def _sigmc_owned(obj: Mapping[str, Any]) -> Obj:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return {
        "labels": {k: labels[k] for k in _SIGMC_LABELS if k in labels},
        "seq": annotations.get(SEQ_ANNOTATION),
        "decisions": _sigmc_entries(obj),
        "schedulerName": obj.get("schedulerName", ""),
    }


SIGMC = SliceFormat(
    name="sig-mc",
    capacity=100,
    entries_of=_sigmc_entries,
    entry_cluster=_sigmc_cluster,
    set_entries=_sigmc_set,
    carry_name=_sigmc_carry,
    owned=_sigmc_owned,
    with_name=_sigmc_rename,
)


# ---- OCM PlacementDecisions -------------------------------------------------------------------


def _ocm_entries(obj: Mapping[str, Any]) -> list[Obj]:
    return list((obj.get("status") or {}).get("decisions") or [])


def _ocm_cluster(entry: Mapping[str, Any]) -> str:
    return str(entry.get("clusterName", ""))


def _ocm_set(obj: Obj, entries: list[Obj]) -> None:
    obj.setdefault("status", {})["decisions"] = entries


def _ocm_carry(placement: str, in_use: int) -> Callable[[int], str]:
    # named as a page past the ones in use, shortened as every page name is (docs/names.md)
    return lambda i: decision_page_name(placement, in_use + 1 + i)


def _ocm_rename(obj: Obj, name: str) -> None:
    obj["metadata"]["name"] = name


def _ocm_owned(obj: Mapping[str, Any]) -> Obj:
    meta = obj.get("metadata") or {}
    owners = [
        {k: o.get(k) for k in ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")}
        for o in meta.get("ownerReferences") or []
    ]
    # OCM's controller keeps exactly its three labels and removes every other one
    return {
        "labels": dict(meta.get("labels") or {}),
        "ownerReferences": owners,
        "decisions": _ocm_entries(obj),
    }


OCM = SliceFormat(
    name="ocm",
    capacity=100,
    entries_of=_ocm_entries,
    entry_cluster=_ocm_cluster,
    set_entries=_ocm_set,
    carry_name=_ocm_carry,
    owned=_ocm_owned,
    with_name=_ocm_rename,
)


# ---- the desired objects ----------------------------------------------------------------------


def shadow_desired(slices: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Obj]]:
    """The SIG-MC slices per placement key (`namespace/name`, from the placement label), each
    placement's slices by name in decision-index order."""
    out: dict[str, dict[str, Obj]] = {}
    ordered = sorted(
        slices, key=lambda s: int((s["metadata"].get("labels") or {}).get(DECISION_INDEX_LABEL, "0"))
    )
    for s in ordered:
        meta = s["metadata"]
        key = f"{meta['namespace']}/{placement_name(s)}"
        out.setdefault(key, {})[meta["name"]] = dict(s)
    return out


def replace_desired(pages: Iterable[Mapping[str, Any]], placement_uid: str) -> dict[str, Obj]:
    """OCM's PlacementDecision pages of one placement, as its controller writes them: the pages
    `fleetplace export` prints, each owned by the Placement (a controller reference, so the
    garbage collector removes them with it), a score (only with fleetplace's sort by score) as
    the integer the CRD declares."""
    out: dict[str, Obj] = {}
    for page in pages:
        obj: Obj = copy.deepcopy(dict(page))
        meta = obj["metadata"]
        meta["ownerReferences"] = [
            {
                "apiVersion": OCM_API_VERSION,
                "kind": "Placement",
                "name": placement_name(obj),
                "uid": placement_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        # the topic carries scores as strings (what Argo CD-style consumers read); the CRD's
        # `score` is an int64
        for entry in obj.get("status", {}).get("decisions", []):
            if "score" in entry:
                entry["score"] = int(entry["score"])
        out[meta["name"]] = obj
    return out


def _decision_groups(pages: Iterable[Mapping[str, Any]]) -> list[Obj]:
    groups: dict[int, Obj] = {}
    for page in pages:
        labels = page["metadata"]["labels"]
        index = int(labels[DECISION_GROUP_INDEX_LABEL])
        group = groups.setdefault(
            index,
            {
                "decisionGroupIndex": index,
                "decisionGroupName": labels[DECISION_GROUP_NAME_LABEL],
                "decisions": [],
                "clusterCount": 0,
            },
        )
        group["decisions"].append(page["metadata"]["name"])
        group["clusterCount"] += len(_ocm_entries(page))
    return [groups[i] for i in sorted(groups)]


# OCM inserts a missing condition in this order: Misconfigured first, then Satisfied
_CONDITION_ORDER = ("PlacementMisconfigured", "PlacementSatisfied")


def placement_status(
    pages: Sequence[Mapping[str, Any]],
    implied: Mapping[str, Any],
    served: Mapping[str, Any] | None,
    now: str,
) -> Obj:
    """The Placement's status as OCM's controller writes it after binding its decisions: the
    served status with `numberOfSelectedClusters`, `decisionGroups` (one entry per group: its
    pages' names and cluster count) and the two conditions set the Kubernetes way — a condition's
    `lastTransitionTime` is `now` when it is new or its status flips, else kept."""
    out: Obj = copy.deepcopy(dict(served or {}))
    out["numberOfSelectedClusters"] = int(implied.get("numberOfSelectedClusters", 0))
    out["decisionGroups"] = _decision_groups(pages)
    conditions: list[Obj] = [dict(c) for c in out.get("conditions") or []]
    wanted = {str(c["type"]): c for c in implied.get("conditions") or []}
    for ctype in [*_CONDITION_ORDER, *(t for t in wanted if t not in _CONDITION_ORDER)]:
        new = wanted.get(ctype)
        if new is None:
            continue
        current = next((c for c in conditions if c.get("type") == ctype), None)
        if current is None:
            conditions.append({**new, "lastTransitionTime": now})
            continue
        if current.get("status") != new["status"]:
            current["lastTransitionTime"] = now
        current.update({k: new[k] for k in ("status", "reason", "message")})
    out["conditions"] = conditions
    return out
