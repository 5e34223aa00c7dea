"""Re-derive every rollout diff (`rollout-decisions`) from the rollout worker's inputs.

For each partition of `rollout-decisions`, in offset order, the state is replayed up to the
diff's watermark (`rollout_replay`), the rollout's previous diff (seq - 1) is made the one in
force, and the rollout is evaluated at the diff's `evaluatedAt` by the worker's own `evaluate`.
What it would publish is compared with what was published (`COMPARED`).

Not compared: `trigger` (which input happened to mark the rollout first), `evaluatedAt` and
`inputs` (they are where the check starts from) and `seq` (it is how the diff is found).

Layers, each importing only those below it: `audit` → this module (the check) and
`rollout_explain` → `rollout_report` → `rollout_replay` → `rollout_log` (reading) and the
rollout worker's processor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.rollout_log import RolloutDiffRecord
from fleetplace.services.auditor.rollout_replay import RolloutReplay, RolloutWalk
from fleetplace.services.auditor.rollout_report import (
    PUBLISHED,
    RolloutAuditReport,
    RolloutMismatch,
    RolloutSeqProblem,
)
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.rollout import Instant

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
