"""Records of the rollout worker's input topics, as the scheduler and deployers write them."""

from __future__ import annotations

from typing import Any

G = "cluster.open-cluster-management.io"


def placement_decisions(key: str, groups: list[tuple[str, list[str]]], seq: int = 1) -> dict[str, Any]:
    """A `placement-decisions` value: one page per decision group (index = position)."""
    ns, _, name = key.partition("/")
    items = [
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {
                "name": f"{name}-decision-{i + 1}",
                "namespace": ns,
                "labels": {
                    f"{G}/placement": name,
                    f"{G}/decision-group-name": group,
                    f"{G}/decision-group-index": str(i),
                },
            },
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
        for i, (group, clusters) in enumerate(groups)
    ]
    return {"schemaVersion": 1, "placement": key, "seq": seq, "items": items}


def rollout_object(
    key: str, revision: str = "v1", strategy: dict[str, Any] | None = None, placement: str = "web"
) -> dict[str, Any]:
    ns, _, name = key.partition("/")
    return {
        "apiVersion": "fleetplace.dev/v1alpha1",
        "kind": "Rollout",
        "metadata": {"namespace": ns, "name": name},
        "spec": {
            "revision": revision,
            "placementRefs": [{"name": placement, "rolloutStrategy": strategy or {"type": "All"}}],
        },
    }


CANARY = {
    "type": "ProgressivePerGroup",
    "progressivePerGroup": {
        "mandatoryDecisionGroups": [{"groupName": "canary"}],
        "minSuccessTime": "5m",
        "progressDeadline": "10m",
        "maxFailures": 1,
    },
}


def report(status: str, revision: str = "v1", at: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"revision": revision, "status": status}
    if at is not None:
        out["lastTransitionTime"] = at
    return out
