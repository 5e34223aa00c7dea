"""Re-derive every rollout diff (`rollout-decisions`) from the rollout worker's inputs, and explain
the answer in force at a time.

A rollout's inputs are its own partition of `rollouts` and `rollout-status` (the co-partitioned
topics: one worker instance owns the same partition number of each) and the whole of
`placement-decisions`. A diff's `inputs` is the watermark of those it was computed from. So for
each partition of `rollout-decisions`, in offset order: a fresh `RolloutProcessor` — the worker's
own — is fed those records in offset order up to the diff's watermark (records the worker
dead-letters are skipped, as it skips them), the rollout's previous diff (seq - 1) is made the
one in force, and the rollout is evaluated at the diff's `evaluatedAt` by the worker's own
`evaluate`. What it would publish is compared with what was published (`COMPARED`).

Not compared: `trigger` (which input happened to mark the rollout first), `evaluatedAt` and
`inputs` (they are where the check starts from) and `seq` (it is how the diff is found).

Layers, each importing only those below it: `audit` → this module (the walk, the check, the
report, explain) → `history` (reading) and the rollout worker's processor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.history import ROLLOUT_TOPICS, History, Progress, read_topics
from fleetplace.services.rollout.core import (
    InvalidRecord,
    RolloutProcessor,
    Trigger,
)
from fleetplace.services.rollout.listing import ClusterLine, Reported, placement_lines
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.bus.codec import (
    DEFAULT_LIMITS,
    DecodeError,
    DecodeLimits,
    decode_object,
    decode_record,
)
from fleetplace.shared.bus.envelope import H_SOURCE
from fleetplace.shared.bus.kafka import TP, parse_watermark_key
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import (
    PLACEMENT_DECISIONS,
    ROLLOUT_DECISIONS,
    ROLLOUT_STATUS,
    ROLLOUTS,
    Topics,
    TopicState,
    describe_catalogue,
    rollout_partition,
)
from fleetplace.shared.rollout import Instant, RolloutStrategy, StrategyType
from fleetplace.shared.settings import KafkaSettings

# What a rollout diff decided; a diff reproduces when every one of them is recomputed equal.
COMPARED = (
    "revision",
    "clusters",
    "added",
    "removed",
    "placements",
    "maxFailureBreach",
    "nextRecheckAt",
    "complete",
    "answerDigest",
    "deleted",
)
# The field a mismatch names when the worker would have published nothing: the answer it
# recomputes is the previous diff's.
PUBLISHED = "published"


# ---- reading --------------------------------------------------------------------------------


async def read_rollout_topics(
    kafka: KafkaSettings | str,
    topics: Topics,
    history: History,
    *,
    limits: DecodeLimits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> bool:
    """Add the rollout topics' records, from the beginning up to the high watermarks at start, to
    `history` (sealed again). False, and nothing added, when the rollout topics do not exist."""
    statuses = {s.spec.name: s for s in await describe_catalogue(kafka, topics)}
    if any(statuses[name].state is TopicState.MISSING for name in ROLLOUT_TOPICS):
        return False
    await read_topics(kafka, topics, ROLLOUT_TOPICS, history, limits=limits, progress=progress)
    return True


def read_rollout_history(
    kafka: KafkaSettings | str, topics: Topics, *, limits: DecodeLimits = DEFAULT_LIMITS
) -> History | None:
    """A history of the rollout topics alone (None when they do not exist). Call it with no
    event loop running: it runs its own."""
    history = History()
    found = asyncio.run(read_rollout_topics(kafka, topics, history, limits=limits))
    return history if found else None


@dataclass(frozen=True, slots=True)
class RolloutDiffRecord:
    """One rollout diff as read from `rollout-decisions`, with where it is and who wrote it."""

    key: str
    partition: int
    offset: int
    source: str  # the CloudEvents source: one rollout worker instance
    value: Mapping[str, Any]
    seq: int
    evaluated_at: str
    now: Instant
    watermark: Mapping[TP, int]  # `inputs`: (topic, partition) -> next offset

    @property
    def where(self) -> str:
        return f"{ROLLOUT_DECISIONS}/{self.partition}@{self.offset}"

    @property
    def deleted(self) -> bool:
        return bool(self.value.get("deleted", False))

    @property
    def trigger(self) -> Mapping[str, Any]:
        trigger = self.value.get("trigger")
        return trigger if isinstance(trigger, Mapping) else {}


@dataclass(frozen=True, slots=True)
class InvalidRolloutDiff:
    """A record on `rollout-decisions` that is not a rollout diff: nothing a worker publishes."""

    key: str | None
    partition: int
    offset: int
    error: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "record": f"{ROLLOUT_DECISIONS}/{self.partition}@{self.offset}",
            "error": self.error,
        }


def parse_rollout_diff(record: Record, limits: DecodeLimits = DEFAULT_LIMITS) -> RolloutDiffRecord | None:
    """A RolloutDiffRecord, or None for a tombstone; ValueError (or DecodeError) says what is wrong."""
    value = decode_object(record.value, limits)
    if value is None:
        return None
    key, seq, evaluated_at, inputs = (value.get(f) for f in ("rollout", "seq", "evaluatedAt", "inputs"))
    if not isinstance(key, str) or key != record.key:
        raise ValueError(f"rollout {key!r} does not match the record key {record.key!r}")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError(f"seq must be a positive integer, got {seq!r}")
    if not isinstance(evaluated_at, str):
        raise ValueError("evaluatedAt is missing")
    watermark: dict[TP, int] = {}
    for name, offset in inputs.items() if isinstance(inputs, dict) else [(None, None)]:
        if not isinstance(name, str) or not isinstance(offset, int) or isinstance(offset, bool):
            raise ValueError("inputs must map '<topic>/<partition>' to offsets")
        watermark[parse_watermark_key(name)] = offset
    source = record.header(H_SOURCE)
    return RolloutDiffRecord(
        key,
        record.partition,
        record.offset,
        "" if source is None else source.decode("utf-8", "replace"),
        value,
        seq,
        evaluated_at,
        Instant.parse(evaluated_at),
        watermark,
    )


@dataclass
class RolloutLog:
    """The rollout diffs of a history, per `rollout-decisions` partition in offset order."""

    diffs: list[RolloutDiffRecord] = field(default_factory=list)
    invalid: list[InvalidRolloutDiff] = field(default_factory=list)
    partitions: int = 0  # of the rollout topics
    _by_seq: dict[tuple[str, int], RolloutDiffRecord] = field(default_factory=dict)

    @classmethod
    def of(cls, history: History, limits: DecodeLimits = DEFAULT_LIMITS) -> RolloutLog:
        log = cls()
        # the worker hashes keys over the partitions of `rollouts`: all of them are in `ends`
        # when read from a broker; a history made of records knows those it holds
        numbers = {p for (t, p) in history.ends if t == ROLLOUTS} or {
            p for (t, p) in history.partitions if t in (ROLLOUTS, ROLLOUT_STATUS, ROLLOUT_DECISIONS)
        }
        log.partitions = max(numbers) + 1 if numbers else 0
        for partition in range(log.partitions):
            for record in history.records((ROLLOUT_DECISIONS, partition)):
                try:
                    parsed = parse_rollout_diff(record, limits)
                except (DecodeError, ValueError) as e:
                    log.invalid.append(
                        InvalidRolloutDiff(record.key, record.partition, record.offset, str(e))
                    )
                    continue
                if parsed is not None:
                    log.diffs.append(parsed)
                    log._by_seq.setdefault((parsed.key, parsed.seq), parsed)
        return log

    def diff(self, key: str, seq: int) -> RolloutDiffRecord | None:
        """The (first) record of a rollout's seq."""
        return self._by_seq.get((key, seq))


# ---- replay ---------------------------------------------------------------------------------


class RolloutReplay:
    """The state of a worker instance owning one rollout partition: a `RolloutProcessor` fed the
    partition's `rollouts` and `rollout-status` records and every `placement-decisions` record,
    in offset order, up to a watermark. Never moved back: `advance` says when it would have to."""

    def __init__(self, history: History, partition: int, partitions: int, limits: DecodeLimits) -> None:
        self.history = history
        self.partition = partition
        self.partitions = partitions
        self.limits = limits
        self.processor = RolloutProcessor()
        self.positions: dict[TP, int] = {}  # next offset applied per partition
        self.dead_lettered = 0

    def _wanted(self, watermark: Mapping[TP, int]) -> dict[TP, int]:
        own = {(ROLLOUTS, self.partition), (ROLLOUT_STATUS, self.partition)}
        placed = {tp for tp in (*self.history.partitions, *watermark) if tp[0] == PLACEMENT_DECISIONS}
        return {tp: watermark.get(tp, 0) for tp in sorted(own | placed)}

    def advance(self, watermark: Mapping[TP, int]) -> bool:
        """Apply every record below the watermark; False (nothing applied) if the state is past it."""
        wanted = self._wanted(watermark)
        if any(self.positions.get(tp, 0) > stop for tp, stop in wanted.items()):
            return False
        for tp, stop in wanted.items():
            records = self.history.records(tp)
            start = self.history.index_of(tp, self.positions.get(tp, 0))
            for record in records[start : self.history.index_of(tp, stop)]:
                self._apply(tp[0], record)
            self.positions[tp] = stop
        return True

    def _apply(self, topic: str, record: Record) -> None:
        """As the worker consumes it: what it would dead-letter changes nothing."""
        try:
            decoded = decode_record(record, self.limits)
            # a record off its rollout's partition: the worker owning its partition does not
            # evaluate that rollout (a report there is dead-lettered), the rollout's owner never
            # reads it
            if (
                topic != PLACEMENT_DECISIONS
                and rollout_partition(decoded.key, self.partitions) != record.partition
            ):
                raise InvalidRecord("off its rollout's partition")
            self.processor.apply(topic, decoded.key, decoded.value, record.timestamp_ms)
        except (DecodeError, ObjectError, ValueError, KeyError, TypeError):
            self.dead_lettered += 1

    def recompute(self, key: str, now: Instant, previous: RolloutDiffRecord | None) -> dict[str, Any] | None:
        """The diff the worker would publish for `key` at `now` with `previous` the diff in force
        (None: none yet), or None when the answer is `previous`'s: nothing would be published."""
        processor = self.processor
        processor.published.pop(key, None)
        if previous is not None:
            processor.apply(ROLLOUT_DECISIONS, key, previous.value)
        processor.dirty.clear()
        processor.mark(key, Trigger("audit", key))  # the trigger is not compared
        changes = processor.evaluate(now, {})
        return changes[0].diff if changes else None


# ---- the check ------------------------------------------------------------------------------


def decided(diff: Mapping[str, Any] | None) -> dict[str, Any]:
    """The compared fields of a diff (`deleted` false when absent)."""
    if diff is None:
        return {}
    return {f: diff.get(f, False) if f == "deleted" else diff.get(f) for f in COMPARED}


def differing(expected: Mapping[str, Any], recomputed: Mapping[str, Any] | None) -> list[str]:
    if recomputed is None:
        return [PUBLISHED]
    return [f for f in COMPARED if expected.get(f) != recomputed.get(f)]


def _reason(
    record: RolloutDiffRecord, fields: list[str], expected: Mapping[str, Any], got: Mapping[str, Any]
) -> str:
    if fields == [PUBLISHED]:
        return f"the answer equals seq {record.seq - 1}'s: the worker would not have published"
    if expected["deleted"] and not got["deleted"]:
        return "recorded as deleted, but the rollout exists at the watermark"
    if got["deleted"] and not expected["deleted"]:
        return "the rollout does not exist at the watermark"
    reason = "recomputed " + ", ".join(fields) + " differ"
    clusters = sorted(set(expected.get("clusters") or ()) ^ set(got.get("clusters") or ()))
    clusters += sorted(set(expected.get("added") or ()) ^ set(got.get("added") or ()) - set(clusters))
    if clusters:
        reason += "; for " + ", ".join(clusters[:8]) + (" …" if len(clusters) > 8 else "")
    return reason


@dataclass
class RolloutMismatch:
    """A rollout diff that does not reproduce, and what differs."""

    record: RolloutDiffRecord
    fields: list[str]
    expected: dict[str, Any]
    recomputed: dict[str, Any]
    reason: str

    def to_json(self) -> dict[str, Any]:
        r = self.record
        return {
            "rollout": r.key,
            "seq": r.seq,
            "record": r.where,
            "source": r.source,
            "evaluatedAt": r.evaluated_at,
            "trigger": dict(r.trigger),
            "fields": self.fields,
            "reason": self.reason,
            "expected": {f: self.expected.get(f) for f in self.fields if f != PUBLISHED},
            "recomputed": {f: self.recomputed.get(f) for f in self.fields if f != PUBLISHED},
        }


@dataclass
class RolloutSeqProblem:
    """A break of the seq contract: a seq missing, or published twice with different content."""

    rollout: str
    seq: int
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"rollout": self.rollout, "seq": self.seq, "problem": self.problem}


@dataclass
class RolloutAuditReport:
    checked: int = 0
    reproduced: int = 0
    mismatches: list[RolloutMismatch] = field(default_factory=list)
    invalid: list[InvalidRolloutDiff] = field(default_factory=list)
    seq_problems: list[RolloutSeqProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    per_rollout: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (checked, reproduced)
    rebuilds: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.invalid and not self.seq_problems

    def tally(self, key: str, reproduced: bool) -> None:
        checked, good = self.per_rollout.get(key, (0, 0))
        self.per_rollout[key] = (checked + 1, good + reproduced)
        self.checked += 1
        self.reproduced += reproduced

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "reproduced": self.reproduced,
            "mismatched": len(self.mismatches),
            "perRollout": {
                k: {"checked": c, "reproduced": r} for k, (c, r) in sorted(self.per_rollout.items())
            },
            "mismatches": [m.to_json() for m in self.mismatches],
            "invalidRecords": [i.to_json() for i in self.invalid],
            "seqProblems": [p.to_json() for p in self.seq_problems],
            "warnings": self.warnings,
        }


def seq_problems(diffs: Iterable[RolloutDiffRecord]) -> list[RolloutSeqProblem]:
    """Per rollout: seqs missing below its highest, and seqs published twice differently (the
    watermark aside: a worker taking over publishes the same diff from its own offsets)."""
    by_key: dict[str, dict[int, list[RolloutDiffRecord]]] = {}
    for d in diffs:
        by_key.setdefault(d.key, {}).setdefault(d.seq, []).append(d)
    problems = []
    for key, by_seq in sorted(by_key.items()):
        missing = [s for s in range(1, max(by_seq)) if s not in by_seq]
        if missing:
            shown = ", ".join(map(str, missing[:10])) + (" …" if len(missing) > 10 else "")
            problems.append(RolloutSeqProblem(key, missing[0], f"seq missing: {shown}"))
        for seq, records in sorted(by_seq.items()):
            contents = {repr(sorted((k, v) for k, v in decided(r.value).items())) for r in records}
            if len(contents) > 1:
                where = ", ".join(r.where for r in records)
                problems.append(
                    RolloutSeqProblem(key, seq, f"published {len(records)} times, differently: {where}")
                )
    return problems


class RolloutWalk:
    """Diff after diff, per `rollout-decisions` partition, with the state each was computed from."""

    def __init__(self, history: History, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.history = history
        self.limits = limits
        self.log = RolloutLog.of(history, limits)
        self.rebuilds = 0
        self.warnings: list[str] = []
        self._replays: dict[int, RolloutReplay] = {}

    def replay_for(self, record: RolloutDiffRecord) -> RolloutReplay:
        replay = self._replays.get(record.partition)
        if replay is not None and replay.advance(record.watermark):
            return replay
        if replay is not None:
            self.rebuilds += 1
            self.warnings.append(f"{record.where}: the watermark went back; state rebuilt")
        replay = RolloutReplay(self.history, record.partition, self.log.partitions, self.limits)
        replay.advance(record.watermark)
        self._replays[record.partition] = replay
        return replay

    def previous(self, record: RolloutDiffRecord) -> RolloutDiffRecord | None:
        """The diff the worker computed against: seq - 1 (a warning when it is not in the history)."""
        if record.seq == 1:
            return None
        previous = self.log.diff(record.key, record.seq - 1)
        if previous is None:
            self.warnings.append(f"{record.key} seq {record.seq}: seq {record.seq - 1} is not in the history")
        return previous

    def walk(
        self,
        visit: Callable[[RolloutReplay, RolloutDiffRecord], None],
        select: Callable[[RolloutDiffRecord], bool] = lambda record: True,
    ) -> None:
        """Call `visit` for each selected diff with the state it was computed from."""
        for record in self.log.diffs:
            if select(record):
                visit(self.replay_for(record), record)


def audit_rollouts(
    history: History,
    *,
    rollout: str | None = None,
    since: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
) -> RolloutAuditReport:
    """Check every rollout diff of the history (or of one rollout, or evaluated since a time)."""
    walk = RolloutWalk(history, limits)
    report = RolloutAuditReport()
    after = None if since is None else Instant.from_datetime(since)

    def wanted(key: str) -> bool:
        return rollout is None or key == rollout

    def visit(replay: RolloutReplay, record: RolloutDiffRecord) -> None:
        expected = decided(record.value)
        recomputed = replay.recompute(record.key, record.now, walk.previous(record))
        got = decided(recomputed)
        fields = differing(expected, got if recomputed is not None else None)
        report.tally(record.key, not fields)
        if fields:
            reason = _reason(record, fields, expected, got)
            report.mismatches.append(RolloutMismatch(record, fields, expected, got, reason))

    walk.walk(visit, lambda r: wanted(r.key) and (after is None or r.now.unix_nanos >= after.unix_nanos))
    report.invalid = [i for i in walk.log.invalid if i.key is None or wanted(i.key)]
    report.seq_problems = seq_problems(d for d in walk.log.diffs if wanted(d.key))
    report.rebuilds = walk.rebuilds
    report.warnings = walk.warnings
    return report


# ---- explain --------------------------------------------------------------------------------


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
    group = f"{line.group_name or '-'} ({line.group_index})"
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
