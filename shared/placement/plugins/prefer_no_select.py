"""TaintToleration as a prioritizer: the optional PreferNoSelect penalty (docs/beyond-ocm.md).

Off by default (OCM never penalises PreferNoSelect). When on, a cluster carrying a PreferNoSelect
taint that no toleration matches (with the same matching and expiry rules as the filter) scores
-100, every other cluster 0.
"""

from __future__ import annotations

import numpy as np

from fleetplace.shared.placement.framework import IntArray, ScheduleContext, ScoreResult
from fleetplace.shared.placement.plugins.taints import matched_by_toleration


class PreferNoSelectPenalty:
    name = "TaintToleration"

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
