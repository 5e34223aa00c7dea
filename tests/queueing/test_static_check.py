"""YuniKorn's load-time "longest fixed path" check, quirks included."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.queueing import ConfigError, parse_config
from tests.queueing.helpers import app, config, partition, placer, problem_paths, problems_of

# The queue tree of YuniKorn's own TestCheckPlacementRules.
TREE: list[dict[str, Any]] = [
    {"name": "users", "parent": True},
    {"name": "devs", "parent": True, "queues": [{"name": "yunikorn", "parent": True}]},
    {"name": "default", "parent": False},
    {"name": "admins", "parent": True},
]
RULE_PATH = "partitions[0].placementrules[0]"


def loads(rules: list[dict[str, Any]], tree: list[dict[str, Any]] | None = None) -> bool:
    """Whether the config loads; refused means a ConfigError, and any other exception is a crash
    that must fail the test, not count as a refusal."""
    try:
        parse_config(config(partition(TREE if tree is None else tree, rules)))
    except ConfigError:
        return False
    return True


def test_yunikorn_default_chains_load() -> None:
    rules = [
        {
            "name": "user",
            "parent": {
                "name": "tag",
                "value": "namespace",
                "parent": {"name": "fixed", "value": "root.users"},
            },
        },
        {"name": "fixed", "value": "dev", "create": True, "parent": {"name": "fixed", "value": "admins"}},
    ]
    assert loads(rules)


def test_fixed_rule_naming_a_parent_queue_is_not_a_leaf() -> None:
    (problem,) = problems_of(config(partition(TREE, [{"name": "fixed", "value": "root.users"}])))
    assert problem.path == RULE_PATH
    assert "not a leaf" in problem.reason


def test_non_existing_queue_with_create_false_is_an_error() -> None:
    rule = {"name": "fixed", "value": "dev", "create": False, "parent": {"name": "fixed", "value": "admins"}}
    (problem,) = problems_of(config(partition(TREE, [rule])))
    assert "create is 'false'" in problem.reason


def test_path_below_a_configured_leaf_cannot_be_created_even_with_create() -> None:
    for create in (False, True):
        (problem,) = problems_of(
            config(partition(TREE, [{"name": "fixed", "value": "root.default.leaf", "create": create}]))
        )
        assert "is a leaf" in problem.reason


def test_second_fully_qualified_fixed_in_a_chain_is_illegal() -> None:
    rule = {
        "name": "fixed",
        "value": "root.default.leaf",
        "parent": {"name": "fixed", "value": "root.default"},
    }
    problems = problems_of(config(partition(TREE, [rule])))
    # the construction check (qualified value with a parent) comes first; the chain is not followed
    assert [p.path for p in problems] == [f"{RULE_PATH}.value"]


def test_dynamic_chain_needs_an_explicit_parent_flag_children_do_not_count() -> None:
    tree = [{"name": "testparent", "queues": [{"name": "child"}]}]
    rule = {"name": "user", "create": True, "parent": {"name": "fixed", "value": "testparent"}}
    (problem,) = problems_of(config(partition(tree, [rule])))
    assert "not a parent" in problem.reason
    tree[0]["parent"] = True
    assert loads([rule], tree)


def test_static_chain_onto_a_parent_by_children_loads_and_never_matches() -> None:
    tree = [{"name": "testparent", "queues": [{"name": "child"}]}, {"name": "default"}]
    rules = [{"name": "fixed", "value": "root.testparent"}]
    outcome = placer(config(partition(tree, rules))).place(app())
    assert (outcome.queue, outcome.rule) == ("root.default", "default-queue")


def test_top_level_create_is_the_one_used_not_the_parents() -> None:
    # top create false over a creating parent on a missing queue: config error
    rule = {
        "name": "tag",
        "value": "ns",
        "create": False,
        "parent": {"name": "fixed", "value": "root.namespaces", "create": True},
    }
    assert problem_paths(config(partition([], [rule]))) == [RULE_PATH]
    # the reverse loads, and then never matches until root.namespaces exists
    rule = {
        "name": "tag",
        "value": "ns",
        "create": True,
        "parent": {"name": "fixed", "value": "root.namespaces", "create": False},
    }
    assert placer(config(partition([], [rule]))).place(app(tags={"ns": "a"})).rejected


def test_rule_name_in_capitals_escapes_the_check_but_still_works() -> None:
    tree = [{"name": "users", "parent": True}]
    assert not loads([{"name": "fixed", "value": "root.users"}], tree)
    outcome = placer(config(partition(tree, [{"name": "FIXED", "value": "root.users"}]))).place(app())
    assert outcome.rejected  # it proposes a parent queue at run time


def test_configured_names_with_capitals_never_match_the_lower_cased_path() -> None:
    tree = [{"name": "Prod"}]
    assert not loads([{"name": "fixed", "value": "prod"}], tree)
    assert loads([{"name": "fixed", "value": "prod", "create": True}], tree)


def test_upper_case_root_prefix_is_checked_as_a_level_below_root() -> None:
    tree = [{"name": "prod"}]
    assert not loads([{"name": "fixed", "value": "ROOT.prod"}], tree)
    # with create it loads, and at run time the lower-cased value is qualified: root.prod
    outcome = placer(
        config(partition(tree, [{"name": "fixed", "value": "ROOT.prod", "create": True}]))
    ).place(app())
    assert (outcome.queue, outcome.created) == ("root.prod", False)


@pytest.mark.parametrize(
    ("rules", "ok"),
    [
        ([{"name": "fixed", "value": "root"}], False),  # the root is flagged parent: not a leaf
        ([{"name": "fixed", "value": "root.x", "create": True}], True),
        ([{"name": "user", "create": True, "parent": {"name": "fixed", "value": "root"}}], True),
    ],
)
def test_root_counts_as_flagged_parent(rules: list[dict[str, Any]], ok: bool) -> None:
    assert loads(rules, []) is ok


def test_inserted_root_counts_as_flagged_parent() -> None:
    cfg = {
        "partitions": [
            {
                "queues": [{"name": "a"}, {"name": "b"}],
                "placementrules": [{"name": "fixed", "value": "root.c", "create": True}],
            }
        ]
    }
    parse_config(cfg)


def test_chain_that_does_not_start_with_fixed_is_not_checked() -> None:
    # user -> fixed: the fixed part is never checked, although root.users is a parent
    rule = {
        "name": "fixed",
        "value": "x",
        "parent": {"name": "user", "parent": {"name": "fixed", "value": "nowhere"}},
    }
    assert not loads([rule])  # outermost is fixed: checked (and nowhere does not exist)
    rule = {"name": "fixed", "value": "x", "parent": {"name": "user"}}
    assert loads([rule])


def test_chain_fixed_root_then_user_passes_the_check_but_yields_root_root_user() -> None:
    rule = {"name": "user", "create": True, "parent": {"name": "fixed", "value": "root", "create": True}}
    outcome = placer(config(partition([], [rule]))).place(app("bob"))
    assert outcome.queue == "root.root.bob"


def test_level_missing_below_an_explicit_parent_needs_create() -> None:
    tree = [{"name": "team", "parent": True}]
    assert not loads([{"name": "fixed", "value": "team.x"}], tree)
    assert loads([{"name": "fixed", "value": "team.x", "create": True}], tree)
