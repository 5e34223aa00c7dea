"""Decision records grouped back into the worker's evaluation batches.

The scheduler worker takes one watermark per batch (`inputs`), then evaluates the batch's dirty
placements in namespace/name order, committing each new decision before the next one (so
Balance sees the earlier decisions of the same batch). A batch is therefore identified by who
evaluated it (the CloudEvents source: one worker instance), its `inputs` and its `evaluatedAt`;
its diffs are replayed in key order.

Batches of one instance are ordered by the clock, then by how far the instance had read its
broadcast topics (which only grows), then its placements, then by where the diffs landed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.shared.bus.kafka import TP, parse_watermark_key
from fleetplace.shared.bus.topics import PLACEMENTS


@dataclass(frozen=True)
class DecisionBatch:
    """The diffs one worker instance published from one evaluation batch, in evaluation order."""

    source: str
    evaluated_at: str
    now: datetime
    inputs: tuple[tuple[str, int], ...]
    diffs: tuple[DecisionRecord, ...]

    @cached_property
    def watermark(self) -> Mapping[TP, int]:
        """(topic without prefix, partition) -> next offset consumed; absent partitions were not read."""
        return {parse_watermark_key(k): v for k, v in self.inputs}

    @cached_property
    def order_key(self) -> tuple[datetime, int, int, int]:
        broadcast = placements = 0
        for (topic, _), offset in self.watermark.items():
            if topic == PLACEMENTS:
                placements += offset
            else:
                broadcast += offset
        return (self.now, broadcast, placements, min(d.offset for d in self.diffs))


def group_batches(records: Iterable[DecisionRecord]) -> list[DecisionBatch]:
    """Batches in replay order: per source the order they were evaluated, sources interleaved by time."""
    groups: dict[tuple[str, str, tuple[tuple[str, int], ...]], list[DecisionRecord]] = {}
    # a batch's diffs lie next to each other in a partition: the previous record's batch is
    # tried first, which spares hashing a watermark of a few dozen partitions per diff
    last: DecisionRecord | None = None
    members: list[DecisionRecord] = []
    for record in records:
        if (
            last is not None
            and record.inputs is last.inputs
            and record.source == last.source
            and record.evaluated_at == last.evaluated_at
        ):
            members.append(record)
            continue
        key = (record.source, record.evaluated_at, record.inputs)
        found = groups.get(key)
        if found is None:
            found = groups[key] = []
        members = found
        members.append(record)
        last = record
    batches = [
        DecisionBatch(
            source=source,
            evaluated_at=evaluated_at,
            now=diffs[0].now,
            inputs=inputs,
            diffs=tuple(sorted(diffs, key=lambda d: (d.key, d.seq))),
        )
        for (source, evaluated_at, inputs), diffs in groups.items()
    ]
    batches.sort(key=lambda b: (b.order_key, b.source))
    return batches
