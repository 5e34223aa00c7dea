"""The rollout worker: the Kafka shell around `RolloutProcessor`.

Sources: `placement-decisions` read whole by every instance (a global table), and `rollouts`,
`rollout-status` and `rollout-decisions` through a consumer group with the range assignor, which
gives one instance the same partition number of every one of these co-partitioned topics: a
rollout, its reports and its own diffs. Sinks: `rollout-decisions` (the log, and the checkpoint)
and `rollout-state` (the current state, compacted). No offsets are committed: on assignment the
partitions are read from the beginning, and once caught up every owned rollout is re-evaluated
and only what differs from its last diff is published.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from aiokafka import ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from prometheus_client import CollectorRegistry, Counter, Gauge

from fleetplace.services.http import HttpServer
from fleetplace.services.lifecycle import Clock
from fleetplace.services.rollout.core import InvalidRecord, RolloutChange, RolloutProcessor
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.bus.codec import DecodeLimits, decode_record, encode_json
from fleetplace.shared.bus.envelope import H_RESOURCEVERSION, HeaderStamp, dead_letter
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.kafka import (
    BroadcastReader,
    caught_up,
    make_consumer,
    make_producer,
    partitions_of,
    poll,
    send_all,
    start_client,
    stop_with_leave,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics, rollout_of, rollout_partition
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.rollout")

GROUP_TOPICS = ("rollouts", "rollout-status", "rollout-decisions")
# Rollouts evaluated between two turns of the event loop.
EVALUATION_SLICE = 200
# Records taken into one batch, at most, when more are already fetched (see `_drain`).
BATCH_LIMIT = 100_000
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.consumed = Counter(
            "fleetplace_records_consumed_total", "Records consumed", ["topic"], registry=registry
        )
        self.evaluations = Counter(
            "fleetplace_rollout_evaluations_total", "Rollout evaluations", registry=registry
        )
        self.diffs = Counter(
            "fleetplace_rollout_diffs_published_total", "Rollout diffs published", registry=registry
        )
        self.deadletters = Counter(
            "fleetplace_deadletters_total",
            "Records sent to the dead-letter topic",
            ["topic"],
            registry=registry,
        )
        self.timers = Gauge("fleetplace_timers_pending", "Recheck timers pending", registry=registry)


class _Ownership(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, worker: RolloutWorker) -> None:
        self.worker = worker

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.worker._flush()  # diffs computed must land before another instance takes over
        self.worker._revoke({tp.partition for tp in revoked})

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self.worker._assign([(tp.topic, tp.partition) for tp in assigned])


class RolloutWorker:
    """One rollout worker instance. `await worker.run()` until `worker.stop()` or a signal."""

    def __init__(self, settings: Settings, *, instance: str = "rollout") -> None:
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.instance = instance
        self.source = f"fleetplace/{instance}"
        self.limits = DecodeLimits(
            max_record_bytes=settings.max_record_bytes, max_depth=settings.max_json_depth
        )
        self.registry = CollectorRegistry()
        self.metrics = _Metrics(self.registry)
        self.clock = Clock(settings.clock)
        self.processor = RolloutProcessor(owns=self._owns)
        self._partitions = 0  # of the rollout topics
        self._assigned: set[int] = set()  # partition numbers, the same for every group topic
        self._next: dict[str, int] = {}  # "<topic>/<partition>" -> next offset, for `inputs`
        self._caught_up = False
        self._ready = False
        self._inflight: list[asyncio.Task[Any]] = []
        self._stop = asyncio.Event()
        self._group: Any = None
        self.published = 0

    # ---- ownership ------------------------------------------------------------------------
    def _owns(self, key: str) -> bool:
        return self._partitions > 0 and rollout_partition(key, self._partitions) in self._assigned

    async def _flush(self) -> None:
        pending = [t for t in self._inflight if not t.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _revoke(self, partitions: set[int]) -> None:
        self._assigned -= partitions
        for key in [k for k in {*self.processor.rollouts, *self.processor.published} if not self._owns(k)]:
            self.processor.forget(key)
        for name in [n for n in self._next if int(n.rpartition("/")[2]) in partitions]:
            del self._next[name]
        log.info("partitions revoked", partitions=sorted(partitions))

    async def _assign(self, assigned: list[tuple[str, int]]) -> None:
        self._assigned |= {p for _, p in assigned}
        if assigned and self._group is not None:
            await self._group.seek_to_beginning(*[TopicPartition(t, p) for t, p in assigned])
        self._caught_up = False
        log.info("partitions assigned", partitions=sorted({p for _, p in assigned}))

    # ---- lifecycle ------------------------------------------------------------------------
    def stop(self) -> None:
        self._stop.set()

    @property
    def ready(self) -> bool:
        return self._ready

    async def run(self) -> None:
        kafka = self.settings.kafka
        broadcast = [self.topics.placement_decisions]
        if self.settings.clock == "topic":
            broadcast.append(self.topics.clock)
        self.producer = make_producer(kafka, linger_ms=5, max_batch_size=262144)
        await start_client(self.producer)
        reader = BroadcastReader(kafka, broadcast, prefix=self.settings.topic_prefix, max_records=20_000)
        try:
            await reader.start()
            group = make_consumer(
                kafka,
                group_id=self.settings.rollout_group_id,
                session_timeout_ms=SESSION_TIMEOUT_MS,
                heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
                max_poll_records=20_000,
                partition_assignment_strategy=(RangePartitionAssignor,),
            )
            await start_client(group)
            self._group = group
            names = [self.topics.name(t) for t in GROUP_TOPICS]
            self._partitions = len(
                [tp for tp in await partitions_of(group, names) if tp[0] == self.topics.rollouts]
            )
            group.subscribe(names, listener=_Ownership(self))
            http = HttpServer.from_settings(self.settings, ready=lambda: self.ready, registry=self.registry)
            await http.start()
            log.info("rollout worker started", http=http.url, instance=self.instance)
            try:
                await self._loop(reader, group)
            finally:
                await http.stop()
                with contextlib.suppress(Exception):
                    await stop_with_leave(group, self.settings.rollout_group_id, kafka)
        finally:
            await reader.stop()
            await self.producer.stop()
            log.info("rollout worker stopped", instance=self.instance, published=self.published)

    async def _loop(self, reader: BroadcastReader, group: Any) -> None:
        reader_poll: asyncio.Task[Any] | None = None
        group_poll: asyncio.Task[list[Record]] | None = None
        try:
            while not self._stop.is_set():
                if reader_poll is None:
                    reader_poll = asyncio.create_task(reader.poll())
                if group_poll is None:
                    group_poll = asyncio.create_task(poll(group, timeout_ms=100, max_records=20_000))
                done, _ = await asyncio.wait((reader_poll, group_poll), return_when=asyncio.FIRST_COMPLETED)
                outgoing: list[OutgoingRecord] = []
                if reader_poll in done:
                    batch = reader_poll.result()
                    reader_poll = None
                    outgoing.extend(self._consume_all(batch.records))
                    if batch.caught_up:
                        self._ready = True
                if group_poll in done:
                    records = group_poll.result()
                    group_poll = None
                    if records:
                        records = await self._drain(group, records)
                    outgoing.extend(self._consume_all(records))
                    if not records and not self._caught_up and self._assigned:
                        tps = [(self.topics.name(t), p) for t in GROUP_TOPICS for p in sorted(self._assigned)]
                        self._caught_up = await caught_up(group, tps)
                        if self._caught_up:
                            self.processor.mark_all("startup")
                now = self.clock.now()
                if not self._ready or not self._caught_up or now is None:
                    if outgoing:
                        await send_all(self.producer, outgoing)
                    continue
                await self._evaluate(now, reader, outgoing)
                self.metrics.timers.set(self.processor.timers_pending)
        finally:
            for task in (reader_poll, group_poll):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task

    async def _drain(self, group: Any, records: list[Record]) -> list[Record]:
        """Add the records already fetched to the batch (up to BATCH_LIMIT) without waiting: when
        the worker is behind, more reports coalesce into one evaluation per rollout."""
        batch = list(records)
        while len(batch) < BATCH_LIMIT:
            more = await poll(group, timeout_ms=0, max_records=BATCH_LIMIT - len(batch))
            if not more:
                break
            batch.extend(more)
        return batch

    def _consume_all(self, records: Iterable[Record]) -> list[OutgoingRecord]:
        out = []
        for record in records:
            letter = self._consume(record)
            if letter is not None:
                out.append(letter)
        return out

    def _consume(self, record: Record) -> OutgoingRecord | None:
        topic = self.topics.unprefixed(record.topic)
        self.metrics.consumed.labels(topic).inc()
        if topic in GROUP_TOPICS:
            self._next[f"{topic}/{record.partition}"] = record.offset + 1
        if topic == "rollout-decisions" and self._applied_already(record):
            return None
        try:
            decoded = decode_record(record, self.limits)
            if topic == "clock":
                if decoded.value is not None:
                    self.clock.observe(decoded.value)
                return None
            if topic == "rollout-status" and self._partitions:
                expected = rollout_partition(decoded.key, self._partitions)
                if record.partition != expected:
                    raise InvalidRecord(
                        f"on partition {record.partition}; reports of {rollout_of(decoded.key)} belong on "
                        f"partition {expected}, the partition of the rollout's key"
                    )
            self.processor.apply(topic, decoded.key, decoded.value, record.timestamp_ms)
        except (DecodeError, ObjectError, ValueError, KeyError, TypeError) as e:
            self.metrics.deadletters.labels(topic).inc()
            log.warning(
                "record dead-lettered",
                topic=topic,
                partition=record.partition,
                offset=record.offset,
                error=str(e),
            )
            return dead_letter(record, str(e), topic=self.topics.deadletter, source=self.source)
        return None

    def _applied_already(self, record: Record) -> bool:
        """Our own diff coming back: its seq (ce_resourceversion) is already held."""
        raw = record.header(H_RESOURCEVERSION)
        if record.key is None or raw is None:
            return False
        try:
            return self.processor.holds(record.key, int(raw))
        except ValueError:
            return False

    def _inputs(self, reader: BroadcastReader) -> dict[str, int]:
        inputs = reader.watermark.inputs([self.topics.placement_decisions])
        for name, offset in sorted(self._next.items()):
            if not name.startswith("rollout-decisions/"):
                inputs[name] = offset
        return inputs

    async def _evaluate(self, now: datetime, reader: BroadcastReader, outgoing: list[OutgoingRecord]) -> None:
        """Evaluate every marked rollout in slices, publishing each slice's diffs as it is done."""
        self.processor.tick(now)
        inputs = self._inputs(reader) if self.processor.dirty else {}
        sends = [asyncio.create_task(send_all(self.producer, outgoing))] if outgoing else []
        self._inflight = sends
        try:
            while self.processor.dirty and self._caught_up:
                n = min(len(self.processor.dirty), EVALUATION_SLICE)
                changes = self.processor.evaluate(now, inputs, limit=EVALUATION_SLICE)
                self.metrics.evaluations.inc(n)
                if changes:
                    sends.append(
                        asyncio.create_task(send_all(self.producer, self._diff_records(changes, now)))
                    )
                await asyncio.sleep(0)
            await asyncio.gather(*sends)
        finally:
            for task in sends:
                task.cancel()

    def _diff_records(self, changes: list[RolloutChange], now: datetime) -> list[OutgoingRecord]:
        out: list[OutgoingRecord] = []
        diff_stamp = HeaderStamp("io.fleetplace.rollout-decisions", self.source, now)
        state_stamp = HeaderStamp("io.fleetplace.rollout-state", self.source, now)
        for change in changes:
            key, seq = change.diff["rollout"], int(change.diff["seq"])
            out.append(
                OutgoingRecord(
                    self.topics.rollout_decisions, key, encode_json(change.diff), diff_stamp.headers(seq)
                )
            )
            value = None if change.state is None else encode_json(change.state)
            out.append(OutgoingRecord(self.topics.rollout_state, key, value, state_stamp.headers(seq)))
        self.metrics.diffs.inc(len(changes))
        self.published += len(changes)
        return out


async def run_rollout_worker(settings: Settings, instance: str = "rollout") -> None:
    worker = RolloutWorker(settings, instance=instance)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, worker.stop)
    await worker.run()
