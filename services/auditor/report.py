"""What an audit of the decisions found: the report and its parts, as `fleetplace audit --output json` shows them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetplace.services.auditor.history import InvalidDecision
from fleetplace.services.auditor.queues import QueueAuditReport
from fleetplace.services.auditor.rollout_report import RolloutAuditReport


def _shown(field_name: str, value: Any) -> Any:
    """A compared field as a report shows it: scores by cluster name."""
    return dict(sorted(value.items())) if field_name == "scores" and isinstance(value, dict) else value


@dataclass
class Mismatch:
    """A decision that does not reproduce, and what differs."""

    placement: str
    seq: int
    partition: int
    offset: int
    source: str
    evaluated_at: str
    trigger: Mapping[str, Any]
    fields: list[str]
    expected: dict[str, Any]
    recomputed: dict[str, Any]
    reason: str
    clusters: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "placement": self.placement,
            "seq": self.seq,
            "record": f"decisions/{self.partition}@{self.offset}",
            "source": self.source,
            "evaluatedAt": self.evaluated_at,
            "trigger": dict(self.trigger),
            "fields": self.fields,
            "reason": self.reason,
            "expected": {f: _shown(f, self.expected[f]) for f in self.fields},
            "recomputed": {f: _shown(f, self.recomputed.get(f)) for f in self.fields},
            "clusters": self.clusters,
            "inputs": self.inputs,
        }


@dataclass
class InputsCompacted:
    """A decision that does not reproduce from what is left of its inputs: compaction removed
    records below its watermark (`inputs`), so the state it was computed from no longer exists.
    Not a mismatch: nothing says the decision was wrong (docs/audit.md#compacted-inputs)."""

    placement: str
    seq: int
    partition: int
    offset: int
    evaluated_at: str
    inputs: list[str]  # "<topic>/<partition>" missing records below the watermark

    REASON = "not reproducible: inputs compacted"

    def to_json(self) -> dict[str, Any]:
        return {
            "placement": self.placement,
            "seq": self.seq,
            "record": f"decisions/{self.partition}@{self.offset}",
            "evaluatedAt": self.evaluated_at,
            "reason": self.REASON,
            "compactedInputs": self.inputs,
        }


@dataclass
class SeqProblem:
    """A break of the seq contract: a seq missing, or published twice with different content."""

    placement: str
    seq: int
    problem: str

    def to_json(self) -> dict[str, Any]:
        return {"placement": self.placement, "seq": self.seq, "problem": self.problem}


@dataclass
class Tally:
    checked: int = 0
    reproduced: int = 0
    compacted: int = 0  # not reproducible: inputs compacted


@dataclass
class AuditReport:
    records: int = 0
    batches: int = 0
    checked: int = 0
    reproduced: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    compacted: list[InputsCompacted] = field(default_factory=list)
    invalid: list[InvalidDecision] = field(default_factory=list)
    seq_problems: list[SeqProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    per_placement: dict[str, Tally] = field(default_factory=dict)
    queues: QueueAuditReport = field(default_factory=QueueAuditReport)
    rollouts: RolloutAuditReport = field(default_factory=RolloutAuditReport)
    rebuilds: int = 0
    shared: int = 0  # reproduced decisions whose recomputation was an alike placement's run

    @property
    def ok(self) -> bool:
        """Nothing that contradicts a published decision (decisions whose inputs were compacted
        away are not counted against it: see `complete`)."""
        return (
            not self.mismatches
            and not self.invalid
            and not self.seq_problems
            and not self.queues.mismatches
            and self.rollouts.ok
        )

    @property
    def complete(self) -> bool:
        """`ok`, and every decision checked could be rebuilt from its inputs."""
        return self.ok and not self.compacted

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "records": self.records,
            "batches": self.batches,
            "sharedRuns": self.shared,
            "checked": self.checked,
            "reproduced": self.reproduced,
            "mismatched": len(self.mismatches),
            "inputsCompacted": len(self.compacted),
            "perPlacement": {
                k: {"checked": t.checked, "reproduced": t.reproduced, "inputsCompacted": t.compacted}
                for k, t in sorted(self.per_placement.items())
            },
            "mismatches": [m.to_json() for m in self.mismatches],
            "notReproducible": [c.to_json() for c in self.compacted],
            "invalidRecords": [
                {"key": i.key, "record": f"decisions/{i.partition}@{i.offset}", "error": i.error}
                for i in self.invalid
            ],
            "seqProblems": [p.to_json() for p in self.seq_problems],
            "warnings": self.warnings,
            "appPlacements": {
                "checked": self.queues.checked,
                "reproduced": self.queues.reproduced,
                "mismatches": [m.to_json() for m in self.queues.mismatches],
                "unverified": self.queues.unreadable,
            },
            "rollouts": self.rollouts.to_json(),
        }
