"""`fleetplace rollout explain`: a rollout's answer in force at a time, rebuilt from the state
its diff was computed from, with why each cluster is where it is."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.rollout_check import decided, differing
from fleetplace.services.auditor.rollout_log import RolloutDiffRecord, RolloutLog
from fleetplace.services.auditor.rollout_replay import RolloutReplay, RolloutWalk
from fleetplace.services.rollout.listing import ClusterLine, Reported, group_label, placement_lines
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.rollout import Instant, RolloutStrategy, StrategyType


class NoRolloutDiff(LookupError):
    """No diff of the rollout was evaluated at or before the time asked for."""


def diff_in_force(log: RolloutLog, key: str, at: datetime | None) -> RolloutDiffRecord:
    """The highest-seq diff of `key` evaluated at or before `at` (the latest if `at` is None)."""
    limit = None if at is None else Instant.from_datetime(at).unix_nanos
    candidates = [d for d in log.diffs if d.key == key and (limit is None or d.now.unix_nanos <= limit)]
    if not candidates:
        when = "" if at is None else f" at or before {at.isoformat()}"
        raise NoRolloutDiff(f"no diff of rollout {key} was published{when}")
    return max(candidates, key=lambda d: (d.seq, -d.offset))


def _mandatory(strategy: RolloutStrategy, group_name: str, group_index: int) -> bool:
    return any(
        (m.group_name == group_name) if m.group_name else (m.group_index == group_index)
        for m in strategy.mandatory_groups
    )


def why(strategy: RolloutStrategy | None, line: ClusterLine, breach: bool) -> str:
    """The rule that put a cluster where the answer has it (docs/rollouts.md)."""
    until = line.until or "no deadline"
    if line.listed == "removed":
        return "reported, but in none of the placement's decision groups: removed"
    if line.listed == "timeout":
        return f"no success within progressDeadline (deadline {until}): timed out, counts as a failure"
    if line.listed == "told":
        return "told to roll out; stays told until its deployer's first report of the revision is read"
    if not line.listed:
        if line.status == "Succeeded":
            return "succeeded and soaked for minSuccessTime: done"
        if line.status == "Skip":
            return "skipped by the deployer"
        if breach:
            return "maxFailures breached: the rollout stops, nothing new is rolled out"
        return "waits for its turn"
    if line.status == "Progressing":
        return f"progressing: keeps its place until its deadline ({until})"
    if line.status == "Succeeded":
        return f"succeeded: soaking for minSuccessTime until {until}"
    if line.status == "Failed":
        return f"failed before its deadline ({until}): stays listed, counts as a failure"
    group = group_label(line.group_name, line.group_index)
    if strategy is None:
        return "new: to apply now"
    if strategy.type != StrategyType.ALL and _mandatory(strategy, line.group_name, line.group_index):
        return f"new: mandatory group {group} goes first, tolerating no failure"
    if strategy.type == StrategyType.ALL:
        return "new: All rolls out to every placed cluster at once"
    if strategy.type == StrategyType.PROGRESSIVE:
        return f"new: a free slot of maxConcurrency {strategy.max_concurrency or 'all'}, by cluster name"
    return f"new: group {group} is the first unfinished decision group"


@dataclass
class RolloutExplanation:
    record: RolloutDiffRecord
    at: datetime | None
    reproduced: bool = False
    differs: list[str] = field(default_factory=list)
    answer: dict[str, Any] | None = None  # the state record's answer; None for a deleted rollout
    clusters: list[dict[str, Any]] = field(default_factory=list)  # per placement, per cluster

    def to_json(self) -> dict[str, Any]:
        r = self.record
        answer = self.answer or {}
        return {
            "rollout": r.key,
            "at": None if self.at is None else Instant.from_datetime(self.at).rfc3339(),
            "record": {
                "seq": r.seq,
                "record": r.where,
                "source": r.source,
                "evaluatedAt": r.evaluated_at,
                "trigger": dict(r.trigger),
            },
            "deleted": r.deleted,
            "revision": r.value.get("revision"),
            "clustersToRollout": list(r.value.get("clusters") or []),
            "maxFailureBreach": answer.get("maxFailureBreach", False),
            "nextRecheckAt": answer.get("nextRecheckAt"),
            "complete": answer.get("complete", False),
            "reproduced": self.reproduced,
            "differs": self.differs,
            "placements": [
                {
                    "name": p["name"],
                    "decided": p["decided"],
                    "maxFailureBreach": p["maxFailureBreach"],
                    "error": p["error"],
                }
                for p in answer.get("placements") or ()
            ],
            "clusters": self.clusters,
        }


def explain_rollout(
    history: History, key: str, at: datetime | None = None, limits: DecodeLimits = DEFAULT_LIMITS
) -> RolloutExplanation:
    """The rollout's answer in force at `at` (the latest without), rebuilt from the state its diff
    was computed from, with why each cluster is where it is."""
    walk = RolloutWalk(history, limits)
    target = diff_in_force(walk.log, key, at)
    out = RolloutExplanation(target, at)

    def visit(replay: RolloutReplay, record: RolloutDiffRecord) -> None:
        recomputed = replay.recompute(key, record.now, walk.previous(record))
        out.differs = differing(decided(record.value), decided(recomputed) if recomputed else None)
        out.reproduced = not out.differs
        processor = replay.processor
        held = processor.rollouts.get(key)
        if held is None:
            return
        answer, _ = processor.answer(held, record.now)
        out.answer = answer
        revision = held.rollout.spec.revision
        reports = {
            c: Reported(status, Instant(since).rfc3339())
            for c, (rev, status, since) in processor.reports.get(key, {}).items()
            if rev == revision
        }
        for placement, strategy, name in zip(
            answer["placements"], held.strategies, held.placements, strict=True
        ):
            groups = [
                {"groupName": g.group_name, "groupIndex": g.group_index, "clusters": list(g.clusters)}
                for g in processor.placements.get(name) or ()
            ]
            for line in placement_lines(placement, groups, reports):
                out.clusters.append(
                    {**line.to_json(), "why": why(strategy, line, placement["maxFailureBreach"])}
                )

    walk.walk(visit, lambda record: record is target)
    return out
