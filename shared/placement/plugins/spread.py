"""Topology spread: `spec.spreadPolicy.spreadConstraints`, which OCM's API carries and its scheduler
ignores (semantics: docs/beyond-ocm.md).

Selection is greedy in rank order (score descending, name ascending). A cluster is admissible
when adding it keeps every DoNotSchedule term's skew (its domain's count after adding, minus the
minimum count over the term's domains) within maxSkew; among admissible clusters the best-ranked
that also keeps the ScheduleAnyway terms is taken, relaxing ScheduleAnyway terms from the last
index to the first when none does. Under DoNotSchedule a cluster without the key is never
selected, and selection stops when nothing is admissible.

Admissibility depends only on a cluster's domains, so clusters are grouped by their tuple of
domain values and each step looks at the head of every group: O(groups × terms) per pick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shared.api.ocm import Placement
from shared.placement.fleet import Fleet
from shared.placement.framework import IntArray


@dataclass(frozen=True, slots=True)
class SpreadTerm:
    index: int
    key: str
    claim: bool  # topologyKeyType Claim (else Label)
    max_skew: int
    hard: bool  # DoNotSchedule

    def describe(self) -> str:
        mode = "DoNotSchedule" if self.hard else "ScheduleAnyway"
        kind = "Claim" if self.claim else "Label"
        return f"spreadConstraints[{self.index}] ({kind} {self.key}, maxSkew {self.max_skew}, {mode})"


def terms_of(placement: Placement) -> list[SpreadTerm]:
    out = []
    for i, c in enumerate(placement.spec.spread_policy.spread_constraints):
        out.append(
            SpreadTerm(
                index=i,
                key=c.topology_key,
                claim=c.topology_key_type == "Claim",
                max_skew=c.max_skew if c.max_skew >= 1 else 1,  # CRD default 1, minimum 1
                hard=c.when_unsatisfiable == "DoNotSchedule",
            )
        )
    return out


@dataclass
class SpreadOutcome:
    chosen: list[int]  # indices into the post-filter slots, in pick order
    blocked_by: SpreadTerm | None = None  # the DoNotSchedule term that stopped selection
    explainer: Any = None  # what `reason` needs; explanations are computed only on demand

    def reason(self, slot: int) -> str | None:
        """Why spread kept this post-filter cluster out: the first term it would break now."""
        if self.explainer is None:
            return None
        terms, check_order, term_ok, domains_of = self.explainer
        domains = domains_of.get(slot)
        if domains is None:
            return None
        for ti in check_order:
            value = int(domains[ti])
            if value < 0 and terms[ti].hard:
                return f"lacks the topology key required by {terms[ti].describe()}"
            if not term_ok(ti, value):
                return f"{terms[ti].describe()} would exceed its skew"
        return None


def _codes(fleet: Fleet, term: SpreadTerm) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Per-slot domain code of a topology key (-1: the cluster lacks the key), per fleet version."""
    key = ("spread-codes", term.key, term.claim)
    hit = fleet.cache.get(key)
    if hit is not None and hit[0] == fleet.version and len(hit[1]) == fleet.capacity:
        return hit[1], hit[2]
    values: dict[str, int] = {}
    codes = np.full(fleet.capacity, -1, dtype=np.int64)
    for name, info in fleet.clusters.items():
        v = (info.claims if term.claim else info.labels).get(term.key)
        if v is not None:
            slot = fleet.slot_of(name)
            assert slot is not None
            codes[slot] = values.setdefault(v, len(values))
    names = sorted(values, key=values.__getitem__)
    fleet.cache[key] = (fleet.version, codes, names)
    return codes, names


def spread_select(
    fleet: Fleet, slots: IntArray, keys: IntArray, n: int, terms: Sequence[SpreadTerm]
) -> SpreadOutcome:
    order = np.argsort(keys)  # rank order over the post-filter clusters
    per_term = [_codes(fleet, t)[0][slots] for t in terms]
    # domains of each term: the values present among the feasible clusters
    counts: list[dict[int, int]] = [dict.fromkeys(np.unique(c[c >= 0]).tolist(), 0) for c in per_term]
    # group by domain tuple: every group's members in rank order
    radix = [max(len(fleet.cache[("spread-codes", t.key, t.claim)][2]), 1) + 1 for t in terms]
    combo = np.zeros(len(slots), dtype=np.int64)
    for c, r in zip(per_term, radix, strict=True):
        combo = combo * r + (c + 1)
    ranked_combo = combo[order]
    grouped = np.argsort(ranked_combo, kind="stable")  # positions in rank order, grouped
    uniq, starts, sizes = np.unique(ranked_combo[grouped], return_index=True, return_counts=True)
    groups = []
    for g, start, size in zip(uniq.tolist(), starts.tolist(), sizes.tolist(), strict=True):
        members = grouped[start : start + size].tolist()  # ascending rank positions
        domains = [int(c[order[members[0]]]) for c in per_term]
        groups.append((g, domains, members))
    heads = [0] * len(groups)
    outcome = SpreadOutcome([])

    def term_ok(ti: int, value: int) -> bool:
        if value < 0:
            return not terms[ti].hard  # no key: never under DoNotSchedule, neutral otherwise
        cnt = counts[ti]
        m = min(cnt.values())
        here = cnt[value]
        after_min = m + 1 if here == m and sum(1 for v in cnt.values() if v == m) == 1 else m
        return here + 1 - after_min <= terms[ti].max_skew

    hard = [i for i, t in enumerate(terms) if t.hard]
    soft = [i for i, t in enumerate(terms) if not t.hard]
    ok_cache: dict[tuple[int, int], bool] = {}  # per pick: admissibility depends on the counts

    def ok(ti: int, value: int) -> bool:
        k = (ti, value)
        if k not in ok_cache:
            ok_cache[k] = term_ok(ti, value)
        return ok_cache[k]

    while len(outcome.chosen) < n:
        live = [gi for gi in range(len(groups)) if heads[gi] < len(groups[gi][2])]
        if not live:
            break
        ok_cache.clear()

        admissible = [gi for gi in live if all(ok(ti, groups[gi][1][ti]) for ti in hard)]
        if not admissible:
            best = min(live, key=lambda gi: groups[gi][2][heads[gi]])
            outcome.blocked_by = next(terms[ti] for ti in hard if not ok(ti, groups[best][1][ti]))
            break
        pick = -1
        for keep in range(len(soft), -1, -1):  # relax ScheduleAnyway terms from the last
            active = soft[:keep]
            fits = [gi for gi in admissible if all(ok(ti, groups[gi][1][ti]) for ti in active)]
            if fits:
                pick = min(fits, key=lambda gi: groups[gi][2][heads[gi]])
                break
        rank_pos = groups[pick][2][heads[pick]]
        heads[pick] += 1
        outcome.chosen.append(int(order[rank_pos]))
        for ti, value in enumerate(groups[pick][1]):
            if value >= 0:
                counts[ti][value] += 1

    outcome.explainer = (
        terms,
        hard + soft,
        term_ok,
        dict(zip(slots.tolist(), zip(*per_term, strict=True), strict=True)),
    )
    return outcome
