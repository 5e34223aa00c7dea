"""Weighted totals of one run: OCM's rule, computed one prioritizer at a time.

A cluster's total is the sum, over the placement's weighted prioritizers, of weight × score; the
post-filter clusters rank by total descending, then by name ascending. `one_by_one` is that rule
as written, and the reference every faster path is held to (`shared_totals.py`, which shares
what placements have in common; `tests/placement/test_totals.py` compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.framework import (
    BoolArray,
    Code,
    IntArray,
    PlacementIndependent,
    ScheduleContext,
    ScoreResult,
    SharedScores,
    Status,
    independent_score,
)
from fleetplace.shared.placement.weights import Weighted

Row = tuple[str, int, IntArray, BoolArray | None]  # (prioritizer name, weight, scores, has_entry)
RowAt = tuple[str, int, list[int], list[bool] | None]  # a Row at some indices (`Totals.rows_at`)
PACKED = 1 << 30  # totals below this in magnitude pack into one int64 key with the name rank
RANK_SPAN = 1 << 32  # a packed key is rank - total * RANK_SPAN
EMPTY = np.zeros(0, dtype=np.int64)  # no clusters (read-only: shared by every run that has none)
EMPTY.setflags(write=False)


@dataclass(slots=True)
class Plan:
    """A placement's weighted prioritizers, and their shared forms when every one has one."""

    weighted: tuple[Weighted, ...]
    forms: tuple[SharedScores | None, ...]  # aligned with `weighted`
    shareable: bool  # every prioritizer has a shared form
    # what placements scored alike have in common: "name:weight" of each prioritizer in order
    # (a prioritizer's name says what it scores: an AddOn's names its resource and score)
    signature: str


def plan_of(weighted: Sequence[Weighted]) -> Plan:
    forms: list[SharedScores | None] = []
    names: list[str] = []
    for w in weighted:
        forms.append(w.prioritizer.shared())
        names.append(f"{w.prioritizer.name}:{w.weight}")
    return Plan(tuple(weighted), tuple(forms), None not in forms, "|".join(names))


class Totals:
    """The scores of one run's post-filter clusters (indices below are into its slots)."""

    status: Status  # the run's status after scoring (a prioritizer's Warning, or an abort)

    @property
    def totals(self) -> IntArray:
        raise NotImplementedError

    @property
    def keys(self) -> IntArray:
        """Ascending = total descending, then name."""
        raise NotImplementedError

    @property
    def rows(self) -> tuple[Row, ...]:
        raise NotImplementedError

    def top(self, n: int | None) -> list[int]:
        """Indices of the best `n` clusters (all when None) in rank order."""
        return best(self.keys, n)

    def totals_of(self, indices: list[int]) -> list[int]:
        out: list[int] = self.totals[indices].tolist()
        return out

    def rows_at(self, indices: list[int]) -> tuple[RowAt, ...]:
        """`rows` at these indices only: (prioritizer, weight, scores, has_entry or None)."""
        return tuple(
            (name, weight, scores[indices].tolist(), None if has is None else has[indices].tolist())
            for name, weight, scores, has in self.rows
        )

    def known(self) -> dict[int, int]:
        """Totals at hand without building the array: index -> total (the own clusters)."""
        return {}


class Arrays(Totals):
    def __init__(
        self,
        status: Status,
        totals: IntArray,
        keys: IntArray,
        rows: tuple[Row, ...],
        slots: IntArray | None = None,
        own_slots: list[int] | None = None,
    ) -> None:
        self.status = status
        self._totals = totals
        self._keys = keys
        self._rows = rows
        self._slots = slots
        self._own_slots = own_slots or []

    @property
    def totals(self) -> IntArray:
        return self._totals

    @property
    def keys(self) -> IntArray:
        return self._keys

    @property
    def rows(self) -> tuple[Row, ...]:
        return self._rows

    def known(self) -> dict[int, int]:
        """The totals of this placement's own clusters (asked for when it drops them), found in
        the candidate slots (kept in ascending order) without a pass over all of them."""
        if self._slots is None or not self._own_slots or not len(self._slots):
            return {}
        wanted = np.asarray(self._own_slots, dtype=np.int64)
        at = self._slots.searchsorted(wanted)
        inside = at < len(self._slots)
        at, wanted = at[inside], wanted[inside]
        at = at[self._slots[at] == wanted]
        return dict(zip(at.tolist(), self.totals[at].tolist(), strict=True))


def aborted(status: Status) -> Totals:
    return Arrays(status, EMPTY, EMPTY, ())


def one_by_one(ctx: ScheduleContext, plan: Plan, slots: IntArray, status: Status) -> Totals:
    """OCM's rule: every prioritizer over every cluster, weight × score summed in configuration
    order, ranked by total then name. The status is the last Warning, or the first abort."""
    results: list[ScoreResult] = []
    for w, form in zip(plan.weighted, plan.forms, strict=True):
        # a placement-independent prioritizer's scores are shared with every placement alike
        r = (
            independent_score(w.prioritizer, ctx, slots)
            if isinstance(form, PlacementIndependent)
            else w.prioritizer.score(ctx, slots)
        )
        if r.status.aborts:
            return aborted(r.status)
        if r.status.code is Code.WARNING:
            status = r.status
        results.append(r)
    total = np.zeros(len(slots), dtype=np.int64)
    for w, r in zip(plan.weighted, results, strict=True):
        total = total + w.weight * r.scores
    rows = tuple(
        (w.prioritizer.name, w.weight, r.scores, r.has_entry)
        for w, r in zip(plan.weighted, results, strict=True)
    )
    fleet = ctx.fleet
    own_slots = [slot for name in ctx.own if (slot := fleet.slot_of(name)) is not None]
    return Arrays(status, total, rank_keys(fleet, slots, total), rows, slots, own_slots)


def best(keys: IntArray, n: int | None) -> list[int]:
    """Indices of the best `n` keys in rank order, without sorting everything."""
    if n is None or n >= len(keys):
        order: list[int] = keys.argsort().tolist()
        return order
    if n <= 0:
        return []
    part = keys.argpartition(n - 1)[:n]
    top: list[int] = part[keys[part].argsort()].tolist()
    return top


def rank_keys(fleet: Fleet, slots: IntArray, totals: IntArray) -> IntArray:
    """Ascending keys for total descending, then cluster name ascending."""
    rank = fleet.rank[slots]
    if len(totals) == 0 or int(np.abs(totals).max()) < PACKED:
        return packed_keys(rank, totals)
    # unclamped add-on values times int32 weights overflow the packed key: dense keys instead
    keys = np.empty(len(totals), dtype=np.int64)
    keys[np.lexsort((rank, -totals))] = np.arange(len(totals), dtype=np.int64)
    return keys


def packed_keys(rank: IntArray, total: IntArray) -> IntArray:
    """Rank keys for totals below PACKED in magnitude: the total in the high bits, the name rank low."""
    keys: IntArray = rank - total * RANK_SPAN
    return keys


def packed_key(rank: int, total: int) -> int:
    """`packed_keys` of one cluster."""
    return rank - total * RANK_SPAN


def total_of_key(key: int) -> int:
    """The total a packed key holds (0 <= rank < RANK_SPAN: the total is in the high bits)."""
    return -(key // RANK_SPAN)
