"""What the fleet keeps of a ManagedCluster version (its claims and allocatable resources)."""

from __future__ import annotations

from fleetplace.shared.api.ocm import ManagedCluster, Taint
from fleetplace.shared.placement.fleet import ClusterInfo, Fleet


def _cluster() -> tuple[ManagedCluster, dict[str, object]]:
    raw: dict[str, object] = {
        "kind": "ManagedCluster",
        "metadata": {"name": "c1", "labels": {"region": "r1"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"taints": [{"key": "k", "effect": "NoSelect"}]},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "gpu": "1"},
            "capacity": {"cpu": "6", "memory": "16Gi"},
            "clusterClaims": [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}],
        },
    }
    return ManagedCluster.model_validate(raw), raw


def test_cluster_info_takes_every_field_from_its_own_place() -> None:
    cluster, raw = _cluster()
    assert ClusterInfo.of(cluster, raw) == ClusterInfo(
        name="c1",
        labels={"region": "r1"},
        claims={"a": "2"},  # a later duplicate claim overwrites
        terminating=True,
        taints=(Taint(key="k", effect="NoSelect"),),
        cpu=4.0,
        memory=8.0 * 2**30,
        obj=cluster,
        raw=raw,
    )


def test_cluster_info_has_no_resource_without_both_allocatable_and_capacity() -> None:
    cluster = ManagedCluster.model_validate(
        {"metadata": {"name": "c1"}, "status": {"allocatable": {"cpu": "4"}, "capacity": {"memory": "1Gi"}}}
    )
    info = ClusterInfo.of(cluster)
    assert (info.cpu, info.memory, info.terminating, info.raw) == (None, None, False, None)


def test_upserting_a_cluster_again_updates_its_columns_in_place() -> None:
    fleet = Fleet()
    cluster, raw = _cluster()
    fleet.upsert_cluster(cluster, raw)
    slot = fleet.slot_of("c1")
    assert slot is not None
    assert (fleet.terminating[slot], fleet.tainted[slot], fleet.cpu[slot], fleet.cpu_has[slot]) == (
        True,
        True,
        4.0,
        True,
    )
    plain = ManagedCluster.model_validate({"metadata": {"name": "c1"}})
    fleet.upsert_cluster(plain)
    assert fleet.slot_of("c1") == slot
    assert fleet.clusters["c1"].obj is plain
    assert not (
        fleet.terminating[slot] or fleet.tainted[slot] or fleet.cpu_has[slot] or fleet.memory_has[slot]
    )
    assert (fleet.cpu[slot], fleet.memory[slot]) == (0.0, 0.0)
