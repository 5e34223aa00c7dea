"""The three strategies: All, Progressive, ProgressivePerGroup, with mandatory groups first."""

from __future__ import annotations

import pytest

from fleetplace.shared.rollout import DurationError, GroupKey, RolloutStatus, ThresholdError

from .builders import NOW, SECOND, at, brief, groups, names, run, status, strategy

SIX = groups(
    ("group1", 0, ["cluster1", "cluster2"]),
    ("", 1, ["cluster3", "cluster4"]),
    ("", 2, ["cluster5", "cluster6"]),
)


# --- All ---------------------------------------------------------------------------------------


def test_all_rolls_out_every_cluster_in_name_order_with_its_group_key() -> None:
    result = run(strategy("All"), SIX, [])
    assert names(result.clusters_to_rollout) == [f"cluster{i}" for i in range(1, 7)]
    assert result.clusters_to_rollout[0].group_key == GroupKey("group1", 0)
    assert result.clusters_to_rollout[2].group_key == GroupKey("", 1)
    assert result.recheck_after is None and not result.max_failure_breach


def test_all_ignores_min_success_time_and_max_failures_and_never_breaches() -> None:
    statuses = [status(f"cluster{i}", "Failed", 10) for i in range(1, 6)] + [
        status("cluster6", "Succeeded", 1)
    ]
    result = run(strategy("All", minSuccessTime="1h", maxFailures=0), SIX, statuses)
    assert names(result.clusters_to_rollout) == [f"cluster{i}" for i in range(1, 6)]
    assert result.max_failure_breach is False


def test_all_sorts_existing_statuses_by_byte_order_then_adds_new_clusters() -> None:
    decision = groups(("", 0, ["cluster10", "cluster2", "cluster1", "Zeta"]))
    statuses = [status("cluster2", "Progressing", 1), status("cluster10", "Progressing", 1)]
    result = run(strategy("All"), decision, statuses)
    assert names(result.clusters_to_rollout) == ["cluster10", "cluster2", "Zeta", "cluster1"]


def test_all_times_out_past_the_deadline_and_lists_timeouts_in_assessment_order() -> None:
    statuses = [status("cluster3", "Failed", 100), status("cluster1", "Progressing", 200)]
    result = run(strategy("All", progressDeadline="90s"), SIX, statuses)
    assert brief(result.clusters_timeout) == [("cluster1", "TimeOut"), ("cluster3", "TimeOut")]
    assert "cluster1" not in names(result.clusters_to_rollout)


def test_all_processes_a_cluster_listed_twice_twice() -> None:
    statuses = [status("cluster1", "Progressing", 1), status("cluster1", "Failed", 2)]
    result = run(strategy("All"), SIX, statuses)
    assert brief(result.clusters_to_rollout)[:2] == [("cluster1", "Progressing"), ("cluster1", "Failed")]


def test_all_with_a_bad_deadline_is_an_error() -> None:
    with pytest.raises(DurationError, match=r"^invalid timeout format$"):
        run(strategy("All", progressDeadline="90"), SIX, [])


# --- Progressive -------------------------------------------------------------------------------


def test_progressive_rolls_out_max_concurrency_clusters_by_name() -> None:
    result = run(strategy("Progressive", maxConcurrency=2), SIX, [])
    assert names(result.clusters_to_rollout) == ["cluster1", "cluster2"]


def test_progressive_without_max_concurrency_rolls_out_everything() -> None:
    assert len(run(strategy("Progressive"), SIX, []).clusters_to_rollout) == 6


def test_progressive_max_concurrency_percent_rounds_up() -> None:
    result = run(strategy("Progressive", maxConcurrency="34%"), SIX, [])  # 2.04 -> 3
    assert len(result.clusters_to_rollout) == 3


@pytest.mark.parametrize(
    "held",
    [
        status("cluster1", "Progressing", 1),
        status("cluster1", "Failed", 1),
        status("cluster1", "Succeeded", 1),
        status("cluster1", "ToApply", None),
    ],
)
def test_progressive_slots_are_taken_by_every_cluster_still_rolling_out(held: object) -> None:
    result = run(
        strategy("Progressive", maxConcurrency=2, minSuccessTime="1m", maxFailures="100%"),
        SIX,
        [held],  # type: ignore[list-item]
    )
    assert names(result.clusters_to_rollout) == ["cluster1", "cluster2"]


def test_progressive_stops_scanning_when_slots_are_full_so_later_failures_do_not_count() -> None:
    statuses = [
        status("cluster1", "Progressing", 1),
        status("cluster2", "Failed", 1000),
        status("cluster3", "Failed", 1000),
    ]
    result = run(strategy("Progressive", maxConcurrency=1, progressDeadline="90s"), SIX, statuses)
    assert names(result.clusters_to_rollout) == ["cluster1"]
    assert result.clusters_timeout == ()
    assert result.max_failure_breach is False


def test_progressive_breach_adds_nothing_new_and_drops_input_to_apply() -> None:
    statuses = [
        status("cluster1", "Failed", 1),
        status("cluster2", "ToApply", None),
        status("cluster3", "Progressing", 1),
    ]
    result = run(strategy("Progressive", maxFailures=0), SIX, statuses)
    assert result.max_failure_breach is True
    assert brief(result.clusters_to_rollout) == [("cluster1", "Failed"), ("cluster3", "Progressing")]


def test_progressive_input_timeout_counts_as_failure_but_is_not_listed() -> None:
    result = run(strategy("Progressive", maxFailures=0), SIX, [status("cluster1", "TimeOut", 1)])
    assert result.max_failure_breach is True
    assert result.clusters_timeout == () and result.clusters_to_rollout == ()


def test_progressive_progressing_past_deadline_counts_as_failure() -> None:
    statuses = [status("cluster1", "Progressing", 100), status("cluster2", "Progressing", 100)]
    result = run(strategy("Progressive", maxFailures=1, progressDeadline="90s"), SIX, statuses)
    assert result.max_failure_breach is True
    assert names(result.clusters_timeout) == ["cluster1", "cluster2"]


def test_progressive_max_failures_above_the_count_tolerates_no_failure() -> None:
    result = run(strategy("Progressive", maxFailures=7), SIX, [status("cluster1", "Failed", 1)])
    assert result.max_failure_breach is True


def test_progressive_max_failures_percent_is_over_all_clusters() -> None:
    # 17% of 6 clusters = 1.02 -> 2 failures tolerated, even with mandatory groups.
    statuses = [status("cluster3", "Failed", 1), status("cluster4", "Failed", 1)]
    strat = strategy("Progressive", maxFailures="17%")
    assert run(strat, SIX, statuses).max_failure_breach is False
    assert run(strat, SIX, [*statuses, status("cluster5", "Failed", 1)]).max_failure_breach is True


def test_progressive_max_concurrency_percent_is_over_non_mandatory_clusters() -> None:
    done = [status("cluster1", "Succeeded", 10), status("cluster2", "Succeeded", 10)]
    strat = strategy("Progressive", maxConcurrency="50%", mandatoryDecisionGroups=[{"groupName": "group1"}])
    assert names(run(strat, SIX, done).clusters_to_rollout) == ["cluster3", "cluster4"]


def test_progressive_passes_input_to_apply_through_with_its_own_group_key_and_times() -> None:
    own = status("cluster3", "ToApply", 5, group=("elsewhere", 7))
    result = run(strategy("Progressive", maxConcurrency=1), SIX, [own])
    assert result.clusters_to_rollout == (own,)


def test_progressive_invalid_max_failures_is_an_error_naming_the_setting() -> None:
    with pytest.raises(ThresholdError) as e:
        run(strategy("Progressive", maxFailures="3"), SIX, [])
    assert str(e.value) == (
        "failed to parse the provided maxFailures: '3' is an invalid maximum threshold value: string is not a percentage"
    )


def test_progressive_deadline_error_comes_before_max_failures_error() -> None:
    with pytest.raises(DurationError):
        run(strategy("Progressive", maxFailures="3", progressDeadline="x"), SIX, [])


def test_progressive_invalid_max_concurrency_is_only_noticed_after_the_mandatory_phase() -> None:
    strat = strategy("Progressive", maxConcurrency="abc%", mandatoryDecisionGroups=[{"groupIndex": 0}])
    result = run(strat, SIX, [])
    assert names(result.clusters_to_rollout) == ["cluster1", "cluster2"]
    done = [status("cluster1", "Succeeded", 10), status("cluster2", "Succeeded", 10)]
    with pytest.raises(ThresholdError) as e:
        run(strat, SIX, done)
    assert (
        str(e.value)
        == 'failed to parse the provided maxConcurrency: strconv.ParseFloat: parsing "abc": invalid syntax'
    )


def test_progressive_with_no_cluster_outside_mandatory_groups_stops_at_the_first_status() -> None:
    # Zero slots: the scan returns after the first status it sees.
    decision = groups(("m", 0, ["a", "b"]))
    statuses = [status("b", "TimeOut", 1), status("a", "Succeeded", 1)]
    strat = strategy("Progressive", maxFailures=0, mandatoryDecisionGroups=[{"groupName": "m"}])
    result = run(strat, decision, statuses)
    assert result.clusters_to_rollout == () and result.max_failure_breach is False


# --- mandatory groups --------------------------------------------------------------------------


def test_worked_example_mandatory_group_done_then_max_concurrency() -> None:
    strat = strategy(
        "Progressive",
        minSuccessTime="0s",
        maxFailures=0,
        mandatoryDecisionGroups=[{"groupName": "group1"}],
        maxConcurrency=3,
    )
    statuses = [
        status("cluster1", "Succeeded", 60, ("group1", 0)),
        status("cluster2", "Succeeded", 120, ("group1", 0)),
    ]
    result = run(strat, SIX, statuses)
    assert [(s.cluster_name, s.group_key, s.status) for s in result.clusters_to_rollout] == [
        ("cluster3", GroupKey("", 1), RolloutStatus.TO_APPLY),
        ("cluster4", GroupKey("", 1), RolloutStatus.TO_APPLY),
        ("cluster5", GroupKey("", 2), RolloutStatus.TO_APPLY),
    ]
    assert all(s.last_transition_time is None and s.recheck_time is None for s in result.clusters_to_rollout)
    assert not result.max_failure_breach and result.recheck_after is None


def test_worked_example_timed_out_cluster_in_the_mandatory_group() -> None:
    decision = groups(
        ("group1", 0, ["cluster1", "cluster2", "cluster3"]), ("", 1, ["cluster4", "cluster5", "cluster6"])
    )
    strat = strategy(
        "Progressive",
        minSuccessTime="0s",
        progressDeadline="90s",
        maxFailures=0,
        mandatoryDecisionGroups=[{"groupName": "group1"}],
        maxConcurrency=3,
    )
    statuses = [
        status("cluster1", "Succeeded", 60, ("group1", 0)),
        status("cluster2", "Failed", 120, ("group1", 0)),
        status("cluster3", "Progressing", 60, ("group1", 0)),
    ]
    result = run(strat, decision, statuses)
    assert [(s.cluster_name, s.status, s.recheck_time) for s in result.clusters_to_rollout] == [
        ("cluster3", RolloutStatus.PROGRESSING, at(30))
    ]
    assert [(s.cluster_name, s.status, s.recheck_time) for s in result.clusters_timeout] == [
        ("cluster2", RolloutStatus.TIME_OUT, at(-30))
    ]
    assert result.clusters_removed == ()
    assert result.max_failure_breach is True
    assert result.recheck_after_nanos == 30 * SECOND


def test_mandatory_phase_is_unfinished_while_any_cluster_rolls_out_even_outside_it() -> None:
    statuses = [
        status("cluster1", "Succeeded", 10),
        status("cluster2", "Succeeded", 10),
        status("cluster5", "Progressing", 10),
    ]
    strat = strategy("Progressive", maxConcurrency=3, mandatoryDecisionGroups=[{"groupName": "group1"}])
    assert names(run(strat, SIX, statuses).clusters_to_rollout) == ["cluster5"]


def test_mandatory_cluster_already_timed_out_does_not_hold_the_phase() -> None:
    statuses = [status("cluster1", "TimeOut", 10), status("cluster2", "Succeeded", 10)]
    strat = strategy(
        "Progressive", maxConcurrency=2, maxFailures=1, mandatoryDecisionGroups=[{"groupName": "group1"}]
    )
    result = run(strat, SIX, statuses)
    assert names(result.clusters_to_rollout) == ["cluster3", "cluster4"]


def test_mandatory_groups_tolerate_no_failure_whatever_max_failures_says() -> None:
    statuses = [status("cluster1", "Failed", 10)]
    strat = strategy("Progressive", maxFailures="100%", mandatoryDecisionGroups=[{"groupIndex": 0}])
    result = run(strat, SIX, statuses)
    assert result.max_failure_breach is True
    assert brief(result.clusters_to_rollout) == [("cluster1", "Failed"), ("cluster2", "ToApply")]


def test_mandatory_reference_to_an_empty_group_still_runs_the_phase() -> None:
    decision = groups(("m", 0, []), ("", 1, ["a", "b"]))
    statuses = [status("a", "Progressing", 1)]
    strat = strategy("Progressive", maxConcurrency=2, mandatoryDecisionGroups=[{"groupName": "m"}])
    # The phase runs (over no clusters) and stops on `a`, so `b` is not added.
    assert names(run(strat, decision, statuses).clusters_to_rollout) == ["a"]
    unreferenced = strategy("Progressive", maxConcurrency=2)
    assert names(run(unreferenced, decision, statuses).clusters_to_rollout) == ["a", "b"]


def test_mandatory_reference_to_no_group_is_ignored() -> None:
    strat = strategy("Progressive", maxConcurrency=1, mandatoryDecisionGroups=[{"groupName": "nope"}])
    assert names(run(strat, SIX, []).clusters_to_rollout) == ["cluster1"]


def test_mandatory_reference_by_name_covers_every_group_of_that_name() -> None:
    decision = groups(("canary", 0, ["a"]), ("", 1, ["b"]), ("canary", 2, ["c"]))
    strat = strategy("ProgressivePerGroup", mandatoryDecisionGroups=[{"groupName": "canary"}])
    done_a = [status("a", "Succeeded", 1)]
    assert names(run(strat, decision, done_a).clusters_to_rollout) == ["c"]


# --- ProgressivePerGroup -----------------------------------------------------------------------


def test_per_group_rolls_out_one_group_at_a_time_in_index_order() -> None:
    result = run(strategy("ProgressivePerGroup"), SIX, [])
    assert [(s.cluster_name, s.group_key) for s in result.clusters_to_rollout] == [
        ("cluster1", GroupKey("group1", 0)),
        ("cluster2", GroupKey("group1", 0)),
    ]


def test_per_group_moves_on_when_a_group_is_done() -> None:
    statuses = [status("cluster1", "Succeeded", 1), status("cluster2", "Skip", 1)]
    assert names(run(strategy("ProgressivePerGroup"), SIX, statuses).clusters_to_rollout) == [
        "cluster3",
        "cluster4",
    ]


def test_per_group_rebuilds_to_apply_from_the_groups() -> None:
    own = status("cluster2", "ToApply", 5, group=("elsewhere", 7))
    result = run(strategy("ProgressivePerGroup"), SIX, [own])
    assert [(s.cluster_name, s.group_key, s.last_transition_time) for s in result.clusters_to_rollout] == [
        ("cluster1", GroupKey("group1", 0), None),
        ("cluster2", GroupKey("group1", 0), None),
    ]


def test_per_group_lists_existing_statuses_in_input_order_then_new_clusters() -> None:
    statuses = [status("cluster2", "Progressing", 1), status("cluster1", "Progressing", 1)]
    decision = groups(("g", 0, ["cluster1", "cluster2", "cluster3"]))
    assert names(run(strategy("ProgressivePerGroup"), decision, statuses).clusters_to_rollout) == [
        "cluster2",
        "cluster1",
        "cluster3",
    ]


def test_per_group_progressing_cluster_in_a_later_group_stops_progress_after_group_zero() -> None:
    statuses = [
        status("cluster1", "Succeeded", 1),
        status("cluster2", "Succeeded", 1),
        status("cluster5", "Progressing", 1),
    ]
    result = run(strategy("ProgressivePerGroup"), SIX, statuses)
    assert names(result.clusters_to_rollout) == ["cluster5"]


def test_per_group_earlier_input_timeout_offsets_a_later_progressing_cluster() -> None:
    decision = groups(("", 0, ["a", "b"]), ("", 1, ["c", "d"]))
    strat = strategy("ProgressivePerGroup", maxFailures="100%")
    with_timeout = [status("a", "TimeOut", 1), status("b", "Succeeded", 1), status("c", "Progressing", 1)]
    assert names(run(strat, decision, with_timeout).clusters_to_rollout) == ["c", "d"]
    without = [status("a", "Succeeded", 1), status("b", "Succeeded", 1), status("c", "Progressing", 1)]
    assert names(run(strat, decision, without).clusters_to_rollout) == ["c"]


def test_per_group_breach_still_lists_the_rest_of_the_breaching_group() -> None:
    decision = groups(("", 0, ["a", "b", "c"]), ("", 1, ["d"]))
    result = run(strategy("ProgressivePerGroup", maxFailures=0), decision, [status("a", "Failed", 1)])
    assert result.max_failure_breach is True
    assert brief(result.clusters_to_rollout) == [("a", "Failed"), ("b", "ToApply"), ("c", "ToApply")]


def test_per_group_max_failures_percent_is_over_the_groups_size() -> None:
    decision = groups(("", 0, ["a", "b", "c", "d"]), ("", 1, ["e"]))
    strat = strategy("ProgressivePerGroup", maxFailures="50%", progressDeadline="1s")
    two = [
        status("a", "Failed", 5),
        status("b", "Failed", 5),
        status("c", "Succeeded", 5),
        status("d", "Succeeded", 5),
    ]
    result = run(strat, decision, two)
    assert result.max_failure_breach is False and names(result.clusters_to_rollout) == ["e"]
    three = [*two[:2], status("c", "Failed", 5), status("d", "Succeeded", 5)]
    assert run(strat, decision, three).max_failure_breach is True


def test_per_group_max_failures_above_the_group_size_falls_back_to_zero() -> None:
    decision = groups(("", 0, ["a", "b"]), ("", 1, ["c"]))
    result = run(
        strategy("ProgressivePerGroup", maxFailures=3, progressDeadline="1s"),
        decision,
        [status("a", "Failed", 5)],
    )
    assert result.max_failure_breach is True


def test_per_group_checks_max_failures_before_anything_else_but_the_deadline() -> None:
    with pytest.raises(ThresholdError, match=r"^failed to parse the provided maxFailures: 'x' is an invalid"):
        run(strategy("ProgressivePerGroup", maxFailures="x"), SIX, [])
    with pytest.raises(DurationError):
        run(strategy("ProgressivePerGroup", maxFailures="x", progressDeadline="bad"), SIX, [])


def test_per_group_with_every_group_done_rolls_out_nothing() -> None:
    statuses = [status(f"cluster{i}", "Succeeded", 1) for i in range(1, 7)]
    result = run(strategy("ProgressivePerGroup"), SIX, statuses)
    assert (
        result.clusters_to_rollout == () and result.clusters_timeout == () and not result.max_failure_breach
    )


def test_per_group_soaking_clusters_hold_the_group_and_set_the_recheck() -> None:
    statuses = [status("cluster1", "Succeeded", 20), status("cluster2", "Succeeded", 50)]
    result = run(strategy("ProgressivePerGroup", minSuccessTime="1m"), SIX, statuses)
    assert names(result.clusters_to_rollout) == ["cluster1", "cluster2"]
    assert result.recheck_after_nanos == 10 * SECOND


# --- removed clusters and recheck --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["All", "Progressive", "ProgressivePerGroup"])
def test_statuses_of_clusters_in_no_group_are_removed_in_input_order_as_they_were(kind: str) -> None:
    gone = [status("zz", "Succeeded", 5, ("old", 3)), status("", "Progressing", 1), status("aa", "Failed", 1)]
    result = run(strategy(kind), SIX, [gone[0], status("cluster1", "Progressing", 1), gone[1], gone[2]])
    assert result.clusters_removed == tuple(gone)


def test_removed_clusters_are_reported_from_the_mandatory_phase_too() -> None:
    strat = strategy("Progressive", mandatoryDecisionGroups=[{"groupName": "group1"}])
    result = run(strat, SIX, [status("gone", "Succeeded", 1)])
    assert names(result.clusters_removed) == ["gone"]
    assert names(result.clusters_to_rollout) == ["cluster1", "cluster2"]


def test_clusters_of_groups_past_an_index_gap_count_as_removed() -> None:
    decision = groups(("", 0, ["a"]), ("", 2, ["b"]))
    result = run(strategy("All"), decision, [status("b", "Progressing", 1)])
    assert names(result.clusters_removed) == ["b"]
    assert names(result.clusters_to_rollout) == ["a"]


def test_recheck_after_ignores_timed_out_clusters() -> None:
    statuses = [status("cluster1", "Progressing", 100), status("cluster2", "Progressing", 30)]
    result = run(strategy("All", progressDeadline="90s"), SIX, statuses)
    assert result.recheck_after_nanos == 60 * SECOND
    assert result.recheck_after is not None and result.recheck_after.total_seconds() == 60


def test_recheck_after_keeps_nanoseconds() -> None:
    result = run(strategy("All", progressDeadline="1s5ns"), SIX, [status("cluster1", "Progressing", None)])
    assert result.recheck_after_nanos == SECOND + 5
    assert result.recheck_after_seconds == 1.000000005


def test_now_may_be_a_datetime() -> None:
    result = run(strategy("All", progressDeadline="90s"), SIX, [status("cluster1", "Progressing", 0)], NOW)
    from fleetplace.shared.rollout import rollout

    same = rollout(
        strategy("All", progressDeadline="90s"),
        SIX,
        [status("cluster1", "Progressing", 0)],
        NOW.to_datetime(),
    )
    assert same == result


@pytest.mark.parametrize("kind", ["All", "Progressive", "ProgressivePerGroup"])
def test_status_with_an_empty_cluster_name_is_removed_even_when_a_group_lists_an_empty_name(
    kind: str,
) -> None:
    decision = groups(("", 0, ["", "cluster1"]))
    nameless = status("", "Progressing", 1)
    result = run(strategy(kind), decision, [nameless, status("cluster1", "Succeeded", 1)])
    assert result.clusters_removed == (nameless,)
    # The group's empty name is still a cluster without a status, so it is listed as new.
    assert brief(result.clusters_to_rollout) == [("", "ToApply")]
