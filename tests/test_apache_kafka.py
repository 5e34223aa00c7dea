"""Apache Kafka for tests and users (shared/apache_kafka.py): the version pinned in one place, and
`make apache-kafka` serving Kafka clients, then leaving no process and no data behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import IO

import pytest
import yaml
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from fleetplace.shared.apache_kafka import POM, VERSIONS_FILE, ApacheKafkaError, kafka_version

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration


def test_the_kafka_version_is_pinned_once_for_the_tests_and_compose(tmp_path: Path) -> None:
    version = kafka_version()
    assert re.fullmatch(r"4\.\d+\.\d+", version), version
    compose = yaml.safe_load((ROOT / "compose" / "docker-compose.yaml").read_text(encoding="utf-8"))
    # docker compose reads compose/.env, the file kafka_version() reads, for this variable.
    assert compose["services"]["kafka"]["image"] == "apache/kafka:${KAFKA_VERSION}"
    assert VERSIONS_FILE == ROOT / "compose" / ".env"
    pom = POM.read_text(encoding="utf-8")
    assert "<artifactId>kafka_2.13</artifactId>" in pom
    assert "<version>${kafka.version}</version>" in pom
    assert (
        re.search(
            r"<version>\d", pom.split("<artifactId>kafka_2.13</artifactId>")[1].split("</dependency>")[0]
        )
        is None
    )

    broken = tmp_path / ".env"
    broken.write_text("KAFKA_VERSION=latest\n", encoding="utf-8")
    with pytest.raises(ApacheKafkaError, match=r"\.env: KAFKA_VERSION: 'latest' is not a release version"):
        kafka_version(broken)
    broken.write_text("OTHER=1\n", encoding="utf-8")
    with pytest.raises(ApacheKafkaError, match="KAFKA_VERSION: not set"):
        kafka_version(broken)


def _first_line(stream: IO[str] | None, timeout_s: float) -> str:
    """The first line of a child's stdout, waiting at most `timeout_s` (a hung start fails the test
    instead of hanging it)."""
    assert stream is not None
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not found:
        raise AssertionError(f"no line on stdout within {timeout_s} s")
    return found[0]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose; /proc tells.
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


async def _round_trip(bootstrap: str, replication: int) -> None:
    topic = f"t{uuid.uuid4().hex[:10]}.ping"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=replication)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        for i in range(10):
            await producer.send_and_wait(topic, f"v{i}".encode(), key=f"k{i}".encode())
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", group_id=None
    )
    await consumer.start()
    seen: set[bytes] = set()
    try:
        while len(seen) < 10:
            for records in (await consumer.getmany(timeout_ms=1000)).values():
                seen.update(r.value for r in records if r.value is not None)
    finally:
        await consumer.stop()
    assert seen == {f"v{i}".encode() for i in range(10)}


@pytest.mark.parametrize(
    ("nodes", "stop"),
    [(1, signal.SIGINT), pytest.param(3, signal.SIGTERM, marks=pytest.mark.slow)],
    ids=["one-node-ctrl-c", "three-nodes-sigterm"],
)
async def test_make_apache_kafka_serves_then_a_stop_signal_leaves_no_process_and_no_data(
    nodes: int, stop: signal.Signals
) -> None:
    env = {**os.environ, "APACHE_KAFKA_NODES": str(nodes)}
    make = subprocess.Popen(
        ["make", "-s", "apache-kafka"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a group of its own, signalled as a terminal's Ctrl-C signals the foreground job
        start_new_session=True,
    )
    try:
        first = _first_line(make.stdout, timeout_s=240)
        found = re.fullmatch(r"KAFKA_BOOTSTRAP_SERVERS=((127\.0\.0\.1:\d+)(,127\.0\.0\.1:\d+)*)\n", first)
        assert found, first
        bootstrap = found.group(1)
        assert len(bootstrap.split(",")) == nodes
        await _round_trip(bootstrap, replication=nodes)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, stop)
        # make itself dies of the signal; the launcher below it stops Kafka and reports on stderr
        _, err = make.communicate(timeout=90)
    nodes_seen = re.findall(r"apache-kafka: node (\d+) pid (\d+) port \d+ data (\S+)", err)
    assert len(nodes_seen) == nodes, err
    assert "stopped, data removed" in err
    for _node_id, pid, data in nodes_seen:
        deadline = time.monotonic() + 30
        while _alive(int(pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(int(pid)), f"node pid {pid} still runs"
        assert not Path(data).exists(), data
        assert not Path(data).parent.exists(), Path(data).parent
