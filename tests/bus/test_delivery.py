"""Output delivery: the probe that picks exactly-once or at-least-once, and the fence that keeps an
instance that lost its partition from making anything visible to a `read_committed` reader."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from fleetplace.shared.bus.delivery import (
    Delivery,
    Output,
    OutputFencedError,
    TransactionalSink,
    make_sink,
    probe_delivery,
    transactional_id,
)
from fleetplace.shared.bus.kafka import BroadcastReader, make_admin, make_consumer, start_client, stop_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics, ensure_topics
from fleetplace.shared.settings import KafkaSettings
from tests.apache_fixture import apache_kafka_bootstrap as apache_kafka_bootstrap

pytestmark = pytest.mark.integration

EXACTLY_ONCE = Delivery(transactions=True, idempotence=True, reason="test")


def test_capability_settings_take_auto_true_false_and_booleans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_TRANSACTIONS", raising=False)
    monkeypatch.delenv("KAFKA_ENABLE_IDEMPOTENCE", raising=False)
    settings = KafkaSettings(bootstrap_servers="127.0.0.1:9")
    assert (settings.transactions, settings.enable_idempotence) == ("auto", "auto")
    monkeypatch.setenv("KAFKA_TRANSACTIONS", "False")
    monkeypatch.setenv("KAFKA_ENABLE_IDEMPOTENCE", "yes")
    settings = KafkaSettings(bootstrap_servers="127.0.0.1:9")
    assert (settings.transactions, settings.enable_idempotence) == ("false", "true")
    assert KafkaSettings(bootstrap_servers="x:1", transactions=True).transactions == "true"
    monkeypatch.setenv("KAFKA_TRANSACTIONS", "sometimes")
    with pytest.raises(Exception, match="KAFKA_TRANSACTIONS"):
        KafkaSettings(bootstrap_servers="127.0.0.1:9")


def test_transactional_ids_name_the_group_and_the_input_partition() -> None:
    assert (
        transactional_id("fleetplace-scheduler", ("p.placements", 3)) == "fleetplace-scheduler.p.placements.3"
    )


async def test_auto_falls_back_to_at_least_once_on_the_embedded_broker(embedded_broker: str) -> None:
    """The embedded broker grants no producer ids: the probe says so and the plain path runs."""
    delivery = await probe_delivery(KafkaSettings(bootstrap_servers=embedded_broker), probe_id="test.probe")
    assert (delivery.transactions, delivery.idempotence, delivery.mode) == (False, False, "at-least-once")
    assert "idempotent producer refused" in delivery.reason


@pytest.mark.apache
async def test_auto_finds_transactions_on_apache_kafka(apache_kafka_bootstrap: str) -> None:
    delivery = await probe_delivery(
        KafkaSettings(bootstrap_servers=apache_kafka_bootstrap), probe_id="t.probe"
    )
    assert (delivery.transactions, delivery.idempotence, delivery.mode) == (True, True, "exactly-once")


@pytest.mark.apache
async def test_false_keeps_the_plain_path_on_apache_kafka(apache_kafka_bootstrap: str) -> None:
    kafka = KafkaSettings(bootstrap_servers=apache_kafka_bootstrap, transactions="false")
    sink = await make_sink(kafka, group_id="t-plain")
    try:
        assert not sink.delivery.transactions
        assert sink.delivery.idempotence  # still probed: Apache Kafka grants producer ids
        assert "KAFKA_TRANSACTIONS=false" in sink.delivery.reason
    finally:
        await sink.stop()


async def _committed_values(bootstrap: str, topic: str) -> list[bytes]:
    async with BroadcastReader(bootstrap, [topic]) as reader:
        return [r.value or b"" for r in await reader.read_to_end(timeout=30)]


@pytest.mark.apache
async def test_a_fenced_instance_makes_nothing_visible_and_commits_no_offset(
    apache_kafka_bootstrap: str, topic_prefix: str
) -> None:
    """Two instances own the same input partition one after the other: the second one's producer
    fences the first, whose next transaction fails; a read_committed reader sees the first
    instance's records from before the fence and the second's, never the zombie's, and the group's
    committed offset is the second instance's."""
    topics = Topics(topic_prefix)
    await ensure_topics(apache_kafka_bootstrap, topics, only=["placements", "decisions"])
    kafka = KafkaSettings(bootstrap_servers=apache_kafka_bootstrap)
    group = f"{topic_prefix}group"
    source = (topics.placements, 0)

    def output(value: bytes, offset: int) -> Output:
        record = OutgoingRecord(topics.decisions, "ns/p", value, ())
        return Output([record], source=source, offsets={source: offset})

    first = TransactionalSink(kafka, EXACTLY_ONCE, group)
    second = TransactionalSink(kafka, EXACTLY_ONCE, group)
    await first.start()
    await second.start()
    try:
        await first.own([source])
        await first.publish([output(b"first", 5)])
        await second.own([source])  # the rebalance gave the partition to the second instance
        with pytest.raises(OutputFencedError) as fenced:
            await first.publish([output(b"zombie", 9)])
        assert fenced.value.partitions == [source]
        assert first.owned == []  # a fenced producer is closed: the partition is not ours any more
        await second.publish([output(b"second", 7)])
    finally:
        await first.stop()
        await second.stop()
    assert await _committed_values(apache_kafka_bootstrap, topics.decisions) == [b"first", b"second"]
    admin = make_admin(apache_kafka_bootstrap)
    await start_client(admin)
    try:
        offsets = await admin.list_consumer_group_offsets(group, partitions=[TopicPartition(*source)])
    finally:
        await admin.close()
    assert offsets[TopicPartition(*source)].offset == 7


@pytest.mark.apache
async def test_an_aborted_transaction_is_invisible_to_every_reader(
    apache_kafka_bootstrap: str, topic_prefix: str
) -> None:
    """The readers' side of the fence: records of a transaction that never commits are skipped by
    every consumer the product makes (read_committed), and reading still reaches its end."""
    topics = Topics(topic_prefix)
    await ensure_topics(apache_kafka_bootstrap, topics, only=["decisions"])
    kafka = KafkaSettings(bootstrap_servers=apache_kafka_bootstrap)
    sink = TransactionalSink(kafka, EXACTLY_ONCE, f"{topic_prefix}g")
    source = ("input", 0)
    await sink.start()
    try:
        await sink.own([source])
        producer = sink._owned[source]
        await producer.begin_transaction()
        await producer.send_and_wait(topics.decisions, b"aborted", key=b"k", partition=0)
        await producer.abort_transaction()
        await sink.publish([Output([OutgoingRecord(topics.decisions, "k", b"kept", ())], source=source)])
    finally:
        await sink.stop()
    assert await _committed_values(apache_kafka_bootstrap, topics.decisions) == [b"kept"]
    consumer = make_consumer(apache_kafka_bootstrap)
    await start_client(consumer)
    try:
        assert consumer._fetcher._isolation_level == 1  # aiokafka's READ_COMMITTED
    finally:
        await stop_client(consumer)
