"""Each worker's Kafka access (services/kafka_access.py) is what its code does, and the chart's
copy of it (compose/helm/fleetplace/files/kafka-access.json) is current."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services import kafka_access
from fleetplace.services.hub.kinds import HUB_KINDS
from fleetplace.shared.bus.topics import CATALOGUE, DEFAULT_WORK_PARTITIONS
from tests.deploy.chart import CHART, ROOT

ACCESS_FILE = CHART / "files" / "kafka-access.json"
CATALOGUE_NAMES = {s.name for s in CATALOGUE}
WORKER_MODULES = {
    "scheduler": ROOT / "services" / "scheduler" / "worker.py",
    "queues": ROOT / "services" / "queue_placer" / "worker.py",
    "rollout": ROOT / "services" / "rollout" / "worker.py",
    "scores": ROOT / "services" / "scores" / "worker.py",
}
# Read only with FLEETPLACE_CLOCK=topic (replays and tests), which the chart does not deploy.
REPLAY_ONLY = {"clock"}


def test_the_charts_access_file_is_current() -> None:
    assert ACCESS_FILE.read_text() == kafka_access.render(), (
        "regenerate it: python -m fleetplace.services.kafka_access > "
        "compose/helm/fleetplace/files/kafka-access.json"
    )


def test_every_worker_uses_only_catalogue_topics() -> None:
    for worker in kafka_access.workers():
        used = set(worker.reads) | set(worker.writes) | {w.topic for w in worker.conditional_writes}
        assert used <= CATALOGUE_NAMES, worker.name


def test_the_topics_are_the_catalogue_as_topics_create_makes_them() -> None:
    topics = kafka_access.topics_json()
    assert set(topics) == CATALOGUE_NAMES
    for spec in CATALOGUE:
        assert topics[spec.name]["partitions"] == spec.partitions
        assert topics[spec.name]["partitioned"] == spec.partitioned
        assert topics[spec.name]["config"] == spec.config
    assert kafka_access.access_json()["defaultWorkPartitions"] == DEFAULT_WORK_PARTITIONS


def _topics_named(module: Path) -> set[str]:
    """The catalogue topics a worker module names through `self.topics.<topic>`."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "topics"
            and node.attr not in ("name", "names", "unprefixed", "prefix")
        ):
            names.add(node.attr.replace("_", "-"))
    return names


@pytest.mark.parametrize("worker", sorted(WORKER_MODULES))
def test_every_topic_a_worker_module_names_is_in_its_access(worker: str) -> None:
    """A topic added to a worker's code without its access (and so without its ACL) fails here."""
    (access,) = (w for w in kafka_access.workers() if w.name == worker)
    named = _topics_named(WORKER_MODULES[worker]) - REPLAY_ONLY
    assert named, worker  # the pattern finds what is there
    covered = set(access.reads) | set(access.writes) | {w.topic for w in access.conditional_writes}
    assert named - covered == set()


def test_the_scheduler_reads_its_broadcast_tables_and_owns_placements_in_its_group() -> None:
    scheduler = next(w for w in kafka_access.workers() if w.name == "scheduler")
    assert "placements" in scheduler.reads and "clusters" in scheduler.reads
    assert scheduler.group == "fleetplace-scheduler"
    assert "clock" not in scheduler.reads


SCHEDULER = next(w for w in kafka_access.workers() if w.name == "scheduler")


@settings(deadline=None)
@given(
    sigmc=st.sampled_from(["true", "True", "false", "", None]),
    other=st.dictionaries(
        st.sampled_from(["FLEETPLACE_LOG_LEVEL", "FLEETPLACE_CLOCK", "KAFKA_TRANSACTIONS"]),
        st.sampled_from(["auto", "true", "false", "FALSE", "debug", ""]),
    ),
)
def test_the_scheduler_may_write_sigmc_slices_only_when_asked(
    sigmc: str | None, other: dict[str, str]
) -> None:
    scheduler = SCHEDULER
    given_settings = dict(other) | ({"FLEETPLACE_SIGMC_DECISIONS": sigmc} if sigmc is not None else {})
    ops = kafka_access.operations(scheduler, given_settings)
    writes_sigmc = "Write" in ops.get(("topic", "sigmc-placement-decisions"), frozenset())
    assert writes_sigmc == (sigmc is not None and sigmc.lower() == "true")
    # reads always come with Describe, and the group only with Read
    assert all("Describe" in ops[("topic", t)] for t in scheduler.reads)
    assert ops[("group", "fleetplace-scheduler")] == frozenset({"Read"})
    # its transactional ids unless transactions are off
    transactions_off = given_settings.get("KAFKA_TRANSACTIONS", "auto").lower() == "false"
    assert (("transactionalId", "fleetplace-scheduler.*") in ops) is not transactions_off


def test_the_hub_bridge_writes_and_reads_back_the_topics_of_the_kinds_it_publishes() -> None:
    hub = next(w for w in kafka_access.workers() if w.name == "hub")
    assert set(hub.writes) == {k.topic for k in HUB_KINDS}
    # and reads the decisions it writes back to the hub (services/hub/writeback.py)
    assert set(hub.reads) == set(hub.writes) | {"decisions", "sigmc-placement-decisions"}
    assert hub.group is None and hub.command == ("hub", "run")
