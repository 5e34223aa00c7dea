"""AddOn prioritizer: a score published by an add-on in AddOnPlacementScore (spec §5.5)."""

from __future__ import annotations

import numpy as np

from fleetplace.shared.placement.framework import Code, IntArray, ScheduleContext, ScoreResult, Status


class AddOnScore:
    placement_independent = True  # the same scores for every placement with these clusters

    def __init__(self, resource: str, score_name: str) -> None:
        self.resource = resource
        self.score_name = score_name
        self.name = f"AddOn/{resource}/{score_name}"

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        col = ctx.fleet.score_column(self.resource, self.score_name)
        if not col.expires:
            return ScoreResult(col.values[slots])
        expired = col.present[slots] & (ctx.now_ts > col.valid_until[slots])  # strictly after
        scores = np.where(expired, 0, col.values[slots]).astype(np.int64)
        if not expired.any():
            return ScoreResult(scores)
        # candidate-list order is name order here (spec §5.5 lists them in candidate order)
        names = sorted(ctx.fleet.name_of(int(s)) for s in slots[expired])
        message = "AddOnPlacementScores " + " ".join(f"{n}/{self.resource}" for n in names) + " expired"
        return ScoreResult(scores, status=Status(Code.WARNING, self.name, message))
