"""The topic catalogue: design.md's topic table as data, and idempotent topic creation.

Keys map to partitions with Kafka's default murmur2 partitioner (aiokafka's
`DefaultPartitioner`, the same as the Java client), so two topics with the same
partition count put a key in the same partition number: that is what makes
`placements` and `decisions` co-partitioned.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import NewTopic

from fleetplace.shared.bus.errors import TopicLayoutError
from fleetplace.shared.bus.kafka import make_admin, start_client
from fleetplace.shared.bus.kafka import (
    partition_for_key as partition_for_key,  # where keys land, with the catalogue
)
from fleetplace.shared.settings import KafkaSettings

DEFAULT_PREFIX = "fleetplace."
# placements, decisions and placement-decisions must share this count.
DEFAULT_WORK_PARTITIONS = 12


class TopicKind(enum.StrEnum):
    STATE = "state"
    OUTPUT = "output"
    EVENTS = "events"
    CONTROL = "control"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic of the contract, by its name without prefix."""

    name: str
    kind: TopicKind
    key: str
    partitions: int
    compacted: bool
    # Topics with the same group must have equal partition counts.
    copartition_group: str | None = None
    # Partitioned work topics follow `topics create --partitions N`; broadcast topics keep their count.
    partitioned: bool = False
    extra_config: Mapping[str, str] = field(default_factory=dict)

    @property
    def config(self) -> dict[str, str]:
        return {"cleanup.policy": "compact" if self.compacted else "delete", **self.extra_config}

    @property
    def ce_type(self) -> str:
        """The default CloudEvents type of records on this topic."""
        return f"io.fleetplace.{self.name}"


def _spec(
    name: str,
    kind: TopicKind,
    key: str,
    partitions: int,
    *,
    compacted: bool,
    copartition_group: str | None = None,
    partitioned: bool = False,
    extra_config: Mapping[str, str] | None = None,
) -> TopicSpec:
    return TopicSpec(
        name=name,
        kind=kind,
        key=key,
        partitions=partitions,
        compacted=compacted,
        copartition_group=copartition_group,
        partitioned=partitioned,
        extra_config=dict(extra_config or {}),
    )


CLUSTERS = "clusters"
CLUSTER_PROFILES = "cluster-profiles"
TAINTS = "taints"
SCORES = "scores"
CLUSTERSETS = "clustersets"
CLUSTERSETBINDINGS = "clustersetbindings"
PLACEMENTS = "placements"
DECISIONS = "decisions"
PLACEMENT_DECISIONS = "placement-decisions"
SIGMC_PLACEMENT_DECISIONS = "sigmc-placement-decisions"
QUEUE_CONFIGS = "queue-configs"
APPLICATIONS = "applications"
APP_PLACEMENTS = "app-placements"
DEADLETTER = "deadletter"
CLOCK = "clock"
ROLLOUTS = "rollouts"
ROLLOUT_STATUS = "rollout-status"
ROLLOUT_DECISIONS = "rollout-decisions"
ROLLOUT_STATE = "rollout-state"
SCORE_SOURCES = "score-sources"
SCORE_SOURCE_STATUS = "score-source-status"

_W = DEFAULT_WORK_PARTITIONS
# Broadcast state topics are read whole by every worker, so a few partitions are plenty.
CATALOGUE: tuple[TopicSpec, ...] = (
    _spec(CLUSTERS, TopicKind.STATE, "cluster name", 3, compacted=True),
    # SIG-Multicluster ClusterProfiles: a cluster source beside `clusters` (docs/cluster-inventory.md)
    _spec(CLUSTER_PROFILES, TopicKind.STATE, "<namespace>/<name>", 3, compacted=True),
    _spec(TAINTS, TopicKind.STATE, "cluster name", 3, compacted=True),
    _spec(SCORES, TopicKind.STATE, "<cluster namespace>/<name>", 6, compacted=True),
    _spec(CLUSTERSETS, TopicKind.STATE, "set name", 1, compacted=True),
    _spec(CLUSTERSETBINDINGS, TopicKind.STATE, "<namespace>/<set name>", 1, compacted=True),
    _spec(
        PLACEMENTS,
        TopicKind.STATE,
        "<namespace>/<name>",
        _W,
        compacted=True,
        copartition_group="placement",
        partitioned=True,
    ),
    # The audit history: never compacted, kept until an operator decides otherwise.
    _spec(
        DECISIONS,
        TopicKind.OUTPUT,
        "<namespace>/<name>",
        _W,
        compacted=False,
        copartition_group="placement",
        partitioned=True,
        extra_config={"retention.ms": "-1"},
    ),
    _spec(
        PLACEMENT_DECISIONS,
        TopicKind.OUTPUT,
        "<namespace>/<name>",
        _W,
        compacted=True,
        copartition_group="placement",
        partitioned=True,
    ),
    # The decision as SIG-Multicluster PlacementDecision slices, one record per slice; a slice no
    # longer needed gets a tombstone. Keyed by slice, so not co-partitioned with `placements`.
    _spec(
        SIGMC_PLACEMENT_DECISIONS,
        TopicKind.OUTPUT,
        "<namespace>/<slice name>",
        _W,
        compacted=True,
        partitioned=True,
    ),
    _spec(QUEUE_CONFIGS, TopicKind.STATE, "partition name", 1, compacted=True),
    _spec(APPLICATIONS, TopicKind.EVENTS, "application ID", _W, compacted=False, partitioned=True),
    _spec(APP_PLACEMENTS, TopicKind.OUTPUT, "application ID", _W, compacted=False, partitioned=True),
    _spec(DEADLETTER, TopicKind.OUTPUT, "original key", 3, compacted=False),
    _spec(CLOCK, TopicKind.CONTROL, "worker group", 1, compacted=False),
    # The rollout topics are partitioned by `<namespace>/<rollout>`: a rollout's status reports,
    # its diffs and its state share its partition number (see `rollout_partition`).
    _spec(
        ROLLOUTS,
        TopicKind.STATE,
        "<namespace>/<name>",
        _W,
        compacted=True,
        copartition_group="rollout",
        partitioned=True,
    ),
    _spec(
        ROLLOUT_STATUS,
        TopicKind.STATE,
        "<namespace>/<rollout>/<cluster>",
        _W,
        compacted=True,
        copartition_group="rollout",
        partitioned=True,
    ),
    _spec(
        ROLLOUT_DECISIONS,
        TopicKind.OUTPUT,
        "<namespace>/<rollout>",
        _W,
        compacted=False,
        copartition_group="rollout",
        partitioned=True,
        extra_config={"retention.ms": "-1"},
    ),
    _spec(
        ROLLOUT_STATE,
        TopicKind.OUTPUT,
        "<namespace>/<rollout>",
        _W,
        compacted=True,
        copartition_group="rollout",
        partitioned=True,
    ),
    # Score sources are split across the score workers' consumer group by key; every reader of
    # the status topic (`fleetplace scores status`) reads it whole.
    _spec(SCORE_SOURCES, TopicKind.STATE, "<namespace>/<name>", 6, compacted=True),
    _spec(SCORE_SOURCE_STATUS, TopicKind.OUTPUT, "<namespace>/<name>", 6, compacted=True),
)

_BY_NAME: dict[str, TopicSpec] = {spec.name: spec for spec in CATALOGUE}

# What `topics create` sets on the compacted topics besides the policy (docs/operations.md#compaction):
# a version stays at least a week before the cleaner may drop it (the audit window: an audit of
# the last week's decisions finds every input they read), and a tombstone is kept a day after
# compaction (a reader that was away longer never learns of the deletion, nor of the value it
# deleted: it sees neither, which is the same state).
COMPACTION_DEFAULTS: Mapping[str, str] = {
    "min.compaction.lag.ms": str(7 * 24 * 3600 * 1000),
    "delete.retention.ms": str(24 * 3600 * 1000),
}


def spec(name: str) -> TopicSpec:
    """The catalogue entry for an unprefixed topic name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown topic {name!r}; known: {', '.join(_BY_NAME)}") from None


@dataclass(frozen=True, slots=True)
class Topics:
    """Topic names with a prefix: `Topics("t1.").name("clusters") == "t1.clusters"`."""

    prefix: str = DEFAULT_PREFIX

    def name(self, topic: str) -> str:
        spec(topic)
        return self.prefix + topic

    def unprefixed(self, full_name: str) -> str:
        """The catalogue name of a full topic name (unchanged if it does not carry the prefix)."""
        return full_name[len(self.prefix) :] if full_name.startswith(self.prefix) else full_name

    def names(self, topics: Iterable[str] | None = None) -> list[str]:
        return [self.name(t) for t in (topics if topics is not None else _BY_NAME)]

    @property
    def clusters(self) -> str:
        return self.prefix + CLUSTERS

    @property
    def cluster_profiles(self) -> str:
        return self.prefix + CLUSTER_PROFILES

    @property
    def taints(self) -> str:
        return self.prefix + TAINTS

    @property
    def scores(self) -> str:
        return self.prefix + SCORES

    @property
    def clustersets(self) -> str:
        return self.prefix + CLUSTERSETS

    @property
    def clustersetbindings(self) -> str:
        return self.prefix + CLUSTERSETBINDINGS

    @property
    def placements(self) -> str:
        return self.prefix + PLACEMENTS

    @property
    def decisions(self) -> str:
        return self.prefix + DECISIONS

    @property
    def placement_decisions(self) -> str:
        return self.prefix + PLACEMENT_DECISIONS

    @property
    def sigmc_placement_decisions(self) -> str:
        return self.prefix + SIGMC_PLACEMENT_DECISIONS

    @property
    def queue_configs(self) -> str:
        return self.prefix + QUEUE_CONFIGS

    @property
    def applications(self) -> str:
        return self.prefix + APPLICATIONS

    @property
    def app_placements(self) -> str:
        return self.prefix + APP_PLACEMENTS

    @property
    def deadletter(self) -> str:
        return self.prefix + DEADLETTER

    @property
    def clock(self) -> str:
        return self.prefix + CLOCK

    @property
    def rollouts(self) -> str:
        return self.prefix + ROLLOUTS

    @property
    def rollout_status(self) -> str:
        return self.prefix + ROLLOUT_STATUS

    @property
    def rollout_decisions(self) -> str:
        return self.prefix + ROLLOUT_DECISIONS

    @property
    def rollout_state(self) -> str:
        return self.prefix + ROLLOUT_STATE

    @property
    def score_sources(self) -> str:
        return self.prefix + SCORE_SOURCES

    @property
    def score_source_status(self) -> str:
        return self.prefix + SCORE_SOURCE_STATUS


def rollout_of(key: str) -> str:
    """The rollout a key of a rollout topic belongs to: its first two segments
    (`apps/web/cluster1` → `apps/web`)."""
    namespace, _, rest = key.partition("/")
    return f"{namespace}/{rest.partition('/')[0]}"


def rollout_partition(key: str, partitions: int) -> int:
    """The partition of any rollout topic's record: the default partitioner's choice for the
    *rollout's* key. A `rollout-status` key has a third segment (the cluster), so a producer must
    pass this partition explicitly (`OutgoingRecord.partition_key`); the default partitioner
    would hash the whole key and put the report where its rollout's worker does not read."""
    return partition_for_key(rollout_of(key), partitions)


def planned_partitions(work_partitions: int | None = None) -> dict[str, int]:
    """Partition count per catalogue topic; `work_partitions` overrides the partitioned work topics."""
    if work_partitions is not None and work_partitions < 1:
        raise ValueError("partitions must be >= 1")
    return {
        s.name: (work_partitions if (work_partitions is not None and s.partitioned) else s.partitions)
        for s in CATALOGUE
    }


def check_copartitioning(partitions: Mapping[str, int]) -> None:
    """TopicLayoutError if topics of one co-partition group (by catalogue name) differ in partition count."""
    groups: dict[str, dict[str, int]] = {}
    for s in CATALOGUE:
        if s.copartition_group and s.name in partitions:
            groups.setdefault(s.copartition_group, {})[s.name] = partitions[s.name]
    for group, counts in groups.items():
        if len(set(counts.values())) > 1:
            detail = ", ".join(f"{name}={n}" for name, n in sorted(counts.items()))
            raise TopicLayoutError(
                f"co-partitioned topics ({group}) must have equal partition counts: {detail}"
            )


class TopicState(enum.StrEnum):
    CREATED = "created"
    EXISTS = "exists"
    MISSING = "missing"
    # Exists with another partition count than planned: co-partitioning may be broken.
    MISMATCH = "mismatch"


@dataclass(frozen=True, slots=True)
class TopicStatus:
    """One catalogue topic as found on (or created on) the broker."""

    spec: TopicSpec
    topic: str
    state: TopicState
    partitions: int | None
    planned_partitions: int


_TOPIC_ALREADY_EXISTS = 36


async def _existing_partitions(admin: Any) -> dict[str, int]:
    # describe_topics(None) asks for all topics: naming a missing topic in a Metadata request would
    # make Tansu auto-create it with 4 partitions.
    described: list[dict[str, Any]] = await admin.describe_topics(None)
    return {d["topic"]: len(d["partitions"]) for d in described if d.get("error_code", 0) == 0}


TOPIC_READY_TIMEOUT_S = 30.0


async def _wait_for_leaders(admin: Any, names: set[str], timeout: float = TOPIC_READY_TIMEOUT_S) -> None:
    """Until every topic in `names` is in the cluster's metadata with a leader for each partition.

    Apache Kafka answers CreateTopics before the brokers know the new topics: for a moment a
    Metadata response leaves them out (LEADER_NOT_AVAILABLE), and a client that asks then finds no
    such topic. A worker started right after `topics create` must find them."""
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        described: list[dict[str, Any]] = await admin.describe_topics(None)
        for d in described:
            partitions = d.get("partitions") or []
            if (
                d["topic"] in pending
                and d.get("error_code", 0) == 0
                and partitions
                and all(int(p.get("leader", -1)) >= 0 for p in partitions)
            ):
                pending.discard(d["topic"])
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TopicLayoutError(
                f"topics created but without a partition leader after {timeout} s: {', '.join(sorted(pending))}"
            )
        await asyncio.sleep(0.05)


async def describe_catalogue(
    kafka: KafkaSettings | str, topics: Topics, *, work_partitions: int | None = None
) -> list[TopicStatus]:
    """The catalogue topics as they are on the broker. Creates nothing."""
    admin = make_admin(kafka)
    await start_client(admin)
    try:
        existing = await _existing_partitions(admin)
    finally:
        await admin.close()
    plan = planned_partitions(_work_partitions(topics, existing, work_partitions))
    return _statuses(topics, existing, plan, created=set())


def _work_partitions(topics: Topics, existing: Mapping[str, int], requested: int | None) -> int | None:
    # Without an explicit count, an existing `placements` topic sets the plan, so missing
    # co-partitioned topics are created to match it and a chosen count is not reported as a mismatch.
    if requested is not None:
        return requested
    return existing.get(topics.placements)


def _statuses(
    topics: Topics, existing: Mapping[str, int], planned: Mapping[str, int], created: set[str]
) -> list[TopicStatus]:
    result: list[TopicStatus] = []
    for s in CATALOGUE:
        full = topics.name(s.name)
        actual = existing.get(full)
        if actual is None:
            state = TopicState.MISSING
        elif actual != planned[s.name]:
            state = TopicState.MISMATCH
        else:
            state = TopicState.CREATED if full in created else TopicState.EXISTS
        result.append(TopicStatus(s, full, state, actual, planned[s.name]))
    return result


async def ensure_topics(
    kafka: KafkaSettings | str,
    topics: Topics,
    *,
    work_partitions: int | None = None,
    replication_factor: int = 1,
    only: Iterable[str] | None = None,
    compaction: Mapping[str, str] | None = None,
) -> list[TopicStatus]:
    """Create the catalogue topics that do not exist yet (idempotent).

    `work_partitions` sets the partition count of the partitioned work topics;
    without it, an existing `placements` topic's count is used, else the default.
    Existing topics are left as they are (partition counts cannot shrink and
    Tansu cannot add partitions); a topic whose count differs from the plan is
    reported as MISMATCH. Compacted topics get COMPACTION_DEFAULTS, overridden by `compaction`
    (topic-level settings such as `min.compaction.lag.ms` or `segment.ms`). Raises TopicLayoutError when co-partitioned topics end
    up with different counts, because then a placement's decisions would land in a
    partition another worker owns.
    """
    wanted = [spec(name) for name in only] if only is not None else list(CATALOGUE)
    admin = make_admin(kafka)
    await start_client(admin)
    try:
        existing = await _existing_partitions(admin)
        planned = planned_partitions(_work_partitions(topics, existing, work_partitions))
        to_create = [s for s in wanted if topics.name(s.name) not in existing]
        created: set[str] = set()
        if to_create:
            response = await admin.create_topics(
                [
                    NewTopic(
                        topics.name(s.name),
                        planned[s.name],
                        replication_factor,
                        topic_configs=(
                            {**s.config, **COMPACTION_DEFAULTS, **(compaction or {})}
                            if s.compacted
                            else s.config
                        ),
                    )
                    for s in to_create
                ]
            )
            errors = []
            for topic, code, message, *_ in response.topic_errors:
                if code == 0:
                    created.add(topic)
                elif code != _TOPIC_ALREADY_EXISTS:  # created concurrently by someone else: fine
                    errors.append(f"{topic}: error {code} {message or ''}".rstrip())
            if errors:
                raise TopicLayoutError("could not create topics: " + "; ".join(errors))
            await _wait_for_leaders(admin, created)
            existing = await _existing_partitions(admin)
    finally:
        await admin.close()
    statuses = _statuses(topics, existing, planned, created)
    wanted_names = {s.name for s in wanted}
    statuses = [st for st in statuses if st.spec.name in wanted_names]
    check_copartitioning({st.spec.name: st.partitions for st in statuses if st.partitions is not None})
    return statuses
