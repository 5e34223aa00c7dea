"""One consumed record into the scheduler's state stores, or the reason it is rejected.

The worker, the auditor's replay of a worker, `simulate --sequence` and the tests ingest through
`ingest`: the same decoder, the same limits and the same list of rejections, so a record the
worker dead-lettered is one the replay skips and one a sequence fails on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.shared.bus.codec import DecodedRecord, DecodeLimits, decode_record
from fleetplace.shared.bus.errors import DecodeError
from fleetplace.shared.bus.records import Record

REJECTED: tuple[type[Exception], ...] = (DecodeError, ValueError, KeyError, TypeError)
"""What sends a record to the dead-letter topic instead of into the state: a key or value the
codec cannot decode, or a value the processor refuses (`InvalidRecord` is a ValueError; a
malformed value can also fail as a KeyError or TypeError while it is read)."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """A record left out of the state; `reason` is what its dead letter says."""

    reason: str


def ingest(
    processor: SchedulerProcessor,
    topic: str,
    record: Record,
    limits: DecodeLimits,
    own: Callable[[str, DecodedRecord], bool] | None = None,
) -> Rejection | None:
    """Decode `record` (from `topic`, without prefix) and apply it to `processor`; the Rejection
    when it must not be. `own`, when given, sees the topic and the decoded record first and returns True for a
    record it took itself (the worker's clock); it may reject it by raising one of `REJECTED`."""
    try:
        decoded = decode_record(record, limits)
        if own is None or not own(topic, decoded):
            processor.apply(topic, decoded.key, decoded.value)
    except REJECTED as e:
        return Rejection(str(e))
    return None
