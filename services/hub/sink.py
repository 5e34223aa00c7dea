"""The sink: one placement's decision written onto the hub (docs/hub.md#writing-decisions-back).

For each placement it reads the slices the hub serves, plans the writes (`plan.py`: the move
order, nothing when nothing changed) and makes them as updates carrying the resourceVersion it
read, with field manager `fleetplace` and strict field validation. A 409 means the hub changed
since the read: it reads again and plans again from what is served then, a few times before it
gives up with an error naming the placement. Shadow mode never replaces a slice another scheduler
wrote (another `schedulerName`); replace mode writes OCM's pages with their status through the
status subresource, then the Placement's status.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fleetplace.services.hub.desired import (
    OCM,
    SIGMC,
    SliceFormat,
    placement_label,
    placement_status,
    replace_desired,
)
from fleetplace.services.hub.plan import Remove, plan_placement
from fleetplace.shared.api.ocm import PLACEMENT_LABEL
from fleetplace.shared.api.sigmc import SCHEDULER_NAME

__all__ = ["FIELD_MANAGER", "DecisionSink", "ForeignSlice", "HubRequests", "SinkError", "WriteCount"]

Obj = dict[str, Any]

FIELD_MANAGER = "fleetplace"
_WRITE_QUERY = {"fieldManager": FIELD_MANAGER, "fieldValidation": "Strict"}
_OCM = "/apis/cluster.open-cluster-management.io/v1beta1"
_SIGMC = "/apis/multicluster.x-k8s.io/v1alpha1"


class HubRequests(Protocol):
    """The bridge's one path to the API server (`fleetplace.services.hub.api.HubApi`): a request
    and its decoded JSON answer; a refusal raises an exception with the HTTP `status`."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]: ...


class SinkError(Exception):
    """A placement's decision could not be written."""


class ForeignSlice(SinkError):
    """A slice the bridge would write is another scheduler's."""


def _status(error: Exception) -> int | None:
    status = getattr(error, "status", None)
    return status if isinstance(status, int) else None


@dataclass
class WriteCount:
    """Requests that changed the hub (creates, updates, status updates, deletes)."""

    writes: int = 0


class _Replan(Exception):
    """The hub changed under a write (409, or 404 on an object read a moment ago)."""


class DecisionSink:
    def __init__(self, hub: HubRequests, *, attempts: int = 5) -> None:
        self.hub = hub
        self.attempts = attempts
        self.count = WriteCount()

    # ---- shadow mode ----------------------------------------------------------------------

    async def write_shadow(
        self, placement: str, desired: Mapping[str, Obj], label: str | None = None
    ) -> None:
        """Make the hub serve exactly `desired` (SIG-MC slices by name) as fleetplace's slices of
        `placement` (`namespace/name`, its slices labelled `label`, by default its name); an empty
        `desired` deletes them."""
        namespace, _, name = placement.partition("/")
        label = label or placement_label(desired.values()) or name
        base = f"{_SIGMC}/namespaces/{namespace}/placementdecisions"
        for _ in range(self.attempts):
            listed = await self._list(base, label)
            foreign = sorted(
                n for n, o in listed.items() if o.get("schedulerName") != SCHEDULER_NAME and n in desired
            )
            if foreign:
                raise ForeignSlice(
                    f"placement {placement}: PlacementDecision {namespace}/{foreign[0]} belongs to scheduler "
                    f"{listed[foreign[0]].get('schedulerName')!r}, not {SCHEDULER_NAME!r}; not overwritten"
                )
            served = {n: o for n, o in listed.items() if o.get("schedulerName") == SCHEDULER_NAME}
            try:
                await self._apply(SIGMC, base, name, served, desired, status=False)
                return
            except _Replan:
                continue
        raise SinkError(
            f"placement {placement}: the hub kept changing under {self.attempts} attempts to write"
        )

    # ---- replace mode ---------------------------------------------------------------------

    async def write_replace(
        self,
        placement: str,
        pages: Sequence[Mapping[str, Any]],
        implied_status: Mapping[str, Any],
        evaluated_at: str,
    ) -> None:
        """Write OCM's PlacementDecision `pages` of `placement` (as `fleetplace export` prints
        them) owned by the Placement, then the Placement's status. Nothing when the Placement is
        not on the hub: a page without its owner would never be collected."""
        namespace, _, name = placement.partition("/")
        base = f"{_OCM}/namespaces/{namespace}/placementdecisions"
        owner_path = f"{_OCM}/namespaces/{namespace}/placements/{name}"
        for _ in range(self.attempts):
            owner = await self._get(owner_path)
            if owner is None:
                return
            desired = replace_desired(pages, str(owner["metadata"]["uid"]))
            served = await self._list(base, placement_label(pages) or name)
            try:
                await self._apply(OCM, base, name, served, desired, status=True)
                await self._write_placement_status(owner_path, owner, pages, implied_status, evaluated_at)
                return
            except _Replan:
                continue
        raise SinkError(
            f"placement {placement}: the hub kept changing under {self.attempts} attempts to write"
        )

    async def _write_placement_status(
        self,
        path: str,
        owner: Obj,
        pages: Sequence[Mapping[str, Any]],
        implied: Mapping[str, Any],
        now: str,
    ) -> None:
        status = placement_status(pages, implied, owner.get("status"), now)
        if status == (owner.get("status") or {}):
            return
        body = copy.deepcopy(owner)
        body["status"] = status
        body["metadata"].pop("managedFields", None)
        await self._write("PUT", f"{path}/status", body)

    # ---- the shared part ------------------------------------------------------------------

    async def _apply(
        self,
        fmt: SliceFormat,
        base: str,
        name: str,
        served: Mapping[str, Obj],
        desired: Mapping[str, Obj],
        *,
        status: bool,
    ) -> None:
        versions = {n: str(o["metadata"]["resourceVersion"]) for n, o in served.items()}
        for op in plan_placement(fmt, name, served, desired):
            if isinstance(op, Remove):
                await self._write(
                    "DELETE",
                    f"{base}/{op.name}",
                    {
                        "apiVersion": "v1",
                        "kind": "DeleteOptions",
                        "preconditions": {"resourceVersion": versions.pop(op.name)},
                    },
                )
                continue
            body = copy.deepcopy(op.desired)
            if op.name not in versions:
                created = await self._write("POST", base, _without_status(body) if status else body)
                versions[op.name] = str(created["metadata"]["resourceVersion"])
            elif not status or op.served is None or _meta(op.served) != _meta(body):
                body["metadata"]["resourceVersion"] = versions[op.name]
                updated = await self._write(
                    "PUT", f"{base}/{op.name}", _without_status(body) if status else body
                )
                versions[op.name] = str(updated["metadata"]["resourceVersion"])
            if status and (op.served is None or fmt.entries_of(op.served) != fmt.entries_of(body)):
                body["metadata"]["resourceVersion"] = versions[op.name]
                updated = await self._write("PUT", f"{base}/{op.name}/status", body)
                versions[op.name] = str(updated["metadata"]["resourceVersion"])

    async def _list(self, base: str, label: str) -> dict[str, Obj]:
        answer = await self.hub.request("GET", base, query={"labelSelector": f"{PLACEMENT_LABEL}={label}"})
        return {str(o["metadata"]["name"]): o for o in answer.get("items") or []}

    async def _get(self, path: str) -> Obj | None:
        try:
            return await self.hub.request("GET", path)
        except Exception as error:
            if _status(error) == 404:
                return None
            raise

    async def _write(self, method: str, path: str, body: Mapping[str, Any]) -> Obj:
        try:
            answer = await self.hub.request(
                method, path, query=_WRITE_QUERY if method != "DELETE" else None, body=body
            )
        except Exception as error:
            if _status(error) in (404, 409):
                raise _Replan from error
            raise
        self.count.writes += 1
        return answer


def _without_status(obj: Mapping[str, Any]) -> Obj:
    return {k: v for k, v in obj.items() if k != "status"}


def _meta(obj: Mapping[str, Any]) -> tuple[Any, Any]:
    meta = obj.get("metadata") or {}
    return (meta.get("labels") or {}, meta.get("ownerReferences") or [])
