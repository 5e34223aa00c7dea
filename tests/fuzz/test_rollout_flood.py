"""One deployer stuck in a loop: the same report, copied many times, into a real rollout worker
process. The first copy is evaluated once and moves the rollout; the copies after it cost no
evaluation and no diff, and are counted as `unchanged` ignored reports. The worker then still
acts on a new report at once.

The short flood (5,000 copies) is part of `make test`; `make fuzz` sends 100,000 (`-m slow`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import orjson
import pytest

from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics
from tests.faults.processes import WorkerProcess
from tests.rollout_worker.builders import CANARY, placement_decisions, report, rollout_object
from tests.rollout_worker.harness import RolloutBus

pytestmark = [pytest.mark.integration]

GROUPS = [("canary", ["c1"]), ("wave", ["c2", "c3"]), ("rest", ["c4", "c5"])]
NOW = "2026-01-01T00:02:00Z"
KEY = "apps/web"


async def _until(check: object, worker: WorkerProcess, what: str, timeout: float = 120.0) -> dict[str, float]:
    """Poll the worker's metrics until `check(samples)` holds."""
    assert callable(check)
    deadline = time.monotonic() + timeout
    while True:
        worker.check()
        assert not worker.unexpected_exits, list(worker.log_lines())[-10:]
        samples = await asyncio.to_thread(worker.metrics)
        if check(samples):
            return samples
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {samples}")
        await asyncio.sleep(0.2)


def _status_consumed(samples: dict[str, float]) -> float:
    return sum(
        v
        for k, v in samples.items()
        if k.startswith("fleetplace_records_consumed_total") and "rollout-status" in k
    )


async def flood(broker: str, topics: Topics, workdir: Path, copies: int) -> dict[str, object]:
    group = f"{topics.prefix}rollout"
    worker = WorkerProcess(broker, topics.prefix, group, "flood", workdir, clock="topic", kind="rollout")
    worker.start()
    producer = make_producer(broker, linger_ms=20, max_batch_size=262144)
    await start_client(producer)
    try:
        async with RolloutBus(broker, topics) as bus:
            await bus.set_clock(NOW, group)
            await bus.send("placement-decisions", "apps/web", placement_decisions("apps/web", GROUPS))
            await bus.send("rollouts", KEY, rollout_object(KEY, strategy=CANARY))
            await bus.wait_for(lambda: bus.state.get(KEY) is not None, timeout=60, what="the first answer")
            await bus.report(f"{KEY}/c1", report("Progressing", at="2026-01-01T00:01:00Z"))
            before = await _until(
                lambda s: _status_consumed(s) == 1 and s["fleetplace_rollout_diffs_published_total"] == 2,
                worker,
                "the first report's diff",
            )
            await bus.wait_for(lambda: (bus.last(KEY) or {}).get("seq") == 2, what="the diff read back")
            first = bus.last(KEY)
            assert first is not None and first["trigger"]["kind"] == "status"
            assert first["nextRecheckAt"] == "2026-01-01T00:11:00Z"  # the canary's deadline

            copy = OutgoingRecord(
                topics.rollout_status,
                f"{KEY}/c1",
                orjson.dumps(report("Progressing", at="2026-01-01T00:01:00Z")),
                partition_key=KEY,
            )
            started = time.monotonic()
            for i in range(0, copies, 5000):
                await send_all(producer, [copy] * min(5000, copies - i))
            after = await _until(
                lambda s: _status_consumed(s) == 1 + copies, worker, f"{copies} copies consumed", timeout=600
            )
            elapsed = time.monotonic() - started
            evaluations = (
                after["fleetplace_rollout_evaluations_total"] - before["fleetplace_rollout_evaluations_total"]
            )
            diffs = (
                after["fleetplace_rollout_diffs_published_total"]
                - before["fleetplace_rollout_diffs_published_total"]
            )
            ignored = after['fleetplace_rollout_reports_ignored_total{reason="unchanged"}']
            assert evaluations == 0, f"{evaluations} evaluations for {copies} identical reports"
            assert diffs == 0 and bus.last(KEY) == first
            assert ignored == copies

            # still acting on the next real report at once: the canary succeeded
            await bus.report(f"{KEY}/c1", report("Succeeded", at="2026-01-01T00:01:30Z"))
            await bus.wait_for(
                lambda: (bus.last(KEY) or {}).get("seq", 0) > first["seq"], timeout=60, what="the next diff"
            )
            assert (bus.last(KEY) or {})["nextRecheckAt"] == "2026-01-01T00:06:30Z"  # the soak's end
            worker.sample_rss()
            return {
                "suite": "fuzz-rollout-flood",
                "copies": copies,
                "evaluations_after_first": int(evaluations),
                "diffs_after_first": int(diffs),
                "ignored_unchanged": int(ignored),
                "consumed_s": round(elapsed, 1),
                "worker_peak_rss_mb": round(worker.peak_rss_mb, 1),
            }
    finally:
        await producer.stop()
        worker.stop()


@pytest.mark.timeout(180)
async def test_five_thousand_identical_reports_cost_no_evaluation_after_the_first(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    figures = await flood(broker, topics, tmp_path, 5000)
    sys.stdout.write(orjson.dumps(figures).decode() + "\n")


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_one_hundred_thousand_identical_reports_cost_no_evaluation_after_the_first(
    broker: str, topics: Topics, tmp_path: Path
) -> None:
    figures = await flood(broker, topics, tmp_path, 100_000)
    sys.stdout.write(orjson.dumps(figures).decode() + "\n")
