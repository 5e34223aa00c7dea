"""A rollout as people read it — what the explorer's Rollouts pages and `fleetplace rollout
status` show —, shaped from the rollout book and the placements' decisions: pure functions. A cluster's status is the one the rollout state lists it with, else the deployer's
report of the revision, else ToApply (services/rollout/listing.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetplace.services.rollout.book import RolloutBook
from fleetplace.services.rollout.listing import (
    ClusterLine,
    counts,
    group_label,
    placement_counts,
    placement_lines,
)

# A placement's decision groups now (`groupName`, `groupIndex`, `clusters`); None: no decision.
GroupsOf = Callable[[str], Sequence[Mapping[str, Any]] | None]


@dataclass(frozen=True, slots=True)
class RolloutPlacement:
    name: str  # the Placement in the rollout's namespace
    key: str  # `<namespace>/<name>`
    strategy: Mapping[str, Any]
    decided: bool
    error: str | None
    breach: bool
    counts: Mapping[str, int]  # placed clusters by status
    lines: tuple[ClusterLine, ...]  # empty unless asked for (rollout_row's `lines`)


@dataclass(frozen=True, slots=True)
class RolloutRow:
    key: str
    namespace: str
    name: str
    revision: str | None
    placements: tuple[RolloutPlacement, ...]
    complete: bool
    breach: bool
    deleted: bool  # no object, or the final diff was published
    seq: int
    changed_at: str | None
    trigger: str
    next_recheck_at: str | None

    @property
    def counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for p in self.placements:
            for status, n in p.counts.items():
                total[status] = total.get(status, 0) + n
        return total

    @property
    def placed(self) -> int:
        return sum(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        state = rollout_state(self)
        return {
            "rollout": self.key,
            "state": state.word,
            "stateReason": state.reason,
            "namespace": self.namespace,
            "name": self.name,
            "revision": self.revision,
            "placements": [p.name for p in self.placements],
            "counts": self.counts,
            "complete": self.complete,
            "maxFailureBreach": self.breach,
            "deleted": self.deleted,
            "seq": self.seq,
            "changedAt": self.changed_at,
            "trigger": self.trigger,
            "nextRecheckAt": self.next_recheck_at,
        }


# The words for a maxFailures breach, wherever it is shown (the state and a placement's next steps).
BREACH = "more clusters failed than maxFailures allows: no cluster beyond those listed now rolls out"


@dataclass(frozen=True, slots=True)
class RolloutState:
    """Where a rollout stands, in one word and the sentence that says why."""

    word: str  # Deleted, Error, Breached, Complete, In progress
    reason: str


def rollout_state(row: RolloutRow) -> RolloutState:
    """The one state of a rollout, as the explorer and `fleetplace rollout status` show it. The
    first that holds wins: deleted, a strategy error, a maxFailures breach, complete, in progress
    (docs/rollouts.md#where-a-rollout-stands)."""
    if row.deleted:
        return RolloutState("Deleted", "the rollout was deleted: nothing rolls out")
    errors = [p for p in row.placements if p.error]
    if errors:
        return RolloutState(
            "Error", "; ".join(f"placement {p.name}: {p.error}" for p in errors) + ": nothing rolls out"
        )
    if row.breach:
        return RolloutState("Breached", BREACH)
    if row.complete:
        return RolloutState("Complete", "every placed cluster succeeded (its soak over) or was skipped")
    if not any(p.decided for p in row.placements):
        return RolloutState("In progress", "no placement has a decision yet: nothing to roll out")
    return RolloutState("In progress", f"rolling out revision {row.revision or '—'}")


def diff_trigger(diff: Mapping[str, Any]) -> str:
    trigger = diff.get("trigger") or {}
    kind, key = trigger.get("kind"), trigger.get("key")
    return f"{kind}:{key}" if key else str(kind or "")


def rollout_row(book: RolloutBook, key: str, groups_of: GroupsOf, *, lines: bool = True) -> RolloutRow:
    """The rollout as people read it; without `lines`, its placements carry their counts but no
    cluster lines (a list of every rollout needs no more)."""
    namespace, _, name = key.partition("/")
    state = book.states.get(key) or {}
    latest = book.latest(key) or {}
    revision = book.revision(key)
    reports = book.reports(key, revision)
    listed = {str(p.get("name")): p for p in state.get("placements") or ()}
    placements = []
    for ref in book.placements(key):
        entry = listed.get(ref, {"name": ref})
        groups = groups_of(f"{namespace}/{ref}")
        shown: list[ClusterLine] = []
        if not state:
            by_status = counts(())
        elif lines:
            shown = placement_lines(entry, groups or (), reports)
            by_status = counts(shown)
        else:
            by_status = placement_counts(entry, groups or (), reports)
        placements.append(
            RolloutPlacement(
                ref,
                f"{namespace}/{ref}",
                book.strategy(key, ref),
                bool(entry.get("decided", groups is not None)),
                entry.get("error"),
                bool(entry.get("maxFailureBreach")),
                by_status,
                tuple(shown),
            )
        )
    return RolloutRow(
        key=key,
        namespace=namespace,
        name=name,
        revision=revision,
        placements=tuple(placements),
        complete=bool(state.get("complete")),
        breach=bool(state.get("maxFailureBreach")),
        deleted=key not in book.objects or bool(latest.get("deleted")),
        seq=int(latest.get("seq") or state.get("seq") or 0),
        changed_at=latest.get("evaluatedAt"),
        trigger=diff_trigger(latest) if latest else "",
        next_recheck_at=state.get("nextRecheckAt"),
    )


def strategy_text(strategy: Mapping[str, Any]) -> str:
    """`ProgressivePerGroup · mandatory canary · minSuccessTime 5m · …`: the strategy in a line."""
    kind = str(strategy.get("type") or "")
    settings = strategy.get(kind[:1].lower() + kind[1:]) if kind else None
    parts = [kind] if kind else []
    for field, value in (settings or {}).items() if isinstance(settings, Mapping) else ():
        if field == "mandatoryDecisionGroups" and isinstance(value, list):
            names = [
                str(g.get("groupName") or f"#{g.get('groupIndex')}") for g in value if isinstance(g, Mapping)
            ]
            parts.append("mandatory " + ", ".join(names))
        else:
            parts.append(f"{field} {value}")
    return " · ".join(parts)


def what_next(placement: RolloutPlacement) -> list[str]:
    """What rolls out next on one placement, sentence by sentence."""
    if placement.error:
        return [f"Nothing rolls out: the strategy has an error: {placement.error}"]
    if not placement.decided:
        return ["The placement has no decision yet: nothing to roll out."]
    lines = [line for line in placement.lines if line.listed != "removed"]
    out = []
    if placement.breach:
        out.append(f"Breached: {BREACH}.")
    apply = [line.cluster for line in lines if line.listed == "rollout" and line.status == "ToApply"]
    if apply:
        out.append(f"Apply now to {len(apply)}: {_names(apply)}.")
    waiting = [line.cluster for line in lines if line.listed == "rollout" and line.status == "Progressing"]
    if waiting:
        out.append(f"Waiting for reports from {len(waiting)}: {_names(waiting)}.")
    told = [line.cluster for line in lines if line.listed == "told"]
    if told:
        out.append(f"Told, waiting for a first report from {len(told)}: {_names(told)}.")
    failed = [line.cluster for line in lines if line.listed == "rollout" and line.status == "Failed"]
    if failed:
        out.append(
            f"Failed {len(failed)}: {_names(failed)}; each counts as a failure and times out at its "
            "deadline unless a new report comes."
        )
    soaking = sorted(
        (line.until or "", line.cluster)
        for line in lines
        if line.listed == "rollout" and line.status == "Succeeded"
    )
    if soaking:
        out.append(
            f"Soaking {len(soaking)}: {_names([c for _, c in soaking])}; the first soak ends {soaking[0][0] or '—'}."
        )
    timed_out = [line.cluster for line in lines if line.listed == "timeout"]
    if timed_out:
        out.append(f"Timed out {len(timed_out)}: {_names(timed_out)}.")
    queued = [line for line in lines if not line.listed and line.status == "ToApply"]
    if queued and not placement.breach:
        group = group_label(queued[0].group_name, queued[0].group_index)
        out.append(
            f"Then {len(queued)} wait their turn, group {group} first: {_names([q.cluster for q in queued])}."
        )
    if not out:
        out.append("Done: every placed cluster succeeded or was skipped." if lines else "No clusters placed.")
    return out


def _names(names: Sequence[str], shown: int = 8) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
