"""Copy a run's topics under another prefix, record for record, at the same partitions and offsets
(so `inputs` watermarks stay valid), optionally changing values on the way.

A copy cannot write a transaction's commit markers, which take offsets of their own: a run to be
copied publishes at least once (`at_least_once`), on Apache Kafka too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, start_client
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, ensure_topics
from fleetplace.shared.settings import Settings


def at_least_once(settings: Settings) -> Settings:
    """`settings` with transactions off, so that the run's offsets hold only records."""
    return settings.model_copy(update={"kafka": settings.kafka.model_copy(update={"transactions": "false"})})


async def read_all(broker: str, topics: Topics) -> list[Record]:
    async with BroadcastReader(broker, topics.names()) as reader:
        return await reader.read_to_end()


async def copy_topics(
    broker: str, source: str, target: str, change: Callable[[Record], bytes | None]
) -> None:
    """Every record of `source` into fresh topics under `target`: same partitions, same offsets."""
    await ensure_topics(broker, Topics(target))
    records = await read_all(broker, Topics(source))
    producer = make_producer(broker, linger_ms=20)
    await start_client(producer)
    try:
        by_partition: dict[tuple[str, int], list[Record]] = {}
        for r in records:
            by_partition.setdefault((r.topic, r.partition), []).append(r)
        for (topic, partition), rs in by_partition.items():
            futures = [
                await producer.send(
                    target + topic[len(source) :],
                    value=change(r),
                    key=r.key_bytes,
                    partition=partition,
                    headers=list(r.headers),
                )
                for r in sorted(rs, key=lambda r: r.offset)
            ]
            delivered = await asyncio.gather(*futures)
            assert [m.offset for m in delivered] == [r.offset for r in sorted(rs, key=lambda r: r.offset)]
    finally:
        await producer.stop()
