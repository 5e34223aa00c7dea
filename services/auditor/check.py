"""Checking one recorded decision: recompute the diff the worker would publish from the replayed
state, compare what it decides, and explain a difference. No processes and no walking here: the
walk (`walk`) calls `Checker.visit` with the state each diff was computed from.

Compared: what the diff decided (`DECIDED` in shared/api/decision_diff.py): generation, decisions (page order),
groups, status, the scores of the clusters the record lists, added/removed, and deletion. Not
compared: `trigger` (which of several pending records happened to mark the placement first) and
`nextRequeueAt` (timer bookkeeping); neither changes what was decided.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.services.auditor.replay import SourceReplay
from fleetplace.services.auditor.report import AuditReport, InputsCompacted, Mismatch, Tally
from fleetplace.services.scheduler.core import Trigger
from fleetplace.shared.api.decisions import DECIDED, DecisionDiff
from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.placement import ScheduleResult
from fleetplace.shared.placement.explain import explain
from fleetplace.shared.placement.reasons import decision_reasons
from fleetplace.shared.placement.scheduler import run_signature

COMPARED = DECIDED


class Recomputed:
    """What the diff would hold, recomputed from the replayed state (one per diff checked: a
    plain class)."""

    def __init__(
        self,
        value: dict[str, Any],
        result: ScheduleResult | None = None,
        placement: Placement | None = None,
        skipped: str | None = None,
        shared: bool = False,  # taken from another placement's run with the same signature
    ) -> None:
        self.value = value
        self.result = result
        self.placement = placement
        self.skipped = skipped
        self.shared = shared


@dataclass
class SharedRuns:
    """Recomputed diffs of placements that cannot differ, computed once per replayed state.

    Placements with equal `run_signature`s get the same schedule result; with the same decision
    in force they would publish the same diff, generation aside. The table holds the current
    state's values only: it is emptied when the fleet, its versions or `now` move on."""

    hits: int = 0
    _fleet: Any = None  # the state the table holds values of: this fleet, at these versions and now
    _state: tuple[Any, ...] = ()
    _values: dict[tuple[Any, ...], Recomputed] = field(default_factory=dict)

    def _at(self, fleet: Any, now: datetime) -> None:
        state = (fleet.version, fleet.score_version, now)
        if fleet is not self._fleet or state != self._state:
            self._values.clear()
            self._fleet, self._state = fleet, state

    def get(self, fleet: Any, now: datetime, signature: tuple[Any, ...]) -> Recomputed | None:
        self._at(fleet, now)
        found = self._values.get(signature)
        if found is not None:
            self.hits += 1
        return found

    def put(self, signature: tuple[Any, ...], recomputed: Recomputed) -> None:
        self._values[signature] = recomputed


expected_of = DecisionDiff.decided  # the compared fields of a recorded diff


def recompute(replay: SourceReplay, key: str, now: datetime, shared: SharedRuns | None = None) -> Recomputed:
    """The diff the worker would publish for `key` at `now`, against the decision in force, built
    by the worker's own `decision_diff`. With `shared`, a placement whose run cannot differ from
    one already recomputed in the same state (same signature, same decision in force) takes that
    one's diff."""
    processor = replay.processor
    placement = processor.fleet.placements.get(key)
    trigger = Trigger("audit", key)  # neither the trigger nor the inputs are compared
    if placement is None:
        return Recomputed(processor.deletion_diff(key, now, trigger, {}).decided_value())
    signature: tuple[Any, ...] | None = None
    if shared is not None:
        last = processor.published.get(key)
        old = frozenset(last.decisions) if last is not None and not last.deleted else frozenset()
        fleet = processor.fleet
        signature = (run_signature(placement, fleet, now, processor.engine.options), old)
        hit = shared.get(fleet, now, signature)
        if hit is not None:
            return Recomputed(
                {**hit.value, "generation": placement.metadata.generation},
                placement=placement,
                skipped=hit.skipped,
                shared=True,
            )
    result = processor.engine.evaluate(key, now)
    assert result is not None
    value = processor.decision_diff(key, result, now, trigger, {}).decided_value()
    recomputed = Recomputed(value, result, placement, result.skipped)
    if shared is not None and signature is not None:
        # the diff only: a sharer that mismatches is explained from its own run
        shared.put(signature, Recomputed(value, skipped=result.skipped))
    return recomputed


def differing(expected: Mapping[str, Any], recomputed: Mapping[str, Any]) -> list[str]:
    return [f for f in COMPARED if expected.get(f) != recomputed.get(f)]


def _verdict(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "absent from the fleet at the watermark"
    if "filteredBy" in entry:
        return f"filtered by {entry['filteredBy']}: {entry['reason']}"
    return f"{'selected' if entry.get('selected') else 'not selected'}, score {entry.get('total')}"


def analyse(
    replay: SourceReplay, record: DecisionRecord, recomputed: Recomputed, fields: list[str]
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """Why a decision differs: a sentence, the clusters whose verdict changed, the inputs behind them."""
    expected = expected_of(record.value)
    got = recomputed.value
    if recomputed.skipped is not None:
        reason = f"the worker would not have published: evaluation skipped ({recomputed.skipped})"
    elif expected["deleted"] and not got["deleted"]:
        reason = "recorded as deleted, but the placement exists at the watermark"
    elif got["deleted"] and not expected["deleted"]:
        reason = "the placement does not exist at the watermark"
    elif fields == ["reasons"]:
        reason = "the decision reproduces, but the reasons its SIG-MC slices give do not"
    elif "generation" in fields:
        reason = (
            f"the placement at the watermark is generation {got['generation']}, not {expected['generation']}"
        )
    else:
        reason = "recomputed " + ", ".join(fields) + " differ"
    clusters: list[dict[str, Any]] = []
    explanation: dict[str, Any] = {}
    if recomputed.result is not None and recomputed.placement is not None:
        explanation = explain(recomputed.result, recomputed.placement, replay.fleet, record.now)
    recorded_set = set(expected["decisions"])
    got_set = set(got["decisions"])
    all_scores = recomputed.result.scores if recomputed.result is not None else {}
    for name in sorted(recorded_set | got_set | set(expected["scores"])):
        was = name in recorded_set
        now_selected = name in got_set
        recorded_score = expected["scores"].get(name)
        score = all_scores.get(name)
        if was == now_selected and (recorded_score is None or recorded_score == score):
            continue
        entry = explanation.get(name)
        clusters.append(
            {
                "cluster": name,
                "recorded": {"selected": was, "score": recorded_score},
                "recomputed": {"selected": now_selected, "score": score, "verdict": _verdict(entry)},
                **({"explain": entry} if entry is not None else {}),
            }
        )
    if clusters:
        names = ", ".join(c["cluster"] for c in clusters[:8])
        reason += f"; verdict changed for {names}" + (" …" if len(clusters) > 8 else "")
    inputs: list[dict[str, Any]] = []

    def cite(topic: str, key: str) -> None:
        where = replay.in_force.get((topic, key))
        if where is not None:
            inputs.append({"topic": topic, "key": key, "partition": where.partition, "offset": where.offset})

    cite("placements", record.key)
    for c in clusters:
        name = c["cluster"]
        cite("clusters", name)
        cite("taints", name)
        for topic, key in sorted(replay.in_force):
            if topic == "scores" and key.startswith(f"{name}/"):
                cite(topic, key)
    return reason, clusters, inputs


@dataclass
class Checker:
    """Checks the selected diffs of a walk and tallies them into a report (one per process)."""

    placement: str | None = None
    since: datetime | None = None
    report: AuditReport = field(default_factory=AuditReport)
    shared: SharedRuns | None = field(default_factory=SharedRuns)
    # (placement, seq) -> cluster -> the reason its SIG-MC slices recorded (History.recorded_reasons)
    reasons: Mapping[tuple[str, int], Mapping[str, str]] = field(default_factory=dict)
    # the input partitions of a decision that miss records below its watermark
    # (History.compacted_inputs): a decision that does not reproduce is then "inputs compacted"
    compacted_inputs: Callable[[DecisionRecord], list[str]] | None = None

    def wanted_key(self, key: str) -> bool:
        return self.placement is None or key == self.placement

    def select(self, record: DecisionRecord) -> bool:
        return self.wanted_key(record.key) and (self.since is None or record.now >= self.since)

    def visit(self, replay: SourceReplay, record: DecisionRecord) -> None:
        report = self.report
        recomputed = recompute(replay, record.key, record.now, self.shared)
        expected = expected_of(record.value)
        fields = differing(expected, recomputed.value)
        if fields and recomputed.shared:  # explained from this placement's own run
            recomputed = recompute(replay, record.key, record.now)
            fields = differing(expected, recomputed.value)
        if recomputed.skipped is not None:
            fields = fields or ["status"]
        recorded = self.reasons.get((record.key, record.seq))
        if recorded is not None and not fields:
            if recomputed.result is None or recomputed.placement is None:  # a shared run: its own
                recomputed = recompute(replay, record.key, record.now)
            assert recomputed.result is not None and recomputed.placement is not None
            got = decision_reasons(recomputed.result, recomputed.placement, replay.fleet)
            if any(got.get(cluster) != reason for cluster, reason in recorded.items()):
                fields = ["reasons"]
        tally = report.per_placement.get(record.key)
        if tally is None:
            tally = report.per_placement[record.key] = Tally()
        tally.checked += 1
        report.checked += 1
        if not fields:
            tally.reproduced += 1
            report.reproduced += 1
            report.shared += recomputed.shared
            return
        holed = self.compacted_inputs(record) if self.compacted_inputs is not None else []
        if holed:
            tally.compacted += 1
            report.compacted.append(
                InputsCompacted(
                    placement=record.key,
                    seq=record.seq,
                    partition=record.partition,
                    offset=record.offset,
                    evaluated_at=record.evaluated_at,
                    inputs=holed,
                )
            )
            return
        reason, clusters, inputs = analyse(replay, record, recomputed, fields)
        report.mismatches.append(
            Mismatch(
                placement=record.key,
                seq=record.seq,
                partition=record.partition,
                offset=record.offset,
                source=record.source,
                evaluated_at=record.evaluated_at,
                trigger=record.trigger,
                fields=fields,
                expected=expected,
                recomputed=recomputed.value,
                reason=reason,
                clusters=clusters,
                inputs=inputs,
            )
        )

    def took(self, warnings: list[str], rebuilds: int) -> None:
        """What the walk reports beside the checks: its warnings and rebuilds."""
        self.report.warnings = warnings
        self.report.rebuilds = rebuilds

    def merge(self, other: AuditReport) -> None:
        """Add a later chunk's checks (chunks are merged in replay order)."""
        report = self.report
        report.checked += other.checked
        report.reproduced += other.reproduced
        report.mismatches.extend(other.mismatches)
        report.compacted.extend(other.compacted)
        report.warnings.extend(other.warnings)
        report.rebuilds += other.rebuilds
        report.shared += other.shared
        for key, tally in other.per_placement.items():
            mine = report.per_placement.setdefault(key, Tally())
            mine.checked += tally.checked
            mine.reproduced += tally.reproduced
            mine.compacted += tally.compacted
