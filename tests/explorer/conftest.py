"""The known history the explorer's tests read: the demo's fleet and acts, played once per module,
and a queue placer's history beside it (tests/explorer/queue_history.py).

`demo_settings` are settings pointing at that history (its topic prefix on the test broker); the
scheduler and queue placer are stopped again, so the history does not change unless a test
changes it.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest
from rich.console import Console

from fleetplace.services.commands.demo import FLEET_FILE, Demo, ExampleFleet
from fleetplace.shared.settings import KafkaSettings, Settings
from fleetplace.shared.testing import unique_topic_prefix
from tests.explorer import queue_history


def demo_settings_for(bootstrap: str) -> Settings:
    prefix = unique_topic_prefix("explorer")
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topic_prefix=prefix,
        scheduler_group_id=f"{prefix}scheduler",
        clock="wall",
        http_host="127.0.0.1",
        http_port=0,
    )


@pytest.fixture(scope="module")
def demo_settings(broker: str) -> Iterator[Settings]:
    settings = demo_settings_for(broker)
    demo = Demo(Console(file=io.StringIO(), width=120), settings, ExampleFleet(FLEET_FILE))
    results = asyncio.run(demo.run())
    assert [r.ok for r in results] == [True] * len(demo.acts), [r.title for r in results if not r.ok]
    asyncio.run(queue_history.play(broker, settings.topic_prefix))
    yield settings
