"""The reason of each decided cluster (what SIG-MC slices carry): the fast form, read from the
selected clusters' scores, says exactly what the plain form reads from the whole ranking."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import fleet_of, schedule
from fleetplace.shared.placement.reasons import decision_reasons, decision_reasons_reference

from .builders import NOW, bound_set, builtin, cluster, iso, own_decision, placement, policy, taint
from .test_properties import World, objects_of, worlds


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_the_fast_reasons_equal_the_reference(w: World) -> None:
    objs = objects_of(w)
    fleet = fleet_of((parse_object(o), o) for o in objs)
    placement_obj = fleet.placements["ns1/placement1"]
    result = schedule(placement_obj, fleet, NOW)
    fast = decision_reasons(result, placement_obj, fleet)
    assert fast == decision_reasons_reference(result, placement_obj, fleet)
    assert set(fast) == set(result.decisions)
    for name, text in fast.items():
        assert text.startswith(f"rank {list(result.ranked).index(name) + 1}/{len(result.ranked)}, ")
        assert f", score {result.scores[name]}" in text


def test_a_reason_names_each_weighted_prioritizer_and_leaves_weight_zero_out() -> None:
    objects = bound_set(
        cluster("a", allocatable={"cpu": "8", "memory": "1Gi"}, capacity={"cpu": "8", "memory": "8Gi"}),
        cluster("b", allocatable={"cpu": "2", "memory": "6Gi"}, capacity={"cpu": "8", "memory": "8Gi"}),
    )
    spec = {
        "numberOfClusters": 1,
        "prioritizerPolicy": policy(
            "Exact", builtin("ResourceAllocatableCPU", 2), builtin("ResourceAllocatableMemory", 0)
        ),
    }
    fleet = fleet_of((parse_object(o), o) for o in [*objects, placement(spec)])
    p = fleet.placements["ns1/placement1"]
    reasons = decision_reasons(schedule(p, fleet, NOW), p, fleet)
    assert reasons == {"a": "rank 1/2, score 200: ResourceAllocatableCPU 100×2"}


def test_a_cluster_kept_only_because_it_was_decided_says_so() -> None:
    tainted = cluster("a", taints=[taint("drain", "NoSelectIfNew", added=iso(NOW - timedelta(hours=1)))])
    objects = [*bound_set(tainted, cluster("b")), own_decision(["a"])]
    fleet = fleet_of((parse_object(o), o) for o in [*objects, placement({})])
    p = fleet.placements["ns1/placement1"]
    result = schedule(p, fleet, NOW)
    reasons = decision_reasons(result, p, fleet)
    assert reasons["a"].endswith("; kept though tainted drain:NoSelectIfNew (already decided)")
    assert "kept" not in reasons["b"]
    assert reasons == decision_reasons_reference(result, p, fleet)


def test_ranks_under_a_spread_constraint_equal_the_reference() -> None:
    # spread picks across zones, not from the top of the ranking: the ranks are counted
    clusters = [
        cluster(
            f"c{i}",
            labels={"zone": "a" if i < 4 else "b"},
            allocatable={"cpu": str(10 - i), "memory": "1Gi"},
            capacity={"cpu": "10", "memory": "1Gi"},
        )
        for i in range(6)
    ]
    spec = {
        "numberOfClusters": 4,
        "prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableCPU", 1)),
        "spreadPolicy": {
            "spreadConstraints": [
                {
                    "topologyKey": "zone",
                    "topologyKeyType": "Label",
                    "maxSkew": 1,
                    "whenUnsatisfiable": "DoNotSchedule",
                }
            ]
        },
    }
    fleet = fleet_of((parse_object(o), o) for o in [*bound_set(*clusters), placement(spec)])
    p = fleet.placements["ns1/placement1"]
    result = schedule(p, fleet, NOW)
    assert set(result.selected) == {"c0", "c1", "c4", "c5"}  # two per zone, not the top four
    reasons = decision_reasons(result, p, fleet)
    assert reasons == decision_reasons_reference(result, p, fleet)
    assert reasons["c4"].startswith("rank 5/6, ")
