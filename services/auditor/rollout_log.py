"""The rollout diffs of a history: the rollout topics read from a broker, and each record of
`rollout-decisions` parsed into a `RolloutDiffRecord` (or an `InvalidRolloutDiff`), per partition
in offset order."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetplace.services.auditor.history import ROLLOUT_TOPICS, History, Progress, read_topics
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeError, DecodeLimits, decode_object
from fleetplace.shared.bus.envelope import H_SOURCE
from fleetplace.shared.bus.kafka import TP, parse_watermark_key
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import (
    ROLLOUT_DECISIONS,
    ROLLOUT_STATUS,
    ROLLOUTS,
    Topics,
    TopicState,
    describe_catalogue,
)
from fleetplace.shared.rollout import Instant
from fleetplace.shared.settings import KafkaSettings


async def read_rollout_topics(
    kafka: KafkaSettings | str,
    topics: Topics,
    history: History,
    *,
    limits: DecodeLimits = DEFAULT_LIMITS,
    progress: Progress | None = None,
) -> bool:
    """Add the rollout topics' records, from the beginning up to the high watermarks at start, to
    `history` (sealed again). False, and nothing added, when the rollout topics do not exist."""
    statuses = {s.spec.name: s for s in await describe_catalogue(kafka, topics)}
    if any(statuses[name].state is TopicState.MISSING for name in ROLLOUT_TOPICS):
        return False
    await read_topics(kafka, topics, ROLLOUT_TOPICS, history, limits=limits, progress=progress)
    return True


def read_rollout_history(
    kafka: KafkaSettings | str, topics: Topics, *, limits: DecodeLimits = DEFAULT_LIMITS
) -> History | None:
    """A history of the rollout topics alone (None when they do not exist). Call it with no
    event loop running: it runs its own."""
    history = History()
    found = asyncio.run(read_rollout_topics(kafka, topics, history, limits=limits))
    return history if found else None


@dataclass(frozen=True, slots=True)
class RolloutDiffRecord:
    """One rollout diff as read from `rollout-decisions`, with where it is and who wrote it."""

    key: str
    partition: int
    offset: int
    source: str  # the CloudEvents source: one rollout worker instance
    value: Mapping[str, Any]
    seq: int
    evaluated_at: str
    now: Instant
    watermark: Mapping[TP, int]  # `inputs`: (topic, partition) -> next offset

    @property
    def where(self) -> str:
        return f"{ROLLOUT_DECISIONS}/{self.partition}@{self.offset}"

    @property
    def deleted(self) -> bool:
        return bool(self.value.get("deleted", False))

    @property
    def trigger(self) -> Mapping[str, Any]:
        trigger = self.value.get("trigger")
        return trigger if isinstance(trigger, Mapping) else {}


@dataclass(frozen=True, slots=True)
class InvalidRolloutDiff:
    """A record on `rollout-decisions` that is not a rollout diff: nothing a worker publishes."""

    key: str | None
    partition: int
    offset: int
    error: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "record": f"{ROLLOUT_DECISIONS}/{self.partition}@{self.offset}",
            "error": self.error,
        }


def parse_rollout_diff(record: Record, limits: DecodeLimits = DEFAULT_LIMITS) -> RolloutDiffRecord | None:
    """A RolloutDiffRecord, or None for a tombstone; ValueError (or DecodeError) says what is wrong."""
    value = decode_object(record.value, limits)
    if value is None:
        return None
    key, seq, evaluated_at, inputs = (value.get(f) for f in ("rollout", "seq", "evaluatedAt", "inputs"))
    if not isinstance(key, str) or key != record.key:
        raise ValueError(f"rollout {key!r} does not match the record key {record.key!r}")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError(f"seq must be a positive integer, got {seq!r}")
    if not isinstance(evaluated_at, str):
        raise ValueError("evaluatedAt is missing")
    watermark: dict[TP, int] = {}
    for name, offset in inputs.items() if isinstance(inputs, dict) else [(None, None)]:
        if not isinstance(name, str) or not isinstance(offset, int) or isinstance(offset, bool):
            raise ValueError("inputs must map '<topic>/<partition>' to offsets")
        watermark[parse_watermark_key(name)] = offset
    source = record.header(H_SOURCE)
    return RolloutDiffRecord(
        key,
        record.partition,
        record.offset,
        "" if source is None else source.decode("utf-8", "replace"),
        value,
        seq,
        evaluated_at,
        Instant.parse(evaluated_at),
        watermark,
    )


@dataclass
class RolloutLog:
    """The rollout diffs of a history, per `rollout-decisions` partition in offset order."""

    diffs: list[RolloutDiffRecord] = field(default_factory=list)
    invalid: list[InvalidRolloutDiff] = field(default_factory=list)
    partitions: int = 0  # of the rollout topics
    _by_seq: dict[tuple[str, int], RolloutDiffRecord] = field(default_factory=dict)

    @classmethod
    def of(cls, history: History, limits: DecodeLimits = DEFAULT_LIMITS) -> RolloutLog:
        log = cls()
        # the worker hashes keys over the partitions of `rollouts`: all of them are in `ends`
        # when read from a broker; a history made of records knows those it holds
        numbers = {p for (t, p) in history.ends if t == ROLLOUTS} or {
            p for (t, p) in history.partitions if t in (ROLLOUTS, ROLLOUT_STATUS, ROLLOUT_DECISIONS)
        }
        log.partitions = max(numbers) + 1 if numbers else 0
        for partition in range(log.partitions):
            for record in history.records((ROLLOUT_DECISIONS, partition)):
                try:
                    parsed = parse_rollout_diff(record, limits)
                except (DecodeError, ValueError) as e:
                    log.invalid.append(
                        InvalidRolloutDiff(record.key, record.partition, record.offset, str(e))
                    )
                    continue
                if parsed is not None:
                    log.diffs.append(parsed)
                    log._by_seq.setdefault((parsed.key, parsed.seq), parsed)
        return log

    def diff(self, key: str, seq: int) -> RolloutDiffRecord | None:
        """The (first) record of a rollout's seq."""
        return self._by_seq.get((key, seq))
