"""The rollout worker: the Kafka shell around `RolloutProcessor`, run by `WorkerRuntime`.

Sources: `placement-decisions` read whole by every instance (a global table), and `rollouts`,
`rollout-status` and `rollout-decisions` through a consumer group with the range assignor, which
gives one instance the same partition number of every one of these co-partitioned topics: a
rollout, its reports and its own diffs. Sinks: `rollout-decisions` (the log, and the checkpoint)
and `rollout-state` (the current state, compacted), in exactly-once mode one transaction per
rollout partition with the offsets read there; the worker never starts from them: on assignment
the partitions are read from the beginning, and once caught up every owned rollout is re-evaluated
and only what differs from its last diff is published.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from aiokafka import TopicPartition
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from prometheus_client import CollectorRegistry, Counter, Gauge

from fleetplace.services.lifecycle import (
    Clock,
    PartitionOwnership,
    RecordCounters,
    RunsOnRuntime,
    Topology,
    Turn,
    WorkerRuntime,
    run_until_signalled,
)
from fleetplace.services.rollout.core import IGNORED_REASONS, RolloutChange, RolloutProcessor
from fleetplace.services.rollout.ingest import ingest
from fleetplace.shared.bus.codec import DecodedRecord, DecodeLimits, encode_json
from fleetplace.shared.bus.delivery import Output, OutputFencedError
from fleetplace.shared.bus.envelope import H_RESOURCEVERSION, HeaderStamp, dead_letter
from fleetplace.shared.bus.kafka import Batch, caught_up, seek_to_beginning, send_all
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics, rollout_partition
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.rollout")

GROUP_TOPICS = ("rollouts", "rollout-status", "rollout-decisions")
# Rollouts evaluated between two turns of the event loop.
EVALUATION_SLICE = 200
# Records taken into one turn, at most, when more are already fetched: when the worker is behind,
# more reports coalesce into one evaluation per rollout.
BATCH_LIMIT = 100_000


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        records = RecordCounters(registry)
        self.consumed = records.consumed
        self.deadletters = records.deadletters
        self.evaluations = Counter(
            "fleetplace_rollout_evaluations_total", "Rollout evaluations", registry=registry
        )
        self.diffs = Counter(
            "fleetplace_rollout_diffs_published_total", "Rollout diffs published", registry=registry
        )
        self.reports_ignored = Counter(
            "fleetplace_rollout_reports_ignored_total",
            "Deployer reports applied that moved no rollout",
            ["reason"],
            registry=registry,
        )
        for reason in IGNORED_REASONS:
            self.reports_ignored.labels(reason)
        self.timers = Gauge("fleetplace_timers_pending", "Recheck timers pending", registry=registry)


class RolloutWorker(RunsOnRuntime):
    """One rollout worker instance. `await worker.run()` until `worker.stop()` or a signal."""

    def __init__(self, settings: Settings, *, instance: str = "rollout") -> None:
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.instance = instance
        self.source = f"fleetplace/{instance}"
        self.limits = DecodeLimits.from_settings(settings)
        self.registry = CollectorRegistry()
        self.metrics = _Metrics(self.registry)
        self.clock = Clock(settings.clock)
        self.processor = RolloutProcessor(
            owns=self._owns, on_ignored=lambda reason: self.metrics.reports_ignored.labels(reason).inc()
        )
        self._partitions = 0  # of the rollout topics
        self._assigned: set[int] = set()  # partition numbers, the same for every group topic
        self._next: dict[str, int] = {}  # "<topic>/<partition>" -> next offset, for `inputs`
        self._caught_up = False
        self._ready = False
        self._inflight: list[asyncio.Task[Any]] = []
        self.published = 0
        broadcast = [self.topics.placement_decisions]
        if settings.clock == "topic":
            broadcast.append(self.topics.clock)
        self.runtime = WorkerRuntime(
            settings,
            self,
            Topology(
                broadcast=broadcast,
                group=[self.topics.name(t) for t in GROUP_TOPICS],
                group_id=settings.rollout_group_id,
                broadcast_max_records=20_000,
                group_max_records=20_000,
                coalesce_records=BATCH_LIMIT,
                group_options={"partition_assignment_strategy": (RangePartitionAssignor,)},
                producer_options={"linger_ms": 5, "max_batch_size": 262144},
            ),
            name="rollout worker",
            instance=instance,
            registry=self.registry,
            rebalance_listener=PartitionOwnership(self._flush, self._revoke, self._assign),
            failpoints="rollout",
        )

    @property
    def producer(self) -> Any:
        return self.runtime.producer

    # ---- ownership ------------------------------------------------------------------------
    def _owns(self, key: str) -> bool:
        return self._partitions > 0 and rollout_partition(key, self._partitions) in self._assigned

    async def _flush(self) -> None:
        pending = [t for t in self._inflight if not t.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _revoke(self, revoked: set[tuple[str, int]]) -> None:
        partitions = {p for _, p in revoked}
        self._assigned -= partitions
        for key in [k for k in {*self.processor.rollouts, *self.processor.published} if not self._owns(k)]:
            self.processor.forget(key)
        for name in [n for n in self._next if int(n.rpartition("/")[2]) in partitions]:
            del self._next[name]
        log.info("partitions revoked", partitions=sorted(partitions))

    async def _assign(self, assigned: set[tuple[str, int]]) -> None:
        # nothing is evaluated until the new partitions are read to their end from the beginning:
        # not while the seek waits, and not on a catch-up seen during it, from the old positions
        self._caught_up = False
        if assigned:
            await seek_to_beginning(self.runtime.group, *[TopicPartition(t, p) for t, p in assigned])
        self._assigned |= {p for _, p in assigned}
        self._caught_up = False
        self._partitions = sum(1 for t, _ in self.runtime.group_partitions if t == self.topics.rollouts)
        log.info("partitions assigned", partitions=sorted({p for _, p in assigned}))

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Caught up on the placements' decisions (the runtime adds: and the broker answers)."""
        return self._ready

    @property
    def accepting(self) -> bool:
        return True  # records are always applied; evaluation waits until the partitions are read

    def summary(self) -> Mapping[str, Any]:
        return {"published": self.published}

    # ---- the hooks the runtime calls, once per turn ----------------------------------------
    async def on_broadcast(self, batch: Batch, turn: Turn) -> None:
        turn.outgoing.extend(self._consume_all(batch.records))
        if batch.caught_up:
            self._ready = True

    async def on_records(self, records: list[Record], turn: Turn) -> None:
        turn.outgoing.extend(self._consume_all(records))
        if not records and not self._caught_up and self._assigned:
            tps = [(self.topics.name(t), p) for t in GROUP_TOPICS for p in sorted(self._assigned)]
            self._caught_up = await caught_up(self.runtime.group, tps)
            if self._caught_up:
                self.processor.mark_all("startup")

    async def on_turn(self, turn: Turn) -> None:
        now = self.clock.now()
        if not self._ready or not self._caught_up or now is None:
            return  # the runtime publishes the turn's dead letters
        await self._evaluate(now, turn.take())
        self.metrics.timers.set(self.processor.timers_pending)

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
        rejection = ingest(
            self.processor, topic, record, self._partitions, self.limits, own=self._clock_record
        )
        if rejection is None:
            return None
        self.metrics.deadletters.labels(topic).inc()
        log.warning(
            "record dead-lettered",
            topic=topic,
            partition=record.partition,
            offset=record.offset,
            error=rejection.reason,
        )
        return dead_letter(record, rejection.reason, topic=self.topics.deadletter, source=self.source)

    def _clock_record(self, topic: str, decoded: DecodedRecord) -> bool:
        """A `clock` record moves the worker's clock (with `--clock topic`) and nothing else."""
        if topic != "clock":
            return False
        if decoded.value is not None:
            self.clock.observe(decoded.value)
        return True

    def _applied_already(self, record: Record) -> bool:
        """Our own diff coming back: its seq (ce_resourceversion) is already held."""
        raw = record.header(H_RESOURCEVERSION)
        if record.key is None or raw is None:
            return False
        try:
            return self.processor.holds(record.key, int(raw))
        except ValueError:
            return False

    def _inputs(self) -> dict[str, int]:
        inputs: dict[str, int] = self.runtime.reader.watermark.inputs([self.topics.placement_decisions])
        for name, offset in sorted(self._next.items()):
            if not name.startswith("rollout-decisions/"):
                inputs[name] = offset
        return inputs

    async def _evaluate(self, now: datetime, outgoing: list[OutgoingRecord]) -> None:
        """Evaluate every marked rollout in slices, publishing each slice's diffs as it is done."""
        self.processor.tick(now)
        inputs = self._inputs() if self.processor.dirty else {}
        sends: list[asyncio.Task[Any]] = (
            [asyncio.create_task(send_all(self.producer, outgoing))] if outgoing else []
        )
        self._inflight = sends
        try:
            while self.processor.dirty and self._caught_up:
                n = min(len(self.processor.dirty), EVALUATION_SLICE)
                changes = self.processor.evaluate(now, inputs, limit=EVALUATION_SLICE)
                self.metrics.evaluations.inc(n)
                if changes:
                    sends.append(asyncio.create_task(self._publish(changes, now)))
                await asyncio.sleep(0)
            await asyncio.gather(*sends)
        finally:
            for task in sends:
                task.cancel()

    async def _publish(self, changes: list[RolloutChange], now: datetime) -> None:
        """A slice's diffs, as one output per rollout partition with the offsets read there (in
        exactly-once mode one transaction each). A partition another instance has fenced this one
        out of is given up at once (its rollouts forgotten, their unpublished diffs with them), and
        the instance rejoins its group."""
        by_partition: dict[int, list[RolloutChange]] = {}
        for change in changes:
            partition = rollout_partition(change.diff["rollout"], self._partitions)
            by_partition.setdefault(partition, []).append(change)
        outputs = []
        for partition, mine in sorted(by_partition.items()):
            offsets = {
                (self.topics.name(t), partition): self._next[f"{t}/{partition}"]
                for t in GROUP_TOPICS
                if f"{t}/{partition}" in self._next
            }
            source = (self.topics.rollouts, partition)
            outputs.append(Output(self._diff_records(mine, now), source=source, offsets=offsets))
        sink = self.runtime.sink
        assert sink is not None, "the runtime starts its sink before the first turn"
        try:
            await sink.publish(outputs)
        except OutputFencedError as exc:
            log.warning("fenced out of partitions; rejoining the group", error=str(exc))
            self._revoke(set(exc.partitions))
            coordinator = getattr(self.runtime.group, "_coordinator", None)  # aiokafka's; no public rejoin
            if coordinator is not None:
                coordinator.request_rejoin()

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
    """One rollout worker until SIGTERM or SIGINT."""
    await run_until_signalled(RolloutWorker(settings, instance=instance).runtime)
