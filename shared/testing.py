"""Helpers for testing code that talks to fleetplace over Kafka (like structlog.testing: for our users).

In a downstream project's `conftest.py`:

    from fleetplace.shared.testing import embedded_broker_fixture, topic_prefix_fixture

    broker = embedded_broker_fixture()          # session-scoped: "127.0.0.1:<port>"
    topic_prefix = topic_prefix_fixture()      # per test: "t3f9c1a2b4d." (tests never share topics)

Set `FLEETPLACE_TEST_BOOTSTRAP=host:port` to run the same tests against a real
Kafka instead of the embedded broker.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal

import pytest

from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.topics import Topics, TopicStatus, ensure_topics

EXTERNAL_BOOTSTRAP_ENV = "FLEETPLACE_TEST_BOOTSTRAP"
Scope = Literal["session", "package", "module", "class", "function"]


@contextmanager
def running_broker(**broker_options: Any) -> Iterator[str]:
    """The bootstrap address of a broker for the duration of the block: the external one named by
    FLEETPLACE_TEST_BOOTSTRAP, or an embedded broker started now and stopped (by PID) afterwards."""
    external = os.environ.get(EXTERNAL_BOOTSTRAP_ENV)
    if external:
        yield external
        return
    with EmbeddedBroker(**broker_options) as broker:
        yield broker.bootstrap


def embedded_broker_fixture(*, scope: Scope = "session", name: str = "broker", **broker_options: Any) -> Any:
    """A pytest fixture yielding a bootstrap address (see `running_broker`)."""

    @pytest.fixture(scope=scope, name=name)
    def _broker() -> Iterator[str]:
        with running_broker(**broker_options) as bootstrap:
            yield bootstrap

    return _broker


def unique_topic_prefix(base: str = "t") -> str:
    """A prefix no other test uses, e.g. `t3f9c1a2b4d.`."""
    return f"{base}{uuid.uuid4().hex[:10]}."


def topic_prefix_fixture(*, name: str = "topic_prefix", base: str = "t") -> Any:
    """A pytest fixture giving each test its own topic prefix."""

    @pytest.fixture(name=name)
    def _prefix() -> str:
        return unique_topic_prefix(base)

    return _prefix


async def create_topics(
    bootstrap: str, prefix: str, *, work_partitions: int | None = None
) -> tuple[Topics, list[TopicStatus]]:
    """Create the whole catalogue under `prefix` (idempotent); the names and what was created."""
    topics = Topics(prefix)
    return topics, await ensure_topics(bootstrap, topics, work_partitions=work_partitions)


@asynccontextmanager
async def running_scheduler(bootstrap: str, prefix: str, **settings: Any) -> AsyncIterator[Any]:
    """A scheduler worker running in this event loop until the block ends (topics created first).

    For downstream tests of a deployer or subscriber:

        async with running_scheduler(broker, topic_prefix) as worker:
            ...publish ManagedClusters / Placements to f"{topic_prefix}clusters" etc...
            ...consume f"{topic_prefix}decisions"...

    `settings` override `fleetplace.shared.settings.Settings` fields (e.g. `clock="topic"`).
    """
    import asyncio

    from fleetplace.services.scheduler.worker import SchedulerWorker
    from fleetplace.shared.settings import KafkaSettings, Settings

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
    async def _scheduler(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
        bootstrap = request.getfixturevalue(broker)
        topic_prefix = request.getfixturevalue(prefix)
        async with running_scheduler(bootstrap, topic_prefix) as worker:
            yield worker

    return _scheduler
