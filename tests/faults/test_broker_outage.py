"""A worker whose broker goes away and comes back, as a real process against a real broker.

While the broker is gone the worker is not ready (`/readyz` 503, `fleetplace_broker_connected` 0)
and its log backs off to a line per reconnect attempt; when the broker is back on the same address
the worker is ready again and decides again without a restart; SIGTERM then stops it with status
0 and no traceback. The broker keeps its data on S3 (moto) across the restart, as Apache Kafka
keeps it on disk; a memory-backed broker would come back empty.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.testing import create_topics
from tests.faults.processes import MotoS3, WorkerProcess
from tests.proc import readyz
from tests.scheduler.harness import TOPIC_OF, base_fleet, cluster, key_of, placement

pytestmark = [pytest.mark.integration, pytest.mark.faults]

STORAGE = "s3://tansu/"


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)
    return time.monotonic() - started


async def publish(bootstrap: str, prefix: str, *objects: dict[str, Any]) -> None:
    producer = make_producer(bootstrap)
    await start_client(producer)
    try:
        await send_all(
            producer,
            [OutgoingRecord(f"{prefix}{TOPIC_OF[o['kind']]}", key_of(o), encode_json(o)) for o in objects],
        )
    finally:
        await producer.stop()


async def decided(bootstrap: str, prefix: str) -> dict[str, list[str]]:
    """The last published decision of every placement."""
    async with BroadcastReader(bootstrap, [f"{prefix}decisions"]) as reader:
        records = await reader.read_to_end(timeout=30)
    latest: dict[str, dict[str, Any]] = {}
    for record in records:
        diff = decode_object(record.value)
        if diff is not None and diff["seq"] > latest.get(diff["placement"], {"seq": 0})["seq"]:
            latest[diff["placement"]] = diff
    return {key: list(diff["decisions"]) for key, diff in latest.items()}


async def wait_decided(
    bootstrap: str, prefix: str, key: str, clusters: list[str], timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while (await decided(bootstrap, prefix)).get(key) != clusters:
        if time.monotonic() > deadline:
            raise AssertionError(f"{key} never decided {clusters}: {await decided(bootstrap, prefix)}")
        await asyncio.sleep(0.5)


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[MotoS3]:
    with MotoS3(tmp_path / "moto.log") as server:
        yield server


@pytest.mark.timeout(300)
async def test_a_worker_whose_broker_goes_is_not_ready_logs_little_recovers_and_stops_with_0(
    tmp_path: Path, moto: MotoS3
) -> None:
    prefix = "outage."
    broker = EmbeddedBroker(storage=STORAGE, env=moto.broker_env(), stop_timeout_s=30).start()
    worker = WorkerProcess(broker.bootstrap, prefix, f"{prefix}scheduler", "w", tmp_path)
    try:
        await create_topics(broker.bootstrap, prefix)
        await publish(
            broker.bootstrap, prefix, *base_fleet(), cluster("c1"), cluster("c2"), placement("ns1", "before")
        )
        worker.start()
        wait_until(lambda: readyz(worker.http_port) == 200, 60, "the worker to be ready")
        await wait_decided(broker.bootstrap, prefix, "ns1/before", ["c1", "c2"])
        assert worker.metrics()["fleetplace_broker_connected"] == 1

        # the broker goes (stopped by its PID)
        port = broker.port
        lines_before = len(list(worker.log_lines()))
        broker.stop()
        gone = time.monotonic()
        took = wait_until(lambda: readyz(worker.http_port) == 503, 10, "/readyz 503 without a broker")
        assert took < 5
        assert worker.metrics()["fleetplace_broker_connected"] == 0
        time.sleep(max(0.0, 10 - (time.monotonic() - gone)))
        outage = list(worker.log_lines())[lines_before:]
        seconds = time.monotonic() - gone
        assert len(outage) <= 2 * seconds, "\n".join(outage)  # was ~50 lines a second
        attempts = [line for line in outage if '"attempt"' in line]
        assert attempts and len(attempts) <= seconds  # at most one line per reconnect attempt
        assert readyz(worker.http_port) == 503

        # the broker comes back on the same address, with its data
        broker = EmbeddedBroker(port=port, storage=STORAGE, env=moto.broker_env(), stop_timeout_s=30).start()
        wait_until(lambda: readyz(worker.http_port) == 200, 60, "/readyz 200 after the broker is back")
        assert worker.metrics()["fleetplace_broker_connected"] == 1
        assert any("broker connection restored" in line for line in worker.log_lines())
        await publish(broker.bootstrap, prefix, placement("ns1", "after", numberOfClusters=1))
        await wait_decided(broker.bootstrap, prefix, "ns1/after", ["c1"], timeout=90)

        status = worker.stop()
        log = "\n".join(worker.log_lines())
        assert status == 0, log[-3000:]
        assert "Traceback" not in log and "CancelledError" not in log
    finally:
        worker.stop()
        broker.stop()
