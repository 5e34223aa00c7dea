"""Helpers for testing code that talks to fleetplace over Kafka (like structlog.testing: for our users).

In a downstream project's `conftest.py`:

    from fleetplace.shared.testing import embedded_broker_fixture, topic_prefix_fixture

    broker = embedded_broker_fixture()          # session-scoped: "127.0.0.1:<port>"
    topic_prefix = topic_prefix_fixture()      # per test: "t3f9c1a2b4d." (tests never share topics)

Set `FLEETPLACE_TEST_BOOTSTRAP=host:port` to run the same tests against a real
Kafka instead of the embedded broker, or `FLEETPLACE_TEST_BROKER=apache` to have
Apache Kafka started from Maven Central for the session (Java 17 and Maven needed;
`fleetplace.shared.apache_kafka`). A scheduler worker to run beside them is in
`fleetplace.services.testing` (the library here knows nothing of the workers).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import pytest

from fleetplace.shared.apache_kafka import ApacheKafka
from fleetplace.shared.bus.broker import EmbeddedBroker
from fleetplace.shared.bus.topics import Topics, TopicStatus, ensure_topics

EXTERNAL_BOOTSTRAP_ENV = "FLEETPLACE_TEST_BOOTSTRAP"
BROKER_KIND_ENV = "FLEETPLACE_TEST_BROKER"
Scope = Literal["session", "package", "module", "class", "function"]
BrokerKind = Literal["embedded", "apache"]
BROKER_KINDS: tuple[BrokerKind, ...] = ("embedded", "apache")


def broker_kind_from_env(value: str | None = None) -> BrokerKind:
    """The broker `value` names, else FLEETPLACE_TEST_BROKER (`embedded` or `apache`), else the
    embedded one."""
    raw = value or os.environ.get(BROKER_KIND_ENV, "") or "embedded"
    if raw not in BROKER_KINDS:
        raise ValueError(f"{BROKER_KIND_ENV}={raw!r}: one of {', '.join(BROKER_KINDS)}")
    return "apache" if raw == "apache" else "embedded"


@contextmanager
def running_broker(kind: BrokerKind | None = None, **broker_options: Any) -> Iterator[str]:
    """The bootstrap address of a broker for the duration of the block: the external one named by
    FLEETPLACE_TEST_BOOTSTRAP, else a broker of `kind` (default: FLEETPLACE_TEST_BROKER, else the
    embedded one) started now and stopped (by PID) afterwards. `broker_options` go to
    `EmbeddedBroker` or `ApacheKafka`."""
    external = os.environ.get(EXTERNAL_BOOTSTRAP_ENV)
    if external:
        yield external
        return
    if (kind or broker_kind_from_env()) == "apache":
        with ApacheKafka(**broker_options) as kafka:
            yield kafka.bootstrap
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
