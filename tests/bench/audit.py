"""`make bench-audit`: how fast `fleetplace audit` verifies a history, beside only reading it.

The history (~100,000 records) is made offline by the worker's own processor (tests/auditor/
offline.py): a fleet of 500 clusters and 120 placements under steady churn — cluster status
heartbeats, AddOn score updates, label flips, taints coming and going, placement edits — with
the decisions the processor published, then written to the broker at the same partitions and
offsets a live worker would have left. Measured on the broker:

- read: every record of the audited topics consumed to the end (a BroadcastReader, nothing else);
- audit: `audit_topics`, what `fleetplace audit` runs: read the history and check every decision
  (decode, replay, recompute, compare), in stretches checked by one process per CPU
  (services/auditor/parallel.py).

Reads and audits are taken in turn, three of each, and the best of each is compared. Both rates
are history records per second; `ratio` = read rate / audit rate (target ≤ 3).
One JSON line: {"bench": "audit", "records", "verified_per_second", "read_per_second", "ratio", ...}.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from datetime import timedelta
from typing import Any

import orjson

from fleetplace.services.auditor.audit import audit_topics
from fleetplace.services.auditor.history import INPUT_TOPICS
from fleetplace.services.auditor.report import AuditReport
from fleetplace.shared import native
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import running_broker, unique_topic_prefix
from tests.auditor.offline import (
    ADDON,
    T0,
    UNREACHABLE,
    OfflineWorker,
    base_fleet,
    cluster,
    placement,
    score,
    write_to_broker,
)
from tests.bench.e2e import emit

RECORDS = 100_000
ROUNDS = 3  # plain reads and audits, taken in turn
CLUSTERS = 500
NAMESPACES = [f"team{i}" for i in range(5)]
REGIONS = [f"r{i}" for i in range(5)]
JOBS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _cluster(i: int, rng: random.Random, **labels: str) -> dict[str, Any]:
    base = {"region": REGIONS[i % len(REGIONS)], "tier": "gold" if i % 3 == 0 else "silver"}
    return cluster(f"cluster{i:04d}", {**base, **labels}, cpu=rng.randint(4, 64))


def _placements() -> list[dict[str, Any]]:
    out = []
    for i in range(120):
        ns = NAMESPACES[i % len(NAMESPACES)]
        kind = i % 4
        if kind == 0:  # a label selector
            region = REGIONS[i % len(REGIONS)]
            predicates = [
                {
                    "requiredClusterSelector": {
                        "labelSelector": {"matchLabels": {"region": region, "tier": "gold"}}
                    }
                }
            ]
            out.append(placement(ns, f"labels{i}", predicates=predicates))
        elif kind == 1:  # the top 5 by an AddOn score
            policy = {"mode": "Additive", "configurations": ADDON}
            out.append(placement(ns, f"scores{i}", numberOfClusters=5, prioritizerPolicy=policy))
        elif kind == 2:  # the 3 with most CPU
            cpu = [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 1}]
            out.append(
                placement(
                    ns,
                    f"cpu{i}",
                    numberOfClusters=3,
                    prioritizerPolicy={"mode": "Exact", "configurations": cpu},
                )
            )
        else:  # tolerating unreachability for 10 minutes
            tolerations = [{"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 600}]
            out.append(placement(ns, f"tolerant{i}", numberOfClusters=10, tolerations=tolerations))
    return out


def make_history(records: int = RECORDS, seed: int = 11, prefix: str = "bench.") -> OfflineWorker:
    rng = random.Random(seed)
    w = OfflineWorker(prefix=prefix, read_back=2)
    w.publish(*base_fleet(*NAMESPACES), *[_cluster(i, rng) for i in range(CLUSTERS)])
    w.publish(*[score(f"cluster{i:04d}", rng.randint(-100, 100)) for i in range(CLUSTERS)])
    placements = _placements()
    w.publish(*placements)
    now = T0
    w.step(now)
    tainted: set[int] = set()
    while len(w.log) < records:
        for _ in range(120):  # heartbeats: allocatable CPU moves
            w.publish(_cluster(rng.randrange(CLUSTERS), rng))
        for _ in range(60):  # AddOn scores move
            w.publish(score(f"cluster{rng.randrange(CLUSTERS):04d}", rng.randint(-100, 100)))
        for _ in range(4):  # labels flip
            w.publish(_cluster(rng.randrange(CLUSTERS), rng, tier=rng.choice(["gold", "silver"])))
        if rng.random() < 0.5:  # a taint comes or goes
            i = rng.randrange(CLUSTERS)
            if i in tainted:
                w.send("taints", f"cluster{i:04d}", None)
                tainted.discard(i)
            else:
                at = (now - timedelta(seconds=rng.randint(0, 900))).isoformat().replace("+00:00", "Z")
                w.send(
                    "taints",
                    f"cluster{i:04d}",
                    {"taints": [{"key": UNREACHABLE, "effect": "NoSelect", "timeAdded": at}]},
                )
                tainted.add(i)
        if rng.random() < 0.1:  # a placement edited
            edited = dict(rng.choice(placements))
            edited["metadata"] = {**edited["metadata"], "generation": edited["metadata"]["generation"] + 1}
            w.publish(edited)
        now += timedelta(seconds=5)
        w.step(now)
    w.drain(now)
    return w


async def _read_only(bootstrap: str, topics: Topics) -> int:
    names = [*topics.names(INPUT_TOPICS), topics.decisions]
    async with BroadcastReader(bootstrap, names, max_records=50_000) as reader:
        return len(await reader.read_to_end(timeout=120))


async def _prepare(bootstrap: str, worker: OfflineWorker) -> Topics:
    """The history on the broker, read once to warm the broker and the client."""
    topics = Topics(unique_topic_prefix("bench"))
    records = [
        Record(
            topics.prefix + r.topic.removeprefix(worker.topics.prefix),
            r.partition,
            r.offset,
            r.key,
            r.value,
            r.headers,
        )
        for r in worker.log
    ]
    await write_to_broker(bootstrap, topics.prefix, records)
    await _read_only(bootstrap, topics)
    return topics


def _audit_once(bootstrap: str, topics: Topics) -> tuple[AuditReport, tuple[float, float]]:
    """One `fleetplace audit` run: its report, its time and the time its read took."""
    read_at: list[float] = []
    t0 = time.perf_counter()
    _, report = audit_topics(
        bootstrap, topics, jobs=JOBS, reading=lambda done, total: read_at.append(time.perf_counter())
    )
    return report, (time.perf_counter() - t0, read_at[-1] - t0)


def _measure(bootstrap: str, worker: OfflineWorker) -> dict[str, Any]:
    """Plain reads and audits taken in turn, ROUNDS of each; the best of each is compared (the
    machine is shared: the least disturbed run of each is the closest to its cost)."""
    topics = asyncio.run(_prepare(bootstrap, worker))
    reads: list[float] = []
    audits: list[tuple[float, float]] = []  # (whole audit, of which reading)
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        read = asyncio.run(_read_only(bootstrap, topics))
        reads.append(time.perf_counter() - t0)
        report, timed = _audit_once(bootstrap, topics)
        audits.append(timed)
        if not report.ok or report.checked != len(worker.diffs):
            raise RuntimeError(f"the history does not audit clean: {orjson.dumps(report.to_json())[:2000]!r}")
    read_s = min(reads)
    audit_s, loaded_s = min(audits)
    return {
        "bench": "audit",
        "records": read,
        "decisions": report.checked,
        "verified_per_second": round(read / audit_s, 1),
        "read_per_second": round(read / read_s, 1),
        "ratio": round((read / read_s) / (read / audit_s), 2),
        "decisions_per_second": round(report.checked / audit_s, 1),
        "jobs": JOBS,
        "shared_runs": report.shared,
        "read_history_s": round(loaded_s, 3),
        "replay_and_compare_s": round(audit_s - loaded_s, 3),
        "read_s_runs": [round(t, 3) for t in reads],
        "audit_s_runs": [round(t, 3) for t, _ in audits],
        # the modules of shared/native.py running compiled (0: a pure Python build)
        "compiled_modules": len(native.compiled()),
    }


def main() -> None:
    t0 = time.perf_counter()
    worker = make_history()
    generated_s = time.perf_counter() - t0
    with running_broker() as bootstrap:
        line = _measure(bootstrap, worker)
    line["generate_s"] = round(generated_s, 1)
    emit(line)


if __name__ == "__main__":
    main()
