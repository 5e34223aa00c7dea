"""Fixtures shared by every test package.

`broker`: the bootstrap address of the broker the test runs on, chosen by `--broker
embedded|apache|both` (default: FLEETPLACE_TEST_BROKER, else embedded). With `both`, every test
that takes `broker` runs twice, with the ids `embedded` and `apache`. Each broker is started once
per test process, on first use: the embedded Tansu broker (or FLEETPLACE_TEST_BOOTSTRAP) and
Apache Kafka, one KRaft node (shared/apache_kafka.py).
`broker_kind`: which of the two that is (`embedded` or `apache`).
`apache_kafka`: the one-node Apache Kafka itself (`ApacheKafka`), for tests of what only it does.
`apache_kafka_cluster`: a three-node Apache Kafka (replication factor 3, min.insync.replicas=2),
started on first use, for the fault scenarios.
`topic_prefix`: a fresh topic prefix per test, so tests never see each other's records.
`topics`: the whole catalogue created under that prefix, as a `Topics`.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetplace.shared import native
from fleetplace.shared.apache_kafka import ApacheKafka
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.testing import (
    BROKER_KIND_ENV,
    BROKER_KINDS,
    BrokerKind,
    broker_kind_from_env,
    create_topics,
    embedded_broker_fixture,
    topic_prefix_fixture,
)

embedded_broker = embedded_broker_fixture(scope="session", name="embedded_broker")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--broker",
        choices=[*BROKER_KINDS, "both"],
        default=None,
        help="the broker of the tests that take `broker`: embedded (Tansu), apache (Apache Kafka from "
        "Maven Central) or both (each such test runs twice); default FLEETPLACE_TEST_BROKER, else embedded",
    )


def broker_kinds(config: pytest.Config) -> list[BrokerKind]:
    chosen = config.getoption("--broker") or os.environ.get(BROKER_KIND_ENV) or "embedded"
    return list(BROKER_KINDS) if chosen == "both" else [broker_kind_from_env(chosen)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    kinds = broker_kinds(metafunc.config)
    if "broker_kind" in metafunc.fixturenames and len(kinds) > 1:
        metafunc.parametrize("broker_kind", kinds, ids=kinds, scope="session")


@pytest.fixture(scope="session")
def broker_kind(request: pytest.FixtureRequest) -> BrokerKind:
    return broker_kinds(request.config)[0]


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest, broker_kind: BrokerKind) -> str:
    if broker_kind == "apache":
        kafka: ApacheKafka = request.getfixturevalue("apache_kafka")
        return kafka.bootstrap
    embedded: str = request.getfixturevalue("embedded_broker")
    return embedded


# The log cleaner looks for work every half second instead of every 15 s, so the compaction tests
# (tests/auditor/test_compaction.py) see it run within seconds.
CLEANER = {"log.cleaner.backoff.ms": "500"}


@pytest.fixture(scope="session")
def apache_kafka() -> Iterator[ApacheKafka]:
    with ApacheKafka(nodes=1, config_overrides=CLEANER) as kafka:
        yield kafka


@pytest.fixture(scope="session")
def apache_kafka_cluster() -> Iterator[ApacheKafka]:
    with ApacheKafka(nodes=3) as kafka:
        yield kafka


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test compiled code older than its sources (see shared/native.py)."""
    edited = native.stale(Path(__file__).resolve().parent.parent)
    if edited:
        shown = ", ".join(edited[:5]) + (f" and {len(edited) - 5} more" if len(edited) > 5 else "")
        pytest.exit(
            f"the compiled modules are older than {shown}: run `make native` (or any make target) "
            f"to rebuild them, or build with {native.PURE_PYTHON_ENV}=1",
            returncode=2,
        )


topic_prefix = topic_prefix_fixture()


@pytest.fixture
async def topics(broker: str, topic_prefix: str) -> Topics:
    created, _ = await create_topics(broker, topic_prefix)
    return created


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A free port on 127.0.0.1, held by a listening socket for the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])
