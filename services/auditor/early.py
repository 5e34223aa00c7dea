"""Checking the first stretch of a history while the rest is still being read.

Reading the topics keeps one CPU busy; with the broker it leaves most of a second one idle,
and no stretch of the walk can start from what the main read has so far, because the broker
hands out partitions in bursts, not in time order. So a second process, forked before the read
starts, reads only what the first stretch needs, in the order it needs it: the first `share`
of every `decisions` partition, then each input partition up to where the batches found there
had read it. Then it checks those batches, while the main process is still reading everything.

The first stretch is the batches evaluated before the earliest time at which a `decisions`
partition was cut off (each instance publishes in evaluation order, so every diff of those
batches is in). The main process checks that its own batches begin with exactly the same ones
(source, `evaluatedAt`, `inputs`, every diff's position) before it takes the early report; if
they do not (clocks that went back across instances), or the early process fails, it drops the
early report and checks everything itself, so the result is always the one a single walk gives.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import traceback
from datetime import datetime
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from fleetplace.services.auditor.batches import DecisionBatch, group_batches
from fleetplace.services.auditor.forked import fork, next_message
from fleetplace.services.auditor.history import INPUT_TOPICS, History, read_history, read_into
from fleetplace.services.auditor.history import Progress as HistoryProgress
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeLimits
from fleetplace.shared.bus.kafka import TP, BroadcastReader, true_end_offsets
from fleetplace.shared.bus.topics import DECISIONS, Topics
from fleetplace.shared.placement.options import DEFAULT_OPTIONS, EngineOptions
from fleetplace.shared.settings import KafkaSettings

if TYPE_CHECKING:
    from fleetplace.services.auditor.audit import AuditReport
    from fleetplace.services.auditor.walk import Progress as WalkProgress

BatchKey = tuple[str, str, tuple[tuple[str, int], ...], tuple[tuple[int, int], ...]]


def share_for(jobs: int) -> float:
    """The part of the decisions the early process takes: a little more than an even split,
    since it starts walking while the others still read (bench-audit: 0.56 of two)."""
    return min(0.9, 1.12 / jobs)


def batch_key(batch: DecisionBatch) -> BatchKey:
    """What identifies a batch across two reads of the same topics."""
    return (
        batch.source,
        batch.evaluated_at,
        batch.inputs,
        tuple((d.partition, d.offset) for d in batch.diffs),
    )


async def read_first_stretch(
    kafka: KafkaSettings | str, topics: Topics, share: float, limits: DecodeLimits
) -> tuple[History, int]:
    """The records the first stretch needs, and how many batches it has (0: none to check)."""
    history = History()
    async with BroadcastReader(kafka, [topics.decisions], max_records=50_000) as reader:
        ends = await true_end_offsets(kafka, reader.partitions)
        history.ends = {(topics.unprefixed(t), p): end for (t, p), end in ends.items()}
        cut = {tp: math.ceil(end * share) for tp, end in ends.items()}
        await read_into(reader, history, cut, topics.prefix, limits, give_up_when_stuck=True)
    # each partition cut short is complete up to the time of the last diff read from it
    last: dict[int, datetime] = {}
    for decision in history.decisions:
        last[decision.partition] = decision.now
    bounds = []
    for (_, partition), cut_at in cut.items():
        if cut_at < ends[(topics.decisions, partition)]:
            at = last.get(partition)
            if at is None:
                return history, 0  # cut before its first diff: no time bound
            bounds.append(at)
    bound = min(bounds, default=None)
    stretch = [b for b in group_batches(history.decisions) if bound is None or b.now < bound]
    needed: dict[TP, int] = {}
    for batch in stretch:
        for tp, offset in batch.watermark.items():
            if offset > needed.get(tp, 0):
                needed[tp] = offset
    if any(t == DECISIONS and n > cut.get((topics.decisions, p), 0) for (t, p), n in needed.items()):
        return history, 0  # read decisions the cut did not reach: leave it to the main walk
    inputs = {(topics.name(t), p): n for (t, p), n in needed.items() if t in INPUT_TOPICS}
    async with BroadcastReader(kafka, topics.names(INPUT_TOPICS), max_records=50_000) as reader:
        await read_into(reader, history, inputs, topics.prefix, limits, give_up_when_stuck=True)
    history.seal()
    return history, len(stretch)


class EarlyStretch:
    """The forked process checking the first stretch; `keys()` then `report()` from the main one."""

    def __init__(self, process: Any, receive: Connection, done: Any) -> None:
        self._process = process
        self._receive = receive
        self._done = done  # a shared integer: diffs checked so far

    @property
    def done(self) -> int:
        return int(self._done.value)

    def keys(self) -> list[BatchKey] | None:
        """The batches it checks, in replay order (None: it checks nothing, or it failed)."""
        status, payload = next_message(self._process, self._receive)
        keys: list[BatchKey] | None = payload if status == "stretch" else None
        return keys

    def report(self) -> AuditReport:
        """Its AuditReport; RuntimeError if it failed."""
        status, payload = next_message(self._process, self._receive)
        if status != "ok":
            raise RuntimeError(f"early audit process failed:\n{payload}")
        report: AuditReport = payload
        return report

    def stop(self) -> None:
        self._receive.close()
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def _early_main(
    kafka: KafkaSettings | str,
    topics: Topics,
    share: float,
    limits: DecodeLimits,
    engine: EngineOptions,
    placement: str | None,
    since: datetime | None,
    send: Connection,
    done: Any,
) -> None:
    from fleetplace.services.auditor.audit import Checker, _collection_off
    from fleetplace.services.auditor.parallel import walk_part
    from fleetplace.services.auditor.walk import Auditor

    try:
        history, count = asyncio.run(read_first_stretch(kafka, topics, share, limits))
        if not count:
            send.send(("none", None))
            return
        auditor = Auditor(history, limits, engine)
        stretch = auditor.batches[:count]
        send.send(("stretch", [batch_key(b) for b in stretch]))
        with _collection_off():
            report = walk_part(auditor, Checker(placement, since), stretch, done)
        send.send(("ok", report))
    except BaseException:
        send.send(("error", traceback.format_exc()))
    finally:
        send.close()


def start_early(
    kafka: KafkaSettings | str,
    topics: Topics,
    *,
    jobs: int,
    limits: DecodeLimits,
    engine: EngineOptions,
    placement: str | None,
    since: datetime | None,
) -> EarlyStretch | None:
    """Fork the early process (before any event loop runs here); None where it does not apply."""
    if jobs < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    return EarlyStretch(*fork(_early_main, kafka, topics, share_for(jobs), limits, engine, placement, since))


def audit_topics(
    kafka: KafkaSettings | str,
    topics: Topics,
    *,
    placement: str | None = None,
    since: datetime | None = None,
    limits: DecodeLimits = DEFAULT_LIMITS,
    engine: EngineOptions = DEFAULT_OPTIONS,
    jobs: int = 1,
    reading: HistoryProgress | None = None,
    progress: WalkProgress | None = None,
) -> tuple[History, AuditReport]:
    """`read_history` then `audit`, with the first stretch checked during the read when there
    are several jobs. Call it with no event loop running (it forks, then runs its own)."""
    from fleetplace.services.auditor.audit import audit

    early = start_early(
        kafka, topics, jobs=jobs, limits=limits, engine=engine, placement=placement, since=since
    )
    try:
        history = asyncio.run(read_history(kafka, topics, limits=limits, progress=reading))
    except BaseException:
        if early is not None:
            early.stop()
        raise
    report = audit(
        history,
        placement=placement,
        since=since,
        limits=limits,
        engine=engine,
        progress=progress,
        jobs=jobs,
        early=early,
    )
    return history, report
