"""The PlacementMisconfigured and PlacementSatisfied conditions of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleetplace.shared.placement.framework import Code, Status


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


# the conditions most runs end with (conditions are values: one object serves every run)
_CONFIGURED = Condition(
    "PlacementMisconfigured", "False", "Succeedconfigured", "Placement configurations check pass"
)
_ALL_SCHEDULED = Condition(
    "PlacementSatisfied", "True", "AllDecisionsScheduled", "All cluster decisions scheduled"
)


def misconfigured_condition(final: Status) -> Condition:
    if final.code is Code.MISCONFIGURED:
        return Condition("PlacementMisconfigured", "True", "Misconfigured", f"{final.plugin}:{final.message}")
    return _CONFIGURED


def satisfied_condition(
    *,
    bindings: int,
    spec_cluster_sets: Sequence[str],
    eligible_sets: Sequence[str],
    available: int,
    final: Status,
    selected: int,
    unscheduled: int,
    detail: str | None = None,
) -> Condition:
    t = "PlacementSatisfied"
    if bindings == 0:
        return Condition(
            t,
            "False",
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace",
        )
    if not eligible_sets:
        return Condition(
            t,
            "False",
            "NoIntersection",
            f"None of ManagedClusterSets [{','.join(spec_cluster_sets)}] is bound to placement namespace",
        )
    if available == 0:
        return Condition(
            t,
            "False",
            "AllManagedClusterSetsEmpty",
            f"All ManagedClusterSets [{','.join(eligible_sets)}] have no member ManagedCluster",
        )
    if final.code is Code.ERROR:
        return Condition(t, "False", "NotAllDecisionsScheduled", final.message)
    if selected == 0:
        return Condition(
            t, "False", "NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate"
        )
    if unscheduled == 0:
        return _ALL_SCHEDULED
    message = f"{unscheduled} cluster decisions unscheduled"
    return Condition(t, "False", "NotAllDecisionsScheduled", f"{message}: {detail}" if detail else message)
