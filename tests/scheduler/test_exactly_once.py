"""The scheduler on Apache Kafka in exactly-once mode: each evaluation's records and the placement
offsets it read commit in one transaction per `placements` partition."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from fleetplace.shared.bus.kafka import make_admin, partition_for_key, start_client
from fleetplace.shared.bus.topics import Topics, ensure_topics
from tests.apache_fixture import apache_kafka_bootstrap as apache_kafka_bootstrap
from tests.scheduler.harness import Bus, base_fleet, cluster, placement, running, settings_for

pytestmark = [pytest.mark.integration, pytest.mark.apache]

PARTITIONS = 3


async def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = make_admin(bootstrap)
    await start_client(admin)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        offsets = await admin.list_consumer_group_offsets(group, partitions=tps)
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}


async def test_decisions_and_the_placement_offsets_they_read_commit_together(
    apache_kafka_bootstrap: str, topic_prefix: str
) -> None:
    bootstrap = apache_kafka_bootstrap
    topics = Topics(topic_prefix)
    await ensure_topics(bootstrap, topics, work_partitions=PARTITIONS)
    settings = settings_for(bootstrap, topics.prefix)
    names = [f"p{i}" for i in range(6)]
    async with Bus(bootstrap, topics) as bus, running(settings) as worker:
        sink = worker.runtime.sink
        assert sink is not None and sink.delivery.mode == "exactly-once", sink and sink.delivery
        await bus.publish(*base_fleet(), cluster("c1"), cluster("c2"), *(placement("ns1", n) for n in names))
        await bus.wait_for(lambda: len(bus.latest()) == len(names), what="every placement decided")
        await bus.publish(cluster("c3"))
        await bus.wait_for(
            lambda: all(d["decisions"] == ["c1", "c2", "c3"] for d in bus.latest().values()),
            what="c3 added everywhere",
        )
    # one placement record per placement (written outside transactions), so the offset committed
    # for a partition is the count of placements on it
    per_partition: dict[int, int] = {}
    for name in names:
        p = partition_for_key(f"ns1/{name}", PARTITIONS)
        per_partition[p] = per_partition.get(p, 0) + 1
    committed = await _committed(bootstrap, settings.scheduler_group_id, topics.placements)
    assert committed == per_partition
    # read_committed: each diff exactly once, seq contiguous per placement
    seqs: dict[str, list[int]] = {}
    for d in bus.decisions:
        seqs.setdefault(d["placement"], []).append(d["seq"])
    # (a placement can be decided before every cluster is read, so the count of diffs varies)
    assert seqs.keys() == {f"ns1/{n}" for n in names}
    assert all(s == list(range(1, len(s) + 1)) and len(s) >= 2 for s in seqs.values()), seqs
