"""`fleetplace hub status`: shadow mode's agreement, read afresh from the topics and the hub.

fleetplace's side is what the scheduler published (`decisions` for the Placement generation it
decided, `sigmc-placement-decisions` for the slices) and the slices the hub serves; OCM's side is
its PlacementDecisions and Placement status on the hub. The same comparison the running bridge
makes (services/hub/agreement.py), so the command and the metric never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

from fleetplace.services.auditor.explain import NoDecision, explain_decision
from fleetplace.services.auditor.history import read_history
from fleetplace.services.hub.agreement import Agreement, explained, why_not
from fleetplace.services.hub.rbac import Mode
from fleetplace.services.hub.sink import HubRequests
from fleetplace.services.hub.writeback import WriteBack
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeError, DecodeLimits, decode_object
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings

__all__ = ["agreements", "why_not_chosen"]


async def agreements(
    kafka: KafkaSettings | str,
    topics: Topics,
    hub: HubRequests,
    limits: DecodeLimits = DEFAULT_LIMITS,
) -> list[Agreement]:
    """Every decided placement's agreement, by placement key; a cluster only OCM chose is
    explained by `fleetplace explain`'s verdict on it."""
    writeback = WriteBack(Mode.SHADOW)
    async with BroadcastReader(kafka, [topics.decisions, topics.sigmc_placement_decisions]) as reader:
        records = await reader.read_to_end()
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.offset)):
        if record.key is None:
            continue
        try:
            value = decode_object(record.value, limits)
            writeback.observe(topics.unprefixed(record.topic), record.key, value)
        except (DecodeError, ValueError):
            continue  # the workers dead-letter what does not decode; the report skips it
    found = [await writeback.agreement(hub, placement) for placement in writeback.published.placements()]
    unexplained = [a.placement for a in found if a.has_ocm_only]
    if not unexplained:
        return found
    reasons = await why_not_chosen(kafka, topics, unexplained, limits)
    return [explained(a, reasons.get(a.placement, {})) for a in found]


async def why_not_chosen(
    kafka: KafkaSettings | str,
    topics: Topics,
    placements: Iterable[str],
    limits: DecodeLimits = DEFAULT_LIMITS,
) -> dict[str, dict[str, str]]:
    """Per placement, why fleetplace did not choose each cluster it left out: its decision in
    force explained from the topics, as `fleetplace explain` does (the filter and its verdict, or
    the score that lost). A placement without a decision on the topics has no reasons."""
    history = await read_history(kafka, topics, limits=limits)
    out: dict[str, dict[str, str]] = {}
    for placement in placements:
        try:
            result = explain_decision(history, placement, limits=limits).result or {}
        except NoDecision:
            out[placement] = {}
            continue
        out[placement] = why_not(result.get("explain") or {})
    return out
