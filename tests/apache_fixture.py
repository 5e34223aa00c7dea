"""The bootstrap address of the session's one-node Apache Kafka (`apache_kafka` in
tests/conftest.py), for the tests of what only Apache Kafka does: transactions, compaction. A
module that needs it imports `apache_kafka_bootstrap`."""

from __future__ import annotations

import pytest

from fleetplace.shared.apache_kafka import ApacheKafka


@pytest.fixture(scope="session")
def apache_kafka_bootstrap(apache_kafka: ApacheKafka) -> str:
    return apache_kafka.bootstrap
