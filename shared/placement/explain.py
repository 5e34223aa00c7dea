"""Why each cluster was (not) picked: OCM's debugger output, for every cluster, always.

Computed on demand from the same Fleet and `now` the result came from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.framework import ScheduleContext
from fleetplace.shared.placement.scheduler import FILTERS, ScheduleResult


def explain(result: ScheduleResult, placement: Placement, fleet: Fleet, now: datetime) -> dict[str, Any]:
    """cluster -> {"filteredBy", "reason"} or {"total", "selected", "prioritizers"}."""
    meta = placement.metadata
    ctx = ScheduleContext(placement, fleet, now, fleet.decisions.own(meta.namespace, meta.name))
    available = set(result.available)
    post = set(result._names)
    selected = set(result.selected)
    per_cluster: dict[str, dict[str, Any]] = {}
    for p in result.prioritizers:
        for name, score in p.scores.items():
            per_cluster.setdefault(name, {})[p.name] = {"score": score, "weight": p.weight}
    out: dict[str, Any] = {}
    eligible = list(result.eligible_sets)
    for name in sorted(fleet.clusters):
        info = fleet.clusters[name]
        if name not in available:
            if info.terminating:
                why = "the cluster is terminating"
            elif not eligible:
                why = "the placement has no eligible cluster set"
            else:
                why = f"not a member of the eligible cluster sets [{','.join(eligible)}]"
            out[name] = {"filteredBy": "ClusterSets", "reason": why}
            continue
        if result.status.aborts:
            out[name] = {
                "filteredBy": result.status.plugin or "Prioritizers",
                "reason": result.status.message,
            }
            continue
        if name not in post:
            for f in FILTERS:
                why_not = f.reason(ctx, name)
                if why_not is not None:
                    out[name] = {"filteredBy": f.name, "reason": why_not}
                    break
            else:
                out[name] = {"filteredBy": "unknown", "reason": "removed by a filter"}
            continue
        entry: dict[str, Any] = {
            "total": result.scores.get(name, 0),
            "selected": name in selected,
            "prioritizers": per_cluster.get(name, {}),
        }
        spread = result.spread_reason(name) if name not in selected else None
        if spread is not None:
            entry["spread"] = spread
        out[name] = entry
    return out


def result_json(
    result: ScheduleResult, name: str | None, placement: Placement, fleet: Fleet, now: datetime
) -> dict[str, Any]:
    """A result as `fleetplace simulate` prints it and the worker's debug route serves it: the
    decision, its status and the explanation of every cluster. A skipped evaluation shows the
    decision that stays in force."""
    after = result.requeue_after_seconds()
    out: dict[str, Any] = {
        "name": name,
        "placement": result.placement,
        "decisions": list(result.decisions),
        "decisionGroups": [
            {"groupName": g.name, "groupIndex": g.index, "clusters": list(g.clusters)} for g in result.groups
        ],
        "scores": dict(sorted(result.scores.items())),  # by name: output independent of input order
        "requeueAfterSeconds": (int(after) if after is not None and after.is_integer() else after),
        "numberOfSelectedClusters": result.number_selected,
        "conditions": [c.to_json() for c in result.conditions],
        "status": {
            "code": result.status.code.value,
            "plugin": result.status.plugin,
            "message": result.status.message,
        },
    }
    if result.skipped is not None:
        out["skipped"] = result.skipped
        own = fleet.decisions.own(placement.metadata.namespace, placement.metadata.name)
        out["decisions"] = sorted(own)
        out["numberOfSelectedClusters"] = len(own)
    out["explain"] = explain(result, placement, fleet, now)
    return out
