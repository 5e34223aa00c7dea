"""One fault run: a broker, scheduler worker processes, a steady stream of fleet changes, faults on a
timeline, then convergence and the checks. Figures come out as one JSON line on stdout.

    report = await run(Plan("sigkill", seconds=60, kill_every=4), tmp_path)
    assert report.ok, report.explain()
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from aiokafka.errors import KafkaError

from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import unique_topic_prefix
from tests.faults.fleet import Change, FleetModel
from tests.faults.outputs import Outputs, Verdict, diverging, read_all, verdict
from tests.faults.processes import FaultyBroker, FaultyCluster, WorkerProcess, fault_broker


@dataclass(frozen=True)
class Plan:
    name: str
    seconds: float = 30.0  # how long the change stream runs
    rate: float = 20.0  # fleet changes per second
    workers: int = 2
    storage: Literal["memory", "s3"] = "memory"
    kill_every: float | None = None  # SIGKILL a worker this often, restart it after `restart_after`
    restart_after: float = 1.0
    broker_pause: tuple[float, float] | None = None  # (at, seconds): SIGSTOP, then SIGCONT
    broker_restarts: tuple[float, ...] = ()  # when to restart the broker (needs storage="s3")
    broker_restart_sigkill: bool = False
    worker_pause: tuple[float, float] | None = None  # (at, seconds): SIGSTOP one worker (a "zombie")
    clusters: int = 16
    placements: int = 24
    partitions: int = 6
    converge_timeout: float = 120.0
    seed: int = 1
    audit: bool = True  # `fleetplace audit` must reproduce every published decision
    # Apache Kafka, three KRaft nodes (broker="apache"): the node faults, each at a second of the run
    broker: Literal["embedded", "apache"] = "embedded"
    leader_kill: float | None = None  # SIGKILL the node leading decisions/0 and placements/0
    controller_kill: float | None = None  # SIGKILL the active KRaft controller
    rolling_restart: float | None = None  # restart the three nodes one after the other
    node_pause: tuple[float, float] | None = None  # (at, seconds): SIGSTOP one node, then SIGCONT
    node_down_s: float = 5.0  # how long a killed node stays down


@dataclass
class Report:
    plan: Plan
    verdict: Verdict
    faults: Counter[str]
    records: int
    changes: int
    unexpected_exits: list[str]
    converged_s: float | None
    seconds: float
    peak_rss_mb: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    offsets_reused: int = 0
    inputs_lost: list[str] = field(default_factory=list)
    worker_lag: dict[str, float] = field(default_factory=dict)
    audit: dict[str, Any] | None = None
    startups_refused: int = 0

    @property
    def broker_stalled(self) -> bool:
        """The broker stopped serving part of a log it holds (seen with Tansu on s3:// after a hard
        restart): a worker or a fresh reader stays behind the high watermark with nothing to fetch."""
        return any(v > 0 for v in self.worker_lag.values()) or any("stall" in x for x in self.inputs_lost)

    @property
    def retry_duplicates_allowed(self) -> bool:
        """A hard broker restart can lose the acknowledgement of a record it had written; the
        producer then writes it again. Apache Kafka prevents that with idempotent producers
        (KAFKA_ENABLE_IDEMPOTENCE), the embedded broker cannot, and subscribers dedupe by seq."""
        return bool(self.plan.broker_restarts)

    @property
    def ok(self) -> bool:
        return (
            self.converged_s is not None
            and not self.verdict.problems(allow_retry_duplicates=self.retry_duplicates_allowed)
            and not self.unexpected_exits
            and not self.offsets_reused
            and not self.inputs_lost
            and (self.audit is None or self.audited)
        )

    @property
    def audited(self) -> bool:
        """The audit found nothing wrong and reproduced every decision published (its `ok` alone
        also holds for an audit that checked nothing). It reads the topics after the final read,
        while the workers still run, so it may check more decisions than `verdict.diffs`, never
        fewer."""
        assert self.audit is not None
        checked = self.audit.get("checked")
        return (
            bool(self.audit.get("ok"))
            and isinstance(checked, int)
            and checked == self.audit.get("reproduced")
            and checked >= self.verdict.diffs > 0
        )

    def figures(self) -> dict[str, Any]:
        return {
            "suite": "faults",
            "scenario": self.plan.name,
            "broker": self.plan.broker,
            "faults_injected": dict(self.faults),
            "faults_total": sum(self.faults.values()),
            "input_records": self.records,
            "fleet_changes": self.changes,
            **self.verdict.figures(),
            "worker_unexpected_exits": len(self.unexpected_exits),
            "worker_startups_refused_broker_down": self.startups_refused,
            "broker_offsets_reused": self.offsets_reused,
            "broker_inputs_lost": len(self.inputs_lost),
            "worker_broadcast_lag_at_end": {k: int(v) for k, v in self.worker_lag.items()},
            "audit": self.audit,
            "converged_after_s": None if self.converged_s is None else round(self.converged_s, 1),
            "seconds": round(self.seconds, 1),
            "peak_rss_mb": {k: round(v, 1) for k, v in self.peak_rss_mb.items()},
        }

    def explain(self) -> str:
        lines = [orjson.dumps(self.figures()).decode(), *self.unexpected_exits, *self.notes]
        lines += self.inputs_lost[:20]
        lines += self.verdict.problems(allow_retry_duplicates=self.retry_duplicates_allowed)[:40]
        return "\n".join(lines)


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()


class Driver:
    """Sends fleet changes until acknowledged (like any producer, it retries through broker faults) and
    remembers where each landed: an offset acknowledged twice means the broker lost a record."""

    def __init__(self, producer: Any, topics: Topics) -> None:
        self.producer = producer
        self.topics = topics
        self.records = 0
        self.retries = 0
        self.delivered: dict[tuple[str, int, int], bytes | None] = {}
        self.offsets_reused: list[str] = []

    async def send(self, changes: list[Change]) -> None:
        records = [
            OutgoingRecord(self.topics.name(topic), key, None if value is None else encode_json(value))
            for topic, key, value in changes
        ]
        while True:
            try:
                delivered = await send_all(self.producer, records)
                break
            except (TimeoutError, KafkaError, BusError):
                self.retries += 1
                await asyncio.sleep(0.5)
        for d, r in zip(delivered, records, strict=True):
            where = (d.topic, d.partition, d.offset)
            if where in self.delivered:
                self.offsets_reused.append(f"{d.topic}/{d.partition}@{d.offset} acknowledged twice")
            self.delivered[where] = r.value
        self.records += len(records)


class _Run:
    def __init__(self, plan: Plan, workdir: Path) -> None:
        self.plan = plan
        self.workdir = workdir
        self.faults: Counter[str] = Counter()
        self.started = time.monotonic()
        self.stream_done = asyncio.Event()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    async def at(self, second: float) -> None:
        await asyncio.sleep(max(0.0, second - self.elapsed()))

    async def kill_loop(self, workers: list[WorkerProcess]) -> None:
        every = self.plan.kill_every
        assert every is not None
        turn = 0
        while self.elapsed() + every < self.plan.seconds:
            await asyncio.sleep(every)
            worker = workers[turn % len(workers)]
            turn += 1
            if not worker.running:
                continue
            worker.kill()
            self.faults["worker_sigkill"] += 1
            await asyncio.sleep(self.plan.restart_after)
            worker.start()

    async def broker_pause(self, broker: FaultyBroker, at: float, seconds: float) -> None:
        await self.at(at)
        broker.pause()
        self.faults["broker_sigstop"] += 1
        await asyncio.sleep(seconds)
        broker.resume()

    async def broker_restarts(self, broker: FaultyBroker) -> None:
        for at in self.plan.broker_restarts:
            await self.at(at)
            await asyncio.to_thread(broker.restart, kill=self.plan.broker_restart_sigkill)
            self.faults["broker_restart"] += 1

    async def worker_pause(self, worker: WorkerProcess, at: float, seconds: float) -> None:
        await self.at(at)
        worker.pause()
        self.faults["worker_sigstop"] += 1
        await asyncio.sleep(seconds)
        worker.resume()

    def node_faults(self, cluster: FaultyCluster, leading: tuple[str, str]) -> list[Any]:
        """The plan's faults of the Apache Kafka nodes; `leading`: the two output topics whose
        partition 0's leader is the one killed (or paused)."""
        plan = self.plan
        tasks: list[Any] = []
        if plan.leader_kill is not None:
            tasks.append(self.leader_kill(cluster, leading, plan.leader_kill))
        if plan.controller_kill is not None:
            tasks.append(self.controller_kill(cluster, plan.controller_kill))
        if plan.rolling_restart is not None:
            tasks.append(self.rolling_restart(cluster, plan.rolling_restart))
        if plan.node_pause is not None:
            tasks.append(self.node_pause(cluster, leading[0], *plan.node_pause))
        return tasks

    async def leader_kill(self, cluster: FaultyCluster, leading: tuple[str, str], at: float) -> None:
        await self.at(at)
        leaders = {await asyncio.to_thread(cluster.kafka.partition_leader, topic, 0) for topic in leading}
        for node in leaders:
            await asyncio.to_thread(cluster.kill_and_restart, node, self.plan.node_down_s)
            self.faults["node_sigkill_partition_leader"] += 1

    async def controller_kill(self, cluster: FaultyCluster, at: float) -> None:
        await self.at(at)
        node = await asyncio.to_thread(cluster.kafka.active_controller)
        await asyncio.to_thread(cluster.kill_and_restart, node, self.plan.node_down_s)
        self.faults["node_sigkill_active_controller"] += 1

    async def rolling_restart(self, cluster: FaultyCluster, at: float) -> None:
        await self.at(at)
        for node in list(cluster.kafka.nodes):
            await asyncio.to_thread(node.restart)
            self.faults["node_restart_rolling"] += 1

    async def node_pause(self, cluster: FaultyCluster, topic: str, at: float, seconds: float) -> None:
        await self.at(at)
        node = await asyncio.to_thread(cluster.kafka.partition_leader, topic, 0)
        node.pause()
        self.faults["node_sigstop"] += 1
        await asyncio.sleep(seconds)
        node.resume()

    async def supervise(self, broker: FaultyBroker | FaultyCluster, workers: list[WorkerProcess]) -> None:
        """Restart a worker that exited on its own (as Kubernetes would), and note it; sample memory."""
        while True:
            for w in workers:
                if w.process is not None and w.process.poll() is not None:
                    w.check()
                    w.start()
                w.sample_rss()
            broker.sample_rss()
            await asyncio.sleep(0.5)


async def _lag(workers: list[WorkerProcess]) -> dict[str, float]:
    """Each worker's broadcast lag (records behind the high watermark): > 0 at rest means a stalled reader."""
    out = {}
    for w in workers:
        with contextlib.suppress(OSError):
            samples = await asyncio.to_thread(w.metrics)
            out[w.name] = samples.get("fleetplace_broadcast_lag_records", 0.0)
    return out


async def _diagnose(
    workers: list[WorkerProcess], outputs: Outputs, expected: dict[str, Any], keys: set[str]
) -> list[str]:
    """What each worker says about itself and the placements that did not converge."""
    notes = []
    wrong = [line.split(":")[0] for line in outputs.diverging(expected, keys)]
    for w in workers:
        try:
            samples = await asyncio.to_thread(w.metrics)
        except OSError as exc:
            notes.append(f"{w.name}: no metrics ({exc})")
            continue
        wanted = ("consumed", "lag", "owned", "deadletters", "diffs_published", "evaluations_total")
        notes.append(
            f"{w.name}: "
            + ", ".join(f"{k}={v:g}" for k, v in sorted(samples.items()) if any(x in k for x in wanted))
        )
        for key in wrong[:3]:
            url = f"http://127.0.0.1:{w.http_port}/debug/placements/{key}"
            try:
                body = await asyncio.to_thread(lambda u=url: urllib.request.urlopen(u, timeout=5).read())
                notes.append(f"{w.name} {key}: {body[:1500].decode(errors='replace')}")
            except OSError as exc:
                notes.append(f"{w.name} {key}: {exc}")
    return notes


async def inputs_lost(bootstrap: str, topics: Topics, model: FleetModel) -> list[str]:
    """(topic, key)s whose last record on the broker is not the last one the driver had acknowledged."""
    names = sorted({topic for topic, _ in model.state})
    async with BroadcastReader(bootstrap, [topics.name(t) for t in names], max_records=20_000) as reader:
        try:
            records = await reader.read_to_end(timeout=60)
        except TimeoutError:
            behind = [f"{t}/{p}" for t, p in reader.partitions if reader.lag()]
            return [f"broker read stall: a fresh reader cannot reach the high watermark of {behind[:6]}"]
    last: dict[tuple[str, str], bytes | None] = {}
    for r in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        last[(topics.unprefixed(r.topic), r.key or "")] = r.value
    lost = []
    for (topic, key), value in sorted(model.state.items()):
        want = None if value is None else encode_json(value)
        if (topic, key) not in last or last[(topic, key)] != want:
            lost.append(f"{topic}/{key}: the broker's last record is not the last one acknowledged")
    return lost


async def audit(bootstrap: str, prefix: str, timeout: float = 300) -> dict[str, Any]:
    """`fleetplace audit --json`: how many decisions it checked and how many reproduce."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fleetplace.services.cli",
        "audit",
        "--json",
        "--bootstrap",
        bootstrap,
        "--prefix",
        prefix,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        return {"ok": False, "error": f"audit did not finish in {timeout} s"}
    try:
        report = orjson.loads(out)
    except orjson.JSONDecodeError:
        return {"ok": False, "error": f"exit {process.returncode}: {err.decode(errors='replace')[-500:]}"}
    summary = {k: report.get(k) for k in ("ok", "records", "checked", "reproduced", "mismatched")}
    rollouts = report.get("rollouts") or {}
    summary["rollouts"] = {k: rollouts.get(k) for k in ("ok", "checked", "reproduced", "mismatched")}
    if rollouts and not rollouts.get("ok"):
        summary["rollouts"]["first"] = (
            rollouts.get("mismatches") or rollouts.get("seqProblems") or rollouts.get("invalidRecords") or []
        )[:3]
    if not report.get("ok"):
        summary["first"] = (
            report.get("mismatches") or report.get("seqProblems") or report.get("invalidRecords")
        )[:3]
    return summary


async def run(plan: Plan, workdir: Path) -> Report:
    rng = random.Random(plan.seed)
    model = FleetModel(rng, clusters=plan.clusters, placements=plan.placements)
    prefix = unique_topic_prefix("faults")
    converged: float | None = None
    with contextlib.ExitStack() as stack:
        broker, topics = await fault_broker(
            stack, plan.broker, plan.storage, plan.partitions, prefix, workdir
        )
        workers = [
            WorkerProcess(broker.bootstrap, prefix, f"{prefix}scheduler", f"w{i}", workdir)
            for i in range(plan.workers)
        ]
        for w in workers:
            stack.callback(w.stop)
            w.start()
        state = _Run(plan, workdir)
        producer = make_producer(broker.bootstrap, linger_ms=5)
        await start_client(producer)
        supervisor = asyncio.create_task(state.supervise(broker, workers))
        try:
            async with Outputs(broker.bootstrap, topics) as outputs:
                driver = Driver(producer, topics)
                await driver.send(model.initial())
                # faults start from a steady state: both workers assigned and every placement decided
                initial = model.placement_keys()
                deadline = time.monotonic() + 90
                while not initial <= outputs.latest().keys() and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                state.started = time.monotonic()
                tasks = []
                if plan.kill_every:
                    tasks.append(state.kill_loop(workers))
                if plan.broker_pause:
                    tasks.append(state.broker_pause(broker, *plan.broker_pause))
                if plan.broker_restarts:
                    tasks.append(state.broker_restarts(broker))
                if plan.worker_pause:
                    tasks.append(state.worker_pause(workers[0], *plan.worker_pause))
                if isinstance(broker, FaultyCluster):
                    tasks += state.node_faults(broker, (topics.decisions, topics.placements))
                faults = asyncio.gather(*tasks)
                while state.elapsed() < plan.seconds:
                    await driver.send(model.next_changes())
                    await asyncio.sleep(1 / plan.rate)
                await faults
                for w in workers:
                    if not w.running:
                        w.start()
                stream_end = time.monotonic()
                expected = model.expected()
                keys = model.placement_keys()
                deadline = stream_end + plan.converge_timeout
                next_fresh = time.monotonic() + 5
                while time.monotonic() < deadline:
                    fresh_ok = False
                    if time.monotonic() >= next_fresh:
                        # the live reader may stall after a broker restart: the topic is the truth
                        next_fresh = time.monotonic() + 5
                        with contextlib.suppress(TimeoutError):
                            fresh = await read_all(broker.bootstrap, topics, timeout=20)
                            fresh_ok = not diverging(fresh.latest(), expected, keys)
                    if fresh_ok or not outputs.diverging(expected, keys):
                        converged = time.monotonic() - stream_end
                        break
                    await asyncio.sleep(0.25)
                await asyncio.sleep(2.0)  # anything still in flight lands before the final read
                lag = await _lag(workers)
                diagnostics = (
                    [] if converged is not None else await _diagnose(workers, outputs, expected, keys)
                )
            try:
                final = await read_all(broker.bootstrap, topics)
            except TimeoutError:
                final = outputs  # the broker stopped serving part of an output topic
                stall = ["broker read stall: a fresh reader cannot reach the end of the output topics"]
            else:
                stall = []
            lost = stall + await inputs_lost(broker.bootstrap, topics, model)
            audited = await audit(broker.bootstrap, prefix) if plan.audit else None
        finally:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
            await producer.stop()
        v = verdict(final.decisions, final.placement_decisions, expected, keys, len(final.deadletters))
        exits = [f"{w.name} exited by itself with status {s}" for w in workers for s in w.unexpected_exits]
        # A worker started while the broker is down exits 1 at once ("cannot reach Kafka"), by design:
        # its supervisor starts it again. Only other exits count against the worker.
        refused = sum(
            1 for w in workers for line in w.log_lines() if line.startswith("error: cannot reach Kafka")
        )
        exits = exits[refused:] if refused <= len(exits) else []
        for w in workers:
            w.stop()
        rss = {w.name: w.peak_rss_mb for w in workers}
        broker.sample_rss()
        rss["broker"] = broker.peak_rss_mb
        notes = [*driver.offsets_reused[:20], *diagnostics]
        if v.problems() or exits or converged is None:
            for w in workers:
                errors = [line for line in w.log_lines() if '"level":"error"' in line or "Traceback" in line]
                notes += [f"{w.name}: {line[:400]}" for line in errors[-5:]]
        report = Report(
            plan=plan,
            verdict=v,
            faults=state.faults,
            records=driver.records,
            changes=model.changes,
            unexpected_exits=exits,
            converged_s=converged,
            seconds=time.monotonic() - state.started,
            peak_rss_mb=rss,
            notes=notes,
            offsets_reused=len(driver.offsets_reused),
            inputs_lost=lost,
            worker_lag=lag,
            startups_refused=refused,
            audit=audited,
        )
    emit(report.figures())
    return report
