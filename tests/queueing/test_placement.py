"""Checks before the rules, choosing the queue, committing it, outcomes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fleetplace.shared.queueing import ApplicationSubmission, QueuePlacer, RejectionReason
from tests.queueing.helpers import app, config, partition, placer

FORCE = {"application.create.force": "true"}

# -- checks before any rule --------------------------------------------------------------------


def test_unknown_partition_is_rejected() -> None:
    assert placer(config(partition())).place(app(partition_name="gpu")).reason == "unknown-partition"


@pytest.mark.parametrize("name", ["Default", "DEFAULT"])
def test_application_partition_names_are_case_sensitive(name: str) -> None:
    assert placer(config(partition())).place(app(partition_name=name)).reason == "unknown-partition"


def test_empty_partition_means_default_and_config_side_default_is_folded() -> None:
    p = placer(config(partition(name="DEFAULT", rules=[{"name": "user", "create": True}])))
    assert p.place(app(partition_name="")).queue == "root.alice"


def test_empty_user_is_rejected_unless_forced() -> None:
    cfg = config(partition(rules=[{"name": "user", "create": True}]))
    assert placer(cfg).place(app("", groups=[])).reason == "invalid-user"
    # forced: continues as nobody / [nogroup]
    assert placer(cfg).place(app("", groups=["ignored"], tags=FORCE)).queue == "root.nobody"


def test_forced_empty_user_gets_the_nogroup_group() -> None:
    rules = [{"name": "fixed", "value": "g", "filter": {"groups": ["nogroup"]}}]
    assert placer(config(partition([{"name": "g"}], rules))).place(app("", tags=FORCE)).queue == "root.g"


def test_user_name_is_checked_only_when_groups_are_supplied() -> None:
    cfg = config(partition(rules=[{"name": "user", "create": True}]))
    assert placer(cfg).place(app("99bottles", groups=["g"])).reason == "invalid-user"
    assert placer(cfg).place(app("99bottles", groups=[])).queue == "root.99bottles"


def test_empty_groups_resolve_to_a_group_named_like_the_user() -> None:
    rules = [{"name": "fixed", "value": "q", "filter": {"groups": ["carol"]}}]
    p = placer(config(partition([{"name": "q"}], rules)))
    assert p.place(app("carol", groups=[])).queue == "root.q"


def test_second_submission_of_a_live_application_id_is_rejected() -> None:
    p = placer(config(partition(rules=[{"name": "user", "create": True}])))
    assert p.place(app("a", app_id="x")).queue == "root.a"
    outcome = p.place(app("b", app_id="x"))
    assert outcome.reason == "duplicate-application"
    # a rejected submission does not occupy its ID
    assert p.place(app("", groups=[], app_id="y")).rejected
    assert p.place(app("b", app_id="y")).queue == "root.b"


def test_released_application_id_can_be_used_again() -> None:
    p = placer(config(partition(rules=[{"name": "user", "create": True}])))
    p.place(app("a", app_id="x"))
    assert p.release("x") is True
    assert p.release("x") is False
    assert p.place(app("a", app_id="x")).queue == "root.a"


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_force_tag_values_go_reads_as_true(value: str) -> None:
    outcome = placer(config(partition(rules=[{"name": "user"}]))).place(
        app(tags={"Application.Create.Force": value})
    )
    assert outcome.queue == "root.@recovery@"


@pytest.mark.parametrize("value", ["yes", "on", "", "false", "TrUe", "2"])
def test_other_force_tag_values_are_not_forced(value: str) -> None:
    outcome = placer(config(partition(rules=[{"name": "user"}]))).place(
        app(tags={"application.create.force": value})
    )
    assert outcome.rejected


# -- choosing the queue ------------------------------------------------------------------------


def test_rules_are_tried_in_order_and_the_first_acceptable_wins() -> None:
    rules = [
        {"name": "provided"},
        {"name": "user", "create": True},
        {"name": "fixed", "value": "x", "create": True},
    ]
    p = placer(config(partition([{"name": "asked"}], rules)))
    first = p.place(app("u", queue="asked", app_id="1"))
    second = p.place(app("u", queue="unknown", app_id="2"))
    assert (first.queue, first.rule, first.rule_index) == ("root.asked", "provided", 0)
    assert (second.queue, second.rule, second.rule_index) == ("root.u", "user", 1)


def test_proposal_of_a_parent_queue_falls_through_to_the_next_rule() -> None:
    rules = [{"name": "provided"}, {"name": "fixed", "value": "leaf"}]
    p = placer(config(partition([{"name": "p", "parent": True}, {"name": "leaf"}], rules)))
    assert p.place(app(queue="p")).queue == "root.leaf"


def test_default_queue_fallback_when_no_rule_matched() -> None:
    p = placer(config(partition([{"name": "default"}], [{"name": "user"}])))
    outcome = p.place(app("nobody-here"))
    assert (outcome.queue, outcome.rule, outcome.rule_index, outcome.created) == (
        "root.default",
        "default-queue",
        None,
        False,
    )


def test_default_queue_fallback_is_subject_to_the_same_checks() -> None:
    queues = [{"name": "default", "submitacl": "alice"}]
    p = placer(config(partition(queues, [{"name": "user"}], root_acl=None)))
    assert p.place(app("alice", app_id="1")).queue == "root.default"
    assert p.place(app("bob", app_id="2")).reason == "no-rule-matched"
    p = placer(config(partition([{"name": "default", "parent": True}], [{"name": "user"}])))
    assert p.place(app("bob")).reason == "no-rule-matched"


def test_no_rules_and_a_missing_requested_queue_lands_in_root_default() -> None:
    p = placer(config(partition([{"name": "default"}])))
    assert p.place(app(queue="does-not-exist")).queue == "root.default"


def test_rule_error_rejects_at_once_without_fallback_even_when_forced() -> None:
    rules = [{"name": "provided", "create": True}, {"name": "user", "create": True}]
    p = placer(config(partition([{"name": "default"}], rules)))
    assert p.place(app(queue="bad name", app_id="1")).reason == "rule-error"
    assert p.place(app(queue="bad name", tags=FORCE, app_id="2")).reason == "rule-error"


def test_forced_application_never_reaches_the_default_queue() -> None:
    p = placer(config(partition([{"name": "default"}], [{"name": "user"}])))
    assert p.place(app("x", tags=FORCE)).queue == "root.@recovery@"


# YuniKorn's TestForcePlaceApp, transcribed: root admits "any-user" only.
FORCE_CONFIG = {
    "partitions": [
        {
            "name": "default",
            "queues": [
                {
                    "name": "root",
                    "submitacl": "any-user",
                    "queues": [
                        {"name": "default", "submitacl": "*"},
                        {"name": "acldeny", "submitacl": " "},
                        {"name": "parent", "parent": True, "submitacl": "*"},
                    ],
                }
            ],
            "placementrules": [
                {"name": "provided", "create": False},
                {"name": "tag", "value": "namespace", "create": True},
            ],
        }
    ]
}
NS = {"namespace": "namespace"}


@pytest.mark.parametrize(
    ("queue", "tags", "user", "placed"),
    [
        ("", {}, "any-user", "root.default"),
        ("default", {}, "any-user", "root.default"),
        ("root.default", {}, "any-user", "root.default"),
        ("unknown", {}, "any-user", "root.default"),
        ("root.parent", {}, "any-user", "root.default"),
        ("root.acldeny", {}, "deny-user", "root.default"),
        ("unknown", NS, "any-user", "root.namespace"),
        ("unknown", NS, "deny-user", "root.default"),
        ("root.default", FORCE, "any-user", "root.default"),
        ("unknown", {**FORCE, **NS}, "any-user", "root.namespace"),
        ("unknown", {**FORCE, **NS}, "deny-user", "root.@recovery@"),
        ("root.parent", FORCE, "any-user", "root.@recovery@"),
        ("root.acldeny", FORCE, "deny-user", "root.@recovery@"),
        ("unknown", FORCE, "any-user", "root.@recovery@"),
        ("unknown", FORCE, "deny-user", "root.@recovery@"),
    ],
)
def test_yunikorn_force_place_app_cases(queue: str, tags: dict[str, str], user: str, placed: str) -> None:
    p = placer(FORCE_CONFIG)
    assert p.place(app(user, groups=[], queue=queue, tags=tags)).queue == placed


def test_yunikorn_manager_place_app_sequence() -> None:
    # YuniKorn's TestManagerPlaceApp, with `parent: true` added to testparent: our config
    # validation runs the static check, which YuniKorn's test bypasses.
    cfg = {
        "partitions": [
            {
                "queues": [
                    {
                        "name": "root",
                        "queues": [
                            {
                                "name": "testparent",
                                "parent": True,
                                "submitacl": "*",
                                "queues": [{"name": "testchild"}],
                            },
                            {"name": "fixed", "submitacl": "other-user ", "parent": True},
                        ],
                    }
                ],
                "placementrules": [
                    {"name": "user", "create": False, "parent": {"name": "fixed", "value": "testparent"}},
                    {"name": "provided", "create": True},
                    {"name": "tag", "value": "namespace", "create": True},
                ],
            }
        ]
    }
    p = placer(cfg)
    steps: list[tuple[str, str, dict[str, str], str | None]] = [
        ("testchild", "", {}, "root.testparent.testchild"),
        ("other-user", "", {}, None),
        ("other-user", "root.fixed.leaf", {}, "root.fixed.leaf"),
        ("unknown-user", "root.fixed.other", {}, None),
        ("unknown-user", "", {"namespace": "root.fixed.leaf"}, None),
        ("other-user", "", {"namespace": "root.fixed.leaf"}, "root.fixed.leaf"),
        ("other-user", "root.fixed", {}, None),
    ]
    for i, (user, queue, tags, placed) in enumerate(steps):
        assert p.place(app(user, groups=[], queue=queue, tags=tags, app_id=str(i))).queue == placed, i


# -- creating the queue ------------------------------------------------------------------------


def test_created_queue_exists_for_later_applications() -> None:
    p = placer(config(partition(rules=[{"name": "user", "create": True}])))
    first = p.place(app("ann", app_id="1"))
    again = p.place(app("ann", app_id="2"))
    assert (first.created, again.created) == (True, False)
    assert p.queues()["root.ann"].dynamic
    assert p.queues()["root.ann"].applications == 2


def test_missing_intermediate_levels_are_created_as_parents() -> None:
    p = placer(config(partition(rules=[{"name": "provided", "create": True}])))
    assert p.place(app(queue="root.a.b.c")).queue == "root.a.b.c"
    q = p.queues()
    assert (q["root.a"].leaf, q["root.a.b"].leaf, q["root.a.b.c"].leaf) == (False, False, True)


def test_create_below_an_existing_leaf_is_rejected_without_trying_later_rules() -> None:
    rules = [{"name": "provided", "create": True}, {"name": "user", "create": True}]
    p = placer(config(partition([{"name": "leaf"}], rules)))
    outcome = p.place(app(queue="root.leaf.child"))
    assert outcome.reason == "create-under-leaf"


def test_dynamic_leaf_blocks_creation_below_it_later() -> None:
    p = placer(config(partition(rules=[{"name": "provided", "create": True}])))
    assert p.place(app(queue="root.a", app_id="1")).created
    assert p.place(app(queue="root.a.b", app_id="2")).reason == "create-under-leaf"


def test_recovery_named_level_cannot_be_created_but_upper_case_can() -> None:
    p = placer(config(partition([{"name": "x", "parent": True}], [{"name": "provided", "create": True}])))
    assert p.place(app(queue="root.x.@recovery@", app_id="1")).reason == "create-refused"
    assert p.place(app(queue="root.@recovery@.y", app_id="2")).reason == "create-refused"
    assert p.place(app(queue="root.x.@RECOVERY@", app_id="3")).queue == "root.x.@recovery@"


def test_recovery_queue_is_a_dynamic_leaf_that_never_passes_a_submit_check() -> None:
    rules = [{"name": "provided", "create": True}]
    p = placer(config(partition([{"name": "default"}], rules)))
    assert p.place(app(queue="x", tags={**FORCE, "other": "1"}, app_id="1")).queue == "root.x"
    assert p.place(app(tags=FORCE, app_id="2")).queue == "root.@recovery@"
    state = p.queues()["root.@recovery@"]
    assert (state.leaf, state.dynamic) == (True, True)
    # now it exists: a non-forced application proposing it is refused and falls through
    assert p.place(app(queue="root.@recovery@", app_id="3")).queue == "root.default"


def test_non_forced_application_can_create_the_recovery_queue_before_it_exists() -> None:
    # quirk 15: only the root's ACL is asked, and the recovery queue is then created
    outcome = placer(config(partition(rules=[{"name": "provided", "create": True}]))).place(
        app(queue="root.@recovery@")
    )
    assert (outcome.queue, outcome.created) == ("root.@recovery@", True)


def test_forced_application_proposing_the_recovery_queue_skips_the_checks() -> None:
    # the root admits nobody, yet a forced application gets into the recovery queue
    p = placer(config(partition(rules=[{"name": "provided"}], root_acl=None)))
    assert p.place(app(queue="root.@recovery@", tags=FORCE)).queue == "root.@recovery@"


def test_configured_recovery_parent_rejects_forced_applications() -> None:
    cfg = config(partition([{"name": "@recovery@", "parent": True}], [{"name": "user"}]))
    assert placer(cfg).place(app(tags=FORCE)).reason == "not-a-leaf"


def test_created_names_are_lower_case() -> None:
    assert (
        placer(config(partition(rules=[{"name": "user", "create": True}]))).place(app("TestUser")).queue
        == "root.testuser"
    )


def test_created_queues_are_remembered_per_partition() -> None:
    cfg = config(
        partition(rules=[{"name": "user", "create": True}]),
        partition(name="gpu", rules=[{"name": "user", "create": True}]),
    )
    p = placer(cfg)
    p.place(app("ann", partition_name="gpu"))
    assert "root.ann" in p.queues("gpu")
    assert "root.ann" not in p.queues()


# -- outcomes ----------------------------------------------------------------------------------


def test_outcome_json_for_a_placement() -> None:
    outcome = placer(config(partition(rules=[{"name": "user", "create": True}]))).place(
        app("ann", app_id="a-1")
    )
    assert outcome.to_json() == {"applicationID": "a-1", "queue": "root.ann", "rule": "user", "created": True}
    assert orjson.loads(outcome.to_bytes()) == outcome.to_json()


def test_outcome_json_for_a_rejection() -> None:
    outcome = placer(config(partition())).place(app(app_id="a-2", partition_name="nope"))
    assert outcome.to_json() == {"applicationID": "a-2", "rejected": True, "reason": "unknown-partition"}
    assert outcome.reason is RejectionReason.UNKNOWN_PARTITION
    assert outcome.rejected and outcome.detail


def test_outcome_is_frozen() -> None:
    outcome = placer(config(partition())).place(app())
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises its ValidationError subclass
        outcome.queue = "root.other"  # type: ignore[misc]


def test_application_submission_is_strictly_typed() -> None:
    with pytest.raises(ValueError):
        ApplicationSubmission.model_validate({"applicationID": "x", "user": 5})
    with pytest.raises(ValueError):
        ApplicationSubmission.model_validate({"applicationID": "x", "tags": {"a": 1}})
    with pytest.raises(ValueError):
        ApplicationSubmission.model_validate({"applicationID": "x", "unknown": 1})
    sub = ApplicationSubmission.model_validate({"applicationID": "x", "groups": None, "tags": None})
    assert (sub.groups, sub.tags, sub.partition, sub.queue, sub.user) == ((), {}, "", "", "")


def test_memoised_and_fresh_decisions_agree_on_a_sequence() -> None:
    cfg: dict[str, Any] = config(
        partition(
            [{"name": "default"}, {"name": "teams", "parent": True}],
            [
                {"name": "provided"},
                {
                    "name": "user",
                    "create": True,
                    "parent": {"name": "fixed", "value": "teams"},
                    "filter": {"groups": ["^dev"]},
                },
                {"name": "tag", "value": "ns", "create": True},
            ],
        )
    )
    a, b = placer(cfg), QueuePlacer(placer(cfg).config, memoize=False)
    apps = [
        app(
            f"u{i % 3}",
            groups=["dev" if i % 2 else "ops"],
            queue=["", "default", "teams"][i % 3],
            tags={"ns": f"n{i % 4}"},
            app_id=str(i),
        )
        for i in range(40)
    ]
    assert [a.place(x) for x in apps] == [b.place(x) for x in apps]


# -- remembered decisions must follow the tree -------------------------------------------------


def test_a_queue_created_by_a_later_rule_is_seen_by_an_earlier_rule_next_time() -> None:
    # the first time `provided` (no create) finds no root.ann and the user rule creates it;
    # the same submission again must now be placed by `provided`
    p = placer(config(partition(rules=[{"name": "provided"}, {"name": "user", "create": True}])))
    first = p.place(app("ann", queue="ann", app_id="1"))
    again = p.place(app("ann", queue="ann", app_id="2"))
    assert (first.rule, first.created) == ("user", True)
    assert (again.queue, again.rule, again.rule_index, again.created) == ("root.ann", "provided", 0, False)


def test_a_queue_removed_on_release_is_created_again() -> None:
    p = placer(config(partition(rules=[{"name": "provided", "create": True}])))
    assert p.place(app(queue="root.a", app_id="1")).created
    p.release("1")
    again = p.place(app(queue="root.a", app_id="2"))
    assert (again.queue, again.created) == ("root.a", True)
    assert p.queues()["root.a"].applications == 1


def test_a_remembered_decision_to_create_a_queue_is_dropped_when_the_queue_appears_as_a_parent() -> None:
    rules = [
        {"name": "provided", "create": True},
        {"name": "fixed", "value": "root.fallback", "create": True},
    ]
    p = placer(config(partition(rules=rules)))
    p.place(app(queue="root.first", app_id="1"))
    # decided (create root.t) but refused as a duplicate ID: the decision is remembered unused
    assert p.place(app(queue="root.t", app_id="1")).reason == "duplicate-application"
    # another application creates root.t.x, so root.t now exists as a parent
    assert p.place(app(queue="root.t.x", app_id="2")).created
    # the same submission as before must skip the parent and fall to the next rule
    assert p.place(app(queue="root.t", app_id="3")).queue == "root.fallback"
