"""The state a rollout worker instance had when it computed a diff, restored from the history.

A rollout's inputs are its own partition of `rollouts` and `rollout-status` (the co-partitioned
topics: one worker instance owns the same partition number of each) and the whole of
`placement-decisions`. A diff's `inputs` is the watermark of those it was computed from. A
`RolloutReplay` is a fresh `RolloutProcessor` — the worker's own — fed those records in offset
order up to the watermark (records the worker dead-letters are skipped, as it skips them); a
`RolloutWalk` goes diff after diff with the replay each was computed from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.rollout_log import RolloutDiffRecord, RolloutLog
from fleetplace.services.rollout.core import RolloutProcessor, Trigger
from fleetplace.services.rollout.ingest import ingest
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.kafka import TP
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import PLACEMENT_DECISIONS, ROLLOUT_DECISIONS, ROLLOUT_STATUS, ROLLOUTS
from fleetplace.shared.rollout import Instant


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
        """As the worker consumes it (the rollout worker's ingest): what it would dead-letter
        changes nothing."""
        if ingest(self.processor, topic, record, self.partitions, self.limits) is not None:
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
