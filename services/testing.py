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

STOP_TIMEOUT_S = 30.0  # how long `running_scheduler` waits for its worker to stop


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
        await _stopped(task, STOP_TIMEOUT_S)


async def _stopped(task: asyncio.Task[None], timeout: float) -> None:
    """Wait for the worker's task to end; past `timeout`, fail with where it was still waiting."""
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if done:
        task.result()
        return
    where = "\n".join(f"  {f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}" for f in _awaiting(task))
    task.cancel()
    raise TimeoutError(
        f"the scheduler worker did not stop within {timeout:.0f} s; it was waiting in:\n{where}"
    )


def _awaiting(task: asyncio.Task[Any]) -> list[Any]:
    """The frames of the coroutines `task` is suspended in, outermost first (a task's own
    `get_stack` gives only the outermost)."""
    frames = []
    awaited: Any = task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return frames


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
