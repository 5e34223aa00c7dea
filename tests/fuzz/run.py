"""Hostile records into a real scheduler worker process, good placements interleaved; count what comes out.

    report = await fuzz_worker(total=100_000, workdir=tmp_path)
    assert report.ok, report.explain()

Checks: the worker process never exits and keeps answering /healthz; every bad record is in
`deadletter` (matched by topic/partition/offset, each with a reason) and nothing else is; every good
placement sent between them is decided as `GOOD_DECISION`. Also `python -m tests.fuzz.run [N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.testing import create_topics, unique_topic_prefix
from tests.faults.outputs import Outputs
from tests.faults.processes import WorkerProcess
from tests.fuzz.hostile import GOOD_DECISION, GOOD_NAMESPACE, Hostile, stream

CHUNK = 2000


@dataclass
class FuzzReport:
    total: int = 0
    bad: int = 0
    deadletters: int = 0
    good_placements: int = 0
    decided_good: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    send_s: float = 0.0
    drain_s: float = 0.0
    healthz_max_s: float = 0.0
    worker_exits: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    worker_peak_rss_mb: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems and not self.worker_exits

    @property
    def rate(self) -> float:
        return self.total / max(self.send_s + self.drain_s, 1e-9)

    def figures(self) -> dict[str, Any]:
        return {
            "suite": "fuzz",
            "records": self.total,
            "bad_sent": self.bad,
            "deadletters_received": self.deadletters,
            "good_placements_sent": self.good_placements,
            "good_placements_decided": self.decided_good,
            "hostile_valid_sent": self.total - self.bad - self.categories["good"],
            "categories": dict(sorted(self.categories.items())),
            "send_s": round(self.send_s, 1),
            "drain_s": round(self.drain_s, 1),
            "records_per_s": round(self.rate),
            "healthz_max_latency_s": round(self.healthz_max_s, 2),
            "worker_exits": len(self.worker_exits),
            "worker_peak_rss_mb": round(self.worker_peak_rss_mb, 1),
            "problems": len(self.problems),
        }

    def explain(self) -> str:
        return "\n".join([orjson.dumps(self.figures()).decode(), *self.problems[:30]])


async def _healthz(port: int) -> float:
    started = time.monotonic()
    try:
        await asyncio.to_thread(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30).close()
        )
    except OSError:
        return float("inf")
    return time.monotonic() - started


async def fuzz_worker(
    total: int,
    workdir: Path,
    *,
    seed: int = 5,
    good_every: int = 10,
    expensive_cel: int = 1,
    max_big: int = 20,
    drain_timeout: float = 300.0,
) -> FuzzReport:
    report = FuzzReport()
    rng = random.Random(seed)
    items: list[Hostile] = list(
        stream(rng, total, good_every=good_every, expensive_cel_count=expensive_cel, max_big=max_big)
    )
    report.total = len(items)
    report.categories = Counter(h.what for h in items)
    report.bad = sum(1 for h in items if h.bad)
    good_keys = {h.key.decode() for h in items if h.what == "good" and h.topic == "placements" and h.key}
    good_keys = {k for k in good_keys if k.startswith(GOOD_NAMESPACE + "/")}
    report.good_placements = len(good_keys)

    prefix = unique_topic_prefix("fuzz")
    with EmbeddedBroker() as broker:
        topics, _ = await create_topics(broker.bootstrap, prefix)
        worker = WorkerProcess(broker.bootstrap, prefix, f"{prefix}scheduler", "fuzz", workdir, clock="topic")
        worker.env["FLEETPLACE_LOG_LEVEL"] = "error"  # one warning per dead letter is a lot of log
        worker.start()
        producer = make_producer(
            broker.bootstrap, linger_ms=20, max_batch_size=262144, max_request_size=8 * 1024 * 1024
        )
        await start_client(producer)
        bad_at: dict[tuple[str, int, int], Hostile] = {}
        probes: list[float] = []
        try:
            async with Outputs(broker.bootstrap, topics) as outputs:

                async def probe() -> None:
                    while True:
                        probes.append(await _healthz(worker.http_port))
                        worker.sample_rss()
                        await asyncio.sleep(0.5)

                await asyncio.sleep(1.0)  # the worker starts its HTTP server
                prober = asyncio.create_task(probe())
                started = time.monotonic()
                for i in range(0, len(items), CHUNK):
                    chunk = items[i : i + CHUNK]
                    records = [OutgoingRecord(topics.name(h.topic), h.key, h.value) for h in chunk]
                    for h, d in zip(chunk, await send_all(producer, records), strict=True):
                        if h.bad:
                            bad_at[(topics.unprefixed(d.topic), d.partition, d.offset)] = h
                    worker.check()
                report.send_s = time.monotonic() - started
                sent_at = time.monotonic()

                def decided() -> set[str]:
                    latest = outputs.latest()
                    return {k for k in good_keys if k in latest and latest[k]["decisions"] == GOOD_DECISION}

                while time.monotonic() - sent_at < drain_timeout:
                    if len(outputs.deadletters) >= len(bad_at) and len(decided()) == len(good_keys):
                        break
                    if worker.process is not None and worker.process.poll() is not None:
                        break
                    await asyncio.sleep(0.2)
                report.drain_s = time.monotonic() - sent_at
                await asyncio.sleep(1.0)  # anything extra (a dead letter too many) shows up too
                prober.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prober
                report.healthz_max_s = max(probes, default=0.0)
                worker.check()
                report.worker_exits = list(worker.unexpected_exits)
                report.deadletters = len(outputs.deadletters)
                report.decided_good = len(decided())
                report.problems = _problems(outputs, bad_at, good_keys, decided())
        finally:
            await producer.stop()
            worker.sample_rss()
            report.worker_peak_rss_mb = worker.peak_rss_mb
            worker.stop()
    if report.worker_exits:
        report.problems += [line[:300] for line in list(worker.log_lines())[-10:]]
    return report


def _problems(
    outputs: Outputs,
    bad_at: dict[tuple[str, int, int], Hostile],
    good_keys: set[str],
    decided: set[str],
) -> list[str]:
    problems = []
    seen: set[tuple[str, int, int]] = set()
    for letter in outputs.deadletters:
        value = letter.value or {}
        where = (
            _unprefix(str(value.get("topic", ""))),
            int(value.get("partition", -1)),
            int(value.get("offset", -1)),
        )
        if where in seen:
            problems.append(f"dead-lettered twice: {where}")
        seen.add(where)
        if where not in bad_at:
            problems.append(f"a good record was dead-lettered: {where}: {value.get('error')}")
        elif not value.get("error"):
            problems.append(f"dead letter without a reason: {where}")
    for where in sorted(set(bad_at) - seen)[:20]:
        h = bad_at[where]
        problems.append(
            f"bad record not dead-lettered: {where} {h.what} key={h.key!r} value={(h.value or b'')[:120]!r}"
        )
    for key in sorted(good_keys - decided)[:20]:
        problems.append(f"good placement not decided as {GOOD_DECISION}: {key}")
    return problems


def _unprefix(topic: str) -> str:
    # prefixes are `fuzz<hex>.`; topic names have no dot
    return topic.rpartition(".")[2]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fuzz a scheduler worker with hostile records.")
    parser.add_argument("records", nargs="?", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fleetplace-fuzz-") as tmp:
        report = asyncio.run(
            fuzz_worker(
                args.records, Path(tmp), seed=args.seed, expensive_cel=5, max_big=60, drain_timeout=900
            )
        )
    sys.stdout.write(orjson.dumps(report.figures()).decode() + "\n")
    if not report.ok:
        sys.stderr.write(report.explain() + "\n")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
