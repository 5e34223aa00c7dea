"""Kafka clients against the real embedded broker: round trips, caught-up detection, watermarks, dead letters."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest
from aiokafka import TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

from fleetplace.shared.bus.codec import DecodeLimits, decode_object, decode_record
from fleetplace.shared.bus.envelope import DeadLetter, Envelope, dead_letter, new_envelope
from fleetplace.shared.bus.errors import BusConfigError, BusConnectionError, DecodeError, TopicLayoutError
from fleetplace.shared.bus.kafka import (
    END_OFFSETS_FETCH,
    END_OFFSETS_STANDARD,
    BroadcastReader,
    Watermark,
    end_offsets_path,
    make_consumer,
    make_producer,
    poll,
    send,
    send_all,
    start_client,
    stop_with_leave,
    true_end_offsets,
)
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics, ensure_topics
from fleetplace.shared.testing import EXTERNAL_BOOTSTRAP_ENV, BrokerKind

pytestmark = pytest.mark.integration


async def _topics(broker: str, prefix: str, *names: str) -> Topics:
    topics = Topics(prefix)
    await ensure_topics(broker, topics, only=list(names))
    return topics


async def _produce_batches(broker: str, topic: str, sizes: list[int], partition: int = 0) -> None:
    """Each size becomes exactly one record batch on the wire."""
    producer = make_producer(broker)
    await producer.start()
    try:
        n = 0
        for size in sizes:
            batch = producer.create_batch()
            for _ in range(size):
                assert batch.append(key=b"k%d" % n, value=b'{"n":%d}' % n, timestamp=None) is not None
                n += 1
            batch.close()
            await (await producer.send_batch(batch, topic, partition=partition))
    finally:
        await producer.stop()


async def test_round_trip_keeps_keys_values_headers_and_tombstones(broker: str, topic_prefix: str) -> None:
    topics = await _topics(broker, topic_prefix, "clusters")
    envelope = new_envelope("io.fleetplace.clusters", "/test", resource_version=3)
    sent = [
        OutgoingRecord(
            topics.clusters,
            "cluster1",
            b'{"kind":"ManagedCluster"}',
            envelope.to_headers(),
            1_700_000_000_000,
        ),
        OutgoingRecord(topics.clusters, "cluster1", None, envelope.to_headers()),
        OutgoingRecord(topics.clusters, "ns/ünïcode", b"{}", (("dup", b"1"), ("dup", b""))),
    ]
    producer = make_producer(broker)
    await producer.start()
    try:
        delivered = await send_all(producer, sent)
    finally:
        await producer.stop()

    async with BroadcastReader(broker, [topics.clusters]) as reader:
        records = await reader.read_to_end()
    by_offset = {(r.partition, r.offset): r for r in records}
    got = [by_offset[(d.partition, d.offset)] for d in delivered]
    assert [(r.key, r.value, r.headers) for r in got] == [(s.key, s.value, s.headers) for s in sent]
    assert got[0].timestamp_ms == 1_700_000_000_000
    assert got[1].is_tombstone and decode_record(got[1]).is_tombstone
    assert Envelope.from_headers(got[0].headers) == envelope
    assert got[2].header("dup") == b""


async def test_send_all_packs_batches_on_the_default_partitioners_partitions(
    broker: str, topic_prefix: str
) -> None:
    """Thousands of records in batches: each lands where `producer.send` would have put it
    (co-partitioning depends on it), in order per key, with the offset send_all reported; a
    batch size smaller than the whole run makes it span several batches per partition."""
    topics = await _topics(broker, topic_prefix, "placements")
    keys = [f"ns{i % 7}/placement{i}" for i in range(60)]
    sent = [OutgoingRecord(topics.placements, keys[i % 60], f"{i:06d}".encode() * 40) for i in range(3000)]
    producer = make_producer(broker, max_batch_size=16384)
    await start_client(producer)
    try:
        delivered = await send_all(producer, sent)
        # the same keys one record at a time through aiokafka's own partitioner
        by_send = [await (await producer.send(topics.placements, value=b"x", key=k.encode())) for k in keys]
    finally:
        await producer.stop()
    expected_partition = {k: m.partition for k, m in zip(keys, by_send, strict=True)}
    assert len(set(expected_partition.values())) > 1
    assert [d.partition for d in delivered] == [expected_partition[str(r.key)] for r in sent]
    async with BroadcastReader(broker, [topics.placements]) as reader:
        records = await reader.read_to_end()
    by_offset = {(r.partition, r.offset): r for r in records}
    assert [
        (by_offset[(d.partition, d.offset)].key, by_offset[(d.partition, d.offset)].value) for d in delivered
    ] == [(r.key, r.value) for r in sent]
    for key in keys:  # per key, in the order given
        mine = [d.offset for d, r in zip(delivered, sent, strict=True) if r.key == key]
        assert mine == sorted(mine)


async def test_send_all_reports_a_record_too_large_for_any_batch(broker: str, topic_prefix: str) -> None:
    topics = await _topics(broker, topic_prefix, "clusters")
    producer = make_producer(broker, max_batch_size=16384, max_request_size=65536)
    await start_client(producer)
    try:
        small = OutgoingRecord(topics.clusters, "a", b"{}")
        with pytest.raises(MessageSizeTooLargeError):
            await send_all(producer, [small, OutgoingRecord(topics.clusters, "b", b"x" * 100_000)])
        # larger than a batch, smaller than a request; and a large one between two small ones
        sent = [
            small,
            OutgoingRecord(topics.clusters, "c", b"y" * 30_000),
            OutgoingRecord(topics.clusters, "a", b"z" * 64_000),
            OutgoingRecord(topics.clusters, "a", b"[]"),
        ]
        delivered = await send_all(producer, sent)
    finally:
        await producer.stop()
    async with BroadcastReader(broker, [topics.clusters]) as reader:
        records = {(r.partition, r.offset): r for r in await reader.read_to_end()}
    assert [records[(d.partition, d.offset)].value for d in delivered] == [r.value for r in sent]
    same_key = [d.offset for d, r in zip(delivered, sent, strict=True) if r.key == "a"]
    assert same_key == sorted(same_key)


async def test_a_header_with_a_null_value_reads_as_empty(broker: str, topic_prefix: str) -> None:
    """Kafka allows null header values; a reader must not fail on one (it reads as empty)."""
    topics = await _topics(broker, topic_prefix, "clusters")
    producer = make_producer(broker)
    await start_client(producer)
    try:
        await (await producer.send(topics.clusters, b"{}", key=b"c1", headers=[("a", None), ("b", b"x")]))
    finally:
        await producer.stop()
    async with BroadcastReader(broker, [topics.clusters]) as reader:
        (record,) = await reader.read_to_end()
    assert record.headers == (("a", b""), ("b", b"x"))


async def test_broadcast_reader_is_caught_up_only_after_every_record_of_multi_record_batches(
    broker: str, broker_kind: BrokerKind, topic_prefix: str
) -> None:
    topics = await _topics(broker, topic_prefix, "scores")
    await _produce_batches(broker, topics.scores, [10, 5, 3], partition=0)
    await _produce_batches(broker, topics.scores, [7], partition=1)

    if not os.environ.get(EXTERNAL_BOOTSTRAP_ENV):
        # The quirk this guards against: Tansu's ListOffsets LATEST is "base of the last batch + 1";
        # Apache Kafka's is the end, as the protocol says.
        consumer = make_consumer(broker)
        await consumer.start()
        try:
            standard = await consumer.end_offsets([TopicPartition(topics.scores, 0)])
        finally:
            await consumer.stop()
        if broker_kind == "apache":
            assert standard[TopicPartition(topics.scores, 0)] == 18
        else:
            assert standard[TopicPartition(topics.scores, 0)] < 18

    assert await true_end_offsets(broker, [(topics.scores, 0), (topics.scores, 1), (topics.scores, 2)]) == {
        (topics.scores, 0): 18,
        (topics.scores, 1): 7,
        (topics.scores, 2): 0,
    }

    # max_records=4 forces several polls per fetched batch.
    async with BroadcastReader(broker, [topics.scores], prefix=topic_prefix, max_records=4) as reader:
        assert not reader.initial_load_done
        records = await reader.read_to_end()
        assert reader.caught_up and reader.initial_load_done and reader.lag() == 0
        assert len(records) == 25
        assert [r.offset for r in records if r.partition == 0] == list(range(18))
        assert reader.watermark.inputs() == {"scores/0": 18, "scores/1": 7}


async def test_true_end_offsets_takes_the_path_the_broker_needs_and_both_give_the_true_end(
    broker: str, broker_kind: BrokerKind, topic_prefix: str
) -> None:
    topics = await _topics(broker, topic_prefix, "scores")
    # the first read of empty partitions proves nothing about ListOffsets: the path stays open
    # unless an earlier test of this process already probed these brokers
    before = end_offsets_path(broker)
    assert await true_end_offsets(broker, [(topics.scores, 0)]) == {(topics.scores, 0): 0}
    assert end_offsets_path(broker) == before

    # a batch of 10 then one of 5: ListOffsets on the embedded broker answers 11, the truth is 15
    await _produce_batches(broker, topics.scores, [10, 5], partition=0)
    first = await true_end_offsets(broker, [(topics.scores, 0), (topics.scores, 1)])
    assert first == {(topics.scores, 0): 15, (topics.scores, 1): 0}
    if not os.environ.get(EXTERNAL_BOOTSTRAP_ENV):
        expected = END_OFFSETS_STANDARD if broker_kind == "apache" else END_OFFSETS_FETCH
        assert end_offsets_path(broker) == expected

    # once decided, the path keeps giving the true end as records arrive in batches
    await _produce_batches(broker, topics.scores, [7, 3], partition=0)
    await _produce_batches(broker, topics.scores, [4], partition=1)
    assert await true_end_offsets(broker, [(topics.scores, 0), (topics.scores, 1)]) == {
        (topics.scores, 0): 25,
        (topics.scores, 1): 4,
    }


async def test_true_end_offsets_on_apache_kafka_stops_at_an_open_transaction(
    broker: str, broker_kind: BrokerKind, topic_prefix: str
) -> None:
    if broker_kind != "apache":
        pytest.skip("the embedded broker has no transactions")
    topics = await _topics(broker, topic_prefix, "scores")
    await _produce_batches(broker, topics.scores, [3], partition=0)
    producer = make_producer(broker, transactional_id=f"{topic_prefix}end-offsets")
    await producer.start()
    try:
        await producer.begin_transaction()
        await producer.send_and_wait(topics.scores, b"open", key=b"k", partition=0)
        # a read_committed reader can read no further than the open transaction's first record
        assert await true_end_offsets(broker, [(topics.scores, 0)]) == {(topics.scores, 0): 3}
        assert end_offsets_path(broker) == END_OFFSETS_STANDARD
        await producer.commit_transaction()
    finally:
        await producer.stop()
    # committed: the record and its commit marker are behind the end, once the coordinator has
    # written the marker (it does so after answering the commit)
    ends = {(topics.scores, 0): 3}
    for _ in range(100):
        ends = await true_end_offsets(broker, [(topics.scores, 0)])
        if ends != {(topics.scores, 0): 3}:
            break
        await asyncio.sleep(0.1)
    assert ends == {(topics.scores, 0): 5}


async def test_a_reader_at_the_end_of_committed_transactions_reports_no_lag(
    broker: str, broker_kind: BrokerKind, topic_prefix: str
) -> None:
    # each committed transaction ends with a marker that takes an offset no record carries: a
    # reader that has read everything is at the end, not one offset behind per partition
    if broker_kind != "apache":
        pytest.skip("the embedded broker has no transactions")
    topics = await _topics(broker, topic_prefix, "scores")
    producer = make_producer(broker, transactional_id=f"{topic_prefix}lag")
    await producer.start()
    try:
        for partition in (0, 1):
            await producer.begin_transaction()
            await producer.send_and_wait(topics.scores, b"v", key=b"k", partition=partition)
            await producer.commit_transaction()
    finally:
        await producer.stop()
    async with BroadcastReader(broker, [topics.scores], prefix=topic_prefix) as reader:
        records: list[Record] = []
        for _ in range(100):  # the markers are written after the commit is answered
            records += await reader.read_to_end()
            ends = await true_end_offsets(broker, [(topics.scores, 0), (topics.scores, 1)])
            if ends == {(topics.scores, 0): 2, (topics.scores, 1): 2} and reader.caught_up:
                break
            await asyncio.sleep(0.1)
        await reader.poll()  # a fresh Fetch: the readable ends include the markers
        assert len(records) == 2
        assert reader.watermark.inputs() == {"scores/0": 1, "scores/1": 1}  # after the last record
        assert reader.lag() == 0


async def test_broadcast_reader_iteration_announces_caught_up_then_follows_new_records(
    broker: str, topic_prefix: str
) -> None:
    topics = await _topics(broker, topic_prefix, "clusters", "taints")
    await _produce_batches(broker, topics.clusters, [6])
    seen: list[Record] = []
    marks: list[int] = []
    async with BroadcastReader(broker, [topics.clusters, topics.taints]) as reader:
        assert len(reader.partitions) == 6

        async def follow() -> None:
            async for batch in reader:
                seen.extend(batch.records)
                if batch.caught_up:
                    assert not batch.records
                    marks.append(len(seen))
                    if len(marks) == 2:
                        return

        task = asyncio.create_task(follow())
        await asyncio.wait_for(reader.wait_initial_load(), 10)
        await _produce_batches(broker, topics.taints, [4])
        await asyncio.wait_for(task, 10)
    assert marks == [6, 10]


async def test_broadcast_reader_refuses_missing_topics_instead_of_auto_creating(
    broker: str, topic_prefix: str
) -> None:
    with pytest.raises(TopicLayoutError, match="do not exist"):
        async with BroadcastReader(broker, [topic_prefix + "clusters"]):
            pass


async def test_hostile_record_goes_to_deadletter_with_its_original_bytes(
    broker: str, topic_prefix: str
) -> None:
    topics = await _topics(broker, topic_prefix, "scores", "deadletter")
    hostile = b'{"a":' * 200 + b"1" + b"}" * 200
    producer = make_producer(broker)
    await producer.start()
    try:
        await send(producer, OutgoingRecord(topics.scores, b"ns/\xffbad", b"{}"))
        await send(producer, OutgoingRecord(topics.scores, "ns/deep", hostile, (("x", b"y"),)))
        async with BroadcastReader(broker, [topics.scores]) as reader:
            inputs = await reader.read_to_end()
        errors = []
        for record in inputs:
            try:
                decode_record(record, DecodeLimits(max_depth=64))
            except DecodeError as exc:
                errors.append(exc.reason)
                await send(producer, dead_letter(record, exc.reason, topic=topics.deadletter, source="/test"))
    finally:
        await producer.stop()
    assert sorted(errors) == ["JSON nests deeper than 64 levels", "key is not UTF-8 at byte 3"]

    async with BroadcastReader(broker, [topics.deadletter]) as reader:
        letters = await reader.read_to_end()
    recovered = {}
    for letter in letters:
        body = decode_object(letter.value)
        assert body is not None
        dl = DeadLetter.from_value(body)
        assert letter.key_bytes == dl.record.key_bytes  # the dead letter is keyed by the original key
        recovered[dl.record.key_bytes] = dl
    assert recovered[b"ns/deep"].record.value == hostile
    assert recovered[b"ns/deep"].record.headers == (("x", b"y"),)
    assert recovered[b"ns/\xffbad"].record.value == b"{}"
    original = {r.key_bytes: r for r in inputs}
    assert {k: dl.record for k, dl in recovered.items()} == original


async def test_watermark_is_compact_and_parses_back() -> None:
    mark = Watermark("fp.")
    for offset in (0, 1, 2):
        mark.advance(Record("fp.clusters", 1, offset, "c", b"{}"))
    mark.advance(Record("fp.decisions", 11, 40, "ns/p", b"{}"))
    mark.set("fp.clusters", 1, 2)  # never moves backwards
    assert mark.inputs() == {"clusters/1": 3, "decisions/11": 41}
    assert mark.inputs(["fp.clusters"]) == {"clusters/1": 3}
    assert Watermark.parse(mark.inputs()) == {("clusters", 1): 3, ("decisions", 11): 41}


async def test_stop_with_leave_lets_a_successor_take_over_without_waiting_out_the_session(
    broker: str, broker_kind: BrokerKind, topic_prefix: str
) -> None:
    topics = await _topics(broker, topic_prefix, "applications")
    group = topic_prefix + "group"
    options: dict[str, Any] = {"group_id": group, "session_timeout_ms": 3000}
    first = make_consumer(broker, topics.applications, **options)
    await first.start()
    await poll(first, timeout_ms=100)
    deadline = time.monotonic() + 10
    while not first.assignment() and time.monotonic() < deadline:
        await poll(first, timeout_ms=100)
    assert first.assignment()
    # Tansu numbers group generations from 0, where aiokafka sends no LeaveGroup: stop_with_leave
    # sends it then. Apache Kafka starts at 1, so there aiokafka's own stop leaves the group.
    generation = first._coordinator.generation
    if not os.environ.get(EXTERNAL_BOOTSTRAP_ENV):
        assert generation >= 1 if broker_kind == "apache" else generation == 0
    await stop_with_leave(first, group, broker)

    # The clock starts before the successor's start(): its join (and so, often, its assignment)
    # happens inside it. After a leave the group rebalances at once and this broker only holds
    # the join for half a session (~2 s here); after a member that just vanished, the coordinator
    # first waits out its 3 s session (~7 s in all here). 4.5 s tells the two apart with room for
    # a slow machine either way.
    started = time.monotonic()
    second = make_consumer(broker, topics.applications, **options)
    await second.start()
    try:
        while not second.assignment():
            await poll(second, timeout_ms=100)
        assert time.monotonic() - started < 4.5, "the successor waited for the first member's session"
    finally:
        await stop_with_leave(second, group, broker)


async def test_stop_with_leave_is_bounded_when_the_broker_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a broker that accepts connections and never answers (paused, overloaded): the leave is given
    # LEAVE_TIMEOUT_S and the stop goes on, where a client alone waits out its 40 s request timeout
    import fleetplace.shared.bus.kafka as kafka_module

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # reads every request, answers none, until the client hangs up
        writer.close()

    class _Coordinator:
        generation = 0
        member_id = "member-1"

    class _Consumer:
        _coordinator = _Coordinator()
        stopped = False

        async def stop(self) -> None:
            self.stopped = True

    monkeypatch.setattr(kafka_module, "LEAVE_TIMEOUT_S", 1.0)
    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    consumer = _Consumer()
    try:
        started = time.monotonic()
        await stop_with_leave(consumer, "g", f"127.0.0.1:{port}")
        took = time.monotonic() - started
    finally:
        server.close()
        await server.wait_closed()
    assert consumer.stopped
    assert 1.0 <= took < 5.0


async def test_latest_offset_reset_is_refused() -> None:
    with pytest.raises(BusConfigError, match="latest"):
        make_consumer("127.0.0.1:1", auto_offset_reset="latest")


async def test_unreachable_broker_is_a_connection_error() -> None:
    from fleetplace.shared.bus.broker import free_port

    producer = make_producer(f"127.0.0.1:{free_port()}", request_timeout_ms=2000)
    with pytest.raises(BusConnectionError, match="cannot reach Kafka"):
        await start_client(producer)
