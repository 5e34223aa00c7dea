"""OCM's own placement benchmark scenario, as objects (shared by the engine and e2e benchmarks).

1,000 clusters in one global set, each with an AddOnPlacementScore `demo`; placements with
numberOfClusters 10 and AddOn demo/demo + ResourceAllocatableCPU + Balance, weight 1, Exact mode.
"""

from __future__ import annotations

import random
from typing import Any

from tests.api.profiles import profile_of

GROUP = "cluster.open-cluster-management.io"


def cluster_set() -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": "global"},
        "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}},
    }


def binding(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"namespace": namespace, "name": "global"},
        "spec": {"clusterSet": "global"},
    }


def cluster(i: int, rng: random.Random) -> dict[str, Any]:
    cpu = rng.randint(2, 64)
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ManagedCluster",
        "metadata": {
            "name": f"cluster{i}",
            "labels": {"vendor": "OpenShift", "region": f"r{i % 5}", "zone": f"r{i % 5}-z{i % 3}"},
        },
        "spec": {"hubAcceptsClient": True},
        "status": {
            "allocatable": {"cpu": str(cpu), "memory": f"{rng.randint(4, 256)}Gi"},
            "capacity": {"cpu": str(cpu + 2), "memory": "512Gi"},
        },
    }


def score(i: int, rng: random.Random) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"namespace": f"cluster{i}", "name": "demo"},
        "status": {"scores": [{"name": "demo", "value": rng.randint(-100, 100)}]},
    }


SPREAD = [
    {"topologyKey": "region", "topologyKeyType": "Label", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"},
    {"topologyKey": "zone", "topologyKeyType": "Label", "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"},
]


def spread_placement(namespace: str, i: int) -> dict[str, Any]:
    """The benchmark placement with two spread terms (beyond OCM)."""
    p = placement(namespace, i)
    p["spec"]["spreadPolicy"] = {"spreadConstraints": SPREAD}
    return p


def placement(namespace: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": namespace, "name": f"placement{i}"},
        "spec": {
            "numberOfClusters": 10,
            "prioritizerPolicy": {
                "mode": "Exact",
                "configurations": [
                    {
                        "scoreCoordinate": {
                            "type": "AddOn",
                            "addOn": {"resourceName": "demo", "scoreName": "demo"},
                        },
                        "weight": 1,
                    },
                    {
                        "scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"},
                        "weight": 1,
                    },
                    {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Balance"}, "weight": 1},
                ],
            },
        },
    }


def fleet_objects(clusters: int, seed: int = 7, *, profiles: bool = False) -> list[dict[str, Any]]:
    """The fleet: its clusters as ManagedClusters, or (`profiles`) as the ClusterProfiles of them."""
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [cluster_set(), binding("bench")]
    for i in range(clusters):
        managed = cluster(i, rng)
        objs.append(profile_of(managed, "bench") if profiles else managed)
        objs.append(score(i, rng))
    return objs
