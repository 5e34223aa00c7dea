"""Fixtures shared by every test package.

`broker`: one embedded Tansu broker per test session (or FLEETPLACE_TEST_BOOTSTRAP).
`topic_prefix`: a fresh topic prefix per test, so tests never see each other's records.
`topics`: the whole catalogue created under that prefix, as a `Topics`.
"""

from __future__ import annotations

import pytest

from shared.bus.topics import Topics
from shared.testing import create_topics, embedded_broker_fixture, topic_prefix_fixture

broker = embedded_broker_fixture(scope="session")
topic_prefix = topic_prefix_fixture()


@pytest.fixture
async def topics(broker: str, topic_prefix: str) -> Topics:
    created, _ = await create_topics(broker, topic_prefix)
    return created
