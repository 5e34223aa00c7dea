"""AddOn prioritizer: a score an add-on published in an AddOnPlacementScore.

A cluster's score is the named item of its AddOnPlacementScore for the resource (0 without one).
A score whose `validUntil` has passed (strictly) counts 0 and the run warns about it; the
placement runs again just after the next `validUntil` among its post-filter clusters (fleetplace
arms that timer; OCM catches it on its periodic resync only).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np

from fleetplace.shared.placement.framework import (
    Code,
    IntArray,
    PlacementIndependent,
    Requeue,
    ScheduleContext,
    ScoreResult,
    SharedScores,
    Status,
)
from fleetplace.shared.placement.reads import Reads


class AddOnScore:
    def __init__(self, resource: str, score_name: str) -> None:
        self.resource = resource
        self.score_name = score_name
        self.name = f"AddOn/{resource}/{score_name}"
        self.reads = Reads(addon_resources=frozenset({resource}))

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        col = ctx.fleet.score_column(self.resource, self.score_name)
        if not col.expires:
            return ScoreResult(col.values[slots])
        expired = col.present[slots] & (ctx.now_ts > col.valid_until[slots])  # strictly after
        scores = np.where(expired, 0, col.values[slots]).astype(np.int64)
        if not expired.any():
            return ScoreResult(scores)
        # the expired clusters are listed in name order (the candidates' order)
        names = sorted(ctx.fleet.name_of(int(s)) for s in slots[expired])
        message = "AddOnPlacementScores " + " ".join(f"{n}/{self.resource}" for n in names) + " expired"
        return ScoreResult(scores, status=Status(Code.WARNING, self.name, message))

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        """Just past the next `validUntil` among the post-filter clusters (strictly after it the
        score counts as expired)."""
        col = ctx.fleet.score_column(self.resource, self.score_name)
        if not col.expires or not len(slots):
            return None
        until = col.valid_until[slots]
        upcoming = until[(until >= ctx.now_ts) & np.isfinite(until)]
        if not len(upcoming):
            return None
        at = datetime.fromtimestamp(float(upcoming.min()) + 0.001, UTC)
        return Requeue(at, "score-expired", reported=False)

    def shared(self) -> SharedScores | None:
        return PlacementIndependent(self)  # the same scores for every placement with these clusters
