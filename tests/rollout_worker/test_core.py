"""RolloutProcessor: what marks a rollout, when a diff is published, and what it says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.rollout.core import InvalidRecord, RolloutChange, RolloutProcessor
from fleetplace.services.rollout.listing import listed_lines
from tests.rollout_worker.builders import CANARY, placement_decisions, report, rollout_object

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GROUPS = [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4", "c5"])]


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def rfc(minutes: float) -> str:
    return at(minutes).strftime("%Y-%m-%dT%H:%M:%SZ")


def started(strategy: dict[str, Any] = CANARY) -> RolloutProcessor:
    p = RolloutProcessor()
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
    p.apply("rollouts", "apps/web", rollout_object("apps/web", strategy=strategy))
    return p


def change(p: RolloutProcessor, now: datetime) -> RolloutChange:
    changes = p.evaluate(now, {})
    assert len(changes) == 1, changes
    return changes[0]


def one(p: RolloutProcessor, now: datetime) -> dict[str, Any]:
    """The one diff an evaluation publishes."""
    return change(p, now).diff


def awaiting(diff: dict[str, Any]) -> list[str]:
    """The clusters a diff's placement lists as told and awaiting their first report."""
    return [s["clusterName"] for s in diff["placements"][0].get("clustersAwaitingReport", ())]


def test_canary_group_goes_first_then_the_next_group_after_its_soak_ends_on_the_timer() -> None:
    p = started()
    first = one(p, at(0))
    assert (first["seq"], first["clusters"], first["added"]) == (1, ["c1"], ["c1"])
    assert p.evaluate(at(0), {}) == []  # nothing marked, nothing published
    p.apply("rollout-status", "apps/web/c1", report("Succeeded", at=rfc(1)))
    soaking = one(p, at(1))
    assert soaking["clusters"] == ["c1"] and soaking["nextRecheckAt"] == rfc(6)
    assert soaking["trigger"] == {"kind": "status", "key": "apps/web/c1"}
    p.tick(at(5.9))
    assert not p.dirty
    p.tick(at(6))  # the soak ends with no event
    wave = one(p, at(6))
    assert wave["trigger"]["kind"] == "recheck"
    assert (wave["seq"], wave["clusters"], wave["added"], wave["removed"]) == (
        3,
        ["c2", "c3"],
        ["c2", "c3"],
        ["c1"],
    )
    assert not wave["complete"]


def test_failures_beyond_max_failures_breach_and_add_no_new_cluster() -> None:
    # Progressive counts failures over every cluster; ProgressivePerGroup only over the group it
    # walks, which a failing cluster of a later group never lets it reach (docs/rollouts.md)
    p = started({"type": "Progressive", "progressive": {"maxFailures": 1, "maxConcurrency": 3}})
    p.apply("rollout-status", "apps/web/c1", report("Succeeded", at=rfc(-10)))
    assert one(p, at(0))["clusters"] == ["c2", "c3", "c4"]
    p.apply("rollout-status", "apps/web/c2", report("Failed", at=rfc(0)))
    p.apply("rollout-status", "apps/web/c3", report("Failed", at=rfc(0)))
    breach = one(p, at(1))
    assert breach["maxFailureBreach"] is True
    # c4 was told and has not reported: it stays told (a deployer may be applying it already);
    # no cluster is added
    assert (breach["clusters"], breach["added"], breach["removed"]) == (["c2", "c3", "c4"], [], [])
    assert awaiting(breach) == ["c4"]
    p.apply("rollout-status", "apps/web/c4", report("Failed", at=rfc(1)))
    heard = one(p, at(2))
    assert (heard["clusters"], heard["removed"]) == (["c2", "c3", "c4"], [])
    assert "clustersAwaitingReport" not in heard["placements"][0]


# Two groups after a mandatory canary; the second group's reports are read over two turns.
TWO_TURNS = [("canary", ["c1"]), ("wave", ["c2", "c3", "c4"]), ("rest", ["c5"])]


def wave_told() -> RolloutProcessor:
    """TWO_TURNS with the canary done: the wave c2, c3, c4 told at minute 0."""
    p = RolloutProcessor()
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", TWO_TURNS))
    p.apply("rollouts", "apps/web", rollout_object("apps/web", strategy=CANARY))
    one(p, at(0))
    p.apply("rollout-status", "apps/web/c1", report("Succeeded", at=rfc(-10)))
    wave = one(p, at(0))
    assert (wave["clusters"], wave["added"]) == (["c2", "c3", "c4"], ["c2", "c3", "c4"])
    return p


def test_a_told_cluster_stays_told_until_its_report_is_read_over_any_number_of_turns() -> None:
    # The mandatory phase lists the clusters it has a report of; told clusters it has none of yet
    # are not dropped and told again later
    p = wave_told()
    p.apply("rollout-status", "apps/web/c2", report("Progressing", at=rfc(1)))
    turn = change(p, at(1))
    first_turn = turn.diff
    assert (first_turn["clusters"], first_turn["removed"]) == (["c2", "c3", "c4"], [])
    assert awaiting(first_turn) == ["c3", "c4"]
    # `rollout status` and the explorer show them as told, in their group
    assert turn.state is not None
    told = [line for line in listed_lines(turn.state["placements"][0]) if line.listed == "told"]
    assert [(line.cluster, line.group_name, line.status) for line in told] == [
        ("c3", "wave", "ToApply"),
        ("c4", "wave", "ToApply"),
    ]
    assert told[0].next == "told: waits for its deployer's first report"
    for c in ("c3", "c4"):
        p.apply("rollout-status", f"apps/web/{c}", report("Progressing", at=rfc(2)))
    second_turn = one(p, at(2))
    assert (second_turn["added"], second_turn["removed"]) == ([], [])
    assert "clustersAwaitingReport" not in second_turn["placements"][0]


def test_a_told_cluster_that_leaves_the_placement_or_a_new_revision_is_no_longer_told() -> None:
    p = wave_told()
    p.apply("rollout-status", "apps/web/c2", report("Progressing", at=rfc(1)))
    one(p, at(1))
    p.apply(
        "placement-decisions",
        "apps/web",
        placement_decisions("apps/web", [*TWO_TURNS[:1], ("wave", ["c2", "c3"]), TWO_TURNS[2]], seq=2),
    )
    left = one(p, at(2))
    assert (left["clusters"], left["removed"]) == (["c2", "c3"], ["c4"])
    p.apply("rollouts", "apps/web", rollout_object("apps/web", revision="v2", strategy=CANARY))
    again = one(p, at(3))
    assert (again["revision"], again["clusters"], again["removed"]) == ("v2", ["c1"], ["c2", "c3"])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_no_cluster_is_added_twice_for_one_revision_whatever_turns_the_reports_are_read_in(
    data: st.DataObject,
) -> None:
    # Deployers report every told cluster Progressing, then Succeeded; the worker reads the
    # reports in any grouping of turns, ten seconds apart (no deadline passes). A cluster enters
    # the set once per revision.
    strategy = data.draw(
        st.sampled_from(
            [
                CANARY,
                {
                    "type": "Progressive",
                    "progressive": {
                        "mandatoryDecisionGroups": [{"groupName": "canary"}],
                        "maxConcurrency": 2,
                        "minSuccessTime": "1m",
                    },
                },
            ]
        )
    )
    p = RolloutProcessor()
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", TWO_TURNS))
    p.apply("rollouts", "apps/web", rollout_object("apps/web", strategy=strategy))
    added: list[str] = []
    pending: list[tuple[str, str]] = []  # reports written, not read yet
    status: dict[str, str] = {}
    for step in range(40):
        p.tick(at(step / 6))
        for c in p.evaluate(at(step / 6), {}):
            added += c.diff["added"]
            for cluster in c.diff["clusters"]:
                if cluster not in status:
                    status[cluster] = "Progressing"
                    pending.append((cluster, "Progressing"))
        for cluster, state in list(status.items()):
            if state == "Progressing" and (cluster, state) not in pending and data.draw(st.booleans()):
                status[cluster] = "Succeeded"
                pending.append((cluster, "Succeeded"))
        read = data.draw(st.integers(min_value=0, max_value=len(pending)))
        for cluster, state in pending[:read]:
            p.apply("rollout-status", f"apps/web/{cluster}", report(state, at=rfc(step / 6)))
        del pending[:read]
    assert len(added) == len(set(added)), added


def test_a_new_revision_starts_over_and_old_reports_count_as_none() -> None:
    p = started()
    for c in ("c1", "c2", "c3", "c4", "c5"):
        p.apply("rollout-status", f"apps/web/{c}", report("Succeeded", at=rfc(-60)))
    done = one(p, at(0))
    assert done["complete"] and done["clusters"] == []
    p.apply("rollouts", "apps/web", rollout_object("apps/web", revision="v2", strategy=CANARY))
    again = one(p, at(1))
    assert (again["revision"], again["clusters"], again["complete"]) == ("v2", ["c1"], False)


def test_a_deleted_rollout_gets_a_final_diff_and_no_state() -> None:
    p = started()
    one(p, at(0))
    p.apply("rollouts", "apps/web", None)
    final = change(p, at(1))
    assert final.diff["deleted"] is True and final.diff["removed"] == ["c1"] and final.diff["seq"] == 2
    assert final.state is None  # a tombstone on rollout-state
    assert p.evaluate(at(2), {}) == []


def test_a_report_marks_only_its_own_rollout_and_a_placement_only_the_rollouts_using_it() -> None:
    p = started()
    p.apply("placement-decisions", "apps/db", placement_decisions("apps/db", [("", ["d1"])]))
    p.apply("rollouts", "apps/db", rollout_object("apps/db", placement="db"))
    p.evaluate(at(0), {})
    p.apply("rollout-status", "apps/db/d1", report("Progressing", at=rfc(0)))
    assert set(p.dirty) == {"apps/db"}
    p.evaluate(at(0), {})
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", [*GROUPS, ("late", ["c6"])]))
    assert set(p.dirty) == {"apps/web"}


def test_a_report_of_another_revision_marks_nothing() -> None:
    p = started()
    p.evaluate(at(0), {})
    p.apply("rollout-status", "apps/web/c1", report("Failed", revision="v0", at=rfc(0)))
    assert not p.dirty


def test_the_same_decision_groups_again_mark_nothing() -> None:
    p = started()
    p.evaluate(at(0), {})
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS, seq=2))
    assert not p.dirty


def test_a_cluster_leaving_the_placement_leaves_the_set_and_none_is_listed_removed() -> None:
    p = started({"type": "All"})
    p.apply("rollout-status", "apps/web/c5", report("Progressing", at=rfc(0)))
    one(p, at(0))
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", [("canary", ["c1"])]))
    diff = one(p, at(1))
    assert diff["clusters"] == ["c1"] and set(diff["removed"]) == {"c2", "c3", "c4", "c5"}
    assert diff["placements"][0]["clustersRemoved"] == []


def test_a_report_for_a_cluster_in_no_placement_changes_nothing_until_one_takes_it_in() -> None:
    ignored: list[str] = []
    p = RolloutProcessor(on_ignored=ignored.append)
    p.apply("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
    p.apply("rollouts", "apps/web", rollout_object("apps/web", strategy={"type": "All"}))
    first = one(p, at(0))
    for copy in range(3):
        p.apply("rollout-status", "apps/web/stray", report("Failed", at=rfc(copy)))
    assert ignored == ["not-placed"] * 3 and not p.dirty
    assert p.evaluate(at(1), {}) == []
    # the report is kept: once the placement takes the cluster in, it counts
    p.apply(
        "placement-decisions", "apps/web", placement_decisions("apps/web", [*GROUPS, ("late", ["stray"])], 2)
    )
    taken_in = change(p, at(2))
    later = taken_in.diff
    assert taken_in.state is not None
    listed = {s["clusterName"]: s["status"] for s in taken_in.state["placements"][0]["clustersToRollout"]}
    assert first["clusters"] == ["c1", "c2", "c3", "c4", "c5"]
    assert later["clusters"] == ["c1", "c2", "c3", "c4", "c5", "stray"] and listed["stray"] == "Failed"


def test_a_report_without_transition_time_takes_the_record_timestamp() -> None:
    p = started({"type": "All", "all": {"progressDeadline": "1m"}})
    p.apply(
        "rollout-status", "apps/web/c1", report("Progressing"), timestamp_ms=int(at(0).timestamp() * 1000)
    )
    state = change(p, at(0)).state
    assert state is not None
    c1 = next(s for s in state["placements"][0]["clustersToRollout"] if s["clusterName"] == "c1")
    assert c1["lastTransitionTime"] == rfc(0) and c1["timeOutTime"] == rfc(1)


def test_an_invalid_strategy_setting_is_reported_in_the_diff() -> None:
    p = started({"type": "Progressive", "progressive": {"maxFailures": "3"}})
    diff = one(p, at(0))
    assert "invalid maximum threshold" in diff["placements"][0]["error"]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("apps/web", report("Succeeded")),
        ("apps/web/c1", {"revision": "v1", "status": "ToApply"}),
        ("apps/web/c1", {"status": "Succeeded"}),
    ],
)
def test_bad_status_records_are_rejected_with_a_reason(key: str, value: dict[str, Any]) -> None:
    p = started()
    with pytest.raises(InvalidRecord):
        p.apply("rollout-status", key, value, timestamp_ms=0)


def test_a_new_instance_fed_the_published_diffs_publishes_nothing_again() -> None:
    p = started()
    p.apply("rollout-status", "apps/web/c1", report("Succeeded", at=rfc(0)))
    changes = p.evaluate(at(1), {})
    fresh = started()
    fresh.apply("rollout-status", "apps/web/c1", report("Succeeded", at=rfc(0)))
    for c in changes:
        fresh.apply("rollout-decisions", "apps/web", c.diff)
    fresh.mark_all()
    assert fresh.evaluate(at(1), {}) == []


@settings(max_examples=40, deadline=None)
@given(
    st.permutations(["c1", "c2", "c3", "c4", "c5"]),
    st.lists(st.sampled_from(["Progressing", "Succeeded", "Failed", "Skip"]), min_size=5, max_size=5),
)
def test_the_answer_does_not_depend_on_the_order_reports_arrive(
    order: list[str], statuses: list[str]
) -> None:
    by_cluster = dict(zip(["c1", "c2", "c3", "c4", "c5"], statuses, strict=True))
    answers = []
    for sequence in (sorted(by_cluster), order):
        p = started()
        for c in sequence:
            p.apply("rollout-status", f"apps/web/{c}", report(by_cluster[c], at=rfc(0)))
        diff = one(p, at(3))
        answers.append({k: v for k, v in diff.items() if k not in ("trigger",)})
    assert answers[0] == answers[1]


def test_a_diff_carries_the_change_and_the_state_the_full_listing() -> None:
    p = started({"type": "All", "all": {"progressDeadline": "10m"}})
    first = change(p, at(0))
    p.apply("rollout-status", "apps/web/c2", report("Progressing", at=rfc(1)))
    second = change(p, at(1))
    # the set did not change, but c2's status and deadline did: a diff, with nothing added
    assert (second.diff["added"], second.diff["removed"]) == ([], [])
    assert second.diff["nextRecheckAt"] == rfc(11)
    assert second.diff["answerDigest"] != first.diff["answerDigest"]
    assert all("clustersToRollout" not in entry for entry in second.diff["placements"])
    assert second.state is not None and second.state["seq"] == second.diff["seq"] == 2
    listed = {s["clusterName"]: s["status"] for s in second.state["placements"][0]["clustersToRollout"]}
    assert listed == {"c1": "ToApply", "c2": "Progressing", "c3": "ToApply", "c4": "ToApply", "c5": "ToApply"}
    for field in ("revision", "clusters", "maxFailureBreach", "nextRecheckAt", "complete"):
        assert second.diff[field] == second.state[field]


def test_a_diff_without_a_digest_from_an_older_worker_is_published_over_once() -> None:
    p = started()
    old = one(p, at(0))
    fresh = started()
    fresh.apply("rollout-decisions", "apps/web", {k: v for k, v in old.items() if k != "answerDigest"})
    fresh.mark_all()
    again = one(fresh, at(0))
    assert (again["seq"], again["clusters"], again["added"], again["removed"]) == (2, ["c1"], [], [])
    assert fresh.evaluate(at(0), {}) == []


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["c1", "c2", "c3", "c4", "c5"]),
            st.sampled_from(["Progressing", "Succeeded", "Failed", "Skip"]),
            st.integers(min_value=0, max_value=20),
        ),
        max_size=12,
    )
)
def test_folding_the_diffs_gives_every_state_and_equal_answers_share_a_digest(
    reports: list[tuple[str, str, int]],
) -> None:
    p = started()
    held: set[str] = set()
    digests: dict[str, str] = {}
    for minute, (cluster, status, age) in enumerate(reports):
        p.apply("rollout-status", f"apps/web/{cluster}", report(status, at=rfc(minute - age)))
        p.tick(at(minute))
        for c in p.evaluate(at(minute), {}):
            assert c.state is not None
            assert set(c.diff["added"]).isdisjoint(held) and set(c.diff["removed"]) <= held
            held = (held - set(c.diff["removed"])) | set(c.diff["added"])
            assert sorted(held) == c.diff["clusters"] == c.state["clusters"]
            answer = repr({k: v for k, v in c.state.items() if k not in ("seq",)})
            assert digests.setdefault(answer, c.diff["answerDigest"]) == c.diff["answerDigest"]
