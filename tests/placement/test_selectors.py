"""Label and claim selectors: operators, absent keys, error texts."""

from __future__ import annotations

import pytest

from fleetplace.shared.api.ocm import LabelSelector
from fleetplace.shared.placement.selectors import SelectorError, compile_label_selector

from .builders import (
    bound_set,
    claim_predicate,
    cluster,
    expr,
    label_predicate,
    misconfigured,
    schedule_spec,
)

NAME_REGEX_TEXT = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an"
    " alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is"
    " '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_REGEX_TEXT = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and"
    " must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345',"
    " regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def selector(raw: dict[str, object]) -> LabelSelector:
    return LabelSelector.model_validate(raw)


def matches(raw: dict[str, object], labels: dict[str, str]) -> bool:
    return compile_label_selector(selector(raw)).matches(labels)


def error_of(raw: dict[str, object]) -> str:
    with pytest.raises(SelectorError) as e:
        compile_label_selector(selector(raw))
    return str(e.value)


# -- matching -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        (expr("env", "In", "prod", "dev"), {"env": "prod"}, True),
        (expr("env", "In", "prod"), {"env": "test"}, False),
        (expr("env", "In", "prod"), {}, False),
        (expr("env", "NotIn", "prod"), {"env": "dev"}, True),
        (expr("env", "NotIn", "prod"), {"env": "prod"}, False),
        (expr("env", "NotIn", "prod"), {}, True),  # absent key matches NotIn
        (expr("env", "Exists"), {"env": ""}, True),
        (expr("env", "Exists"), {}, False),
        (expr("env", "DoesNotExist"), {}, True),  # absent key matches DoesNotExist
        (expr("env", "DoesNotExist"), {"env": "x"}, False),
        (expr("env", "In", ""), {"env": ""}, True),  # the empty value is a valid label value
    ],
)
def test_operators(requirement: dict[str, object], labels: dict[str, str], expected: bool) -> None:
    assert matches({"matchExpressions": [requirement]}, labels) is expected


def test_match_labels_and_expressions_are_anded() -> None:
    raw = {"matchLabels": {"cloud": "Amazon"}, "matchExpressions": [expr("env", "NotIn", "prod")]}
    assert matches(raw, {"cloud": "Amazon"})
    assert not matches(raw, {"cloud": "Amazon", "env": "prod"})
    assert not matches(raw, {"cloud": "Azure"})


def test_match_labels_require_presence_and_equality() -> None:
    assert matches({"matchLabels": {"env": ""}}, {"env": ""})
    assert not matches({"matchLabels": {"env": ""}}, {})


def test_empty_selector_matches_everything() -> None:
    assert matches({}, {})
    assert matches({"matchLabels": {}, "matchExpressions": []}, {"a": "b"})


def test_null_selector_of_a_predicate_matches_everything_but_a_sets_means_nothing() -> None:
    assert compile_label_selector(None).matches({})
    assert not compile_label_selector(None, null_means_nothing=True).matches({"a": "b"})


# -- error texts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("operator", ["Gt", "in", "Equals", ""])
def test_unknown_operator_is_a_conversion_error(operator: str) -> None:
    assert error_of({"matchExpressions": [expr("env", operator, "1")]}) == (
        f'"{operator}" is not a valid label selector operator'
    )


@pytest.mark.parametrize("values", [None, []])
@pytest.mark.parametrize("operator", ["In", "NotIn"])
def test_in_and_notin_need_values(operator: str, values: list[str] | None) -> None:
    requirement: dict[str, object] = {"key": "env", "operator": operator}
    if values is not None:
        requirement["values"] = values
    assert error_of({"matchExpressions": [requirement]}) == (
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    )


@pytest.mark.parametrize("operator", ["Exists", "DoesNotExist"])
def test_exists_and_does_not_exist_take_no_values(operator: str) -> None:
    assert error_of({"matchExpressions": [expr("env", operator, "x")]}) == (
        'values: Invalid value: ["x"]: values set must be empty for exists and does not exist'
    )
    assert error_of({"matchExpressions": [expr("env", operator, "x", "y")]}) == (
        'values: Invalid value: ["x","y"]: values set must be empty for exists and does not exist'
    )


def test_exists_with_an_empty_values_list_is_fine() -> None:
    assert matches({"matchExpressions": [{"key": "env", "operator": "Exists", "values": []}]}, {"env": "a"})


def test_invalid_key_text() -> None:
    assert error_of({"matchExpressions": [expr("bad key", "Exists")]}) == (
        f'key: Invalid value: "bad key": name part {NAME_REGEX_TEXT}'
    )


def test_several_problems_of_one_key_are_one_error_joined_by_semicolons() -> None:
    # "/": empty prefix, empty name, and the empty name also fails the name regex
    assert error_of({"matchExpressions": [expr("/", "Exists")]}) == (
        'key: Invalid value: "/": prefix part must be non-empty; name part must be non-empty;'
        f" name part {NAME_REGEX_TEXT}"
    )


def test_too_long_key_name() -> None:
    key = "a" * 64
    assert error_of({"matchExpressions": [expr(key, "Exists")]}) == (
        f'key: Invalid value: "{key}": name part must be no more than 63 characters'
    )


def test_invalid_value_text_names_the_value_index_and_key() -> None:
    assert error_of({"matchExpressions": [expr("env", "In", "ok", "a b")]}) == (
        f'values[1][env]: Invalid value: "a b": {VALUE_REGEX_TEXT}'
    )


def test_invalid_match_labels_value() -> None:
    assert (
        error_of({"matchLabels": {"env": "-x"}}) == f'values[0][env]: Invalid value: "-x": {VALUE_REGEX_TEXT}'
    )


def test_too_long_and_malformed_value_is_one_error_joined_by_semicolons() -> None:
    value = "-" + "a" * 63
    assert error_of({"matchExpressions": [expr("env", "In", value)]}) == (
        f'values[0][env]: Invalid value: "{value}": must be no more than 63 characters; {VALUE_REGEX_TEXT}'
    )


@pytest.mark.parametrize("value", ["abc\n", "a\nb", "\n"])
def test_a_newline_anywhere_makes_a_value_invalid(value: str) -> None:
    assert error_of({"matchExpressions": [expr("env", "In", value)]}).startswith(
        "values[0][env]: Invalid value: "
    )


def test_several_problems_of_one_requirement_are_bracketed() -> None:
    assert error_of({"matchExpressions": [{"key": "bad key", "operator": "In"}]}) == (
        f'[key: Invalid value: "bad key": name part {NAME_REGEX_TEXT},'
        " values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty]"
    )


def test_first_failing_requirement_wins_in_expression_order() -> None:
    raw = {"matchExpressions": [expr("env", "Gt", "1"), {"key": "zone", "operator": "In"}]}
    assert error_of(raw) == '"Gt" is not a valid label selector operator'


def test_match_labels_are_converted_before_expressions() -> None:
    raw = {"matchLabels": {"env": "a b"}, "matchExpressions": [expr("zone", "Gt", "1")]}
    assert error_of(raw).startswith('values[0][env]: Invalid value: "a b": ')


# -- through the Predicate filter -----------------------------------------------------------------


def test_label_selector_error_is_a_predicate_misconfiguration() -> None:
    result = schedule_spec(
        {"predicates": [label_predicate(None, expr("env", "Gt", "1"))]}, *bound_set(cluster("c1"))
    )
    assert misconfigured(result) == (
        "True",
        "Misconfigured",
        'Predicate:"Gt" is not a valid label selector operator',
    )
    assert result.selected == ()


def test_claim_selector_matches_against_claims_not_labels() -> None:
    result = schedule_spec(
        {"predicates": [claim_predicate(expr("platform", "In", "AWS"))]},
        *bound_set(
            cluster("c1", claims={"platform": "AWS"}),
            cluster("c2", labels={"platform": "AWS"}),
            cluster("c3", claims={"platform": "GCP"}),
        ),
    )
    assert result.decisions == ("c1",)


def test_claim_selector_not_in_and_does_not_exist_match_absent_claims() -> None:
    objects = bound_set(
        cluster("c1", claims={"region": "eu"}), cluster("c2"), cluster("c3", claims={"x": "y"})
    )
    not_in = schedule_spec({"predicates": [claim_predicate(expr("region", "NotIn", "eu"))]}, *objects)
    assert not_in.decisions == ("c2", "c3")
    absent = schedule_spec({"predicates": [claim_predicate(expr("region", "DoesNotExist"))]}, *objects)
    assert absent.decisions == ("c2", "c3")


def test_later_duplicate_claims_overwrite_earlier_ones() -> None:
    objects = bound_set(cluster("c1", claims=[("region", "us"), ("region", "eu")]))
    eu = schedule_spec({"predicates": [claim_predicate(expr("region", "In", "eu"))]}, *objects)
    us = schedule_spec({"predicates": [claim_predicate(expr("region", "In", "us"))]}, *objects)
    assert eu.decisions == ("c1",)
    assert us.decisions == ()


def test_claim_values_that_are_not_label_values_cannot_be_referenced() -> None:
    result = schedule_spec(
        {"predicates": [claim_predicate(expr("version", "In", "v1.2+build"))]},
        *bound_set(cluster("c1", claims={"version": "v1.2+build"})),
    )
    status, reason, message = misconfigured(result)
    assert (status, reason) == ("True", "Misconfigured")
    assert message.startswith('Predicate:values[0][version]: Invalid value: "v1.2+build": ')
    assert result.selected == ()


def test_claim_selector_error_is_a_predicate_misconfiguration() -> None:
    result = schedule_spec(
        {"predicates": [claim_predicate({"key": "platform", "operator": "In"})]}, *bound_set(cluster("c1"))
    )
    assert misconfigured(result)[2] == (
        "Predicate:values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    )
