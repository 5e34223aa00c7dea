"""The score worker's state without I/O: schedule, stale outcomes, status."""

from __future__ import annotations

from datetime import UTC, datetime

from fleetplace.services.scores.core import ScoreSources
from fleetplace.services.scores.prometheus import Evaluation
from fleetplace.shared.scoring import EvaluationError, Reason
from tests.scoring.builders import source

NOW = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)


def test_a_source_is_due_at_once_then_every_interval_from_its_start() -> None:
    table = ScoreSources()
    src = source(interval="30s")
    assert table.put(src, partition=0, now=100.0)
    assert not table.put(src, partition=0, now=101.0)  # the same version again: nothing new
    (state,) = table.start_due(100.0)
    assert table.start_due(100.0) == []  # running: not started twice
    assert state.due == 130.0
    table.finish(Evaluation(src, NOW, {"c1": 1.0}, {"c1": -97}), state.generation, "w")
    assert table.start_due(129.9) == [] and table.start_due(130.0) == [state]


def test_an_outcome_of_a_replaced_or_deleted_source_is_dropped() -> None:
    table = ScoreSources()
    old = source(interval="30s")
    table.put(old, 0, 0.0)
    (state,) = table.start_due(0.0)
    table.put(source(interval="1m"), 0, 1.0)  # a new version while the old one is evaluated
    assert table.finish(Evaluation(old, NOW, {"c1": 1.0}, {"c1": -97}), state.generation, "w") is None
    assert table.published == {}
    (fresh,) = table.start_due(1.0)
    table.remove(old.key)
    assert table.finish(Evaluation(old, NOW), fresh.generation, "w") is None


def test_an_evaluation_that_ended_without_an_outcome_is_retried_at_the_next_time() -> None:
    table = ScoreSources()
    table.put(source(interval="30s"), 0, 0.0)
    (state,) = table.start_due(0.0)
    table.release(state.source.key, state.generation)
    assert table.start_due(29.0) == [] and table.start_due(30.0) == [state]


def test_the_status_keeps_the_last_error_and_the_last_success() -> None:
    table = ScoreSources()
    src = source(interval="30s")
    table.put(src, 0, 0.0)
    (state,) = table.start_due(0.0)
    ok = table.finish(Evaluation(src, NOW, {"a": 1.0, "b": 2.0}, {"a": -97, "b": -94}), state.generation, "w")
    assert ok is not None and ok.status.healthy and ok.status.clusters_scored == 2 and len(ok.scores) == 2
    (state,) = table.start_due(30.0)
    failed = table.finish(
        Evaluation(src, NOW, error=EvaluationError(Reason.TIMEOUT, "slow")), state.generation, "w"
    )
    assert failed is not None and failed.scores == []
    status = failed.status
    assert (status.healthy, status.clusters_scored, status.last_success_at) == (
        False,
        2,
        ok.status.evaluated_at,
    )
    assert status.last_error is not None and (status.last_error.reason, status.last_error.message) == (
        "timeout",
        "slow",
    )
