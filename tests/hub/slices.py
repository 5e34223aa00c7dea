"""Decisions as the scheduler publishes them, for the hub sink's tests: the SIG-MC slices from the
product's slice builder and the OCM pages through `fleetplace export`'s own fold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from fleetplace.services.auditor.export import fold_decisions, kubernetes_objects
from fleetplace.shared.api.decision_diff import DecisionDiff, DecisionGroup, DecisionTrigger
from fleetplace.shared.api.sigmc import slices
from fleetplace.shared.bus.records import Record

Groups = Sequence[tuple[str, int, Sequence[str]]]

SATISFIED = {
    "type": "PlacementSatisfied",
    "status": "True",
    "reason": "AllDecisionsScheduled",
    "message": "All cluster decisions scheduled",
}
CONFIGURED = {
    "type": "PlacementMisconfigured",
    "status": "False",
    "reason": "Succeedconfigured",
    "message": "Placement configurations check pass",
}


def sigmc_slices(
    key: str, groups: Groups, reasons: Mapping[str, str] | None = None, seq: int = 1
) -> list[dict[str, Any]]:
    return slices(key, groups, reasons or {}, lambda c: "fleet", seq)


def diff(key: str, groups: Groups, seq: int = 1) -> DecisionDiff:
    clusters = tuple(c for _, _, cs in groups for c in cs)
    return DecisionDiff(
        placement=key,
        seq=seq,
        evaluated_at="2026-12-01T00:00:00Z",
        trigger=DecisionTrigger("placement", key),
        decisions=clusters,
        groups=tuple(DecisionGroup(n, i, tuple(cs)) for n, i, cs in groups),
        status={"numberOfSelectedClusters": len(clusters), "conditions": [CONFIGURED, SATISFIED]},
    )


def ocm_pages(key: str, groups: Groups, seq: int = 1) -> list[dict[str, Any]]:
    """The pages `fleetplace export placementdecisions` prints for this decision."""
    record = Record("decisions", 0, 0, key, orjson.dumps(diff(key, groups, seq).to_value()))
    return kubernetes_objects(fold_decisions([record]))


def served(obj: Mapping[str, Any], version: int) -> dict[str, Any]:
    """`obj` as an API server serves it: with the fields the server adds."""
    out = orjson.loads(orjson.dumps(obj))
    out["metadata"].update(
        {
            "uid": f"uid-{out['metadata']['name']}",
            "resourceVersion": str(version),
            "generation": 1,
            "creationTimestamp": "2026-12-01T00:00:00Z",
            "managedFields": [{"manager": "fleetplace", "operation": "Update"}],
        }
    )
    return out  # type: ignore[no-any-return]
