"""The Predicate filter: label AND claim AND CEL inside a predicate, OR across predicates.

No predicates keeps every candidate; a predicate whose selector does not compile makes the
placement Misconfigured."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from fleetplace.shared.api.ocm import ClusterPredicate, Placement
from fleetplace.shared.placement.fleet import ClusterInfo, Fleet, SharedTable
from fleetplace.shared.placement.framework import (
    Code,
    FilterResult,
    IntArray,
    Requeue,
    ScheduleContext,
    Status,
)
from fleetplace.shared.placement.reads import NOTHING, Reads
from fleetplace.shared.placement.selectors import (
    EVERYTHING,
    CompiledSelector,
    SelectorError,
    compile_label_selector,
    compile_requirements,
)

NAME = "Predicate"


@dataclass(frozen=True, slots=True)
class CompiledPredicate:
    key: str  # canonical JSON: the cache identity of this predicate's results
    labels: CompiledSelector
    claims: CompiledSelector
    cel: tuple[Any, ...]  # CompiledCel


class PredicateConfigError(Exception):
    pass


def compile_predicates(predicates: Sequence[ClusterPredicate]) -> list[CompiledPredicate]:
    """Raises PredicateConfigError with the Misconfigured message."""
    out: list[CompiledPredicate] = []
    for p in predicates:
        sel = p.required_cluster_selector
        try:
            labels = compile_label_selector(sel.label_selector)
            claims = (
                CompiledSelector(tuple(compile_requirements(sel.claim_selector.match_expressions)))
                if sel.claim_selector is not None
                else EVERYTHING
            )
        except SelectorError as e:
            raise PredicateConfigError(str(e)) from e
        cel: list[Any] = []
        exprs = sel.cel_selector.cel_expressions if sel.cel_selector is not None else []
        if exprs:
            from fleetplace.shared.placement.cel import CelCompileError, compile_cel

            for expr in exprs:
                try:
                    cel.append(compile_cel(expr))
                except CelCompileError as error:
                    raise PredicateConfigError(str(error)) from error
        key = orjson.dumps(p.model_dump(mode="json", by_alias=True), option=orjson.OPT_SORT_KEYS).decode()
        out.append(CompiledPredicate(key, labels, claims, tuple(cel)))
    return out


class _PredicateMemo:
    """What the filter keeps across placements and runs."""

    def __init__(self) -> None:
        # cluster -> its CEL view, of the ClusterInfo version it was made from
        self.cel_views: dict[str, tuple[ClusterInfo, Mapping[str, Any]]] = {}
        # placement key -> its compiled predicates (or their error), of that Placement object
        self.compiled: dict[str, tuple[Placement, list[CompiledPredicate] | str]] = {}
        # predicate key -> (fleet version, per-slot verdicts: 1, 0, or -1 not computed yet)
        self.verdicts: dict[str, tuple[int, npt.NDArray[np.int8]]] = {}
        # (candidates' lineage, predicate keys) -> the survivors, per fleet version
        self.survivors: SharedTable[IntArray] = SharedTable()


def _cel_view(fleet: Fleet, info: ClusterInfo) -> Mapping[str, Any]:
    from fleetplace.shared.placement.cel import cluster_cel_view

    views = fleet.memo(_PredicateMemo).cel_views
    hit = views.get(info.name)
    if hit is not None and hit[0] is info:
        return hit[1]
    raw = info.raw if info.raw is not None else info.obj.model_dump(mode="json", by_alias=True)
    view = cluster_cel_view(raw)
    views[info.name] = (info, view)
    return view


def matches(fleet: Fleet, pred: CompiledPredicate, info: ClusterInfo) -> bool:
    if not pred.labels.matches(info.labels):
        return False
    if not pred.claims.matches(info.claims):
        return False
    if pred.cel:
        from fleetplace.shared.placement.cel import evaluate_predicate_cel

        return bool(evaluate_predicate_cel(pred.cel, _cel_view(fleet, info), info.name, fleet.score_items))
    return True


def compiled_predicates(fleet: Fleet, placement: Placement) -> list[CompiledPredicate]:
    """`compile_predicates` of this Placement object, done once for it (and its error, raised again
    as PredicateConfigError each time)."""
    kept = fleet.memo(_PredicateMemo).compiled
    hit = kept.get(placement.key)
    if hit is None or hit[0] is not placement:
        compiled: list[CompiledPredicate] | str
        try:
            compiled = compile_predicates(placement.spec.predicates)
        except PredicateConfigError as e:
            compiled = str(e)
        hit = kept[placement.key] = (placement, compiled)
    if isinstance(hit[1], str):
        raise PredicateConfigError(hit[1])
    return hit[1]


def forget_compiled(fleet: Fleet, key: str) -> None:
    fleet.memo(_PredicateMemo).compiled.pop(key, None)


def _verdicts(
    fleet: Fleet, pred: CompiledPredicate, slots: IntArray, deadline: float | None = None
) -> npt.NDArray[np.int8]:
    """Per-slot verdicts (-1 unknown), cached per (predicate, cluster version), with those of
    `slots` computed; with a `deadline` (time.perf_counter()), computing stops once it has passed
    and the rest stay unknown."""
    kept = fleet.memo(_PredicateMemo).verdicts
    hit = kept.get(pred.key)
    if hit is None or len(hit[1]) != fleet.capacity:
        state = np.full(fleet.capacity, -1, dtype=np.int8)
    else:
        version, state = hit
        if version != fleet.version:
            # without CEL a verdict reads only the cluster's labels and claims
            changed = fleet.changed_since(version) if pred.cel else fleet.labels_changed_since(version)
            if changed is None:
                state[:] = -1
            elif changed:
                state[np.asarray(changed, dtype=np.int64)] = -1
    kept[pred.key] = (fleet.version, state)
    for s in slots[state[slots] < 0].tolist():
        state[s] = 1 if matches(fleet, pred, fleet.clusters[fleet.name_of(s)]) else 0
        if deadline is not None and time.perf_counter() > deadline:
            break
    return state


def warm_predicates(fleet: Fleet, placement: Placement, slots: IntArray, deadline: float) -> bool:
    """Compute the CEL verdicts the filter will need for `slots` until `time.perf_counter()` passes
    `deadline`; True when none is left. The verdicts land in the cache `filter` reads, so a caller
    (the worker) can spread an expensive CEL evaluation over short steps with other work between
    them, and the schedule that follows finds them done. Label and claim verdicts are cheap and left
    to the filter."""
    if not placement.spec.predicates or len(slots) == 0:
        return True
    try:
        preds = compiled_predicates(fleet, placement)
    except PredicateConfigError:
        return True  # the filter reports it; nothing to compute
    if any(p.labels.is_everything and p.claims.is_everything and not p.cel for p in preds):
        return True  # the filter keeps every cluster without looking at the rest
    for pred in preds:
        if pred.cel and (_verdicts(fleet, pred, slots, deadline)[slots] < 0).any():
            return False
    return True


def _survivors(fleet: Fleet, preds: Sequence[CompiledPredicate], slots: IntArray) -> IntArray:
    """The candidates some predicate keeps (read-only: shared)."""
    keep = np.zeros(len(slots), dtype=np.bool_)
    for pred in preds:
        keep |= _verdicts(fleet, pred, slots)[slots] == 1
    out = slots[keep]
    out.setflags(write=False)  # shared: nobody may write into it
    return out


class PredicateFilter:
    name = NAME

    def _compiled(self, ctx: ScheduleContext) -> list[CompiledPredicate]:
        return compiled_predicates(ctx.fleet, ctx.placement)

    def filter(self, ctx: ScheduleContext, slots: IntArray) -> FilterResult:
        # no predicates or no candidates: unchanged, and no validation at all
        if not ctx.placement.spec.predicates or len(slots) == 0:
            return FilterResult(slots)
        try:
            preds = self._compiled(ctx)
        except PredicateConfigError as e:
            return FilterResult(slots[:0], Status(Code.MISCONFIGURED, NAME, str(e)))
        if any(p.labels.is_everything and p.claims.is_everything and not p.cel for p in preds):
            return FilterResult(slots)
        # the survivors of the same predicates from the same candidates are one array while the
        # fleet stays: placements sharing predicates then share what is computed from it later
        fleet = ctx.fleet
        if ctx.lineage is None:
            return FilterResult(_survivors(fleet, preds, slots), lineage=None)
        lineage = (ctx.lineage, NAME, tuple(p.key for p in preds))
        kept = fleet.memo(_PredicateMemo).survivors
        found = kept.find(lineage, fleet.version)
        if found is None:
            found = kept.keep(lineage, fleet.version, _survivors(fleet, preds, slots))
        return FilterResult(found, lineage=lineage)

    def reason(self, ctx: ScheduleContext, cluster: str) -> str | None:
        if not ctx.placement.spec.predicates:
            return None
        info = ctx.fleet.clusters[cluster]
        for pred in self._compiled(ctx):
            if matches(ctx.fleet, pred, info):
                return None
        return "matches none of the placement's predicates"

    def reads(self, placement: Placement) -> Reads:
        labels: set[str] = set()
        claims: set[str] = set()
        cel = False
        for pred in placement.spec.predicates:
            sel = pred.required_cluster_selector
            if sel.label_selector is not None:
                labels.update(sel.label_selector.match_labels)
                labels.update(e.key for e in sel.label_selector.match_expressions)
            if sel.claim_selector is not None:
                claims.update(e.key for e in sel.claim_selector.match_expressions)
            if sel.cel_selector is not None and sel.cel_selector.cel_expressions:
                cel = True
        if not labels and not claims and not cel:
            return NOTHING
        return Reads(label_keys=frozenset(labels), claim_keys=frozenset(claims), cel=cel)

    def requeue(self, ctx: ScheduleContext, slots: IntArray, decided: Iterable[str]) -> Requeue | None:
        return None
