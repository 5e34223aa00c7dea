"""Kafka clients from settings, and the offset helpers that work on Tansu and Apache Kafka alike.

Client settings follow kafka-local-broker.md: a short `fetch_max_wait_ms`
(Tansu re-checks a long poll late), a short session timeout (Tansu holds a
JoinGroup for sto/2), no idempotence or transactions unless asked for (Tansu rejects aiokafka's
InitProducerId v0; a worker probes, shared/bus/delivery.py), and never "latest" (ListOffsets
LATEST is wrong on Tansu). Every consumer reads `read_committed`: records of a transaction that
was aborted, or whose producer was fenced, are never seen (Tansu has no transactions, so there
it reads everything). The same settings are fine on Apache Kafka.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from aiokafka.helpers import create_ssl_context
from aiokafka.partitioner import murmur2
from aiokafka.protocol.group import LeaveGroupRequest

from fleetplace.shared.bus.errors import BusConfigError, BusConnectionError, TopicLayoutError
from fleetplace.shared.bus.records import Delivered, Headers, OutgoingRecord, Record, decode_key_lossless
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import KafkaSettings

log = get_logger("fleetplace.bus")

TP = tuple[str, int]
"""A (topic, partition) pair. aiokafka's TopicPartition is a NamedTuple, so the two compare equal."""

# Records above this go through `send()` one by one (its size check, a batch of their own).
LARGE_RECORD_BYTES = 64 * 1024

CONSUMER_DEFAULTS: Mapping[str, Any] = {
    "fetch_max_wait_ms": 100,
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "isolation_level": "read_committed",
}
PRODUCER_DEFAULTS: Mapping[str, Any] = {
    "acks": "all",
    "enable_idempotence": False,
    "linger_ms": 5,
}


def _as_settings(kafka: KafkaSettings | str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=kafka) if isinstance(kafka, str) else kafka


def client_options(kafka: KafkaSettings | str) -> dict[str, Any]:
    """Connection options shared by producer, consumer and admin client. Holds the plain SASL password:
    never log the result."""
    settings = _as_settings(kafka)
    if not settings.bootstrap_servers:
        raise BusConfigError("KAFKA_BOOTSTRAP_SERVERS is not set")
    options: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "client_id": settings.client_id,
        "security_protocol": settings.security_protocol,
    }
    if settings.uses_tls:
        try:
            options["ssl_context"] = create_ssl_context(
                cafile=settings.ssl_cafile, certfile=settings.ssl_certfile, keyfile=settings.ssl_keyfile
            )
        except (OSError, ValueError) as exc:
            raise BusConfigError(f"cannot build the TLS context from KAFKA_SSL_*: {exc}") from exc
    if settings.security_protocol.startswith("SASL_"):
        assert settings.sasl_password is not None
        options["sasl_mechanism"] = settings.sasl_mechanism
        options["sasl_plain_username"] = settings.sasl_username
        options["sasl_plain_password"] = settings.sasl_password.get_secret_value()
    return options


def make_producer(kafka: KafkaSettings | str, **overrides: Any) -> Any:
    """An unstarted AIOKafkaProducer with the recommended settings (murmur2 default partitioner);
    idempotent when `KAFKA_ENABLE_IDEMPOTENCE=true` (a worker resolves "auto" by probing the broker,
    shared/bus/delivery.py, and passes `enable_idempotence` itself)."""
    idempotence = {"enable_idempotence": True} if _as_settings(kafka).enable_idempotence == "true" else {}
    return AIOKafkaProducer(**{**client_options(kafka), **PRODUCER_DEFAULTS, **idempotence, **overrides})


def make_consumer(
    kafka: KafkaSettings | str, *topics: str, group_id: str | None = None, **overrides: Any
) -> Any:
    """An unstarted AIOKafkaConsumer with the recommended settings; offsets are not auto-committed."""
    options = {**client_options(kafka), **CONSUMER_DEFAULTS, "group_id": group_id, **overrides}
    if options.get("auto_offset_reset") == "latest":
        # Tansu's ListOffsets LATEST lands inside the last batch: never rely on it.
        raise BusConfigError('auto_offset_reset="latest" is not supported; seek explicitly instead')
    return AIOKafkaConsumer(*topics, **options)


def make_admin(kafka: KafkaSettings | str, **overrides: Any) -> Any:
    """An unstarted AIOKafkaAdminClient."""
    return AIOKafkaAdminClient(**{**client_options(kafka), **overrides})


async def start_client(client: Any) -> None:
    """Start a producer, consumer or admin client; BusConnectionError if the brokers cannot be reached."""
    try:
        await client.start()
    except KafkaError as exc:
        # A consumer or producer may hold open connections after a failed start.
        close = getattr(client, "stop", None) or getattr(client, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
        raise BusConnectionError(f"cannot reach Kafka: {exc}") from exc


# How long a seek waits for its ListOffsets before the metadata is refreshed (`seek_to_beginning`).
SEEK_METADATA_REFRESH_S = 2.0


async def seek_to_beginning(consumer: Any, *tps: Any) -> None:
    """`consumer.seek_to_beginning(*tps)`, done even right after a partition's leader moved.

    aiokafka (0.14) answers a ListOffsets that the former leader refuses (NOT_LEADER_FOR_PARTITION)
    by retrying it against the same node, without refreshing the metadata, until the periodic
    refresh (`metadata_max_age_ms`, five minutes); its seek gives up after `request_timeout_ms`
    with the partitions still unplaced. The Java client refreshes at once (KAFKA-9535). Here, a seek
    that has not finished after SEEK_METADATA_REFRESH_S refreshes the metadata and waits again.
    Partitions no longer assigned (a rebalance meanwhile) are left out."""
    assigned = consumer.assignment()
    tps = tuple(tp for tp in tps if tp in assigned)
    if not tps:
        return
    seek = asyncio.ensure_future(consumer.seek_to_beginning(*tps))
    try:
        while not seek.done():
            done, _ = await asyncio.wait({seek}, timeout=SEEK_METADATA_REFRESH_S)
            if not done:
                consumer._client.force_metadata_update()  # aiokafka's; no public refresh
        if not seek.result():  # aiokafka's own timeout, or the partitions were unassigned meanwhile
            await seek_to_beginning(consumer, *tps)
    finally:
        if not seek.done():
            seek.cancel()


def to_record(message: Any) -> Record:
    """aiokafka's ConsumerRecord (raw bytes, no deserializers) as a typed Record. Runs for every
    record a worker reads (thousands per fan-out), so the common case copies nothing."""
    return Record(
        message.topic,
        message.partition,
        message.offset,
        decode_key_lossless(message.key),
        message.value,
        _headers(message.headers),
        message.timestamp,
    )


def _headers(raw: Any) -> Headers:
    """Header values as bytes; Kafka allows a null value, which reads as empty."""
    for _, value in raw:
        if type(value) is not bytes:
            return tuple((name, b"" if value is None else bytes(value)) for name, value in raw)
    return raw if type(raw) is tuple else tuple(raw)


async def poll(consumer: Any, *, timeout_ms: int = 100, max_records: int | None = None) -> list[Record]:
    """One getmany(), flattened in (topic, partition, offset) order."""
    batches: dict[Any, list[Any]] = await consumer.getmany(timeout_ms=timeout_ms, max_records=max_records)
    records: list[Record] = []
    for tp in sorted(batches):
        records.extend(to_record(m) for m in batches[tp])
    return records


async def send(producer: Any, record: OutgoingRecord) -> Delivered:
    """Send one record and wait for the acknowledgement."""
    return (await send_all(producer, [record]))[0]


async def send_all(producer: Any, records: Iterable[OutgoingRecord]) -> list[Delivered]:
    """Send every record and wait for all acknowledgements; Delivered in the order given.

    Records are packed into batches per partition, in order, on the partition the producer's
    default partitioner picks (murmur2 of the key, or of `partition_key` when set, as in the Java
    client; a random one without a key): a fan-out publishes thousands of records at once, and
    queueing them one `send()` at a time costs about twice the client CPU. A record too large for an empty batch goes through
    `send()`, which reports why."""
    records = list(records)
    by_partition: dict[TP, list[int]] = {}
    choices: dict[str, list[int]] = {}
    for index, r in enumerate(records):
        if r.topic not in choices:
            choices[r.topic] = sorted(await producer.partitions_for(r.topic))
        options = choices[r.topic]
        key = r.key_bytes if r.partition_key is None else r.partition_key.encode("utf-8")
        partition = (
            options[partition_for_key(key, len(options))] if key is not None else random.choice(options)
        )
        by_partition.setdefault((r.topic, partition), []).append(index)
    pending: list[tuple[Any, TP, list[int]]] = []  # (future, partition, record indices in batch order)
    for (topic, partition), indices in by_partition.items():
        batch, members = producer.create_batch(), []
        for index in indices:
            record = records[index]
            small = _size(record) <= LARGE_RECORD_BYTES
            if small and _append(batch, record):
                members.append(index)
                continue
            if members:  # full, or a large record next: what is in hand goes first, in order
                future = await producer.send_batch(batch, topic, partition=partition)
                pending.append((future, (topic, partition), members))
                batch, members = producer.create_batch(), []
            if small:
                _append(batch, record)  # an empty batch takes any record
                members.append(index)
                continue
            # large: alone, through send(), which checks it against max_request_size
            future = await producer.send(
                topic,
                value=record.value,
                key=record.key_bytes,
                partition=partition,
                headers=list(record.headers),
                timestamp_ms=record.timestamp_ms,
            )
            pending.append((future, (topic, partition), [index]))
        if members:
            future = await producer.send_batch(batch, topic, partition=partition)
            pending.append((future, (topic, partition), members))
    delivered: dict[int, Delivered] = {}
    acknowledged = await asyncio.gather(*(future for future, _, _ in pending))
    for metadata, (_, (topic, partition), members) in zip(acknowledged, pending, strict=True):
        for j, index in enumerate(members):  # a batch's records take consecutive offsets
            delivered[index] = Delivered(topic=topic, partition=partition, offset=metadata.offset + j)
    return [delivered[i] for i in range(len(records))]


def _size(record: OutgoingRecord) -> int:
    key = record.key_bytes
    return (
        (len(key) if key is not None else 0)
        + (len(record.value) if record.value is not None else 0)
        + sum(len(name) + len(value) for name, value in record.headers)
    )


def _append(batch: Any, record: OutgoingRecord) -> bool:
    return (
        batch.append(
            key=record.key_bytes,
            value=record.value,
            timestamp=record.timestamp_ms,
            headers=list(record.headers),
        )
        is not None
    )


@functools.lru_cache(maxsize=1 << 16)
def partition_for_key(key: str | bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner (murmur2, as in the Java client) picks for `key`
    among `partitions` (kept per key: a worker publishes the same placement keys again and again)."""
    raw = key.encode("utf-8") if isinstance(key, str) else key
    return int(murmur2(raw) & 0x7FFFFFFF) % partitions


async def partitions_of(consumer: Any, topics: Iterable[str], timeout: float = 10.0) -> list[TP]:
    """Every partition of existing topics, without triggering auto-creation (Tansu creates any topic a
    Metadata request names, with 4 partitions).

    The partitions come from a fresh Metadata response for all topics (what `consumer.topics()`
    asks for, which creates nothing), not from the consumer's own cached metadata: on Apache Kafka
    that cache holds only the topics the consumer has asked about, so a topic created after its
    bootstrap is missing from it. A topic listed without partitions yet (just created, its leaders
    not yet elected) is asked about again, for up to `timeout` seconds."""
    wanted = list(topics)
    deadline = time.monotonic() + timeout
    while True:
        cluster = await consumer._client.fetch_all_metadata()
        existing: set[str] = cluster.topics()
        missing = [t for t in wanted if t not in existing]
        if missing:
            raise TopicLayoutError(
                f"topics do not exist: {', '.join(sorted(missing))} (run `fleetplace topics create`)"
            )
        found = {t: sorted(cluster.partitions_for_topic(t) or ()) for t in wanted}
        if all(found.values()) or time.monotonic() > deadline:
            return [(topic, p) for topic in wanted for p in found[topic]]
        await asyncio.sleep(0.1)


END_OFFSETS_STANDARD = "list-offsets"
"""The path of a broker whose ListOffsets LATEST gives the end: the standard `end_offsets` call."""
END_OFFSETS_FETCH = "fetch"
"""The path of a broker whose ListOffsets LATEST is wrong (the embedded one): the end from a Fetch."""

# bootstrap servers -> the path its broker needs, decided by the first conclusive probe
_END_OFFSETS_PATHS: dict[str, str] = {}
_FAR_FUTURE_MS = 1 << 62


def end_offsets_path(kafka: KafkaSettings | str) -> str | None:
    """The path `true_end_offsets` takes on these brokers, None while no probe was conclusive."""
    return _END_OFFSETS_PATHS.get(_as_settings(kafka).bootstrap_servers or "")


async def true_end_offsets(
    kafka: KafkaSettings | str, tps: Sequence[TP], timeout: float = 10.0
) -> dict[TP, int]:
    """Where reading each partition ends (`readable_end`: the high watermark, or the last stable offset
    while a transaction is open).

    A broker whose ListOffsets LATEST is right (Apache Kafka) is asked with the standard
    `end_offsets` call: with `read_committed` it answers the last stable offset. Where ListOffsets
    LATEST is wrong (the embedded broker answers "base of the last batch + 1", see
    docs/compatibility.md) the end comes from a Fetch response. Which one the brokers need is probed
    once per bootstrap servers, on the first call whose partitions hold records: ListOffsets
    must agree with the Fetch end on every partition, and a lookup by a timestamp after every
    record must find nothing, as the protocol says. Until a probe is conclusive (every partition
    empty), the Fetch path runs."""
    if not tps:
        return {}
    bootstrap = _as_settings(kafka).bootstrap_servers or ""
    consumer = make_consumer(kafka, fetch_max_wait_ms=50, max_partition_fetch_bytes=1)
    await start_client(consumer)
    try:
        parts = [TopicPartition(t, p) for t, p in tps]
        consumer.assign(parts)
        path = _END_OFFSETS_PATHS.get(bootstrap)
        if path == END_OFFSETS_STANDARD:
            listed = await consumer.end_offsets(parts)
            return {(tp.topic, tp.partition): int(listed[tp]) for tp in parts}
        fetched = await _fetched_ends(consumer, parts, timeout)
        if path is None:
            verdict = await _probe_list_offsets(consumer, parts, fetched)
            if verdict is not None:
                _END_OFFSETS_PATHS[bootstrap] = verdict
                log.info("end offsets path probed", bootstrap_servers=bootstrap, path=verdict)
        return fetched
    finally:
        await stop_client(consumer)


async def _fetched_ends(consumer: Any, parts: list[Any], timeout: float) -> dict[TP, int]:
    await consumer.seek_to_end(*parts)  # lands at a valid offset <= the true end
    t0 = time.monotonic()
    while any(readable_end(consumer, tp) is None for tp in parts):
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("no fetch response for every partition")
        await consumer.getmany(timeout_ms=50)
    return {(tp.topic, tp.partition): int(readable_end(consumer, tp) or 0) for tp in parts}


async def _probe_list_offsets(consumer: Any, parts: list[Any], fetched: Mapping[TP, int]) -> str | None:
    """END_OFFSETS_STANDARD when ListOffsets gives the ends the Fetch gave and finds nothing after the
    last record, END_OFFSETS_FETCH when it does not, None when every partition is empty (an empty
    partition proves nothing)."""
    with_records = [tp for tp in parts if fetched[(tp.topic, tp.partition)] > 0]
    if not with_records:
        return None
    listed = await consumer.end_offsets(with_records)
    if any(int(listed[tp]) != fetched[(tp.topic, tp.partition)] for tp in with_records):
        return END_OFFSETS_FETCH
    after_all = await consumer.offsets_for_times({tp: _FAR_FUTURE_MS for tp in with_records})
    if any(found is not None for found in after_all.values()):
        return END_OFFSETS_FETCH
    return END_OFFSETS_STANDARD


async def caught_up(consumer: Any, tps: Iterable[TP]) -> bool:
    """True when every partition's position has reached its high watermark.

    Only meaningful right after a getmany() that returned nothing: then the high
    watermarks come from fresh Fetch responses and nothing is buffered.
    """
    for topic, partition in tps:
        tp = TopicPartition(topic, partition)
        end = readable_end(consumer, tp)
        if end is None or await consumer.position(tp) < end:
            return False
    return True


def readable_end(consumer: Any, tp: Any) -> int | None:
    """Where a consumer's reading of `tp` ends as of its last Fetch: the high watermark, or for a
    `read_committed` consumer the last stable offset (the first offset of a transaction still
    open: nothing from there on can be read until it ends). None before the first Fetch."""
    hw: int | None = consumer.highwater(tp)
    if hw is None:
        return None
    lso: int | None = consumer.last_stable_offset(tp)
    if lso is None or lso < 0:
        return hw
    return min(hw, lso)


async def stop_client(client: Any, timeout_s: float = 10.0) -> None:
    """Stop a producer, consumer or admin client, also when the brokers have gone.

    When a fetch has failed, aiokafka's consumer `stop()` re-raises the cancellation of the
    fetcher's own retry pause and leaves the connections open; the rest of the stop is done here.
    A producer with records the brokers never acknowledged waits for them: after `timeout_s` it is
    abandoned with a log line (the records were never acknowledged, so nothing depends on them).
    """
    stop = getattr(client, "stop", None) or client.close
    # in a task of its own, where `cancelling()` counts only the cancels of this stop, also when
    # the caller is closing after being cancelled itself
    stopping = asyncio.create_task(_stop_quietly(client, stop))
    try:
        async with asyncio.timeout(timeout_s):
            await stopping
    except TimeoutError:
        log.warning(
            "gave up waiting for a Kafka client to close", client=type(client).__name__, seconds=timeout_s
        )


async def _stop_quietly(client: Any, stop: Any) -> None:
    try:
        await stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # our own stop was cancelled: not aiokafka's leftover
        fetcher = getattr(client, "_fetcher", None)
        pending = list(getattr(fetcher, "_pending_tasks", ()))
        for leftover in pending:
            leftover.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        inner = getattr(client, "_client", None)
        if inner is not None:
            await inner.close()


LEAVE_TIMEOUT_S = 5.0  # the longest a stop waits for the group to hear a generation-0 leave


async def stop_with_leave(consumer: Any, group_id: str, kafka: KafkaSettings | str) -> None:
    """Stop a group consumer and make sure the group hears it leave.

    aiokafka sends no LeaveGroup in generation 0, and Tansu numbers generations
    from 0: without this, a successor waits the whole session timeout. Uses
    aiokafka's private coordinator state. The leave is given LEAVE_TIMEOUT_S: a broker that does
    not answer in time (stopped, paused, overloaded) drops the member when its session expires
    instead, and the stop goes on (a client's own request timeout is 40 s).
    """
    coordinator = getattr(consumer, "_coordinator", None)
    generation = getattr(coordinator, "generation", None)
    member_id = getattr(coordinator, "member_id", None)
    await stop_client(consumer)
    if generation == 0 and member_id:
        try:
            async with asyncio.timeout(LEAVE_TIMEOUT_S):
                await _leave_group(kafka, group_id, member_id)
        except TimeoutError:
            log.warning(
                "the group did not hear this member leave in time; it drops it when its session expires",
                group=group_id,
                seconds=LEAVE_TIMEOUT_S,
            )


async def _leave_group(kafka: KafkaSettings | str, group_id: str, member_id: str) -> None:
    admin = make_admin(kafka)
    try:  # closed also when the wait for the broker is cut short during the start
        await start_client(admin)
        node = await admin.find_coordinator(group_id)
        await admin._send_request(LeaveGroupRequest(group_id, member_id), node)
    finally:
        await admin.close()


def watermark_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def parse_watermark_key(key: str) -> TP:
    topic, sep, partition = key.rpartition("/")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"not a watermark key: {key!r}")
    return topic, int(partition)


class Watermark:
    """Next offset to read per partition: the `inputs` map of a decision.

    Topic names are stored without the prefix; a partition that was never read
    is left out (absent means 0), which keeps the map compact.
    """

    __slots__ = ("_next", "_prefix")

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self._next: dict[TP, int] = {}

    def _short(self, topic: str) -> str:
        return topic[len(self._prefix) :] if self._prefix and topic.startswith(self._prefix) else topic

    def advance(self, record: Record) -> None:
        self.set(record.topic, record.partition, record.offset + 1)

    def set(self, topic: str, partition: int, next_offset: int) -> None:
        key = (self._short(topic), partition)
        if next_offset > self._next.get(key, 0):
            self._next[key] = next_offset

    def next_offset(self, topic: str, partition: int) -> int:
        return self._next.get((self._short(topic), partition), 0)

    def inputs(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        """`{"<topic>/<partition>": next_offset}`, sorted, limited to `topics` (full or short names) if given."""
        wanted = None if topics is None else {self._short(t) for t in topics}
        return {
            watermark_key(t, p): n
            for (t, p), n in sorted(self._next.items())
            if wanted is None or t in wanted
        }

    def copy(self) -> Watermark:
        clone = Watermark(self._prefix)
        clone._next = dict(self._next)
        return clone

    @staticmethod
    def parse(inputs: Mapping[str, int]) -> dict[TP, int]:
        """The inverse of `inputs()`: short topic name and partition to next offset."""
        return {parse_watermark_key(k): int(v) for k, v in inputs.items()}


@dataclass(frozen=True, slots=True)
class Batch:
    """Records from one poll. An empty batch with `caught_up` marks reaching the end of every partition."""

    records: tuple[Record, ...]
    caught_up: bool


class BroadcastReader:
    """Reads every partition of a set of topics from the beginning (a Kafka Streams global table source).

    No consumer group: partitions are assigned by hand. "Caught up" follows the
    only test that is right on Tansu and Apache Kafka alike: after a getmany()
    that returned nothing, position >= high watermark for every partition.

        async with BroadcastReader(kafka, [topics.clusters, topics.scores]) as reader:
            async for batch in reader:
                apply(batch.records)
                if batch.caught_up: ready = True
    """

    def __init__(
        self,
        kafka: KafkaSettings | str,
        topics: Sequence[str],
        *,
        prefix: str = "",
        max_records: int = 10_000,
        poll_timeout_ms: int = 100,
        **consumer_overrides: Any,
    ) -> None:
        self._kafka = kafka
        self._topics = list(topics)
        self._max_records = max_records
        self._poll_timeout_ms = poll_timeout_ms
        self._overrides = consumer_overrides
        self._consumer: Any = None
        self._tps: list[TP] = []
        self._caught_up = False
        self._ever_caught_up = asyncio.Event()
        self.watermark = Watermark(prefix)
        # per partition below its high watermark: (position, polls without progress, since when)
        self._behind: dict[TP, tuple[int, int, float]] = {}
        self._positions: dict[TP, int] = {}  # each partition's position at the last poll
        self._held_up = False
        self._paused: set[TP] = set()
        # stuck partitions read anew in this held-up spell: how many times (a seek, then a new
        # consumer) and when last
        self._read_anew: dict[TP, tuple[int, float]] = {}

    @property
    def partitions(self) -> list[TP]:
        return list(self._tps)

    @property
    def caught_up(self) -> bool:
        """At the end of every partition as of the last empty poll."""
        return self._caught_up

    @property
    def initial_load_done(self) -> bool:
        """Caught up at least once since start: the readiness signal."""
        return self._ever_caught_up.is_set()

    async def wait_initial_load(self, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout):
            await self._ever_caught_up.wait()

    async def start(self) -> None:
        self._consumer = await self._new_consumer(None)

    async def _new_consumer(self, positions: Mapping[TP, int] | None) -> Any:
        """A consumer assigned every partition: from the beginning, or from `positions`."""
        consumer = make_consumer(self._kafka, **self._overrides)
        await start_client(consumer)
        try:
            if positions is None:
                self._tps = await partitions_of(consumer, self._topics)
            parts = [TopicPartition(t, p) for t, p in self._tps]
            consumer.assign(parts)
            if positions is None:
                await seek_to_beginning(consumer, *parts)
            else:
                for t, p in self._tps:
                    consumer.seek(TopicPartition(t, p), positions[(t, p)])
                if self._paused:
                    consumer.pause(*(TopicPartition(t, p) for t, p in self._paused))
        except BaseException:
            await consumer.stop()
            raise
        return consumer

    async def stop(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await stop_client(consumer)

    def pause(self, tps: Iterable[TP]) -> None:
        """Stop fetching these partitions (a reader that only wants a prefix of them)."""
        if self._consumer is None:
            raise RuntimeError("BroadcastReader is not started")
        wanted = set(tps)
        self._paused |= wanted
        self._consumer.pause(*(TopicPartition(t, p) for t, p in wanted))

    async def __aenter__(self) -> BroadcastReader:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def poll(self) -> Batch:
        """One poll: a non-empty batch, or an empty one whose `caught_up` is freshly measured."""
        if self._consumer is None:
            raise RuntimeError("BroadcastReader is not started")
        if not self._tps:
            self._mark_caught_up(True)
            await asyncio.sleep(self._poll_timeout_ms / 1000)
            return Batch((), True)
        records = await poll(self._consumer, timeout_ms=self._poll_timeout_ms, max_records=self._max_records)
        if records:
            for record in records:
                self.watermark.advance(record)
            self._caught_up = False
            await self._track_progress()
            self._update_held_up()
            if self._held_up:
                await self._read_stuck_anew()
            return Batch(tuple(records), False)
        # after a poll that returned nothing, at the end of every partition = caught up
        self._mark_caught_up(await self._track_progress())
        self._update_held_up()
        if self._held_up:
            await self._read_stuck_anew()
        return Batch((), self._caught_up)

    async def _track_progress(self) -> bool:
        """Note, per partition below its high watermark, how many polls it has gone without moving;
        True when every partition's position has reached its high watermark (see `caught_up`)."""
        now = time.monotonic()
        at_end = True
        for topic, partition in self._tps:
            tp = TopicPartition(topic, partition)
            hw = readable_end(self._consumer, tp)
            position = await self._consumer.position(tp)
            key = (topic, partition)
            self._positions[key] = position
            if hw is None or position >= hw:
                self._behind.pop(key, None)
                at_end = at_end and hw is not None
                continue
            at_end = False
            last = self._behind.get(key)
            if last is None or last[0] != position:
                self._behind[key] = (position, 0, now)
            else:
                self._behind[key] = (position, last[1] + 1, last[2])
        return at_end

    def _update_held_up(self) -> None:
        stuck = self.stuck()
        if stuck and not self._held_up:
            self._held_up = True
            log.warning(
                "broadcast input cannot be read to its end; held up until it is",
                partitions=[f"{t}/{p}" for t, p in stuck],
                # position, high watermark, last stable offset: what the consumer last heard
                offsets={f"{t}/{p}": self._offsets_of((t, p)) for t, p in stuck},
            )
        elif self._held_up and not stuck and self._caught_up:
            self._held_up = False
            self._read_anew.clear()
            log.info("broadcast input read to its end again")

    async def _read_stuck_anew(self, seconds: float = 5.0) -> None:
        """Read each stuck partition anew, once by each of two means in a held-up spell, `seconds`
        apart: first a seek to its position after a metadata refresh (which drops what the
        consumer holds of the partition: a buffered fetch, an offset reset still pending, the
        leader it had cached), then, if it is still stuck, a new consumer at the same positions
        (new connections, a new fetcher). Both keep every position, so nothing is read twice or
        skipped. A partition stuck after both stays held up: the broker does not hand out what
        it reports."""
        now = time.monotonic()
        stuck = [
            tp
            for tp in self.stuck()
            if tp not in self._paused
            and self._read_anew.get(tp, (0, 0.0))[0] < 2
            and now - self._read_anew.get(tp, (0, -seconds))[1] >= seconds
        ]
        if not stuck:
            return
        offsets = {f"{t}/{p}": self._offsets_of((t, p)) for t, p in stuck}
        if all(tp not in self._read_anew for tp in stuck):
            log.warning("stuck broadcast partitions fetched anew from their positions", offsets=offsets)
            self._consumer._client.force_metadata_update()  # aiokafka's; no public refresh
            for tp in stuck:
                self._consumer.seek(TopicPartition(*tp), self._positions[tp])
        else:
            log.warning("stuck broadcast partitions read on a new consumer", offsets=offsets)
            # the positions of this poll: nothing was handed out since they were read
            fresh = await self._new_consumer(dict(self._positions))
            stale, self._consumer = self._consumer, fresh
            await stop_client(stale)
        for tp in stuck:
            self._read_anew[tp] = (self._read_anew.get(tp, (0, 0.0))[0] + 1, now)

    def _offsets_of(self, tp: TP) -> tuple[int | None, int | None, int | None]:
        part = TopicPartition(*tp)
        return (
            self._positions.get(tp),
            self._consumer.highwater(part),
            self._consumer.last_stable_offset(part),
        )

    @property
    def held_up(self) -> bool:
        """Set when a partition is `stuck`, cleared once the reader has caught up again: while it is
        set, state built from this reader is incomplete and must not be decided on."""
        return self._held_up

    def stuck(self, polls: int = 20, seconds: float = 5.0) -> list[TP]:
        """Partitions below their high watermark that have not moved for `polls` polls and `seconds`:
        the broker reports records it does not hand out. (A reader that is merely busy moves on
        every poll; one that is not polled, during a long evaluation, counts no polls.)"""
        now = time.monotonic()
        return sorted(
            tp for tp, (_, n, since) in self._behind.items() if n >= polls and now - since >= seconds
        )

    def _mark_caught_up(self, value: bool) -> None:
        self._caught_up = value
        if value:
            self._ever_caught_up.set()

    async def __aiter__(self) -> AsyncIterator[Batch]:
        """Non-empty batches, plus one empty `caught_up` batch each time the reader reaches the end."""
        announced = False
        while True:
            batch = await self.poll()
            if batch.records:
                announced = False
                yield batch
            elif batch.caught_up and not announced:
                announced = True
                yield batch

    async def read_to_end(self, timeout: float = 30.0) -> list[Record]:
        """Every record up to the current end (for the auditor, tools and tests)."""
        collected: list[Record] = []
        deadline = time.monotonic() + timeout
        while True:
            batch = await self.poll()
            collected.extend(batch.records)
            if batch.caught_up:
                return collected
            if time.monotonic() > deadline:
                raise TimeoutError(f"not caught up after {timeout} s ({len(collected)} records read)")

    def lag(self) -> int:
        """Offsets between the positions and the last known readable ends (0 when unknown). The
        position, not the last record read: a transaction's commit marker takes an offset that no
        record carries, and the consumer's position moves past it."""
        if self._consumer is None:
            return 0
        total = 0
        for topic, partition in self._tps:
            hw = readable_end(self._consumer, TopicPartition(topic, partition))
            if hw is not None:
                read = max(
                    self.watermark.next_offset(topic, partition), self._positions.get((topic, partition), 0)
                )
                total += max(0, hw - read)
        return total
