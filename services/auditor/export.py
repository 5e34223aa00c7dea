"""`fleetplace export placementdecisions`: the current decisions as OCM PlacementDecision objects,
or (`--format sig-mc`) as the SIG-Multicluster slices the worker keeps on `sigmc-placement-decisions`.

Read from `placement-decisions` (the compacted current state the worker writes beside every
diff). If that topic holds nothing — an older deployment, or it was deleted — the `decisions`
log is folded instead, through the worker's own paging (`SchedulerProcessor.placement_decisions`),
so both sources give the same objects: pages of 100 clusters per decision group, named
`<placement>-decision-<k>`, labelled with the placement and the group's name and index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fleetplace.services.scheduler.core import SchedulerProcessor
from fleetplace.shared.api.decisions import PlacementDecisions
from fleetplace.shared.api.sigmc import DECISION_INDEX_LABEL, DECISION_KEY_LABEL
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeError, DecodeLimits, decode_object
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.records import Record
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings


@dataclass
class _Latest:
    seq: int
    value: PlacementDecisions | None  # None: deleted


def fold_placement_decisions(
    records: Iterable[Record], limits: DecodeLimits = DEFAULT_LIMITS
) -> dict[str, PlacementDecisions]:
    """Current state per placement from `placement-decisions` records (highest seq; a tombstone deletes)."""
    latest: dict[str, _Latest] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        if record.key is None:
            continue
        if record.value is None:
            seq = latest[record.key].seq if record.key in latest else 0
            latest[record.key] = _Latest(seq, None)
            continue
        try:
            value = PlacementDecisions.model_validate(decode_object(record.value, limits))
        except (DecodeError, ValidationError):
            continue
        current = latest.get(record.key)
        if current is None or current.value is None or value.seq > current.seq:
            latest[record.key] = _Latest(value.seq, value)
    return {k: v.value for k, v in sorted(latest.items()) if v.value is not None}


def fold_decisions(
    records: Iterable[Record], limits: DecodeLimits = DEFAULT_LIMITS
) -> dict[str, PlacementDecisions]:
    """Current state per placement from the `decisions` log, paged as the worker pages it."""
    processor = SchedulerProcessor(owns=lambda key: False)
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        if record.key is None:
            continue
        try:
            processor.apply("decisions", record.key, decode_object(record.value, limits))
        except (DecodeError, ValueError):
            continue
    out: dict[str, PlacementDecisions] = {}
    for key in sorted(processor.published):
        current = processor.placement_decisions(key)
        if current is not None:
            out[key] = PlacementDecisions.model_validate(current)
    return out


async def current_decisions(
    kafka: KafkaSettings | str, topics: Topics, limits: DecodeLimits = DEFAULT_LIMITS
) -> tuple[dict[str, PlacementDecisions], str]:
    """The current decision of every placement, and which topic it came from."""
    async with BroadcastReader(kafka, [topics.placement_decisions]) as reader:
        records = await reader.read_to_end()
    if records:
        return fold_placement_decisions(records, limits), topics.placement_decisions
    async with BroadcastReader(kafka, [topics.decisions]) as reader:
        records = await reader.read_to_end()
    return fold_decisions(records, limits), topics.decisions


def kubernetes_objects(current: Mapping[str, PlacementDecisions]) -> list[dict[str, Any]]:
    """Every page as a Kubernetes object, as the OCM CRD defines it (camelCase; an integer score)."""
    return [
        page.model_dump(mode="json", by_alias=True, exclude_none=True)
        for key in sorted(current)
        for page in current[key].items
    ]


def fold_sigmc_slices(
    records: Iterable[Record], limits: DecodeLimits = DEFAULT_LIMITS
) -> list[dict[str, Any]]:
    """The current SIG-MC PlacementDecision slices from `sigmc-placement-decisions` records: the
    last record of each slice key (a key stays in one partition, so offsets order it), tombstones
    deleting; sorted by namespace, decision key and decision index."""
    latest: dict[str, dict[str, Any] | None] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        if record.key is None:
            continue
        try:
            value = decode_object(record.value, limits) if record.value is not None else None
        except DecodeError:
            continue
        latest[record.key] = value if isinstance(value, dict) else None

    def order(s: Mapping[str, Any]) -> tuple[str, str, int]:
        meta = s.get("metadata") or {}
        labels = meta.get("labels") or {}
        index = str(labels.get(DECISION_INDEX_LABEL, "0"))
        return (
            str(meta.get("namespace", "")),
            str(labels.get(DECISION_KEY_LABEL, "")),
            int(index) if index.isdigit() else 0,
        )

    return sorted((v for v in latest.values() if v is not None), key=order)


async def current_sigmc_slices(
    kafka: KafkaSettings | str, topics: Topics, limits: DecodeLimits = DEFAULT_LIMITS
) -> list[dict[str, Any]]:
    async with BroadcastReader(kafka, [topics.sigmc_placement_decisions]) as reader:
        records = await reader.read_to_end()
    return fold_sigmc_slices(records, limits)
