"""PlacementMisconfigured and PlacementSatisfied."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fleetplace.shared.placement.conditions import misconfigured_condition, satisfied_condition
from fleetplace.shared.placement.framework import Code, Status

from .builders import (
    ALL_SCHEDULED,
    NO_BINDINGS,
    NO_MATCH,
    OK_MISCONFIGURED,
    addon,
    addon_score,
    ago,
    binding,
    bound_set,
    builtin,
    cluster,
    cluster_set,
    expr,
    label_predicate,
    misconfigured,
    policy,
    satisfied,
    schedule_spec,
    toleration,
)

SUCCESS = Status()


def row(
    *,
    bindings: int = 1,
    spec_cluster_sets: Sequence[str] = (),
    eligible_sets: Sequence[str] = ("clusterset1",),
    available: int = 1,
    final: Status = SUCCESS,
    selected: int = 1,
    unscheduled: int = 0,
) -> tuple[str, str, str]:
    c = satisfied_condition(
        bindings=bindings,
        spec_cluster_sets=spec_cluster_sets,
        eligible_sets=eligible_sets,
        available=available,
        final=final,
        selected=selected,
        unscheduled=unscheduled,
    )
    assert c.type == "PlacementSatisfied"
    return c.status, c.reason, c.message


# -- E17: the unit table, first matching row wins ---------------------------------------------------


def test_e17_no_bindings_wins_even_with_unscheduled() -> None:
    assert row(bindings=0, eligible_sets=(), available=0, selected=0, unscheduled=5) == NO_BINDINGS


def test_e17_no_intersection() -> None:
    assert row(spec_cluster_sets=["clusterset1"], eligible_sets=(), available=0, selected=0) == (
        "False",
        "NoIntersection",
        "None of ManagedClusterSets [clusterset1] is bound to placement namespace",
    )


def test_e17_all_sets_empty() -> None:
    assert row(eligible_sets=["clusterset1"], available=0, selected=0) == (
        "False",
        "AllManagedClusterSetsEmpty",
        "All ManagedClusterSets [clusterset1] have no member ManagedCluster",
    )


def test_e17_error_status_reports_the_error_text() -> None:
    assert row(final=Status(Code.ERROR, "Balance", "list failed"), selected=0) == (
        "False",
        "NotAllDecisionsScheduled",
        "list failed",
    )


def test_error_row_comes_after_the_membership_rows() -> None:
    assert row(bindings=0, final=Status(Code.ERROR, "", "boom")) == NO_BINDINGS
    assert row(available=0, final=Status(Code.ERROR, "", "boom"))[1] == "AllManagedClusterSetsEmpty"


def test_e17_nothing_selected() -> None:
    assert row(available=1, selected=0) == NO_MATCH


def test_e17_all_scheduled() -> None:
    assert row(selected=1, unscheduled=0) == ALL_SCHEDULED


def test_e17_not_all_scheduled() -> None:
    assert row(selected=1, unscheduled=1) == (
        "False",
        "NotAllDecisionsScheduled",
        "1 cluster decisions unscheduled",
    )


def test_misconfigured_and_warning_codes_use_the_ordinary_rows() -> None:
    assert row(final=Status(Code.MISCONFIGURED, "", "x"), selected=0) == NO_MATCH
    assert row(final=Status(Code.WARNING, "AddOn/a/b", "x")) == ALL_SCHEDULED


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (SUCCESS, OK_MISCONFIGURED),
        (Status(Code.WARNING, "AddOn/r/s", "expired"), OK_MISCONFIGURED),
        (Status(Code.ERROR, "Balance", "boom"), OK_MISCONFIGURED),
        (
            Status(Code.MISCONFIGURED, "TaintToleration", "msg"),
            ("True", "Misconfigured", "TaintToleration:msg"),
        ),
        (Status(Code.MISCONFIGURED, "", "msg"), ("True", "Misconfigured", ":msg")),
    ],
)
def test_misconfigured_condition(status: Status, expected: tuple[str, str, str]) -> None:
    c = misconfigured_condition(status)
    assert (c.type, c.status, c.reason, c.message) == ("PlacementMisconfigured", *expected)


# -- through the scheduler (E15, E16) --------------------------------------------------------------


def test_conditions_come_misconfigured_first_then_satisfied() -> None:
    result = schedule_spec({}, *bound_set(cluster("c1")))
    assert [c.type for c in result.conditions] == ["PlacementMisconfigured", "PlacementSatisfied"]
    assert misconfigured(result) == OK_MISCONFIGURED
    assert satisfied(result) == ALL_SCHEDULED


def test_e15_no_bindings() -> None:
    result = schedule_spec({"numberOfClusters": 5}, cluster_set("set1"), cluster("c1"))
    assert satisfied(result) == NO_BINDINGS
    assert result.number_selected == 0
    assert [(p.name, p.clusters) for p in result.pages] == [("placement1-decision-1", ())]


def test_e15_bound_set_without_members() -> None:
    result = schedule_spec({}, cluster_set("set1"), binding("set1"))
    assert satisfied(result) == (
        "False",
        "AllManagedClusterSetsEmpty",
        "All ManagedClusterSets [set1] have no member ManagedCluster",
    )


def test_e15_members_but_no_predicate_match() -> None:
    result = schedule_spec({"predicates": [label_predicate({"a": "b"})]}, *bound_set(cluster("c1")))
    assert satisfied(result) == NO_MATCH


def test_e16_deleting_the_only_bound_set_invalidates_the_binding() -> None:
    result = schedule_spec({}, binding("set1"), cluster("c1"))
    assert satisfied(result) == NO_BINDINGS


def test_no_intersection_through_the_scheduler() -> None:
    result = schedule_spec({"clusterSets": ["a", "b"]}, *bound_set(cluster("c1")))
    assert satisfied(result) == (
        "False",
        "NoIntersection",
        "None of ManagedClusterSets [a,b] is bound to placement namespace",
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"tolerations": [toleration(None, "Equal")]},
            "TaintToleration:If the key is empty, operator must be Exists.",
        ),
        (
            {"tolerations": [toleration("key1", "Exists", "value1")]},
            "TaintToleration:If the operator is Exists, the value should be empty.",
        ),
        (
            {"predicates": [label_predicate(None, expr("a", "Gt", "1"))]},
            'Predicate:"Gt" is not a valid label selector operator',
        ),
        (
            {"prioritizerPolicy": policy("Exact", builtin("Spread", 1))},
            ":incorrect builtin prioritizer: Spread",
        ),
        ({"prioritizerPolicy": policy("Foo")}, ":incorrect prioritizer policy mode: Foo"),
        ({"prioritizerPolicy": policy("Exact", {"weight": 1})}, ":scoreCoordinate field is required"),
        (
            {"prioritizerPolicy": policy("Exact", builtin("x", 1, type_="AddOn"))},
            ":addOn should not be empty",
        ),
        (
            {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "5"}}},
            ":5 invalid type: string is not a percentage",
        ),
    ],
)
def test_misconfigured_messages_are_plugin_colon_text(spec: dict[str, object], message: str) -> None:
    result = schedule_spec({"numberOfClusters": 1, **spec}, *bound_set(cluster("c1"), cluster("c2")))
    assert misconfigured(result) == ("True", "Misconfigured", message)
    # the selection is emptied: rows 1-3 permitting, Satisfied says nothing matched
    assert satisfied(result) == NO_MATCH
    assert result.decisions == ()
    assert result.number_selected == 0


def test_misconfigured_without_bindings_still_reports_no_bindings() -> None:
    result = schedule_spec({"prioritizerPolicy": policy("Foo")}, cluster_set("set1"))
    assert misconfigured(result)[0] == "True"
    assert satisfied(result) == NO_BINDINGS


def test_number_of_clusters_zero_is_no_cluster_matched() -> None:
    assert satisfied(schedule_spec({"numberOfClusters": 0}, *bound_set(cluster("c1")))) == NO_MATCH


def test_warning_is_not_misconfigured() -> None:
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", addon("demo", "s", 1))},
        *bound_set(cluster("c1")),
        addon_score("c1", "demo", {"s": 5}, valid_until=ago(5)),
    )
    assert result.status.code == "Warning"
    assert misconfigured(result) == OK_MISCONFIGURED
    assert satisfied(result) == ALL_SCHEDULED
