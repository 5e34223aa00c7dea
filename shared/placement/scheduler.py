"""One scheduling run of one placement: eligible sets → candidates → filters → prioritizers →
selection → decision groups → status.

A run reads the Fleet and `now` only and decides the same from the same state; it fills the
fleet's memos (what runs share across placements) but never changes the fleet's state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from fleetplace.shared.api.ocm import DISABLE_ANNOTATION, Placement
from fleetplace.shared.placement.conditions import Condition, misconfigured_condition, satisfied_condition
from fleetplace.shared.placement.fleet import Fleet, SetSelectorError
from fleetplace.shared.placement.framework import (
    SUCCESS,
    Code,
    Filter,
    Requeue,
    ScheduleContext,
    Status,
)
from fleetplace.shared.placement.groups import DecisionGroupResult, Page, build_groups, group_reads, paginate
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.placement.plugins.predicate import PredicateFilter, forget_compiled, warm_predicates
from fleetplace.shared.placement.plugins.spread import SpreadOutcome, spread_reads, spread_select, terms_of
from fleetplace.shared.placement.plugins.taints import TaintTolerationFilter
from fleetplace.shared.placement.reads import Reads
from fleetplace.shared.placement.shared_totals import totals
from fleetplace.shared.placement.totals import EMPTY, Plan, Totals, aborted, plan_of
from fleetplace.shared.placement.weights import WeightError, prioritizer_reads, resolve

FILTERS: tuple[Filter, ...] = (PredicateFilter(), TaintTolerationFilter())
# the debugger's names of the filter pipeline after each filter: "Predicate", "Predicate,TaintToleration"
PIPELINES = tuple(",".join(f.name for f in FILTERS[: i + 1]) for i in range(len(FILTERS)))


@dataclass(frozen=True)
class PrioritizerScores:
    name: str
    weight: int
    scores: Mapping[str, int]  # raw, unweighted; clusters without an entry are absent


@dataclass(frozen=True, slots=True)
class Contribution:
    """A selected cluster's rank, total and per-prioritizer (name, score, weight): `contributions`."""

    cluster: str
    rank: int
    total: int
    parts: tuple[tuple[str, int, int], ...]


class ScheduleResult:
    """The outcome of one run: what to publish and what explains it (one per run: a plain class,
    read-only by convention; what it derives is computed on first use and kept)."""

    def __init__(
        self,
        placement: str,
        now: datetime,
        status: Status,
        eligible_sets: tuple[str, ...],
        bindings: int,
        _available: Any,  # slots of the available clusters (names materialised on demand)
        _filtered: tuple[tuple[str, Any], ...],  # (filter pipeline name, slots of the survivors)
        selected: tuple[str, ...],  # rank order
        groups: tuple[DecisionGroupResult, ...],
        pages: tuple[Page, ...],
        _requeue_inputs: Any,  # (context, plan, post-filter slots, previous decision, new one or None)
        unscheduled: int,
        conditions: tuple[Condition, ...],
        skipped: str | None = None,  # the run did nothing (disabled, deleting, a broken set)
        _spread: Any = None,  # SpreadOutcome when spread constraints applied
        _selected_totals: tuple[int, ...] = (),  # aligned with `selected`
        _slot_names: Any = None,  # the fleet's slot -> name snapshot
        _post: Any = None,  # post-filter slots, unordered
        _scored: Totals | None = None,  # their scores, arrays built on demand
        _selected_at: tuple[int, ...] = (),  # aligned with `selected`: indices into `_post`
    ) -> None:
        self.placement = placement
        self.now = now
        self.status = status
        self.eligible_sets = eligible_sets
        self.bindings = bindings
        self._available = _available
        self._filtered = _filtered
        self.selected = selected
        self.groups = groups
        self.pages = pages
        self._requeue_inputs = _requeue_inputs
        self._requeues: tuple[Requeue, ...] | None = None
        self.unscheduled = unscheduled
        self.conditions = conditions
        self.skipped = skipped
        self._spread = _spread
        self._selected_totals = _selected_totals
        self._slot_names = _slot_names
        self._post = _post
        self._scored = _scored
        self._selected_at = _selected_at
        self._available_names: tuple[str, ...] | None = None
        self._filtered_names: tuple[tuple[str, tuple[str, ...]], ...] | None = None
        self._ranked: tuple[str, ...] | None = None
        self._post_names: tuple[str, ...] | None = None
        self._decisions: tuple[str, ...] | None = None
        self._scores: dict[str, int] | None = None
        self._prioritizers: tuple[PrioritizerScores, ...] | None = None

    def __repr__(self) -> str:
        return (
            f"ScheduleResult(placement={self.placement!r}, status={self.status!r}, "
            f"selected={self.selected!r}, skipped={self.skipped!r})"
        )

    @property
    def available(self) -> tuple[str, ...]:
        """Clusters of the eligible sets, terminating ones excluded."""
        if self._available_names is None:
            self._available_names = (
                tuple(self._slot_names[self._available].tolist()) if self._available is not None else ()
            )
        return self._available_names

    @property
    def filtered(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(filter pipeline name, survivors): the debugger's filteredPipelineResults, the last in rank order."""
        if self._filtered_names is None:
            out = [(name, tuple(self._slot_names[arr].tolist())) for name, arr in self._filtered]
            if out and not self.status.aborts:
                out[-1] = (out[-1][0], self.ranked)
            self._filtered_names = tuple(out)
        return self._filtered_names

    @property
    def ranked(self) -> tuple[str, ...]:
        """Post-filter clusters by total descending, then name."""
        if self._ranked is None:
            if self._post is None or self._scored is None:
                self._ranked = ()
            else:
                self._ranked = tuple(self._slot_names[self._post[self._scored.top(None)]].tolist())
        return self._ranked

    @property
    def _names(self) -> tuple[str, ...]:
        if self._post_names is None:
            self._post_names = tuple(self._slot_names[self._post].tolist()) if self._post is not None else ()
        return self._post_names

    @property
    def requeues(self) -> tuple[Requeue, ...]:
        """When time alone will change this run's answer: every plugin's requeue against the
        previous decision and, when it changed, against the new one (OCM runs the placement again
        after writing its decision). Worked out on first use from the fleet as it then is: read
        it before changing the fleet."""
        if self._requeues is None:
            if self._requeue_inputs is None:
                self._requeues = ()
            else:
                ctx, plan, slots, before, after = self._requeue_inputs
                found = _requeues(ctx, plan, slots, before)
                if after is not None:
                    found.extend(_requeues(ctx, plan, slots, after, reported=False))
                self._requeues = tuple(found)
                self._requeue_inputs = None
        return self._requeues

    @property
    def requeue_at(self) -> datetime | None:
        """OCM's requeueAfter, as a time: the earliest reported requeue (against the previous
        decision)."""
        return min((r.at for r in self.requeues if r.reported), default=None)

    @property
    def feasible(self) -> int:
        """How many clusters passed the filters (0 when the run aborted)."""
        return len(self._post) if self._post is not None else 0

    @property
    def decisions(self) -> tuple[str, ...]:
        """Cluster names in the order they appear across the PlacementDecision pages."""
        if self._decisions is None:
            self._decisions = tuple(n for p in self.pages for n in p.clusters)
        return self._decisions

    @property
    def number_selected(self) -> int:
        return len(self.selected)

    @property
    def scores(self) -> dict[str, int]:
        """Total weighted score of every post-filter cluster (empty when scheduling aborted)."""
        if self._scores is None:
            self._scores = (
                {}
                if self._scored is None
                else dict(zip(self._names, self._scored.totals.tolist(), strict=True))
            )
        return self._scores

    def scores_of(self, names: set[str]) -> dict[str, int]:
        """Total scores of these clusters (those that passed the filters); cheap for the selected."""
        out = {n: s for n, s in zip(self.selected, self._selected_totals, strict=False) if n in names}
        if len(out) < len(names) and self._scored is not None:  # this placement's previous decisions
            for i, total in self._scored.known().items():
                name = self._slot_names[self._post[i]]
                if name in names:
                    out[name] = total
        if len(out) < len(names):
            scores = self.scores
            out.update((n, scores[n]) for n in names - out.keys() if n in scores)
        return out

    @property
    def prioritizers(self) -> tuple[PrioritizerScores, ...]:
        if self._prioritizers is None:
            self._prioritizers = self._prioritizer_scores()
        return self._prioritizers

    def _prioritizer_scores(self) -> tuple[PrioritizerScores, ...]:
        out = []
        for name, weight, scores, has in self._scored.rows if self._scored is not None else ():
            vals = scores.tolist()
            mask = [True] * len(vals) if has is None else has.tolist()
            out.append(
                PrioritizerScores(
                    name, weight, {n: v for n, v, m in zip(self._names, vals, mask, strict=True) if m}
                )
            )
        return tuple(out)

    def contributions(self) -> tuple[Contribution, ...]:
        """Of each selected cluster, in `selected` order: its rank among the post-filter clusters
        (1 = first of `ranked`), its total and each prioritizer's (name, score, weight) where that
        prioritizer scored it. What `ranked`, `scores` and `prioritizers` say of these clusters,
        read from the score arrays for the few selected instead of every post-filter cluster
        (`reasons.decision_reasons_reference` reads those; tests/placement/test_reasons.py holds
        the two equal)."""
        scored = self._scored
        if scored is None or not self._selected_at or len(self._selected_at) != len(self.selected):
            return ()
        at = list(self._selected_at)
        if self._spread is None:
            ranks = list(range(1, len(at) + 1))  # the top of the ranking, in rank order
        else:  # spread picks in its own order: count who ranks before each
            keys = scored.keys
            ranks = [int(np.count_nonzero(keys < keys[i])) + 1 for i in at]
        rows = scored.rows_at(at)
        out: list[Contribution] = []
        for i, cluster in enumerate(self.selected):
            parts = tuple(
                (name, values[i], weight) for name, weight, values, has in rows if has is None or has[i]
            )
            out.append(Contribution(cluster, ranks[i], self._selected_totals[i], parts))
        return tuple(out)

    def spread_reason(self, cluster: str) -> str | None:
        """The spread term that kept this post-filter cluster out, if any (beyond OCM)."""
        if self._spread is None or cluster in self.selected or self._post is None:
            return None
        for slot in self._post.tolist():
            if self._slot_names[slot] == cluster:
                reason: str | None = self._spread.reason(slot)
                return reason
        return None

    def requeue_after_seconds(self) -> float | None:
        if self.requeue_at is None:
            return None
        return (self.requeue_at - self.now).total_seconds()


def _eligible(placement: Placement, fleet: Fleet) -> tuple[int, tuple[str, ...]]:
    """The sets bound to the placement's namespace that exist, intersected with spec.clusterSets
    when given; and how many bound sets exist."""
    ns_bindings = fleet.bindings.get(placement.metadata.namespace, {})
    bound = {name for name in ns_bindings if name in fleet.sets}
    wanted = placement.spec.cluster_sets
    eligible = bound & set(wanted) if wanted else bound
    return len(bound), tuple(sorted(eligible))


class _PlacementMemo:
    """What is worked out once per Placement object (and engine options), by placement key."""

    def __init__(self) -> None:
        self.plans: dict[str, tuple[Placement, EngineOptions, Plan]] = {}
        # what the Placement object alone decides of a run, and whether it reads other
        # placements' decisions (see `run_signature`)
        self.signatures: dict[str, tuple[Placement, EngineOptions, tuple[Any, ...], bool]] = {}


def _plan(placement: Placement, fleet: Fleet, options: EngineOptions) -> Plan:
    """The weighted prioritizers, resolved once per Placement object (they are stateless)."""
    plans = fleet.memo(_PlacementMemo).plans
    hit = plans.get(placement.key)
    if hit is not None and hit[0] is placement and hit[1] == options:
        return hit[2]
    try:
        plan = plan_of(resolve(placement.spec.prioritizer_policy, options))
    except WeightError:
        plans.pop(placement.key, None)
        raise
    plans[placement.key] = (placement, options, plan)
    return plan


def reads_of(placement: Placement, options: EngineOptions | None = None) -> Reads:
    """Which cluster fields this placement's decision can depend on, beyond set membership,
    terminating and taints (which every placement reads): what its filters, its spread terms, its
    decision groups and its prioritizers declare."""
    reads = prioritizer_reads(placement.spec.prioritizer_policy, options or DEFAULT_OPTIONS)
    for f in FILTERS:
        reads = reads | f.reads(placement)
    return reads | spread_reads(placement) | group_reads(placement)


def run_signature(
    placement: Placement, fleet: Fleet, now: datetime, options: EngineOptions | None = None
) -> tuple[Any, ...]:
    """Everything `schedule(placement, fleet, now)` reads, as one hashable value: two placements
    with equal signatures get the same result but for its `placement` key and its PlacementDecision
    `pages` (named after the placement). Used to evaluate placements that cannot differ once.

    What a run reads, and where the signature has it: the namespace (its bindings) and the spec
    (canonical JSON, kept per Placement object); whether it is deleting or disabled; the fleet
    version (clusters, their taints and sets) and the score version (AddOn scores); the names of
    the namespace's bindings (unversioned, so listed); the placement's own decisions (Steady,
    NoSelectIfNew tolerations, requeue); every placement's decision counts — as the decisions
    version — only when a prioritizer reads them (Balance); `now` and the engine options."""
    meta = placement.metadata
    options = options or DEFAULT_OPTIONS
    signatures = fleet.memo(_PlacementMemo).signatures
    hit = signatures.get(placement.key)
    if hit is None or hit[0] is not placement or hit[1] != options:
        try:
            plan = _plan(placement, fleet, options)
            others = any(w.prioritizer.reads.other_decisions for w in plan.weighted)
        except WeightError:
            others = False  # the run aborts before any prioritizer reads the decisions
        # what the Placement object alone decides, worked out once per object
        alone = (
            meta.namespace,
            placement.spec.model_dump_json(),
            meta.deletion_timestamp is not None,
            meta.annotations.get(DISABLE_ANNOTATION) == "true",
            options,
        )
        hit = signatures[placement.key] = (placement, options, alone, others)
    _, _, alone, others = hit
    return (
        alone,
        fleet.version,
        fleet.score_version,
        frozenset(fleet.bindings.get(meta.namespace, ())),
        frozenset(fleet.decisions.own(meta.namespace, meta.name).items()),
        fleet.decisions.version if others else None,
        now,
    )


def _requeues(
    ctx: ScheduleContext, plan: Plan, slots: Any, decided: Iterable[str], *, reported: bool = True
) -> list[Requeue]:
    """Each filter's and prioritizer's requeue against the clusters `decided`."""
    out: list[Requeue] = []
    for f in FILTERS:
        r = f.requeue(ctx, slots, decided)
        if r is not None:
            out.append(r if reported or not r.reported else Requeue(r.at, r.trigger, reported=False))
    for w in plan.weighted:
        r = w.prioritizer.requeue(ctx, slots, decided)
        if r is not None:
            out.append(r if reported or not r.reported else Requeue(r.at, r.trigger, reported=False))
    return out


def _decision_groups(
    placement: Placement, fleet: Fleet, selected: tuple[str, ...], by_score: Mapping[str, int] | None
) -> tuple[tuple[DecisionGroupResult, ...], str | None, tuple[Page, ...]]:
    """The decision groups (one empty group on a bad strategy), their error and their pages."""
    strategy = placement.spec.decision_strategy.group_strategy
    groups, error = build_groups(strategy, selected, fleet.clusters, by_score)
    if error is not None:
        groups = [DecisionGroupResult("", 0, ())]
    return tuple(groups), error, tuple(paginate(placement.metadata.name, groups))


def forget(fleet: Fleet, key: str) -> None:
    """Drop what is kept for one placement across schedules (it was deleted)."""
    memo = fleet.memo(_PlacementMemo)
    memo.plans.pop(key, None)
    memo.signatures.pop(key, None)
    forget_compiled(fleet, key)


def prepare(placement: Placement, fleet: Fleet, deadline: float) -> bool:
    """Do ahead, in bounded steps, the part of the next `schedule` of this placement whose cost has
    no bound worth the name: its CEL predicate verdicts (up to the cost limit per cluster). Works
    until `time.perf_counter()` passes `deadline`; True when nothing is left. `schedule` gives the
    same result whether or not this ran."""
    meta = placement.metadata
    if (
        not placement.spec.predicates
        or meta.deletion_timestamp is not None
        or meta.annotations.get(DISABLE_ANNOTATION) == "true"
    ):
        return True
    _, eligible = _eligible(placement, fleet)
    try:
        slots = fleet.candidates(eligible)
    except SetSelectorError:
        return True
    return warm_predicates(fleet, placement, slots, deadline)


def schedule(
    placement: Placement, fleet: Fleet, now: datetime, *, options: EngineOptions | None = None
) -> ScheduleResult:
    key = placement.key
    meta = placement.metadata
    own = fleet.decisions.own(meta.namespace, meta.name)

    def skipped(why: str) -> ScheduleResult:
        return ScheduleResult(key, now, SUCCESS, (), 0, None, (), (), (), (), None, 0, (), skipped=why)

    # deleting or disabled placements are left alone: their decisions stay as they are
    if meta.deletion_timestamp is not None:
        return skipped("deleting")
    if meta.annotations.get(DISABLE_ANNOTATION) == "true":
        return skipped("disabled")

    bindings, eligible = _eligible(placement, fleet)
    try:
        slots = fleet.candidates(eligible)
    except SetSelectorError as error:  # the sync fails, nothing is written
        return skipped(f"cluster set selector: {error}")
    available = slots
    ctx = ScheduleContext(placement, fleet, now, own, options, lineage=("candidates", eligible))

    status = SUCCESS
    filtered: list[tuple[str, Any]] = []
    for f, pipeline in zip(FILTERS, PIPELINES, strict=True):
        result = f.filter(ctx, slots)
        if result.status.aborts:
            status = result.status
            slots = EMPTY
            break
        if result.slots is not slots:
            ctx.lineage = result.lineage
        slots = result.slots
        filtered.append((pipeline, slots))
        if result.status.code is Code.WARNING:
            status = result.status

    plan: Plan | None = None
    if not status.aborts:
        try:
            plan = _plan(placement, fleet, options or DEFAULT_OPTIONS)
        except WeightError as e:
            status = e.status
            slots = EMPTY

    requeue_from: tuple[str, ...] | None = None  # the previous decision, when the run can requeue
    if plan is None:
        scored = aborted(status)
    else:
        scored = totals(ctx, plan, slots, status)
        status = scored.status
        if status.aborts:
            slots = EMPTY
        else:
            requeue_from = tuple(own)
    slot_names = fleet.names_snapshot()
    spread: SpreadOutcome | None = None
    spread_detail: str | None = None
    selected_totals: tuple[int, ...] = ()
    selected_at: tuple[int, ...] = ()
    n = placement.spec.number_of_clusters
    if n is not None and n < 0 and not status.aborts:
        # Go panics on a negative bound; we report it instead (docs/compatibility.md)
        status = Status(Code.MISCONFIGURED, "", f"numberOfClusters must not be negative: {n}")
    if status.aborts:
        selected: tuple[str, ...] = ()
        unscheduled = max(n, 0) if n is not None else 0
        requeue_from = None
    else:
        terms = terms_of(placement) if n is not None else []
        if terms and n is not None:  # spread applies only when numberOfClusters is set
            spread = spread_select(fleet, slots, scored.keys, n, terms, ctx.lineage)
            chosen = np.asarray(spread.chosen, dtype=np.int64)
            selected = tuple(slot_names[slots[chosen]].tolist())
            selected_totals = tuple(scored.totals[chosen].tolist())
            selected_at = tuple(chosen.tolist())
            if spread.blocked_by is not None and len(selected) < n:
                spread_detail = f"{spread.blocked_by.describe()} leaves no admissible cluster"
        else:
            top = scored.top(n)
            selected = tuple(slot_names[slots[top]].tolist())
            selected_totals = tuple(scored.totals_of(top))
            selected_at = tuple(top)
        unscheduled = (n - len(selected)) if n is not None else 0

    by_score = None
    if placement.spec.sort_by == "Score" and selected:
        by_score = {
            n: int(t) for n, t in zip(slot_names[slots].tolist(), scored.totals.tolist(), strict=True)
        }
    groups, group_error, pages = _decision_groups(placement, fleet, selected, by_score)
    final = status
    if group_error is not None:
        # OCM deletes every PD here yet reports the selection as scheduled. We treat
        # it like every other misconfiguration instead: the selection is emptied, one empty
        # group remains, and the status says so (docs/compatibility.md).
        final = Status(Code.MISCONFIGURED, "", group_error)
        selected, selected_totals, selected_at = (), (), ()

    conditions = (
        misconfigured_condition(final),
        satisfied_condition(
            bindings=bindings,
            spec_cluster_sets=placement.spec.cluster_sets,
            eligible_sets=eligible,
            available=len(available),
            final=final,
            selected=len(selected),
            unscheduled=unscheduled,
            detail=spread_detail,
        ),
    )
    return ScheduleResult(
        placement=key,
        now=now,
        status=final,
        eligible_sets=eligible,
        bindings=bindings,
        _available=available,
        _filtered=tuple(filtered),
        selected=selected,
        groups=groups,
        pages=pages,
        _requeue_inputs=(
            None
            if requeue_from is None
            else (ctx, plan, slots, requeue_from, selected if set(selected) != own.keys() else None)
        ),
        unscheduled=unscheduled,
        conditions=conditions,
        _slot_names=slot_names,
        _post=slots,
        _scored=scored,
        _spread=spread,
        _selected_totals=selected_totals,
        _selected_at=selected_at,
    )
