"""Steady: keep what this placement already decided (100 for each such cluster, 0 for the others)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.framework import (
    IntArray,
    Requeue,
    ScheduleContext,
    ScoreResult,
    SharedScores,
)
from fleetplace.shared.placement.reads import NOTHING

STEADY_SCORE = 100  # for each cluster this placement already decided, 0 for the others


class Steady:
    name = "Steady"
    reads = NOTHING  # the placement's own decisions only

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        scores = np.zeros(len(slots), dtype=np.int64)
        for name in ctx.own:
            slot = ctx.fleet.slot_of(name)
            if slot is not None:
                scores[slots == slot] = STEADY_SCORE
        return ScoreResult(scores)

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        return None

    def shared(self) -> SharedScores | None:
        return SHARED_STEADY


class SharedSteady:
    """0 for every placement's candidates, but STEADY_SCORE at its own clusters."""

    def key(self, ctx: ScheduleContext) -> Hashable:
        return 0

    def version(self, fleet: Fleet) -> int:
        return 0

    def base(self, ctx: ScheduleContext, slots: IntArray, key: Hashable) -> ScoreResult:
        return ScoreResult(np.zeros(len(slots), dtype=np.int64))

    def rebased(self, fleet: Fleet, key: Hashable, since: int) -> dict[str, int] | None:
        return {}

    def patch(self, ctx: ScheduleContext, key: Hashable, own: Sequence[str]) -> list[int] | None:
        return [STEADY_SCORE] * len(own)


SHARED_STEADY = SharedSteady()  # it holds nothing: one for every plan
