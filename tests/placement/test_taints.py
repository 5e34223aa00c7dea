"""The TaintToleration filter and the requeue time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement.framework import ScheduleContext
from fleetplace.shared.placement.plugins.taints import TaintTolerationFilter, cluster_tolerated
from fleetplace.shared.placement.scheduler import _eligible

from .builders import (
    NO_BINDINGS,
    NOW,
    NS,
    OK_MISCONFIGURED,
    ago,
    bound_set,
    builtin,
    cluster,
    cluster_set,
    decision,
    expr,
    fleet_of,
    foreign_decision,
    iso,
    label_predicate,
    misconfigured,
    own_decision,
    placement,
    policy,
    requeue_seconds,
    satisfied,
    schedule_spec,
    taint,
    toleration,
)


def select(
    tolerations: list[dict[str, object]], *objects: dict[str, object], **spec: object
) -> tuple[str, ...]:
    return schedule_spec({"tolerations": tolerations, **spec}, *objects).decisions


# -- E10 ------------------------------------------------------------------------------------------


def test_e10_tolerations_by_key_and_value() -> None:
    objects = bound_set(
        cluster("c1", taints=[taint("key1", value="value1")]),
        cluster("c2", taints=[taint("key2", value="value2")]),
        cluster("c3", taints=[taint("key2", value="value3")]),
    )
    result = schedule_spec(
        {
            "numberOfClusters": 3,
            "tolerations": [toleration("key1", "Exists"), toleration("key2", "Equal", "value2")],
        },
        *objects,
    )
    assert result.decisions == ("c1", "c2")
    assert satisfied(result) == ("False", "NotAllDecisionsScheduled", "1 cluster decisions unscheduled")


def test_e10_effects() -> None:
    objects = bound_set(
        cluster("c1", taints=[taint("key1", "NoSelect")]),
        cluster("c2", taints=[taint("key2", "NoSelectIfNew")]),
        cluster("c3", taints=[taint("key3", "PreferNoSelect")]),
        cluster("c4"),
    )
    tolerations = [
        toleration("key1", "Exists", effect="PreferNoSelect"),
        toleration("key2", "Exists", effect="NoSelect"),
    ]
    assert select(tolerations, *objects) == ("c3", "c4")


def test_e10_no_select_if_new_keeps_an_already_selected_cluster() -> None:
    objects = bound_set(cluster("c3"), cluster("c4", taints=[taint("key4", "NoSelectIfNew")]))
    assert select([], *objects) == ("c3",)
    assert select([], *objects, own_decision(["c3", "c4"])) == ("c3", "c4")


# -- effects --------------------------------------------------------------------------------------


def test_prefer_no_select_never_excludes_and_never_penalises() -> None:
    result = schedule_spec(
        {}, *bound_set(cluster("c1", taints=[taint("k", "PreferNoSelect")]), cluster("c2"))
    )
    assert result.decisions == ("c1", "c2")
    assert result.scores == {"c1": 100, "c2": 100}


def test_untolerated_no_select_excludes() -> None:
    assert select([], *bound_set(cluster("c1", taints=[taint("k")]), cluster("c2"))) == ("c2",)


def test_every_taint_must_be_tolerated() -> None:
    objects = bound_set(cluster("c1", taints=[taint("a"), taint("b")]))
    assert select([toleration("a", "Exists")], *objects) == ()
    assert select([toleration("a", "Exists"), toleration("b", "Exists")], *objects) == ("c1",)


def test_no_select_if_new_on_a_cluster_of_another_placement_still_excludes() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", "NoSelectIfNew")]))
    assert select([], *objects, foreign_decision("other", ["c1"])) == ()


# -- matching -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tol", "tolerated"),
    [
        (toleration("k", "Equal", "v"), True),
        (toleration("k", None, "v"), True),  # absent operator is Equal
        (toleration("k", "", "v"), True),
        (toleration("k", "Equal", "w"), False),
        (toleration("k", "Equal"), False),  # Equal with empty value needs an empty-valued taint
        (toleration("k", "Exists"), True),
        (toleration("other", "Exists"), False),
        (toleration(None, "Exists"), True),  # empty key + Exists tolerates every taint
        (toleration("k", "Exists", effect="NoSelect"), True),
        (toleration("k", "Exists", effect="PreferNoSelect"), False),
        (toleration("k", "Foo", "v"), False),  # unknown operator never matches, no error
        (toleration("k", "exists"), False),  # operators are case-sensitive
    ],
)
def test_toleration_matching(tol: dict[str, object], tolerated: bool) -> None:
    result = schedule_spec({"tolerations": [tol]}, *bound_set(cluster("c1", taints=[taint("k", value="v")])))
    assert misconfigured(result) == OK_MISCONFIGURED
    assert result.decisions == (("c1",) if tolerated else ())


def test_equal_with_empty_value_tolerates_the_empty_valued_ocm_taints() -> None:
    unreachable = "cluster.open-cluster-management.io/unreachable"
    objects = bound_set(
        cluster("c1", taints=[taint(unreachable)]), cluster("c2", taints=[taint(unreachable, value="x")])
    )
    assert select([toleration(unreachable, "Equal")], *objects) == ("c1",)


def test_unknown_operator_with_an_empty_key_is_misconfigured() -> None:
    result = schedule_spec({"tolerations": [toleration(None, "Foo")]}, *bound_set(cluster("c1")))
    assert misconfigured(result) == (
        "True",
        "Misconfigured",
        "TaintToleration:If the key is empty, operator must be Exists.",
    )


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "message"),
    [
        ([toleration(None, "Equal", "v")], "If the key is empty, operator must be Exists."),
        ([toleration(None, None)], "If the key is empty, operator must be Exists."),
        ([toleration(None, "")], "If the key is empty, operator must be Exists."),
        ([toleration("key1", "Exists", "value1")], "If the operator is Exists, the value should be empty."),
        # first failure wins, in toleration order
        (
            [toleration("k", "Exists"), toleration("key1", "Exists", "v"), toleration(None, "Equal")],
            "If the operator is Exists, the value should be empty.",
        ),
        (
            [toleration(None, "Equal"), toleration("key1", "Exists", "v")],
            "If the key is empty, operator must be Exists.",
        ),
    ],
)
def test_misconfigured_tolerations(tolerations: list[dict[str, object]], message: str) -> None:
    result = schedule_spec({"tolerations": tolerations}, *bound_set(cluster("c1")))
    assert misconfigured(result) == ("True", "Misconfigured", f"TaintToleration:{message}")
    assert result.decisions == ()
    assert result.scores == {}
    assert [p.clusters for p in result.pages] == [()]


def test_misconfigured_toleration_fixed_schedules_again() -> None:
    # E15: {key1, Exists, value1} -> Misconfigured; fixing the spec -> 1 decision
    objects = bound_set(cluster("c1"))
    bad = schedule_spec({"tolerations": [toleration("key1", "Exists", "value1")]}, *objects)
    assert misconfigured(bad)[0] == "True"
    good = schedule_spec({"tolerations": [toleration("key1", "Exists")]}, *objects)
    assert misconfigured(good) == OK_MISCONFIGURED
    assert good.decisions == ("c1",)


def test_tolerations_are_not_validated_without_candidates() -> None:
    bad = [toleration(None, "Equal")]
    no_binding = schedule_spec({"tolerations": bad}, cluster_set("set1"), cluster("c1"))
    assert misconfigured(no_binding) == OK_MISCONFIGURED
    assert satisfied(no_binding) == NO_BINDINGS
    # the predicate removed every candidate before TaintToleration ran
    filtered = schedule_spec(
        {"tolerations": bad, "predicates": [label_predicate({"a": "b"})]}, *bound_set(cluster("c1"))
    )
    assert misconfigured(filtered) == OK_MISCONFIGURED


def test_tolerations_are_validated_even_when_no_cluster_is_tainted() -> None:
    result = schedule_spec({"tolerations": [toleration(None, "Equal")]}, *bound_set(cluster("c1")))
    assert misconfigured(result)[0] == "True"


def test_predicate_misconfiguration_wins_over_toleration_misconfiguration() -> None:
    spec = {
        "predicates": [label_predicate(None, expr("a", "Gt", "1"))],
        "tolerations": [toleration(None, "Equal")],
    }
    assert misconfigured(schedule_spec(spec, *bound_set(cluster("c1"))))[2].startswith("Predicate:")


# -- tolerationSeconds (E11) ----------------------------------------------------------------------


def e11_clusters() -> list[dict[str, object]]:
    return bound_set(
        cluster("c1", taints=[taint("key1", added=ago(8))]),
        cluster("c2", taints=[taint("key1", added=ago(9))]),
        cluster("c3", taints=[taint("key1", added=ago(10))]),
    )


def test_e11_deadline_is_strict() -> None:
    # deadlines T+2, T+1, T: c3's deadline is not after now
    tolerations = [toleration("key1", "Exists", seconds=10)]
    assert select(tolerations, *e11_clusters()) == ("c1", "c2")


def test_e11_requeue_is_the_earliest_deadline_of_the_existing_decisions() -> None:
    tolerations = [toleration("key1", "Exists", seconds=10)]
    result = schedule_spec({"tolerations": tolerations}, *e11_clusters(), own_decision(["c1", "c2"]))
    assert result.decisions == ("c1", "c2")
    assert requeue_seconds(result) == 1
    assert result.requeue_at == NOW + timedelta(seconds=1)


def test_e11_new_selection_arms_no_requeue() -> None:
    # c1 and c2 are selected this round but were not decided before: no requeue yet
    result = schedule_spec({"tolerations": [toleration("key1", "Exists", seconds=10)]}, *e11_clusters())
    assert result.decisions == ("c1", "c2")
    assert result.requeue_at is None


def test_e11_integration_timeline() -> None:
    t0 = NOW
    objects = bound_set(
        cluster("c1", taints=[taint("key1", added=iso(t0))]),
        cluster("c2", taints=[taint("key2", added=iso(t0))]),
        cluster("c3", taints=[taint("key2", added=iso(t0 - timedelta(seconds=60)))]),
        cluster("c4"),
    )
    spec = {
        "tolerations": [toleration("key1", "Exists", seconds=10), toleration("key2", "Exists", seconds=20)]
    }
    first = schedule_spec(spec, *objects, now=t0)
    assert first.decisions == ("c1", "c2", "c4")
    decided = own_decision(first.decisions)
    second = schedule_spec(spec, *objects, decided, now=t0 + timedelta(seconds=1))
    assert second.decisions == ("c1", "c2", "c4")
    assert requeue_seconds(second) == 9  # c1's deadline t0+10
    at_10 = schedule_spec(spec, *objects, decided, now=t0 + timedelta(seconds=10))
    assert at_10.decisions == ("c2", "c4")
    assert requeue_seconds(at_10) == 10  # c1 is no longer tolerated; c2's deadline t0+20
    at_20 = schedule_spec(spec, *objects, own_decision(at_10.decisions), now=t0 + timedelta(seconds=20))
    assert at_20.decisions == ("c4",)
    assert at_20.requeue_at is None
    objects[-1] = cluster("c4", taints=[taint("key3", added=iso(t0))])
    assert schedule_spec(spec, *objects, now=t0 + timedelta(seconds=21)).decisions == ()


@pytest.mark.parametrize("added", [None, "0001-01-01T00:00:00Z"])
def test_zero_time_added_is_already_expired(added: object) -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=added)]))
    assert select([toleration("k", "Exists", seconds=3600)], *objects) == ()
    assert select([toleration("k", "Exists")], *objects) == ("c1",)


def test_absent_time_added_is_already_expired() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k")]))
    assert select([toleration("k", "Exists", seconds=3600)], *objects) == ()


def test_expired_toleration_lets_the_scan_continue() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(100))]))
    tolerations = [toleration("k", "Exists", seconds=10), toleration("k", "Exists")]
    result = schedule_spec({"tolerations": tolerations}, *objects, own_decision(["c1"]))
    assert result.decisions == ("c1",)
    assert result.requeue_at is None  # tolerated forever by the second toleration


def test_first_unexpired_toleration_gives_the_requeue_time() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(0))]))
    tolerations = [toleration("k", "Exists", seconds=30), toleration("k", "Exists", seconds=5)]
    result = schedule_spec({"tolerations": tolerations}, *objects, own_decision(["c1"]))
    assert requeue_seconds(result) == 30


def test_toleration_seconds_apply_to_any_effect_reaching_the_scan() -> None:
    # NoSelectIfNew of a new cluster reaches the scan, so tolerationSeconds matter
    objects = bound_set(cluster("c1", taints=[taint("k", "NoSelectIfNew", added=ago(20))]))
    assert select([toleration("k", "Exists", seconds=10)], *objects) == ()
    assert select([toleration("k", "Exists", seconds=30)], *objects) == ("c1",)


def test_no_select_if_new_of_a_decided_cluster_ignores_expired_toleration_seconds() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", "NoSelectIfNew", added=ago(20))]))
    result = schedule_spec(
        {"tolerations": [toleration("k", "Exists", seconds=10)]}, *objects, own_decision(["c1"])
    )
    assert result.decisions == ("c1",)
    assert result.requeue_at is None  # rule 2 tolerates before any toleration is looked at


def test_negative_toleration_seconds_expire_immediately() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=iso(NOW))]))
    assert select([toleration("k", "Exists", seconds=-1)], *objects) == ()
    assert select([toleration("k", "Exists", seconds=0)], *objects) == ()
    assert select([toleration("k", "Exists", seconds=1)], *objects) == ("c1",)


# -- requeue --------------------------------------------------------------------------------------


def requeue_of(
    *objects: dict[str, object], tolerations: list[dict[str, object]] | None = None, **spec: object
) -> float | None:
    tols = tolerations if tolerations is not None else [toleration("k", "Exists", seconds=100)]
    return requeue_seconds(schedule_spec({"tolerations": tols, **spec}, *objects))


def test_requeue_is_the_minimum_over_taints_and_clusters() -> None:
    tolerations = [toleration("a", "Exists", seconds=100), toleration("b", "Exists", seconds=50)]
    objects = bound_set(
        cluster("c1", taints=[taint("a", added=ago(10)), taint("b", added=ago(10))]),  # 90, 40
        cluster("c2", taints=[taint("a", added=ago(70))]),  # 30
    )
    assert requeue_of(*objects, own_decision(["c1"]), tolerations=tolerations) == 40
    assert requeue_of(*objects, own_decision(["c1", "c2"]), tolerations=tolerations) == 30


def test_requeue_counts_decided_clusters_outside_the_eligible_sets() -> None:
    objects = [
        *bound_set(cluster("c1")),
        cluster("x1", clusterset="elsewhere", taints=[taint("k", added=ago(40))]),
    ]
    assert requeue_of(*objects, own_decision(["x1"])) == 60


def test_requeue_counts_decided_clusters_failing_the_predicates() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(40))]))
    result = schedule_spec(
        {
            "tolerations": [toleration("k", "Exists", seconds=100)],
            "predicates": [label_predicate({"a": "b"})],
        },
        *objects,
        own_decision(["c1"]),
    )
    assert result.decisions == ()
    assert requeue_seconds(result) == 60


def test_requeue_counts_decided_terminating_clusters() -> None:
    objects = bound_set(cluster("c1", deleting=True, taints=[taint("k", added=ago(40))]))
    assert requeue_of(*objects, own_decision(["c1"])) == 60


def test_requeue_is_computed_without_any_binding() -> None:
    objects = [cluster("c1", taints=[taint("k", added=ago(40))]), own_decision(["c1"])]
    result = schedule_spec({"tolerations": [toleration("k", "Exists", seconds=100)]}, *objects)
    assert satisfied(result) == NO_BINDINGS
    assert requeue_seconds(result) == 60


def test_requeue_is_computed_when_nothing_is_selected() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(40))]))
    assert requeue_of(*objects, own_decision(["c1"]), numberOfClusters=0) == 60


def test_untolerated_decided_cluster_contributes_nothing() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(40)), taint("untolerated")]))
    assert requeue_of(*objects, own_decision(["c1"])) is None


def test_decided_names_without_a_cluster_are_skipped() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(40))]))
    assert requeue_of(*objects, own_decision(["ghost", "c1"])) == 60
    assert requeue_of(*objects, own_decision(["ghost"])) is None


def test_expired_decided_cluster_contributes_nothing() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(100))]))
    result = schedule_spec(
        {"tolerations": [toleration("k", "Exists", seconds=100)]}, *objects, own_decision(["c1"])
    )
    assert result.decisions == ()
    assert result.requeue_at is None


def test_no_requeue_when_scheduling_is_misconfigured() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(40))]))
    result = schedule_spec(
        {"tolerations": [toleration("k", "Exists", seconds=100)], "prioritizerPolicy": policy("Foo")},
        *objects,
        own_decision(["c1"]),
    )
    assert misconfigured(result)[0] == "True"
    assert result.requeue_at is None


def test_requeue_ignores_decisions_of_other_placements() -> None:
    objects = bound_set(cluster("c1", taints=[taint("k", added=ago(40))]))
    assert requeue_of(*objects, foreign_decision("other", ["c1"])) is None


def test_decided_clusters_use_in_decision_true_for_no_select_if_new() -> None:
    objects = bound_set(
        cluster("c1", taints=[taint("new", "NoSelectIfNew"), taint("k", added=ago(40))]),
        cluster("c2"),
    )
    result = schedule_spec(
        {
            "tolerations": [toleration("k", "Exists", seconds=100)],
            "prioritizerPolicy": policy("Exact", builtin("Steady", 1)),
        },
        *objects,
        own_decision(["c1"]),
    )
    assert result.decisions == ("c1", "c2")
    assert requeue_seconds(result) == 60


# -- verdicts shared between placements --------------------------------------------------------

_effects = st.sampled_from(["NoSelect", "NoSelectIfNew", "PreferNoSelect"])
_taint_st = st.builds(
    lambda k, e, age: taint(k, e, added=ago(age)), st.sampled_from(["a", "b"]), _effects, st.integers(0, 120)
)
_toleration_st = st.builds(
    lambda k, e, s: toleration(k, "Exists", effect=e, seconds=s),
    st.sampled_from(["a", "b"]),
    st.one_of(st.none(), _effects),
    st.one_of(st.none(), st.integers(0, 120)),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(_taint_st, max_size=2), min_size=1, max_size=6),
    st.lists(
        st.tuples(st.lists(_toleration_st, max_size=2), st.sets(st.integers(0, 5))), min_size=1, max_size=4
    ),
)
def test_placements_sharing_verdicts_keep_what_each_would_alone(
    taints: list[list[dict[str, object]]], placements: list[tuple[list[dict[str, object]], set[int]]]
) -> None:
    """Verdicts are worked out once per tolerations and shared; a placement's own decided
    clusters (NoSelectIfNew spares them) must still be judged as its own."""
    clusters = [cluster(f"c{i}", taints=t) for i, t in enumerate(taints)]
    objects: list[dict[str, object]] = [*bound_set(*clusters)]
    for k, (tolerations, own) in enumerate(placements):
        objects.append(placement({"tolerations": tolerations}, name=f"p{k}"))
        decided = [f"c{i}" for i in sorted(own) if i < len(clusters)]
        if decided:
            objects.append(decision(f"p{k}-decision-1", decided, placement_name=f"p{k}"))
    raws = list(objects)
    fleet = fleet_of((parse_object(raw), raw) for raw in raws)
    for k in range(len(placements)):
        p = fleet.placements[f"{NS}/p{k}"]
        eligible = _eligible(p, fleet)[1]
        # the candidates' lineage, as the scheduler gives it: without one nothing is shared at all
        ctx = ScheduleContext(
            p, fleet, NOW, fleet.decisions.own(NS, f"p{k}"), lineage=("candidates", eligible)
        )
        slots = fleet.candidates(eligible)
        kept = TaintTolerationFilter().filter(ctx, slots).slots
        expected = [
            s
            for s in slots.tolist()
            if cluster_tolerated(
                fleet.clusters[fleet.name_of(s)], fleet.name_of(s) in ctx.own, p.spec.tolerations, NOW
            )[0]
        ]
        assert kept.tolist() == expected
