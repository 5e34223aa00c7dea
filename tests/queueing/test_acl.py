"""ACL parsing and evaluation, and the recursive submit check through placements."""

from __future__ import annotations

import pytest

from fleetplace.shared.queueing._acl import ACL, coarse_problem, parse_acl, strict_problem
from tests.queueing.helpers import app, config, partition, placer

# (ACL string, (user, groups) that must be admitted, ... that must not)
CASES: list[tuple[str, list[tuple[str, list[str]]], list[tuple[str, list[str]]]]] = [
    ("", [], [("alice", ["dev"])]),
    (" ", [], [("alice", ["dev"])]),
    ("*", [("anyone", [])], []),
    ("* ", [("anyone", [])], []),
    (" *", [("anyone", [])], []),
    ("alice,bob", [("alice", []), ("bob", [])], [("carol", ["alice"])]),
    ("alice,bob ", [("bob", [])], [("carol", [])]),
    ("alice dev,ops", [("alice", []), ("carol", ["x", "ops"])], [("carol", ["qa"])]),
    (" dev,ops", [("carol", ["dev"])], [("dev", [])]),
    ("* dev", [("carol", [])], []),
    ("alice *", [("carol", [])], []),
    ("#user1,user2", [("user2", [])], [("#user1", [])]),
    (" dotted.group", [], [("carol", ["dotted.group"])]),
    ("system:serviceaccount:ns:sa", [], [("system:serviceaccount:ns:sa", [])]),
    ("alice,*", [("alice", [])], [("bob", [])]),
    ("Alice", [("Alice", [])], [("alice", [])]),
    ("alice,alice,", [("alice", [])], [("", [])]),
    ("u$ g_1", [("u$", []), ("x", ["g_1"])], [("u", [])]),
]


@pytest.mark.parametrize(("text", "admitted", "refused"), CASES)
def test_acl_table(
    text: str, admitted: list[tuple[str, list[str]]], refused: list[tuple[str, list[str]]]
) -> None:
    assert coarse_problem(text) is None and strict_problem(text) is None
    acl = parse_acl(text)
    for user, groups in admitted:
        assert acl.admits(user, groups), (text, user, groups)
    for user, groups in refused:
        assert not acl.admits(user, groups), (text, user, groups)


def test_wildcard_group_list_discards_users() -> None:
    assert parse_acl("alice *") == ACL(everybody=True)


def test_duplicates_collapse() -> None:
    assert parse_acl("a,a,b g,g") == ACL(users=frozenset({"a", "b"}), groups=frozenset({"g"}))


@pytest.mark.parametrize("text", ["  ", " a b", " * ", "  *"])
def test_strings_that_pass_the_coarse_check_and_fail_the_strict_parse(text: str) -> None:
    assert coarse_problem(text) is None
    assert strict_problem(text) is not None


def test_coarse_check_counts_any_white_space() -> None:
    assert coarse_problem("a\tb\nc") is not None
    assert strict_problem("a\tb\nc") is None


# -- the submit check through placements -------------------------------------------------------


def test_admin_acl_implies_submit_on_the_queue_and_below() -> None:
    tree = [{"name": "team", "adminacl": "boss", "queues": [{"name": "sub", "submitacl": " "}]}]
    p = placer(config(partition(tree, [{"name": "provided"}], root_acl=None)))
    assert p.place(app("boss", queue="root.team.sub", app_id="1")).queue == "root.team.sub"
    assert p.place(app("worker", queue="root.team.sub", app_id="2")).rejected


def test_a_restrictive_child_acl_cannot_take_away_what_an_ancestor_grants() -> None:
    tree = [{"name": "locked", "submitacl": " "}]
    assert (
        placer(config(partition(tree, [{"name": "provided"}]))).place(app(queue="locked")).queue
        == "root.locked"
    )


def test_root_without_acl_admits_nobody_unless_a_queue_below_does() -> None:
    tree = [{"name": "open", "submitacl": "*"}, {"name": "closed"}]
    p = placer(config(partition(tree, [{"name": "provided"}], root_acl=None)))
    assert p.place(app(queue="open", app_id="1")).queue == "root.open"
    assert p.place(app(queue="closed", app_id="2")).reason == "no-rule-matched"


def test_group_membership_admits() -> None:
    tree = [{"name": "q", "submitacl": " ops"}]
    p = placer(config(partition(tree, [{"name": "provided"}], root_acl=None)))
    assert p.place(app("carol", groups=["dev", "ops"], queue="q", app_id="1")).queue == "root.q"
    assert p.place(app("carol", groups=["dev"], queue="q", app_id="2")).rejected


def test_users_refused_by_acl_syntax_still_submit_where_the_acl_is_wildcard() -> None:
    # quirk 10: such users cannot be listed in an ACL, but can submit
    tree = [{"name": "q", "submitacl": "system:serviceaccount:ns:sa"}]
    p = placer(config(partition(tree, [{"name": "provided"}], root_acl=None)))
    assert p.place(app("system:serviceaccount:ns:sa", queue="q")).rejected
    p = placer(config(partition(tree, [{"name": "provided"}])))
    assert p.place(app("system:serviceaccount:ns:sa", queue="q")).queue == "root.q"


def test_acl_for_a_missing_queue_is_checked_on_its_deepest_existing_ancestor() -> None:
    tree = [{"name": "team", "parent": True, "submitacl": "alice"}]
    rules = [{"name": "provided", "create": True}]
    p = placer(config(partition(tree, rules, root_acl=None)))
    assert p.place(app("alice", queue="root.team.new.deeper", app_id="1")).queue == "root.team.new.deeper"
    assert p.place(app("bob", queue="root.team.other", app_id="2")).rejected
