"""`make bench-rollout`: deployer reports streamed through a broker and one rollout worker.

Runs: `status-stream-1000x1000` (1,000 rollouts over placements of 1,000 clusters in 10 decision
groups; 100,000 reports; reports/s until the worker has turned the last one into a diff, against
the bus's own pass-through rate) and `status-to-diff` (one report on an idle worker until its
diff is readable). `--quick` runs a tenth of the size.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid

from fleetplace.shared.bus.broker import free_port
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import rollout_of
from fleetplace.shared.testing import create_topics, running_broker
from tests.bench.e2e import Tail, emit, note, percentile, process, run_passthrough
from tests.rollout_worker.builders import placement_decisions, rollout_object

GROUPS = 10
STRATEGY = {"type": "All"}
# One status change at a time on an idle worker; enough samples for a meaningful p99.
LATENCY_SAMPLES = 200


def worker_command(bootstrap: str, prefix: str) -> list[str]:
    return [
        sys.executable, "-m", "fleetplace.services.cli", "worker", "rollout",
        "--bootstrap", bootstrap, "--prefix", prefix, "--group", f"{prefix}rollout",
        "--http-port", str(free_port()),
    ]  # fmt: skip


def report(revision: str, status: str) -> bytes:
    return encode_json({"revision": revision, "status": status, "lastTransitionTime": "2026-01-01T00:00:00Z"})


async def main(rollouts: int, clusters: int, reports: int) -> None:
    with running_broker() as bootstrap:
        prefix = f"b{uuid.uuid4().hex[:8]}."
        topics, _ = await create_topics(bootstrap, prefix)
        per_group = clusters // GROUPS
        groups = [(f"g{g}", [f"c{g * per_group + i:05d}" for i in range(per_group)]) for g in range(GROUPS)]
        names = [c for _, cs in groups for c in cs]
        producer = make_producer(bootstrap, linger_ms=20, max_batch_size=262144)
        await start_client(producer)
        # a latency sample's report is sent on its own: no batching delay in front of it
        single = make_producer(bootstrap, linger_ms=0)
        await start_client(single)
        keys = [f"ns{i % 10}/r{i:04d}" for i in range(rollouts)]
        inputs = []
        for key in keys:
            placement = f"{key.split('/')[0]}/{key.split('/')[1]}p"
            inputs.append(
                OutgoingRecord(
                    topics.placement_decisions, placement, encode_json(placement_decisions(placement, groups))
                )
            )
            obj = rollout_object(key, strategy=STRATEGY, placement=placement.split("/")[1])
            inputs.append(OutgoingRecord(topics.rollouts, key, encode_json(obj)))
        per_rollout = reports // rollouts
        stream = [
            OutgoingRecord(topics.rollout_status, f"{key}/{c}", report("v1", "Succeeded"), partition_key=key)
            for i in range(per_rollout)
            for key in keys
            for c in (names[i],)
        ]
        try:
            async with Tail(bootstrap, topics.rollout_state) as state:
                with process(worker_command(bootstrap, prefix), "rollout worker"):
                    await send_all(producer, inputs)
                    await state.wait(
                        lambda: len({a.record.key for a in state.arrivals}) >= rollouts, 600, "start"
                    )
                    note(f"{rollouts} rollouts started")
                    last_clusters = names[per_rollout - 1]
                    done: set[str] = set()
                    read = 0

                    def finished() -> bool:
                        nonlocal read
                        for a in state.arrivals[read:]:
                            if (
                                a.record.value
                                and f'"clusterName":"{last_clusters}"'.encode() not in a.record.value
                            ):
                                done.add(str(a.record.key))
                        read = len(state.arrivals)
                        return len(done) >= rollouts

                    t0 = time.monotonic()
                    await send_all(producer, stream)
                    await state.wait(finished, 1200, "every report turned into a diff")
                    rate = len(stream) / (time.monotonic() - t0)
                    samples = []
                    for i in range(LATENCY_SAMPLES):
                        # each round over the rollouts flips the last cluster's status, so every
                        # report changes its rollout's answer
                        key = keys[i % len(keys)]
                        status = ("Failed", "Progressing")[(i // len(keys)) % 2]
                        before = len(state.arrivals)
                        t1 = time.monotonic()
                        await send_all(
                            single,
                            [
                                OutgoingRecord(
                                    topics.rollout_status,
                                    f"{key}/{names[-1]}",
                                    report("v1", status),
                                    partition_key=rollout_of(key),
                                )
                            ],
                        )
                        await state.wait(
                            lambda k=key, b=before: any(a.record.key == k for a in state.arrivals[b:]),
                            60,
                            "latency",
                        )
                        samples.append(
                            (next(a.at for a in state.arrivals[before:] if a.record.key == key) - t1) * 1000
                        )
                        await asyncio.sleep(0.1)
            passthrough = await run_passthrough(
                bootstrap, prefix, [(r.key, r.value) for r in stream if isinstance(r.key, str) and r.value]
            )  # type: ignore[misc]
        finally:
            await producer.stop()
            await single.stop()
        emit(
            {
                "bench": "rollout",
                "run": f"status-stream-{rollouts}x{clusters}",
                "updates_per_second": round(rate, 1),
                "bus_passthrough_per_second": round(passthrough, 1),
                "ratio": round(rate / passthrough, 3),
            }
        )
        emit(
            {
                "bench": "rollout",
                "run": "status-to-diff",
                "p50_ms": round(percentile(samples, 50), 1),
                "p99_ms": round(percentile(samples, 99), 1),
            }
        )


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    args = parser.parse_args()
    if args.quick:
        asyncio.run(main(100, 1000, 10_000))
    else:
        asyncio.run(main(1000, 1000, 100_000))


if __name__ == "__main__":
    cli()
