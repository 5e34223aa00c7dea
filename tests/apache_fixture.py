"""One Apache Kafka node for the tests of exactly-once output and compaction, started once per
session (a module that needs it imports `apache_kafka_bootstrap`). The log cleaner looks for work
every half second, so the compaction tests need not wait for its default 15 s."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetplace.shared.apache_kafka import ApacheKafka

CLEANER = {"log.cleaner.backoff.ms": "500"}


@pytest.fixture(scope="session")
def apache_kafka_bootstrap() -> Iterator[str]:
    with ApacheKafka(nodes=1, config_overrides=CLEANER) as kafka:
        yield kafka.bootstrap
