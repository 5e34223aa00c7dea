"""The `fleetplace.services.testing` helpers users get for their own subscriber tests."""

from __future__ import annotations

import asyncio

import pytest

from fleetplace.services.testing import running_scheduler
from fleetplace.shared.bus.codec import decode_object, encode_json
from fleetplace.shared.bus.kafka import BroadcastReader, make_producer, send_all, start_client
from fleetplace.shared.bus.records import OutgoingRecord

pytestmark = pytest.mark.integration
G = "cluster.open-cluster-management.io"


async def test_running_scheduler_decides_what_a_user_publishes(broker: str, topic_prefix: str) -> None:
    async with running_scheduler(broker, topic_prefix):
        producer = make_producer(broker)
        await start_client(producer)
        try:
            docs = [
                (
                    "clustersets",
                    "s",
                    {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": "s"}},
                ),
                (
                    "clustersetbindings",
                    "ns/s",
                    {
                        "apiVersion": f"{G}/v1beta2",
                        "kind": "ManagedClusterSetBinding",
                        "metadata": {"namespace": "ns", "name": "s"},
                        "spec": {"clusterSet": "s"},
                    },
                ),
                (
                    "clusters",
                    "c1",
                    {
                        "apiVersion": f"{G}/v1",
                        "kind": "ManagedCluster",
                        "metadata": {"name": "c1", "labels": {f"{G}/clusterset": "s"}},
                    },
                ),
                (
                    "placements",
                    "ns/p",
                    {
                        "apiVersion": f"{G}/v1beta1",
                        "kind": "Placement",
                        "metadata": {"namespace": "ns", "name": "p"},
                        "spec": {},
                    },
                ),
            ]
            await send_all(
                producer, [OutgoingRecord(topic_prefix + t, k, encode_json(v)) for t, k, v in docs]
            )
        finally:
            await producer.stop()
        async with BroadcastReader(broker, [topic_prefix + "decisions"]) as reader:
            # the placement can be decided before c1 is read (another topic): a later diff adds it
            for _ in range(200):
                batch = await reader.poll()
                for record in batch.records:
                    value = decode_object(record.value)
                    assert value is not None
                    if value["decisions"] == ["c1"]:
                        return
                await asyncio.sleep(0.05)
    raise AssertionError("no decision published")


async def test_a_worker_that_does_not_stop_is_reported_with_where_it_waits() -> None:
    from fleetplace.services.testing import _stopped

    never = asyncio.Event()

    async def closing_forever() -> None:
        await never.wait()

    async def run() -> None:
        await closing_forever()

    task = asyncio.create_task(run())
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError, match=r"(?s)did not stop within 0 s.* in run\n.* in closing_forever\n"):
        await _stopped(task, 0.1)
    await asyncio.sleep(0)
    assert task.cancelled()
