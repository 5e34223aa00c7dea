"""How a worker's output reaches Kafka: at least once, or exactly once in transactions.

Two sinks behind one seam (`OutputSink`), picked at start-up by `KAFKA_TRANSACTIONS`
(docs/deployment.md#delivery):

* `AtLeastOnceSink`: one producer; records are sent and acknowledged, then the input offsets are
  committed. A crash in between sends the records again, and readers drop what they hold by `seq`.
  This is the path of a broker without transactions (the embedded one).
* `TransactionalSink`: one transactional producer per owned input partition, created when the
  partition is assigned and closed when it is revoked. Its `transactional.id` names the group and
  the partition, so the instance that owns the partition next fences every earlier one: a paused
  instance that wakes after its partitions moved cannot make a single record visible to a
  `read_committed` reader. Each evaluation's records of one input partition and the input offsets
  it consumed commit in one transaction.

A worker hands the sink `Output`s: the records computed for one input partition (or for none: dead
letters of broadcast records, which go through the sink's own idempotent producer) with the
offsets consumed there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiokafka import TopicPartition
from aiokafka.errors import InvalidProducerEpoch, KafkaError, ProducerFenced

from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import TP, make_producer, send_all, start_client, stop_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.logging import get_logger
from fleetplace.shared.settings import KafkaSettings

log = get_logger("fleetplace.bus")

PROBE_TIMEOUT_S = 15.0  # a broker that cannot start a producer id by then has none to give


class OutputFencedError(BusError):
    """Another instance owns these input partitions now: what was computed for them was not published."""

    def __init__(self, partitions: Iterable[TP]) -> None:
        self.partitions = sorted(set(partitions))
        super().__init__("fenced: another instance owns " + ", ".join(f"{t}/{p}" for t, p in self.partitions))


@dataclass(frozen=True, slots=True)
class Delivery:
    """What the broker offers and what this process uses, with the reason, for the start-up log."""

    transactions: bool
    idempotence: bool
    reason: str

    @property
    def mode(self) -> str:
        return "exactly-once" if self.transactions else "at-least-once"


@dataclass(slots=True)
class Output:
    """Records computed from one input partition (`source`; None: from no partition of the group),
    and the next offsets consumed there (committed with them)."""

    records: list[OutgoingRecord]
    source: TP | None = None
    offsets: dict[TP, int] = field(default_factory=dict)


async def _starts(kafka: KafkaSettings, **options: Any) -> str | None:
    """None when a producer with `options` starts on this broker, else why not."""
    producer = make_producer(kafka, **options)
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S):
            await producer.start()
        return None
    except (KafkaError, TimeoutError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}".rstrip(": ")
    finally:
        await stop_client(producer)


async def probe_delivery(kafka: KafkaSettings, *, probe_id: str) -> Delivery:
    """Resolve `KAFKA_TRANSACTIONS` and `KAFKA_ENABLE_IDEMPOTENCE`: "true" and "false" are taken as
    given; "auto" starts a producer of that kind, which succeeds only where the broker grants
    producer ids (Apache Kafka does; the embedded broker's InitProducerId fails). `probe_id` is the
    transactional id the probe uses: one per worker group, so probes never fence real work."""
    reasons: list[str] = []
    if kafka.enable_idempotence == "auto":
        why_not = await _starts(kafka, enable_idempotence=True)
        idempotence = why_not is None
        reasons.append(
            "idempotent producer started" if idempotence else f"idempotent producer refused ({why_not})"
        )
    else:
        idempotence = kafka.enable_idempotence == "true"
        reasons.append(f"KAFKA_ENABLE_IDEMPOTENCE={kafka.enable_idempotence}")
    if kafka.transactions == "auto":
        why_not = await _starts(kafka, transactional_id=probe_id) if idempotence else "no idempotence"
        transactions = why_not is None
        reasons.append(
            "transactional producer started" if transactions else f"transactions unavailable ({why_not})"
        )
    else:
        transactions = kafka.transactions == "true"
        reasons.append(f"KAFKA_TRANSACTIONS={kafka.transactions}")
    # transactions imply an idempotent producer
    return Delivery(transactions, idempotence or transactions, "; ".join(reasons))


class OutputSink(Protocol):
    """Where a worker's records go. `own`/`release` follow the group's assignment."""

    delivery: Delivery

    @property
    def producer(self) -> Any:
        """The plain producer (for records tied to no input partition, and health checks)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def own(self, partitions: Iterable[TP]) -> None: ...

    async def release(self, partitions: Iterable[TP]) -> None: ...

    async def publish(self, outputs: Sequence[Output]) -> None:
        """Every output acknowledged (in a transaction with its offsets, when transactional), or an
        exception; OutputFencedError names the partitions another instance owns now."""
        ...


class AtLeastOnceSink:
    """One producer. Offsets are not its business: a worker that commits them does so after the
    acknowledgement (the runtime does for a turn's commits); a crash in between sends again."""

    def __init__(self, kafka: KafkaSettings, delivery: Delivery, **producer_options: Any) -> None:
        self.delivery = delivery
        self._producer = make_producer(kafka, enable_idempotence=delivery.idempotence, **producer_options)

    @property
    def producer(self) -> Any:
        return self._producer

    async def start(self) -> None:
        await start_client(self._producer)

    async def stop(self) -> None:
        await stop_client(self._producer)

    async def own(self, partitions: Iterable[TP]) -> None:
        return None

    async def release(self, partitions: Iterable[TP]) -> None:
        return None

    async def publish(self, outputs: Sequence[Output]) -> None:
        records = [r for output in outputs for r in output.records]
        if records:
            await send_all(self._producer, records)


def transactional_id(group_id: str, partition: TP) -> str:
    """The same for every instance of the group, so the partition's next owner fences the last."""
    topic, number = partition
    return f"{group_id}.{topic}.{number}"


class TransactionalSink:
    """One transactional producer per owned input partition; each output commits in a transaction
    of its partition's producer, with its input offsets committed to `group_id`."""

    def __init__(
        self, kafka: KafkaSettings, delivery: Delivery, group_id: str, **producer_options: Any
    ) -> None:
        self.delivery = delivery
        self._kafka = kafka
        self._group_id = group_id
        self._options = producer_options
        self._producer = make_producer(kafka, enable_idempotence=True, **producer_options)
        self._owned: dict[TP, Any] = {}
        self._locks: dict[TP, asyncio.Lock] = {}

    @property
    def producer(self) -> Any:
        return self._producer

    @property
    def owned(self) -> list[TP]:
        return sorted(self._owned)

    async def start(self) -> None:
        await start_client(self._producer)

    async def stop(self) -> None:
        await self.release(list(self._owned))
        await stop_client(self._producer)

    async def own(self, partitions: Iterable[TP]) -> None:
        """Start a transactional producer for each partition new to this instance: starting it
        fences every earlier producer of the partition and aborts its open transaction."""
        fresh = sorted(set(partitions) - set(self._owned))
        producers = {
            tp: make_producer(
                self._kafka, transactional_id=transactional_id(self._group_id, tp), **self._options
            )
            for tp in fresh
        }
        results = await asyncio.gather(*(start_client(p) for p in producers.values()), return_exceptions=True)
        failed: BaseException | None = None
        for (tp, producer), result in zip(producers.items(), results, strict=True):
            if isinstance(result, BaseException):
                failed = failed or result
                continue
            self._owned[tp] = producer
            self._locks.setdefault(tp, asyncio.Lock())
        if failed is not None:
            raise failed

    async def release(self, partitions: Iterable[TP]) -> None:
        gone = [(tp, self._owned.pop(tp)) for tp in sorted(set(partitions)) if tp in self._owned]
        await asyncio.gather(*(stop_client(producer) for _, producer in gone))

    async def publish(self, outputs: Sequence[Output]) -> None:
        loose = [r for output in outputs if output.source is None for r in output.records]
        by_source: dict[TP, list[Output]] = {}
        for output in outputs:
            if output.source is not None:
                by_source.setdefault(output.source, []).append(output)
        jobs: list[Coroutine[Any, Any, object]] = [
            self._commit(tp, group) for tp, group in sorted(by_source.items())
        ]
        if loose:
            jobs.append(send_all(self._producer, loose))
        results = await asyncio.gather(*jobs, return_exceptions=True)
        fenced = [tp for tp, result in zip(sorted(by_source), results, strict=False) if _is_fence(result)]
        if fenced:
            raise OutputFencedError(fenced)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _commit(self, source: TP, outputs: Sequence[Output]) -> None:
        producer = self._owned.get(source)
        if producer is None:
            raise OutputFencedError([source])  # revoked meanwhile: no longer ours to write
        records = [r for output in outputs for r in output.records]
        offsets: dict[TopicPartition, int] = {}
        for output in outputs:
            for (t, p), n in output.offsets.items():
                key = TopicPartition(t, p)
                offsets[key] = max(n, offsets.get(key, 0))
        async with self._locks[source]:
            try:
                await producer.begin_transaction()
                if records:
                    await send_all(producer, records)
                if offsets:
                    await producer.send_offsets_to_transaction(offsets, self._group_id)
                await producer.commit_transaction()
            except BaseException as exc:
                if _is_fence(exc):
                    # a fenced producer can do nothing more: the partition is another instance's
                    if self._owned.get(source) is producer:
                        del self._owned[source]
                    await stop_client(producer)
                    raise OutputFencedError([source]) from exc
                with contextlib.suppress(Exception):
                    if producer._txn_manager.is_in_transaction():
                        await producer.abort_transaction()
                raise


def _is_fence(result: object) -> bool:
    return isinstance(result, ProducerFenced | InvalidProducerEpoch | OutputFencedError)


async def make_sink(kafka: KafkaSettings, *, group_id: str, **producer_options: Any) -> OutputSink:
    """The sink `KAFKA_TRANSACTIONS` asks for, started; the log says which mode runs and why."""
    delivery = await probe_delivery(kafka, probe_id=f"{group_id}.probe")
    sink: OutputSink
    if delivery.transactions:
        sink = TransactionalSink(kafka, delivery, group_id, **producer_options)
    else:
        sink = AtLeastOnceSink(kafka, delivery, **producer_options)
    await sink.start()
    log.info(
        "output delivery",
        mode=delivery.mode,
        idempotence=delivery.idempotence,
        reason=delivery.reason,
    )
    return sink
