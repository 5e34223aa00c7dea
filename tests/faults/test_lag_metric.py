"""The broadcast lag gauge is what shows an operator a worker that has stopped catching up (for
example a broker that no longer serves part of a partition after a restart, see test_scheduler_faults)."""

from __future__ import annotations

from typing import Any

from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.bus.kafka import Batch
from fleetplace.shared.settings import KafkaSettings, Settings


class _Reader:
    """Stands in for the BroadcastReader: 7 records behind, nothing new in this poll."""

    def __init__(self, worker: SchedulerWorker, stuck: list[tuple[str, int]] | None = None) -> None:
        self.worker = worker
        self._stuck = stuck or []

    def lag(self) -> int:
        return 7

    def stuck(self) -> list[tuple[str, int]]:
        return self._stuck

    @property
    def held_up(self) -> bool:
        return bool(self._stuck)

    async def poll(self) -> Batch:
        self.worker.stop()  # one loop iteration
        return Batch((), False)


class _Group:
    async def getmany(self, **_options: Any) -> dict[Any, Any]:
        return {}


async def test_broadcast_lag_gauge_reports_the_readers_backlog() -> None:
    worker = SchedulerWorker(Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:1"), http_port=0))
    await worker.runtime.loop(_Reader(worker), _Group())
    assert worker.registry.get_sample_value("fleetplace_broadcast_lag_records") == 7


async def test_a_stuck_partition_pauses_evaluation_and_readiness() -> None:
    worker = SchedulerWorker(Settings(kafka=KafkaSettings(bootstrap_servers="127.0.0.1:1"), http_port=0))
    worker._ready = True  # as after the initial load
    worker._need_catchup = False
    await worker.runtime.loop(_Reader(worker, stuck=[("fleetplace.clusters", 3)]), _Group())
    assert worker.registry.get_sample_value("fleetplace_broadcast_stuck_partitions") == 1
    assert worker._need_catchup  # nothing is evaluated until the reader has caught up again
    assert not worker.ready
