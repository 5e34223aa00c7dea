"""A known queue history for the explorer's tests, recorded beside the demo's on the test broker.

The queue placer runs docs/examples/queues.yaml (ask for an existing queue, else a queue named
after the namespace tag under root.tenants, created on first use, else root.default) over the
submissions of docs/examples/apps.jsonl and a few more: two tenants' queues are created, one
application asks for root.batch, and one names a partition no config has (rejected).
docs/examples/queues-next.yaml is the change under review the what-if tests evaluate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml

from fleetplace.shared.bus.topics import Topics
from tests.queue_worker.test_worker import Bus, running, settings_for

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
CONFIG_TEXT = (EXAMPLES / "queues.yaml").read_text()
NEXT_CONFIG_TEXT = (EXAMPLES / "queues-next.yaml").read_text()
MORE_APPS: list[dict[str, Any]] = [
    {"applicationID": "ml-train-7", "user": "dee", "groups": ["data"], "tags": {"namespace": "ml"}},
    {"applicationID": "web-build-43", "user": "bo", "groups": ["dev"], "tags": {"namespace": "web"}},
    {"applicationID": "ops-report", "user": "fay", "groups": ["ops"], "queue": "root.batch", "tags": {}},
    {"applicationID": "gpu-job", "user": "eve", "groups": ["ops"], "partition": "gpu", "tags": {}},
]
APPS: list[dict[str, Any]] = [
    *(orjson.loads(line) for line in (EXAMPLES / "apps.jsonl").read_text().splitlines() if line.strip()),
    *MORE_APPS,
]


async def play(bootstrap: str, prefix: str) -> None:
    """Publish the config and the submissions, and run a queue placer until each is placed."""
    (partition,) = yaml.safe_load(CONFIG_TEXT)["partitions"]
    async with Bus(bootstrap, Topics(prefix)) as bus:
        await bus.config(partition, key=partition["name"])
        async with running(settings_for(bootstrap, prefix)):
            await bus.submit(*APPS)
            await bus.wait_for(lambda: len(bus.by_app()) == len(APPS), "every application placed")
