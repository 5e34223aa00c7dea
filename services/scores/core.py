"""The score worker's state, with no I/O: the sources an instance owns, when each is due, where
each stands, and what the scores topic holds.

`ScoreSources.finish` turns one evaluation into the records to publish — the AddOnPlacementScores
`plan_scores` keeps (changes and refreshes only) and the source's status record — or into
nothing when the source changed or went away while it was being evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from fleetplace.services.scores.prometheus import Evaluation
from fleetplace.shared.api.score_sources import ScoreSource, ScoreSourceStatus, SourceError
from fleetplace.shared.bus.envelope import format_time
from fleetplace.shared.scoring import PublishedScore, ScoreRecord, plan_scores, published_score

__all__ = ["Finished", "ScoreSources", "SourceState"]


@dataclass
class SourceState:
    """One owned source: its object, the partition it was read from, a generation that changes
    with every new version, when it is due (monotonic seconds), and its last outcomes."""

    source: ScoreSource
    partition: int
    generation: int
    due: float
    running: bool = False
    last_success_at: str | None = None
    last_error: SourceError | None = None
    clusters_scored: int = 0


@dataclass(frozen=True)
class Finished:
    """What one evaluation publishes: scores (maybe none) and the status record."""

    key: str
    scores: list[ScoreRecord]
    status: ScoreSourceStatus


class ScoreSources:
    def __init__(self) -> None:
        self.sources: dict[str, SourceState] = {}
        self.published: dict[str, PublishedScore] = {}  # the scores topic, by key
        self._generation = 0

    # ---- the sources ------------------------------------------------------------------------
    def put(self, source: ScoreSource, partition: int, now: float) -> bool:
        """A source read from `score-sources`; a new or changed one is due at once. True when it
        is new or changed."""
        held = self.sources.get(source.key)
        if held is not None and held.source == source:
            held.partition = partition
            return False
        self._generation += 1
        state = SourceState(source, partition, self._generation, due=now)
        if held is not None:  # a new version keeps what the old one did, for the status
            state.last_success_at, state.last_error = held.last_success_at, held.last_error
            state.clusters_scored = held.clusters_scored
        self.sources[source.key] = state
        return True

    def remove(self, key: str) -> bool:
        return self.sources.pop(key, None) is not None

    def forget_partitions(self, partitions: Iterable[int]) -> list[str]:
        """Drop the sources of partitions this instance no longer owns; their keys."""
        gone = set(partitions)
        keys = [k for k, s in self.sources.items() if s.partition in gone]
        for key in keys:
            del self.sources[key]
        return keys

    def start_due(self, now: float) -> list[SourceState]:
        """The sources due at `now` and not being evaluated, marked running; each is next due one
        interval after this start, so evaluations keep their period whatever a query takes."""
        started = []
        for state in self.sources.values():
            if not state.running and state.due <= now:
                state.running = True
                state.due = now + state.source.spec.interval_s
                started.append(state)
        return started

    def release(self, key: str, generation: int) -> None:
        """An evaluation that ended without an outcome: the source is due again at its next time."""
        state = self.sources.get(key)
        if state is not None and state.generation == generation:
            state.running = False

    def next_due(self) -> float | None:
        waiting = [s.due for s in self.sources.values() if not s.running]
        return min(waiting) if waiting else None

    # ---- the scores topic -------------------------------------------------------------------
    def observe_score(self, key: str, value: Mapping[str, Any] | None) -> None:
        held = published_score(value)
        if held is None:
            self.published.pop(key, None)
        else:
            self.published[key] = held

    # ---- an evaluation's outcome ------------------------------------------------------------
    def finish(self, evaluation: Evaluation, generation: int, instance: str) -> Finished | None:
        """The records of a finished evaluation, or None when its source changed or went away
        meanwhile (the new version is evaluated on its own)."""
        key = evaluation.source.key
        state = self.sources.get(key)
        if state is None or state.generation != generation:
            return None
        state.running = False
        at = format_time(evaluation.at)
        records: list[ScoreRecord] = []
        if evaluation.error is not None:
            state.last_error = SourceError(
                at=at, reason=evaluation.error.reason.value, message=evaluation.error.message
            )
        else:
            records = plan_scores(state.source, evaluation.scores, self.published, evaluation.at)
            for record in records:  # what the topic will hold once our records are read back
                self.published[record.key] = record.published
            state.last_success_at = at
            state.clusters_scored = len(evaluation.scores)
        status = ScoreSourceStatus(
            source=key,
            instance=instance,
            evaluated_at=at,
            last_success_at=state.last_success_at,
            last_error=state.last_error,
            healthy=evaluation.error is None,
            clusters_scored=state.clusters_scored,
            published=len(records),
            skipped=dict(evaluation.skipped),
            next_evaluation_at=format_time(evaluation.at + timedelta(seconds=state.source.spec.interval_s)),
        )
        return Finished(key, records, status)


def status_value(status: ScoreSourceStatus) -> dict[str, Any]:
    return status.model_dump(mode="json", by_alias=True)
