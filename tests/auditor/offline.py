"""A scheduler worker without Kafka: the same processor, fed poll by poll, writing the records a
real worker and its producers would leave on the topics (offsets, partitions, CloudEvents source).

It mirrors `fleetplace.services.scheduler.worker.SchedulerWorker._loop`: consume what arrived (input
records and the decisions read back), take the watermark once, evaluate the dirty placements,
publish the diffs. Histories made with it are valid input for the auditor, in tests and in the
benchmark, without running a broker-bound worker for minutes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from fleetplace.services.scheduler.core import SchedulerOptions, SchedulerProcessor
from fleetplace.shared.bus.codec import DecodeError, decode_record, encode_json
from fleetplace.shared.bus.envelope import new_envelope
from fleetplace.shared.bus.kafka import Watermark, make_producer, start_client
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics, ensure_topics, partition_for_key, planned_partitions

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
    if obj["kind"] in ("ManagedCluster", "ManagedClusterSet"):  # cluster-scoped
        return str(meta["name"])
    return f"{meta['namespace']}/{meta['name']}"


class OfflineWorker:
    """One scheduler instance and the topic log it reads and writes."""

    def __init__(
        self,
        prefix: str = "fleetplace.",
        source: str = "fleetplace/scheduler",
        *,
        read_back: int = 1,
        options: SchedulerOptions | None = None,
    ) -> None:
        self.topics = Topics(prefix)
        self.source = source
        self.partitions = planned_partitions()
        self.options = options
        self.processor = SchedulerProcessor(options)
        self.log: list[Record] = []  # everything written, in write order
        self._next: dict[tuple[str, int], int] = {}
        self._unread: list[Record] = []
        self._own_unread: list[list[Record]] = []  # diffs by batch, read back `read_back` polls later
        self.read_back = read_back
        self.watermark = Watermark(prefix)
        self._placement_next: dict[int, int] = {}
        self._started = False
        self.diffs: list[dict[str, Any]] = []

    # ---- producing -----------------------------------------------------------------------
    def write(
        self, topic: str, key: str, value: bytes | None, headers: tuple[tuple[str, bytes], ...] = ()
    ) -> Record:
        partition = partition_for_key(key, self.partitions[topic])
        offset = self._next.get((topic, partition), 0)
        self._next[(topic, partition)] = offset + 1
        record = Record(self.topics.name(topic), partition, offset, key, value, headers)
        self.log.append(record)
        return record

    def publish(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            self._unread.append(self.write(TOPIC_OF[obj["kind"]], key_of(obj), encode_json(obj)))

    def send(self, topic: str, key: str, value: dict[str, Any] | bytes | None) -> None:
        raw = encode_json(value) if isinstance(value, dict) else value
        self._unread.append(self.write(topic, key, raw))

    def delete(self, kind: str, key: str) -> None:
        self.send(TOPIC_OF[kind], key, None)

    # ---- one loop iteration --------------------------------------------------------------
    def step(self, now: datetime, *, take: int | None = None) -> list[dict[str, Any]]:
        """Consume (up to `take`) pending input records and the diffs due to be read back, then
        evaluate at `now` and publish. Returns the diffs."""
        batch = self._unread if take is None else self._unread[:take]
        self._unread = [] if take is None else self._unread[take:]
        if len(self._own_unread) >= self.read_back:
            batch = self._own_unread.pop(0) + batch
        for record in sorted(batch, key=lambda r: (r.topic, r.partition, r.offset)):
            self._consume(record)
        if not self._started:
            self._started = True
            self.processor.mark_all("startup")
        inputs = self.watermark.inputs()
        for partition, offset in sorted(self._placement_next.items()):
            inputs[f"placements/{partition}"] = offset
        diffs = self.processor.evaluate(now, inputs)
        written = []
        for diff in diffs:
            env = new_envelope("io.fleetplace.decisions", self.source, time=now, resource_version=diff["seq"])
            written.append(self.write("decisions", diff["placement"], encode_json(diff), env.to_headers()))
            # the SIG-MC slices the worker writes beside the diff (when that output is on)
            pending = self.processor.take_pending(diff["placement"])
            for key, value in self.processor.sigmc_changes(diff["placement"], pending):
                self.write("sigmc-placement-decisions", key, None if value is None else encode_json(value))
        self._own_unread.append(written)
        self.diffs.extend(diffs)
        return diffs

    def _consume(self, record: Record) -> None:
        topic = self.topics.unprefixed(record.topic)
        if topic == "placements":
            self._placement_next[record.partition] = record.offset + 1
        else:
            self.watermark.advance(record)
        try:
            decoded = decode_record(record)
            self.processor.apply(topic, decoded.key, decoded.value)
        except (DecodeError, ValueError, KeyError, TypeError):
            pass  # the worker dead-letters it

    def drain(self, now: datetime) -> None:
        """Read back every diff published so far (the worker catches up on its own output)."""
        while self._own_unread:
            for record in self._own_unread.pop(0):
                self._consume(record)
        self.processor.evaluate(now, {})  # nothing dirty: decisions never mark placements

    def records(self) -> list[Record]:
        return list(self.log)

    def successor(self, source: str) -> OfflineWorker:
        """Another instance taking over: same topics, reads everything from the beginning."""
        nxt = OfflineWorker(self.topics.prefix, source, read_back=self.read_back, options=self.options)
        nxt.log = self.log
        nxt._next = self._next
        nxt._unread = list(self.log)
        return nxt


def cluster(
    name: str,
    labels: dict[str, str] | None = None,
    taints: Iterable[dict[str, Any]] = (),
    cpu: int | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{G}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {f"{G}/clusterset": "prod", **(labels or {})}},
        "spec": {"hubAcceptsClient": True, "taints": list(taints)},
    }
    if cpu is not None:
        obj["status"] = {
            "allocatable": {"cpu": str(cpu), "memory": "64Gi"},
            "capacity": {"cpu": str(cpu + 2), "memory": "128Gi"},
        }
    return obj


def base_fleet(*namespaces: str) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "prod"}}
    ]
    for ns in namespaces or ("ns1",):
        objs.append(
            {
                "apiVersion": f"{G}/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"namespace": ns, "name": "prod"},
                "spec": {"clusterSet": "prod"},
            }
        )
    return objs


def placement(namespace: str, name: str, generation: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{G}/v1beta1",
        "kind": "Placement",
        "metadata": {"namespace": namespace, "name": name, "generation": generation},
        "spec": spec,
    }


def score(
    cluster_name: str, value: int, valid_until: str | None = None, resource: str = "demo"
) -> dict[str, Any]:
    status: dict[str, Any] = {"scores": [{"name": "s", "value": value}]}
    if valid_until is not None:
        status["validUntil"] = valid_until
    return {
        "apiVersion": f"{G}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"namespace": cluster_name, "name": resource},
        "status": status,
    }


ADDON = [
    {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}}, "weight": 2}
]
UNREACHABLE = f"{G}/unreachable"


GOLD = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def busy_run(worker: OfflineWorker) -> OfflineWorker:
    """Cluster churn, scores changing and expiring, a taint whose toleration expires, placements
    edited and deleted, resyncs: every trigger kind the worker has."""
    w = worker
    w.publish(
        *base_fleet("ns1", "ns2"),
        *[cluster(f"c{i}", {"tier": "gold" if i % 2 else "silver"}, cpu=4 + i) for i in range(8)],
    )
    w.publish(
        placement("ns1", "gold", predicates=GOLD),
        placement(
            "ns1", "top3", numberOfClusters=3, prioritizerPolicy={"mode": "Additive", "configurations": ADDON}
        ),
        placement("ns2", "two", numberOfClusters=2),
        placement(
            "ns1", "tol", tolerations=[{"key": UNREACHABLE, "operator": "Exists", "tolerationSeconds": 30}]
        ),
        placement(
            "ns1",
            "byscore",
            numberOfClusters=3,
            sortBy="Score",
            scoreRateLimit="30s",
            prioritizerPolicy={"mode": "Exact", "configurations": ADDON},
        ),
        placement(
            "ns2",
            "cpu",
            numberOfClusters=2,
            prioritizerPolicy={
                "mode": "Exact",
                "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 1}],
            },
        ),
    )
    t = T0
    w.step(t)
    for i in range(8):
        w.publish(score(f"c{i}", 10 * i, valid_until="2026-01-01T00:02:00Z" if i == 7 else None))
    t += timedelta(seconds=1)
    w.step(t)
    w.send(
        "taints",
        "c3",
        {"taints": [{"key": UNREACHABLE, "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:01Z"}]},
    )
    t += timedelta(seconds=1)
    w.step(t)
    w.publish(cluster("c2", {"tier": "gold"}, cpu=30), score("c1", 95))
    w.delete("ManagedCluster", "c5")
    t += timedelta(seconds=1)
    w.step(t)
    t += timedelta(seconds=40)  # the toleration of c3's taint expires
    w.step(t)
    w.publish(
        placement("ns2", "two", generation=2, numberOfClusters=4), cluster("c8", {"tier": "gold"}, cpu=64)
    )
    t += timedelta(seconds=1)
    w.step(t)
    w.delete("Placement", "ns1/gold")
    w.send("clusters", "broken", b"{not json")  # dead-lettered by the worker: skipped by the replay too
    w.publish(cluster("c0", {"tier": "gold"}, cpu=4))
    t += timedelta(seconds=1)
    w.step(t)
    t += timedelta(seconds=90)  # c7's score expires
    w.step(t)
    w.publish(placement("ns1", "gold", generation=1, predicates=GOLD), score("c4", 99), score("c4", 100))
    w.send("taints", "c3", None)
    t += timedelta(seconds=1)
    w.step(t)
    t += timedelta(seconds=700)  # AddOn resync and the full resync
    w.step(t)
    w.drain(t)
    return w


async def write_to_broker(bootstrap: str, prefix: str, records: list[Record]) -> None:
    """Each record at the partition and offset the offline worker gave it."""
    await ensure_topics(bootstrap, Topics(prefix))
    producer = make_producer(bootstrap, linger_ms=20, max_batch_size=262144)
    await start_client(producer)
    try:
        by_partition: dict[tuple[str, int], list[Record]] = {}
        for r in records:
            by_partition.setdefault((r.topic, r.partition), []).append(r)
        for (topic, partition), rs in sorted(by_partition.items()):
            rs.sort(key=lambda r: r.offset)
            futures = [
                await producer.send(
                    topic, value=r.value, key=r.key_bytes, partition=partition, headers=list(r.headers)
                )
                for r in rs
            ]
            delivered = await asyncio.gather(*futures)
            if [m.offset for m in delivered] != [r.offset for r in rs]:
                raise RuntimeError(f"{topic}/{partition}: offsets differ from the generated history")
    finally:
        await producer.stop()
