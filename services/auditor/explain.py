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
from fleetplace.services.auditor.walk import Auditor
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
    target = decision_in_force(history, key, at)
    out = Explanation(target, at)

    def visit(replay: SourceReplay, record: DecisionRecord) -> None:
        recomputed = recompute(replay, key, record.now)
        out.differs = differing(expected_of(record.value), recomputed.value)
        if recomputed.skipped is not None:
            out.differs = out.differs or ["status"]
        out.reproduced = not out.differs
        if recomputed.result is not None and recomputed.placement is not None:
            out.result = result_json(recomputed.result, None, recomputed.placement, replay.fleet, record.now)

    Auditor(history, limits, engine).walk(visit, lambda record: record is target, until=target)
    return out
