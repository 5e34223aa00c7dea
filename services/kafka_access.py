"""What each worker does on Kafka: the topics it reads and writes and the consumer group it joins.

The Helm chart (compose/helm/fleetplace) grants exactly this and nothing else: its KafkaUsers'
ACLs and its KafkaTopics come from `compose/helm/fleetplace/files/kafka-access.json`, which this
module writes (`python -m fleetplace.services.kafka_access > compose/helm/fleetplace/files/kafka-access.json`)
and tests/deploy/test_kafka_access.py keeps current. Reads and groups are taken from each worker's
own `Topology` (what its runtime subscribes to and assigns); writes are listed here, and the same
test checks them against every topic the worker's module names.

Topic names are unprefixed catalogue names (shared/bus/topics.py); the chart adds the prefix.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetplace.shared.bus import topics as catalogue
from fleetplace.shared.bus.topics import CATALOGUE, DEFAULT_PREFIX, DEFAULT_WORK_PARTITIONS, Topics
from fleetplace.shared.settings import KafkaSettings, Settings

# A placeholder address: building a worker opens no connection, but its settings want one.
_BOOTSTRAP = "kafka.invalid:9092"


@dataclass(frozen=True, slots=True)
class ConditionalWrite:
    """A topic a worker writes only when a setting is on (`FLEETPLACE_SIGMC_DECISIONS=true`)."""

    topic: str
    setting: str


@dataclass(frozen=True, slots=True)
class WorkerAccess:
    """One worker's use of Kafka, by unprefixed topic name."""

    name: str
    command: tuple[str, ...]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    group: str | None
    group_setting: str | None
    conditional_writes: tuple[ConditionalWrite, ...] = field(default=())
    # Publishes through transactions where the broker grants them (KAFKA_TRANSACTIONS): its
    # transactional ids are `<group>.<topic>.<partition>` and the start-up probe's `<group>.probe`.
    transactional: bool = False

    @property
    def transactional_id_prefix(self) -> str | None:
        return f"{self.group}." if self.transactional and self.group else None

    def as_json(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "reads": list(self.reads),
            "writes": list(self.writes),
            "conditionalWrites": [{"topic": w.topic, "setting": w.setting} for w in self.conditional_writes],
            "group": self.group,
            "groupSetting": self.group_setting,
            "transactionalIdPrefix": self.transactional_id_prefix,
        }


def _settings() -> Settings:
    return Settings(kafka=KafkaSettings(bootstrap_servers=_BOOTSTRAP), topic_prefix=DEFAULT_PREFIX)


def _topology_of(build: Callable[[Settings], Any]) -> tuple[tuple[str, ...], str]:
    """The unprefixed topics a worker reads (broadcast and group) and its group id, from the
    `Topology` its runtime is built with (wall clock: the `clock` topic is for replays)."""
    worker = build(_settings())
    topology = worker.runtime.topology
    topics = Topics(DEFAULT_PREFIX)
    reads = [topics.unprefixed(t) for t in (*topology.broadcast, *topology.group)]
    return tuple(sorted(set(reads))), str(topology.group_id)


def _scheduler(settings: Settings) -> Any:
    from fleetplace.services.scheduler.worker import SchedulerWorker

    return SchedulerWorker(settings)


def _queues(settings: Settings) -> Any:
    from fleetplace.services.queue_placer.worker import QueueWorker

    return QueueWorker(settings)


def _rollout(settings: Settings) -> Any:
    from fleetplace.services.rollout.worker import RolloutWorker

    return RolloutWorker(settings)


def _scores(settings: Settings) -> Any:
    from fleetplace.services.scores.worker import ScoreWorker

    return ScoreWorker(settings)


def _worker(
    name: str,
    build: Callable[[Settings], Any],
    writes: tuple[str, ...],
    group_setting: str,
    conditional_writes: tuple[ConditionalWrite, ...] = (),
    *,
    transactional: bool,
) -> WorkerAccess:
    reads, group = _topology_of(build)
    return WorkerAccess(
        name=name,
        command=("worker", name),
        reads=reads,
        writes=tuple(sorted(writes)),
        group=group,
        group_setting=group_setting,
        conditional_writes=conditional_writes,
        transactional=transactional,
    )


def _hub(settings: Settings) -> Any:
    from fleetplace.services.hub.worker import HubBridge

    return HubBridge(settings)


def _hub_access() -> WorkerAccess:
    """The hub bridge (`fleetplace hub run`) reads its kinds' topics whole (they are the store of
    what it published) and writes them; it joins no consumer group."""
    from fleetplace.services.hub.kinds import HUB_KINDS

    reads, _ = _topology_of(_hub)
    return WorkerAccess(
        name="hub",
        command=("hub", "run"),
        reads=reads,
        writes=tuple(sorted(k.topic for k in HUB_KINDS)),
        group=None,
        group_setting=None,
    )


def workers() -> tuple[WorkerAccess, ...]:
    """Every worker the chart deploys, in the chart's order."""
    return (
        _worker(
            "scheduler",
            _scheduler,
            (catalogue.DECISIONS, catalogue.PLACEMENT_DECISIONS, catalogue.DEADLETTER),
            "FLEETPLACE_SCHEDULER_GROUP_ID",
            (ConditionalWrite(catalogue.SIGMC_PLACEMENT_DECISIONS, "FLEETPLACE_SIGMC_DECISIONS"),),
            transactional=True,
        ),
        _worker(
            "queues",
            _queues,
            (catalogue.APP_PLACEMENTS, catalogue.DEADLETTER),
            "FLEETPLACE_QUEUE_PLACER_GROUP_ID",
            transactional=True,
        ),
        _worker(
            "rollout",
            _rollout,
            (catalogue.ROLLOUT_DECISIONS, catalogue.ROLLOUT_STATE, catalogue.DEADLETTER),
            "FLEETPLACE_ROLLOUT_GROUP_ID",
            transactional=True,
        ),
        _worker(
            "scores",
            _scores,
            (catalogue.SCORES, catalogue.SCORE_SOURCE_STATUS, catalogue.DEADLETTER),
            "FLEETPLACE_SCORE_GROUP_ID",
            transactional=False,
        ),
        _hub_access(),
    )


def topics_json() -> dict[str, Any]:
    """The catalogue as `topics create` makes it: partitions (the partitioned work topics follow
    `--partitions`), cleanup policy and the other topic configs."""
    return {
        spec.name: {
            "partitions": spec.partitions,
            "partitioned": spec.partitioned,
            "config": dict(sorted(spec.config.items())),
        }
        for spec in CATALOGUE
    }


# `fleetplace topics create` lists the topics (Metadata: Describe) and creates the missing ones
# (CreateTopics with their configs: Create); it reads no config back.
TOPICS_JOB_OPERATIONS = ("Create", "Describe")


def access_json() -> dict[str, Any]:
    """The file the chart reads: the topic catalogue and each worker's access."""
    return {
        "generatedBy": "python -m fleetplace.services.kafka_access",
        "defaultPrefix": DEFAULT_PREFIX,
        "defaultWorkPartitions": DEFAULT_WORK_PARTITIONS,
        "topics": topics_json(),
        "workers": {w.name: w.as_json() for w in workers()},
        "topicsJob": {"operations": list(TOPICS_JOB_OPERATIONS)},
    }


def render() -> str:
    return json.dumps(access_json(), indent=2) + "\n"


def main(out: Callable[[str], Any] = sys.stdout.write) -> None:
    out(render())


def operations(access: WorkerAccess, settings: Mapping[str, str]) -> dict[tuple[str, str], frozenset[str]]:
    """The Kafka ACL operations a worker needs, by (resource type, unprefixed name): Read and
    Describe on what it reads, Write and Describe on what it writes, Read on its group, and Write
    and Describe on its transactional ids (`<prefix>*`) unless KAFKA_TRANSACTIONS is false."""
    needed: dict[tuple[str, str], set[str]] = {}
    for topic in access.reads:
        needed.setdefault(("topic", topic), set()).update(("Read", "Describe"))
    writes = list(access.writes) + [
        w.topic for w in access.conditional_writes if settings.get(w.setting, "").lower() == "true"
    ]
    for topic in writes:
        needed.setdefault(("topic", topic), set()).update(("Write", "Describe"))
    if access.group is not None:
        needed[("group", access.group)] = {"Read"}
    prefix = access.transactional_id_prefix
    if prefix is not None and settings.get("KAFKA_TRANSACTIONS", "auto").lower() != "false":
        needed[("transactionalId", f"{prefix}*")] = {"Write", "Describe"}
    return {k: frozenset(v) for k, v in needed.items()}


if __name__ == "__main__":
    main()
