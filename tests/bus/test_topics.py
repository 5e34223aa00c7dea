"""The topic catalogue: design.md's table, partition counts, co-partitioning, idempotent creation."""

from __future__ import annotations

import pytest

from fleetplace.shared.bus.errors import TopicLayoutError
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import (
    CATALOGUE,
    TopicKind,
    Topics,
    TopicState,
    check_copartitioning,
    describe_catalogue,
    ensure_topics,
    partition_for_key,
    planned_partitions,
    rollout_partition,
    spec,
)

DESIGN_TABLE = {
    "clusters": TopicKind.STATE,
    "cluster-profiles": TopicKind.STATE,
    "taints": TopicKind.STATE,
    "scores": TopicKind.STATE,
    "clustersets": TopicKind.STATE,
    "clustersetbindings": TopicKind.STATE,
    "placements": TopicKind.STATE,
    "decisions": TopicKind.OUTPUT,
    "placement-decisions": TopicKind.OUTPUT,
    "sigmc-placement-decisions": TopicKind.OUTPUT,
    "queue-configs": TopicKind.STATE,
    "applications": TopicKind.EVENTS,
    "app-placements": TopicKind.OUTPUT,
    "deadletter": TopicKind.OUTPUT,
    "clock": TopicKind.CONTROL,
    "rollouts": TopicKind.STATE,
    "rollout-status": TopicKind.STATE,
    "rollout-decisions": TopicKind.OUTPUT,
    "rollout-state": TopicKind.OUTPUT,
    "score-sources": TopicKind.STATE,
    "score-source-status": TopicKind.OUTPUT,
}


def test_catalogue_is_the_design_table() -> None:
    assert {s.name: s.kind for s in CATALOGUE} == DESIGN_TABLE


def test_state_topics_are_compacted_and_the_decision_log_is_not() -> None:
    for s in CATALOGUE:
        if s.kind is TopicKind.STATE:
            assert s.config["cleanup.policy"] == "compact", s.name
    assert spec("decisions").config == {"cleanup.policy": "delete", "retention.ms": "-1"}
    assert spec("placement-decisions").config["cleanup.policy"] == "compact"


def test_placements_and_decisions_are_copartitioned_by_default_and_with_an_override() -> None:
    for override in (None, 5):
        planned = planned_partitions(override)
        assert planned["placements"] == planned["decisions"] == planned["placement-decisions"]
        check_copartitioning(planned)
    assert planned_partitions(5)["clusters"] == spec("clusters").partitions
    assert spec("clustersets").partitions < spec("placements").partitions


def test_unequal_copartitioned_counts_are_a_layout_error() -> None:
    with pytest.raises(TopicLayoutError, match="decisions=4, placement-decisions=12, placements=12"):
        check_copartitioning({"placements": 12, "decisions": 4, "placement-decisions": 12})


def test_prefixed_names() -> None:
    topics = Topics("acme.")
    assert topics.placements == topics.name("placements") == "acme.placements"
    assert topics.unprefixed("acme.placement-decisions") == "placement-decisions"
    with pytest.raises(KeyError, match="unknown topic"):
        topics.name("nope")


@pytest.mark.integration
async def test_create_is_idempotent_with_planned_partition_counts(broker: str, topic_prefix: str) -> None:
    topics = Topics(topic_prefix)
    before = await describe_catalogue(broker, topics)
    assert {s.state for s in before} == {TopicState.MISSING}

    first = await ensure_topics(broker, topics, work_partitions=6)
    assert {s.state for s in first} == {TopicState.CREATED}
    assert {s.spec.name: s.partitions for s in first} == planned_partitions(6)

    second = await ensure_topics(broker, topics, work_partitions=6)
    assert {s.state for s in second} == {TopicState.EXISTS}

    # Without a count, the existing placements topic sets the plan: a missing co-partitioned topic matches it.
    assert {s.state for s in await ensure_topics(broker, topics)} == {TopicState.EXISTS}

    # A different plan does not touch existing topics; it is reported.
    third = await ensure_topics(broker, topics, work_partitions=8)
    assert {s.spec.name for s in third if s.state is TopicState.MISMATCH} == {
        s.name for s in CATALOGUE if s.partitioned
    }


@pytest.mark.integration
async def test_same_key_lands_in_the_same_partition_of_placements_and_decisions(
    broker: str, topic_prefix: str
) -> None:
    topics = Topics(topic_prefix)
    await ensure_topics(broker, topics, only=["placements", "decisions"])
    keys = [f"ns{i % 7}/placement-{i}" for i in range(60)]
    producer = make_producer(broker)
    await producer.start()
    try:
        delivered = await send_all(
            producer,
            [OutgoingRecord(t, k, b"{}") for k in keys for t in (topics.placements, topics.decisions)],
        )
    finally:
        await producer.stop()
    by_topic: dict[str, dict[str, int]] = {}
    for key, d in zip([k for k in keys for _ in (0, 1)], delivered, strict=True):
        by_topic.setdefault(d.topic, {})[key] = d.partition
    assert by_topic[topics.placements] == by_topic[topics.decisions]
    n = spec("placements").partitions
    assert by_topic[topics.placements] == {k: partition_for_key(k, n) for k in keys}
    assert len(set(by_topic[topics.placements].values())) > 1

    async with BroadcastReader(broker, [topics.decisions]) as reader:
        read_back = await reader.read_to_end()
    assert {r.key: r.partition for r in read_back} == by_topic[topics.decisions]


@pytest.mark.integration
async def test_missing_copartitioned_topic_is_created_to_match_existing_placements(
    broker: str, topic_prefix: str
) -> None:
    topics = Topics(topic_prefix)
    await ensure_topics(broker, topics, only=["placements"], work_partitions=5)
    [decisions] = await ensure_topics(broker, topics, only=["decisions"])
    assert (decisions.state, decisions.partitions) == (TopicState.CREATED, 5)


def test_a_rollout_status_record_lands_on_its_rollouts_partition() -> None:
    for n in (1, 5, 12):
        for cluster in ("c1", "cluster-17", "x"):
            assert rollout_partition(f"apps/web/{cluster}", n) == rollout_partition("apps/web", n)
            assert rollout_partition("apps/web", n) == partition_for_key("apps/web", n)
    assert planned_partitions(5)["rollouts"] == planned_partitions(5)["rollout-status"] == 5
