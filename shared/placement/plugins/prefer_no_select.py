"""TaintToleration as a prioritizer: the optional PreferNoSelect penalty (docs/beyond-ocm.md).

Off by default (OCM never penalises PreferNoSelect). When on, a cluster carrying a PreferNoSelect
taint that no toleration matches (with the same matching and expiry rules as the filter) scores
-100, every other cluster 0.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fleetplace.shared.placement.framework import (
    IntArray,
    Requeue,
    ScheduleContext,
    ScoreResult,
    SharedScores,
)
from fleetplace.shared.placement.plugins.taints import matched_by_toleration
from fleetplace.shared.placement.reads import NOTHING


class PreferNoSelectPenalty:
    name = "TaintToleration"
    reads = NOTHING  # taints, which every placement reads

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        fleet = ctx.fleet
        scores = np.zeros(len(slots), dtype=np.int64)
        tainted = fleet.tainted[slots]
        if not tainted.any():
            return ScoreResult(scores)
        tolerations = ctx.placement.spec.tolerations
        for i in np.flatnonzero(tainted).tolist():
            info = fleet.clusters[fleet.name_of(int(slots[i]))]
            for taint in info.taints:
                if (
                    taint.effect == "PreferNoSelect"
                    and not matched_by_toleration(taint, tolerations, ctx.now)[0]
                ):
                    scores[i] = -100
                    break
        return ScoreResult(scores)

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        return None

    def shared(self) -> SharedScores | None:
        return None  # depends on the placement's tolerations: scored one placement at a time
