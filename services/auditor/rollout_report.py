"""What an audit of the rollout diffs found: the report section and its parts, as `fleetplace audit
--output json` shows them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetplace.services.auditor.rollout_log import InvalidRolloutDiff, RolloutDiffRecord

# The field a mismatch names when the worker would have published nothing: the answer it
# recomputes is the previous diff's.
PUBLISHED = "published"


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
