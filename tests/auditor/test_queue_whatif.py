"""Queue rules what-if on recorded histories: each kind of config change shows exactly the
applications it affects, checked against placing them from scratch under the new config."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import orjson
import pytest

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.queue_whatif import (
    Change,
    QueueWhatIf,
    RecordedApplication,
    recorded_applications,
    what_if_queues,
)
from fleetplace.shared.queueing import QueuePlacer, parse_config
from tests.auditor.test_queue_audit import PREFIX, T0, OfflineQueuePlacer
from tests.queue_worker.test_worker import app


def current_partition() -> dict[str, Any]:
    """Requested queues that exist, else a team queue by namespace (created), else a personal
    queue for the dev group (created), else root.default."""
    return {
        "name": "default",
        "queues": [
            {
                "name": "root",
                "submitacl": "*",
                "queues": [
                    {"name": "batch"},
                    {"name": "default"},
                    {"name": "teams", "parent": True},
                    {"name": "users", "parent": True},
                ],
            }
        ],
        "placementrules": [
            {"name": "provided"},
            {
                "name": "tag",
                "value": "namespace",
                "create": True,
                "parent": {"name": "fixed", "value": "root.teams"},
            },
            {
                "name": "user",
                "create": True,
                "filter": {"type": "allow", "groups": ["dev"]},
                "parent": {"name": "fixed", "value": "root.users"},
            },
            {"name": "fixed", "value": "root.default"},
        ],
    }


APPS = [
    app("a1", "alice", "root.batch", groups=["dev"]),
    app("a2", "bob", groups=["ops"], tags={"namespace": "web"}),
    app("a3", "carol", groups=["dev"]),
    app("a4", "dave", groups=["ops"]),
    app("a5", "erin", groups=["dev"], tags={"namespace": "web"}),
    app("a6", "alice", groups=["dev"]),
    app("a7", "frank", "root.batch", groups=["qa"]),
    app("a8", "gina", "root.batch", groups=["ops"], tags={"namespace": "api"}),
    app("a9", "hank", groups=["qa"]),
    app("a10", "ivan", "root.teams.web", groups=["ops"]),  # a queue a2 created
    app("a11", "judy", "root.tenants.web", groups=["ops"]),  # a queue nobody created
    app("a12", "bad name!", groups=["ops"]),  # refused whatever the rules say
]


def recorded_history() -> list[RecordedApplication]:
    q = OfflineQueuePlacer()
    q.config(current_partition())
    for i, submission in enumerate(APPS):
        q.submit(T0 + timedelta(seconds=i), submission)
    recorded, unreadable = recorded_applications(History.of(q.log, prefix=PREFIX))
    assert unreadable == [] and len(recorded) == len(APPS)
    return recorded


def from_scratch(recorded: list[RecordedApplication], partition: dict[str, Any]) -> dict[str, str | None]:
    """The oracle: a fresh placer under the new config, the applications in recorded order."""
    placer = QueuePlacer(parse_config({"partitions": [partition]}))
    return {r.application.application_id: placer.place(r.application).queue for r in recorded}


def run(partition: dict[str, Any], **window: Any) -> tuple[QueueWhatIf, list[RecordedApplication]]:
    recorded = recorded_history()
    return what_if_queues(recorded, parse_config({"partitions": [partition]}), **window), recorded


def assert_matches_scratch(
    result: QueueWhatIf, recorded: list[RecordedApplication], new: dict[str, Any]
) -> None:
    scratch = from_scratch(recorded, new)
    differing = {
        r.application.application_id
        for r in recorded
        if scratch[r.application.application_id] != r.answer.queue
    }
    assert {c.application for c in result.changes} == differing
    for c in result.changes:
        assert c.after.queue == scratch[c.application]
    assert result.unchanged == len(recorded) - len(differing)


def reordered() -> dict[str, Any]:
    # the user rule before the tag rule: dev users with a namespace get a personal queue
    new = current_partition()
    rules = new["placementrules"]
    rules[1], rules[2] = rules[2], rules[1]
    return new


def test_a_reordered_rule_moves_only_dev_users_with_a_namespace() -> None:
    new = reordered()
    result, recorded = run(new)
    assert_matches_scratch(result, recorded, new)
    [moved] = result.changes
    assert (moved.application, moved.change) == ("a5", Change.MOVED)
    assert (moved.before.queue, moved.before.rule) == ("root.teams.web", "tag")
    assert (moved.after.queue, moved.after.rule, moved.after.rule_index) == ("root.users.erin", "user", 1)
    assert result.queues_created == [("default", "root.users.erin")]


def test_a_changed_filter_moves_the_users_it_lets_in_and_those_it_now_keeps_out() -> None:
    new = current_partition()
    new["placementrules"][2]["filter"] = {"type": "allow", "groups": ["qa"]}
    result, recorded = run(new)
    assert_matches_scratch(result, recorded, new)
    # carol and alice (dev, no namespace, no requested queue) lose their queues; hank (qa) gains one;
    # frank (qa) asked for root.batch, which the provided rule still grants first
    assert {c.application: c.after.queue for c in result.changes} == {
        "a3": "root.default",
        "a6": "root.default",
        "a9": "root.users.hank",
    }
    assert {c.change for c in result.changes} == {Change.MOVED}


def test_a_removed_create_sends_namespaced_applications_to_the_next_rule() -> None:
    new = current_partition()
    del new["placementrules"][1]["create"]
    result, recorded = run(new)
    assert_matches_scratch(result, recorded, new)
    # bob (ops) falls through to root.default, erin (dev) to her personal queue; gina asked for an
    # existing queue and never reached the tag rule; ivan asked for root.teams.web, now never created
    assert {c.application: c.after.queue for c in result.changes} == {
        "a2": "root.default",
        "a5": "root.users.erin",
        "a10": "root.default",
    }
    assert ("default", "root.teams.web") not in result.queues_created


def test_a_new_acl_rejects_exactly_the_users_it_no_longer_admits_and_says_which_acl() -> None:
    new = current_partition()
    root = new["queues"][0]
    root["submitacl"] = " dev"  # only the dev group, everywhere…
    root["queues"][0]["submitacl"] = "frank"  # …except frank on root.batch
    result, recorded = run(new)
    assert_matches_scratch(result, recorded, new)
    assert {c.application for c in result.changes} == {"a2", "a4", "a8", "a9", "a10", "a11"}
    assert {c.change for c in result.changes} == {Change.NEWLY_REJECTED}  # a12 was refused before too
    gina = next(c for c in result.changes if c.application == "a8")
    assert gina.after.reason == "no-rule-matched"
    # every rule's proposal, and the ACL (or the missing tag) that turned it down
    assert gina.after.why == (
        "rule 0 (provided) proposed root.batch: the submit ACLs of root.batch and its parents do not admit gina",
        "rule 1 (tag) proposed root.teams.api (to be created): the submit ACLs of root.teams and its parents "
        "do not admit gina",
        "rule 2 (user): no match",
        "rule 3 (fixed) proposed root.default: the submit ACLs of root.default and its parents do not admit gina",
        "default-queue proposed root.default: the submit ACLs of root.default and its parents do not admit gina",
    )
    # erin now creates root.teams.web herself (bob no longer does): same queue, unchanged
    assert "a5" not in {c.application for c in result.changes}


def renamed_parent() -> dict[str, Any]:
    new = current_partition()
    new["queues"][0]["queues"][2]["name"] = "tenants"
    new["placementrules"][1]["parent"]["value"] = "root.tenants"
    return new


def test_a_renamed_parent_moves_every_application_below_it() -> None:
    new = renamed_parent()
    result, recorded = run(new)
    assert_matches_scratch(result, recorded, new)
    # judy asked for root.tenants.web: it exists now, created by bob's application before hers
    assert {c.application: c.after.queue for c in result.changes} == {
        "a2": "root.tenants.web",
        "a5": "root.tenants.web",
        "a10": "root.default",
        "a11": "root.tenants.web",
    }
    assert result.queues_created == [("default", "root.tenants.web")]


def test_an_unchanged_config_reports_nothing() -> None:
    result, recorded = run(current_partition())
    assert (result.changes, result.unchanged, result.reported) == ([], len(recorded), len(recorded))
    assert result.queues_created == [] and not result.changed


def test_a_window_reports_only_its_applications_but_replays_those_before_it() -> None:
    # a11 and a12 only; a11 finds the queue a2 created under the new rules, before the window
    last, _ = run(renamed_parent(), last=2)
    assert (last.reported, last.replayed) == (2, len(APPS))
    assert [(c.application, c.after.queue) for c in last.changes] == [("a11", "root.tenants.web")]
    assert last.queues_created == []  # root.tenants.web was created before the window
    new = current_partition()
    del new["placementrules"][1]["create"]
    since, _ = run(new, since=T0 + timedelta(seconds=4))  # a5 on
    assert [c.application for c in since.changes] == ["a5", "a10"]
    assert since.reported == len(APPS) - 4


def test_applications_of_partitions_the_config_does_not_configure_are_not_evaluated() -> None:
    other = copy.deepcopy(current_partition())
    other["name"] = "gpu"
    recorded = recorded_history()
    result = what_if_queues(recorded, parse_config({"partitions": [other]}))
    assert (result.reported, result.not_evaluated, result.changes) == (0, len(recorded), [])


def test_a_partition_outside_the_config_is_refused() -> None:
    with pytest.raises(ValueError, match="'gpu'"):
        what_if_queues(
            recorded_history(), parse_config({"partitions": [current_partition()]}), partition="gpu"
        )


def test_records_that_are_not_placements_are_named_and_the_rest_are_evaluated() -> None:
    q = OfflineQueuePlacer()
    q.config(current_partition())
    q.submit(T0, APPS[0], APPS[1])
    q.write("app-placements", "junk", b"{not json")
    forged = {
        "evaluatedAt": "2026-01-01T00:00:05Z",
        "inputs": {},
        "queue": "root.x",
        "application": {"user": 7},
    }
    q.write("app-placements", "forged", orjson.dumps(forged))
    recorded, unreadable = recorded_applications(History.of(q.log, prefix=PREFIX))
    assert {r.application.application_id for r in recorded} == {"a1", "a2"}
    assert len(unreadable) == 2 and all(u.startswith("app-placements/") for u in unreadable)
    assert any("not a valid submission" in u for u in unreadable)
