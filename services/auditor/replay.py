"""The scheduler state one worker instance had, restored incrementally from the history.

A `SourceReplay` is a `SchedulerProcessor` that owns nothing, fed the same records the worker
consumed, in offset order, up to each batch's watermark — never rebuilt from scratch unless a
watermark goes backwards. Between two watermarks only the last valid record of each key is
applied (the state stores are keyed tables, so the result is the same), and a value identical
to the one in force is skipped: that is what makes replay faster than the worker's own ingest.

Decisions follow the worker's view exactly: the `decisions` topic up to the watermark, plus
the diffs this instance published itself (applied as the replay reaches them, like the
worker's commit). Records the worker dead-lettered are skipped: both ingest through
`fleetplace.services.scheduler.ingest`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fleetplace.services.auditor.history import DecisionRecord, History
from fleetplace.services.scheduler.core import SchedulerOptions, SchedulerProcessor
from fleetplace.services.scheduler.ingest import REJECTED, ingest
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.kafka import TP
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import DECISIONS, PLACEMENTS
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions

_NOTHING = object()


class WatermarkBehind(Exception):
    """The replay is already past a watermark: the state has to be rebuilt from the beginning."""


class InForce:
    """Where the value in force for a key came from (one per key, updated as records apply)."""

    def __init__(self, partition: int, offset: int) -> None:
        self.partition = partition
        self.offset = offset

    def __repr__(self) -> str:
        return f"InForce(partition={self.partition}, offset={self.offset})"


class SourceReplay:
    """One worker instance's state stores, advanced watermark by watermark."""

    def __init__(
        self,
        history: History,
        limits: DecodeLimits = DEFAULT_LIMITS,
        engine: EngineOptions = DEFAULT_OPTIONS,
    ) -> None:
        self.history = history
        self.limits = limits
        # owning nothing, it evaluates nothing: looking for affected placements is left out
        self.processor = SchedulerProcessor(
            SchedulerOptions(engine=engine), owns=lambda key: False, fan_out=False
        )
        self._cursor: dict[TP, int] = {}  # index into history.records(tp)
        self._value: dict[tuple[str, str], bytes | None] = {}  # (topic, key) -> bytes in force
        self.in_force: dict[tuple[str, str], InForce] = {}
        self._placement_partition: dict[str, int] = {}
        self.records_applied = 0
        self.records_skipped = 0

    @property
    def fleet(self) -> Any:
        return self.processor.fleet

    def advance(self, watermark: Mapping[TP, int]) -> None:
        """Apply every record below `watermark` not applied yet. WatermarkBehind if the replay is
        already past it somewhere (the caller rebuilds)."""
        for tp, cursor in self._cursor.items():
            if tp[0] == PLACEMENTS and tp not in watermark:
                continue  # handled below: a partition the instance no longer owns
            if cursor > self.history.index_of(tp, watermark.get(tp, 0)):
                raise WatermarkBehind(f"{tp[0]}/{tp[1]}")
        for tp in [tp for tp in self._cursor if tp[0] == PLACEMENTS and tp not in watermark]:
            self._revoke(tp[1])
        for tp, next_offset in watermark.items():
            start = self._cursor.get(tp, 0)
            stop = self.history.index_of(tp, next_offset)
            if stop > start:
                self._apply_range(tp, self.history.records(tp)[start:stop])
                self._cursor[tp] = stop

    def _revoke(self, partition: int) -> None:
        """Like the worker on a rebalance: forget the placements of a partition, keep decisions."""
        for key in [k for k, p in self._placement_partition.items() if p == partition]:
            self.processor.drop(key)
            del self._placement_partition[key]
            self._value.pop((PLACEMENTS, key), None)
        del self._cursor[(PLACEMENTS, partition)]

    def _apply_range(self, tp: TP, records: list[Record]) -> None:
        topic = tp[0]
        if topic == DECISIONS:
            self._apply_decisions(records)
            return
        # the last record per key, then earlier ones in case the last was rejected
        by_key: dict[str | None, list[Record]] = {}
        for record in records:
            by_key.setdefault(record.key, []).append(record)
        chosen = sorted(by_key.values(), key=lambda rs: rs[-1].offset)
        for candidates in chosen:
            for record in reversed(candidates):
                if self._apply(topic, record):
                    break
            self.records_skipped += len(candidates) - 1

    def _apply_decisions(self, records: list[Record]) -> None:
        """The processor keeps the first record of the highest seq per placement it accepts, so
        that one is looked for from the top: a stretch that starts late would otherwise apply
        every earlier diff in turn. A record the auditor could not parse may still be one the
        worker applied: with one in the range, every record is applied in offset order instead."""
        parsed = [self.history.decision_at(r.partition, r.offset) for r in records]
        if None in parsed:
            for record, diff in zip(records, parsed, strict=True):
                if diff is None:
                    self._apply(DECISIONS, record)  # whatever the worker made of it (usually: rejected)
                elif not self.processor.holds(diff.key, diff.seq):
                    self.apply_decision(diff.value)
            return
        self.take_latest(diff for diff in parsed if diff is not None)

    def _apply(self, topic: str, record: Record) -> bool:
        """Apply one record as the worker would; False if the worker rejected it."""
        key = record.key
        held = (topic, key) if key is not None and topic != DECISIONS else None
        if held is not None and self._value.get(held, _NOTHING) == record.value:
            self.records_skipped += 1
            self._held_at(held, record)
            return True  # the value in force already: applying it changes nothing
        if ingest(self.processor, topic, record, self.limits) is not None:
            return False
        self.records_applied += 1
        if held is not None:  # decoded: its key is the record's
            self._value[held] = record.value
            self._held_at(held, record)
            if topic == PLACEMENTS:
                self._placement_partition[held[1]] = record.partition
        return True

    def _held_at(self, held: tuple[str, str], record: Record) -> None:
        """Note where the value in force for (topic, key) came from (updated in place: one
        InForce per key, not one per record applied)."""
        where = self.in_force.get(held)
        if where is None:
            self.in_force[held] = InForce(record.partition, record.offset)
        else:
            where.partition = record.partition
            where.offset = record.offset

    # ---- decisions -----------------------------------------------------------------------
    def apply_decision(self, value: Mapping[str, Any]) -> bool:
        """Commit a recorded diff, as the worker does right after publishing it. False when the
        worker's processor rejects it (it would dead-letter it): nothing a worker publishes, so
        the comparison has already reported it; the decision in force stays."""
        try:
            self.processor.apply(DECISIONS, str(value["placement"]), value)
        except REJECTED:
            return False
        return True

    def take_latest(self, diffs: Iterable[DecisionRecord]) -> None:
        """What applying `diffs` one by one leaves in force, applying one per placement: the
        first of the highest seq the processor accepts (unless it holds a later one already)."""
        by_key: dict[str, list[DecisionRecord]] = {}
        for diff in diffs:
            by_key.setdefault(diff.key, []).append(diff)
        for candidates in by_key.values():
            for diff in sorted(candidates, key=lambda d: -d.seq):  # stable: the first of a seq first
                if self.processor.holds(diff.key, diff.seq) or self.apply_decision(diff.value):
                    break

    def force_decision(self, value: Mapping[str, Any]) -> bool:
        """Make a recorded diff the decision in force even if a later seq was applied (what-if).
        False, and the decision in force unchanged, when the processor rejects it."""
        key = str(value.get("placement"))
        held = self.processor.published.pop(key, None)
        if self.apply_decision(value):
            return True
        if held is not None:
            self.processor.published[key] = held
        return False

    def published_seq(self, key: str) -> int:
        last = self.processor.published.get(key)
        return last.seq if last is not None else 0
