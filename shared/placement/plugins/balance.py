"""Balance: prefer clusters carrying fewer decisions of *other* placements (spec §5.2)."""

from __future__ import annotations

import numpy as np

from shared.placement.framework import IntArray, ScheduleContext, ScoreResult


class Balance:
    name = "Balance"

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        fleet = ctx.fleet
        counts = fleet.decision_counts()
        max_count = fleet.decisions.max_count_excluding(ctx.own)
        if max_count == 0:  # nobody else decided anything: every cluster "never counted"
            return ScoreResult(np.full(len(slots), 100, dtype=np.int64))
        if ctx.own:  # this placement's own decisions do not count against it
            counts = counts.copy()
            for name, k in ctx.own.items():
                slot = fleet.slot_of(name)
                if slot is not None:
                    counts[slot] -= k
        n = counts[slots]
        usage = n / float(max_count)
        # Go: 2 * int64(100 * (0.5 - usage)), truncation toward zero in doubles
        scores = 2 * (100.0 * (0.5 - usage)).astype(np.int64)
        scores[n == 0] = 100  # never counted
        return ScoreResult(scores)
