"""The scheduler's current output per placement, folded from the topics: what the sink writes.

Shadow mode folds `sigmc-placement-decisions` (the slices as the scheduler built them, a tombstone
deleting one); replace mode folds the `decisions` log through the scheduler's own paging
(`SchedulerProcessor.placement_decisions`, the pages `fleetplace export` prints) and keeps each
placement's last DecisionDiff for the Placement status it implies. Both keep the generation of the
Placement the decision was made for, which the agreement report compares with the hub's. Each
`apply_*` returns the placement whose desired state it changed, so the worker rewrites only that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetplace.services.auditor.export import kubernetes_objects
from fleetplace.services.hub.desired import placement_label, placement_name, shadow_desired
from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.shared.api.decision_diff import DecisionDiff
from fleetplace.shared.api.decisions import PlacementDecisions
from fleetplace.shared.api.ocm import PLACEMENT_LABEL

__all__ = ["PublishedDecisions", "ReplaceState"]

Obj = dict[str, Any]


@dataclass(frozen=True)
class ReplaceState:
    pages: list[Obj]  # OCM PlacementDecision pages, as `fleetplace export` prints them
    status: Mapping[str, Any]  # the status the decision implies (numberOfSelectedClusters, conditions)
    evaluated_at: str


class PublishedDecisions:
    def __init__(self) -> None:
        self._slices: dict[str, Obj] = {}  # `namespace/slice name` → slice
        self._by_placement: dict[str, set[str]] = {}
        self._processor = SchedulerProcessor(owns=lambda key: False)
        self._last: dict[str, DecisionDiff] = {}
        self._labels: dict[str, str] = {}  # placement → its placement label value, as last written

    def apply_slice(self, key: str, value: Mapping[str, Any] | None) -> str | None:
        """One `sigmc-placement-decisions` record; the placement it belongs to."""
        old = self._slices.pop(key, None)
        placement = _placement_of(old) if old is not None else None
        if placement is not None:
            self._by_placement.get(placement, set()).discard(key)
        if value is None:
            return placement
        placement = _placement_of(value)
        if placement is None:
            raise ValueError(f"slice {key} has no {PLACEMENT_LABEL} label")
        self._slices[key] = dict(value)
        self._by_placement.setdefault(placement, set()).add(key)
        self._labels[placement] = placement_label([value]) or placement.partition("/")[2]
        return placement

    def apply_decision(self, key: str, value: Mapping[str, Any] | None) -> str | None:
        """One `decisions` record (a DecisionDiff); the placement, unless it was a duplicate."""
        if value is None:
            return None
        diff = DecisionDiff.from_value(value)
        last = self._last.get(key)
        if last is not None and diff.seq <= last.seq:
            return None
        self._processor.apply("decisions", key, value)
        self._last[key] = diff
        return key

    def shadow(self, placement: str) -> dict[str, Obj]:
        """The slices the hub should serve for `placement`, by name (none: delete them all)."""
        keys = self._by_placement.get(placement, set())
        return shadow_desired(self._slices[k] for k in keys).get(placement, {})

    def replace(self, placement: str) -> ReplaceState | None:
        """The OCM pages and status for `placement`; None when it was deleted or never decided."""
        diff = self._last.get(placement)
        current = self._processor.placement_decisions(placement)
        if diff is None or current is None:
            return None
        pages = kubernetes_objects({placement: PlacementDecisions.model_validate(current)})
        return ReplaceState(pages, diff.status, diff.evaluated_at)

    def label(self, placement: str) -> str:
        """The placement label value its slices and pages carry (the name, unless shortened)."""
        known = self._labels.get(placement)
        if known is None:
            state = self.replace(placement)
            known = placement_label(state.pages) if state is not None else None
        return known or placement.partition("/")[2]

    def generation(self, placement: str) -> int | None:
        diff = self._last.get(placement)
        return diff.generation if diff is not None else None

    def seq(self, placement: str) -> int | None:
        """The seq of the placement's decision in force (None before its first)."""
        diff = self._last.get(placement)
        return diff.seq if diff is not None else None

    def placements(self) -> list[str]:
        return sorted({p for p, keys in self._by_placement.items() if keys} | set(self._last))


def _placement_of(obj: Mapping[str, Any]) -> str | None:
    name = placement_name(obj)
    namespace = (obj.get("metadata") or {}).get("namespace")
    return f"{namespace}/{name}" if name and namespace else None
