"""`fleetplace what-if`: replay history with a changed Placement, or with this engine.

With a changed Placement: at every recorded batch, the state is rebuilt at the batch's
watermark (the audit's replay), the modified placement stands in for the recorded one, and it
is evaluated at the batch's `evaluatedAt` and at its place in the batch's key order. Its own
previous decision is the *hypothetical* one (so Steady and NoSelectIfNew follow the what-if
history); every other placement keeps its recorded decisions (second-order effects through
Balance are not followed). The answer is a timeline: from which evaluation on the decision would
have differed from the recorded one, and when it agreed again.

Evaluations happen at recorded batch times only: a change that would make the placement react
to triggers the recorded one ignored (an AddOn score it did not use) is seen at the next batch
of any placement, not at the trigger's own time.

Engine-only: every recorded decision is recomputed with this fleetplace (the audit) and the
ones that differ are listed per placement.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.batches import DecisionBatch
from fleetplace.services.auditor.history import DecisionRecord, History
from fleetplace.services.auditor.replay import SourceReplay
from fleetplace.services.auditor.report import AuditReport
from fleetplace.services.auditor.walk import Auditor
from fleetplace.shared.api.ocm import Placement
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions

Decision = tuple[str, ...] | None  # None: the placement does not exist


@dataclass
class Change:
    """From `at` on (until the next change), the recorded and the what-if decisions."""

    at: str
    recorded_seq: int
    recorded: Decision
    what_if: Decision

    @property
    def same(self) -> bool:
        return self.recorded == self.what_if

    def to_json(self) -> dict[str, Any]:
        recorded = set(self.recorded or ())
        what_if = set(self.what_if or ())
        return {
            "at": self.at,
            "recordedSeq": self.recorded_seq,
            "recorded": None if self.recorded is None else list(self.recorded),
            "whatIf": None if self.what_if is None else list(self.what_if),
            "same": self.same,
            "added": sorted(what_if - recorded),
            "removed": sorted(recorded - what_if),
        }


@dataclass
class PlacementWhatIf:
    placement: str
    evaluations: int = 0
    changes: list[Change] = field(default_factory=list)

    @property
    def differed(self) -> list[Change]:
        return [c for c in self.changes if not c.same]

    def to_json(self) -> dict[str, Any]:
        return {
            "placement": self.placement,
            "evaluations": self.evaluations,
            "differed": len(self.differed),
            "changes": [c.to_json() for c in self.changes],
        }


def _placement_partition(history: History, key: str) -> int | None:
    """The `placements` partition the key's records are in (None: the history never had it)."""
    for (topic, partition), records in history.partitions.items():
        if topic == "placements" and any(r.key == key for r in records):
            return partition
    return None


def what_if_placement(
    history: History,
    modified: Placement,
    *,
    since: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
) -> PlacementWhatIf:
    """The timeline of one placement's decisions had it been `modified` all along."""
    key = modified.key
    # a placement the history never had is evaluated from the first batch on; one it had, at the
    # batches of the instance that owned it (its partition is in their watermark)
    partition = _placement_partition(history, key)
    everywhere = partition is None and not any(d.key == key for d in history.decisions)
    out = PlacementWhatIf(key)
    hypothetical: Decision = None
    last: tuple[Decision, Decision] | None = None

    def probe(replay: SourceReplay, batch: DecisionBatch, record: DecisionRecord | None) -> None:
        nonlocal hypothetical, last
        if partition is not None and ("placements", partition) not in batch.watermark:
            return  # another instance owns it: its batches answer for it
        processor = replay.processor
        fleet = processor.fleet
        engine = processor.engine
        original = fleet.placements.get(key)
        published = processor.published.get(key)
        if record is not None:
            recorded: Decision = None if record.deleted else tuple(record.value.get("decisions") or ())
            recorded_seq = record.seq
        else:
            recorded = None if published is None or published.deleted else published.decisions
            recorded_seq = published.seq if published is not None else 0
        if original is None and not everywhere:
            hypothetical = None
        else:
            fleet.upsert_placement(modified)
            if hypothetical is None:
                engine.forget(key)
            else:
                engine.set_decision(key, hypothetical)
            result = engine.evaluate(key, batch.now)
            out.evaluations += 1
            if result is not None and result.skipped is None:
                hypothetical = result.decisions
            elif hypothetical is None:
                hypothetical = ()
            # put the recorded world back
            if original is None:
                fleet.delete_placement(key)
            else:
                fleet.upsert_placement(original)
            if published is None or published.deleted:
                engine.forget(key)
            else:
                engine.set_decision(key, published.decisions)
        pair = (recorded, hypothetical)
        if pair != last and (since is None or batch.now >= since):
            out.changes.append(Change(batch.evaluated_at, recorded_seq, recorded, hypothetical))
            last = pair

    Auditor(history, limits, engine).walk(
        lambda replay, record: None, lambda record: False, probe=(key, probe)
    )
    return out


def what_if_engine(report: AuditReport) -> list[dict[str, Any]]:
    """An audit's mismatches as per-placement what-if changes (the engine is the change)."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for m in report.mismatches:
        by_key.setdefault(m.placement, []).append(
            {
                "at": m.evaluated_at,
                "recordedSeq": m.seq,
                "recorded": m.expected.get("decisions"),
                "whatIf": m.recomputed.get("decisions"),
                "fields": m.fields,
                "reason": m.reason,
            }
        )
    return [
        {
            "placement": key,
            "evaluations": tally.checked,
            "differed": len(by_key.get(key, [])),
            "changes": by_key.get(key, []),
        }
        for key, tally in sorted(report.per_placement.items())
    ]


def placements_of(objects: Iterable[tuple[Any, Any]]) -> list[Placement]:
    return [obj for obj, _ in objects if isinstance(obj, Placement)]
