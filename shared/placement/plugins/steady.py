"""Steady: keep what this placement already decided (spec §5.3)."""

from __future__ import annotations

import numpy as np

from fleetplace.shared.placement.framework import IntArray, ScheduleContext, ScoreResult

STEADY_SCORE = 100  # for each cluster this placement already decided, 0 for the others


class Steady:
    name = "Steady"

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        scores = np.zeros(len(slots), dtype=np.int64)
        for name in ctx.own:
            slot = ctx.fleet.slot_of(name)
            if slot is not None:
                scores[slots == slot] = STEADY_SCORE
        return ScoreResult(scores)
