"""Checking a queue config as YuniKorn does on load: partitions, queues, ACL syntax and rules."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.queueing import parse_config
from tests.queueing.helpers import app, config, partition, placer, problem_paths, problems_of

# -- partitions and the root -------------------------------------------------------------------


@pytest.mark.parametrize("names", [("default", "DEFAULT"), ("", "Default"), ("gpu", "GPU")])
def test_partition_names_equal_ignoring_case_are_a_config_error(names: tuple[str, str]) -> None:
    cfg = config(partition(name=names[0]), partition(name=names[1]))
    assert problem_paths(cfg) == ["partitions[1].name"]


def test_missing_queues_is_a_config_error() -> None:
    assert problem_paths({"partitions": [{"name": "default"}]}) == ["partitions[0].queues"]


def test_empty_queue_list_gets_an_inserted_root_without_acl() -> None:
    cfg = {"partitions": [{"queues": [], "placementrules": [{"name": "user", "create": True}]}]}
    # the inserted root admits nobody, so the user queue cannot be created
    assert placer(cfg).place(app("bob")).reason == "no-rule-matched"


def test_top_level_queues_get_a_root_inserted_above_them() -> None:
    cfg = {"partitions": [{"queues": [{"name": "production", "submitacl": "*"}, {"name": "dev"}]}]}
    queues = placer(cfg).queues()
    assert set(queues) == {"root", "root.production", "root.dev"}


def test_two_top_level_queues_one_named_root_nest_under_an_inserted_root() -> None:
    cfg = {"partitions": [{"queues": [{"name": "root"}, {"name": "other"}]}]}
    assert set(placer(cfg).queues()) == {"root", "root.root", "root.other"}


@pytest.mark.parametrize("name", ["ROOT", "Root"])
def test_root_must_be_named_exactly_root(name: str) -> None:
    cfg = {"partitions": [{"queues": [{"name": name}]}]}
    assert problem_paths(cfg) == ["partitions[0].queues[0].name"]


@pytest.mark.parametrize("resources", [{"guaranteed": {"memory": "1"}}, {"max": {}}])
def test_root_with_resources_is_a_config_error(resources: dict[str, Any]) -> None:
    cfg = {"partitions": [{"queues": [{"name": "root", "resources": resources}]}]}
    assert problem_paths(cfg) == ["partitions[0].queues[0].resources"]


def test_root_with_an_empty_resources_mapping_is_fine() -> None:
    parse_config({"partitions": [{"queues": [{"name": "root", "resources": {}}]}]})


def test_listed_root_is_a_parent_even_without_children() -> None:
    assert placer(config(partition())).queues()["root"].leaf is False


# -- queue names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a", "A-b_c", "user@example_dot_com", "ns:sa", "#1", "a/b", "x" * 64, "0777", "@recovery@"]
)
def test_valid_queue_names(name: str) -> None:
    parse_config(config(partition([{"name": name}])))


@pytest.mark.parametrize("name", ["", "a.b", "x" * 65, "a b", "a!", "ü", "a$"])
def test_invalid_queue_names_are_config_errors(name: str) -> None:
    assert problem_paths(config(partition([{"name": name}]))) == ["partitions[0].queues[0].queues[0].name"]


def test_sibling_names_equal_ignoring_case_are_a_config_error() -> None:
    cfg = config(partition([{"name": "Team"}, {"name": "team"}]))
    assert problem_paths(cfg) == ["partitions[0].queues[0].queues[1].name"]


def test_same_name_under_different_parents_is_fine() -> None:
    parse_config(
        config(
            partition([{"name": "a", "queues": [{"name": "x"}]}, {"name": "b", "queues": [{"name": "x"}]}])
        )
    )


def test_configured_names_are_stored_lower_case() -> None:
    queues = placer(config(partition([{"name": "Finance", "queues": [{"name": "Payroll"}]}]))).queues()
    assert "root.finance.payroll" in queues


# -- ACL syntax --------------------------------------------------------------------------------


@pytest.mark.parametrize("acl", ["", " ", "*", "* ", " *", "alice,bob", "alice dev,ops", " dev", "a\tb"])
def test_acl_strings_that_load(acl: str) -> None:
    parse_config(config(partition([{"name": "q", "submitacl": acl, "adminacl": acl}])))


@pytest.mark.parametrize("acl", ["a b c", "  ", " a b", " * ", "  *", "a b ", "a\tb\tc"])
def test_acl_strings_with_too_many_parts_are_config_errors(acl: str) -> None:
    cfg = config(partition([{"name": "q", "submitacl": acl}]))
    assert problem_paths(cfg) == ["partitions[0].queues[0].queues[0].submitacl"]


def test_root_acl_is_checked_too() -> None:
    assert problem_paths(config(partition(root_acl=" * "))) == ["partitions[0].queues[0].submitacl"]


# -- rule syntax -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["1234", "#fixed", "@fixed", "", "fix ed", "fixed!"])
def test_rule_names_that_are_not_identifiers_are_config_errors(name: str) -> None:
    assert problem_paths(config(partition(rules=[{"name": name, "value": "x"}]))) == [
        "partitions[0].placementrules[0].name"
    ]


def test_invalid_rule_name_deep_in_a_parent_chain_names_the_nested_path() -> None:
    rule = {
        "name": "fixed",
        "value": "leaf",
        "parent": {"name": "fixed", "value": "mid", "parent": {"name": "@fixed", "value": "top"}},
    }
    assert problem_paths(config(partition(rules=[rule]))) == [
        "partitions[0].placementrules[0].parent.parent.name"
    ]


@pytest.mark.parametrize("kind", ["", "allow", "deny", "ALLOW", "Deny"])
def test_filter_types_that_load(kind: str) -> None:
    parse_config(config(partition(rules=[{"name": "user", "filter": {"type": kind}}])))


@pytest.mark.parametrize("kind", ["reject", "allowed", " allow"])
def test_unknown_filter_type_is_a_config_error(kind: str) -> None:
    cfg = config(partition(rules=[{"name": "user", "filter": {"type": kind}}]))
    assert problem_paths(cfg) == ["partitions[0].placementrules[0].filter.type"]


# From YuniKorn's TestUserName / TestServiceAccountUserName: a single entry is a valid name or a
# compiling regexp with a marker character.
@pytest.mark.parametrize(
    "entry",
    [
        "username-allowed_99",
        "username",
        "username*regexp",
        "user_name",
        "user@name@",
        "username$$",
        "user*",
        "system:serviceaccounts:username:username-77",
        "system:serviceaccounts:username.12:username-77-11",
        "(?i)admin",
    ],
)
def test_single_user_filter_entries_that_load(entry: str) -> None:
    parse_config(config(partition(rules=[{"name": "user", "filter": {"users": [entry]}}])))


@pytest.mark.parametrize(
    "entry",
    [
        "username rejected",
        "",
        "rejected!name",
        "!rejected",
        " rejected ",
        "99test",
        "user!1",
        "test[test",
        "system:serviceaccounts:username!:username",
        "system:\\:username",
        "(?=lookahead)x",
        "(a)\\1",
    ],
)
def test_single_user_filter_entries_that_are_config_errors(entry: str) -> None:
    cfg = config(partition(rules=[{"name": "user", "filter": {"users": [entry]}}]))
    assert problem_paths(cfg) == ["partitions[0].placementrules[0].filter.users[0]"]


@pytest.mark.parametrize(
    "entry", ["groupname-allowed_99", "group*regexp", "system:authenticated", "a.b", "dev*", "g$"]
)
def test_single_group_filter_entries_that_load(entry: str) -> None:
    parse_config(config(partition(rules=[{"name": "user", "filter": {"groups": [entry]}}])))


@pytest.mark.parametrize(
    "entry", ["groupname ", "group@name", "group name", " groupname ", "!groupname", "system:&:groupname"]
)
def test_single_group_filter_entries_that_are_config_errors(entry: str) -> None:
    cfg = config(partition(rules=[{"name": "user", "filter": {"groups": [entry]}}]))
    assert problem_paths(cfg) == ["partitions[0].placementrules[0].filter.groups[0]"]


def test_filter_lists_of_two_or_more_are_never_config_errors() -> None:
    rule = {"name": "user", "filter": {"users": ["99test", "test[test"], "groups": ["a b", "!"]}}
    parse_config(config(partition(rules=[rule])))


# -- rule construction -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["unknown", "recovery", "RECOVERY", "test", "_fixed"])
def test_unknown_or_reserved_rule_types_are_config_errors(name: str) -> None:
    assert problem_paths(config(partition(rules=[{"name": name}]))) == [
        "partitions[0].placementrules[0].name"
    ]


@pytest.mark.parametrize("name", ["USER", "Provided", "TAG"])
def test_rule_types_are_case_insensitive(name: str) -> None:
    rule: dict[str, Any] = {"name": name, "create": True, "value": "ns"}
    outcome = placer(config(partition(rules=[rule]))).place(app("bob", queue="q", tags={"ns": "t"}))
    assert outcome.rule == name.lower()


@pytest.mark.parametrize("value", ["", "root.a..b", "a.", ".a", "root.a b", "x" * 65])
def test_fixed_values_that_are_config_errors(value: str) -> None:
    cfg = config(partition(rules=[{"name": "fixed", "value": value, "create": True}]))
    assert problem_paths(cfg) == ["partitions[0].placementrules[0].value"]


@pytest.mark.parametrize("value", ["rootqueue", "ROOTX", "root_a"])
def test_fixed_value_starting_with_root_but_not_root_dot_is_refused(value: str) -> None:
    cfg = config(partition(rules=[{"name": "fixed", "value": value, "create": True}]))
    assert problem_paths(cfg) == ["partitions[0].placementrules[0].value"]


def test_qualified_fixed_value_with_a_parent_is_a_config_error() -> None:
    rule = {"name": "fixed", "value": "root.a", "create": True, "parent": {"name": "user"}}
    assert problem_paths(config(partition(rules=[rule]))) == ["partitions[0].placementrules[0].value"]


def test_tag_rule_without_value_is_a_config_error() -> None:
    rule = {"name": "user", "create": True, "parent": {"name": "tag"}}
    assert problem_paths(config(partition(rules=[rule]))) == ["partitions[0].placementrules[0].parent.value"]


def test_value_is_ignored_by_provided_and_user_rules() -> None:
    rules = [{"name": "provided", "value": "!!!"}, {"name": "user", "value": "root.x..y", "create": True}]
    assert placer(config(partition(rules=rules))).place(app("bob")).queue == "root.bob"


def test_no_rules_means_an_implicit_provided_rule_without_create() -> None:
    cfg = config(partition([{"name": "a"}], rules=[]))
    p = placer(cfg)
    assert p.place(app(queue="a", app_id="1")).queue == "root.a"
    assert p.place(app(queue="b", app_id="2")).reason == "no-rule-matched"


def test_problems_in_several_rules_and_parents_are_all_reported() -> None:
    rules = [
        {"name": "user", "parent": {"name": "tag", "filter": {"type": "x"}}},
        {"name": "fixed", "value": "rootq"},
    ]
    assert sorted(problem_paths(config(partition(rules=rules)))) == [
        "partitions[0].placementrules[0].parent.filter.type",
        "partitions[0].placementrules[0].parent.value",
        "partitions[0].placementrules[1].value",
    ]


def test_problem_reasons_say_why() -> None:
    (problem,) = problems_of(config(partition([{"name": "a.b"}])))
    assert "no dots" in problem.reason
