"""Weighted totals of one run, with what placements share computed once (spec §5).

Most placements score with placement-independent prioritizers (resources, AddOn scores) plus
Balance and Steady, and those two depend on the placement only through its own decisions:
Balance subtracts them from the counts and normalises by the highest count of *other*
placements' decisions, Steady marks them. A run's totals are then a base — the independent
scores plus Balance at the global counts — that every placement with the same candidates,
weights and normalising maximum shares, with at most one entry per own cluster patched.

The base, its rank keys and its best few clusters in rank order are kept until the fleet, the
scores, `now` or the decision counts change. A run then costs O(own decisions + numberOfClusters)
instead of a pass of every prioritizer over every cluster: its best clusters are the base's best
that it did not decide merged with its own, patched ones. The full arrays (for explanations and
spread constraints) are built only when asked for, and are exactly those of running the
prioritizers one by one (`tests/placement/test_totals.py` compares them).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.framework import Code, IntArray, ScheduleContext, ScoreResult, Status
from fleetplace.shared.placement.plugins.balance import Balance, balance_score, balance_scores
from fleetplace.shared.placement.plugins.steady import STEADY_SCORE, Steady
from fleetplace.shared.placement.weights import Weighted

SHARED_SCORES_KEPT = 4096
BASES_KEPT = 256
Row = tuple[str, int, Any, Any]  # (prioritizer name, weight, scores, has_entry)
PACKED = 1 << 30  # totals below this in magnitude pack into one int64 key with the name rank
RANK_SPAN = 1 << 32  # a packed key is rank - total * RANK_SPAN
PREFIX = 32  # the base's best clusters kept in rank order, at least
EMPTY = np.zeros(0, dtype=np.int64)  # no clusters (read-only: shared by every run that has none)
EMPTY.setflags(write=False)
MOVED_MAX = 64  # clusters whose decision count moved, beyond which a base is rebuilt, not patched


class Totals:
    """The scores of one run's post-filter clusters (indices below are into its slots)."""

    status: Status  # the run's status after scoring (a prioritizer's Warning, or an abort)

    @property
    def totals(self) -> IntArray:
        raise NotImplementedError

    @property
    def keys(self) -> IntArray:
        """Ascending = total descending, then name (spec §5.6)."""
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

    def known(self) -> dict[int, int]:
        """Totals at hand without building the array: index -> total (the own clusters)."""
        return {}


class _Arrays(Totals):
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
    """Ascending keys for total descending, then cluster name ascending (spec §5.6)."""
    rank = fleet.rank[slots]
    if len(totals) == 0 or int(np.abs(totals).max()) < PACKED:
        return _packed_keys(rank, totals)
    # unclamped add-on values times int32 weights (§5.5) overflow the packed key: dense keys instead
    keys = np.empty(len(totals), dtype=np.int64)
    keys[np.lexsort((rank, -totals))] = np.arange(len(totals), dtype=np.int64)
    return keys


def shared_score(w: Weighted, ctx: ScheduleContext, slots: IntArray) -> ScoreResult:
    """Run a prioritizer; results that do not depend on the placement (resources, AddOn scores)
    are shared by every placement with the same post-filter clusters until the fleet changes."""
    if not getattr(w.prioritizer, "placement_independent", False):
        return w.prioritizer.score(ctx, slots)
    fleet = ctx.fleet
    key = (w.prioritizer.name, fleet.version, fleet.score_version, ctx.now_ts)
    return fleet.derived(
        "shared-scores", slots, key, lambda: w.prioritizer.score(ctx, slots), limit=SHARED_SCORES_KEPT
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """How a placement's weighted prioritizers combine into totals."""

    weighted: tuple[Weighted, ...]
    independent: tuple[Weighted, ...]  # placement-independent, in configuration order
    balance: int | None  # summed weights (Balance can be configured twice, spec §5.1); None: absent
    steady: int | None
    signature: tuple[Any, ...] | None  # what placements sharing a base have in common; None: no base


def plan_of(weighted: Sequence[Weighted]) -> Plan:
    independent: list[Weighted] = []
    balance: int | None = None
    steady: int | None = None
    shareable = True
    for w in weighted:
        kind = type(w.prioritizer)
        if kind is Balance:
            balance = (balance or 0) + w.weight
        elif kind is Steady:
            steady = (steady or 0) + w.weight
        elif getattr(w.prioritizer, "placement_independent", False):
            independent.append(w)
        else:
            shareable = False  # depends on the placement otherwise (the PreferNoSelect penalty)
    signature = (tuple((w.prioritizer.name, w.weight) for w in independent), balance) if shareable else None
    return Plan(tuple(weighted), tuple(independent), balance, steady, signature)


def totals(ctx: ScheduleContext, plan: Plan, slots: IntArray, status: Status) -> Totals:
    """The weighted totals of the post-filter `slots`; `status` is the run's status so far."""
    if plan.signature is None:
        return _one_by_one(ctx, plan.weighted, slots, status)
    return _patched(ctx, plan, slots, status)


def aborted(status: Status) -> Totals:
    return _Arrays(status, EMPTY, EMPTY, ())


def _one_by_one(
    ctx: ScheduleContext, weighted: Sequence[Weighted], slots: IntArray, status: Status
) -> Totals:
    """Every prioritizer over every cluster, summed in configuration order."""
    results, outcome = _run(ctx, weighted, slots)
    if outcome is not None and outcome.aborts:
        return aborted(outcome)
    total = _weighted_sum(weighted, results, len(slots))
    rows = tuple(
        (w.prioritizer.name, w.weight, r.scores, r.has_entry) for w, r in zip(weighted, results, strict=True)
    )
    fleet = ctx.fleet
    own_slots = [slot for name in ctx.own if (slot := fleet.slot_of(name)) is not None]
    return _Arrays(outcome or status, total, rank_keys(fleet, slots, total), rows, slots, own_slots)


def _run(
    ctx: ScheduleContext, weighted: Sequence[Weighted], slots: IntArray
) -> tuple[list[ScoreResult], Status | None]:
    """The prioritizers' results in order, and the status they leave: the last Warning, or the
    first abort (results stop there)."""
    results: list[ScoreResult] = []
    outcome: Status | None = None
    for w in weighted:
        r = shared_score(w, ctx, slots)
        if r.status.aborts:
            return results, r.status
        if r.status.code is Code.WARNING:
            outcome = r.status
        results.append(r)
    return results, outcome


def _weighted_sum(weighted: Sequence[Weighted], results: Sequence[ScoreResult], size: int) -> IntArray:
    total = np.zeros(size, dtype=np.int64)
    for w, r in zip(weighted, results, strict=True):
        total = total + w.weight * r.scores
    return total


def _packed_keys(rank: IntArray, total: IntArray) -> IntArray:
    """Rank keys for totals below PACKED in magnitude: the total in the high bits, the name rank low."""
    keys: IntArray = rank - total * RANK_SPAN
    return keys


def _packed_key(rank: int, total: int) -> int:
    """`_packed_keys` of one cluster."""
    return rank - total * RANK_SPAN


def _total_of_key(key: int) -> int:
    """The total a packed key holds (0 <= rank < RANK_SPAN: the total is in the high bits)."""
    return -(key // RANK_SPAN)


class _Base:
    """Totals and keys at the global decision counts (no own decision taken into account), and
    the best clusters in rank order, found on first use and kept."""

    def __init__(
        self,
        version: int,
        total: IntArray,
        keys: IntArray | None,
        balance: IntArray | None,
        leaders: tuple[list[int], list[int]] = ([], []),
        runs: int = 0,
    ) -> None:
        self.version = version  # of the decisions it counted (-1: no Balance, counts not read)
        self.total = total
        self.keys = keys  # None when the totals are too large for packed keys
        self.balance = balance  # Balance's row at the global counts
        self._order, self._order_keys = leaders
        self.runs = runs  # that picked their best clusters from it

    def moved(
        self, version: int, at: list[int], balance: list[int], total: list[int], keys: list[int]
    ) -> _Base:
        """A copy at `version` with the entries `at` replaced; its leaders follow from these
        without a new partition: the unmoved leaders stay in order and a moved entry joins them
        if it ranks before the last of them (everything else already ranked after it)."""
        assert self.keys is not None and self.balance is not None
        new_balance, new_total, new_keys = self.balance.copy(), self.total.copy(), self.keys.copy()
        new_balance[at], new_total[at], new_keys[at] = balance, total, keys
        moved = dict(zip(at, keys, strict=True))
        complete = len(self._order) == len(self.total)
        order: list[int] = []
        order_keys: list[int] = []
        for i, key in zip(self._order, self._order_keys, strict=True):
            if i not in moved:
                order.append(i)
                order_keys.append(key)
        if complete or order:
            for i, key in moved.items():
                if complete or key < order_keys[-1]:
                    pos = bisect.bisect_left(order_keys, key)
                    order.insert(pos, i)
                    order_keys.insert(pos, key)
        return _Base(version, new_total, new_keys, new_balance, (order, order_keys), self.runs)

    def leaders(self, k: int) -> tuple[list[int], list[int]]:
        """At least the best `k` (or all) indices in rank order, with their keys."""
        assert self.keys is not None
        size = len(self.keys)
        if len(self._order) < min(k, size):
            k = min(max(k, PREFIX, 2 * len(self._order)), size)
            if k == size:
                order = self.keys.argsort()
            else:
                part = self.keys.argpartition(k - 1)[:k]
                order = part[self.keys[part].argsort()]
            self._order = order.tolist()
            self._order_keys = self.keys[order].tolist()
        return self._order, self._order_keys


class _Patched(Totals):
    """A base with this placement's own clusters patched: Balance without its own decisions, Steady."""

    def __init__(
        self,
        status: Status,
        base: _Base,
        weighted: Sequence[Weighted],
        independent: list[ScoreResult],
        at: list[int],
        own_totals: list[int],
        own_keys: list[int],
        own_balance: list[int],
    ) -> None:
        self.status = status
        self._base = base
        self._weighted = weighted
        self._independent = independent
        self._at = at
        self._own_totals = own_totals
        self._own_keys = own_keys
        self._own_balance = own_balance
        self._picked: list[tuple[int, int]] = []  # (key, index) of the last top(n) from the leaders
        self._top: list[int] | None = None  # and the list it returned
        # the full arrays, built on first use
        self._totals: IntArray | None = None
        self._keys: IntArray | None = None
        self._rows: tuple[Row, ...] | None = None

    def top(self, n: int | None) -> list[int]:
        if n is None:
            return best(self.keys, n)
        if n <= 0:
            return []
        base = self._base
        base.runs += 1
        if base.runs == 1:  # a base used once (decisions moved since the last run): no leaders yet
            return best(self.keys, n)
        patched = set(self._at)
        order, keys = base.leaders(n + len(patched))
        picked = list(zip(self._own_keys, self._at, strict=True))
        left = n
        for i, key in zip(order, keys, strict=True):
            if i not in patched:
                picked.append((key, i))
                left -= 1
                if not left:
                    break
        picked.sort()
        self._picked = picked[:n]
        self._top = [i for _, i in self._picked]
        return self._top

    def totals_of(self, indices: list[int]) -> list[int]:
        if indices is self._top:  # the list top() just returned: its keys are at hand
            return [_total_of_key(key) for key, _ in self._picked]
        out: list[int] = self._base.total[indices].tolist()
        own = self.known()
        return [own.get(i, t) for i, t in zip(indices, out, strict=True)] if own else out

    def known(self) -> dict[int, int]:
        return dict(zip(self._at, self._own_totals, strict=True))

    def _patch(self, base: IntArray, values: list[int]) -> IntArray:
        out = base.copy()
        if self._at:
            out[self._at] = values
        return out

    @property
    def totals(self) -> IntArray:
        if self._totals is None:
            self._totals = self._patch(self._base.total, self._own_totals)
        return self._totals

    @property
    def keys(self) -> IntArray:
        if self._keys is None:
            assert self._base.keys is not None
            self._keys = self._patch(self._base.keys, self._own_keys)
        return self._keys

    @property
    def rows(self) -> tuple[Row, ...]:
        if self._rows is None:
            self._rows = self._build_rows()
        return self._rows

    def _build_rows(self) -> tuple[Row, ...]:
        size = len(self._base.total)
        steady = np.zeros(size, dtype=np.int64)
        if self._at:
            steady[self._at] = STEADY_SCORE
        rows: list[Row] = []
        scores = iter(self._independent)
        for w in self._weighted:
            kind = type(w.prioritizer)
            if kind is Balance:
                assert self._base.balance is not None
                rows.append(
                    (w.prioritizer.name, w.weight, self._patch(self._base.balance, self._own_balance), None)
                )
            elif kind is Steady:
                rows.append((w.prioritizer.name, w.weight, steady, None))
            else:
                r = next(scores)
                rows.append((w.prioritizer.name, w.weight, r.scores, r.has_entry))
        return tuple(rows)


def _patched(ctx: ScheduleContext, plan: Plan, slots: IntArray, status: Status) -> Totals:
    fleet = ctx.fleet
    group = _group(ctx, plan, slots)
    if group is None:
        return _one_by_one(ctx, plan.weighted, slots, status)
    if group.status is not None:
        if group.status.aborts:
            return aborted(group.status)
        status = group.status
    balance, steady = plan.balance, plan.steady
    own = ctx.own
    top = fleet.decisions.max_count_excluding(own) if balance is not None else 0
    base = group.base(fleet, top)

    # this placement's own clusters among the candidates: Balance without its own count, Steady
    at: list[int] = []
    own_totals: list[int] = []
    own_keys: list[int] = []
    own_balance: list[int] = []
    if own:  # patched by Balance and Steady; without them, still at hand for `known`
        positions = _positions(fleet, slots)
        found: list[tuple[str, int, int]] = []  # (name, own count, slot) of own candidates
        for name, k in own.items():
            slot = fleet.slot_of(name)
            if slot is not None and slot in positions:
                at.append(positions[slot])
                found.append((name, k, slot))
        if at:
            # a few entries each: one gather per array, not a numpy scalar per read
            base_totals = base.total[at].tolist()
            base_balance = base.balance[at].tolist() if base.balance is not None else None
            ranks = fleet.rank[[slot for _, _, slot in found]].tolist()
            counts = fleet.decisions.total  # a name's count over all sources (decision_counts by name)
            extra = steady * STEADY_SCORE if steady is not None else 0
            for j, (name, k, _) in enumerate(found):
                total = base_totals[j] + extra
                score = 0
                if base_balance is not None:
                    score = balance_score(counts[name] - k, top)
                    total += (balance or 0) * (score - base_balance[j])
                own_totals.append(total)
                own_balance.append(score)
                own_keys.append(_packed_key(ranks[j], total))
    if base.keys is None or any(abs(t) >= PACKED for t in own_totals):
        # too large to pack: one by one, as the plain path does it
        return _one_by_one(ctx, plan.weighted, slots, status)
    return _Patched(status, base, plan.weighted, group.results, at, own_totals, own_keys, own_balance)


class _Group:
    """What every placement with the same candidates and plan shares while the fleet, the scores
    and `now` stay: the independent prioritizers' results, and a base per Balance maximum."""

    def __init__(self, ctx: ScheduleContext, plan: Plan, slots: IntArray, stamp: tuple[Any, ...]) -> None:
        self.slots = slots
        self.stamp = stamp
        self.plan = plan
        self._bases: dict[int, _Base] = {}
        # the status is the last Warning, or an abort (then there is nothing to share)
        self.results, self.status = _run(ctx, plan.independent, slots)
        aborts = self.status is not None and self.status.aborts
        self._independent_total = (
            None if aborts else _weighted_sum(plan.independent, self.results, len(slots))
        )

    def base(self, fleet: Fleet, top: int) -> _Base:
        version = fleet.decisions.version if self.plan.balance is not None else -1
        hit = self._bases.get(top)
        if hit is not None:
            if hit.version == version:
                return hit
            moved = self._moved(fleet, hit, top, version)
            if moved is not None:
                self._bases[top] = moved
                return moved
        total = self._independent_total
        assert total is not None  # an aborted group hands out no base
        balance = None
        if self.plan.balance is not None:
            balance = balance_scores(fleet.decision_counts()[self.slots], top)
            total = total + self.plan.balance * balance
        big = len(total) > 0 and int(np.abs(total).max()) >= PACKED
        keys = None if big else _packed_keys(fleet.rank[self.slots], total)
        if len(self._bases) >= BASES_KEPT:
            self._bases.clear()
        base = _Base(version, total, keys, balance)
        self._bases[top] = base
        return base

    def _moved(self, fleet: Fleet, old: _Base, top: int, version: int) -> _Base | None:
        """`old` brought to `version` by rescoring only the clusters whose decision count moved
        since (a few per changed decision); None when that is unknown or not worth it."""
        names = fleet.decisions.changed_since(old.version)
        if names is None or len(names) > MOVED_MAX or old.keys is None or self.plan.balance is None:
            return None
        assert self._independent_total is not None
        positions = _positions(fleet, self.slots)
        counts = fleet.decisions.total  # a name's count over all sources (decision_counts by name)
        rank = fleet.rank
        at: list[int] = []
        balance: list[int] = []
        total: list[int] = []
        keys: list[int] = []
        for name in names:
            slot = fleet.slot_of(name)
            i = positions.get(slot) if slot is not None else None
            if i is None:
                continue
            score = balance_score(counts.get(name, 0), top)
            t = int(self._independent_total[i]) + self.plan.balance * score
            if abs(t) >= PACKED:
                return None
            at.append(i)
            balance.append(score)
            total.append(t)
            keys.append(_packed_key(int(rank[slot]), t))
        return old.moved(version, at, balance, total, keys)


def _group(ctx: ScheduleContext, plan: Plan, slots: IntArray) -> _Group | None:
    """The shared group, or None on the first run with these candidates and this state: a state
    that only one run sees (an audit's replay moves it between most runs) is cheaper to score one
    prioritizer at a time; from the second run on, the group is built and shared."""
    fleet = ctx.fleet
    groups: dict[Any, Any] = fleet.cache.setdefault("totals-groups", {})
    key = (id(slots), plan.signature)
    stamp = (fleet.version, fleet.score_version, ctx.now_ts)
    hit = groups.get(key)
    if hit is not None and hit[0] is slots and hit[1] == stamp:
        if hit[2] is None:
            groups[key] = (slots, stamp, _Group(ctx, plan, slots, stamp))
        group: _Group = groups[key][2]
        return group
    if len(groups) >= BASES_KEPT:  # stale entries (older versions) go in one sweep
        groups.clear()
    groups[key] = (slots, stamp, None)
    return None


def _positions(fleet: Fleet, slots: IntArray) -> dict[int, int]:
    """slot -> its index in `slots`, kept per candidate array."""
    return fleet.derived("slot-positions", slots, None, lambda: {s: i for i, s in enumerate(slots.tolist())})
