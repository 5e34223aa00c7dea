"""Balance: prefer clusters carrying fewer decisions of *other* placements.

A cluster's score is 2 × trunc(100 × (0.5 − count / top)), where `count` is how many decisions
name it, this placement's own taken out, and `top` the highest such count of other placements'
decisions over all clusters; a cluster nobody else decided scores 100.
"""

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
from fleetplace.shared.placement.reads import Reads

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
    reads = Reads(other_decisions=True)

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

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        return None

    def shared(self) -> SharedScores | None:
        return SHARED_BALANCE


class SharedBalance:
    """Balance at the global counts is the same for every placement normalised by the same `top`;
    a placement's own clusters are then scored with its own decisions taken out."""

    def key(self, ctx: ScheduleContext) -> Hashable:
        return ctx.fleet.decisions.max_count_excluding(ctx.own)

    def version(self, fleet: Fleet) -> int:
        return fleet.decisions.version

    def base(self, ctx: ScheduleContext, slots: IntArray, key: Hashable) -> ScoreResult:
        assert isinstance(key, int)
        return ScoreResult(balance_scores(ctx.fleet.decision_counts()[slots], key))

    def rebased(self, fleet: Fleet, key: Hashable, since: int) -> dict[str, int] | None:
        assert isinstance(key, int)
        names = fleet.decisions.changed_since(since)
        if names is None:
            return None
        counts = fleet.decisions.total  # a name's count over all sources
        return {name: balance_score(counts.get(name, 0), key) for name in names}

    def patch(self, ctx: ScheduleContext, key: Hashable, own: Sequence[str]) -> list[int] | None:
        assert isinstance(key, int)
        counts = ctx.fleet.decisions.total
        return [balance_score(counts[name] - ctx.own[name], key) for name in own]


SHARED_BALANCE = SharedBalance()  # it holds nothing: one for every plan
