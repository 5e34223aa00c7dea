"""The prioritizers: Balance, Steady, the allocatable-resource ones and AddOn scores."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from fleetplace.shared.placement import ScheduleResult

from .builders import (
    ALL_SCHEDULED,
    NOW,
    OK_MISCONFIGURED,
    addon,
    addon_score,
    ago,
    bound_set,
    builtin,
    cluster,
    decision,
    foreign_decision,
    iso,
    label_predicate,
    memory_cluster,
    misconfigured,
    own_decision,
    policy,
    prioritizer_scores,
    satisfied,
    schedule_spec,
    taint,
)


def exact(*configs: dict[str, object], **spec: object) -> dict[str, object]:
    return {"prioritizerPolicy": policy("Exact", *configs), **spec}


def resources(name: str, cpu: int, cpu_cap: int, mem: int, mem_cap: int) -> dict[str, object]:
    return cluster(
        name,
        allocatable={"cpu": str(cpu), "memory": str(mem)},
        capacity={"cpu": str(cpu_cap), "memory": str(mem_cap)},
    )


A = resources("a", 10, 10, 50, 100)
B = resources("b", 7, 10, 90, 100)
C = resources("c", 9, 10, 80, 100)
D = resources("d", 10, 10, 100, 100)

# -- Balance --------------------------------------------------------------------------------------


def balance(*objects: dict[str, object], clusters: tuple[str, ...] = ("c1", "c2", "c3")) -> dict[str, int]:
    result = schedule_spec(
        exact(builtin("Balance", 1)), *bound_set(*(cluster(c) for c in clusters)), *objects
    )
    return prioritizer_scores(result, "Balance")


def test_balance_without_other_decisions_is_100_everywhere() -> None:
    assert balance() == {"c1": 100, "c2": 100, "c3": 100}


def test_e6_counts_over_several_foreign_pds() -> None:
    assert balance(foreign_decision("p1", ["c1", "c2"]), foreign_decision("p2", ["c1", "c3"])) == {
        "c1": -100,
        "c2": 0,
        "c3": 0,
    }


def test_e6_own_decisions_are_excluded_and_steady_wins() -> None:
    objects = [
        foreign_decision("p1", ["c2", "c3"]),
        foreign_decision("p2", ["c1", "c2"]),
        own_decision(["c3"]),
    ]
    result = schedule_spec(
        {"numberOfClusters": 1}, *bound_set(cluster("c1"), cluster("c2"), cluster("c3")), *objects
    )
    assert prioritizer_scores(result, "Balance") == {"c1": 0, "c2": -100, "c3": 0}
    assert prioritizer_scores(result, "Steady") == {"c1": 0, "c2": 0, "c3": 100}
    assert result.decisions == ("c3",)


def test_e6_single_foreign_pd() -> None:
    result = schedule_spec(
        {"numberOfClusters": 1},
        *bound_set(cluster("c1"), cluster("c2"), cluster("c3")),
        foreign_decision("p", ["c1", "c2"]),
    )
    assert prioritizer_scores(result, "Balance") == {"c1": -100, "c2": -100, "c3": 100}
    assert result.decisions == ("c3",)


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # usage 1/3 -> 2 × trunc(16.67) = 32, 2/3 -> -32
        ({"c1": 1, "c2": 2, "ghost": 3}, {"c1": 32, "c2": -32, "c3": 100}),
        # usage 0.25 -> 50, 0.75 -> -50
        ({"c1": 1, "c2": 3, "ghost": 4}, {"c1": 50, "c2": -50, "c3": 100}),
        # usage 0.5 -> 0, 1 -> -100
        ({"c1": 1, "c2": 2}, {"c1": 0, "c2": -100, "c3": 100}),
        # 1/7 -> 2 × trunc(35.71) = 70; 6/7 -> 2 × trunc(-35.71) = -70
        ({"c1": 1, "c2": 6, "c3": 7}, {"c1": 70, "c2": -70, "c3": -100}),
    ],
)
def test_balance_formula_and_max_count_over_every_counted_name(
    counts: dict[str, int], expected: dict[str, int]
) -> None:
    # "ghost" is not a ManagedCluster: it still sets maxCount
    pds = [foreign_decision(f"p-{name}-{i}", [name]) for name, n in counts.items() for i in range(n)]
    assert balance(*pds) == expected


def test_balance_counts_a_name_listed_twice_in_one_pd_twice() -> None:
    assert balance(foreign_decision("p", ["c1", "c1", "c2"])) == {"c1": -100, "c2": 0, "c3": 100}


def test_balance_exclusion_needs_both_namespace_and_label() -> None:
    objects = [
        own_decision(["c1", "c2"]),  # excluded
        decision("placement1-decision-1", ["c2"], namespace="ns2"),  # same label, other namespace: counted
        decision("foreign", ["c3"], placement_name="placement2"),  # same namespace, other label: counted
        decision("unlabelled", ["c4"], placement_name=None),  # no label: counted
    ]
    assert balance(*objects, clusters=("c1", "c2", "c3", "c4", "c5")) == {
        "c1": 100,
        "c2": -100,
        "c3": -100,
        "c4": -100,
        "c5": 100,
    }


def test_balance_excludes_every_own_pd_page() -> None:
    objects = [own_decision(["c1"], 1), own_decision(["c2"], 2), foreign_decision("p", ["c3"])]
    assert balance(*objects) == {"c1": 100, "c2": 100, "c3": -100}


def test_balance_max_count_ignores_own_counts() -> None:
    # c1: 3 own + 1 foreign = 1 counted; c2: 2 foreign -> max 2
    objects = [
        own_decision(["c1"], 1),
        own_decision(["c1"], 2),
        own_decision(["c1"], 3),
        foreign_decision("p1", ["c1", "c2"]),
        foreign_decision("p2", ["c2"]),
    ]
    assert balance(*objects) == {"c1": 0, "c2": -100, "c3": 100}


def test_e5_balance_with_resources() -> None:
    result = schedule_spec(
        exact(builtin("Balance", 2), builtin("ResourceAllocatableCPU", 1), numberOfClusters=2),
        *bound_set(A, B, C),
        foreign_decision("other", ["a"]),
    )
    assert prioritizer_scores(result, "Balance") == {"a": -100, "b": 100, "c": 100}
    assert prioritizer_scores(result, "ResourceAllocatableCPU") == {"a": 100, "b": -100, "c": 33}
    assert result.scores == {"a": -100, "b": 100, "c": 233}
    assert result.decisions == ("b", "c")


# -- Steady ---------------------------------------------------------------------------------------


def test_steady_is_100_for_this_placements_decisions_only() -> None:
    objects = [
        own_decision(["c1"]),
        decision("anything", ["c2"]),  # any PD name: the label makes it this placement's
        decision("placement1-decision-1", ["c3"], namespace="ns2"),  # other namespace: not ours
        foreign_decision("p", ["c4"]),
    ]
    result = schedule_spec(
        exact(builtin("Steady", 1)), *bound_set(*(cluster(f"c{i}") for i in range(1, 6))), *objects
    )
    assert prioritizer_scores(result, "Steady") == {"c1": 100, "c2": 100, "c3": 0, "c4": 0, "c5": 0}


def test_e4_steady_keeps_the_selection() -> None:
    spec = {
        "numberOfClusters": 2,
        "prioritizerPolicy": policy(
            "Additive",
            builtin("Steady", 3),
            builtin("ResourceAllocatableCPU", 1),
            builtin("ResourceAllocatableMemory", 1),
        ),
    }
    first = schedule_spec(spec, *bound_set(A, B, C))
    assert first.scores == {"a": 100, "b": 100, "c": 183}
    assert first.decisions == ("a", "c")
    second = schedule_spec(
        spec, *bound_set(A, B, C, D), own_decision(["a", "c"]), foreign_decision("x", ["b"])
    )
    assert second.scores == {"a": 400, "b": -140, "c": 452, "d": 300}
    assert second.decisions == ("a", "c")


# -- ResourceAllocatable --------------------------------------------------------------------------


def memory_scores(*clusters: dict[str, object], **spec: object) -> dict[str, int]:
    result = schedule_spec(exact(builtin("ResourceAllocatableMemory", 1), **spec), *bound_set(*clusters))
    return prioritizer_scores(result, "ResourceAllocatableMemory")


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        (("60", "80", "100"), (-100, 0, 100)),  # E2
        (("20", "60", "100"), (-100, 0, 100)),
        (("50", "50", "50"), (100, 100, 100)),
        (("0", "0", "0"), (100, 100, 100)),
        (("50", "80", "100"), (-100, 19, 100)),  # 0.6 -> 19.999999999999996 -> 19
        (("50", "90", "100"), (-100, 60, 100)),
        (("0", "1", "3"), (-100, -33, 100)),  # 1/3 -> trunc(-33.3) = -33 (toward zero)
        (("60M", "80M", "150M"), (-100, -55, 100)),  # 0.2222 -> trunc(-55.6) = -55
    ],
)
def test_e2_memory_scores(memory: tuple[str, str, str], expected: tuple[int, int, int]) -> None:
    clusters = [memory_cluster(f"c{i}", m) for i, m in enumerate(memory, 1)]
    assert memory_scores(*clusters) == dict(zip(("c1", "c2", "c3"), expected, strict=True))


def test_no_allocatable_data_gives_an_empty_score_map() -> None:
    result = schedule_spec(
        exact(builtin("ResourceAllocatableMemory", 1)), *bound_set(cluster("c1"), cluster("c2"))
    )
    assert prioritizer_scores(result, "ResourceAllocatableMemory") == {}
    assert result.scores == {"c1": 0, "c2": 0}


def test_a_cluster_needs_both_allocatable_and_capacity() -> None:
    scores = memory_scores(
        memory_cluster("c1", "10"),
        memory_cluster("c2", "20"),
        cluster("c3", allocatable={"memory": "1"}),  # no capacity: no data
        cluster("c4", capacity={"memory": "1000"}),  # no allocatable: no data
        cluster("c5", allocatable={"memory": "1"}, capacity={"cpu": "1"}),  # capacity of another key
    )
    assert scores == {"c1": -100, "c2": 100}


def test_capacity_value_is_not_used() -> None:
    scores = memory_scores(
        cluster("c1", allocatable={"memory": "60"}, capacity={"memory": "1"}),
        cluster("c2", allocatable={"memory": "80"}, capacity={"memory": "1000000"}),
        cluster("c3", allocatable={"memory": "100"}, capacity={"memory": "0"}),
    )
    assert scores == {"c1": -100, "c2": 0, "c3": 100}


def test_clusters_without_data_have_no_entry_and_add_nothing() -> None:
    result = schedule_spec(
        exact(builtin("ResourceAllocatableMemory", 1)),
        *bound_set(memory_cluster("c1", "1"), memory_cluster("c2", "3"), cluster("c3")),
    )
    assert prioritizer_scores(result, "ResourceAllocatableMemory") == {"c1": -100, "c2": 100}
    assert result.scores == {"c1": -100, "c2": 100, "c3": 0}
    assert result.selected == ("c2", "c3", "c1")


def test_min_and_max_are_over_post_filter_clusters_only() -> None:
    clusters = [
        memory_cluster("c1", "60", labels={"pick": "yes"}),
        memory_cluster("c2", "80", labels={"pick": "yes"}),
        memory_cluster("c3", "100", labels={"pick": "yes"}),
        memory_cluster("c4", "1000"),  # filtered out by the predicate
        memory_cluster("c5", "1", clusterset="other"),  # not a candidate at all
    ]
    scores = memory_scores(*clusters, predicates=[label_predicate({"pick": "yes"})])
    assert scores == {"c1": -100, "c2": 0, "c3": 100}


def test_min_and_max_exclude_untolerated_clusters() -> None:
    clusters = [
        memory_cluster("c1", "60"),
        memory_cluster("c2", "80"),
        memory_cluster("c3", "100", taints=[taint("k")]),
    ]
    assert memory_scores(*clusters) == {"c1": -100, "c2": 100}


def test_e3_cpu_and_memory() -> None:
    spec = exact(
        builtin("ResourceAllocatableCPU", 1), builtin("ResourceAllocatableMemory", 1), numberOfClusters=2
    )
    three = schedule_spec(spec, *bound_set(A, B, C))
    assert prioritizer_scores(three, "ResourceAllocatableCPU") == {"a": 100, "b": -100, "c": 33}
    assert prioritizer_scores(three, "ResourceAllocatableMemory") == {"a": -100, "b": 100, "c": 50}
    assert three.scores == {"a": 0, "b": 0, "c": 83}
    assert three.selected == ("c", "a")
    assert three.decisions == ("a", "c")
    four = schedule_spec(spec, *bound_set(A, B, C, D))
    assert prioritizer_scores(four, "ResourceAllocatableCPU") == {"a": 100, "b": -100, "c": 33, "d": 100}
    assert prioritizer_scores(four, "ResourceAllocatableMemory") == {"a": -100, "b": 60, "c": 19, "d": 100}
    assert four.scores == {"a": 0, "b": -40, "c": 52, "d": 200}
    assert four.decisions == ("c", "d")
    # deleting d -> back to {a, c}
    assert schedule_spec(spec, *bound_set(A, B, C)).decisions == ("a", "c")


def test_cpu_with_milli_units() -> None:
    clusters = [
        cluster("c1", allocatable={"cpu": "500m"}, capacity={"cpu": "1"}),
        cluster("c2", allocatable={"cpu": "1500m"}, capacity={"cpu": "2"}),
        cluster("c3", allocatable={"cpu": "1"}, capacity={"cpu": "2"}),
    ]
    result = schedule_spec(exact(builtin("ResourceAllocatableCPU", 1)), *bound_set(*clusters))
    assert prioritizer_scores(result, "ResourceAllocatableCPU") == {"c1": -100, "c2": 100, "c3": 0}


def test_cpu_and_memory_data_are_independent() -> None:
    clusters = [
        cluster("c1", allocatable={"cpu": "1"}, capacity={"cpu": "1"}),
        cluster("c2", allocatable={"cpu": "2", "memory": "1Gi"}, capacity={"cpu": "2", "memory": "1Gi"}),
    ]
    result = schedule_spec(
        exact(builtin("ResourceAllocatableCPU", 1), builtin("ResourceAllocatableMemory", 1)),
        *bound_set(*clusters),
    )
    assert prioritizer_scores(result, "ResourceAllocatableCPU") == {"c1": -100, "c2": 100}
    assert prioritizer_scores(result, "ResourceAllocatableMemory") == {"c2": 100}


# -- AddOn ----------------------------------------------------------------------------------------


def test_e7_additive_with_addon() -> None:
    clusters = bound_set(
        cluster("c1", allocatable={"memory": "100"}, capacity={"memory": "100"}),
        cluster("c2", allocatable={"memory": "50"}, capacity={"memory": "100"}),
        cluster("c3", allocatable={"memory": "0"}, capacity={"memory": "100"}),
    )
    scores = [addon_score(c, "demo", {"demo": v}) for c, v in (("c1", 30), ("c2", 40), ("c3", 50))]
    additive = schedule_spec(
        {
            "numberOfClusters": 2,
            "prioritizerPolicy": policy(
                "Additive",
                builtin("Balance", 3),
                builtin("ResourceAllocatableMemory", 1),
                addon("demo", "demo", 1),
            ),
        },
        *clusters,
        *scores,
    )
    assert additive.scores == {"c1": 430, "c2": 340, "c3": 250}
    assert additive.decisions == ("c1", "c2")
    exact_mode = schedule_spec(
        exact(builtin("Balance", 3), builtin("ResourceAllocatableMemory", 1), numberOfClusters=2),
        *clusters,
        *scores,
    )
    assert exact_mode.scores == {"c1": 400, "c2": 300, "c3": 200}
    assert exact_mode.decisions == ("c1", "c2")


def addon_run(*scores: dict[str, object], now: datetime = NOW) -> ScheduleResult:
    return schedule_spec(
        exact(addon("demo", "demo", 1), numberOfClusters=2),
        *bound_set(cluster("c1"), cluster("c2"), cluster("c3")),
        *scores,
        now=now,
    )


def test_e8_no_score_objects_means_zero_and_name_order() -> None:
    result = addon_run()
    assert result.scores == {"c1": 0, "c2": 0, "c3": 0}
    assert result.decisions == ("c1", "c2")


def test_e8_scores_decide_and_updates_change_the_decision() -> None:
    first = addon_run(
        *(addon_score(c, "demo", {"demo": v}) for c, v in (("c1", 80), ("c2", 90), ("c3", 100)))
    )
    assert first.decisions == ("c2", "c3")
    second = addon_run(
        *(addon_score(c, "demo", {"demo": v}) for c, v in (("c1", 100), ("c2", 90), ("c3", 100)))
    )
    assert second.decisions == ("c1", "c3")


def test_e8_expired_scores_count_zero_with_a_warning() -> None:
    result = addon_run(
        addon_score("c1", "demo", {"demo": 100}, valid_until=ago(30)),
        addon_score("c2", "demo", {"demo": 40}),
        addon_score("c3", "demo", {"demo": 50}, valid_until=iso(NOW + timedelta(hours=1))),
    )
    assert result.scores == {"c1": 0, "c2": 40, "c3": 50}
    assert result.decisions == ("c2", "c3")
    status = result.status
    assert (status.code, status.plugin, status.message) == (
        "Warning",
        "AddOn/demo/demo",
        "AddOnPlacementScores c1/demo expired",
    )
    # a Warning is not a misconfiguration and does not change PlacementSatisfied
    assert misconfigured(result) == OK_MISCONFIGURED
    assert satisfied(result) == ALL_SCHEDULED


def test_expiry_is_strictly_after_valid_until() -> None:
    at_deadline = addon_run(addon_score("c3", "demo", {"demo": 70}, valid_until=iso(NOW)))
    assert at_deadline.scores == {"c1": 0, "c2": 0, "c3": 70}
    assert at_deadline.status.code == "Success"
    one_second_later = addon_run(
        addon_score("c3", "demo", {"demo": 70}, valid_until=iso(NOW)), now=NOW + timedelta(seconds=1)
    )
    assert one_second_later.scores == {"c1": 0, "c2": 0, "c3": 0}
    assert one_second_later.status.code == "Warning"


def test_several_expired_clusters_are_listed_in_one_warning() -> None:
    result = addon_run(
        addon_score("c3", "demo", {"demo": 1}, valid_until=ago(1)),
        addon_score("c1", "demo", {"demo": 1}, valid_until=ago(1)),
    )
    assert result.status.message == "AddOnPlacementScores c1/demo c3/demo expired"


def test_expired_clusters_outside_the_post_filter_list_do_not_warn() -> None:
    result = schedule_spec(
        exact(addon("demo", "demo", 1), predicates=[label_predicate({"keep": "yes"})]),
        *bound_set(cluster("c1", labels={"keep": "yes"}), cluster("c2")),
        addon_score("c2", "demo", {"demo": 1}, valid_until=ago(1)),
    )
    assert result.status.code == "Success"


def test_missing_score_name_is_zero_and_the_last_item_of_a_name_wins() -> None:
    result = addon_run(
        addon_score("c1", "demo", [("other", 99)]),
        addon_score("c2", "demo", [("demo", 10), ("demo", 20)]),
        addon_score("c3", "other-resource", {"demo": 99}),
    )
    assert result.scores == {"c1": 0, "c2": 20, "c3": 0}


def test_addon_values_are_not_clamped() -> None:
    result = addon_run(addon_score("c1", "demo", {"demo": 1000}), addon_score("c2", "demo", {"demo": -500}))
    assert result.scores == {"c1": 1000, "c2": -500, "c3": 0}
    assert result.selected == ("c1", "c3")


def test_scores_of_non_candidate_clusters_are_irrelevant() -> None:
    result = addon_run(addon_score("elsewhere", "demo", {"demo": 100}))
    assert result.scores == {"c1": 0, "c2": 0, "c3": 0}
