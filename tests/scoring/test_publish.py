"""Which AddOnPlacementScores an evaluation publishes: changes and refreshes, nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.api.ocm import AddOnPlacementScore
from fleetplace.shared.scoring import PublishedScore, ScoreRecord, plan_scores, published_score, score_key
from tests.scoring.builders import source

NOW = datetime(2026, 11, 28, 10, 0, 0, 250_000, tzinfo=UTC)


def _published(records: list[ScoreRecord]) -> dict[str, PublishedScore]:
    return {r.key: p for r in records if (p := published_score(r.value)) is not None}


def test_the_record_is_the_addonplacementscore_the_scheduler_reads() -> None:
    src = source(interval="30s", valid_for="5m")
    (record,) = plan_scores(src, {"east-1": 42}, {}, NOW)
    assert record.key == "east-1/resource-usage" == score_key("east-1", "resource-usage")
    score = parse_object(record.value)
    assert isinstance(score, AddOnPlacementScore)
    assert (score.metadata.namespace, score.metadata.name) == ("east-1", "resource-usage")
    assert [(s.name, s.value) for s in score.status.scores] == [("cpuAvailable", 42)]
    # validUntil = evaluation time + validFor, in whole seconds (the fraction dropped)
    assert score.status.valid_until == datetime(2026, 11, 28, 10, 5, 0, tzinfo=UTC)
    assert record.value["metadata"]["annotations"] == {"fleetplace.dev/score-source": "scores/cpu-free"}


def test_an_unchanged_result_publishes_nothing_until_the_refresh_is_due() -> None:
    src = source(interval="30s", valid_for="5m")
    first = plan_scores(src, {"a": 1, "b": 2}, {}, NOW)
    held = _published(first)
    assert [r.cluster for r in first] == ["a", "b"]
    assert plan_scores(src, {"a": 1, "b": 2}, held, NOW + timedelta(seconds=30)) == []
    # one changed score: that cluster only
    assert [r.cluster for r in plan_scores(src, {"a": 1, "b": 3}, held, NOW + timedelta(seconds=30))] == ["b"]
    # validUntil is NOW+5m (whole seconds); the next evaluation must have interval + its 10 s
    # timeout to refresh it: due from 4m20s on, not before
    assert plan_scores(src, {"a": 1, "b": 2}, held, NOW + timedelta(seconds=259)) == []
    due = plan_scores(src, {"a": 1, "b": 2}, held, NOW + timedelta(seconds=260))
    assert [r.cluster for r in due] == ["a", "b"]


def test_a_score_someone_else_wrote_or_deleted_is_put_back() -> None:
    src = source()
    held = _published(plan_scores(src, {"a": 1, "b": 2, "c": 3}, {}, NOW))
    held["a"] = held.pop("a/resource-usage")  # unrelated key
    held["b/resource-usage"] = PublishedScore(
        {"cpuAvailable": 2, "other": 5}, held["b/resource-usage"].valid_until
    )
    held["c/resource-usage"] = PublishedScore({"cpuAvailable": 3}, None)  # no validUntil
    again = plan_scores(src, {"a": 1, "b": 2, "c": 3}, held, NOW + timedelta(seconds=1))
    assert [r.cluster for r in again] == ["a", "b", "c"]


def test_a_tombstone_reads_as_nothing_published() -> None:
    assert published_score(None) is None
