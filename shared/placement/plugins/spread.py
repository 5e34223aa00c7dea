"""Topology spread: `spec.spreadPolicy.spreadConstraints`, which OCM's API carries and its scheduler
ignores (semantics: docs/beyond-ocm.md).

Selection is greedy in rank order (score descending, name ascending). A cluster is admissible
when adding it keeps every DoNotSchedule term's skew (its domain's count after adding, minus the
minimum count over the term's domains) within maxSkew; among admissible clusters the best-ranked
that also keeps the ScheduleAnyway terms is taken, relaxing ScheduleAnyway terms from the last
index to the first when none does. Under DoNotSchedule a cluster without the key is never
selected, and selection stops when nothing is admissible.

Admissibility depends only on a cluster's domains, so clusters are grouped by their tuple of
domain values; each pick scans the groups in rank order of their best remaining cluster and takes
the first that fits: O(groups × terms) per pick at worst, usually a few checks.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement.fleet import Fleet, SharedTable
from fleetplace.shared.placement.framework import IntArray
from fleetplace.shared.placement.reads import NOTHING, Reads


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


def spread_reads(placement: Placement) -> Reads:
    """The topology keys the spread terms read."""
    labels: set[str] = set()
    claims: set[str] = set()
    for term in placement.spec.spread_policy.spread_constraints:
        (claims if term.topology_key_type == "Claim" else labels).add(term.topology_key)
    if not labels and not claims:
        return NOTHING
    return Reads(label_keys=frozenset(labels), claim_keys=frozenset(claims))


@dataclass
class SpreadOutcome:
    chosen: list[int]  # indices into the post-filter slots, in pick order
    blocked_by: SpreadTerm | None = None  # the DoNotSchedule term that stopped selection
    explainer: Any = None  # what `reason` needs; explanations are computed only on demand

    def reason(self, slot: int) -> str | None:
        """Why spread kept this post-filter cluster out: the first term it would break now."""
        if self.explainer is None:
            return None
        terms, check_order, term_ok, (slots, per_term) = self.explainer
        where = np.flatnonzero(slots == slot)
        if len(where) == 0:
            return None
        i = int(where[0])
        for ti in check_order:
            value = int(per_term[ti][i])
            if value < 0 and terms[ti].hard:
                return f"lacks the topology key required by {terms[ti].describe()}"
            if not term_ok(ti, value):
                return f"{terms[ti].describe()} would exceed its skew"
        return None


Layout = tuple[
    list[IntArray], list[int], list[list[int]], list[IntArray], list[tuple[int, ...]], IntArray, IntArray
]


class _SpreadMemo:
    """What placements with the same terms (and candidates) share while the fleet stays."""

    def __init__(self) -> None:
        # (topology key, is a claim) -> (fleet version, per-slot domain code, domain values)
        self.codes: dict[tuple[str, bool], tuple[int, npt.NDArray[np.int64], list[str]]] = {}
        # (candidates' lineage, terms) -> the candidates' layout, per fleet version
        self.layouts: SharedTable[Layout] = SharedTable()


def _codes(fleet: Fleet, term: SpreadTerm) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Per-slot domain code of a topology key (-1: the cluster lacks the key), per fleet version."""
    kept = fleet.memo(_SpreadMemo).codes
    hit = kept.get((term.key, term.claim))
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
    kept[(term.key, term.claim)] = (fleet.version, codes, names)
    return codes, names


_TAKEN = np.iinfo(np.int64).max


def _layout(fleet: Fleet, slots: IntArray, terms: Sequence[SpreadTerm], lineage: Hashable | None) -> Layout:
    """Per term, each feasible cluster's domain and the term's domains; the clusters grouped by
    their tuple of domains. The same for every placement with these clusters (`lineage`) and
    terms, so computed once per fleet version."""
    if lineage is None:
        return _new_layout(fleet, slots, terms)
    kept = fleet.memo(_SpreadMemo).layouts
    key = (lineage, tuple(terms))
    found = kept.find(key, fleet.version)
    return found if found is not None else kept.keep(key, fleet.version, _new_layout(fleet, slots, terms))


def _new_layout(fleet: Fleet, slots: IntArray, terms: Sequence[SpreadTerm]) -> Layout:
    per_term = [_codes(fleet, t)[0][slots] for t in terms]
    ncodes = [len(_codes(fleet, t)[1]) for t in terms]
    domains = [
        np.flatnonzero(np.bincount(c + 1, minlength=k + 1)[1:]).tolist()
        for c, k in zip(per_term, ncodes, strict=True)
    ]
    combo = np.zeros(len(slots), dtype=np.int64)
    for c, k in zip(per_term, ncodes, strict=True):
        combo = combo * (k + 1) + (c + 1)
    grouped = np.argsort(combo, kind="stable").astype(np.int64)
    bounds = np.flatnonzero(np.diff(combo[grouped])) + 1
    members: list[IntArray] = list(np.split(grouped, bounds)) if len(grouped) else []
    group_domains = [tuple(int(c[m[0]]) for c in per_term) for m in members]
    starts = np.concatenate(([0], bounds)).astype(np.int64) if len(grouped) else grouped
    return (per_term, ncodes, domains, members, group_domains, grouped, starts)


def spread_select(
    fleet: Fleet,
    slots: IntArray,
    keys: IntArray,
    n: int,
    terms: Sequence[SpreadTerm],
    lineage: Hashable | None = None,
) -> SpreadOutcome:
    """Pick `n` of the post-filter `slots` (ranked by `keys`, ascending) under the spread terms;
    `lineage` names the slots when other placements share them (see `ScheduleContext.lineage`)."""
    if n <= 0 or len(slots) == 0:
        return SpreadOutcome([])
    per_term, ncodes, domains, members, group_domains, grouped, starts = _layout(fleet, slots, terms, lineage)
    # counts[t][code]; the domains of a term are the values present among the feasible clusters
    counts = [[0] * max(k, 1) for k in ncodes]
    # each group's best remaining rank key, all in one reduction; a group's own keys are gathered
    # only once it is picked from (taken ones are then set to the maximum), so no global sort
    head_key: list[int] = np.minimum.reduceat(keys[grouped], starts).tolist()
    group_keys: dict[int, IntArray] = {}
    hard = [i for i, t in enumerate(terms) if t.hard]
    soft = [i for i, t in enumerate(terms) if not t.hard]
    skews = [t.max_skew for t in terms]
    outcome = SpreadOutcome([])

    def threshold(ti: int) -> int:
        """Adding to domain d keeps the term's skew iff count(d) < min count + maxSkew.

        (With m the minimum: if d is the only domain at m, the minimum after adding is m + 1 and
        the skew 0; otherwise it is count(d) + 1 - m. Both are within maxSkew >= 1 exactly when
        count(d) < m + maxSkew.) No domain: nothing is admissible.
        """
        cnt = counts[ti]
        present = domains[ti]
        return min([cnt[d] for d in present]) + skews[ti] if present else -1

    limits = [threshold(ti) for ti in range(len(terms))]

    def fits(gi: int, active: Sequence[int]) -> bool:
        dom = group_domains[gi]
        for ti in active:
            v = dom[ti]
            if v < 0:
                if terms[ti].hard:
                    return False
                continue  # no key: neutral for a ScheduleAnyway term
            if counts[ti][v] >= limits[ti]:
                return False
        return True

    live = list(range(len(members)))
    left = [len(m) for m in members]
    while len(outcome.chosen) < n and live:
        # the best-ranked group that keeps the DoNotSchedule terms and the most ScheduleAnyway
        # terms, relaxing those from the last index; groups are scanned in rank order of their heads
        order = sorted(live, key=head_key.__getitem__)
        pick = -1
        for keep in range(len(soft), -1, -1):
            active = hard + soft[:keep]
            pick = next((gi for gi in order if fits(gi, active)), -1)
            if pick >= 0:
                break
        if pick < 0:  # nothing keeps the DoNotSchedule terms
            outcome.blocked_by = next(terms[ti] for ti in hard if not fits(order[0], [ti]))
            break
        gk = group_keys.get(pick)
        if gk is None:
            gk = group_keys[pick] = keys[members[pick]]
        at = int(gk.argmin())  # the ndarray methods: np.argmin and .min() go through Python wrappers
        outcome.chosen.append(int(members[pick][at]))
        left[pick] -= 1
        if left[pick]:
            gk[at] = _TAKEN
            head_key[pick] = int(gk[gk.argmin()])
        else:
            live.remove(pick)
        for ti, value in enumerate(group_domains[pick]):
            if value >= 0:
                counts[ti][value] += 1
                if counts[ti][value] == limits[ti] - skews[ti] + 1:  # it was at the minimum
                    limits[ti] = threshold(ti)

    final = limits

    def term_ok(ti: int, value: int) -> bool:
        if value < 0:
            return not terms[ti].hard
        return counts[ti][value] < final[ti]

    outcome.explainer = (terms, hard + soft, term_ok, (slots, per_term))
    return outcome
