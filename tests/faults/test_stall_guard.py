"""A worker whose event loop stood still longer than the group can tolerate (SIGSTOP, a VM freeze, a
long blocking evaluation) may have been expelled while it stood: another instance may own its
placements now. It must not publish what it evaluates next until the group has assigned it
partitions again. Without this guard the fault suite's paused-worker scenario published the same
seq twice with different decisions (two writers for one placement)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
from aiokafka import TopicPartition

import fleetplace.services.scheduler.worker as worker_module
from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.bus.delivery import Delivery, Output
from fleetplace.shared.bus.kafka import Batch, Watermark
from fleetplace.shared.bus.records import Record
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.fuzz import hostile as H

PREFIX = "t."


class _Reader:
    def __init__(self, worker: SchedulerWorker) -> None:
        self.worker = worker
        self.watermark = Watermark(PREFIX)

    def lag(self) -> int:
        return 0

    def stuck(self) -> list[tuple[str, int]]:
        return []

    held_up = False

    async def poll(self) -> Batch:
        self.worker.stop()  # one loop iteration
        return Batch((), True)


class _Coordinator:
    def __init__(self) -> None:
        self.rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


class _Group:
    def __init__(self) -> None:
        self._coordinator = _Coordinator()

    async def getmany(self, **_options: Any) -> dict[Any, Any]:
        return {}

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(PREFIX + "placements", 0)}

    async def seek_to_beginning(self, *_partitions: Any) -> bool:
        return True


class _Sink:
    """The at-least-once sink, sending through the module's `send_all` (replaced by `sent`)."""

    delivery = Delivery(transactions=False, idempotence=False, reason="test")
    producer = None

    async def publish(self, outputs: Sequence[Output]) -> None:
        await worker_module.send_all(None, [r for output in outputs for r in output.records])


def _worker_with_a_dirty_placement() -> SchedulerWorker:
    worker = SchedulerWorker(
        Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:1"), topic_prefix=PREFIX)
    )
    worker._assigned = {(PREFIX + "placements", 0)}
    worker.runtime.producer = None  # send_all is replaced below
    worker.runtime.sink = _Sink()  # type: ignore[assignment]
    worker.runtime.group = None
    for offset, item in enumerate([*map(H.record, H.fleet()), H.record(H.good_placement(0))]):
        key = None if item.key is None else item.key.decode()
        assert worker._consume(Record(PREFIX + item.topic, 0, offset, key, item.value)) == []
    worker._need_catchup = False
    worker._placements_caught_up = True
    assert worker.processor.dirty
    return worker


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    records: list[Any] = []

    async def send_all(_producer: Any, outgoing: Any) -> list[Any]:
        records.extend(outgoing)
        return []

    monkeypatch.setattr(worker_module, "send_all", send_all)
    return records


async def test_a_worker_that_kept_up_publishes(sent: list[Any]) -> None:
    worker = _worker_with_a_dirty_placement()
    group = _Group()
    await worker.runtime.loop(_Reader(worker), group)
    assert [r.key for r in sent if r.topic == PREFIX + "decisions"] == ["fuzz/good-000000"]
    assert group._coordinator.rejoins == 0


async def test_a_worker_that_stood_still_past_the_session_rejoins_before_publishing(sent: list[Any]) -> None:
    worker = _worker_with_a_dirty_placement()
    worker._alive_at = time.monotonic() - 10  # the loop last turned 10 s ago: a SIGSTOP, say
    group = _Group()
    await worker.runtime.loop(_Reader(worker), group)
    assert [r for r in sent if r.topic == PREFIX + "decisions"] == []
    assert group._coordinator.rejoins == 1
    assert worker.registry.get_sample_value("fleetplace_stalls_total") == 1
    await worker._assign({(PREFIX + "placements", 0)})  # the group assigns partitions again
    assert not worker._stalled


async def test_a_standstill_while_owning_nothing_is_no_stall(sent: list[Any]) -> None:
    # before its first assignment (loading the state, say) or between giving up its partitions and
    # being assigned again, an instance has nothing another could own: it neither counts a stall
    # nor asks the group for a rebalance, and the assignment that follows is the group's word
    worker = _worker_with_a_dirty_placement()
    worker._assigned = set()
    worker._alive_at = time.monotonic() - 10
    group = _Group()
    await worker.runtime.loop(_Reader(worker), group)
    assert group._coordinator.rejoins == 0
    assert worker.registry.get_sample_value("fleetplace_stalls_total") == 0
    assert not worker._stalled
    assert [r for r in sent if r.topic == PREFIX + "decisions"] == []  # it owns no placement to publish
