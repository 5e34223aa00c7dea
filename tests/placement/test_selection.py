"""Total scores (sum of weight × score), ranking (total, then name) and selection."""

from __future__ import annotations

import pytest

from .builders import (
    ALL_SCHEDULED,
    NO_MATCH,
    addon,
    addon_score,
    bound_set,
    builtin,
    cluster,
    foreign_decision,
    groups_of,
    memory_cluster,
    misconfigured,
    own_decision,
    policy,
    satisfied,
    schedule_spec,
)


def test_e1_ties_are_broken_by_name() -> None:
    result = schedule_spec({"numberOfClusters": 2}, *bound_set(cluster("c3"), cluster("c1"), cluster("c2")))
    assert result.scores == {"c1": 100, "c2": 100, "c3": 100}
    assert result.decisions == ("c1", "c2")
    assert satisfied(result) == ALL_SCHEDULED


def test_ranking_is_total_descending_then_name_ascending() -> None:
    scores = [addon_score(c, "r", {"s": v}) for c, v in (("a", 5), ("b", 9), ("c", 5), ("d", -1), ("e", 9))]
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", addon("r", "s", 1)), "numberOfClusters": 3},
        *bound_set(*(cluster(n) for n in "edcba")),
        *scores,
    )
    assert result.ranked == ("b", "e", "a", "c", "d")
    assert result.selected == ("b", "e", "a")
    # decisions list the chosen clusters by name, never by score
    assert result.decisions == ("a", "b", "e")


@pytest.mark.parametrize(
    ("cluster_names", "first_two"),
    [
        (["alpha", "Zeta", "beta"], ("Zeta", "alpha")),  # byte-wise: upper case sorts first
        (["cluster9", "cluster10", "cluster100"], ("cluster10", "cluster100")),
        (["a-b", "a.b", "a0"], ("a-b", "a.b")),
    ],
)
def test_name_order_is_byte_wise(cluster_names: list[str], first_two: tuple[str, str]) -> None:
    result = schedule_spec({"numberOfClusters": 2}, *bound_set(*(cluster(n) for n in cluster_names)))
    assert result.selected == first_two


def test_scores_cover_every_post_filter_cluster_selected_or_not() -> None:
    result = schedule_spec(
        {
            "numberOfClusters": 1,
            "prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 1)),
        },
        *bound_set(memory_cluster("c1", "1"), memory_cluster("c2", "2"), memory_cluster("c3", "3")),
    )
    assert result.decisions == ("c3",)
    assert result.scores == {"c1": -100, "c2": 0, "c3": 100}


def test_number_of_clusters_absent_selects_every_feasible_cluster() -> None:
    result = schedule_spec({}, *bound_set(*(cluster(f"c{i}") for i in range(5))))
    assert len(result.selected) == 5
    assert result.unscheduled == 0
    assert satisfied(result) == ALL_SCHEDULED


def test_number_of_clusters_zero_selects_nothing() -> None:
    result = schedule_spec({"numberOfClusters": 0}, *bound_set(cluster("c1"), cluster("c2")))
    assert result.selected == ()
    assert result.unscheduled == 0
    assert result.scores == {"c1": 100, "c2": 100}
    assert satisfied(result) == NO_MATCH
    assert groups_of(result) == [(0, "", [])]
    assert [p.name for p in result.pages] == ["placement1-decision-1"]


def test_number_of_clusters_equal_to_feasible() -> None:
    result = schedule_spec({"numberOfClusters": 2}, *bound_set(cluster("c1"), cluster("c2")))
    assert result.decisions == ("c1", "c2")
    assert satisfied(result) == ALL_SCHEDULED


def test_e9_oversubscribed() -> None:
    one = schedule_spec({"numberOfClusters": 3}, *bound_set(cluster("c1")))
    assert one.decisions == ("c1",)
    assert one.unscheduled == 2
    assert satisfied(one) == ("False", "NotAllDecisionsScheduled", "2 cluster decisions unscheduled")
    two = schedule_spec(
        {"numberOfClusters": 4}, *bound_set(cluster("c1"), cluster("c2")), own_decision(["c1"])
    )
    assert two.decisions == ("c1", "c2")
    assert satisfied(two) == ("False", "NotAllDecisionsScheduled", "2 cluster decisions unscheduled")


def test_negative_number_of_clusters_is_reported_as_misconfigured() -> None:
    # OCM's Go code panics here; fleetplace's divergence is Misconfigured with nothing selected
    result = schedule_spec({"numberOfClusters": -1}, *bound_set(cluster("c1")))
    assert misconfigured(result)[0] == "True"
    assert result.selected == ()
    assert result.requeue_at is None


def test_no_stickiness_beyond_steady() -> None:
    # Exact memory only: the previous decision does not matter once the ranking changes
    result = schedule_spec(
        {
            "numberOfClusters": 1,
            "prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 1)),
        },
        *bound_set(memory_cluster("c1", "1"), memory_cluster("c2", "2")),
        own_decision(["c1"]),
    )
    assert result.decisions == ("c2",)


def test_balance_and_steady_together_in_the_default_policy() -> None:
    # c1: Balance -100 (a foreign PD) + Steady 100; c2: 100 + 0; c3: 100 + 100
    result = schedule_spec(
        {"numberOfClusters": 2},
        *bound_set(cluster("c1"), cluster("c2"), cluster("c3")),
        foreign_decision("x", ["c1"]),
        own_decision(["c1", "c3"]),
    )
    assert result.scores == {"c1": 0, "c2": 100, "c3": 200}
    assert result.decisions == ("c2", "c3")


def test_totals_beyond_32_bits_rank_correctly() -> None:
    # int32 weights times unclamped int32 add-on values: totals need all of int64
    big = 2**31 - 1
    scores = [addon_score(c, "r", {"s": v}) for c, v in (("a", -big - 1), ("b", big), ("c", 1), ("d", 0))]
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", addon("r", "s", big)), "numberOfClusters": 2},
        *bound_set(*(cluster(n) for n in "abcd")),
        *scores,
    )
    assert result.scores == {"a": (-big - 1) * big, "b": big * big, "c": big, "d": 0}
    assert result.ranked == ("b", "c", "d", "a")
    assert result.decisions == ("b", "c")
