"""Drive scheduler workers against a real broker: publish objects, read decisions, move the clock."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings

G = "cluster.open-cluster-management.io"
TOPIC_OF = {
    "ManagedCluster": "clusters",
    "AddOnPlacementScore": "scores",
    "ManagedClusterSet": "clustersets",
    "ManagedClusterSetBinding": "clustersetbindings",
    "Placement": "placements",
    "ClusterProfile": "cluster-profiles",
}


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    if obj["kind"] in ("ManagedCluster", "ManagedClusterSet"):
        return str(meta["name"])
    return f"{meta['namespace']}/{meta['name']}"


def settings_for(bootstrap: str, prefix: str, **extra: Any) -> Settings:
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        scheduler_group_id=f"{prefix}scheduler",
        http_port=0,
        **extra,
    )


class Bus:
    """A producer for test inputs and a reader of everything the workers publish."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self.decisions: list[dict[str, Any]] = []
        self.deadletters: list[dict[str, Any]] = []
        self._producer: Any = None
        self._reader: BroadcastReader | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Bus:
        self._producer = make_producer(self.bootstrap)
        await start_client(self._producer)
        self._reader = BroadcastReader(self.bootstrap, [self.topics.decisions, self.topics.deadletter])
        await self._reader.start()
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._reader is not None:
            await self._reader.stop()
        await self._producer.stop()

    async def _read(self) -> None:
        assert self._reader is not None
        while True:
            batch = await self._reader.poll()
            for r in batch.records:
                value = decode_object(r.value)
                if value is None:
                    continue
                if r.topic == self.topics.decisions:
                    self.decisions.append(value)
                else:
                    self.deadletters.append(value)

    async def publish(self, *objects: dict[str, Any]) -> None:
        await send_all(
            self._producer,
            [
                OutgoingRecord(self.topics.name(TOPIC_OF[o["kind"]]), key_of(o), encode_json(o))
                for o in objects
            ],
        )

    async def send(self, topic: str, key: str | bytes | None, value: bytes | None) -> None:
        await send_all(self._producer, [OutgoingRecord(self.topics.name(topic), key, value)])

    async def delete(self, kind: str, key: str) -> None:
        await self.send(TOPIC_OF[kind], key, None)

    async def set_clock(self, now: str, group: str = "scheduler") -> None:
        await self.send("clock", group, encode_json({"now": now}))

    def latest(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for d in self.decisions:
            if d["placement"] not in out or d["seq"] > out[d["placement"]]["seq"]:
                out[d["placement"]] = d
        return out

    async def wait_for(
        self, check: Callable[[], bool], timeout: float = 30.0, what: str = "condition"
    ) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; decisions: {self.latest()}")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def running(settings: Settings, instance: str = "scheduler") -> AsyncIterator[SchedulerWorker]:
    worker = SchedulerWorker(settings, instance=instance)
    task = asyncio.create_task(worker.run())
    try:
        deadline = time.monotonic() + 30
        while not worker.ready:
            if task.done():
                task.result()
            if time.monotonic() > deadline:
                raise AssertionError("worker never became ready")
            await asyncio.sleep(0.05)
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


def cluster(
    name: str, labels: dict[str, str] | None = None, taints: Iterable[dict[str, Any]] = ()
) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {f"{G}/clusterset": "prod", **(labels or {})}},
        "spec": {"taints": list(taints)},
    }


def base_fleet(namespace: str = "ns1") -> list[dict[str, Any]]:
    return [
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "prod"}},
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": namespace, "name": "prod"},
            "spec": {"clusterSet": "prod"},
        },
    ]


def placement(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec,
    }
