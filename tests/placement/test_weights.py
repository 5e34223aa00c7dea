"""Resolving prioritizer weights: modes, overlays, coordinate identity, validation."""

from __future__ import annotations

import pytest

from .builders import (
    NO_BINDINGS,
    NO_MATCH,
    OK_MISCONFIGURED,
    addon,
    addon_score,
    bound_set,
    builtin,
    cluster,
    cluster_set,
    foreign_decision,
    label_predicate,
    memory_cluster,
    misconfigured,
    own_decision,
    policy,
    prioritizer_names,
    prioritizer_scores,
    satisfied,
    schedule_spec,
)

THREE = bound_set(cluster("c1"), cluster("c2"), cluster("c3"))
MEMORY = bound_set(memory_cluster("c1", "60M"), memory_cluster("c2", "80M"), memory_cluster("c3", "100M"))


def weights_of(result: object) -> dict[str, int]:
    return {p.name: p.weight for p in result.prioritizers}  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", [None, "", "Additive"])
def test_additive_and_empty_modes_start_from_balance_and_steady(mode: str | None) -> None:
    result = schedule_spec({"prioritizerPolicy": policy(mode)}, *THREE)
    assert weights_of(result) == {"Balance": 1, "Steady": 1}


def test_absent_prioritizer_policy_is_additive() -> None:
    assert weights_of(schedule_spec({}, *THREE)) == {"Balance": 1, "Steady": 1}


def test_exact_starts_from_an_empty_table() -> None:
    result = schedule_spec({"prioritizerPolicy": policy("Exact")}, *THREE, foreign_decision("x", ["c1"]))
    assert result.prioritizers == ()
    assert result.scores == {"c1": 0, "c2": 0, "c3": 0}
    # selection is purely by name even though Balance would have penalised c1
    assert result.selected == ("c1", "c2", "c3")


def test_exact_with_only_zero_weights_runs_nothing() -> None:
    result = schedule_spec(
        {
            "prioritizerPolicy": policy(
                "Exact", builtin("Balance", 0), builtin("ResourceAllocatableMemory", 0)
            )
        },
        *MEMORY,
    )
    assert result.prioritizers == ()
    assert result.scores == {"c1": 0, "c2": 0, "c3": 0}


def test_additive_overlay_adds_configured_prioritizers() -> None:
    result = schedule_spec(
        {"prioritizerPolicy": policy("Additive", builtin("ResourceAllocatableMemory", 2))}, *MEMORY
    )
    assert weights_of(result) == {"Balance": 1, "Steady": 1, "ResourceAllocatableMemory": 2}
    # 100 + 0 + 2 × (−100 / 0 / 100)
    assert result.scores == {"c1": -100, "c2": 100, "c3": 300}


def test_zero_weight_switches_a_default_off_in_additive_mode() -> None:
    result = schedule_spec({"prioritizerPolicy": policy("Additive", builtin("Balance", 0))}, *THREE)
    assert weights_of(result) == {"Steady": 1}


def test_absent_weight_is_zero_and_switches_a_default_off() -> None:
    # objects as written: an absent weight is 0 (the CRD default of 1 is the API server's)
    result = schedule_spec(
        {"prioritizerPolicy": policy("Additive", builtin("Steady"))}, *THREE, own_decision(["c3"])
    )
    assert weights_of(result) == {"Balance": 1}
    assert result.scores == {"c1": 100, "c2": 100, "c3": 100}


def test_weight_overrides_a_default() -> None:
    result = schedule_spec(
        {"prioritizerPolicy": policy("", builtin("Steady", 3))}, *THREE, own_decision(["c3"])
    )
    assert weights_of(result) == {"Balance": 1, "Steady": 3}
    assert result.scores == {"c1": 100, "c2": 100, "c3": 400}


def test_duplicate_builtin_later_entry_wins() -> None:
    result = schedule_spec(
        {
            "prioritizerPolicy": policy(
                "Exact", builtin("ResourceAllocatableMemory", 1), builtin("ResourceAllocatableMemory", 3)
            )
        },
        *MEMORY,
    )
    assert weights_of(result) == {"ResourceAllocatableMemory": 3}
    assert result.scores == {"c1": -300, "c2": 0, "c3": 300}


def test_duplicate_builtin_later_zero_switches_it_off() -> None:
    result = schedule_spec(
        {
            "prioritizerPolicy": policy(
                "Exact", builtin("ResourceAllocatableMemory", 2), builtin("ResourceAllocatableMemory", 0)
            )
        },
        *MEMORY,
    )
    assert result.prioritizers == ()


def test_unknown_builtin_overridden_to_zero_is_no_error() -> None:
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", builtin("Spread", 1), builtin("Spread", 0))}, *THREE
    )
    assert misconfigured(result) == OK_MISCONFIGURED
    assert result.decisions == ("c1", "c2", "c3")


def test_duplicate_addon_coordinates_are_all_summed() -> None:
    scores = [addon_score(c, "demo", {"s": v}) for c, v in (("c1", 10), ("c2", 30), ("c3", 20))]
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", addon("demo", "s", 1), addon("demo", "s", 2))}, *THREE, *scores
    )
    assert result.scores == {"c1": 30, "c2": 90, "c3": 60}
    assert [p.name for p in result.prioritizers] == ["AddOn/demo/s", "AddOn/demo/s"]


def test_builtin_with_an_addon_object_is_a_distinct_coordinate() -> None:
    extra = builtin("Balance", 2)
    extra["scoreCoordinate"]["addOn"] = {"resourceName": "r", "scoreName": "s"}
    result = schedule_spec(
        {"prioritizerPolicy": policy("Additive", extra)}, *THREE, foreign_decision("x", ["c1"])
    )
    # the default Balance 1 and this Balance 2 both run: 3 × Balance + Steady 0
    assert sorted((p.name, p.weight) for p in result.prioritizers) == [
        ("Balance", 1),
        ("Balance", 2),
        ("Steady", 1),
    ]
    assert result.scores == {"c1": -300, "c2": 300, "c3": 300}


def test_negative_and_out_of_crd_range_weights_are_used_as_is() -> None:
    inverted = schedule_spec(
        {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", -1))}, *MEMORY
    )
    assert inverted.scores == {"c1": 100, "c2": 0, "c3": -100}
    assert inverted.selected == ("c1", "c2", "c3")
    heavy = schedule_spec(
        {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 20))}, *MEMORY
    )
    assert heavy.scores == {"c1": -2000, "c2": 0, "c3": 2000}


# -- misconfigurations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy_", "message"),
    [
        (policy("Foo"), ":incorrect prioritizer policy mode: Foo"),
        (policy("exact"), ":incorrect prioritizer policy mode: exact"),
        (policy("Foo", builtin("Balance", 0)), ":incorrect prioritizer policy mode: Foo"),
        (policy("Exact", {"weight": 1}), ":scoreCoordinate field is required"),
        (policy("Exact", {"weight": 0}), ":scoreCoordinate field is required"),  # whatever the weight
        (policy("Exact", {}), ":scoreCoordinate field is required"),
        (policy("Exact", builtin("Spread", 1)), ":incorrect builtin prioritizer: Spread"),
        (policy("Exact", builtin("balance", 1)), ":incorrect builtin prioritizer: balance"),
        (policy("Exact", builtin("", 1)), ":incorrect builtin prioritizer: "),
        (policy("Additive", builtin("Spread", -2)), ":incorrect builtin prioritizer: Spread"),
        (policy("Exact", builtin("Balance", 1, type_="AddOn")), ":addOn should not be empty"),
        (policy("Exact", builtin("Balance", 1, type_="")), ":addOn should not be empty"),
        (
            policy("Exact", {"scoreCoordinate": {"builtIn": "Balance"}, "weight": 1}),
            ":addOn should not be empty",
        ),
        # the missing coordinate is found while overlaying, before any instantiation problem
        (policy("Exact", builtin("Spread", 1), {"weight": 1}), ":scoreCoordinate field is required"),
    ],
)
def test_misconfigured_policies(policy_: dict[str, object], message: str) -> None:
    result = schedule_spec({"prioritizerPolicy": policy_}, *THREE)
    assert misconfigured(result) == ("True", "Misconfigured", message)
    assert result.decisions == ()
    assert result.scores == {}
    assert satisfied(result) == NO_MATCH
    assert [p.clusters for p in result.pages] == [()]


@pytest.mark.parametrize(
    "config",
    [
        builtin("Spread", 0),
        builtin("Spread"),
        builtin("Balance", 0, type_="AddOn"),
        {"scoreCoordinate": {"type": "AddOn"}},
    ],
)
def test_zero_weight_coordinates_are_never_instantiated_so_never_an_error(config: dict[str, object]) -> None:
    result = schedule_spec({"prioritizerPolicy": policy("Exact", config)}, *THREE)
    assert misconfigured(result) == OK_MISCONFIGURED
    assert result.decisions == ("c1", "c2", "c3")


def test_addon_coordinate_with_an_empty_type_still_runs_as_addon() -> None:
    config = addon("demo", "s", 1)
    config["scoreCoordinate"]["type"] = ""
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", config)}, *THREE, addon_score("c2", "demo", {"s": 50})
    )
    assert prioritizer_names(result) == ["AddOn/demo/s"]
    assert prioritizer_scores(result, "AddOn/demo/s") == {"c1": 0, "c2": 50, "c3": 0}


def test_weight_validation_does_not_short_circuit_without_bindings() -> None:
    result = schedule_spec({"prioritizerPolicy": policy("Exact", builtin("Spread", 1))}, cluster_set("set1"))
    assert misconfigured(result) == ("True", "Misconfigured", ":incorrect builtin prioritizer: Spread")
    assert satisfied(result) == NO_BINDINGS


def test_weight_validation_does_not_short_circuit_when_filters_leave_nothing() -> None:
    result = schedule_spec(
        {"prioritizerPolicy": policy("Foo"), "predicates": [label_predicate({"no": "match"})]}, *THREE
    )
    assert misconfigured(result) == ("True", "Misconfigured", ":incorrect prioritizer policy mode: Foo")
