"""The stateful shell around `schedule`: applying objects to a Fleet and carrying decisions forward.

`PlacementEngine` is what the worker, `simulate --sequence` and the auditor share: apply
changes, evaluate a placement at a time, commit its new decision so that later placements'
Balance (and this placement's Steady, NoSelectIfNew and requeue) see it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from fleetplace.shared.api.ocm import (
    AddOnPlacementScore,
    ManagedCluster,
    ManagedClusterSet,
    ManagedClusterSetBinding,
    OcmObject,
    Placement,
    PlacementDecision,
)
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.scheduler import ScheduleResult, forget, prepare, schedule


def apply_object(fleet: Fleet, obj: OcmObject, raw: Mapping[str, Any] | None = None) -> None:
    if isinstance(obj, ManagedCluster):
        fleet.upsert_cluster(obj, raw)
    elif isinstance(obj, ManagedClusterSet):
        fleet.upsert_set(obj)
    elif isinstance(obj, ManagedClusterSetBinding):
        fleet.upsert_binding(obj)
    elif isinstance(obj, Placement):
        fleet.upsert_placement(obj)
    elif isinstance(obj, PlacementDecision):
        fleet.upsert_pd(obj)
    elif isinstance(obj, AddOnPlacementScore):
        fleet.upsert_score(obj)


def delete_object(fleet: Fleet, kind: str, namespace: str, name: str) -> None:
    if kind == "ManagedCluster":
        fleet.delete_cluster(name)
    elif kind == "ManagedClusterSet":
        fleet.delete_set(name)
    elif kind == "ManagedClusterSetBinding":
        fleet.delete_binding(namespace, name)
    elif kind == "Placement":
        fleet.delete_placement(f"{namespace}/{name}")
        # its PlacementDecisions are garbage-collected with it
        for source in fleet.decisions.sources_of(namespace, name):
            fleet.remove_decisions(source)
    elif kind == "PlacementDecision":
        fleet.pds.pop(f"{namespace}/{name}", None)
        fleet.remove_decisions(f"pd:{namespace}/{name}")
    elif kind == "AddOnPlacementScore":
        fleet.delete_score(namespace, name)


def fleet_of(objects: Iterable[OcmObject | tuple[OcmObject, Mapping[str, Any]]]) -> Fleet:
    fleet = Fleet()
    for item in objects:
        if isinstance(item, tuple):
            apply_object(fleet, item[0], item[1])
        else:
            apply_object(fleet, item)
    return fleet


class PlacementEngine:
    """A Fleet plus the decisions this engine has made, carried forward between runs."""

    def __init__(self, fleet: Fleet | None = None, options: Any = None) -> None:
        self.fleet = fleet or Fleet()
        self.options = options

    def evaluate(self, key: str, now: datetime) -> ScheduleResult | None:
        placement = self.fleet.placements.get(key)
        if placement is None:
            return None
        return schedule(placement, self.fleet, now, options=self.options)

    def prepare(self, key: str, deadline: float) -> bool:
        """See `scheduler.prepare`: True when the next `evaluate(key)` has nothing costly left."""
        placement = self.fleet.placements.get(key)
        return placement is None or prepare(placement, self.fleet, deadline)

    def commit(self, result: ScheduleResult) -> None:
        """Make `result` this placement's current decision (it replaces all of its PDs)."""
        if result.skipped is not None:
            return
        namespace, _, name = result.placement.partition("/")
        source = f"placement:{result.placement}"
        decisions = self.fleet.decisions
        if decisions.get(source) == (namespace, name, result.decisions) and decisions.only_source(
            namespace, name, source
        ):
            return  # the decision it had (most runs of a fan-out): nothing to replace
        for other in decisions.sources_of(namespace, name):
            if other != source:
                self.fleet.remove_decisions(other)
        self.fleet.set_decisions(source, namespace, name, result.decisions)

    def set_decision(self, key: str, clusters: Iterable[str]) -> None:
        """Load a previously published decision (the worker's checkpoint)."""
        namespace, _, name = key.partition("/")
        self.fleet.set_decisions(f"placement:{key}", namespace, name, clusters)

    def clear_decision(self, key: str) -> None:
        """The placement has no decision of its own (one that was never published is taken back)."""
        self.fleet.remove_decisions(f"placement:{key}")

    def forget(self, key: str) -> None:
        forget(self.fleet, key)
        namespace, _, name = key.partition("/")
        for source in self.fleet.decisions.sources_of(namespace, name):
            self.fleet.remove_decisions(source)
