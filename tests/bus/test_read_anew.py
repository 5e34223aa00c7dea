"""A broadcast partition that the consumer stops fetching is read anew, on the real brokers.

The consumer's own state is what stalls here: once the consumer has heard of new records (its
high watermark moved), the partition is paused inside it behind the reader's back, so the records
it reported are never handed out, which is what a stuck partition looks like from the reader. A seek does not lift such a pause, so the reader goes
on to its second means, a new consumer at the same positions, and reads the partition to its end:
every record once, none twice.
"""

from __future__ import annotations

import asyncio

import pytest
import structlog.testing
from aiokafka import TopicPartition

from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, start_client
from fleetplace.shared.bus.topics import Topics, ensure_topics

pytestmark = pytest.mark.integration


async def _send(broker: str, topic: str, partition: int, keys: range) -> None:
    """The records in one batch: one fetch hears of all of them (a consumer holding records it
    fetched asks for no more of that partition until they are polled)."""
    producer = make_producer(broker)
    await start_client(producer)
    try:
        batch = producer.create_batch()
        for n in keys:
            assert batch.append(key=b"k%d" % n, value=b'{"n":%d}' % n, timestamp=None) is not None
        batch.close()
        await (await producer.send_batch(batch, topic, partition=partition))
    finally:
        await producer.stop()


async def _heard_of(reader: BroadcastReader, tp: TopicPartition, end: int) -> None:
    """Until the consumer's background fetch has reported the high watermark `end` (the records
    it fetched wait in its buffer for the next poll)."""
    async with asyncio.timeout(30):
        while reader._consumer.highwater(tp) != end:
            await asyncio.sleep(0.02)


async def test_a_partition_the_consumer_stopped_fetching_is_read_on_a_new_consumer(
    broker: str, topic_prefix: str
) -> None:
    topics = Topics(topic_prefix)
    await ensure_topics(broker, topics, only=["clusters"])
    await _send(broker, topics.clusters, 0, range(3))
    async with BroadcastReader(broker, [topics.clusters]) as reader:
        first = await reader.read_to_end()
        assert sorted(r.offset for r in first) == [0, 1, 2]
        tp = TopicPartition(topics.clusters, 0)
        await _send(broker, topics.clusters, 0, range(3, 8))
        await _heard_of(reader, tp, 8)
        reader._consumer.pause(tp)  # stalled behind the reader's back
        stalled = reader._consumer
        with structlog.testing.capture_logs() as logs:
            later = await reader.read_to_end(timeout=90)
        assert reader._consumer is not stalled
        assert not reader.held_up
    assert sorted(r.offset for r in later) == [3, 4, 5, 6, 7]
    assert sorted(r.key for r in later) == [f"k{n}" for n in range(3, 8)]
    events = [e["event"] for e in logs if e["log_level"] == "warning"]
    assert events == [
        "broadcast input cannot be read to its end; held up until it is",
        "stuck broadcast partitions fetched anew from their positions",
        "stuck broadcast partitions read on a new consumer",
    ]
    (held,) = [e for e in logs if e["event"].startswith("broadcast input cannot")]
    # position and high watermark (then the last stable offset, which Tansu does not report)
    assert held["offsets"][f"{topics.clusters}/0"][:2] == (3, 8)


async def test_a_partition_paused_through_the_reader_is_left_alone(broker: str, topic_prefix: str) -> None:
    """A reader that wants only a prefix of a partition pauses it (the auditor does): that is
    not a stall, and no new consumer is made for it."""
    topics = Topics(topic_prefix)
    await ensure_topics(broker, topics, only=["clusters"])
    await _send(broker, topics.clusters, 0, range(2))
    async with BroadcastReader(broker, [topics.clusters]) as reader:
        await reader.read_to_end()
        await _send(broker, topics.clusters, 0, range(2, 4))
        await _heard_of(reader, TopicPartition(topics.clusters, 0), 4)
        reader.pause([(topics.clusters, 0)])
        consumer = reader._consumer
        with structlog.testing.capture_logs() as logs:
            for _ in range(80):  # 8 s of polls: longer than the 20 polls and 5 s of a stuck partition
                batch = await reader.poll()
                assert batch.records == ()
        assert reader._consumer is consumer
        assert reader.stuck() == [(topics.clusters, 0)]  # held up, as a paused prefix reader is
    assert not [e for e in logs if "anew" in e["event"] or "new consumer" in e["event"]]
