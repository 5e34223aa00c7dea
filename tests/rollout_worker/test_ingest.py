"""The rollout worker's ingest: one rule, shared by the worker and the auditor's replay, for
a rollout's own inputs off the rollout's partition (docs/topics.md#rollout-topics)."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.services.auditor.history import History
from fleetplace.services.auditor.rollout_replay import RolloutReplay
from fleetplace.services.rollout.core import RolloutProcessor
from fleetplace.services.rollout.ingest import ingest
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, encode_json
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import PLACEMENT_DECISIONS, ROLLOUT_STATUS, ROLLOUTS, rollout_partition
from tests.rollout_worker.builders import placement_decisions, report, rollout_object

PARTITIONS = 4
ROLLOUT = "apps/web"
OWN = rollout_partition(ROLLOUT, PARTITIONS)
OTHER = (OWN + 1) % PARTITIONS
INPUTS = {
    ROLLOUTS: (ROLLOUT, rollout_object(ROLLOUT)),
    ROLLOUT_STATUS: (f"{ROLLOUT}/c1", report("Succeeded", at="2026-01-01T00:00:00Z")),
}


def record(topic: str, partition: int, key: str, value: dict[str, Any], offset: int = 0) -> Record:
    return Record(topic, partition, offset, key, encode_json(value), timestamp_ms=0)


def held(processor: RolloutProcessor) -> tuple[list[str], list[str]]:
    """The rollouts and the rollouts with reports the processor holds."""
    return sorted(processor.rollouts), sorted(k for k, v in processor.reports.items() if v)


@pytest.mark.parametrize("topic", sorted(INPUTS))
def test_a_rollouts_input_off_its_partition_is_rejected_naming_the_partition_it_belongs_on(
    topic: str,
) -> None:
    key, value = INPUTS[topic]
    processor = RolloutProcessor()
    rejection = ingest(processor, topic, record(topic, OTHER, key, value), PARTITIONS, DEFAULT_LIMITS)
    assert rejection is not None
    assert f"on partition {OTHER}" in rejection.reason and f"belong on partition {OWN}" in rejection.reason
    assert held(processor) == ([], [])

    assert ingest(processor, topic, record(topic, OWN, key, value), PARTITIONS, DEFAULT_LIMITS) is None
    assert held(processor) != ([], [])


def test_placement_decisions_are_read_from_every_partition() -> None:
    processor = RolloutProcessor()
    value = placement_decisions("apps/web", [("canary", ["c1"])])
    for partition in range(PARTITIONS):
        rec = record(PLACEMENT_DECISIONS, partition, "apps/web", value)
        assert ingest(processor, PLACEMENT_DECISIONS, rec, PARTITIONS, DEFAULT_LIMITS) is None
    assert "apps/web" in processor.placements


def test_the_replay_skips_exactly_what_the_worker_dead_letters() -> None:
    """The replay of the rollout's partition, fed the same records, holds what the worker's
    ingest accepted and counts as dead-lettered what it rejected."""
    records = [
        record(ROLLOUTS, OTHER, ROLLOUT, rollout_object(ROLLOUT)),  # off its partition
        record(ROLLOUT_STATUS, OTHER, *INPUTS[ROLLOUT_STATUS]),  # off its partition
        record(ROLLOUT_STATUS, OWN, *INPUTS[ROLLOUT_STATUS]),
    ]
    history = History.of(records)
    worker = RolloutProcessor()
    rejected = sum(ingest(worker, r.topic, r, PARTITIONS, DEFAULT_LIMITS) is not None for r in records)
    replay = RolloutReplay(history, OWN, PARTITIONS, DEFAULT_LIMITS)
    other = RolloutReplay(history, OTHER, PARTITIONS, DEFAULT_LIMITS)
    watermark = {(r.topic, r.partition): r.offset + 1 for r in records}
    assert replay.advance(watermark) and other.advance(watermark)
    assert rejected == replay.dead_lettered + other.dead_lettered == 2
    assert held(replay.processor) == held(worker) == ([], [ROLLOUT])
    assert held(other.processor) == ([], [])
