"""Building filters from a validated config and evaluating them."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.api.queues import FilterConfig
from fleetplace.shared.queueing._filter import build_filter
from tests.queueing.helpers import app, config, partition, placer


def admits(filter_config: dict[str, Any], user: str, groups: list[str]) -> bool:
    built = build_filter(FilterConfig.model_validate(filter_config))
    return True if built is None else built.admits(user, groups)


# (filter, bob in [ops] passes, carol in [dev] passes)
TABLE: list[tuple[dict[str, Any], bool, bool]] = [
    ({"type": "allow", "users": ["alice", "bob"]}, True, False),
    ({"type": "deny", "users": ["alice", "bob"]}, False, True),
    ({"type": "allow", "users": ["alice"], "groups": ["ops"]}, True, False),
    ({"type": "allow", "groups": ["dev*"]}, False, True),
    ({"type": "deny"}, False, False),
    ({"type": "", "users": ["bob"]}, True, False),
]


@pytest.mark.parametrize(("conf", "bob", "carol"), TABLE)
def test_spec_filter_table(conf: dict[str, Any], bob: bool, carol: bool) -> None:
    assert admits(conf, "bob", ["ops"]) is bob
    assert admits(conf, "carol", ["dev"]) is carol


def test_empty_filter_allows_everybody() -> None:
    assert admits({}, "anyone", [])
    assert admits({"type": "allow", "users": [], "groups": []}, "anyone", [])
    # nothing to check at all: the rule carries no filter
    assert build_filter(FilterConfig.model_validate({"type": "ALLOW"})) is None


def test_deny_in_capitals_validates_but_acts_as_allow() -> None:
    assert admits({"type": "DENY", "users": ["bob"]}, "bob", [])
    assert not admits({"type": "DENY", "users": ["bob"]}, "carol", [])


def test_regexps_are_unanchored_searches() -> None:
    assert admits({"groups": ["dev*"]}, "x", ["mydevs"])
    assert admits({"groups": ["dev*"]}, "x", ["de"])  # `dev*` is "de" then any number of v
    assert admits({"users": ["^adm"]}, "admin", [])
    assert not admits({"users": ["^adm"]}, "sysadm", [])


def test_single_entry_with_a_marker_is_a_regexp_even_if_it_is_a_valid_name() -> None:
    # `admin$` is a valid user name, but `$` makes it the expression "ends with admin"
    assert admits({"users": ["admin$"]}, "sysadmin", [])
    assert not admits({"users": ["admin$"]}, "admin$", [])


def test_regexps_are_case_sensitive_unless_they_say_so() -> None:
    assert not admits({"users": ["^user1$"]}, "USER1", [])
    assert admits({"users": ["(?i)user1"]}, "USER1", [])


def test_complex_expression_from_yunikorn_tests() -> None:
    conf = {"groups": ["^(group1.|other)$"]}
    assert admits(conf, "x", ["group12"])
    assert admits(conf, "x", ["other"])
    assert not admits(conf, "x", ["group101"])


def test_list_matching_is_exact_and_case_sensitive() -> None:
    assert admits({"users": ["user1", "USER2"]}, "USER2", [])
    assert not admits({"users": ["user1", "USER2"]}, "user2", [])


def test_lists_drop_regexps_and_invalid_names() -> None:
    conf = {"users": ["user1", "user*"], "groups": ["group1", "group[1-9]"]}
    assert admits(conf, "user1", [])
    assert not admits(conf, "user2", ["group2"])
    assert not admits(conf, "user*", [])


def test_a_filter_whose_entries_were_all_dropped_is_not_empty_it_never_matches() -> None:
    conf = {"type": "allow", "users": ["99bad", "!bad"]}
    assert not admits(conf, "99bad", [])
    assert admits({**conf, "type": "deny"}, "99bad", [])


def test_secondary_group_matches() -> None:
    assert admits({"groups": ["group1", "group2"]}, "x", ["nomatch", "group2"])
    assert not admits({"type": "deny", "groups": ["group[0-9]"]}, "x", ["nomatch", "group2"])


def test_rre2_syntax_that_python_re_lacks_works() -> None:
    assert admits({"users": ["^[[:alpha:]]+$"]}, "abc", [])
    assert not admits({"users": ["^[[:alpha:]]+$"]}, "ab1", [])


# -- filters inside rules: a filtered-out rule is no match --------------------------------------


def test_filtered_rule_is_no_match_and_the_next_rule_runs() -> None:
    rules = [
        {"name": "fixed", "value": "vip", "filter": {"type": "allow", "users": ["alice"]}},
        {"name": "user", "create": True},
    ]
    p = placer(config(partition([{"name": "vip"}], rules)))
    assert p.place(app("alice", app_id="1")).queue == "root.vip"
    assert p.place(app("bob", app_id="2")).queue == "root.bob"


def test_filter_on_a_parent_rule_makes_the_child_no_match() -> None:
    rules = [
        {
            "name": "user",
            "create": True,
            "parent": {
                "name": "fixed",
                "value": "root.teams",
                "create": True,
                "filter": {"users": ["alice"]},
            },
        },
        {"name": "fixed", "value": "fallback", "create": True},
    ]
    p = placer(config(partition([], rules)))
    assert p.place(app("alice", app_id="1")).queue == "root.teams.alice"
    assert p.place(app("bob", app_id="2")).queue == "root.fallback"


def test_filter_runs_before_name_validation() -> None:
    rules = [{"name": "provided", "create": True, "filter": {"users": ["alice"]}}]
    cfg = config(partition([{"name": "default"}], rules))
    # filtered: the invalid requested queue is never looked at
    assert placer(cfg).place(app("bob", queue="bad!name")).queue == "root.default"
    # not filtered: the invalid name is a rule error
    assert placer(cfg).place(app("alice", queue="bad!name")).reason == "rule-error"
