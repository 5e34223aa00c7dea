"""`make load`: a burst of cluster updates through the embedded broker into one scheduler worker process.

The fleet: `--clusters` clusters in 50 cluster sets (ExclusiveClusterSetLabel), one namespace per set
binding it, `--placements` placements spread over the namespaces, each selecting by labels (tier and
region), so every decision depends on the current labels only. The burst: `--updates` relabellings of
random clusters, produced as fast as the producer goes (zstd batches), while the worker runs.

Figures, one JSON line each on stdout (progress on stderr):

* `load-setup`: the fleet published and decided;
* `load-burst`: updates, seconds to produce them, the produce rate;
* `load-drain`: seconds from the end of the burst until the worker has consumed every update, has
  nothing left to evaluate and no more diffs arrive; the worker's peak RSS (VmHWM) and the broker's;
  diffs published; mismatches against a from-scratch evaluation of the final fleet (must be 0).

    python -m tests.load.scheduler                       # 1,000,000 updates, 5,000 x 5,000
    python -m tests.load.scheduler --updates 100000      # a shorter run
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import urllib.error
from pathlib import Path
from typing import Any

import orjson

from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import create_topics, unique_topic_prefix
from tests.faults.fleet import expected_decisions
from tests.faults.outputs import diverging
from tests.faults.processes import WorkerProcess, peak_rss_mb

G = "cluster.open-cluster-management.io"
SETS = 50
TIERS = ("gold", "silver", "bronze")
REGIONS = ("r0", "r1", "r2", "r3", "r4")
CHUNK = 20_000


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()


def note(text: str) -> None:
    sys.stderr.write(f"[load] {text}\n")
    sys.stderr.flush()


class Fleet:
    def __init__(self, clusters: int, placements: int, seed: int = 11) -> None:
        self.rng = random.Random(seed)
        self.n_clusters = clusters
        self.n_placements = placements
        self.clusters: dict[str, dict[str, Any]] = {}
        self.static: list[dict[str, Any]] = []
        self.revision = 0

    def cluster(self, i: int) -> dict[str, Any]:
        self.revision += 1
        rng = self.rng
        return {
            "apiVersion": f"{G}/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": f"cluster-{i:05d}",
                "labels": {
                    f"{G}/clusterset": f"set-{i % SETS:02d}",
                    "tier": rng.choice(TIERS),
                    "region": rng.choice(REGIONS),
                },
                "annotations": {"fleetplace.io/revision": str(self.revision)},
            },
            "spec": {"hubAcceptsClient": True},
            "status": {
                "allocatable": {"cpu": "16", "memory": "64Gi"},
                "capacity": {"cpu": "16", "memory": "64Gi"},
            },
        }

    def placement(self, j: int) -> dict[str, Any]:
        namespace = f"ns-{j % SETS:02d}"
        if j % 2:
            predicate = {"labelSelector": {"matchLabels": {"tier": TIERS[j % 3]}}}
        else:
            regions = [REGIONS[j % 5], REGIONS[(j + 2) % 5]]
            predicate = {
                "labelSelector": {
                    "matchExpressions": [{"key": "region", "operator": "In", "values": regions}]
                }
            }
        return {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": namespace, "name": f"p-{j:05d}"},
            "spec": {"predicates": [{"requiredClusterSelector": predicate}]},
        }

    def initial(self, topics: Topics) -> list[OutgoingRecord]:
        out = []
        for s in range(SETS):
            name, ns = f"set-{s:02d}", f"ns-{s:02d}"
            cset = {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": name}}
            binding = {
                "apiVersion": f"{G}/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"namespace": ns, "name": name},
                "spec": {"clusterSet": name},
            }
            self.static += [cset, binding]
            out.append(OutgoingRecord(topics.clustersets, name, encode_json(cset)))
            out.append(OutgoingRecord(topics.clustersetbindings, f"{ns}/{name}", encode_json(binding)))
        for i in range(self.n_clusters):
            c = self.cluster(i)
            self.clusters[c["metadata"]["name"]] = c
            out.append(OutgoingRecord(topics.clusters, c["metadata"]["name"], encode_json(c)))
        for j in range(self.n_placements):
            p = self.placement(j)
            self.static.append(p)
            key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            out.append(OutgoingRecord(topics.placements, key, encode_json(p)))
        return out

    def updates(self, topics: Topics, n: int) -> list[OutgoingRecord]:
        out = []
        for _ in range(n):
            c = self.cluster(self.rng.randrange(self.n_clusters))
            self.clusters[c["metadata"]["name"]] = c
            out.append(OutgoingRecord(topics.clusters, c["metadata"]["name"], encode_json(c)))
        return out

    def objects(self) -> list[dict[str, Any]]:
        return [*self.static, *self.clusters.values()]

    def placement_keys(self) -> set[str]:
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            for p in self.static
            if p["kind"] == "Placement"
        }


async def latest_decisions(bootstrap: str, topics: Topics) -> tuple[dict[str, dict[str, Any]], int]:
    latest: dict[str, dict[str, Any]] = {}
    count = 0
    async with BroadcastReader(bootstrap, [topics.decisions], max_records=50_000) as reader:
        for r in await reader.read_to_end(timeout=600):
            value = orjson.loads(r.value) if r.value is not None else None
            count += 1
            if value is not None and (r.key not in latest or value["seq"] > latest[r.key or ""]["seq"]):
                latest[r.key or ""] = value
    return latest, count


def worker_metrics(worker: WorkerProcess) -> dict[str, float]:
    try:
        return worker.metrics(timeout=30)
    except (OSError, urllib.error.URLError):
        return {}


async def run(updates: int, clusters: int, placements: int, workdir: Path, drain_timeout: float) -> int:
    fleet = Fleet(clusters, placements)
    prefix = unique_topic_prefix("load")
    with EmbeddedBroker() as broker:
        topics, _ = await create_topics(broker.bootstrap, prefix)
        worker = WorkerProcess(broker.bootstrap, prefix, f"{prefix}scheduler", "load", workdir)
        worker.env["FLEETPLACE_LOG_LEVEL"] = "warning"
        worker.start()
        producer = make_producer(
            broker.bootstrap,
            linger_ms=20,
            max_batch_size=262144,
            compression_type="zstd",
            request_timeout_ms=120_000,
        )
        await start_client(producer)
        broker_rss = 0.0
        try:
            started = time.monotonic()
            initial = fleet.initial(topics)
            for i in range(0, len(initial), CHUNK):
                await send_all(producer, initial[i : i + CHUNK])
            keys = fleet.placement_keys()
            while True:
                m = worker_metrics(worker)
                if m.get("fleetplace_diffs_published_total", 0) >= len(keys):
                    break
                worker.check()
                if worker.unexpected_exits or time.monotonic() - started > drain_timeout:
                    raise SystemExit(f"setup did not finish: {worker.unexpected_exits} {m}")
                await asyncio.sleep(1)
            emit(
                {
                    "suite": "load",
                    "phase": "setup",
                    "clusters": clusters,
                    "placements": placements,
                    "seconds": round(time.monotonic() - started, 1),
                    "worker_rss_mb": round(peak_rss_mb(worker.pid), 1),
                }
            )

            burst_start = time.monotonic()
            sent = 0
            while sent < updates:
                n = min(CHUNK, updates - sent)
                await send_all(producer, fleet.updates(topics, n))
                sent += n
                worker.sample_rss()
                broker_rss = max(broker_rss, peak_rss_mb(broker.pid))
                if sent % 200_000 == 0:
                    note(f"{sent} updates sent")
            burst_s = time.monotonic() - burst_start
            emit(
                {
                    "suite": "load",
                    "phase": "burst",
                    "updates": updates,
                    "seconds": round(burst_s, 1),
                    "updates_per_s": round(updates / burst_s),
                }
            )

            total_clusters = clusters + updates
            burst_end = time.monotonic()
            consumed_at: float | None = None
            last_diffs, stable_since = -1.0, time.monotonic()
            while True:
                await asyncio.sleep(1)
                worker.sample_rss()
                broker_rss = max(broker_rss, peak_rss_mb(broker.pid))
                worker.check()
                if worker.unexpected_exits:
                    raise SystemExit(f"the worker exited: {worker.unexpected_exits}")
                m = worker_metrics(worker)
                consumed = m.get('fleetplace_records_consumed_total{topic="clusters"}', 0)
                diffs = m.get("fleetplace_diffs_published_total", 0)
                if (
                    consumed_at is None
                    and consumed >= total_clusters
                    and m.get("fleetplace_broadcast_lag_records", 1) == 0
                ):
                    consumed_at = time.monotonic()
                    note(f"consumed every update {consumed_at - burst_end:.1f} s after the burst")
                if diffs != last_diffs:
                    last_diffs, stable_since = diffs, time.monotonic()
                    note(f"consumed {consumed:.0f}/{total_clusters}, diffs {diffs:.0f}")
                if consumed_at is not None and time.monotonic() - stable_since >= 5:
                    break
                if time.monotonic() - burst_end > drain_timeout:
                    break
            drained_s = (
                max(stable_since, consumed_at) if consumed_at is not None else time.monotonic()
            ) - burst_end
            worker.sample_rss()
            broker_rss = max(broker_rss, peak_rss_mb(broker.pid))
            m = worker_metrics(worker)

            latest, records = await latest_decisions(broker.bootstrap, topics)
            check_start = time.monotonic()
            expected = expected_decisions(fleet.objects())
            wrong = diverging(latest, expected, keys)
            emit(
                {
                    "suite": "load",
                    "phase": "drain",
                    "updates": updates,
                    "clusters": clusters,
                    "placements": placements,
                    "drained": consumed_at is not None,
                    "consumed_s": None if consumed_at is None else round(consumed_at - burst_end, 1),
                    "drain_s": round(drained_s, 1),
                    "updates_per_s_end_to_end": round(updates / max(burst_s + drained_s, 1e-9)),
                    "worker_peak_rss_mb": round(worker.peak_rss_mb, 1),
                    "broker_peak_rss_mb": round(broker_rss, 1),
                    "evaluations": m.get("fleetplace_evaluations_total"),
                    "worker_stalls": m.get("fleetplace_stalls_total"),
                    "diffs": records,
                    "mismatches": len(wrong),
                    "expected_computed_s": round(time.monotonic() - check_start, 1),
                }
            )
            for line in wrong[:10]:
                note(line)
            return 0 if consumed_at is not None and not wrong else 1
        finally:
            await producer.stop()
            worker.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--updates", type=int, default=1_000_000)
    parser.add_argument("--clusters", type=int, default=5_000)
    parser.add_argument("--placements", type=int, default=5_000)
    parser.add_argument("--drain-timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fleetplace-load-") as tmp:
        code = asyncio.run(run(args.updates, args.clusters, args.placements, Path(tmp), args.drain_timeout))
    raise SystemExit(code)


if __name__ == "__main__":
    main()
