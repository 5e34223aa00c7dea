"""The queue placer SIGKILLed exactly between publishing its results and committing the offsets of
the applications they answer (the `queues.before-commit` failpoint), then restarted.

The kill is shown to have landed in that window: the group's committed offsets cover fewer
applications than have placements on `app-placements`. After the restart every application has
exactly one placement, in the queue its rule gives: the re-delivered applications are recognised
as placed (the worker reads `app-placements` before it takes any application) and not placed again.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter

import pytest
from aiokafka import TopicPartition

from fleetplace.shared.bus.kafka import make_consumer, partitions_of, start_client
from fleetplace.shared.bus.topics import Topics
from tests.proc import stop_process
from tests.queue_worker.test_worker import USER_RULE, Bus, app, partition, start_worker

pytestmark = [pytest.mark.integration, pytest.mark.faults]

BATCHES = 6
PER_BATCH = 40
KILL_AT = 3  # the third publish-then-commit round


AT_LEAST_ONCE = {"KAFKA_TRANSACTIONS": "false"}


async def committed_total(broker: str, topics: Topics) -> int:
    consumer = make_consumer(broker, group_id=f"{topics.prefix}queues")
    await start_client(consumer)
    try:
        total = 0
        for topic, p in await partitions_of(consumer, [topics.applications]):
            offset = await consumer.committed(TopicPartition(topic, p))
            total += offset or 0
        return total
    finally:
        await consumer.stop()


@pytest.mark.timeout(240)
async def test_queue_placer_killed_between_publishing_and_committing(broker: str, topics: Topics) -> None:
    apps = [app(f"app{i:03d}", f"user{i % 7}") for i in range(BATCHES * PER_BATCH)]
    async with Bus(broker, topics) as bus:
        await bus.config(partition(USER_RULE))
        # the at-least-once path, on both brokers: with transactions a kill before the commit
        # leaves nothing visible (tests/queue_worker/test_fenced.py), so there is nothing to repeat
        worker = start_worker(
            broker, topics, {**AT_LEAST_ONCE, "FLEETPLACE_FAILPOINT": f"queues.before-commit@{KILL_AT}"}
        )
        try:
            for b in range(BATCHES):
                batch = apps[b * PER_BATCH : (b + 1) * PER_BATCH]
                await bus.submit(*batch)
                if worker.poll() is None:  # one poll per batch while the worker lives
                    await bus.wait_for(
                        lambda batch=batch: (
                            worker.poll() is not None  # type: ignore[misc]
                            or all(a["applicationID"] in bus.by_app() for a in batch)
                        ),
                        f"batch {b}",
                        timeout=90,
                    )
            await asyncio.to_thread(worker.wait, 30)
            assert worker.returncode == -signal.SIGKILL, "the failpoint did not fire"
            await asyncio.sleep(1.0)  # the last placements published before the kill arrive
            placed_before_restart = len(bus.by_app())
            committed = await committed_total(broker, topics)
            # the kill landed after publishing and before committing
            assert committed < placed_before_restart <= len(apps)

            worker = start_worker(broker, topics, AT_LEAST_ONCE)
            await bus.wait_for(lambda: len(bus.by_app()) == len(apps), "every application placed", 150)
            await asyncio.sleep(1.5)  # a second placement of anything would arrive now
        finally:
            stop_process(worker)
        counts = Counter(p["applicationID"] for p in bus.placements)
        assert max(counts.values()) == 1, [a for a, n in counts.items() if n > 1][:5]
        placed = bus.by_app()
        assert all(placed[a["applicationID"]]["queue"] == f"root.{a['user']}" for a in apps)
        assert await committed_total(broker, topics) == len(apps)
