"""`fleetplace explain`: the decision in force at a time, the record that made it, and why.

From the topics alone: the state is rebuilt at that record's watermark exactly as the audit
does, the placement is evaluated at the record's `evaluatedAt`, and the full explanation (every
cluster's filter verdict, per-prioritizer scores) is the debugger's (`simulate`'s) format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.check import differing, expected_of, recompute
from fleetplace.services.auditor.history import DecisionRecord, History
from fleetplace.services.auditor.replay import SourceReplay
from fleetplace.services.auditor.walk import Auditor, Visit
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.placement.explain import result_json
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions


class NoDecision(LookupError):
    """No decision of the placement was evaluated at or before the time asked for."""


@dataclass
class Explanation:
    record: DecisionRecord
    at: datetime | None
    reproduced: bool = False
    differs: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None  # simulate's result_json; None for a deleted placement

    def to_json(self) -> dict[str, Any]:
        r = self.record
        return {
            "placement": r.key,
            "at": None if self.at is None else self.at.isoformat().replace("+00:00", "Z"),
            "record": {
                "seq": r.seq,
                "partition": r.partition,
                "offset": r.offset,
                "source": r.source,
                "evaluatedAt": r.evaluated_at,
                "trigger": dict(r.trigger),
                "generation": r.value.get("generation"),
            },
            "deleted": r.deleted,
            "decisions": list(r.value.get("decisions") or []),
            "reproduced": self.reproduced,
            "differs": self.differs,
            "explanation": self.result,
        }


def decision_in_force(history: History, key: str, at: datetime | None) -> DecisionRecord:
    """The highest-seq decision of `key` evaluated at or before `at` (the latest if `at` is None)."""
    candidates = [d for d in history.decisions if d.key == key and (at is None or d.now <= at)]
    if not candidates:
        when = "" if at is None else f" at or before {at.isoformat()}"
        raise NoDecision(f"no decision of {key} was published{when}")
    return max(candidates, key=lambda d: (d.seq, -d.offset))


def explain_decision(
    history: History,
    key: str,
    at: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
) -> Explanation:
    return explain_record(history, decision_in_force(history, key, at), at, limits, engine)


def explaining(out: Explanation) -> Visit:
    """The walk's visit that fills `out` at its record: recomputed from the state the worker had
    then, compared with what it published, explained for every cluster."""
    key = out.record.key

    def visit(replay: SourceReplay, record: DecisionRecord) -> None:
        recomputed = recompute(replay, key, record.now)
        out.differs = differing(expected_of(record.value), recomputed.value)
        if recomputed.skipped is not None:
            out.differs = out.differs or ["status"]
        out.reproduced = not out.differs
        if recomputed.result is not None and recomputed.placement is not None:
            out.result = result_json(recomputed.result, None, recomputed.placement, replay.fleet, record.now)

    return visit


def explain_record(
    history: History,
    target: DecisionRecord,
    at: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
    *,
    fast_forward: bool = False,
) -> Explanation:
    """The explanation of one recorded diff. `fast_forward`: jump over the batches before the
    target's in one coalesced pass (`Auditor.fast_forward`: the state a walk through them would
    hold) instead of walking them."""
    out = Explanation(target, at)
    auditor = Auditor(history, limits, engine)
    batches = None
    if fast_forward:
        index = next(i for i, b in enumerate(auditor.batches) if any(d is target for d in b.diffs))
        auditor.fast_forward(auditor.batches[:index])
        batches = auditor.batches[index : index + 1]
    auditor.walk(explaining(out), lambda record: record is target, until=target, batches=batches)
    return out
