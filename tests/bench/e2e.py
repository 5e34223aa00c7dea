"""`make bench-e2e`: OCM's benchmark scenario end to end, through a broker and a scheduler worker process.

One JSON line per figure on stdout (progress and details go to stderr):

* `placements-10000x1000`: 1,000 clusters with AddOn scores are on the bus and scheduler workers
  (`fleetplace worker scheduler`, each its own process in one consumer group, as deployed; one
  per core by default, `--workers N`) are running; 10,000 placements are published, and the clock runs from the first placement sent until the last of their decisions
  is read back. Beside it, the bus limit: a pass-through process (consume a record, produce one)
  over 10,000 records of the same size on the same broker, measured the same way; `ratio` is
  worker rate / pass-through rate.
* `cluster-change`: the allocatable CPU of one cluster (the one most placements picked) is
  toggled 20 times between the fleet's lowest and highest value. Each change re-evaluates every
  placement bound to the cluster's set; its latency runs from the change sent until the last diff
  it caused is read back. Completion is known exactly: the workers' evaluation counters cover
  the whole fan-out, and as many decision records as they built diffs have been read. Each change
  is sent once the workers are idle (every decision record consumed by every worker), so each
  figure is one change's propagation, not the tail of the previous change in front of it.
  Beside it, `bus_ms`: the pass-through carrying as many records as the largest change caused
  diffs (its diff records themselves), from the first sent until the last read back, the best of
  three (one pass swings by half between runs), and `change_p99_over_bus` = `change_p99_ms` /
  `bus_ms`. Where the time goes (Linux, from /proc; left out elsewhere), medians per change:
  `worker_cpu_ms`, the CPU the worker processes spent from the change sent until its last diff
  was read; `machine_cpu_ms`, the CPU every process of the machine spent meanwhile (the workers,
  the broker, this benchmark's reader); and `cores_busy`, the share of all cores busy then (near
  1: the change waits for CPU, not for the bus).

Both lines carry `workers`, the number of worker processes.

    python -m tests.bench.e2e             # 10,000 placements, 20 changes
    python -m tests.bench.e2e --quick     # 1,000 placements, 5 changes
    python -m tests.bench.e2e --workers 1 # one worker process
    python -m tests.bench.e2e --profile worker.prof   # the (first) worker under cProfile
    python -m tests.bench.e2e --profiles  # the clusters as ClusterProfiles (cluster-profiles topic)

The broker is the embedded one unless FLEETPLACE_TEST_BOOTSTRAP names another.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import TopicPartition
from aiokafka.admin import NewTopic

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.envelope import parse_time
from fleetplace.shared.bus.kafka import (
    make_admin,
    make_consumer,
    make_producer,
    poll,
    send_all,
    start_client,
    stop_with_leave,
    true_end_offsets,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import DEFAULT_WORK_PARTITIONS, Topics
from fleetplace.shared.testing import (
    EXTERNAL_BOOTSTRAP_ENV,
    broker_kind_from_env,
    create_topics,
    running_broker,
)
from tests.api.profiles import profile_of
from tests.bench.scenario import fleet_objects, placement
from tests.bus_harness import BackgroundReader
from tests.proc import cpu_seconds, machine_cpu_s

CLUSTERS = 1000
NAMESPACE = "bench"
WARMUP_NAMESPACE = "warmup"
WARMUP_PLACEMENTS = 64  # spread over the placement partitions: every worker owns some
TOPIC_OF = {
    "ManagedCluster": "clusters",
    "AddOnPlacementScore": "scores",
    "ManagedClusterSet": "clustersets",
    "ManagedClusterSetBinding": "clustersetbindings",
    "Placement": "placements",
    "ClusterProfile": "cluster-profiles",
}
# The worker's producer settings, so the pass-through is the same kind of client.
PRODUCER = {"linger_ms": 5, "max_batch_size": 262144}
BUS_PASSES = 3  # pass-throughs of the largest change's diff records; the best is the bus figure


def broker_name() -> str:
    """The broker a bench runs on, for its JSON lines: `embedded` or `apache`
    (FLEETPLACE_TEST_BROKER, read by `running_broker`), or `external` when FLEETPLACE_TEST_BOOTSTRAP
    names one."""
    return "external" if os.environ.get(EXTERNAL_BOOTSTRAP_ENV) else broker_kind_from_env()


def emit(line: dict[str, object]) -> None:
    """One JSON line of figures on stdout, with the broker they were measured on."""
    sys.stdout.write(orjson.dumps({**line, "broker": broker_name()}).decode() + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    if obj["kind"] in ("ManagedCluster", "ManagedClusterSet"):
        return str(meta["name"])
    return f"{meta['namespace']}/{meta['name']}"


def record_of(topics: Topics, obj: dict[str, Any]) -> OutgoingRecord:
    return OutgoingRecord(topics.name(TOPIC_OF[obj["kind"]]), key_of(obj), encode_json(obj))


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (of 20 samples, p99 is the largest)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


# ---- CPU accounting (Linux /proc; None elsewhere) -----------------------------------------------


def process_cpu_s(pid: int) -> float | None:
    """`cpu_seconds` of a process, None once it has gone (or where /proc cannot tell)."""
    try:
        return cpu_seconds(pid)
    except OSError:
        return None


# the workers' CPU seconds so far (None: gone), and the machine's (busy, total)
CpuReading = tuple[list[float | None], tuple[float, float] | None]


@dataclass
class CpuSpent:
    """CPU spent between two readings: the workers' own and the machine's (all processes)."""

    workers_s: float
    machine_s: float
    cores_busy: float

    @staticmethod
    def reading(pids: Sequence[int]) -> CpuReading:
        return [process_cpu_s(pid) for pid in pids], machine_cpu_s()

    @classmethod
    def between(cls, before: CpuReading, after: CpuReading) -> CpuSpent | None:
        (workers0, machine0), (workers1, machine1) = before, after
        if machine0 is None or machine1 is None:
            return None
        workers = 0.0
        for a, b in zip(workers0, workers1, strict=True):
            if a is None or b is None:  # a worker has gone
                return None
            workers += b - a
        busy, total = machine1[0] - machine0[0], machine1[1] - machine0[1]
        return cls(workers, busy, busy / total if total else 0.0)


# ---- processes under test ----------------------------------------------------------------------


@contextlib.contextmanager
def process(args: list[str], name: str) -> Iterator[subprocess.Popen[bytes]]:
    """A child process with its output in a temporary log; SIGTERM (then SIGKILL) by PID at the end."""
    with tempfile.TemporaryFile() as log:
        child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield child
        finally:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGTERM)
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.kill(child.pid, signal.SIGKILL)
                    child.wait()
            if child.returncode not in (0, -signal.SIGTERM):
                log.seek(0)
                note(f"{name} exited with {child.returncode}:\n{log.read().decode(errors='replace')[-4000:]}")


def worker_command(bootstrap: str, prefix: str, http_port: int, profile: str | None) -> list[str]:
    cli = [
        "-m",
        "fleetplace.services.cli",
        "worker",
        "scheduler",
        "--bootstrap",
        bootstrap,
        "--prefix",
        prefix,
    ]
    cli += ["--group", f"{prefix}scheduler", "--http-port", str(http_port)]
    profiler = ["-m", "cProfile", "-o", profile] if profile else []
    return [sys.executable, *profiler, *cli]


def metric(http_port: int, name: str) -> float:
    """One of a worker's metrics (a series name, with its labels if any), from its /metrics (it
    answers between batches)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=60) as response:
        text = response.read().decode()
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def evaluations(http_ports: Sequence[int]) -> float:
    """fleetplace_evaluations_total summed over the workers."""
    return sum(metric(port, "fleetplace_evaluations_total") for port in http_ports)


def counts(http_ports: Sequence[int]) -> tuple[float, float]:
    """(evaluations, diffs built) summed over the workers. A worker counts a slice's evaluations
    and builds its diffs in one step, so once the evaluations cover a fan-out, the diffs count
    says how many decision records it will have published."""
    evaluated = built = 0.0
    for port in http_ports:
        evaluated += metric(port, "fleetplace_evaluations_total")
        built += metric(port, "fleetplace_diffs_published_total")
    return evaluated, built


async def settle(decisions: Tail, http_ports: Sequence[int]) -> None:
    """Until every worker has consumed every decision record on the topic (each reads the
    others' diffs, and its own come back): the workers are idle, and a change sent now is
    measured alone, not behind the previous one's tail."""
    await decisions.read_to_end()
    total = len(decisions.arrivals)
    series = 'fleetplace_records_consumed_total{topic="decisions"}'
    deadline = time.monotonic() + 60
    while True:
        consumed = [await asyncio.to_thread(metric, port, series) for port in http_ports]
        if all(c >= total for c in consumed):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the workers did not consume the decisions: {consumed} of {total}")
        await asyncio.sleep(0.02)


async def passthrough(bootstrap: str, source: str, sink: str, group: str) -> None:
    """The bus limit: consume records in a group and produce one record each, nothing else."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    producer = make_producer(bootstrap, **PRODUCER)
    consumer = make_consumer(bootstrap, source, group_id=group, max_poll_records=20_000)
    await start_client(producer)
    await start_client(consumer)
    try:
        while not stop.is_set():
            records = await poll(consumer, timeout_ms=100, max_records=20_000)
            if records:
                await send_all(producer, [OutgoingRecord(sink, r.key, r.value) for r in records])
    finally:
        await stop_with_leave(consumer, group, bootstrap)
        await producer.stop()


# ---- reading outputs ---------------------------------------------------------------------------


@dataclass
class Arrival:
    record: Record
    at: float  # time.monotonic() when read


class Tail:
    """Reads one output topic from the beginning in a background task, stamping each record on arrival."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        # A short fetch wait: a waiting consumer on Tansu sees new data after about half of it.
        self.follower = BackgroundReader(
            bootstrap, [topic], self._arrived, max_records=20_000, fetch_max_wait_ms=20
        )
        self.reader = self.follower.reader
        self.bootstrap = bootstrap
        self.topic = topic
        self.arrivals: list[Arrival] = []

    async def __aenter__(self) -> Tail:
        await self.follower.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.follower.__aexit__(*exc)

    def _arrived(self, records: Sequence[Record]) -> None:
        now = time.monotonic()
        self.arrivals.extend(Arrival(r, now) for r in records)

    async def wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            self.follower.raise_if_failed()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not done after {timeout} s")
            await asyncio.sleep(0.005)

    async def read_to_end(self, timeout: float = 30.0) -> None:
        """Wait until everything on the topic now has been read: the reader's position at each
        partition's end. Not the last record's offset: the commit marker of a transaction takes an
        offset of its own, so on Apache Kafka a partition can end after its last record."""
        ends = await true_end_offsets(self.bootstrap, self.reader.partitions)
        deadline = time.monotonic() + timeout
        for (topic, partition), end in ends.items():
            while self.reader.watermark.next_offset(topic, partition) < end:
                self.follower.raise_if_failed()
                consumer = self.reader._consumer
                if consumer is not None and await consumer.position(TopicPartition(topic, partition)) >= end:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {self.topic} to its end: not done after {timeout} s")
                await asyncio.sleep(0.005)


async def create_passthrough_topics(bootstrap: str, prefix: str) -> tuple[str, str]:
    source, sink = f"{prefix}passthrough-in", f"{prefix}passthrough-out"
    admin = make_admin(bootstrap)
    await start_client(admin)
    try:
        await admin.create_topics([NewTopic(t, DEFAULT_WORK_PARTITIONS, 1) for t in (source, sink)])
    finally:
        await admin.close()
    return source, sink


# ---- the runs ----------------------------------------------------------------------------------


async def run_placements(producer: Any, decisions: Tail, records: list[OutgoingRecord]) -> float:
    """Publish the placements; placements/s until the last of their decisions is read back."""
    wanted = {str(r.key) for r in records}
    first = len(decisions.arrivals)
    read = first
    seen: dict[str, float] = {}

    def all_decided() -> bool:
        nonlocal read
        for arrival in decisions.arrivals[read:]:
            if arrival.record.key in wanted:
                seen.setdefault(str(arrival.record.key), arrival.at)
        read = len(decisions.arrivals)
        return len(seen) == len(wanted)

    t0, wall0 = time.monotonic(), time.time()
    await send_all(producer, records)
    sent = time.monotonic() - t0
    await decisions.wait(all_decided, timeout=300.0, what=f"decisions of {len(records)} placements")
    elapsed = max(seen.values()) - t0
    note(f"{len(records)} placements: sent in {sent:.2f} s, all decided after {elapsed:.2f} s")
    # where the time went: when the worker evaluated and produced each decision, when it was read
    evaluated, produced, read_at = [], [], []
    for arrival in decisions.arrivals[first:]:
        if arrival.record.key in wanted and arrival.record.value:
            value = orjson.loads(arrival.record.value)
            evaluated.append(parse_time(value["evaluatedAt"]).timestamp() - wall0)
            produced.append(arrival.record.timestamp_ms / 1000 - wall0)
            read_at.append(arrival.at - t0)
    for name, xs in (("evaluated", evaluated), ("produced", produced), ("read", read_at)):
        xs.sort()
        note(
            f"  {name:9} s after the first send: first {xs[0]:.2f}, median {xs[len(xs) // 2]:.2f}, last {xs[-1]:.2f}"
        )
    return len(records) / elapsed


async def run_passthrough(bootstrap: str, prefix: str, payloads: list[tuple[str, bytes]]) -> float:
    source, sink = await create_passthrough_topics(bootstrap, prefix)
    group = f"{prefix}passthrough"
    args = [sys.executable, "-m", "tests.bench.e2e", "--passthrough", bootstrap, source, sink, group]
    producer = make_producer(bootstrap, linger_ms=20, max_batch_size=262144)
    await start_client(producer)
    try:
        async with Tail(bootstrap, sink) as out:
            with process(args, "pass-through"):
                await send_all(producer, [OutgoingRecord(source, "warmup/ready", b"{}")])
                await out.wait(lambda: len(out.arrivals) >= 1, 60.0, "pass-through warm-up")
                first = len(out.arrivals)
                t0 = time.monotonic()
                await send_all(producer, [OutgoingRecord(source, k, v) for k, v in payloads])
                n = len(payloads)
                await out.wait(lambda: len(out.arrivals) - first >= n, 120.0, "pass-through")
                elapsed = out.arrivals[first + n - 1].at - t0
    finally:
        await producer.stop()
    note(f"pass-through: {n} records in {elapsed:.2f} s")
    return n / elapsed


def most_picked(decisions: Tail, cpu_of: dict[str, int]) -> str:
    """The cluster most placements chose, among those whose CPU is neither the fleet's min nor max."""
    low, high = min(cpu_of.values()), max(cpu_of.values())
    counts: dict[str, int] = {}
    for arrival in decisions.arrivals:
        value = orjson.loads(arrival.record.value) if arrival.record.value else None
        if value and str(value["placement"]).startswith(f"{NAMESPACE}/"):
            for cluster in value["decisions"]:
                counts[cluster] = counts.get(cluster, 0) + 1
    candidates = [c for c in counts if low < cpu_of[c] < high]
    return max(candidates, key=lambda c: (counts[c], c))


async def run_changes(
    topics: Topics,
    producer: Any,
    decisions: Tail,
    http_ports: Sequence[int],
    placements: int,
    changes: int,
    worker_pids: Sequence[int],
    profiles: bool = False,
) -> tuple[list[float], list[tuple[str, bytes]], list[CpuSpent]]:
    """Toggle one cluster's allocatable CPU; per change, ms until the last diff it caused was read.
    Also the diff records of the change with the most of them (what the bus alone is timed on), and
    the CPU each change took (none where /proc cannot tell)."""
    fleet = {o["metadata"]["name"]: o for o in fleet_objects(CLUSTERS) if o["kind"] == "ManagedCluster"}
    cpu_of = {name: int(o["status"]["allocatable"]["cpu"]) for name, o in fleet.items()}
    target = most_picked(decisions, cpu_of)
    # the fleet's own bounds: the other clusters' resource scores stay as they are
    low, high = min(cpu_of.values()), max(cpu_of.values())
    note(f"changing {target} (allocatable cpu {cpu_of[target]}): {low} <-> {high}")
    latencies: list[float] = []
    diffs_per_change: list[int] = []
    largest: list[tuple[str, bytes]] = []
    stages: list[tuple[float, float, float]] = []
    spent: list[CpuSpent] = []
    for k in range(changes):
        obj = orjson.loads(orjson.dumps(fleet[target]))
        obj["status"]["allocatable"]["cpu"] = str(low if k % 2 == 0 else high)
        if profiles:
            obj = profile_of(obj, "bench")
        await settle(decisions, http_ports)
        evaluated_before, built_before = await asyncio.to_thread(counts, http_ports)
        first = len(decisions.arrivals)
        cpu_before = CpuSpent.reading(worker_pids)
        t0, wall0 = time.monotonic(), time.time()
        delivered = (await send_all(producer, [record_of(topics, obj)]))[0]
        watermark_key = f"{topics.unprefixed(delivered.topic)}/{delivered.partition}"

        deadline = time.monotonic() + 60
        while True:
            evaluated, built = await asyncio.to_thread(counts, http_ports)
            if evaluated >= evaluated_before + placements:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"change {k}: the workers did not evaluate {placements} placements")
            await asyncio.sleep(0.05)
        # every diff the fan-out built, read back (not only those published when the counters were read)
        expected = first + int(built - built_before)
        await decisions.wait(
            lambda expected=expected: len(decisions.arrivals) >= expected,
            60.0,
            f"change {k}: its diffs",
        )
        cpu = CpuSpent.between(cpu_before, CpuSpent.reading(worker_pids))
        if cpu is not None:
            spent.append(cpu)
        caused: list[Arrival] = []
        evaluated_at: list[float] = []
        for arrival in decisions.arrivals[first:]:
            value = orjson.loads(arrival.record.value) if arrival.record.value else None
            if (
                value
                and value["trigger"] == {"kind": "cluster", "key": target}
                and value["inputs"].get(watermark_key) == delivered.offset + 1
            ):
                caused.append(arrival)
                evaluated_at.append(parse_time(value["evaluatedAt"]).timestamp())
        if not caused:
            raise AssertionError(f"change {k} of {target} changed no decision: pick another change")
        latencies.append((max(a.at for a in caused) - t0) * 1000)
        diffs_per_change.append(len(caused))
        if len(caused) > len(largest):
            largest = [(str(a.record.key), a.record.value or b"") for a in caused]
        # where the time went: until the worker evaluated, until it produced the last diff, until read
        stages.append(
            (
                (min(evaluated_at) - wall0) * 1000,
                (max(a.record.timestamp_ms for a in caused) / 1000 - wall0) * 1000,
                latencies[-1],
            )
        )
    note(
        f"{changes} changes: diffs per change {min(diffs_per_change)}..{max(diffs_per_change)}, "
        f"latency ms {', '.join(f'{x:.0f}' for x in latencies)}"
    )
    picked, produced, read = (statistics.median(x) for x in zip(*stages, strict=True))
    note(
        f"median ms after the change was sent: evaluation started {picked:.0f}, "
        f"last diff produced {produced:.0f}, read back {read:.0f}"
    )
    return latencies, largest, spent


async def wait_live(decisions: Tail, http_ports: Sequence[int], warmup: set[str]) -> None:
    """Every warm-up placement decided and every worker owning some: the group is settled."""
    await decisions.wait(
        lambda: warmup <= {str(a.record.key) for a in decisions.arrivals},
        120.0,
        "the warm-up placements' decisions",
    )
    deadline = time.monotonic() + 120
    while True:
        owned = [await asyncio.to_thread(metric, port, "fleetplace_placements_owned") for port in http_ports]
        if all(owned) and sum(owned) == len(warmup):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the workers did not split the placements: owned {owned}")
        await asyncio.sleep(0.1)


async def main(quick: bool, workers: int, profile: str | None, profiles: bool = False) -> None:
    n = 1000 if quick else 10_000
    changes = 5 if quick else 20
    with running_broker() as bootstrap:
        prefix = f"bench{uuid.uuid4().hex[:8]}."
        topics, _ = await create_topics(bootstrap, prefix)
        placements = [record_of(topics, placement(NAMESPACE, i)) for i in range(n)]
        # the change is sent on its own: no batching delay in front of it
        producer = make_producer(bootstrap, linger_ms=0, max_batch_size=262144)
        await start_client(producer)
        try:
            t0 = time.monotonic()
            fleet = fleet_objects(CLUSTERS, profiles=profiles)
            await send_all(producer, [record_of(topics, o) for o in fleet])
            # placements outside the benchmark's namespace: their decisions show the workers are live
            warmup = [placement(WARMUP_NAMESPACE, i) for i in range(WARMUP_PLACEMENTS)]
            await send_all(producer, [record_of(topics, o) for o in warmup])
            note(f"fleet of {CLUSTERS} clusters and scores published in {time.monotonic() - t0:.2f} s")
            http_ports = [free_port() for _ in range(workers)]
            with contextlib.ExitStack() as stack:
                async with Tail(bootstrap, topics.decisions) as decisions:
                    worker_pids = []
                    for i, port in enumerate(http_ports):
                        command = worker_command(bootstrap, prefix, port, profile if i == 0 else None)
                        worker_pids.append(stack.enter_context(process(command, f"worker {i + 1}")).pid)
                    await wait_live(decisions, http_ports, {key_of(o) for o in warmup})
                    note(f"{workers} worker(s) live after {time.monotonic() - t0:.2f} s")
                    rate = await run_placements(producer, decisions, placements)
                    latencies, change_diffs, spent = await run_changes(
                        topics, producer, decisions, http_ports, n, changes, worker_pids, profiles
                    )
            payloads = [(str(r.key), r.value or b"") for r in placements]
            limit = await run_passthrough(bootstrap, prefix, payloads)
            # the bus alone carrying as many diff records as the largest change caused, the same
            # way; the best of BUS_PASSES (a single pass swings by half from one run to the next)
            bus_runs = [
                len(change_diffs)
                / await run_passthrough(bootstrap, f"{prefix}changes{i}.", change_diffs)
                * 1000
                for i in range(BUS_PASSES)
            ]
            bus_ms = min(bus_runs)
        finally:
            await producer.stop()
    note(f"placement records: {sum(len(v) for _, v in payloads) / n:.0f} B on average")
    emit(
        {
            "bench": "e2e",
            "run": f"placements-{n}x{CLUSTERS}" + ("-profiles" if profiles else ""),
            "placements_per_second": round(rate, 1),
            "bus_passthrough_per_second": round(limit, 1),
            "ratio": round(rate / limit, 3),
            "workers": workers,
        }
    )
    emit(
        {
            "bench": "e2e",
            "run": "cluster-change" + ("-profiles" if profiles else ""),
            "change_p50_ms": round(statistics.median(latencies), 1),
            "change_p99_ms": round(percentile(latencies, 99), 1),
            "bus_ms": round(bus_ms, 1),
            "change_p99_over_bus": round(percentile(latencies, 99) / bus_ms, 2),
            "workers": workers,
            "bus_ms_runs": [round(x, 1) for x in bus_runs],
            **cpu_figures(spent),
        }
    )


def cpu_figures(spent: Sequence[CpuSpent]) -> dict[str, object]:
    """Medians per change of the CPU the changes took (nothing where /proc could not tell)."""
    if not spent:
        return {}
    return {
        "worker_cpu_ms": round(statistics.median(c.workers_s for c in spent) * 1000),
        "machine_cpu_ms": round(statistics.median(c.machine_s for c in spent) * 1000),
        "cores_busy": round(statistics.median(c.cores_busy for c in spent), 2),
    }


def cli(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.e2e", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 placements and 5 changes")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="scheduler worker processes (default: one per core)",
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="run the first worker under cProfile, stats to FILE"
    )
    parser.add_argument(
        "--profiles", action="store_true", help="the clusters as ClusterProfiles instead of ManagedClusters"
    )
    parser.add_argument("--passthrough", nargs=4, metavar=("BOOTSTRAP", "SOURCE", "SINK", "GROUP"))
    args = parser.parse_args(argv)
    if args.passthrough:  # the child process of the bus-limit run
        asyncio.run(passthrough(*args.passthrough))
        return
    asyncio.run(main(args.quick, args.workers, args.profile, args.profiles))


if __name__ == "__main__":
    cli()
