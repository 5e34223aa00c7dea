"""A scheduler worker for tests of code that consumes fleetplace's decisions (for our users).

Beside the broker and topic-prefix fixtures of `fleetplace.shared.testing`:

    from fleetplace.services.testing import scheduler_fixture

    scheduler = scheduler_fixture()        # a worker on the `broker` and `topic_prefix` fixtures
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from fleetplace.services.scheduler.worker import SchedulerWorker
from fleetplace.shared.settings import KafkaSettings, Settings
from fleetplace.shared.testing import create_topics


@asynccontextmanager
async def running_scheduler(bootstrap: str, prefix: str, **settings: Any) -> AsyncIterator[SchedulerWorker]:
    """A scheduler worker running in this event loop until the block ends (topics created first).

    For downstream tests of a deployer or subscriber:

        async with running_scheduler(broker, topic_prefix) as worker:
            ...publish ManagedClusters / Placements to f"{topic_prefix}clusters" etc...
            ...consume f"{topic_prefix}decisions"...

    `settings` override `fleetplace.shared.settings.Settings` fields (e.g. `clock="topic"`).
    """
    await create_topics(bootstrap, prefix)
    config = Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        scheduler_group_id=f"{prefix}scheduler",
        http_port=0,
        **settings,
    )
    worker = SchedulerWorker(config, instance="test-scheduler")
    task = asyncio.create_task(worker.run())
    try:
        while not worker.ready:
            if task.done():
                task.result()  # surfaces the start-up error
            await asyncio.sleep(0.05)
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)


def scheduler_fixture(
    *, name: str = "scheduler", broker: str = "broker", prefix: str = "topic_prefix"
) -> Any:
    """A pytest fixture (async) yielding a running scheduler worker on the `broker` fixture."""

    @pytest.fixture(name=name)
    async def _scheduler(request: pytest.FixtureRequest) -> AsyncIterator[SchedulerWorker]:
        bootstrap = request.getfixturevalue(broker)
        topic_prefix = request.getfixturevalue(prefix)
        async with running_scheduler(bootstrap, topic_prefix) as worker:
            yield worker

    return _scheduler
