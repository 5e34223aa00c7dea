"""Explanations for a reader that stays up: the auditor's walk, kept where it stopped.

An explanation is the state the worker had at the diff's batch, rebuilt from the history
(services/auditor/explain.py). Rebuilding it from the beginning for every page costs a replay of
the whole fleet, so the walk is kept: a diff at or after where it stopped is reached by jumping
over the batches in between (`Auditor.fast_forward` moves the states it holds on), and only a
diff before it starts a new walk. `park` places the walk, once caught up, before the earliest
of the placements' decisions now, so that the first "why is it like this now" is a jump.
"""

from __future__ import annotations

from dataclasses import replace

from fleetplace.services.auditor.batches import DecisionBatch, group_batches
from fleetplace.services.auditor.explain import Explanation, explaining
from fleetplace.services.auditor.history import DecisionRecord, History
from fleetplace.services.auditor.replay import SourceReplay
from fleetplace.services.auditor.walk import Auditor
from fleetplace.shared.bus.codec import DecodeLimits
from fleetplace.shared.placement.options import EngineOptions

BatchIdentity = tuple[str, str, tuple[tuple[str, int], ...]]


def _identity(batch: DecisionBatch) -> BatchIdentity:
    return (batch.source, batch.evaluated_at, batch.inputs)


def _nowhere(replay: SourceReplay, record: DecisionRecord) -> None:
    raise AssertionError("nothing is selected")


class Explainer:
    """One walk through a growing history, forward only: it stands at (batch, diffs walked in it)."""

    def __init__(self, history: History, limits: DecodeLimits, engine: EngineOptions) -> None:
        self.history = history
        self.limits = limits
        self.engine = engine
        self.rebuilds = 0
        self._batches: list[DecisionBatch] = []
        self._index: dict[tuple[int, int], tuple[int, int]] = {}  # a diff -> (its batch, its place there)
        self._decisions = -1  # len(history.decisions) the batches were grouped from
        self._auditor: Auditor | None = None
        self._position = (0, 0)

    def _regroup(self) -> None:
        if self._decisions == len(self.history.decisions):
            return
        batches = group_batches(self.history.decisions)
        # a batch's diffs may still be arriving: the walk is kept while the batches behind it, and
        # the one it stands in, are the same ones (the diffs already walked come first in theirs)
        upto = self._position[0] + 1
        if self._auditor is not None and [_identity(b) for b in batches[:upto]] != [
            _identity(b) for b in self._batches[:upto]
        ]:
            self._auditor = None
        if self._auditor is not None:
            self._auditor.batches = batches
        self._batches = batches
        self._index = {
            (d.partition, d.offset): (i, j) for i, b in enumerate(batches) for j, d in enumerate(b.diffs)
        }
        self._decisions = len(self.history.decisions)

    def _walk_to(self, index: int, place: int) -> Auditor:
        """The walk standing before diff `place` of batch `index`."""
        auditor = self._auditor
        if auditor is None or self._position > (index, place):
            auditor = Auditor(self.history, self.limits, self.engine)
            auditor.batches = self._batches
            self._position = (0, 0)
            self.rebuilds += 1
        at, walked = self._position
        if at < index:
            # the rest of the batch it stands in, and the batches up to the target's, jumped over
            rest = replace(self._batches[at], diffs=self._batches[at].diffs[walked:])
            auditor.fast_forward([rest, *self._batches[at + 1 : index]])
            walked = 0
        if walked < place:
            before = replace(self._batches[index], diffs=self._batches[index].diffs[walked:place])
            auditor.walk(_nowhere, lambda record: False, batches=[before])
        self._auditor, self._position = auditor, (index, place)
        return auditor

    def park(self, records: list[DecisionRecord]) -> None:
        """Stand before the earliest of `records` (each placement's decision now)."""
        self._regroup()
        places = [
            self._index[(r.partition, r.offset)] for r in records if (r.partition, r.offset) in self._index
        ]
        if places and (self._auditor is None or self._position > min(places)):
            self._walk_to(*min(places))

    def explain(self, target: DecisionRecord) -> Explanation:
        self._regroup()
        index, place = self._index[(target.partition, target.offset)]
        auditor = self._walk_to(index, place)
        out = Explanation(target, target.now)
        here = replace(self._batches[index], diffs=self._batches[index].diffs[place : place + 1])
        auditor.walk(explaining(out), lambda record: record is target, batches=[here])
        self._position = (index, place + 1)
        return out
