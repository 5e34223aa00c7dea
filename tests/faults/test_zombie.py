"""A zombie on Apache Kafka: a scheduler process is paused (SIGSTOP) until the group has given its
partitions to another instance, which publishes the next decisions; then it is woken (SIGCONT).
The other instance's transactional producers fenced it when they started, so nothing the woken
process writes is visible to a `read_committed` reader: each placement's seqs run 1, 2 with no
repeat, seq 2 is the other instance's, and the woken process's records after the pause are only
those a `read_uncommitted` reader can see (aborted ones), if it wrote any."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from fleetplace.shared.bus.envelope import H_RESOURCEVERSION, H_SOURCE
from fleetplace.shared.bus.kafka import (
    BroadcastReader,
    make_consumer,
    partitions_of,
    start_client,
    stop_client,
    to_record,
)
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, ensure_topics
from tests.apache_fixture import apache_kafka_bootstrap as apache_kafka_bootstrap
from tests.faults.processes import WorkerProcess
from tests.scheduler.harness import Bus, base_fleet, cluster, placement

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.apache]

PLACEMENTS = [f"p{i}" for i in range(6)]
GOLD = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]


async def _until(check: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


def _sample(worker: WorkerProcess, name: str) -> float:
    try:
        return worker.metrics().get(name, 0.0)
    except OSError:
        return 0.0


async def _decisions(bootstrap: str, topic: str, *, committed: bool) -> list[Record]:
    if committed:
        async with BroadcastReader(bootstrap, [topic]) as reader:
            return await reader.read_to_end(timeout=30)
    consumer = make_consumer(bootstrap, isolation_level="read_uncommitted")
    await start_client(consumer)
    try:
        tps = [TopicPartition(t, p) for t, p in await partitions_of(consumer, [topic])]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)  # Apache Kafka's ListOffsets LATEST is right
        records: list[Record] = []
        while True:
            behind = [tp for tp in tps if await consumer.position(tp) < ends[tp]]
            if not behind:
                return records
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                records += [to_record(m) for m in batch]
    finally:
        await stop_client(consumer)


def _source(record: Record) -> str:
    return dict(record.headers)[H_SOURCE].decode()


def _stopped(worker: WorkerProcess) -> bool:
    """The process is in state T (stopped by a signal)."""
    try:
        stat = Path(f"/proc/{worker.pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] == "T"


def _events(worker: WorkerProcess, words: str) -> list[str]:
    return [
        json.loads(line)["event"] for line in worker.log_lines() if line.startswith("{") and words in line
    ]


@pytest.mark.timeout(300)
async def test_a_woken_zombie_writes_nothing_a_read_committed_reader_sees(
    apache_kafka_bootstrap: str, topic_prefix: str, tmp_path: Path
) -> None:
    """The zombie stops itself between computing its first decisions and publishing them (a
    failpoint: shared/failpoints.py), so when it wakes its first act is that publish."""
    bootstrap = apache_kafka_bootstrap
    topics = Topics(topic_prefix)
    await ensure_topics(bootstrap, topics, work_partitions=2)
    group = f"{topic_prefix}scheduler"
    stop_before_publish = {"FLEETPLACE_FAILPOINT": "scheduler.before-publish@1:stop"}
    zombie = WorkerProcess(bootstrap, topics.prefix, group, "zombie", tmp_path, env=stop_before_publish)
    survivor = WorkerProcess(bootstrap, topics.prefix, group, "survivor", tmp_path)
    async with Bus(bootstrap, topics) as bus:
        await bus.publish(
            *base_fleet(),
            *(cluster(f"c{i}", {"tier": "gold"}) for i in range(1, 4)),
            *(placement("ns1", name, predicates=GOLD) for name in PLACEMENTS),
        )
        try:
            zombie.start()
            await _until(lambda: _stopped(zombie), "the zombie stopping before it publishes")
            paused_at = time.time()
            survivor.start()
            owned = "fleetplace_placements_owned"
            await _until(
                lambda: _sample(survivor, owned) == len(PLACEMENTS), "the survivor owning every placement"
            )
            await bus.wait_for(
                lambda: len(bus.latest()) == len(PLACEMENTS), timeout=60, what="the survivor's decisions"
            )
            zombie.resume()
            resumed_at = time.time()
            await _until(lambda: bool(_events(zombie, "fenced")), "the zombie's publish being fenced")
            # the woken instance rejoins the group: from then on it is a member again, not a zombie
            assigned = "fleetplace_partitions_assigned_timestamp_seconds"
            await _until(lambda: _sample(zombie, assigned) > resumed_at, "the woken instance rejoining")
            await _until(
                lambda: _sample(zombie, "fleetplace_owned_caught_up_timestamp_seconds") > resumed_at,
                "the woken instance reading its partitions again",
            )
            await bus.publish(cluster("c4", {"tier": "gold"}))  # work for both members now
            await bus.wait_for(
                lambda: all(d["seq"] == 2 for d in bus.latest().values()), timeout=60, what="seq 2"
            )
        finally:
            zombie.stop()
            survivor.stop()

    committed = await _decisions(bootstrap, topics.decisions, committed=True)
    everything = await _decisions(bootstrap, topics.decisions, committed=False)
    seqs: dict[str, list[int]] = {}
    for r in committed:
        seqs.setdefault(str(r.key), []).append(int(dict(r.headers)[H_RESOURCEVERSION]))
    assert seqs == {f"ns1/{name}": [1, 2] for name in PLACEMENTS}, seqs  # no repeat, no gap
    first = {str(r.key): _source(r) for r in committed if dict(r.headers)[H_RESOURCEVERSION] == b"1"}
    assert set(first.values()) == {"fleetplace/survivor"}, first  # the zombie's seq 1 never showed
    visible = {(r.partition, r.offset) for r in committed}
    unseen = [r for r in everything if (r.partition, r.offset) not in visible]
    assert all(_source(r) == "fleetplace/zombie" for r in unseen), unseen
    print(
        json.dumps(
            {
                "scenario": "zombie",
                "paused_s": round(resumed_at - paused_at, 1),
                "decisions_visible": len(committed),
                "zombie_records_written_and_aborted": len(unseen),
                "zombie_log": _events(zombie, "fenced"),
            }
        )
    )
