"""ResourceAllocatableCPU / ResourceAllocatableMemory: more allocatable resource scores higher.

Scores run from -100 (the least allocatable among the post-filter clusters) to 100 (the most),
linearly; equal values all score 100, and a cluster without the resource in both its allocatable
and its capacity has no score at all.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fleetplace.shared.placement.framework import (
    IntArray,
    PlacementIndependent,
    Requeue,
    ScheduleContext,
    ScoreResult,
    SharedScores,
)
from fleetplace.shared.placement.reads import Reads


class ResourceAllocatable:
    def __init__(self, resource: str) -> None:
        self.resource = resource
        self.name = "ResourceAllocatableCPU" if resource == "cpu" else "ResourceAllocatableMemory"
        self.reads = Reads(resources=frozenset({resource}))

    def score(self, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
        fleet = ctx.fleet
        values, has = (
            (fleet.cpu, fleet.cpu_has) if self.resource == "cpu" else (fleet.memory, fleet.memory_has)
        )
        v = values[slots]
        h = has[slots]
        scores = np.zeros(len(slots), dtype=np.int64)
        if not h.any():
            return ScoreResult(scores, h)  # no post-filter cluster has data: an empty score map
        lo = float(v[h].min())
        hi = float(v[h].max())
        if hi - lo != 0:
            ratio = (v - lo) / (hi - lo)
            # evaluated left to right in doubles, then truncated: 0.6 gives 19, not 20
            scores = (((ratio - 0.5) * 2.0) * 100.0).astype(np.int64)
        else:
            scores[:] = 100
        scores[~h] = 0
        return ScoreResult(scores, h)

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        return None

    def shared(self) -> SharedScores | None:
        return PlacementIndependent(self)  # the same scores for every placement with these clusters
