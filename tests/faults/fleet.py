"""A steady stream of fleet changes, and the fault-free answer for whatever state it ends in.

`FleetModel` holds every (topic, key) → value the driver has sent, so the final state is known
exactly, and `expected()` evaluates it from scratch with `PlacementEngine` (placements in
namespace/name order, each decision committed before the next), as tests/scheduler/test_takeover.py
does. Every placement here is history-independent: its decision depends only on the current fleet
(label predicates, tolerations, Exact-mode AddOn scores, decision groups; never Additive mode with
numberOfClusters, whose Steady prioritizer remembers earlier decisions). So the worker's decisions
after any sequence of faults must equal the from-scratch ones.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from fleetplace.shared.api.admission import admit
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import PlacementEngine, apply_object

G = "cluster.open-cluster-management.io"
SET_LABEL = f"{G}/clusterset"
TAINT = {"key": "maint", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
NAMESPACES = ("ns1", "ns2")
TIERS = ("gold", "silver", "bronze")
REGIONS = ("r0", "r1", "r2")

Change = tuple[str, str, dict[str, Any] | None]
"""(topic without prefix, key, value or None for a tombstone)."""

Decision = tuple[list[str], list[tuple[str, int, list[str]]]]
"""(decisions, groups as (groupName, groupIndex, clusters))."""


class FleetModel:
    def __init__(
        self, rng: random.Random, *, clusters: int = 16, placements: int = 24, max_clusters: int = 40
    ):
        self.rng = rng
        self.max_clusters = max_clusters
        self.state: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._next_cluster = 0
        self._initial_clusters = clusters
        self._placements = placements
        self.changes = 0

    # ---- objects -----------------------------------------------------------------------------
    def _cluster(self, name: str, *, spec_taint: bool = False) -> dict[str, Any]:
        rng = self.rng
        return {
            "apiVersion": f"{G}/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": name,
                "labels": {SET_LABEL: "prod", "tier": rng.choice(TIERS), "region": rng.choice(REGIONS)},
            },
            "spec": {"hubAcceptsClient": True, "taints": [TAINT] if spec_taint else []},
        }

    def _score(self, cluster: str) -> dict[str, Any]:
        return {
            "apiVersion": f"{G}/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"namespace": cluster, "name": "load"},
            "status": {"scores": [{"name": "s", "value": self.rng.randint(-100, 100)}]},
        }

    def _placement(self, i: int) -> dict[str, Any]:
        rng = self.rng
        namespace, name = NAMESPACES[i % len(NAMESPACES)], f"p{i:03d}"
        kind = i % 4
        spec: dict[str, Any]
        if kind == 0:
            tier = rng.choice(TIERS)
            spec = {"predicates": [_match("tier", [tier])]}
        elif kind == 1:
            regions = sorted(rng.sample(REGIONS, 2))
            spec = {
                "predicates": [_match("region", regions)],
                "tolerations": [{"key": "maint", "operator": "Exists"}],
            }
        elif kind == 2:
            spec = {
                "numberOfClusters": rng.randint(1, 4),
                "prioritizerPolicy": {
                    "mode": "Exact",
                    "configurations": [
                        {
                            "scoreCoordinate": {
                                "type": "AddOn",
                                "addOn": {"resourceName": "load", "scoreName": "s"},
                            },
                            "weight": rng.choice([1, 2, -1]),
                        }
                    ],
                },
            }
        else:
            spec = {
                "predicates": [_match("region", [rng.choice(REGIONS)])],
                "decisionStrategy": {
                    "groupStrategy": {"clustersPerDecisionGroup": rng.choice(["50%", 2, "1"])}
                },
            }
        return {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": namespace, "name": name},
            "spec": spec,
        }

    # ---- the stream --------------------------------------------------------------------------
    def _set(self, topic: str, key: str, value: dict[str, Any] | None) -> Change:
        self.state[(topic, key)] = value
        self.changes += 1
        return topic, key, value

    def clusters(self) -> list[str]:
        return sorted(k for (t, k), v in self.state.items() if t == "clusters" and v is not None)

    def initial(self) -> list[Change]:
        out: list[Change] = [
            self._set(
                "clustersets",
                "prod",
                {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "prod"}},
            )
        ]
        for ns in NAMESPACES:
            out.append(
                self._set(
                    "clustersetbindings",
                    f"{ns}/prod",
                    {
                        "apiVersion": f"{G}/v1beta2",
                        "kind": "ManagedClusterSetBinding",
                        "metadata": {"namespace": ns, "name": "prod"},
                        "spec": {"clusterSet": "prod"},
                    },
                )
            )
        for _ in range(self._initial_clusters):
            out.extend(self._add_cluster())
        for i in range(self._placements):
            p = self._placement(i)
            out.append(self._set("placements", _key(p), p))
        return out

    def _add_cluster(self) -> list[Change]:
        name = f"c{self._next_cluster:03d}"
        self._next_cluster += 1
        return [
            self._set("clusters", name, self._cluster(name)),
            self._set("scores", f"{name}/load", self._score(name)),
        ]

    def next_changes(self) -> list[Change]:
        """One fleet change (a new cluster comes with its score)."""
        rng = self.rng
        clusters = self.clusters()
        what = rng.choices(
            [
                "relabel",
                "add",
                "delete",
                "taint-topic",
                "spec-taint",
                "score",
                "edit-placement",
                "recreate-placement",
            ],
            [30, 6, 3, 15, 5, 25, 10, 3],
        )[0]
        if (what == "add" and len(clusters) < self.max_clusters) or len(clusters) < 3:
            return self._add_cluster()
        name = rng.choice(clusters)
        if what == "delete":
            return [self._set("clusters", name, None), self._set("scores", f"{name}/load", None)]
        if what in ("relabel", "add"):
            return [self._set("clusters", name, self._cluster(name))]
        if what == "spec-taint":
            return [self._set("clusters", name, self._cluster(name, spec_taint=rng.random() < 0.5))]
        if what == "taint-topic":
            value = {"taints": [TAINT]} if rng.random() < 0.5 else None
            return [self._set("taints", name, value)]
        if what == "score":
            return [self._set("scores", f"{name}/load", self._score(name))]
        i = rng.randrange(self._placements)
        p = self._placement(i)
        if what == "recreate-placement":
            return [self._set("placements", _key(p), None), self._set("placements", _key(p), p)]
        if rng.random() < 0.1:
            return [self._set("placements", _key(p), None)]  # deleted, until a later edit brings it back
        return [self._set("placements", _key(p), p)]

    # ---- the fault-free answer -----------------------------------------------------------------
    def objects(self) -> list[dict[str, Any]]:
        """The final objects, taints from the `taints` topic merged into the clusters (topic wins)."""
        out = []
        for (topic, key), value in sorted(self.state.items()):
            if value is None or topic == "taints":
                continue
            if topic == "clusters":
                extra = self.state.get(("taints", key))
                if extra:
                    theirs = {(t["key"], t["effect"]) for t in extra["taints"]}
                    own = [t for t in value["spec"]["taints"] if (t["key"], t["effect"]) not in theirs]
                    value = {**value, "spec": {**value["spec"], "taints": own + extra["taints"]}}
            out.append(value)
        return out

    def expected(self, now: datetime | None = None) -> dict[str, Decision]:
        return expected_decisions(self.objects(), now)

    def placement_keys(self) -> set[str]:
        """Every placement ever sent (deleted ones must end with a `deleted` diff or none at all)."""
        return {k for (t, k) in self.state if t == "placements"}


def expected_decisions(objects: Iterable[dict[str, Any]], now: datetime | None = None) -> dict[str, Decision]:
    """A from-scratch evaluation of `objects`, placements in namespace/name order, each committed."""
    engine = PlacementEngine()
    for raw in objects:
        admitted = admit(raw, "expected")
        apply_object(engine.fleet, parse_object(admitted), admitted)
    at = now or datetime.now(UTC)
    out: dict[str, Decision] = {}
    for key in sorted(engine.fleet.placements):
        result = engine.evaluate(key, at)
        assert result is not None
        engine.commit(result)
        out[key] = (list(result.decisions), [(g.name, g.index, list(g.clusters)) for g in result.groups])
    return out


def _match(key: str, values: list[str]) -> dict[str, Any]:
    return {
        "requiredClusterSelector": {
            "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
        }
    }


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
