"""Drive scheduler workers against a real broker: publish objects, read decisions, move the clock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.records import OutgoingRecord, Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings, Settings
from tests.bus_harness import BusHarness, running_worker

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


class Bus(BusHarness):
    """A producer for test inputs and a reader of everything the workers publish."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        super().__init__(bootstrap, topics)
        self.decisions: list[dict[str, Any]] = []
        self.deadletters: list[dict[str, Any]] = []

    def read_topics(self) -> list[str]:
        return [self.topics.decisions, self.topics.deadletter]

    def on_record(self, record: Record) -> None:
        value = decode_object(record.value)
        if value is None:
            return
        if record.topic == self.topics.decisions:
            self.decisions.append(value)
        else:
            self.deadletters.append(value)

    def describe(self) -> str:
        return f"decisions: {self.latest()}"

    async def publish(self, *objects: dict[str, Any]) -> None:
        await self.send_records(
            [
                OutgoingRecord(self.topics.name(TOPIC_OF[o["kind"]]), key_of(o), encode_json(o))
                for o in objects
            ]
        )

    async def send(self, topic: str, key: str | bytes | None, value: bytes | None) -> None:
        await self.send_raw(topic, key, value)

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


@contextlib.asynccontextmanager
async def running(settings: Settings, instance: str = "scheduler") -> AsyncIterator[SchedulerWorker]:
    worker = SchedulerWorker(settings, instance=instance)
    async with running_worker(worker, lambda: worker.ready):
        yield worker


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
