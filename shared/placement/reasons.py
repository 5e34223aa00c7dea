"""Why each cluster of a decision was chosen, in one line: what KEP-5313's `decisions[].reason`
carries ("for debugging and auditing") and OCM leaves empty.

`rank 2/512, score 184: AddOn/demo/demo 80×1 + ResourceAllocatableCPU 54×1 + Balance 50×1` —
the cluster's place among the clusters that passed the filters (by total score, then name, as
the engine ranks them), its total, and each prioritizer's score × weight (prioritizers of weight 0
count for nothing and are left out). A cluster that stays only because it was already decided
says so: `kept though tainted maintenance:NoSelectIfNew (already decided)`. Computed from the same
result `explain` shows, so a replay of the same inputs gives the same words.
"""

from __future__ import annotations

from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.plugins.taints import matched_by_toleration
from fleetplace.shared.placement.scheduler import ScheduleResult

__all__ = ["decision_reasons", "decision_reasons_reference"]


def decision_reasons(result: ScheduleResult, placement: Placement, fleet: Fleet) -> dict[str, str]:
    """cluster -> reason, for every cluster of `result.decisions`: what
    `decision_reasons_reference` says, read from the score arrays of the selected clusters only
    (`ScheduleResult.contributions`), so its cost follows the decision, not the fleet."""
    decided = result.decisions
    if not decided:
        return {}
    found = {c.cluster: c for c in result.contributions()}
    if len(found) != len(decided):  # not a fresh selection (a skipped run keeps the decision in force)
        return decision_reasons_reference(result, placement, fleet)
    feasible = result.feasible
    out: dict[str, str] = {}
    for name in decided:
        c = found[name]
        parts = [(p, score, weight) for p, score, weight in c.parts if weight != 0]
        kept = _kept_despite(name, placement, fleet, result)
        out[name] = _sentence(f"rank {c.rank}/{feasible}", c.total, parts, kept)
    return out


def decision_reasons_reference(result: ScheduleResult, placement: Placement, fleet: Fleet) -> dict[str, str]:
    """`decision_reasons` the plain way: from the whole ranking and every prioritizer's scores."""
    decided = result.decisions
    if not decided:
        return {}
    ranked = result.ranked
    rank = {name: i for i, name in enumerate(ranked, 1)}
    totals = result.scores_of(set(decided))
    rows = [p for p in result.prioritizers if p.weight != 0]
    out: dict[str, str] = {}
    for name in decided:
        place = rank.get(name)
        where = f"rank {place}/{len(ranked)}" if place is not None else "kept from the decision in force"
        parts = [(p.name, p.scores[name], p.weight) for p in rows if name in p.scores]
        kept = _kept_despite(name, placement, fleet, result)
        out[name] = _sentence(where, totals.get(name, 0), parts, kept)
    return out


def _sentence(where: str, total: int, parts: list[tuple[str, int, int]], kept: str) -> str:
    """`<where>, score <total>: <prioritizer> <score>×<weight> + …[; kept though tainted …]`."""
    text = f"{where}, score {total}"
    if parts:
        text += ": " + " + ".join(f"{name} {score}×{weight}" for name, score, weight in parts)
    if kept:
        text += f"; kept though tainted {kept} (already decided)"
    return text


def _kept_despite(name: str, placement: Placement, fleet: Fleet, result: ScheduleResult) -> str:
    """The NoSelectIfNew taints no toleration covers: the cluster passed only because it was
    already in the placement's decision."""
    if name not in fleet.tainted_names:  # most clusters carry no taint at all
        return ""
    info = fleet.clusters.get(name)
    if info is None:
        return ""
    tolerations = placement.spec.tolerations
    return ", ".join(
        f"{t.key}:{t.effect}"
        for t in info.taints
        if t.effect == "NoSelectIfNew" and not matched_by_toleration(t, tolerations, result.now)[0]
    )
