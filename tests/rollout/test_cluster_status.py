"""The per-cluster rule: rolling out, soaking, finished, timed out; strict boundaries."""

from __future__ import annotations

import pytest

from fleetplace.shared.rollout import NO_DEADLINE, RolloutStatus
from fleetplace.shared.rollout._cluster_status import Lists, assess, recheck_after

from .builders import NOW, SECOND, at, status


def _assess(
    st: str, ago: float | None, soak: int = 0, deadline: int = NO_DEADLINE
) -> tuple[Lists, RolloutStatus]:
    lists = Lists()
    out = assess(status("c1", st, ago), soak, deadline, NOW, lists)
    return lists, out.status


def test_to_apply_is_rolled_out_as_is() -> None:
    lists, _ = _assess("ToApply", 10)
    assert lists.to_rollout == [status("c1", "ToApply", 10)]


def test_succeeded_soaking_is_rolled_out_with_the_soak_end_as_recheck_time() -> None:
    lists, _ = _assess("Succeeded", 30, soak=60 * SECOND)
    assert [s.recheck_time for s in lists.to_rollout] == [at(30)]


def test_succeeded_exactly_at_the_soak_end_is_done() -> None:
    lists, _ = _assess("Succeeded", 60, soak=60 * SECOND)
    assert lists.to_rollout == [] and lists.timed_out == []


def test_succeeded_without_transition_time_soaks_from_now() -> None:
    lists, _ = _assess("Succeeded", None, soak=60 * SECOND)
    assert [s.recheck_time for s in lists.to_rollout] == [at(60)]


def test_succeeded_with_zero_soak_is_done() -> None:
    lists, _ = _assess("Succeeded", 1, soak=0)
    assert lists.to_rollout == []


def test_negative_soak_never_holds_a_cluster() -> None:
    lists, _ = _assess("Succeeded", None, soak=-60 * SECOND)
    assert lists.to_rollout == []


def test_future_transition_time_holds_a_succeeded_cluster_even_without_soak() -> None:
    lists, _ = _assess("Succeeded", -5, soak=0)
    assert [s.recheck_time for s in lists.to_rollout] == [at(5)]


@pytest.mark.parametrize("state", ["TimeOut", "Skip"])
def test_timeout_and_skip_are_left_alone(state: str) -> None:
    lists, out = _assess(state, 1000, deadline=1)
    assert lists.to_rollout == [] and lists.timed_out == [] and out.value == state


@pytest.mark.parametrize("state", ["Progressing", "Failed"])
def test_without_deadline_rolling_clusters_stay_with_no_recheck_time(state: str) -> None:
    lists, _ = _assess(state, 10**6)
    assert [(s.status.value, s.recheck_time) for s in lists.to_rollout] == [(state, None)]


@pytest.mark.parametrize("state", ["Progressing", "Failed"])
def test_before_the_deadline_rolling_clusters_stay_with_the_deadline_as_recheck_time(state: str) -> None:
    lists, _ = _assess(state, 60, deadline=90 * SECOND)
    assert [s.recheck_time for s in lists.to_rollout] == [at(30)]


def test_exactly_at_the_deadline_is_timed_out() -> None:
    lists, out = _assess("Progressing", 90, deadline=90 * SECOND)
    assert out is RolloutStatus.TIME_OUT
    assert [(s.status, s.recheck_time) for s in lists.timed_out] == [(RolloutStatus.TIME_OUT, NOW)]


def test_missing_transition_time_counts_the_deadline_from_now() -> None:
    lists, _ = _assess("Failed", None, deadline=0)
    assert [s.status for s in lists.timed_out] == [RolloutStatus.TIME_OUT]


def test_future_transition_time_holds_a_cluster_even_with_a_zero_deadline() -> None:
    lists, _ = _assess("Progressing", -1, deadline=0)
    assert [s.recheck_time for s in lists.to_rollout] == [at(1)]


def test_recheck_after_is_the_nearest_future_recheck_time() -> None:
    lists = Lists()
    assess(status("a", "Progressing", 10), 0, 100 * SECOND, NOW, lists)
    assess(status("b", "Progressing", 50), 0, 100 * SECOND, NOW, lists)
    assess(status("c", "Progressing", None), 0, NO_DEADLINE, NOW, lists)
    assert recheck_after(lists.to_rollout, NOW) == 50 * SECOND


def test_recheck_after_is_none_without_future_recheck_times() -> None:
    lists = Lists()
    assess(status("a", "Progressing", 200), 0, 100 * SECOND, NOW, lists)
    assert lists.timed_out and recheck_after(lists.to_rollout, NOW) is None
