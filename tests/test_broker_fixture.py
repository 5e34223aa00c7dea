"""The `broker` fixture (tests/conftest.py) gives the broker `--broker` names: with `both`, a test
that takes it runs once on the embedded broker and once on Apache Kafka."""

from __future__ import annotations

import os
from typing import Any

import pytest

from fleetplace.shared.apache_kafka import ApacheKafka
from fleetplace.shared.bus.kafka import make_admin, start_client
from fleetplace.shared.testing import EXTERNAL_BOOTSTRAP_ENV, BrokerKind

pytestmark = pytest.mark.integration

# The embedded broker's fixed identity (kafka-local-broker.md: node id 111).
TANSU_NODE_ID = 111


async def _cluster(bootstrap: str) -> dict[str, Any]:
    admin = make_admin(bootstrap)
    await start_client(admin)
    try:
        described: dict[str, Any] = await admin.describe_cluster()
        return described
    finally:
        await admin.close()


async def test_the_broker_fixture_serves_the_broker_its_kind_names(
    broker: str, broker_kind: BrokerKind, request: pytest.FixtureRequest
) -> None:
    if os.environ.get(EXTERNAL_BOOTSTRAP_ENV):
        pytest.skip(f"{EXTERNAL_BOOTSTRAP_ENV} names the broker")
    node_ids = {int(b["node_id"]) for b in (await _cluster(broker))["brokers"]}
    if broker_kind == "apache":
        kafka: ApacheKafka = request.getfixturevalue("apache_kafka")
        assert broker == kafka.bootstrap
        assert node_ids == {node.node_id for node in kafka.nodes} == {1}
    else:
        assert node_ids == {TANSU_NODE_ID}
