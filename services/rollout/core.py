"""The rollout worker's processor: state stores, trigger fan-out, recheck timers and rollout diffs.

No I/O and no clock here: the Kafka shell (`fleetplace.services.rollout.worker`) feeds decoded
records in, ticks the timers with its clock and publishes what `evaluate` returns, so the same
processor runs in the worker, in the benchmark and in tests.

Sources: `placement-decisions` (every placement's current decision groups), `rollouts`,
`rollout-status` (the deployers' reports) and `rollout-decisions` (this worker's own diffs: the
checkpoint, so a restarted or new instance publishes only what differs).

A change marks only the rollouts it can affect: a report its own rollout, a placement's new
decision the rollouts that reference the placement, a rollout itself. Each batch evaluates every
marked rollout once, in key order, and publishes a diff only when the answer changed.

How the rollout function's cluster statuses are built, per placementRef (docs/rollouts.md):
- a cluster in the placement with a report of the rollout's revision passes that report (its
  group key is the group it is in), in the placement's group order then the group's own order;
- a cluster in the placement with no report of this revision is not passed: the function adds
  it as a new `ToApply` in its group, as OCM's appliers do for a cluster that has no work yet;
- a report for a cluster in none of the rollout's placements is not passed: it changes nothing
  (counted as ignored, `not-placed`) until a placement takes the cluster in. The function's
  `clustersRemoved` is therefore empty here (a deployer could otherwise grow a rollout's state
  without bound by reporting clusters that were never placed);
- a cluster told to roll out and not heard from yet stays told (`_awaiting_report`).
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from pydantic import ValidationError

from fleetplace.shared.api.admission import admit
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.api.ocm import DECISION_GROUP_INDEX_LABEL, DECISION_GROUP_NAME_LABEL
from fleetplace.shared.api.rollouts import Rollout, RolloutStatusReport, rollout_key_of_status
from fleetplace.shared.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    Instant,
    RolloutError,
    RolloutStatus,
    RolloutStrategy,
    rollout,
)
from fleetplace.shared.rollout.scenario import render_status
from fleetplace.shared.wording import problems as validation_problems

SCHEMA_VERSION = 1

# topic (without prefix) -> what its records are
PLACEMENT_DECISIONS = "placement-decisions"
ROLLOUTS = "rollouts"
ROLLOUT_STATUS = "rollout-status"
ROLLOUT_DECISIONS = "rollout-decisions"

TRIGGER_KINDS = ("rollout", "status", "placement", "recheck", "startup")
# Why a report that was applied moved no rollout (`fleetplace_rollout_reports_ignored_total`):
# - unchanged: the same revision, status and transition time as the one held (a repeated report);
# - no-rollout: no rollout of that key is held (deleted, or not published yet: the report is kept
#   and counts once the rollout arrives);
# - other-revision: neither it nor the report it replaces is of the rollout's revision;
# - not-placed: the cluster is in none of the rollout's placements (each of them decided): a
#   report is kept, and counts if a placement takes the cluster in later.
IGNORED_REASONS = ("unchanged", "no-rollout", "other-revision", "not-placed")
# What a deployer reports as done: a rollout is complete when every placed cluster is one of these.
_DONE = (RolloutStatus.SUCCEEDED, RolloutStatus.SKIP)


class InvalidRecord(ValueError):
    """A record that cannot be applied; the reason goes to the dead-letter topic."""


@dataclass(frozen=True, slots=True)
class Trigger:
    kind: str  # one of TRIGGER_KINDS
    key: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "key": self.key}


class Report(NamedTuple):
    """One deployer report: the transition time is the record's timestamp when the report has
    none. Held as `HeldReport`, read back with `Report(*held)`."""

    revision: str
    status_name: str
    since_nanos: int

    @property
    def status(self) -> RolloutStatus:
        return RolloutStatus(self.status_name)

    @property
    def last_transition_time(self) -> Instant:
        return Instant(self.since_nanos)


# A report as held: (revision, status, transition time in unix nanos). A plain tuple of atoms,
# which the garbage collector stops tracking; a worker holds one per (rollout, cluster), and
# tracked objects would make every full collection walk them all while a status change waits.
HeldReport = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class HeldRollout:
    rollout: Rollout
    strategies: tuple[RolloutStrategy, ...]  # one per placementRef, parsed once

    @property
    def placements(self) -> tuple[str, ...]:
        ns = self.rollout.metadata.namespace
        return tuple(f"{ns}/{ref.name}" for ref in self.rollout.spec.placement_refs)


@dataclass(frozen=True, slots=True)
class Published:
    """The last diff published for one rollout (from `rollout-decisions`): what the next diff is
    computed against. The full answer is not held: its digest says whether it changed (a worker
    would otherwise hold a thousand-cluster answer per rollout, which every full garbage
    collection walks while a status change waits)."""

    seq: int
    revision: str
    clusters: tuple[str, ...]  # the roll-out-now set
    digest: str | None  # answer_digest of the answer; None: unknown, so the next answer differs
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class RolloutChange:
    """What one evaluation publishes: the diff (`rollout-decisions`) and the current state
    (`rollout-state`; None once the rollout is deleted: a tombstone)."""

    diff: dict[str, Any]
    state: dict[str, Any] | None


# The fields of a rollout's answer: its state record without schemaVersion, rollout and seq. A
# diff is published when they change (compared through `answer_digest`).
ANSWER_FIELDS = (
    "revision",
    "clusters",
    "placements",
    "maxFailureBreach",
    "nextRecheckAt",
    "complete",
)


def answer_digest(answer: Mapping[str, Any]) -> str:
    """A digest of the answer's fields (keys sorted): equal answers, equal digests."""
    encoded = orjson.dumps({f: answer[f] for f in ANSWER_FIELDS}, option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(encoded, digest_size=16).hexdigest()


def _empty_answer(revision: str) -> dict[str, Any]:
    return {
        "revision": revision,
        "clusters": [],
        "placements": [],
        "maxFailureBreach": False,
        "nextRecheckAt": None,
        "complete": False,
    }


def decision_groups_of(value: Mapping[str, Any]) -> tuple[DecisionGroup, ...]:
    """A placement's decision groups from its `placement-decisions` record (PlacementDecision
    pages labelled with the group's name and index; a group of more than 100 clusters spans
    pages), in the order the pages come."""
    clusters: dict[tuple[str, int], list[str]] = {}
    items = value.get("items")
    if not isinstance(items, list):
        raise InvalidRecord("placement-decisions: items must be a list")
    for page in items:
        labels = (page.get("metadata") or {}).get("labels") or {} if isinstance(page, dict) else {}
        try:
            key = (
                str(labels.get(DECISION_GROUP_NAME_LABEL, "")),
                int(labels.get(DECISION_GROUP_INDEX_LABEL, 0)),
            )
            entries = page.get("status", {}).get("decisions") or []
            names = [str(e["clusterName"]) for e in entries]
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise InvalidRecord(f"placement-decisions: malformed page: {e}") from None
        clusters.setdefault(key, []).extend(names)
    return tuple(DecisionGroup(name, index, tuple(names)) for (name, index), names in clusters.items())


def _awaiting_report(told: set[str], groups: Iterable[DecisionGroup]) -> list[ClusterRolloutStatus]:
    """The clusters of `told` still in one of the placement's groups, as new `ToApply` entries in
    group order, by name within a group.

    A cluster told to roll out stays told until its deployer's report of the revision is read, or
    it leaves the placement, or the revision changes. The reports of one step reach the worker
    over any number of turns; without this, the rollout function would see part of the step —
    the mandatory phase then lists only the clusters it has a report of — so one diff would drop
    the others and a later one tell them again (docs/rollouts.md#told-clusters-stay-told)."""
    if not told:
        return []
    out = []
    for g in sorted(groups, key=lambda g: g.group_index):
        key = GroupKey(g.group_name, g.group_index)
        here = told.intersection(g.clusters)
        out += [ClusterRolloutStatus(c, RolloutStatus.TO_APPLY, key) for c in sorted(here)]
        told = told - here
    return out


class RolloutProcessor:
    """State and decisions of the rollout worker: apply records, evaluate what they marked."""

    def __init__(
        self,
        owns: Callable[[str], bool] | None = None,
        on_ignored: Callable[[str], None] | None = None,
    ) -> None:
        self.owns: Callable[[str], bool] = owns if owns is not None else (lambda key: True)
        # called with one of IGNORED_REASONS for each applied report that marks no rollout
        self.on_ignored: Callable[[str], None] = (
            on_ignored if on_ignored is not None else (lambda reason: None)
        )
        self.rollouts: dict[str, HeldRollout] = {}
        self.placements: dict[str, tuple[DecisionGroup, ...]] = {}
        self.reports: dict[str, dict[str, HeldReport]] = {}  # rollout key -> cluster -> report
        self.published: dict[str, Published] = {}
        self.dirty: dict[str, Trigger] = {}
        self._referencing: dict[str, set[str]] = {}  # placement key -> rollout keys
        # placement key -> its clusters (as dict keys: a dict of strs is one the garbage collector
        # stops tracking, a set never is), made when a report asks (`_placed_nowhere`)
        self._members: dict[str, dict[str, None]] = {}
        self._timers: list[tuple[int, str]] = []  # (unix nanos, rollout key), stale entries skipped
        self._timer_due: dict[str, int] = {}

    # ---- sources ------------------------------------------------------------------------
    def apply(self, topic: str, key: str, value: Mapping[str, Any] | None, timestamp_ms: int = -1) -> None:
        """Apply one decoded record. Raises InvalidRecord (or ObjectError) for a bad one."""
        if topic == ROLLOUT_STATUS:
            self._apply_status(key, value, timestamp_ms)
        elif topic == PLACEMENT_DECISIONS:
            self._apply_placement(key, value)
        elif topic == ROLLOUTS:
            self._apply_rollout(key, value)
        elif topic == ROLLOUT_DECISIONS:
            self._apply_published(key, value)
        else:
            raise InvalidRecord(f"the rollout worker does not read {topic!r}")

    def mark(self, key: str, trigger: Trigger) -> None:
        if self.owns(key) and key not in self.dirty:
            self.dirty[key] = trigger

    def _apply_status(self, key: str, value: Mapping[str, Any] | None, timestamp_ms: int) -> None:
        try:
            rollout_key, cluster = rollout_key_of_status(key)
        except ValueError as e:
            raise InvalidRecord(str(e)) from None
        held = self.reports.setdefault(rollout_key, {})
        old = held.get(cluster)
        if value is None:
            if old is None:
                self.on_ignored("unchanged")
                return
            del held[cluster]
        else:
            try:
                report = RolloutStatusReport.model_validate(value)
            except ValidationError as e:
                problems = validation_problems(e)
                raise InvalidRecord(f"rollout-status {key}: {problems}") from None
            if report.last_transition_time is not None:
                since = Instant.from_datetime(report.last_transition_time)
            elif timestamp_ms >= 0:
                since = Instant(timestamp_ms * 1_000_000)
            else:
                raise InvalidRecord(f"rollout-status {key}: no lastTransitionTime and no record timestamp")
            new = (report.revision, RolloutStatus(report.status).value, since.unix_nanos)
            if new == old:
                self.on_ignored("unchanged")
                return
            held[cluster] = new
        current = self.rollouts.get(rollout_key)
        if current is None:
            self.on_ignored("no-rollout")
            return
        # a report of another revision counts as no report: changing it changes nothing
        if current.rollout.spec.revision not in (
            old[0] if old else None,
            held[cluster][0] if cluster in held else None,
        ):
            self.on_ignored("other-revision")
        elif self._placed_nowhere(current, cluster):
            self.on_ignored("not-placed")
        else:
            self.mark(rollout_key, Trigger("status", key))

    def _placed_nowhere(self, held: HeldRollout, cluster: str) -> bool:
        """Whether every placement of the rollout is decided and none holds the cluster."""
        for placement in held.placements:
            members = self._members.get(placement)
            if members is None:
                groups = self.placements.get(placement)
                if groups is None:
                    return False  # not decided yet: it may hold the cluster
                members = self._members[placement] = dict.fromkeys(c for g in groups for c in g.clusters)
            if cluster in members:
                return False
        return True

    def _apply_placement(self, key: str, value: Mapping[str, Any] | None) -> None:
        groups = None if value is None else decision_groups_of(value)
        if groups == self.placements.get(key):
            return  # the same groups: a status-only change of the placement concerns no rollout
        self._members.pop(key, None)
        if groups is None:
            del self.placements[key]
        else:
            self.placements[key] = groups
        for rollout_key in self._referencing.get(key, ()):
            self.mark(rollout_key, Trigger("placement", key))

    def _apply_rollout(self, key: str, value: Mapping[str, Any] | None) -> None:
        old = self.rollouts.get(key)
        if value is None:
            if old is None:
                return
            self._index(key, old, add=False)
            del self.rollouts[key]
            self.mark(key, Trigger("rollout", key))
            return
        where = f"rollouts/{key}"
        admitted = admit(value, where)
        try:
            parsed = Rollout.model_validate(admitted)
        except ValidationError as e:
            problems = validation_problems(e)
            raise ObjectError(where, f"Rollout {key!r}", [("", problems)]) from None
        if parsed.key != key:
            raise InvalidRecord(f"{where}: key must be <namespace>/<name> of the object ({parsed.key})")
        if old is not None and old.rollout.spec == parsed.spec:
            return  # metadata only
        held = HeldRollout(parsed, tuple(ref.strategy() for ref in parsed.spec.placement_refs))
        if old is not None:
            self._index(key, old, add=False)
        self._index(key, held, add=True)
        self.rollouts[key] = held
        self.mark(key, Trigger("rollout", key))

    def _index(self, key: str, held: HeldRollout, *, add: bool) -> None:
        for placement in held.placements:
            keys = self._referencing.setdefault(placement, set())
            if add:
                keys.add(key)
            else:
                keys.discard(key)
                if not keys:
                    del self._referencing[placement]

    def holds(self, key: str, seq: int) -> bool:
        """Whether the diff `seq` of `key` (or a later one) is already held."""
        pub = self.published.get(key)
        return pub is not None and pub.seq >= seq

    def _apply_published(self, key: str, value: Mapping[str, Any] | None) -> None:
        if value is None:
            return
        try:
            seq = int(value["seq"])
            revision = str(value["revision"])
            clusters = tuple(str(c) for c in value["clusters"])
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidRecord(f"rollout-decisions {key}: not a rollout diff: {e}") from None
        digest = value.get("answerDigest")
        if not self.holds(key, seq):
            self.published[key] = Published(
                seq,
                revision,
                clusters,
                digest if isinstance(digest, str) else None,
                bool(value.get("deleted")),
            )

    # ---- timers -------------------------------------------------------------------------
    def _arm(self, key: str, at: Instant | None) -> None:
        if at is None:
            self._timer_due.pop(key, None)
            return
        if self._timer_due.get(key) == at.unix_nanos:
            return
        self._timer_due[key] = at.unix_nanos
        heapq.heappush(self._timers, (at.unix_nanos, key))

    def tick(self, now: datetime | Instant) -> None:
        """Mark every rollout whose recheck time (a soak end, a deadline) has come."""
        at = now.unix_nanos if isinstance(now, Instant) else Instant.from_datetime(now).unix_nanos
        while self._timers and self._timers[0][0] <= at:
            due, key = heapq.heappop(self._timers)
            if self._timer_due.get(key) == due:
                del self._timer_due[key]
                self.mark(key, Trigger("recheck", key))

    def next_timer(self) -> Instant | None:
        while self._timers and self._timer_due.get(self._timers[0][1]) != self._timers[0][0]:
            heapq.heappop(self._timers)
        return Instant(self._timers[0][0]) if self._timers else None

    @property
    def timers_pending(self) -> int:
        return len(self._timer_due)

    def mark_all(self, kind: str = "startup") -> None:
        """Mark every owned rollout, and every owned one that is gone but has no final diff yet."""
        for key in sorted({*self.rollouts, *self.published}):
            self.mark(key, Trigger(kind, key))

    # ---- evaluation ---------------------------------------------------------------------
    def evaluate(
        self, now: datetime | Instant, inputs: Mapping[str, int], limit: int | None = None
    ) -> list[RolloutChange]:
        """Evaluate marked rollouts (all, or the first `limit` in key order) and return the
        changes of those whose answer changed."""
        instant = now if isinstance(now, Instant) else Instant.from_datetime(now)
        keys = sorted(self.dirty)
        if limit is not None:
            keys = keys[:limit]
        diffs = []
        for key in keys:
            trigger = self.dirty.pop(key)
            if not self.owns(key):
                continue
            change = self._evaluate_one(key, trigger, instant, inputs)
            if change is not None:
                diffs.append(change)
        return diffs

    def _evaluate_one(
        self, key: str, trigger: Trigger, now: Instant, inputs: Mapping[str, int]
    ) -> RolloutChange | None:
        held = self.rollouts.get(key)
        pub = self.published.get(key)
        if held is None:
            self._arm(key, None)
            if pub is None or pub.deleted:
                return None
            answer = _empty_answer(pub.revision)
            digest = answer_digest(answer)
            deleted = True
        else:
            answer, recheck_at = self.answer(held, now)
            self._arm(key, recheck_at)
            digest = answer_digest(answer)
            if pub is not None and not pub.deleted and pub.digest == digest:
                return None
            deleted = False
        before = set(pub.clusters) if pub is not None and not pub.deleted else set()
        after = set(answer["clusters"])
        seq = (pub.seq if pub is not None else 0) + 1
        self.published[key] = Published(seq, answer["revision"], tuple(answer["clusters"]), digest, deleted)
        # The diff is the change: the set's additions and removals, and per placement what is not
        # the set (timed out, removed, breach, error); the full listing is on the state.
        diff: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION,
            "rollout": key,
            "seq": seq,
            "revision": answer["revision"],
            "evaluatedAt": now.rfc3339(),
            "trigger": trigger.to_json(),
            "clusters": answer["clusters"],
            "added": sorted(after - before),
            "removed": sorted(before - after),
            "placements": [
                {f: v for f, v in entry.items() if f != "clustersToRollout"} for entry in answer["placements"]
            ],
            "maxFailureBreach": answer["maxFailureBreach"],
            "nextRecheckAt": answer["nextRecheckAt"],
            "complete": answer["complete"],
            "answerDigest": digest,
            "inputs": dict(inputs),
        }
        if deleted:
            diff["deleted"] = True
            return RolloutChange(diff, None)
        return RolloutChange(diff, {"schemaVersion": SCHEMA_VERSION, "rollout": key, "seq": seq, **answer})

    def answer(self, held: HeldRollout, now: Instant) -> tuple[dict[str, Any], Instant | None]:
        """What the rollout function says for every placementRef now, and the next recheck time."""
        spec = held.rollout.spec
        revision = spec.revision
        reports = {
            c: Report(*r) for c, r in self.reports.get(held.rollout.key, {}).items() if r[0] == revision
        }
        groups_of = [self.placements.get(p) for p in held.placements]
        # Told, not heard from: the clusters of the set in force for this revision whose report of
        # it has not been read yet. They stay in the set (see `_awaiting_report`).
        pub = self.published.get(held.rollout.key)
        told = (
            set(pub.clusters) - reports.keys()
            if pub is not None and not pub.deleted and pub.revision == revision
            else set()
        )
        placements = []
        clusters: set[str] = set()
        breach = False
        complete = True
        recheck: int | None = None
        for ref, strategy, groups in zip(spec.placement_refs, held.strategies, groups_of, strict=True):
            statuses = [
                ClusterRolloutStatus(
                    c, r.status, GroupKey(g.group_name, g.group_index), r.last_transition_time
                )
                for g in groups or ()
                for c in g.clusters
                if (r := reports.get(c)) is not None
            ]
            entry: dict[str, Any] = {
                "name": ref.name,
                "decided": groups is not None,
                "clustersToRollout": [],
                "clustersTimeOut": [],
                "clustersRemoved": [],
                "maxFailureBreach": False,
                "error": None,
            }
            placements.append(entry)
            try:
                result = rollout(strategy, groups or (), statuses, now)
            except RolloutError as e:
                entry["error"] = str(e)
                complete = False
                continue
            entry["clustersToRollout"] = [render_status(s) for s in result.clusters_to_rollout]
            entry["clustersTimeOut"] = [render_status(s) for s in result.clusters_timeout]
            entry["clustersRemoved"] = [render_status(s) for s in result.clusters_removed]
            entry["maxFailureBreach"] = result.max_failure_breach
            listed = {s.cluster_name for s in result.clusters_to_rollout}
            awaiting = _awaiting_report(told - listed, groups or ())
            if awaiting:
                entry["clustersAwaitingReport"] = [render_status(s) for s in awaiting]
            clusters.update(listed, (s.cluster_name for s in awaiting))
            breach = breach or result.max_failure_breach
            if result.recheck_after_nanos is not None:
                at = now.unix_nanos + result.recheck_after_nanos
                recheck = at if recheck is None else min(recheck, at)
            done = (
                groups is not None
                and not result.clusters_to_rollout
                and not result.clusters_timeout
                and all(
                    (r := reports.get(c)) is not None and r.status in _DONE
                    for g in groups
                    for c in g.clusters
                )
            )
            complete = complete and done
        recheck_at = None if recheck is None else Instant(recheck)
        answer = {
            "revision": revision,
            "clusters": sorted(clusters),
            "placements": placements,
            "maxFailureBreach": breach,
            "nextRecheckAt": None if recheck_at is None else recheck_at.rfc3339(),
            "complete": complete,
        }
        return answer, recheck_at

    # ---- views --------------------------------------------------------------------------
    def forget(self, key: str) -> None:
        """Forget a rollout whose partition this instance no longer owns: its object, its reports,
        its last diff and its pending work (they are read again if the partition comes back)."""
        held = self.rollouts.pop(key, None)
        if held is not None:
            self._index(key, held, add=False)
        self.reports.pop(key, None)
        self.published.pop(key, None)
        self.dirty.pop(key, None)
        self._timer_due.pop(key, None)

    def owned_keys(self) -> Iterable[str]:
        return (k for k in self.rollouts if self.owns(k))
