"""The lifecycle every worker shares: bind, start, consume, publish, commit, serve health, stop.

A worker is a Kafka Streams-style topology: *broadcast* sources (global tables: every partition
read from the beginning by every instance), *group* sources (split across the instances of a
consumer group), and sinks. `WorkerRuntime` runs one; the worker brings only its domain logic as
the hooks of `WorkerLogic`:

    outgoing ← on_broadcast(batch)      every batch of the broadcast reader
    outgoing ← on_records(records)      every poll of the group consumer (also an empty one), with
                                        the records already fetched behind it if `coalesce_records`
    on_turn(turn)                       once per turn: timers, evaluation; may publish itself
    publish turn.outgoing and turn.outputs, then commit turn.commits (offsets only after the
    acknowledgement; in exactly-once mode the outputs' offsets commit in their transactions)

A turn is one answer of either source: the two are polled concurrently and whichever answers
first is handled at once (waiting for both would hold a fleet change until the group poll times
out). Readiness (`/readyz`) is the worker's own rule *and* a broker that answers: a worker whose
broker has gone is not ready, and says so in `fleetplace_broker_connected`. Order of start: the
HTTP port is bound before any Kafka client starts, so a taken port stops the process with nothing
to undo. Stop (SIGTERM/SIGINT or `stop()`): the turn in hand finishes, the group hears the
instance leave, every client closes, also when the broker has gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from aiohttp import web
from aiokafka import ConsumerRebalanceListener, TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge

from fleetplace.services.http import HttpServer
from fleetplace.shared.bus.delivery import Output, OutputFencedError, OutputSink, make_sink
from fleetplace.shared.bus.envelope import parse_time
from fleetplace.shared.bus.health import BrokerWatch
from fleetplace.shared.bus.kafka import (
    TP,
    Batch,
    BroadcastReader,
    make_consumer,
    partitions_of,
    poll,
    send_all,
    start_client,
    stop_client,
    stop_with_leave,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.failpoints import Failpoint
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import Settings

log = get_logger("fleetplace.worker")


class RecordCounters:
    """The two record counters every worker has, by topic: records consumed and records sent to
    the dead-letter topic (docs/operations.md#http-endpoints-and-metrics)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.consumed = Counter(
            "fleetplace_records_consumed_total", "Records consumed", ["topic"], registry=registry
        )
        self.deadletters = Counter(
            "fleetplace_deadletters_total",
            "Records sent to the dead-letter topic",
            ["topic"],
            registry=registry,
        )


class Clock:
    """Wall clock, or the `clock` topic (tests, replays, what-if runs): `now()` is None until the
    topic has said what time it is."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._topic_now: datetime | None = None

    def observe(self, value: Mapping[str, Any]) -> None:
        t = parse_time(str(value["now"]))
        if self._topic_now is None or t > self._topic_now:
            self._topic_now = t

    def now(self) -> datetime | None:
        if self.source == "topic":
            return self._topic_now
        return datetime.now(UTC)


@dataclass
class Turn:
    """What one turn publishes: `outgoing` (records of no input partition: dead letters) and
    `outputs` (records computed from one input partition, with its offsets) are sent at its end,
    then `commits` are committed (in exactly-once mode the outputs' offsets commit with them)."""

    outgoing: list[OutgoingRecord] = field(default_factory=list)
    commits: dict[TopicPartition, int] = field(default_factory=dict)
    outputs: list[Output] = field(default_factory=list)

    def take(self) -> list[OutgoingRecord]:
        """The records so far, for a hook that sends them itself (alongside its own)."""
        taken, self.outgoing = self.outgoing, []
        return taken


def heartbeat_interval_ms(session_timeout_ms: int) -> int:
    """A member's heartbeat: every second, or a third of a shorter session (Kafka's rule of thumb),
    so that a live member misses no session however its heartbeats fall."""
    return min(1000, session_timeout_ms // 3)


@dataclass(frozen=True)
class Topology:
    """Where a worker reads. `group` topics are subscribed when the worker is first ready if
    `subscribe_when_ready` (nothing is taken from the group before the state is loaded), else at
    once (the group join then overlaps the initial load).

    `coalesce_records`: after a group poll that returned records, the records the consumer has
    already fetched are added to the same turn without waiting, up to this many in all, so a worker
    that is behind handles a backlog in few large turns (0: one poll per turn). `group_options` and
    `producer_options` are passed to the clients (e.g. the range assignor, which gives one instance
    the same partition number of every co-partitioned group topic)."""

    broadcast: Sequence[str]
    group: Sequence[str]
    group_id: str
    broadcast_max_records: int = 10_000
    group_max_records: int = 5_000
    subscribe_when_ready: bool = False
    coalesce_records: int = 0
    group_options: Mapping[str, Any] = field(default_factory=dict)
    producer_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The group topic whose partitions name a transaction (docs/deployment.md#delivery):
        co-partitioned group topics share its partition numbers."""
        return self.group[0]


class WorkerLogic(Protocol):
    """A worker's domain side. Hooks run on the event loop; long work yields now and then."""

    @property
    def ready(self) -> bool:
        """The worker's own readiness (e.g. caught up on its broadcast state)."""
        ...

    @property
    def accepting(self) -> bool:
        """False holds back group records (they are handed over once it is True again)."""
        ...

    async def on_broadcast(self, batch: Batch, turn: Turn) -> None: ...

    async def on_records(self, records: list[Record], turn: Turn) -> None: ...

    async def on_turn(self, turn: Turn) -> None: ...

    def summary(self) -> Mapping[str, Any]:
        """Figures for the worker's last log line."""
        ...

    def on_fenced(self, outputs: Sequence[Output]) -> None:
        """These outputs of the turn were not published: another instance owns their partitions
        now. What the worker remembered of them as published must go (RunsOnRuntime: nothing)."""
        ...


Partitions = set[tuple[str, int]]  # (topic, partition) pairs


class PartitionOwnership(ConsumerRebalanceListener):  # type: ignore[misc]
    """A worker's part in a rebalance of its consumer group: what it has computed lands before
    partitions go to another instance (`flush`), then it forgets what it no longer owns
    (`revoke`); on assignment it takes the new partitions over (`assign`)."""

    def __init__(
        self,
        flush: Callable[[], Awaitable[None]],
        revoke: Callable[[Partitions], None],
        assign: Callable[[Partitions], Awaitable[None]],
    ) -> None:
        self._flush = flush
        self._revoke = revoke
        self._assign = assign

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._flush()
        self._revoke({(tp.topic, tp.partition) for tp in revoked})

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._assign({(tp.topic, tp.partition) for tp in assigned})


class SinkOwnership(ConsumerRebalanceListener):  # type: ignore[misc]
    """The sink and the worker follow the group. On revocation the worker finishes its part first
    (`inner`), then the sink closes the partitions' transactional producers. On assignment the new
    partitions are only paused and noted: the runtime's loop takes them over before its next turn
    (`WorkerRuntime.take_over`).

    Why not here: while a callback runs, aiokafka's coordinator waits for it, and so does what the
    takeover needs of the coordinator (a fresh partition's committed offset, before a seek can
    complete), and the heartbeats that keep the member in the group when another joins. A takeover
    that waits on the network here can be expelled from the group and assigned again, over and over
    (seen on a three-node Apache Kafka after a node stood still). Paused, a partition's records
    reach the worker only after the previous owner is fenced and the worker has placed its reading."""

    def __init__(self, runtime: WorkerRuntime, inner: Any) -> None:
        self._runtime = runtime
        self._inner = inner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self._runtime.not_taken_over(revoked)
        await self._runtime.release(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self._runtime.to_take_over(assigned)


class WorkerRuntime:
    """Runs a `WorkerLogic` on the bus. `await runtime.run()` until `runtime.stop()` or a signal."""

    def __init__(
        self,
        settings: Settings,
        logic: WorkerLogic,
        topology: Topology,
        *,
        name: str,
        instance: str,
        registry: CollectorRegistry,
        debug_routes: Sequence[web.RouteDef] = (),
        rebalance_listener: Any = None,
        background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
        failpoints: str | None = None,
    ) -> None:
        self.settings = settings
        self.logic = logic
        self.topology = topology
        self.name = name
        self.instance = instance
        self.failpoints = failpoints or name
        self.registry = registry
        self.debug_routes = list(debug_routes)
        self.rebalance_listener = rebalance_listener
        self.background = list(background)
        self.lag = Gauge(
            "fleetplace_broadcast_lag_records",
            "Broadcast records behind the high watermark",
            registry=registry,
        )
        self.connected = Gauge(
            "fleetplace_broker_connected",
            "1 while the brokers answer, 0 from the first failed probe until they answer again",
            registry=registry,
        )
        self.connected.set(1)
        self.broker_connected = True
        self.producer: Any = None
        self.sink: OutputSink | None = None
        self.reader: Any = None
        self.group: Any = None
        self.group_partitions: list[TP] = []  # of the group topics, known once the group client started
        self.http: HttpServer | None = None
        self.subscribed = False
        self._held: list[Record] = []
        self._takeover: set[TopicPartition] = set()  # assigned, paused, not yet taken over
        self._stop = asyncio.Event()
        self._failpoint = Failpoint.from_env()

    # ---- ownership --------------------------------------------------------------------------
    def _sources(self, tps: Iterable[TopicPartition]) -> set[TP]:
        source = self.topology.source
        return {(tp.topic, tp.partition) for tp in tps if tp.topic == source}

    def to_take_over(self, assigned: Iterable[TopicPartition]) -> None:
        """Newly assigned partitions: paused until `take_over` (called in the group's callback)."""
        fresh = set(assigned)
        if fresh:
            self.group.pause(*fresh)
            self._takeover |= fresh

    def not_taken_over(self, revoked: Iterable[TopicPartition]) -> None:
        """Revoked before `take_over` reached them (called in the group's callback)."""
        self._takeover -= set(revoked)

    async def release(self, revoked: Iterable[TopicPartition]) -> None:
        gone = set(revoked)
        if self.rebalance_listener is not None:
            await self.rebalance_listener.on_partitions_revoked(gone)
        if self.sink is not None:
            await self.sink.release(self._sources(gone))

    async def take_over(self) -> None:
        """Own the partitions assigned since the last turn: their transactional producers start
        (fencing the previous owner, whose open transaction is aborted), the worker places its
        reading (`rebalance_listener`), and only then are they resumed. A partition revoked while
        this ran is released again; one assigned again meanwhile stays paused for the next round."""
        while self._takeover:
            taken, self._takeover = self._takeover, set()
            if self.sink is not None:
                await self.sink.own(self._sources(taken))
            if self.rebalance_listener is not None:
                await self.rebalance_listener.on_partitions_assigned(taken)
            assigned = set(self.group.assignment())
            if taken - assigned:
                await self.release(taken - assigned)
            self.group.resume(*(taken & assigned) - self._takeover)

    # ---- state ------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """/readyz: the worker's rule, and a broker that answers."""
        return self.broker_connected and self.logic.ready

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def _on_broker(self, connected: bool) -> None:
        self.broker_connected = connected
        self.connected.set(1 if connected else 0)

    # ---- start and stop ---------------------------------------------------------------------
    async def run(self) -> None:
        kafka = self.settings.kafka
        top = self.topology
        # The port first: if it is taken nothing else has started (HttpPortInUseError).
        self.http = HttpServer.from_settings(
            self.settings, ready=lambda: self.ready, registry=self.registry, debug_routes=self.debug_routes
        )
        await self.http.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            self.sink = await make_sink(kafka, group_id=top.group_id, **top.producer_options)
            self.producer = self.sink.producer
            self.reader = BroadcastReader(
                kafka, top.broadcast, prefix=self.settings.topic_prefix, max_records=top.broadcast_max_records
            )
            await self.reader.start()
            if top.group:  # a worker with broadcast sources only (the hub bridge) has no group
                self.group = make_consumer(
                    kafka,
                    group_id=top.group_id,
                    session_timeout_ms=self.settings.group_session_timeout_ms,
                    heartbeat_interval_ms=heartbeat_interval_ms(self.settings.group_session_timeout_ms),
                    max_poll_records=top.group_max_records,
                    **top.group_options,
                )
                await start_client(self.group)
                self.group_partitions = await partitions_of(self.group, top.group)
                if not top.subscribe_when_ready:
                    self._subscribe()
            watch = BrokerWatch(
                self.producer.client, bootstrap=str(kafka.bootstrap_servers), on_change=self._on_broker
            )
            tasks = [asyncio.create_task(watch.run())]
            tasks += [asyncio.create_task(job()) for job in self.background]
            log.info(f"{self.name} started", http=self.http.url, instance=self.instance)
            await self.loop(self.reader, self.group)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._close()
            log.info(f"{self.name} stopped", instance=self.instance, **self.logic.summary())

    def _subscribe(self) -> None:
        self.group.subscribe(list(self.topology.group), listener=SinkOwnership(self, self.rebalance_listener))
        self.subscribed = True

    async def _close(self) -> None:
        """Every client closes, whatever state the broker is in; a failure to close is logged, not raised."""
        steps: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        if self.http is not None:
            steps.append(("http", self.http.stop))
        group, reader, sink = self.group, self.reader, self.sink
        if group is not None:
            if self.broker_connected and self.subscribed:
                steps.append(
                    ("group", lambda: stop_with_leave(group, self.topology.group_id, self.settings.kafka))
                )
            else:  # no one to hear a LeaveGroup: the session times out instead
                steps.append(("group", lambda: stop_client(group)))
        if reader is not None:
            steps.append(("reader", reader.stop))
        if sink is not None:
            steps.append(("producer", sink.stop))
        for what, step in steps:
            try:
                await step()
            except Exception as exc:
                log.warning("could not close cleanly", part=what, error=f"{type(exc).__name__}: {exc}")

    # ---- the loop ---------------------------------------------------------------------------
    async def loop(self, reader: Any, group: Any) -> None:
        """Turns until stopped. `reader` is a BroadcastReader, `group` a started group consumer
        or None when the topology has no group topics (tests pass stand-ins)."""
        self.reader, self.group = reader, group
        logic = self.logic
        top = self.topology
        reader_poll: asyncio.Task[Batch] | None = None
        group_poll: asyncio.Task[list[Record]] | None = None
        try:
            while not self._stop.is_set():
                if group is not None and top.subscribe_when_ready and not self.subscribed and logic.ready:
                    self._subscribe()
                if self._takeover:
                    await self.take_over()
                if reader_poll is None:
                    reader_poll = asyncio.create_task(reader.poll())
                if (
                    group_poll is None
                    and group is not None
                    and logic.accepting
                    and (self.subscribed or not top.subscribe_when_ready)
                ):
                    group_poll = asyncio.create_task(
                        poll(group, timeout_ms=100, max_records=top.group_max_records)
                    )
                waiting = [t for t in (reader_poll, group_poll) if t is not None]
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                turn = Turn()
                if reader_poll in done:
                    batch = reader_poll.result()
                    reader_poll = None
                    self.lag.set(reader.lag())
                    await logic.on_broadcast(batch, turn)
                if group_poll is not None and group_poll in done:
                    records = group_poll.result()
                    group_poll = None
                    if not logic.accepting:  # answered after the worker stopped accepting: kept for later
                        self._held.extend(records)
                        records = []
                    elif self._held:
                        records, self._held = self._held + records, []
                    if records and top.coalesce_records:
                        records = await self._coalesce(group, records)
                    await logic.on_records(records, turn)
                await logic.on_turn(turn)
                await self.publish(turn)
        finally:
            for task in (reader_poll, group_poll):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task

    async def _coalesce(self, group: Any, records: list[Record]) -> list[Record]:
        """`records` and what the group consumer has already fetched, up to `coalesce_records`."""
        batch = list(records)
        while len(batch) < self.topology.coalesce_records:
            more = await poll(group, timeout_ms=0, max_records=self.topology.coalesce_records - len(batch))
            if not more:
                break
            batch.extend(more)
        return batch

    def failpoint(self, name: str) -> None:
        """Reach the failpoint `<worker>.<name>` (shared/failpoints.py): nothing unless a test set it."""
        self._failpoint.reach(f"{self.failpoints}.{name}")

    async def publish(self, turn: Turn) -> None:
        """Send the turn's records and wait for the acknowledgements, then commit its offsets; in
        exactly-once mode each output commits with its offsets in its partition's transaction.
        Outputs of partitions another instance owns now are not published: their offsets are not
        committed either, so the owner computes them again."""
        outputs, turn.outputs = turn.outputs, []
        if self.sink is not None and self.sink.delivery.transactions:
            turn.commits = {}  # the outputs carry them
            try:
                await self.sink.publish([Output(turn.take()), *outputs])
            except OutputFencedError as exc:
                log.warning("outputs of partitions another instance owns now not published", error=str(exc))
                self.logic.on_fenced([o for o in outputs if o.source in exc.partitions])
                coordinator = getattr(self.group, "_coordinator", None)  # aiokafka's; no public rejoin
                if coordinator is not None:
                    coordinator.request_rejoin()
            return
        records = turn.take() + [r for output in outputs for r in output.records]
        if records:
            await send_all(self.producer, records)
        if turn.commits:
            self._failpoint.reach(f"{self.failpoints}.before-commit")
            await self.group.commit(turn.commits)
            turn.commits = {}


async def run_until_signalled(runtime: WorkerRuntime) -> None:
    """Run until SIGTERM or SIGINT, which stop the worker cleanly (exit status 0)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, runtime.stop)
    await runtime.run()


class RunsOnRuntime:
    """What every worker shows its CLI and its tests (`run`, `stop`, `http`): all of it its
    `WorkerRuntime`'s, which the worker builds in its `__init__`."""

    runtime: WorkerRuntime

    @property
    def http(self) -> HttpServer | None:
        return self.runtime.http

    def stop(self) -> None:
        self.runtime.stop()

    def on_fenced(self, outputs: Sequence[Output]) -> None:
        """Nothing to take back: a worker that remembers what it published overrides this (or
        publishes through its own path and handles the fence there)."""

    async def run(self) -> None:
        await self.runtime.run()
