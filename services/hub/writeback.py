"""Topics → hub: the scheduler's decisions written onto the hub, and shadow mode's agreement.

The bridge feeds every record of `decisions` and `sigmc-placement-decisions` to `observe`; a
record marks its placement dirty. While the bridge leads, `write_dirty` writes each dirty
placement through the sink (shadow: the SIG-MC slices; replace: OCM's pages and the Placement
status) and, in shadow mode, compares the result with OCM's decision for the same Placement,
explaining each cluster only OCM chose with fleetplace's reason for leaving it out (`Explainer`,
asked once per pass and remembered per decision). A placement that cannot be written is logged
with the reason and retried on the next pass; the others go on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from fleetplace.services.hub.agreement import (
    Agreement,
    AgreementGauge,
    compare,
    explained,
    fleetplace_side,
    ocm_side,
)
from fleetplace.services.hub.published import PublishedDecisions
from fleetplace.services.hub.rbac import Mode, check_permissions
from fleetplace.services.hub.sink import DecisionSink, HubRequests, SinkError
from fleetplace.shared.api.ocm import PLACEMENT_LABEL
from fleetplace.shared.api.sigmc import SCHEDULER_NAME
from fleetplace.shared.logging import get_logger

__all__ = ["Explainer", "WriteBack", "agreement_on_hub"]

# placements -> per placement, fleetplace's reason for each cluster it did not choose
Explainer = Callable[[Sequence[str]], Awaitable[Mapping[str, Mapping[str, str]]]]

log = get_logger("fleetplace.hub")

_OCM = "/apis/cluster.open-cluster-management.io/v1beta1"


class WriteBack:
    def __init__(
        self, mode: Mode, gauge: AgreementGauge | None = None, explainer: Explainer | None = None
    ) -> None:
        self.mode = mode
        self.published = PublishedDecisions()
        self.dirty: set[str] = set()
        self.agreements: dict[str, Agreement] = {}
        self.gauge = gauge
        self.explainer = explainer
        # placement -> (the seq of the decision explained, why it left out each cluster)
        self._reasons: dict[str, tuple[int | None, Mapping[str, str]]] = {}

    def observe(self, topic: str, key: str, value: Mapping[str, Any] | None) -> None:
        """One record of `decisions` or `sigmc-placement-decisions` (unprefixed topic names)."""
        if topic == "decisions":
            placement = self.published.apply_decision(key, value)
        elif topic == "sigmc-placement-decisions":
            placement = self.published.apply_slice(key, value)
        else:
            return
        if placement is not None:
            self.dirty.add(placement)

    async def start(self, hub: HubRequests) -> None:
        """Refuse to run without every permission of the mode (MissingPermissions names them)."""

        async def allowed(review: dict[str, Any]) -> bool:
            answer = await hub.request(
                "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review
            )
            return bool((answer.get("status") or {}).get("allowed"))

        await check_permissions(self.mode, allowed)
        self.dirty |= set(self.published.placements())  # a new leader checks everything once

    async def write_dirty(self, hub: HubRequests) -> int:
        """Write every dirty placement; the number of writes made."""
        sink = DecisionSink(hub)
        pending, self.dirty = sorted(self.dirty), set()
        for placement in pending:
            try:
                await self._write(sink, placement)
                if self.mode is Mode.SHADOW:
                    self.agreements[placement] = await self.agreement(hub, placement)
            except SinkError as error:
                log.error("placement not written to the hub", placement=placement, error=str(error))
                self.dirty.add(placement)
            except Exception as error:
                if getattr(error, "status", None) is None:
                    raise
                log.error("placement not written to the hub", placement=placement, error=str(error))
                self.dirty.add(placement)
        if self.mode is Mode.SHADOW:
            await self._explain(pending)
            if self.gauge is not None:
                self.gauge.update(self.agreements.values())
        return sink.count.writes

    async def _explain(self, placements: Sequence[str]) -> None:
        """Each cluster only OCM chose, explained by fleetplace's reason for leaving it out; the
        reasons of one decision are asked for once. Without an explainer, or when it fails (the
        report is worth having without them), the generic text stays."""
        if self.explainer is None:
            return
        wanted = [p for p in placements if p in self.agreements and self.agreements[p].has_ocm_only]
        unknown = [
            p for p in wanted if p not in self._reasons or self._reasons[p][0] != self.published.seq(p)
        ]
        if unknown:
            try:
                found = await self.explainer(unknown)
            except Exception as error:  # the agreement stands without its reasons
                log.warning("clusters only OCM chose not explained", placements=unknown, error=str(error))
                found = {}
            for placement in unknown:
                if placement in found:
                    self._reasons[placement] = (self.published.seq(placement), found[placement])
        for placement in wanted:
            if placement in self._reasons:
                self.agreements[placement] = explained(
                    self.agreements[placement], self._reasons[placement][1]
                )

    async def _write(self, sink: DecisionSink, placement: str) -> None:
        if self.mode is Mode.SHADOW:
            await sink.write_shadow(
                placement, self.published.shadow(placement), self.published.label(placement)
            )
            return
        state = self.published.replace(placement)
        if state is not None:
            await sink.write_replace(placement, state.pages, state.status, state.evaluated_at)

    async def agreement(self, hub: HubRequests, placement: str) -> Agreement:
        """fleetplace's slices against OCM's PlacementDecisions, both as the hub serves them."""
        return await agreement_on_hub(
            hub, placement, self.published.label(placement), self.published.generation(placement)
        )


async def agreement_on_hub(hub: HubRequests, placement: str, label: str, generation: int | None) -> Agreement:
    """One placement's agreement as the hub serves both sides now: fleetplace's slices (with
    `schedulerName: fleetplace`) and OCM's PlacementDecisions, selected by the placement label
    `label`, and the Placement's generation and status. `generation`: the Placement generation
    fleetplace's latest decision was for (None: it has decided nothing). A cluster only OCM chose
    is explained generically; `explained` (services/hub/agreement.py) fills in fleetplace's reason."""
    namespace, _, name = placement.partition("/")
    selector = {"labelSelector": f"{PLACEMENT_LABEL}={label}"}
    ours = await hub.request(
        "GET",
        f"/apis/multicluster.x-k8s.io/v1alpha1/namespaces/{namespace}/placementdecisions",
        query=selector,
    )
    theirs = await hub.request("GET", f"{_OCM}/namespaces/{namespace}/placementdecisions", query=selector)
    try:
        owner = await hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/{name}")
    except Exception as error:
        if getattr(error, "status", None) != 404:
            raise
        owner = {}
    slices = [s for s in ours.get("items") or [] if s.get("schedulerName") == SCHEDULER_NAME]
    return compare(
        placement,
        fleetplace_side(slices, generation) if generation is not None else None,
        ocm_side(theirs.get("items") or [], owner),
        int((owner.get("metadata") or {}).get("generation") or 0),
        {},
    )
