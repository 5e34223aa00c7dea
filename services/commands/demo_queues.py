"""`fleetplace demo --explore`'s queue history: a queue placer places a few applications, so the
explorer's Queues page has a tree and placements to show (docs/explorer.md, Queues).

The partition config is demo_queues.yaml and the submissions demo_apps.jsonl beside this module
(docs/examples/queues.yaml and apps.jsonl link to them): an application goes to the queue it asks
for, else to a queue named after its namespace tag under root.tenants (created on first use), else
to root.default. They are published as `fleetplace publish` would, and a queue placer runs in this
process until it has placed every one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fleetplace.services.queue_placer.worker import QueueWorker
from fleetplace.shared.bus.errors import BusError
from fleetplace.shared.bus.kafka import make_producer, send_all, start_client
from fleetplace.shared.bus.publish import InputKind, load_documents, plan_records, to_outgoing
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import Settings

QUEUES_FILE = Path(__file__).resolve().with_name("demo_queues.yaml")
APPS_FILE = Path(__file__).resolve().with_name("demo_apps.jsonl")
# from the worker's start (its group join) to the last placement, on a loaded machine
TIMEOUT_S = 30.0


async def place_applications(settings: Settings) -> dict[str, Mapping[str, Any]]:
    """Publish the demo's queue config and submissions on the demo's topics, run a queue placer
    until every submission is placed, and return the placements by application ID."""
    topics = Topics(settings.topic_prefix)
    config = plan_records(load_documents([str(QUEUES_FILE)]), InputKind.QUEUE_CONFIG)
    apps = plan_records(load_documents([str(APPS_FILE)]), InputKind.APPLICATION)
    producer = make_producer(settings.kafka)
    await start_client(producer)
    try:
        await send_all(producer, to_outgoing(config, topics))
        await send_all(producer, to_outgoing(apps, topics))
    finally:
        await producer.stop()
    worker = QueueWorker(
        settings.model_copy(update={"queue_placer_group_id": f"{settings.topic_prefix}queues"}),
        instance="demo-queues",
    )
    task = asyncio.create_task(worker.run())
    wanted = {str(a.key) for a in apps}
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not wanted <= worker.state.placed.keys():
            if task.done():
                task.result()
                raise BusError("the queue placer stopped unexpectedly")
            if time.monotonic() > deadline:
                raise BusError(f"the demo's applications were not all placed within {TIMEOUT_S:g} s")
            await asyncio.sleep(0.05)
        return {key: worker.state.placed[key] for key in sorted(wanted)}
    finally:
        worker.stop()
        async with asyncio.timeout(30.0):
            await task
