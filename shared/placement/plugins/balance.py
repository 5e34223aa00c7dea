"""Balance: prefer clusters carrying fewer decisions of *other* placements (spec §5.2)."""

from __future__ import annotations

import numpy as np

from fleetplace.shared.placement.framework import IntArray, ScheduleContext, ScoreResult

NEVER_COUNTED = 100


def balance_scores(counts: IntArray, top: int) -> IntArray:
    """Scores for decision counts (this placement's own already taken out), `top` the highest
    count of other placements' decisions."""
    if top == 0:  # nobody else decided anything: every cluster "never counted"
        return np.full(len(counts), NEVER_COUNTED, dtype=np.int64)
    usage = counts / float(top)
    # Go: 2 * int64(100 * (0.5 - usage)), truncation toward zero in doubles
    scores = 2 * (100.0 * (0.5 - usage)).astype(np.int64)
    scores[counts == 0] = NEVER_COUNTED
    return scores


def balance_score(count: int, top: int) -> int:
    """`balance_scores` of one cluster (the same doubles, truncated the same way)."""
    if top == 0 or count == 0:
        return NEVER_COUNTED
    return 2 * int(100.0 * (0.5 - count / float(top)))


class Balance:
    name = "Balance"

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        fleet = ctx.fleet
        counts = fleet.decision_counts()
        top = fleet.decisions.max_count_excluding(ctx.own)
        if top and ctx.own:  # this placement's own decisions do not count against it
            counts = counts.copy()
            for name, k in ctx.own.items():
                slot = fleet.slot_of(name)
                if slot is not None:
                    counts[slot] -= k
        return ScoreResult(balance_scores(counts[slots], top))
