"""The TaintToleration filter and the requeue time it produces.

A cluster passes when each of its taints is tolerated: PreferNoSelect always is, NoSelectIfNew is
for clusters the placement already decided, any other taint needs a matching toleration that has
not expired (`timeAdded + tolerationSeconds`, strictly after now). The earliest such expiry among
the decided clusters is when the placement must run again.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta

import numpy as np

from fleetplace.shared.api.ocm import Placement, Taint, Toleration
from fleetplace.shared.placement.fleet import ClusterInfo, SharedTable
from fleetplace.shared.placement.framework import (
    BoolArray,
    Code,
    FilterResult,
    IntArray,
    Requeue,
    ScheduleContext,
    Status,
)
from fleetplace.shared.placement.reads import NOTHING, Reads

NAME = "TaintToleration"


def validate_tolerations(tolerations: Sequence[Toleration]) -> str | None:
    for t in tolerations:
        if not t.key and t.operator != "Exists":
            return "If the key is empty, operator must be Exists."
        if t.operator == "Exists" and t.value:
            return "If the operator is Exists, the value should be empty."
    return None


# a toleration's operators ("" defaults to Equal); OCM's API leaves `operator` a free string
TOLERATION_OPERATORS = ("Equal", "Exists")


def _matches(t: Toleration, taint: Taint) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    return t.operator == "Exists"  # any other operator never matches (no error)


def _deadline(taint: Taint, seconds: int) -> datetime | None:
    """timeAdded + tolerationSeconds; an absent timeAdded is Go's zero time (year 1)."""
    if taint.time_added is None:
        return None  # effectively already expired
    try:
        return taint.time_added + timedelta(seconds=seconds)
    except OverflowError:
        return datetime.max.replace(tzinfo=taint.time_added.tzinfo) if seconds > 0 else None


def taint_tolerated(
    taint: Taint, in_decision: bool, tolerations: Sequence[Toleration], now: datetime
) -> tuple[bool, datetime | None]:
    """(tolerated, requeue time this taint carries)."""
    if taint.effect == "PreferNoSelect":
        return True, None
    if taint.effect == "NoSelectIfNew" and in_decision:
        return True, None
    return matched_by_toleration(taint, tolerations, now)


def matched_by_toleration(
    taint: Taint, tolerations: Sequence[Toleration], now: datetime
) -> tuple[bool, datetime | None]:
    """The first toleration that matches and is unexpired decides."""
    for t in tolerations:
        if not _matches(t, taint):
            continue
        if t.toleration_seconds is None:
            return True, None
        deadline = _deadline(taint, t.toleration_seconds)
        if deadline is not None and now < deadline:  # expired at the deadline itself
            return True, deadline
    return False, None


def cluster_tolerated(
    info: ClusterInfo, in_decision: bool, tolerations: Sequence[Toleration], now: datetime
) -> tuple[bool, datetime | None, Taint | None]:
    """(tolerated, earliest requeue time, first untolerated taint)."""
    earliest: datetime | None = None
    for taint in info.taints:
        ok, at = taint_tolerated(taint, in_decision, tolerations, now)
        if not ok:
            return False, None, taint
        if at is not None and (earliest is None or at < earliest):
            earliest = at
    return True, earliest, None


def requeue_time(
    clusters: Mapping[str, ClusterInfo],
    own: Iterable[str],
    tolerations: Sequence[Toleration],
    now: datetime,
) -> datetime | None:
    """The earliest expiry of a toleration that a decided cluster (`own`: their names; those
    without taints may be left out) relies on, looked up among all clusters; None: none expires."""
    best: datetime | None = None
    for name in own:
        info = clusters.get(name)
        if info is None or not info.taints:
            continue
        ok, at, _ = cluster_tolerated(info, True, tolerations, now)
        if ok and at is not None and (best is None or at < best):
            best = at
    return best


class _TaintMemo:
    """What placements with the same candidates share while the fleet (and `now`) stay."""

    def __init__(self) -> None:
        # candidates' lineage -> whether a taint is on any of them
        self.any_tainted: SharedTable[bool] = SharedTable()
        # (candidates' lineage, tolerations) -> which candidates are kept, and those candidates
        self.verdicts: SharedTable[tuple[BoolArray, IntArray]] = SharedTable()


def _any_tainted(ctx: ScheduleContext, slots: IntArray) -> bool:
    """Whether a taint is on any of these candidates (every placement of a fan-out asks it of the
    same candidates)."""
    fleet = ctx.fleet
    if ctx.lineage is None:
        return bool(fleet.tainted[slots].any())
    kept = fleet.memo(_TaintMemo).any_tainted
    found = kept.find(ctx.lineage, fleet.version)
    if found is not None:
        return found
    return kept.keep(ctx.lineage, fleet.version, bool(fleet.tainted[slots].any()))


def _judge(
    ctx: ScheduleContext, slots: IntArray, tolerations: Sequence[Toleration]
) -> tuple[BoolArray, IntArray]:
    """Which of `slots` a placement with these tolerations keeps, for clusters it has not
    decided, and those candidates (read-only: shared)."""
    fleet = ctx.fleet
    keep = np.ones(len(slots), dtype=np.bool_)
    for i in fleet.tainted[slots].nonzero()[0].tolist():
        info = fleet.clusters[fleet.name_of(int(slots[i]))]
        keep[i] = cluster_tolerated(info, False, tolerations, ctx.now)[0]
    keep.setflags(write=False)
    survivors = slots[keep]
    survivors.setflags(write=False)  # shared: nobody may write into it
    return keep, survivors


def _verdicts(
    ctx: ScheduleContext, slots: IntArray, tolerations: Sequence[Toleration], tolerations_key: Hashable
) -> tuple[BoolArray, IntArray]:
    """`_judge`, once per candidate array: every placement with the same tolerations (most have
    none) gets the same answer while the fleet and `now` stay (and the survivors are one array,
    which what is computed from them can share)."""
    if ctx.lineage is None:
        return _judge(ctx, slots, tolerations)
    kept = ctx.fleet.memo(_TaintMemo).verdicts
    key = (ctx.lineage, tolerations_key)
    stamp = (ctx.fleet.version, ctx.now_ts)
    found = kept.find(key, stamp)
    return found if found is not None else kept.keep(key, stamp, _judge(ctx, slots, tolerations))


def _tolerations_key(tolerations: Sequence[Toleration]) -> tuple[tuple[object, ...], ...]:
    return tuple((t.key, t.operator, t.value, t.effect, t.toleration_seconds) for t in tolerations)


class TaintTolerationFilter:
    name = NAME

    def filter(self, ctx: ScheduleContext, slots: IntArray) -> FilterResult:
        if len(slots) == 0:
            return FilterResult(slots)
        tolerations = ctx.placement.spec.tolerations
        problem = validate_tolerations(tolerations)
        if problem is not None:
            return FilterResult(slots[:0], Status(Code.MISCONFIGURED, NAME, problem))
        fleet = ctx.fleet
        if not _any_tainted(ctx, slots):
            return FilterResult(slots)
        tolerations_key = _tolerations_key(tolerations)
        keep, survivors = _verdicts(ctx, slots, tolerations, tolerations_key)
        # NoSelectIfNew spares the clusters this placement already decided: its own tainted
        # candidates are judged as such (a few at most)
        own_tainted = [
            slot
            for name in fleet.tainted_names.intersection(ctx.own)
            if (slot := fleet.slot_of(name)) is not None
        ]
        if not own_tainted:  # the same array for every placement judged alike
            lineage = (
                None
                if ctx.lineage is None
                else (ctx.lineage, NAME, tolerations_key, ctx.now_ts)  # expiries move with now
            )
            return FilterResult(survivors, lineage=lineage)
        keep = keep.copy()
        for slot in own_tainted:
            for i in np.flatnonzero(slots == slot).tolist():
                info = fleet.clusters[fleet.name_of(slot)]
                keep[i] = cluster_tolerated(info, True, tolerations, ctx.now)[0]
        return FilterResult(slots[keep])

    def reason(self, ctx: ScheduleContext, cluster: str) -> str | None:
        info = ctx.fleet.clusters[cluster]
        ok, _, taint = cluster_tolerated(info, cluster in ctx.own, ctx.placement.spec.tolerations, ctx.now)
        if ok or taint is None:
            return None
        value = f"={taint.value}" if taint.value else ""
        return f"taint {taint.key}{value}:{taint.effect} is not tolerated"

    def reads(self, placement: Placement) -> Reads:
        return NOTHING  # taints, which every placement reads

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        fleet = ctx.fleet
        if not fleet.tainted_names:
            return None
        at = requeue_time(
            fleet.clusters, fleet.tainted_names.intersection(decided), ctx.placement.spec.tolerations, ctx.now
        )
        return None if at is None else Requeue(at, "toleration-expired")
