"""The score worker: ScoreSources evaluated against Prometheus, AddOnPlacementScores on the bus.

Sources: `scores` read whole by every instance (a global table: what is published, so that only
changes and refreshes are sent, also after a restart), and `score-sources` through a consumer
group, so instances split the sources by key. On assignment the partitions are read from the
beginning (a source's state is its latest record); the group's committed offsets only mark what
was read before, so that a source that does not validate is dead-lettered once, not again at each
rebalance or restart (in exactly-once mode a dead letter commits with its offset). Sinks: `scores` (the AddOnPlacementScores, keyed as the
scheduler reads them), `score-source-status` (one record per evaluation) and `deadletter` (a
source that does not validate; the previous version of it keeps running).

Each owned source is evaluated every `interval` by a background job; finished evaluations are
published on the worker's next turn. A failed evaluation publishes no score: the failure is
counted (`fleetplace_score_source_errors_total{source,reason}`) and shown on the status topic,
and the scores already published expire at their `validUntil`. docs/scores.md describes it all.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp
from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge

from fleetplace.services.lifecycle import (
    PartitionOwnership,
    RecordCounters,
    RunsOnRuntime,
    Topology,
    Turn,
    WorkerRuntime,
    run_until_signalled,
)
from fleetplace.services.scores.core import Finished, ScoreSources, SourceState, status_value
from fleetplace.services.scores.prometheus import evaluate
from fleetplace.shared.api.admission import read_score_source
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.bus.codec import DecodeLimits, decode_record, encode_json
from fleetplace.shared.bus.delivery import Output
from fleetplace.shared.bus.envelope import HeaderStamp, dead_letter
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import Batch, caught_up, seek_to_beginning
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import SCORE_SOURCE_STATUS, SCORE_SOURCES, SCORES, Topics, spec
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.scores")

# Evaluations in flight at once, at most: a slow Prometheus holds some, the rest wait their turn.
MAX_CONCURRENT_EVALUATIONS = 32
# The evaluator looks for due sources at least this often (and at once when a source arrives).
EVALUATOR_TICK_S = 0.5


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        records = RecordCounters(registry)
        self.consumed = records.consumed
        self.deadletters = records.deadletters
        self.evaluations = Counter(
            "fleetplace_score_source_evaluations_total",
            "Evaluations of score sources, failed or not",
            ["source"],
            registry=registry,
        )
        self.errors = Counter(
            "fleetplace_score_source_errors_total",
            "Evaluations that published nothing, by reason (docs/scores.md#failures)",
            ["source", "reason"],
            registry=registry,
        )
        self.skipped = Counter(
            "fleetplace_score_source_series_skipped_total",
            "Series left out of a result: NaN, ±Inf, a cluster named twice, a name with /",
            ["source", "reason"],
            registry=registry,
        )
        self.published = Counter(
            "fleetplace_scores_published_total",
            "AddOnPlacementScores published (changes and refreshes)",
            ["source"],
            registry=registry,
        )
        self.sources = Gauge(
            "fleetplace_score_sources", "Score sources this instance owns", registry=registry
        )
        self.query_seconds = Gauge(
            "fleetplace_score_source_last_query_seconds",
            "How long the last evaluation of a source took",
            ["source"],
            registry=registry,
        )


class ScoreWorker(RunsOnRuntime):
    """One score worker instance. `await worker.run()` until `worker.stop()` or a signal."""

    def __init__(self, settings: Settings, *, instance: str = "scores") -> None:
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.instance = instance
        self.source = f"fleetplace/{instance}"
        self.limits = DecodeLimits.from_settings(settings)
        self.registry = CollectorRegistry()
        self.metrics = _Metrics(self.registry)
        self.state = ScoreSources()
        self._assigned: set[int] = set()
        # per owned partition: the group's committed offset at assignment; records below it were
        # read (and dead-lettered, if bad) before
        self._read_before: dict[int, int] = {}
        self._caught_up = False
        self._ready = False
        self._finished: list[tuple[Finished | None, float]] = []
        self._wake = asyncio.Event()
        self.published = 0
        self.evaluations = 0
        self.runtime = WorkerRuntime(
            settings,
            self,
            Topology(
                broadcast=[self.topics.scores],
                group=[self.topics.score_sources],
                group_id=settings.score_group_id,
                subscribe_when_ready=True,
            ),
            name="score worker",
            instance=instance,
            registry=self.registry,
            rebalance_listener=PartitionOwnership(self._flush, self._revoke, self._assign),
            background=[self._evaluator],
            failpoints="scores",
        )

    # ---- ownership ------------------------------------------------------------------------
    async def _flush(self) -> None:
        """Nothing to hand over: a source's evaluations are not state, the next owner starts anew."""

    def _revoke(self, revoked: set[tuple[str, int]]) -> None:
        partitions = {p for _, p in revoked}
        self._assigned -= partitions
        for p in partitions:
            self._read_before.pop(p, None)
        dropped = self.state.forget_partitions(partitions)
        self.metrics.sources.set(len(self.state.sources))
        log.info("partitions revoked", partitions=sorted(partitions), sources=dropped)

    async def _assign(self, assigned: set[tuple[str, int]]) -> None:
        # owned from the seek on (the runtime holds their records back until then)
        self._caught_up = False
        if assigned:
            tps = [TopicPartition(t, p) for t, p in sorted(assigned)]
            committed = {tp.partition: await self.runtime.group.committed(tp) or 0 for tp in tps}
            await seek_to_beginning(self.runtime.group, *tps)
            self._read_before.update(committed)
        self._assigned |= {p for _, p in assigned}
        self._caught_up = False  # a catch-up seen during the seek was from the old positions
        log.info("partitions assigned", partitions=sorted({p for _, p in assigned}))

    # ---- the hooks the runtime calls --------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Caught up on the scores topic (the runtime adds: and the broker answers)."""
        return self._ready

    @property
    def accepting(self) -> bool:
        return True

    def summary(self) -> Mapping[str, Any]:
        return {"evaluations": self.evaluations, "published": self.published}

    async def on_broadcast(self, batch: Batch, turn: Turn) -> None:
        for record in batch.records:
            self.metrics.consumed.labels(SCORES).inc()
            if record.key is None:
                continue
            try:
                decoded = decode_record(record, self.limits)
            except DecodeError:
                continue  # not a score anyone can use: the scheduler dead-letters it
            self.state.observe_score(decoded.key, decoded.value)
        if batch.caught_up and not self._ready:
            self._ready = True
            self._wake.set()

    async def on_records(self, records: list[Record], turn: Turn) -> None:
        by_partition: dict[int, list[Record]] = {}
        for record in records:
            by_partition.setdefault(record.partition, []).append(record)
        for partition, mine in sorted(by_partition.items()):
            source = (self.topics.score_sources, partition)
            letters = [r for r in map(self._apply_source, mine) if r is not None]
            next_offset = mine[-1].offset + 1
            if next_offset > self._read_before.get(partition, 0):
                turn.commits[TopicPartition(*source)] = next_offset
                turn.outputs.append(Output(letters, source=source, offsets={source: next_offset}))
        if not records and not self._caught_up and self._assigned:
            tps = [(self.topics.score_sources, p) for p in sorted(self._assigned)]
            self._caught_up = await caught_up(self.runtime.group, tps)
            if self._caught_up:
                self._wake.set()

    async def on_turn(self, turn: Turn) -> None:
        finished, self._finished = self._finished, []
        for outcome, took in finished:
            if outcome is not None:
                turn.outgoing.extend(self._records(outcome, took))

    def _apply_source(self, record: Record) -> OutgoingRecord | None:
        self.metrics.consumed.labels(SCORE_SOURCES).inc()
        try:
            decoded = decode_record(record, self.limits)
            if decoded.value is None:
                if not self.state.remove(decoded.key):
                    return None
                log.info("score source deleted", source=decoded.key)
                self.metrics.sources.set(len(self.state.sources))
                return self._status_tombstone(decoded.key)
            where = f"{record.topic}/{record.partition}@{record.offset}"
            source = read_score_source(decoded.value, where)
            if source.key != decoded.key:
                raise ValueError(f"key {decoded.key!r} is not the source's <namespace>/<name> {source.key!r}")
        except (DecodeError, ObjectError, ValueError) as e:
            if record.offset < self._read_before.get(record.partition, 0):
                return None  # dead-lettered when it was first read
            self.metrics.deadletters.labels(SCORE_SOURCES).inc()
            log.warning(
                "score source rejected; its previous version, if any, keeps running",
                key=record.key,
                offset=record.offset,
                error=str(e),
            )
            return dead_letter(record, str(e), topic=self.topics.deadletter, source=self.source)
        if self.state.put(source, record.partition, time.monotonic()):
            log.info("score source active", source=source.key, interval=source.spec.interval)
            self._wake.set()
        self.metrics.sources.set(len(self.state.sources))
        return None

    def _status_tombstone(self, key: str) -> OutgoingRecord:
        stamp = HeaderStamp(spec(SCORE_SOURCE_STATUS).ce_type, self.source, datetime.now(UTC))
        return OutgoingRecord(self.topics.score_source_status, key, None, stamp.headers())

    def _records(self, outcome: Finished, took: float) -> list[OutgoingRecord]:
        key, status = outcome.key, outcome.status
        self.evaluations += 1
        self.metrics.evaluations.labels(key).inc()
        self.metrics.query_seconds.labels(key).set(took)
        for reason, n in status.skipped.items():
            self.metrics.skipped.labels(key, reason).inc(n)
        if not status.healthy and status.last_error is not None:
            self.metrics.errors.labels(key, status.last_error.reason).inc()
            log.warning(
                "score source failed; nothing published",
                source=key,
                reason=status.last_error.reason,
                error=status.last_error.message,
            )
        now = datetime.now(UTC)
        scores_stamp = HeaderStamp(spec(SCORES).ce_type, self.source, now)
        out = [
            OutgoingRecord(self.topics.scores, r.key, encode_json(r.value), scores_stamp.headers())
            for r in outcome.scores
        ]
        self.metrics.published.labels(key).inc(len(out))
        self.published += len(out)
        status_stamp = HeaderStamp(spec(SCORE_SOURCE_STATUS).ce_type, self.source, now)
        out.append(
            OutgoingRecord(
                self.topics.score_source_status,
                key,
                encode_json(status_value(status)),
                status_stamp.headers(),
            )
        )
        return out

    # ---- the evaluator: a background job of the runtime ------------------------------------
    async def _evaluator(self) -> None:
        """Start every due source's evaluation, until the worker stops."""
        limit = asyncio.Semaphore(MAX_CONCURRENT_EVALUATIONS)
        running: set[asyncio.Task[None]] = set()
        async with aiohttp.ClientSession() as session:
            try:
                while True:
                    now = time.monotonic()
                    if self._ready and self._caught_up:
                        for state in self.state.start_due(now):
                            task = asyncio.create_task(self._evaluate(session, limit, state))
                            running.add(task)
                            task.add_done_callback(running.discard)
                    # until the worker may evaluate, a source that is due waits for a wake-up
                    next_due = self.state.next_due() if self._ready and self._caught_up else None
                    wait = EVALUATOR_TICK_S if next_due is None else min(EVALUATOR_TICK_S, next_due - now)
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(max(wait, 0.001)):
                            await self._wake.wait()
            finally:
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)

    async def _evaluate(
        self, session: aiohttp.ClientSession, limit: asyncio.Semaphore, state: SourceState
    ) -> None:
        try:
            async with limit:
                started = time.monotonic()
                evaluation = await evaluate(
                    session, state.source, datetime.now(UTC), endpoints=self.settings.prometheus_endpoints
                )
                took = time.monotonic() - started
        except Exception:  # a bug, not Prometheus (evaluate turns its failures into errors): say so, go on
            log.exception("score source evaluation failed unexpectedly", source=state.source.key)
            self.state.release(state.source.key, state.generation)
            return
        self._finished.append((self.state.finish(evaluation, state.generation, self.instance), took))


async def run_score_worker(settings: Settings, instance: str = "scores") -> None:
    """One score worker until SIGTERM or SIGINT."""
    await run_until_signalled(ScoreWorker(settings, instance=instance).runtime)
