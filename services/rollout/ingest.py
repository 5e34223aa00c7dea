"""One consumed record into the rollout worker's state stores, or the reason it is rejected.

The worker and the auditor's replay of a worker ingest through `ingest`: the same decoder, the
same limits, the same partition rule and the same rejections, so a record the worker
dead-letters is one the replay skips.

The partition rule (docs/topics.md#rollout-topics): a rollout's own inputs — its object on
`rollouts` and its deployers' reports on `rollout-status` — belong on the partition of the
rollout's key, the one partition whose owner evaluates the rollout. A record on another partition
is read by that partition's owner, which evaluates the rollout only if it happens to own the
rollout's partition too: what happens would depend on the group's assignment, and no replay could
tell. It is rejected, so the mistake shows as a dead letter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fleetplace.services.rollout.core import ROLLOUT_STATUS, ROLLOUTS, InvalidRecord, RolloutProcessor
from fleetplace.shared.bus.codec import DecodedRecord, DecodeLimits, decode_record
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import rollout_of, rollout_partition

REJECTED: tuple[type[Exception], ...] = (DecodeError, ValueError, KeyError, TypeError)
"""What sends a record to the dead-letter topic instead of into the state: a key or value the
codec cannot decode, or a value the processor refuses (`InvalidRecord` and `ObjectError` are
ValueErrors; a malformed value can also fail as a KeyError or TypeError while it is read)."""

# the topics whose records are a rollout's own inputs, keyed by the rollout (and a cluster)
ON_THE_ROLLOUTS_PARTITION = (ROLLOUTS, ROLLOUT_STATUS)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A record left out of the state; `reason` is what its dead letter says."""

    reason: str


def check_partition(topic: str, key: str, partition: int, partitions: int) -> None:
    """InvalidRecord when a rollout's own input is off the rollout's partition (`partitions`: of
    the rollout topics; 0 when not known yet, and then nothing is checked)."""
    if topic not in ON_THE_ROLLOUTS_PARTITION or partitions <= 0:
        return
    expected = rollout_partition(key, partitions)
    if partition != expected:
        raise InvalidRecord(
            f"on partition {partition}; the records of rollout {rollout_of(key)} belong on partition "
            f"{expected}, the partition of the rollout's key"
        )


def ingest(
    processor: RolloutProcessor,
    topic: str,
    record: Record,
    partitions: int,
    limits: DecodeLimits,
    own: Callable[[str, DecodedRecord], bool] | None = None,
) -> Rejection | None:
    """Decode `record` (from `topic`, without prefix), check its partition and apply it to
    `processor`; the Rejection when it must not be. `own`, when given, sees the topic and the
    decoded record first and returns True for a record it took itself (the worker's clock)."""
    try:
        decoded = decode_record(record, limits)
        if own is not None and own(topic, decoded):
            return None
        check_partition(topic, decoded.key, record.partition, partitions)
        processor.apply(topic, decoded.key, decoded.value, record.timestamp_ms)
    except REJECTED as e:
        return Rejection(str(e))
    return None
