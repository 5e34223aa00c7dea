"""The scheduler worker: the Kafka shell around `SchedulerProcessor`, run by `WorkerRuntime`.

Sources: a global-table reader over clusters, taints, scores, clustersets, clustersetbindings and
decisions (every instance reads all of it; with the SIG-MC output on, its slices too), plus
`placements` through a consumer group (an instance owns the placements of its partitions). Sink:
`decisions` (the audit log and the checkpoint), `placement-decisions` (current state) and, with
the SIG-MC output on, `sigmc-placement-decisions`, through the runtime's delivery sink (in
exactly-once mode one transaction per `placements` partition, with the offset read there; the
worker never starts from committed offsets). After a restart the placements are re-read from
the beginning, after a rebalance those of the partitions new to the instance (one it owned before
is read on from where it stopped), and only what differs from the last published decision is
published.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from fleetplace.services.lifecycle import (
    Clock,
    PartitionOwnership,
    RecordCounters,
    RunsOnRuntime,
    Topology,
    Turn,
    WorkerRuntime,
    heartbeat_interval_ms,
    run_until_signalled,
)
from fleetplace.services.scheduler.core import Pending, SchedulerOptions, SchedulerProcessor
from fleetplace.services.scheduler.ingest import ingest
from fleetplace.shared.bus.codec import DecodedRecord, DecodeLimits, encode_json
from fleetplace.shared.bus.delivery import Output, OutputFencedError
from fleetplace.shared.bus.envelope import H_RESOURCEVERSION, HeaderStamp, dead_letter
from fleetplace.shared.bus.kafka import (
    Batch,
    BroadcastReader,
    caught_up,
    partition_for_key,
    seek_to_beginning,
    send_all,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.logging import get_logger
from fleetplace.shared.memory import state_loaded
from fleetplace.shared.placement.options import EngineOptions
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.scheduler")

BROADCAST = (
    "clusters",
    "cluster-profiles",
    "taints",
    "scores",
    "clustersets",
    "clustersetbindings",
    "decisions",
)
# Placements evaluated between two turns of the event loop, at most (about 0.1-0.2 s of engine
# time at 1,000 clusters); fewer once the slice has taken `step_seconds`.
EVALUATION_SLICE = 500
STEP_S = 0.25  # the longest a step of the instance's own holds the event loop (less under a short session)
PREPARE_STEP_S = 0.02  # CEL work between two pauses (at least one cluster's verdict)
PREPARE_PAUSE_S = 0.005
CONSUME_STEP_S = 0.05  # records applied between two turns of the event loop


def stall_seconds(session_timeout_ms: int) -> float:
    """How long an event loop may stand still before the instance assumes it was expelled from the
    group: the last heartbeat can precede the standstill by one interval, and half a second more
    is kept for the look that notices it coming late."""
    return (session_timeout_ms - heartbeat_interval_ms(session_timeout_ms)) / 1000 - 0.5


def step_seconds(session_timeout_ms: int) -> float:
    """The longest the instance's own steps go between two looks for a standstill: a slice of
    evaluation, and the wait of the watcher that looks while the loop turns for nothing else.
    STEP_S, and never more than a quarter of `stall_seconds`, so that the instance never takes its
    own work or its own waiting for a standstill. A slice is bounded by time, not only by count,
    because a placement's cost grows with the fleet and with the machine's load: 500 placements can
    take longer than a short session's stall bound, and an instance whose own slices look like
    standstills rejoins the group after every slice and never finishes a fan-out."""
    return min(STEP_S, stall_seconds(session_timeout_ms) / 4)


def _budget(end: float) -> Callable[[], bool]:
    """True once `time.perf_counter()` has reached `end`."""
    return lambda: time.perf_counter() >= end


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        records = RecordCounters(registry)
        self.consumed = records.consumed
        self.deadletters = records.deadletters
        self.evaluations = Counter("fleetplace_evaluations_total", "Placement evaluations", registry=registry)
        self.diffs = Counter(
            "fleetplace_diffs_published_total", "Decision diffs published", registry=registry
        )
        self.unknown_fields = Counter(
            "fleetplace_unknown_fields_dropped_total",
            "Fields no schema knows, dropped from consumed objects as the API server drops them",
            ["topic"],
            registry=registry,
        )
        self.latency = Histogram(
            "fleetplace_evaluation_seconds", "Time to evaluate one placement", registry=registry
        )
        self.timers = Gauge("fleetplace_timers_pending", "Requeue timers pending", registry=registry)
        self.owned = Gauge(
            "fleetplace_placements_owned", "Placements owned by this instance", registry=registry
        )
        # when a rebalance last gave this instance partitions, and when it had read them again:
        # how long a takeover took, readable after the fact (docs/operations.md)
        self.assigned_at = Gauge(
            "fleetplace_partitions_assigned_timestamp_seconds",
            "Unix time of the last partition assignment to this instance",
            registry=registry,
        )
        self.caught_up_at = Gauge(
            "fleetplace_owned_caught_up_timestamp_seconds",
            "Unix time this instance had last read the placements of its partitions to their end",
            registry=registry,
        )
        self.stalls = Counter(
            "fleetplace_stalls_total",
            "Times the event loop stood still long enough to lose the group (then it rejoins)",
            registry=registry,
        )
        self.stuck = Gauge(
            "fleetplace_broadcast_stuck_partitions",
            "Broadcast partitions below their high watermark that the broker does not hand out "
            "(evaluation pauses while any is)",
            registry=registry,
        )


class _Stamps:
    """The CloudEvents headers of one slice's records, by output topic."""

    def __init__(self, source: str, now: datetime) -> None:
        self.diff = HeaderStamp("io.fleetplace.decisions", source, now)
        self.current = HeaderStamp("io.fleetplace.placement-decisions", source, now)
        self.sigmc = HeaderStamp("io.fleetplace.sigmc-placement-decisions", source, now)


class SchedulerWorker(RunsOnRuntime):
    """One scheduler instance. `await worker.run()` until `worker.stop()` or a signal."""

    def __init__(self, settings: Settings, *, instance: str = "scheduler") -> None:
        self.settings = settings
        self.topics = Topics(settings.topic_prefix)
        self.instance = instance
        self.source = f"fleetplace/{instance}"
        self.limits = DecodeLimits.from_settings(settings)
        self.registry = CollectorRegistry()
        self.metrics = _Metrics(self.registry)
        self._consumed: dict[str, Any] = {}  # topic -> its child of metrics.consumed
        self.clock = Clock(settings.clock)
        self._assigned: set[tuple[str, int]] = set()
        # revoked and not yet assigned again or to another instance: see `_revoke`
        self._released: set[tuple[str, int]] = set()
        self._placement_partition: dict[str, int] = {}
        self._placement_next: dict[int, int] = {}
        self.processor = SchedulerProcessor(
            SchedulerOptions(
                addon_resync_s=settings.addon_resync_interval_s,
                full_resync_s=settings.resync_interval_s,
                engine=EngineOptions(prefer_no_select=settings.prefer_no_select),
                sigmc=settings.sigmc_decisions,
                sigmc_cluster_namespace=settings.sigmc_cluster_namespace,
                ocm_reasons=settings.ocm_decision_reasons,
            ),
            owns=self._owns,
            dropped=self._dropped,
        )
        self._need_catchup = True
        self._placements_caught_up = False
        self._orphans_due = False  # see on_turn
        self._owned_stale = True
        self._ready = False
        self._reader_stuck = False
        self._inflight: list[asyncio.Task[Any]] = []
        self._alive_at = time.monotonic()
        self._stall_s = stall_seconds(settings.group_session_timeout_ms)
        self._step_s = step_seconds(settings.group_session_timeout_ms)
        self._stalled = False
        self.published = 0
        broadcast = [self.topics.name(t) for t in BROADCAST]
        if settings.clock == "topic":
            broadcast.append(self.topics.clock)
        # what decisions are computed from: their `inputs` watermark names these topics only
        self._input_topics = list(broadcast)
        if settings.sigmc_decisions:
            # the slices already written, read back so that a start brings every placement's
            # slices up to date and rewrites none that is current (docs/cluster-inventory.md)
            broadcast.append(self.topics.sigmc_placement_decisions)
        self.runtime = WorkerRuntime(
            settings,
            self,
            Topology(
                broadcast=broadcast,
                group=[self.topics.placements],
                group_id=settings.scheduler_group_id,
                broadcast_max_records=20_000,
                group_max_records=20_000,
                producer_options={"linger_ms": 5, "max_batch_size": 262144},
            ),
            name="scheduler",
            instance=instance,
            registry=self.registry,
            debug_routes=[web.get("/debug/placements/{namespace}/{name}", self._debug)],
            rebalance_listener=PartitionOwnership(self._flush, self._revoke, self._assign),
            background=[self._watch_stalls],
        )

    @property
    def producer(self) -> Any:
        return self.runtime.producer

    @property
    def _group(self) -> Any:
        return self.runtime.group

    # ---- ownership ------------------------------------------------------------------------
    def _owns(self, key: str) -> bool:
        p = self._placement_partition.get(key)
        return p is not None and (self.topics.placements, p) in self._assigned

    async def _flush(self) -> None:
        pending = [t for t in self._inflight if not t.done()]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _revoke(self, revoked: set[tuple[str, int]]) -> None:
        """Stop owning `revoked` at once (nothing of theirs is evaluated or published from here).
        What was read of them stays until the assignment that ends the rebalance: in Kafka's
        eager rebalance every member gives up all of its partitions first and most come back to
        it, and a partition that comes back is not read again (`_assign`)."""
        self._assigned -= revoked
        self._released |= revoked
        self._owned_stale = True
        log.info("partitions revoked", partitions=sorted(p for _, p in revoked))

    def _forget_partitions(self, gone: set[tuple[str, int]]) -> int:
        """Drop the placements of partitions another instance owns now; how many."""
        lost = [k for k, p in self._placement_partition.items() if (self.topics.placements, p) in gone]
        for key in lost:
            self.processor.drop(key)
            del self._placement_partition[key]
        for _, p in gone:
            self._placement_next.pop(p, None)
        return len(lost)

    async def _assign(self, assigned: set[tuple[str, int]]) -> None:
        """Own `assigned`: a partition given back keeps its placements and is read on from where
        reading stopped; a new one is read from the beginning. Every owned placement is evaluated
        again once they are read (`on_records`), so whatever changed while none was owned is
        caught up (a placement is marked dirty only while owned)."""
        kept = {tp for tp in self._released & assigned if tp[1] in self._placement_next}
        dropped = self._forget_partitions(self._released - assigned)
        self._released = set()
        # nothing is evaluated until the partitions are read (and the decisions caught up on): not
        # while the seeks wait, and not on a catch-up seen during them, from the old positions
        self._not_caught_up()
        if assigned and self._group is not None:
            fresh = [TopicPartition(t, p) for t, p in assigned - kept]
            if fresh:
                await seek_to_beginning(self._group, *fresh)
            still = self._group.assignment()
            for t, p in kept:
                if TopicPartition(t, p) in still:  # unless a rebalance took it meanwhile
                    self._group.seek(TopicPartition(t, p), self._placement_next[p])
        self._assigned |= assigned
        self._not_caught_up()
        self.metrics.assigned_at.set(time.time())
        log.info(
            "partitions assigned",
            partitions=sorted(p for _, p in assigned),
            read_on=sorted(p for _, p in kept),
            placements_dropped=dropped,
        )

    def _not_caught_up(self) -> None:
        self._need_catchup = True
        self._placements_caught_up = False
        self._owned_stale = True
        self._stalled = False  # the group has spoken: what we own now is ours

    def _check_stall(self, group: Any) -> bool:
        """True from a standstill of the event loop longer than `stall_seconds` of the group session,
        noticed while the instance owns partitions, until the next assignment.

        While the loop stood still (SIGSTOP, a VM freeze, a long synchronous step) the group may
        have expelled this instance and given its partitions to another, which then publishes the
        same placements' next seq. Kafka cannot fence a plain producer, so the instance publishes
        nothing more until it has rejoined and been assigned partitions again (`_assign`).
        """
        now = time.monotonic()
        gap, self._alive_at = now - self._alive_at, now
        # owning nothing, there is nothing to guard, and the next assignment is the group's word
        if gap > self._stall_s and not self._stalled and self._assigned:
            self._stalled = True
            self.metrics.stalls.inc()
            log.warning(
                "event loop stood still; rejoining the group before publishing", seconds=round(gap, 1)
            )
            coordinator = getattr(group, "_coordinator", None)  # aiokafka's; the public API has no rejoin
            if coordinator is not None:
                coordinator.request_rejoin()
        return self._stalled

    async def _watch_stalls(self) -> None:
        while True:
            self._check_stall(self._group)
            await asyncio.sleep(self._step_s)

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Caught up on the broadcast state and on the placements of the partitions it owns (after
        a rebalance, once those are read again), and not held up by a partition it cannot read."""
        owned_read = self._placements_caught_up or not self._assigned
        return self._ready and owned_read and not self._reader_stuck

    @property
    def accepting(self) -> bool:
        return True  # placement records are always applied; evaluation waits for the state instead

    def summary(self) -> Mapping[str, Any]:
        return {"published": self.published}

    # ---- the hooks the runtime calls, once per turn ----------------------------------------
    async def on_broadcast(self, batch: Batch, turn: Turn) -> None:
        reader = self.runtime.reader
        await self._consume_all(batch.records, turn.outgoing)
        if batch.caught_up:
            self._need_catchup = False
            if not self._ready:
                # the loaded fleet is long-lived: keep the cyclic GC off it (shared/memory.py)
                state_loaded()
            self._ready = True
        self._check_stuck(reader)

    async def on_records(self, records: list[Record], turn: Turn) -> None:
        await self._consume_all(records, turn.outgoing)
        if not records and not self._placements_caught_up and self._assigned:
            self._placements_caught_up = await caught_up(self._group, sorted(self._assigned))
            if self._placements_caught_up:
                self.metrics.caught_up_at.set(time.time())
                self.processor.mark_all("startup")
                self._orphans_due = True

    async def on_turn(self, turn: Turn) -> None:
        stalled = self._check_stall(self._group)
        now = self.clock.now()
        if stalled or self._need_catchup or not self._placements_caught_up or now is None:
            return  # the runtime publishes the turn's dead letters
        outgoing = turn.take()
        if self._orphans_due:
            # the slices of deleted placements, left while the SIG-MC output was off
            self._orphans_due = False
            stamp = HeaderStamp("io.fleetplace.sigmc-placement-decisions", self.source, now)
            outgoing.extend(
                OutgoingRecord(self.topics.sigmc_placement_decisions, key, None, stamp.headers(seq))
                for key, seq in self.processor.orphan_slices()
            )
        # counted before the evaluation publishes: what a reader of the decisions sees is owned
        if self._owned_stale:  # counting walks every placement: only when it can have changed
            self._owned_stale = False
            self.metrics.owned.set(sum(1 for _ in self.processor.owned_keys()))
        # finishes the round in hand before stopping
        await self._evaluate(now, self.runtime.reader, outgoing)
        self.metrics.timers.set(len(self.processor._timer_due))

    def _check_stuck(self, reader: BroadcastReader) -> None:
        """Fail safe: a broadcast partition the broker reports records for but does not hand out
        means the state is incomplete, and decisions computed from it could move workloads wrongly.
        Evaluation then pauses (and /readyz says 503) until the reader has caught up again."""
        self.metrics.stuck.set(len(reader.stuck()))
        self._reader_stuck = reader.held_up
        if self._reader_stuck:
            self._need_catchup = True

    async def _consume_all(self, records: Iterable[Record], outgoing: list[OutgoingRecord]) -> None:
        """Apply a polled batch (up to tens of thousands of records), letting the event loop turn
        every CONSUME_STEP_S so heartbeats and the HTTP endpoints are not held for seconds. Records
        of partitions revoked meanwhile are still applied, but their placements are no longer
        owned, so nothing is evaluated for them."""
        step_end = time.perf_counter() + CONSUME_STEP_S
        for record in records:
            outgoing.extend(self._consume(record))
            if time.perf_counter() > step_end:
                await asyncio.sleep(0)
                step_end = time.perf_counter() + CONSUME_STEP_S

    def _dropped(self, topic: str, paths: list[str]) -> None:
        self.metrics.unknown_fields.labels(topic).inc(len(paths))

    def _consume(self, record: Record) -> list[OutgoingRecord]:
        topic = self.topics.unprefixed(record.topic)
        counter = self._consumed.get(topic)
        if counter is None:  # the labelled child, looked up once per topic (a lock and a dict each time)
            counter = self._consumed[topic] = self.metrics.consumed.labels(topic)
        counter.inc()
        if topic == "decisions" and self._applied_already(record):
            return []
        rejection = ingest(self.processor, topic, record, self.limits, own=self._own)
        if rejection is None:
            return []
        self.metrics.deadletters.labels(topic).inc()
        log.warning(
            "record dead-lettered",
            topic=topic,
            partition=record.partition,
            offset=record.offset,
            error=rejection.reason,
        )
        return [dead_letter(record, rejection.reason, topic=self.topics.deadletter, source=self.source)]

    def _own(self, topic: str, decoded: DecodedRecord) -> bool:
        """The worker's part of a decoded record, before the processor applies it: the clock is
        the worker's alone (True); a placement's partition decides whether this instance owns it."""
        if topic == "clock":
            if decoded.value is not None:
                self.clock.observe(decoded.value)
            return True
        if topic == "placements":
            record = decoded.record
            self._placement_partition[decoded.key] = record.partition
            self._owned_stale = True
            self._placement_next[record.partition] = record.offset + 1
        return False

    def _applied_already(self, record: Record) -> bool:
        """A decision whose `seq` (its ce_resourceversion) is already held: our own diffs come back
        through the broadcast, thousands after a fan-out, and need no decoding to be skipped."""
        if record.key is None:
            return False
        for name, raw in record.headers:
            if name == H_RESOURCEVERSION:
                try:
                    return self.processor.holds(record.key, int(raw))
                except ValueError:
                    return False
        return False

    def _inputs(self, reader: BroadcastReader) -> dict[str, int]:
        inputs = reader.watermark.inputs(self._input_topics)
        for partition, offset in sorted(self._placement_next.items()):
            inputs[f"placements/{partition}"] = offset
        return inputs

    async def _evaluate(self, now: datetime, reader: BroadcastReader, outgoing: list[OutgoingRecord]) -> None:
        """Evaluate every dirty placement, in slices, and publish the diffs of each slice as it is done.

        Between slices the event loop runs: a slice's diffs are sent and acknowledged before the
        next slice is computed, and heartbeats and the HTTP endpoints keep answering during a
        fan-out to thousands of placements. A slice computed across a standstill of the loop is
        taken back instead of published (`_check_stall`). The slices follow the same
        namespace/name order as one call would, with nothing consumed in between.
        """
        self.processor.tick(now)
        inputs = self._inputs(reader) if self.processor.dirty else {}
        sends: list[asyncio.Task[Any]] = (
            [asyncio.create_task(send_all(self.producer, outgoing))] if outgoing else []
        )
        self._inflight = sends
        try:
            while (
                self.processor.dirty
                and not self._need_catchup
                and self._placements_caught_up
                and not self._check_stall(self._group)
            ):
                # CEL verdicts, whose cost per cluster is bounded only by the cost limit, are done
                # ahead in short steps, so heartbeats and the HTTP endpoints answer in between
                while not self.processor.prepare(time.perf_counter() + PREPARE_STEP_S):
                    await asyncio.sleep(PREPARE_PAUSE_S)  # long enough for I/O to make progress
                t0 = time.perf_counter()
                dirty = len(self.processor.dirty)
                diffs = self.processor.evaluate(
                    now, inputs, limit=EVALUATION_SLICE, enough=_budget(t0 + self._step_s)
                )
                n = dirty - len(self.processor.dirty)
                self.metrics.evaluations.inc(n)
                self.metrics.latency.observe((time.perf_counter() - t0) / n)
                if diffs:
                    if self._check_stall(self._group):
                        # the loop stood still while these were computed: another instance may
                        # own these placements by now and publish their next seq
                        self.processor.withdraw([d["placement"] for d in diffs])
                        log.warning("diffs computed across a standstill taken back", placements=len(diffs))
                        break
                    send = asyncio.create_task(self._publish(diffs, now))
                    sends.append(send)
                    # acknowledged before the next slice is computed: records left in the producer
                    # while a slice is evaluated (the loop cannot send meanwhile) would go out after
                    # a standstill in that slice, when another instance may own their placements
                    await send
                await asyncio.sleep(0)
            await asyncio.gather(*sends)
        finally:
            for task in sends:
                task.cancel()

    def _source(self, key: str) -> tuple[str, int]:
        """The `placements` partition a placement's outputs belong to (its decisions are
        co-partitioned): the one it was read from, else where its key lands."""
        partition = self._placement_partition.get(key)
        if partition is None:
            count = sum(1 for t, _ in self.runtime.group_partitions if t == self.topics.placements)
            partition = partition_for_key(key, max(count, 1))
        return self.topics.placements, partition

    async def _publish(self, diffs: list[dict[str, Any]], now: datetime) -> None:
        """A slice's diffs, as one output per `placements` partition with the offset read there (in
        exactly-once mode one transaction each). Diffs of partitions another instance has fenced
        this one out of are taken back, and the instance rejoins its group before publishing more."""
        stamps = _Stamps(self.source, now)
        outputs: dict[tuple[str, int], Output] = {}
        pendings: dict[tuple[str, int], dict[str, Pending]] = {}
        for diff in diffs:
            key = diff["placement"]
            source = self._source(key)
            output = outputs.get(source)
            if output is None:
                next_offset = self._placement_next.get(source[1])
                offsets = {} if next_offset is None else {source: next_offset}
                output = outputs[source] = Output([], source=source, offsets=offsets)
            pending = self.processor.take_pending(key)
            output.records.extend(self._diff_records(diff, pending, stamps))
            if pending is not None:
                pendings.setdefault(source, {})[key] = pending
        fenced: set[tuple[str, int]] = set()
        sink = self.runtime.sink
        assert sink is not None, "the runtime starts its sink before the first turn"
        self.runtime.failpoint("before-publish")
        try:
            await sink.publish(list(outputs.values()))
        except OutputFencedError as exc:
            fenced = set(exc.partitions)
            taken_back = {k: p for tp in fenced for k, p in pendings.get(tp, {}).items()}
            self.processor.give_back(taken_back)
            self.processor.withdraw(taken_back)
            self._fenced(exc)
        published = sum(1 for d in diffs if self._source(d["placement"]) not in fenced)
        self.metrics.diffs.inc(published)
        self.published += published

    def _fenced(self, exc: OutputFencedError) -> None:
        """Another instance owns these partitions now: publish nothing until the group has
        assigned this one its partitions again (as after a standstill, `_check_stall`)."""
        log.warning("fenced out of partitions; rejoining the group before publishing", error=str(exc))
        if not self._stalled:
            self._stalled = True
            coordinator = getattr(self._group, "_coordinator", None)  # aiokafka's; no public rejoin
            if coordinator is not None:
                coordinator.request_rejoin()

    def _diff_records(
        self, diff: dict[str, Any], pending: Pending | None, stamps: _Stamps
    ) -> list[OutgoingRecord]:
        """The records of one diff: the diff itself, the current decision, and the SIG-MC slices."""
        key = diff["placement"]
        seq = int(diff["seq"])
        out = [OutgoingRecord(self.topics.decisions, key, encode_json(diff), stamps.diff.headers(seq))]
        current = self.processor.placement_decisions(key, pending.reasons if pending else None)
        out.append(
            OutgoingRecord(
                self.topics.placement_decisions,
                key,
                None if current is None else encode_json(current),
                stamps.current.headers(seq),
            )
        )
        for slice_key, value in self.processor.sigmc_changes(key, pending):
            out.append(
                OutgoingRecord(
                    self.topics.sigmc_placement_decisions,
                    slice_key,
                    None if value is None else encode_json(value),
                    stamps.sigmc.headers(seq),
                )
            )
        return out

    async def _debug(self, request: web.Request) -> web.Response:
        from fleetplace.shared.placement import schedule
        from fleetplace.shared.placement.explain import result_json

        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        placement = self.processor.fleet.placements.get(key)
        if placement is None:
            return web.json_response({"error": f"placement '{key}' not found on this instance"}, status=404)
        now = self.clock.now() or datetime.now(UTC)
        result = schedule(placement, self.processor.fleet, now, options=self.processor.options.engine)
        return web.json_response(
            result_json(result, None, placement, self.processor.fleet, now),
            dumps=lambda v: encode_json(v).decode(),
        )


async def run_worker(settings: Settings, instance: str = "scheduler") -> None:
    """One scheduler until SIGTERM or SIGINT."""
    await run_until_signalled(SchedulerWorker(settings, instance=instance).runtime)
