"""An optional strategy of `audit_topics` with several jobs: check the first stretch of the
history while the rest is still being read.

Reading the topics keeps one CPU busy and leaves the others idle, and no stretch can start from
what the read has so far (the broker hands out partitions in bursts, not in time order). So
before the read starts, one more process reads only what the first stretch needs, in the order
it needs it — the first `share` of every `decisions` partition (the `Cut`), then each input
partition up to the watermarks of the batches found there — and checks those batches while this
process reads everything.

The first stretch is the leading batches evaluated before the last diff read of every partition
the cut shortened (an instance publishes in evaluation order, so their diffs all lie before the
cut) and reading no `decisions` record beyond it. This process works out the same stretch from
the whole history (`FirstStretch.length`) and takes the early report only when the batches
checked there are exactly its own first ones; when they are not (clocks that went back across
instances) or the history could not be read short of its end, the caller checks them itself:
the report is always the one a single walk gives.

Fork only, with a `multiprocessing` pool of one: the request is inherited, not pickled; the
report comes back through the pool. Below the audit: it imports the walk and the check.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleetplace.services.auditor.batches import DecisionBatch, group_batches
from fleetplace.services.auditor.check import Checker
from fleetplace.services.auditor.history import (
    INPUT_TOPICS,
    DecisionRecord,
    History,
    HistoryError,
    read_into,
)
from fleetplace.services.auditor.report import AuditReport
from fleetplace.services.auditor.walk import Auditor, collection_off
from fleetplace.shared.bus.codec import DecodeLimits
from fleetplace.shared.bus.kafka import TP, BroadcastReader, true_end_offsets
from fleetplace.shared.bus.topics import DECISIONS, Topics
from fleetplace.shared.placement.options import EngineOptions
from fleetplace.shared.settings import KafkaSettings

# What identifies a batch across two reads of the same topics: source, evaluatedAt, inputs and
# where its diffs lie.
BatchKey = tuple[str, str, tuple[tuple[str, int], ...], tuple[tuple[int, int], ...]]


def batch_key(batch: DecisionBatch) -> BatchKey:
    return (
        batch.source,
        batch.evaluated_at,
        batch.inputs,
        tuple((d.partition, d.offset) for d in batch.diffs),
    )


def share_for(jobs: int) -> float:
    """The part of the decisions the first stretch takes: a little more than an even split, since
    it starts while the read is still going (bench-audit: 0.56 of two)."""
    return min(0.9, 1.12 / jobs)


@dataclass(frozen=True)
class Cut:
    """Where the first stretch's read of `decisions` stops: `at[p]` is the first offset of
    partition p it does not read; `ends` the partitions' ends when the audit started."""

    at: Mapping[int, int]
    ends: Mapping[int, int]

    @classmethod
    def of(cls, ends: Mapping[int, int], share: float) -> Cut:
        return cls({p: math.ceil(end * share) for p, end in ends.items()}, dict(ends))

    def length(self, decisions: Iterable[DecisionRecord], batches: Sequence[DecisionBatch]) -> int:
        """How many of `batches` (replay order) the first stretch checks, given the decision
        records read (all of them or only those before the cut: the answer is the same)."""
        last: dict[int, DecisionRecord] = {}  # per partition: the last diff before the cut
        for d in decisions:
            if d.offset < self.at.get(d.partition, 0):
                seen = last.get(d.partition)
                if seen is None or d.offset > seen.offset:
                    last[d.partition] = d
        bounds: list[datetime] = []
        for partition, at in self.at.items():
            if at < self.ends[partition]:  # cut short: complete up to its last diff read
                if partition not in last:
                    return 0
                bounds.append(last[partition].now)
        bound = min(bounds, default=None)
        count = 0
        for batch in batches:
            if bound is not None and batch.now >= bound:
                break
            if any(t == DECISIONS and n > self.at.get(p, 0) for (t, p), n in batch.watermark.items()):
                break  # it read decisions the cut leaves out
            count += 1
        return count


@dataclass(frozen=True)
class CheckedStretch:
    """What the early process checked (`batch_key`s, replay order) and its report."""

    batches: list[BatchKey]
    report: AuditReport


@dataclass(frozen=True)
class _Request:
    """What the early process takes from this one by fork."""

    kafka: KafkaSettings | str
    topics: Topics
    cut: Cut
    limits: DecodeLimits
    engine: EngineOptions
    placement: str | None
    since: datetime | None
    done: Any  # a multiprocessing Value: diffs checked so far


_request: _Request | None = None  # set while the pool forks: read by `_check_first_stretch`


async def _decision_ends(kafka: KafkaSettings | str, topics: Topics) -> dict[int, int]:
    async with BroadcastReader(kafka, [topics.decisions]) as reader:
        ends = await true_end_offsets(kafka, reader.partitions)
    return {p: n for (_, p), n in ends.items()}


async def _read_first_stretch(request: _Request) -> tuple[History, int]:
    """The records the first stretch needs, and how many batches it has."""
    topics, cut = request.topics, request.cut
    history = History()
    async with BroadcastReader(request.kafka, [topics.decisions], max_records=50_000) as reader:
        stops = {(topics.decisions, p): n for p, n in cut.at.items()}
        await read_into(reader, history, stops, topics.prefix, request.limits, give_up_when_stuck=True)
    decisions = sorted(history.decisions, key=lambda d: (d.partition, d.offset))
    batches = group_batches(decisions)
    count = cut.length(decisions, batches)
    needed: dict[TP, int] = {}
    for batch in batches[:count]:
        for (topic, partition), offset in batch.watermark.items():
            if topic in INPUT_TOPICS and offset > needed.get((topic, partition), 0):
                needed[(topic, partition)] = offset
    if needed:
        async with BroadcastReader(request.kafka, topics.names(INPUT_TOPICS), max_records=50_000) as reader:
            stops = {(topics.name(t), p): n for (t, p), n in needed.items()}
            await read_into(reader, history, stops, topics.prefix, request.limits, give_up_when_stuck=True)
    history.seal()
    return history, count


def _check_first_stretch() -> CheckedStretch | None:
    """In the forked process: read and check the first stretch (None: it could not be read)."""
    request = _request
    assert request is not None, "runs only in the process forked by checking_first_stretch"
    try:
        history, count = asyncio.run(_read_first_stretch(request))
    except HistoryError:
        return None  # a partition that stops short of the cut: the caller checks it all
    auditor = Auditor(history, request.limits, request.engine)
    stretch = auditor.batches[:count]
    checker = Checker(request.placement, request.since)
    done = request.done

    def walked(count: int, _total: int) -> None:
        done.value = count

    with collection_off():
        auditor.walk(checker.visit, checker.select, progress=walked, batches=stretch)
    checker.took(auditor.warnings, auditor.rebuilds)
    return CheckedStretch([batch_key(b) for b in stretch], checker.report)


class FirstStretch:
    """The first stretch, being checked in another process (`checking_first_stretch`)."""

    def __init__(self, cut: Cut, pending: Any, done: Any) -> None:
        self._cut = cut
        self._pending = pending  # multiprocessing AsyncResult of `_check_first_stretch`
        self._done = done

    @property
    def done(self) -> int:
        """Diffs checked there so far."""
        return int(self._done.value)

    def length(self, history: History, batches: Sequence[DecisionBatch]) -> int:
        """How many of the whole history's `batches` it checks."""
        return self._cut.length(history.decisions, batches)

    def report(self, batches: Sequence[DecisionBatch]) -> AuditReport | None:
        """Its report, once done, when it checked exactly `batches`; None when it checked others
        or could not read them (the caller checks them). A RuntimeError when it failed."""
        try:
            checked: CheckedStretch | None = self._pending.get()
        except Exception as e:
            raise RuntimeError(f"audit process failed: {e!r}") from e
        if checked is None or checked.batches != [batch_key(b) for b in batches]:
            return None
        return checked.report


@contextmanager
def checking_first_stretch(
    kafka: KafkaSettings | str,
    topics: Topics,
    *,
    jobs: int,
    limits: DecodeLimits,
    engine: EngineOptions,
    placement: str | None,
    since: datetime | None,
) -> Iterator[FirstStretch | None]:
    """Start checking the first stretch in a forked process (None where this does not apply: one
    job, no fork, no decisions); the process is stopped on the way out, done or not. Enter it
    with no event loop running."""
    global _request
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield None
        return
    ends = asyncio.run(_decision_ends(kafka, topics))
    if not any(ends.values()):
        yield None
        return
    cut = Cut.of(ends, share_for(jobs))
    context = multiprocessing.get_context("fork")
    done = context.Value("q", 0, lock=False)
    _request = _Request(kafka, topics, cut, limits, engine, placement, since, done)
    try:
        pool = context.Pool(1)  # forks here
    finally:
        _request = None
    try:
        yield FirstStretch(cut, pool.apply_async(_check_first_stretch), done)
    finally:
        pool.terminate()
        pool.join()
