"""Re-derive the queue placements (`app-placements`) from `queue-configs` and `applications`.

An app-placements record carries `inputs` — the `queue-configs` watermark of its batch and the
offset of its own application record — and `evaluatedAt`. Placing is stateful: an application
can create a queue that later applications see. So the records are replayed in the order the
placer made them (time, then the applications partition and offset, as a batch is polled),
through the queue placer's own processor, with the rule set restored to each record's watermark
(an invalid config update rejected whole, as the worker does). Each record is checked twice:
its `application` must be the submission at the recorded offset of `applications`, and the
placement recomputed from it must match (queue, rule, created, rejection and reason, rule set).

Hazard: `inputs` does not say which other instances' placements a placer had mirrored from
`app-placements`. The replay assumes every earlier placement was seen — exact for one instance;
with several, a queue created concurrently elsewhere may not have existed yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from fleetplace.services.auditor.history import History
from fleetplace.services.queue_placer.worker import QueueProcessor
from fleetplace.shared.api.queues import ApplicationSubmission
from fleetplace.shared.bus.codec import (
    DEFAULT_LIMITS,
    DecodeError,
    DecodeLimits,
    decode_object,
    decode_record,
)
from fleetplace.shared.bus.envelope import parse_time
from fleetplace.shared.bus.kafka import parse_watermark_key
from fleetplace.shared.bus.records import Record
from fleetplace.shared.queueing import ConfigError

COMPARED = ("queue", "rule", "created", "rejected", "reason", "ruleSetVersion")
QUEUE_CONFIGS = "queue-configs"
APPLICATIONS = "applications"


@dataclass(frozen=True)
class PlacementRecord:
    """One `app-placements` record, parsed: its value, its `evaluatedAt` and its `inputs`."""

    record: Record
    value: Mapping[str, Any]
    now: datetime
    watermark: dict[tuple[str, int], int]
    application: tuple[int, int] | None  # (partition, offset) of its applications record

    @property
    def order(self) -> tuple[datetime, int, int, int, int]:
        p, o = self.application if self.application is not None else (-1, -1)
        return (self.now, p, o, self.record.partition, self.record.offset)


@dataclass
class QueueMismatch:
    application: str
    record: str
    evaluated_at: str
    fields: list[str]
    expected: dict[str, Any]
    recomputed: dict[str, Any]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "application": self.application,
            "record": self.record,
            "evaluatedAt": self.evaluated_at,
            "fields": self.fields,
            "reason": self.reason,
            "expected": self.expected,
            "recomputed": self.recomputed,
        }


@dataclass
class QueueAuditReport:
    checked: int = 0
    reproduced: int = 0
    mismatches: list[QueueMismatch] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # records that are not placements


class _Shared:
    """What the records of a history share, parsed once: the batch times (`evaluatedAt`) and the
    watermark keys (`<topic>/<partition>`)."""

    def __init__(self) -> None:
        self.times: dict[str, datetime] = {}
        self.keys: dict[str, tuple[str, int]] = {}

    def time(self, text: str) -> datetime:
        found = self.times.get(text)
        if found is None:
            found = self.times[text] = parse_time(text)
        return found

    def key(self, text: str) -> tuple[str, int]:
        found = self.keys.get(text)
        if found is None:
            found = self.keys[text] = parse_watermark_key(text)
        return found


def _parse(record: Record, limits: DecodeLimits, shared: _Shared) -> PlacementRecord:
    value = decode_object(record.value, limits)
    if value is None:
        raise ValueError("a tombstone")
    evaluated_at = value.get("evaluatedAt")
    inputs = value.get("inputs")
    if not isinstance(evaluated_at, str) or not isinstance(inputs, dict):
        raise ValueError("no evaluatedAt or inputs: written before placements were auditable")
    watermark = {shared.key(str(k)): v for k, v in inputs.items() if type(v) is int}
    apps = [(p, n - 1) for (t, p), n in watermark.items() if t == APPLICATIONS]
    return PlacementRecord(
        record, value, shared.time(evaluated_at), watermark, apps[0] if len(apps) == 1 else None
    )


def _compared(value: Mapping[str, Any]) -> dict[str, Any]:
    return {f: value.get(f, False if f in ("created", "rejected") else None) for f in COMPARED}


class _Configs:
    """The queue placer's rule set, advanced record by record like the worker's broadcast reader."""

    def __init__(self, history: History, processor: QueueProcessor, limits: DecodeLimits) -> None:
        self.history = history
        self.processor = processor
        self.limits = limits
        self.cursor: dict[int, int] = {}

    def advance(self, watermark: Mapping[tuple[str, int], int]) -> None:
        for (topic, partition), next_offset in watermark.items():
            if topic != QUEUE_CONFIGS:
                continue
            tp = (topic, partition)
            records = self.history.records(tp)
            stop = self.history.index_of(tp, next_offset)
            for record in records[self.cursor.get(partition, 0) : stop]:
                try:
                    decoded = decode_record(record, self.limits)
                    self.processor.apply_config(decoded.key, decoded.value)
                except (DecodeError, ConfigError, ValueError):
                    pass  # rejected whole: the last good rule set stays (as the worker does)
            self.cursor[partition] = max(stop, self.cursor.get(partition, 0))


def placements_in_order(
    history: History, limits: DecodeLimits = DEFAULT_LIMITS
) -> tuple[list[PlacementRecord], list[str]]:
    """The `app-placements` records in the order the placer made them, and the records that are
    not placements (where, and why)."""
    placements: list[PlacementRecord] = []
    unreadable: list[str] = []
    shared = _Shared()
    for record in history.app_placements:
        try:
            placements.append(_parse(record, limits, shared))
        except (DecodeError, ValueError) as e:
            unreadable.append(f"app-placements/{record.partition}@{record.offset}: {e}")
    placements.sort(key=lambda p: p.order)
    return placements, unreadable


class QueuePlacerReplay:
    """The queue placer's processor over a history that keeps growing (the explorer's): each
    placement mirrored in placing order under the rule set of its watermark, then the configs
    read since applied — the queue tree and rule set a worker that read the topics holds.

    `advance` after records were added takes the new placements; one made before a placement
    already mirrored (another instance's, read late) makes it start again from the beginning.
    """

    def __init__(self, history: History, limits: DecodeLimits = DEFAULT_LIMITS) -> None:
        self.history = history
        self.limits = limits
        self._shared = _Shared()
        self._restart()

    def _restart(self) -> None:
        self.processor = QueueProcessor()
        self._configs = _Configs(self.history, self.processor, self.limits)
        self._taken = 0  # how many of history.app_placements were looked at
        self._last: tuple[datetime, int, int, int, int] | None = None
        self.unreadable: list[str] = []  # records that are not placements (where, and why)

    def advance(self) -> tuple[bool, list[PlacementRecord]]:
        """Take the placements added since the last call: (whether it started again, the
        placements it mirrored now, in placing order — every one when it started again)."""
        records = self.history.app_placements
        fresh: list[PlacementRecord] = []
        unreadable: list[str] = []
        for record in records[self._taken :]:
            try:
                fresh.append(_parse(record, self.limits, self._shared))
            except (DecodeError, ValueError) as e:
                unreadable.append(f"app-placements/{record.partition}@{record.offset}: {e}")
        self._taken = len(records)
        fresh.sort(key=lambda p: p.order)
        restarted = bool(fresh and self._last is not None and fresh[0].order < self._last)
        if restarted:
            self._restart()
            fresh, unreadable = placements_in_order(self.history, self.limits)
            self._taken = len(records)
        self.unreadable += unreadable
        for placement in fresh:
            self._configs.advance(placement.watermark)
            self.processor.mirror(placement.value)
            self._last = placement.order
        ends = {
            tp: records_[-1].offset + 1
            for tp, records_ in self.history.partitions.items()
            if tp[0] == QUEUE_CONFIGS and records_
        }
        self._configs.advance(ends)
        return restarted, fresh


def audit_app_placements(history: History, limits: DecodeLimits = DEFAULT_LIMITS) -> QueueAuditReport:
    report = QueueAuditReport()
    placements, report.unreadable = placements_in_order(history, limits)
    processor = QueueProcessor()
    configs = _Configs(history, processor, limits)
    for placement in placements:
        configs.advance(placement.watermark)
        report.checked += 1
        problem = _check(history, processor, placement, limits)
        if problem is None:
            report.reproduced += 1
        else:
            report.mismatches.append(problem)
    return report


def _check(
    history: History, processor: QueueProcessor, placement: PlacementRecord, limits: DecodeLimits
) -> QueueMismatch | None:
    """Place the record's application again; None when the record reproduces."""
    value = placement.value
    expected = _compared(value)
    where = f"app-placements/{placement.record.partition}@{placement.record.offset}"

    def mismatch(fields: list[str], recomputed: dict[str, Any], reason: str) -> QueueMismatch:
        app_id = str(value.get("applicationID"))
        return QueueMismatch(
            app_id, where, str(value.get("evaluatedAt")), fields, expected, recomputed, reason
        )

    submitted = _submission(history, placement, limits)
    if isinstance(submitted, str):
        return mismatch(["application"], {}, submitted)
    if submitted.model_dump(mode="json", by_alias=True) != value.get("application"):
        return mismatch(["application"], {}, "the record's application differs from the applications record")
    recomputed = processor.place(submitted, placement.now, {})
    if recomputed is None:
        return mismatch(
            ["applicationID"], {}, "the application was placed before: it would not be placed again"
        )
    got = _compared(recomputed)
    fields = [f for f in COMPARED if got[f] != expected[f]]
    return mismatch(fields, got, "recomputed " + ", ".join(fields) + " differ") if fields else None


def _submission(
    history: History, placement: PlacementRecord, limits: DecodeLimits
) -> ApplicationSubmission | str:
    """The application record the placement was made from, or why it cannot be found."""
    if placement.application is None:
        return "inputs name no single applications record"
    partition, offset = placement.application
    tp = (APPLICATIONS, partition)
    records = history.records(tp)
    i = history.index_of(tp, offset)
    if i >= len(records) or records[i].offset != offset:
        return f"applications/{partition}@{offset} is not on the topic"
    try:
        decoded = decode_object(records[i].value, limits)
        return ApplicationSubmission.model_validate(decoded)
    except (DecodeError, ValidationError, ValueError) as e:
        return f"applications/{partition}@{offset} is not a valid submission: {str(e).splitlines()[0]}"
