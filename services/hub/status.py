"""`fleetplace hub status`: shadow mode's agreement, read afresh from the topics and the hub.

fleetplace's side is what the scheduler published (`decisions` for the Placement generation it
decided, `sigmc-placement-decisions` for the slices) and the slices the hub serves; OCM's side is
its PlacementDecisions and Placement status on the hub. The same comparison the running bridge
makes (services/hub/agreement.py), so the command and the metric never disagree.
"""

from __future__ import annotations

from fleetplace.services.auditor.explain import explain_decision
from fleetplace.services.auditor.history import read_history
from fleetplace.services.hub.agreement import Agreement, explained, why_not
from fleetplace.services.hub.rbac import Mode
from fleetplace.services.hub.sink import HubRequests
from fleetplace.services.hub.writeback import WriteBack
from fleetplace.shared.bus.codec import DEFAULT_LIMITS, DecodeError, DecodeLimits, decode_object
from fleetplace.shared.bus.kafka import BroadcastReader
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.settings import KafkaSettings

__all__ = ["agreements"]


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
    if not any(d.chosen_by == "ocm" for a in found for d in a.differences):
        return found
    # why fleetplace did not choose what OCM chose: the decision explained from the topics
    history = await read_history(kafka, topics, limits=limits)
    out = []
    for agreement in found:
        if any(d.chosen_by == "ocm" for d in agreement.differences):
            result = explain_decision(history, agreement.placement, limits=limits).result or {}
            agreement = explained(agreement, why_not(result.get("explain") or {}))
        out.append(agreement)
    return out
