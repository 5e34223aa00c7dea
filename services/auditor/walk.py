"""The walk through a history: batch after batch, each instance's state at the batch's
watermark, each diff with the decision it was computed against.

`Auditor.walk` calls back with the state a diff was computed from (the audit compares there,
explain explains there, what-if substitutes a placement there) and then commits the recorded
diff, as the worker did, before the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fleetplace.services.auditor.batches import DecisionBatch, group_batches
from fleetplace.services.auditor.history import DecisionRecord, History
from fleetplace.services.auditor.replay import SourceReplay, WatermarkBehind
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions

Progress = Callable[[int, int], None]
"""Called with (diffs done, diffs in the history)."""

Visit = Callable[[SourceReplay, DecisionRecord], None]
Probe = Callable[[SourceReplay, DecisionBatch, DecisionRecord | None], None]


class Auditor:
    """Walks the batches of a history with one incremental replay per worker instance."""

    def __init__(
        self,
        history: History,
        limits: DecodeLimits = DEFAULT_LIMITS,
        engine: EngineOptions = DEFAULT_OPTIONS,
        *,
        batches: list[DecisionBatch] | None = None,  # the history's, grouped already
    ) -> None:
        self.history = history
        self.limits = limits
        self.engine = engine
        self.batches = group_batches(history.decisions) if batches is None else batches
        self.warnings: list[str] = []
        self.rebuilds = 0
        self._replays: dict[str, SourceReplay] = {}
        self._committed: dict[str, list[DecisionRecord]] = {}

    def replay_for(self, batch: DecisionBatch) -> SourceReplay:
        """The batch's instance state at the batch's watermark."""
        replay = self._replays.get(batch.source)
        if replay is not None:
            try:
                replay.advance(batch.watermark)
                return replay
            except WatermarkBehind as e:
                self.rebuilds += 1
                self.warnings.append(
                    f"{batch.source}: watermark went back on {e} at {batch.evaluated_at}; state rebuilt"
                )
        replay = SourceReplay(self.history, self.limits, self.engine)
        replay.advance(batch.watermark)
        for record in self._committed.get(batch.source, ()):  # its own diffs, as the worker remembers them
            replay.apply_decision(record.value)
        self._replays[batch.source] = replay
        return replay

    def fast_forward(self, earlier: Sequence[DecisionBatch]) -> None:
        """The state a walk has after `earlier` (the batches that follow the ones walked so far),
        without checking them: each instance jumps straight to its last watermark there (one
        coalesced pass), then takes its own diffs. What a walk through them would hold, at a
        fraction of the cost; an instance's state already built is moved on, not rebuilt."""
        last: dict[str, DecisionBatch] = {}
        taken: dict[str, list[DecisionRecord]] = {}
        for batch in earlier:
            last[batch.source] = batch
            taken.setdefault(batch.source, []).extend(batch.diffs)
            self._committed.setdefault(batch.source, []).extend(batch.diffs)
        for source, batch in last.items():
            replay = self._replays.get(source)
            if replay is not None:
                try:
                    replay.advance(batch.watermark)
                    replay.take_latest(taken[source])
                    continue
                except WatermarkBehind:
                    self.rebuilds += 1
            replay = SourceReplay(self.history, self.limits, self.engine)
            replay.advance(batch.watermark)
            replay.take_latest(self._committed[source])
            self._replays[source] = replay

    def set_previous(self, replay: SourceReplay, key: str, seq: int) -> None:
        """Make seq `seq` of `key` the decision in force (0: none)."""
        previous = self.history.decision(key, seq) if seq > 0 else None
        if previous is None:
            replay.processor.published.pop(key, None)
            replay.processor.engine.forget(key)
        else:
            replay.force_decision(previous.value)

    def walk(
        self,
        visit: Visit,
        select: Callable[[DecisionRecord], bool] = lambda record: True,
        *,
        until: DecisionRecord | None = None,
        progress: Progress | None = None,
        probe: tuple[str, Probe] | None = None,
        batches: Sequence[DecisionBatch] | None = None,
    ) -> None:
        """Call `visit` for each selected diff with the state it was computed from, in replay order.

        `probe=(key, callback)` also calls back once per batch at `key`'s place in the batch's
        evaluation order (before `key`'s own diff, if the batch has one): what-if evaluates there.
        """
        total = len(self.history.decisions)
        done = 0
        for batch in self.batches if batches is None else batches:
            replay = self.replay_for(batch)
            probed = probe is None
            for record in batch.diffs:
                key = record.key
                if not probed and probe is not None and key >= probe[0]:
                    probe[1](replay, batch, record if key == probe[0] else None)
                    probed = True
                in_force = replay.published_seq(key)
                if select(record):
                    if in_force != record.seq - 1:
                        # the worker diffed against seq - 1: it had that decision in force
                        if in_force < record.seq - 1:
                            self.warnings.append(
                                f"{key} seq {record.seq}: seq {record.seq - 1} was not in the watermark"
                            )
                        self.set_previous(replay, key, record.seq - 1)
                    visit(replay, record)
                    if in_force > record.seq:
                        replay.apply_decision(record.value)
                        self.set_previous(replay, key, in_force)  # keep the later decision in force
                    else:
                        if in_force == record.seq:
                            self.set_previous(replay, key, record.seq - 1)
                        replay.apply_decision(record.value)
                else:
                    replay.apply_decision(record.value)
                self._committed.setdefault(batch.source, []).append(record)
                done += 1
                if record is until:
                    return
            if not probed and probe is not None:
                probe[1](replay, batch, None)
            if progress is not None:
                progress(done, total)
