"""What each rule proposes, parent chaining, create flags and dot replacement."""

from __future__ import annotations

from typing import Any

import pytest

from tests.queueing.helpers import app, config, partition, placer, queue_of


def one_rule(rule: dict[str, Any], queues: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return config(partition(queues or [], [rule]))


# -- provided ----------------------------------------------------------------------------------


def test_provided_unqualified_queue_goes_below_root() -> None:
    assert queue_of(one_rule({"name": "provided", "create": True}), app(queue="batch")) == "root.batch"


def test_provided_qualified_queue_is_taken_as_is_and_lower_cased_when_created() -> None:
    assert queue_of(one_rule({"name": "provided", "create": True}), app(queue="root.A.B")) == "root.a.b"


def test_provided_dots_in_an_unqualified_queue_become_one_level() -> None:
    assert queue_of(one_rule({"name": "provided", "create": True}), app(queue="a.b")) == "root.a_dot_b"


def test_provided_upper_case_root_prefix_is_not_qualified() -> None:
    # quirk 5: `ROOT.dev` becomes the one-level name ROOT_dot_dev, stored lower-case
    assert (
        queue_of(one_rule({"name": "provided", "create": True}), app(queue="ROOT.dev")) == "root.root_dot_dev"
    )


def test_provided_empty_queue_is_no_match() -> None:
    outcome = placer(one_rule({"name": "provided", "create": True})).place(app(queue=""))
    assert outcome.reason == "no-rule-matched"


def test_provided_qualified_queue_skips_the_parent_rule() -> None:
    rule = {"name": "provided", "create": True, "parent": {"name": "user", "create": True}}
    assert queue_of(one_rule(rule), app("dev", queue="root.dev_queue")) == "root.dev_queue"
    assert queue_of(one_rule(rule), app("dev", queue="my_queue")) == "root.dev.my_queue"


@pytest.mark.parametrize("queue", ["root.a..b", "root.bad!", "root." + "x" * 65, "root."])
def test_provided_invalid_qualified_queue_is_a_rule_error(queue: str) -> None:
    assert (
        placer(one_rule({"name": "provided", "create": True})).place(app(queue=queue)).reason == "rule-error"
    )


def test_provided_name_too_long_after_dot_replacement_is_a_rule_error() -> None:
    # 61 characters as requested, 65 once the dot becomes `_dot_`: longer than a queue name may be
    queue = "a" * 31 + "." + "b" * 29
    assert (
        placer(one_rule({"name": "provided", "create": True})).place(app(queue=queue)).reason == "rule-error"
    )


def test_provided_without_create_needs_an_existing_queue() -> None:
    cfg = one_rule({"name": "provided"}, [{"name": "exists"}])
    assert queue_of(cfg, app(queue="exists")) == "root.exists"
    assert queue_of(cfg, app(queue="EXISTS")) == "root.exists"  # lookups are lower-cased
    assert queue_of(cfg, app(queue="missing")) is None


# -- user --------------------------------------------------------------------------------------


def test_user_rule_replaces_dots_and_lower_cases() -> None:
    rule = {"name": "user", "create": True}
    assert queue_of(one_rule(rule), app("First.Last")) == "root.first_dot_last"


@pytest.mark.parametrize("user", ["a" * 65, "user!x", "a" * 61 + ".b"])
def test_user_rule_invalid_queue_name_is_a_rule_error(user: str) -> None:
    # user names here are valid *user* names only when no groups are supplied (a user without groups skips the name check)
    outcome = placer(one_rule({"name": "user", "create": True})).place(app(user, groups=[]))
    assert outcome.reason == "rule-error"


def test_user_rule_oidc_style_names_are_valid_queue_names() -> None:
    assert queue_of(one_rule({"name": "user", "create": True}), app("alice@corp")) == "root.alice@corp"
    assert queue_of(one_rule({"name": "user", "create": True}), app("system:sa:x")) == "root.system:sa:x"


def test_user_queue_for_dotted_user_is_configured_with_dot_replaced() -> None:
    cfg = one_rule({"name": "user"}, [{"name": "finance_dot_test"}])
    assert queue_of(cfg, app("finance.test")) == "root.finance_dot_test"


# -- fixed -------------------------------------------------------------------------------------


def test_fixed_rule_dots_in_the_value_are_levels() -> None:
    cfg = one_rule(
        {"name": "fixed", "value": "testparent.testchild", "create": True},
        [{"name": "testparent", "parent": True}],
    )
    assert queue_of(cfg, app()) == "root.testparent.testchild"


def test_fixed_value_is_lower_cased_at_load() -> None:
    assert queue_of(one_rule({"name": "fixed", "value": "Shared", "create": True}), app()) == "root.shared"


def test_fixed_rule_ignores_the_requested_queue() -> None:
    cfg = one_rule({"name": "fixed", "value": "last_resort"}, [{"name": "last_resort"}])
    assert queue_of(cfg, app(queue="my_special_queue")) == "root.last_resort"


def test_fixed_unqualified_value_under_a_parent_rule() -> None:
    rule = {"name": "fixed", "value": "jobs", "create": True, "parent": {"name": "user", "create": True}}
    assert queue_of(one_rule(rule), app("ann")) == "root.ann.jobs"


# -- tag ---------------------------------------------------------------------------------------


def test_tag_lookup_ignores_case_of_the_key() -> None:
    cfg = one_rule({"name": "tag", "value": "Namespace", "create": True})
    assert queue_of(cfg, app(tags={"NAMESPACE": "Team-A"})) == "root.team-a"


def test_tag_keys_equal_ignoring_case_take_the_smallest_key() -> None:
    cfg = one_rule({"name": "tag", "value": "namespace", "create": True})
    assert queue_of(cfg, app(tags={"namespace": "lower", "Namespace": "upper"})) == "root.upper"
    assert queue_of(cfg, app(tags={"Namespace": "upper", "namespace": "lower"})) == "root.upper"


def test_tag_missing_or_empty_is_no_match() -> None:
    cfg = one_rule({"name": "tag", "value": "namespace", "create": True})
    assert queue_of(cfg, app(tags={})) is None
    assert queue_of(cfg, app(tags={"namespace": ""})) is None


def test_tag_qualified_value_is_levels_and_unqualified_dots_are_replaced() -> None:
    cfg = one_rule({"name": "tag", "value": "q", "create": True})
    assert queue_of(cfg, app(tags={"q": "root.x.y"})) == "root.x.y"
    assert queue_of(cfg, app(tags={"q": "x.y"})) == "root.x_dot_y"


def test_tag_invalid_value_is_a_rule_error() -> None:
    cfg = one_rule({"name": "tag", "value": "q", "create": True})
    assert placer(cfg).place(app(tags={"q": "bad name"})).reason == "rule-error"


# -- parents -----------------------------------------------------------------------------------


def test_innermost_parent_decides_the_level_below_root() -> None:
    rule = {
        "name": "user",
        "create": True,
        "parent": {
            "name": "tag",
            "value": "ns",
            "create": True,
            "parent": {"name": "fixed", "value": "root.tenants", "create": True},
        },
    }
    assert queue_of(one_rule(rule), app("u1", tags={"ns": "blue"})) == "root.tenants.blue.u1"


def test_parent_no_match_makes_the_child_no_match() -> None:
    rule = {"name": "user", "create": True, "parent": {"name": "tag", "value": "ns", "create": True}}
    assert queue_of(one_rule(rule), app("u1")) is None


def test_parent_with_create_false_on_a_missing_queue_is_no_match() -> None:
    rule = {"name": "user", "create": True, "parent": {"name": "tag", "value": "ns"}}
    cfg = one_rule(rule, [{"name": "blue", "parent": True}])
    assert queue_of(cfg, app("u1", tags={"ns": "blue"})) == "root.blue.u1"
    assert queue_of(cfg, app("u1", tags={"ns": "red"})) is None


def test_parent_that_is_an_existing_leaf_is_a_rule_error_not_a_no_match() -> None:
    # YuniKorn's TestManagerPlaceApp_Error: user -> user -> fixed testparent
    queues = [{"name": "testparent", "parent": True, "submitacl": "*", "queues": [{"name": "testchild"}]}]
    rule = {"name": "user", "parent": {"name": "user", "parent": {"name": "fixed", "value": "testparent"}}}
    rules = [rule, {"name": "provided", "create": True}]
    outcome = placer(config(partition(queues, rules))).place(app("testchild", queue="root.other"))
    assert outcome.reason == "rule-error"
    assert "leaf" in outcome.detail


def test_parent_rule_error_propagates() -> None:
    rule = {"name": "user", "create": True, "parent": {"name": "tag", "value": "ns", "create": True}}
    assert placer(one_rule(rule)).place(app(tags={"ns": "bad name"})).reason == "rule-error"


def test_parent_results_are_not_acl_checked() -> None:
    queues = [
        {
            "name": "closed",
            "parent": True,
            "submitacl": " ",
            "queues": [{"name": "alice", "submitacl": "alice"}],
        }
    ]
    rule = {"name": "user", "parent": {"name": "fixed", "value": "closed"}}
    p = placer(config(partition(queues, [rule], root_acl=None)))
    assert p.place(app("alice")).queue == "root.closed.alice"


# -- recovery ----------------------------------------------------------------------------------


def test_recovery_rule_only_answers_forced_applications() -> None:
    cfg = one_rule(
        {"name": "fixed", "value": "nowhere", "create": True, "filter": {"users": ["nobody-else"]}}
    )
    assert queue_of(cfg, app()) is None
    forced = app(tags={"application.create.force": "true"})
    outcome = placer(cfg).place(forced)
    assert (outcome.queue, outcome.rule, outcome.created) == ("root.@recovery@", "recovery", True)
