"""The totals of `totals.one_by_one`, with what placements have in common computed once.

When every prioritizer of a placement has a shared form (`framework.SharedScores`: the
placement-independent ones, Balance and Steady), its scores are a *base* shared by every
placement with the same candidates, weights and keys (Balance's normalising maximum), patched at
the few clusters the placement already decided. The base, its rank keys and its best clusters in
rank order are kept in a group per candidates until the fleet, the AddOn scores or `now` change;
when only the state a base reads beyond those moves (decisions, for Balance), the few entries that
moved are rescored instead of the whole base. A run then costs O(own decisions +
numberOfClusters): its best clusters are the base's best that it did not decide merged with its
own, patched ones. The full arrays (for explanations and spread constraints) are built only when
asked for, and equal those of `one_by_one`.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable

import numpy as np

from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.framework import (
    Code,
    IntArray,
    ScheduleContext,
    ScoreResult,
    SharedScores,
    Status,
)
from fleetplace.shared.placement.totals import (
    PACKED,
    Plan,
    Row,
    RowAt,
    Totals,
    aborted,
    best,
    one_by_one,
    packed_key,
    packed_keys,
    total_of_key,
)

GROUPS_KEPT = 256  # groups (and bases per group) kept before they are swept
PREFIX = 32  # the base's best clusters kept in rank order, at least
MOVED_MAX = 64  # clusters whose base score moved, beyond which a base is rebuilt, not patched


def totals(ctx: ScheduleContext, plan: Plan, slots: IntArray, status: Status) -> Totals:
    """The weighted totals of the post-filter `slots`; `status` is the run's status so far."""
    group = _group(ctx, plan, slots) if plan.shareable else None
    if group is None:
        return one_by_one(ctx, plan, slots, status)
    return group.patched(ctx, status)


class _Form:
    """One distinct prioritizer of a plan (configured twice: one form, the weights summed)."""

    def __init__(self, name: str, weight: int, shared: SharedScores) -> None:
        self.name = name
        self.weight = weight
        self.shared = shared


def _forms(plan: Plan) -> tuple[list[_Form], list[int]]:
    """The distinct forms of a shareable plan, and for each weighted entry the index of its form."""
    forms: list[_Form] = []
    index: dict[str, int] = {}
    of_entry: list[int] = []
    for w, shared in zip(plan.weighted, plan.forms, strict=True):
        assert shared is not None
        name = w.prioritizer.name
        at = index.get(name)
        if at is None:
            at = index[name] = len(forms)
            forms.append(_Form(name, 0, shared))
        forms[at].weight += w.weight
        of_entry.append(at)
    return forms, of_entry


class _Base:
    """Each form's base row, their weighted total and rank keys, and the best clusters in rank
    order, found on first use and kept."""

    def __init__(
        self,
        versions: tuple[int, ...],
        results: list[ScoreResult],
        rows: list[IntArray],
        total: IntArray,
        keys: IntArray | None,
        status: Status | None,
        leaders: tuple[list[int], list[int]] = ([], []),
        runs: int = 0,
    ) -> None:
        self.versions = versions  # of the state each form's base read beyond the fleet
        self.results = results  # each form's base result (its has_entry)
        self.rows = rows  # each form's base scores
        self.total = total
        self.keys = keys  # None when the totals are too large for packed keys
        self.status = status  # the last Warning among the entries, or the first abort
        self._order, self._order_keys = leaders
        self.runs = runs  # that picked their best clusters from it

    def moved(
        self,
        versions: tuple[int, ...],
        at: list[int],
        rows: dict[int, list[int]],
        total: list[int],
        keys: list[int],
    ) -> _Base:
        """A copy at `versions` with the entries `at` replaced (`rows`: form -> its new scores
        there); its leaders follow from these without a new partition: the unmoved leaders stay
        in order and a moved entry joins them if it ranks before the last of them (everything
        else already ranked after it)."""
        assert self.keys is not None
        new_rows = list(self.rows)
        for j, values in rows.items():
            new_rows[j] = self.rows[j].copy()
            new_rows[j][at] = values
        new_total, new_keys = self.total.copy(), self.keys.copy()
        new_total[at], new_keys[at] = total, keys
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
        return _Base(
            versions, self.results, new_rows, new_total, new_keys, self.status, (order, order_keys), self.runs
        )

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
    """A base with this placement's own clusters patched."""

    def __init__(
        self,
        status: Status,
        base: _Base,
        group: _Group,
        at: list[int],
        own_totals: list[int],
        own_keys: list[int],
        own_rows: dict[int, list[int]],
    ) -> None:
        self.status = status
        self._base = base
        self._group = group
        self._at = at
        self._own_totals = own_totals
        self._own_keys = own_keys
        self._own_rows = own_rows
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
            return [total_of_key(key) for key, _ in self._picked]
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

    def rows_at(self, indices: list[int]) -> tuple[RowAt, ...]:
        """`rows` at these indices, read from the base and patched, without copying a whole row."""
        if self._rows is not None:
            return super().rows_at(indices)
        base = self._base
        own = {i: k for k, i in enumerate(self._at)}  # index -> its place in the own lists
        out: list[RowAt] = []
        for w, j in zip(self._group.plan.weighted, self._group.of_entry, strict=True):
            values: list[int] = base.rows[j][indices].tolist()
            patch = self._own_rows.get(j)
            if patch is not None and own:
                values = [patch[own[i]] if i in own else v for i, v in zip(indices, values, strict=True)]
            has = base.results[j].has_entry
            out.append((w.prioritizer.name, w.weight, values, None if has is None else has[indices].tolist()))
        return tuple(out)

    @property
    def rows(self) -> tuple[Row, ...]:
        if self._rows is None:
            base = self._base
            rows: list[IntArray] = [
                self._patch(row, self._own_rows[j]) if j in self._own_rows else row
                for j, row in enumerate(base.rows)
            ]
            self._rows = tuple(
                (w.prioritizer.name, w.weight, rows[j], base.results[j].has_entry)
                for w, j in zip(self._group.plan.weighted, self._group.of_entry, strict=True)
            )
        return self._rows


class _Group:
    """What every placement with the same candidates and plan shares while the fleet, the scores
    and `now` stay: the candidates' positions, and a base per tuple of form keys."""

    def __init__(self, plan: Plan, slots: IntArray) -> None:
        self.plan = plan
        self.slots = slots
        self.forms, self.of_entry = _forms(plan)
        self.positions = {s: i for i, s in enumerate(slots.tolist())}  # slot -> index in `slots`
        self._bases: dict[tuple[Hashable, ...], _Base] = {}

    def patched(self, ctx: ScheduleContext, status: Status) -> Totals:
        """This placement's totals: the base of its keys, patched at its own clusters."""
        fleet = ctx.fleet
        keys = tuple([f.shared.key(ctx) for f in self.forms])
        base = self._base(ctx, keys)
        if base.status is not None:
            if base.status.aborts:
                return aborted(base.status)
            status = base.status
        at: list[int] = []
        own_totals: list[int] = []
        own_keys: list[int] = []
        own_rows: dict[int, list[int]] = {}
        if ctx.own:  # patched by the forms that patch; without them, still at hand for `known`
            names: list[str] = []
            slots: list[int] = []
            for name in ctx.own:
                slot = fleet.slot_of(name)
                if slot is not None and slot in self.positions:
                    at.append(self.positions[slot])
                    names.append(name)
                    slots.append(slot)
            if at:
                # a few entries each: one gather per array, not a numpy scalar per read
                own_totals = base.total[at].tolist()
                for j, form in enumerate(self.forms):
                    values = form.shared.patch(ctx, keys[j], names)
                    if values is None:
                        continue
                    own_rows[j] = values
                    before = base.rows[j][at].tolist()
                    for k in range(len(at)):
                        own_totals[k] += form.weight * (values[k] - before[k])
                ranks = fleet.rank[slots].tolist()
                own_keys = [packed_key(r, t) for r, t in zip(ranks, own_totals, strict=True)]
        if base.keys is None or (own_totals and (max(own_totals) >= PACKED or min(own_totals) <= -PACKED)):
            return one_by_one(ctx, self.plan, self.slots, status)  # too large to pack
        return _Patched(status, base, self, at, own_totals, own_keys, own_rows)

    def _base(self, ctx: ScheduleContext, keys: tuple[Hashable, ...]) -> _Base:
        fleet = ctx.fleet
        versions = tuple([f.shared.version(fleet) for f in self.forms])
        hit = self._bases.get(keys)
        if hit is not None:
            if hit.versions == versions:
                return hit
            moved = self._moved(fleet, hit, keys, versions)
            if moved is not None:
                self._bases[keys] = moved
                return moved
        if len(self._bases) >= GROUPS_KEPT:
            self._bases.clear()
        base = self._bases[keys] = self._new_base(ctx, keys, versions)
        return base

    def _new_base(self, ctx: ScheduleContext, keys: tuple[Hashable, ...], versions: tuple[int, ...]) -> _Base:
        slots = self.slots
        results = [f.shared.base(ctx, slots, k) for f, k in zip(self.forms, keys, strict=True)]
        status: Status | None = None  # as one_by_one walks the entries
        for j in self.of_entry:
            s = results[j].status
            if s.aborts:
                status = s
                break
            if s.code is Code.WARNING:
                status = s
        total = np.zeros(len(slots), dtype=np.int64)
        for f, r in zip(self.forms, results, strict=True):
            total = total + f.weight * r.scores
        big = len(total) > 0 and int(np.abs(total).max()) >= PACKED
        rank_keys = None if big else packed_keys(ctx.fleet.rank[slots], total)
        return _Base(versions, results, [r.scores for r in results], total, rank_keys, status)

    def _moved(
        self, fleet: Fleet, old: _Base, keys: tuple[Hashable, ...], versions: tuple[int, ...]
    ) -> _Base | None:
        """`old` brought to `versions` by rescoring only the clusters whose base score moved
        since (a few per changed decision); None when that is unknown or not worth it."""
        if old.keys is None:
            return None
        moved: dict[int, dict[str, int]] = {}  # form -> cluster -> its new base score
        for j, form in enumerate(self.forms):
            if versions[j] != old.versions[j]:
                rebased = form.shared.rebased(fleet, keys[j], old.versions[j])
                if rebased is None or len(rebased) > MOVED_MAX:
                    return None
                moved[j] = rebased
        names: Iterable[str] = next(iter(moved.values())) if len(moved) == 1 else set().union(*moved.values())
        rows: dict[int, list[int]] = {j: [] for j in moved}
        changes = [(self.forms[j].weight, old.rows[j], scores, rows[j]) for j, scores in moved.items()]
        at: list[int] = []
        total: list[int] = []
        rank_keys: list[int] = []
        rank = fleet.rank
        for name in names:
            slot = fleet.slot_of(name)
            i = self.positions.get(slot) if slot is not None else None
            if i is None or slot is None:
                continue  # not among these candidates
            t = int(old.total[i])
            for weight, row, scores, out in changes:
                before = int(row[i])
                score = scores.get(name, before)
                t += weight * (score - before)
                out.append(score)
            if t >= PACKED or t <= -PACKED:
                return None
            at.append(i)
            total.append(t)
            rank_keys.append(packed_key(int(rank[slot]), t))
        return old.moved(versions, at, rows, total, rank_keys)


class _Groups:
    """The groups of every candidates' lineage and plan, of the state they were built at."""

    def __init__(self) -> None:
        # (lineage, plan) -> (fleet version, score version, now): the group, or None after the
        # first run with these (a state only one run sees is cheaper one prioritizer at a time)
        self.groups: dict[tuple[Hashable, str], tuple[tuple[int, int, float], _Group | None]] = {}


def _group(ctx: ScheduleContext, plan: Plan, slots: IntArray) -> _Group | None:
    """The shared group, or None on the first run with these candidates and this state: a state
    that only one run sees (an audit's replay moves it between most runs) is cheaper to score one
    prioritizer at a time; from the second run on, the group is built and shared."""
    if ctx.lineage is None:
        return None
    fleet = ctx.fleet
    groups = fleet.memo(_Groups).groups
    key = (ctx.lineage, plan.signature)
    stamp = (fleet.version, fleet.score_version, ctx.now_ts)
    hit = groups.get(key)
    if hit is not None and hit[0] == stamp:
        group = hit[1]
        if group is None:
            group = _Group(plan, slots)
            groups[key] = (stamp, group)
        return group
    if len(groups) >= GROUPS_KEPT:  # stale entries (older versions) go in one sweep
        groups.clear()
    groups[key] = (stamp, None)
    return None
