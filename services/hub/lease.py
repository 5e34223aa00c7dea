"""One active bridge per hub: a `coordination.k8s.io` Lease, taken and renewed as client-go's
leader election does (and so OCM's controllers), docs/hub.md#one-bridge-per-hub.

A holder renews the Lease every `retry_s`; it steps down when it could not renew for
`renew_deadline_s`. A candidate takes the Lease when its holder is empty (released on a clean
stop) or when the Lease has not changed for `duration_s` as the candidate itself observed it:
clocks of different machines are never compared. Every write carries the resourceVersion read, so
of two candidates only one wins.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from fleetplace.services.hub.api import HubApi, HubError
from fleetplace.shared.logging import get_logger

log = get_logger("fleetplace.hub")


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Lease:
    def __init__(
        self,
        api: HubApi,
        *,
        namespace: str,
        name: str,
        identity: str,
        duration_s: float,
        renew_deadline_s: float,
        retry_s: float,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.duration_s = duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_s = retry_s
        self._observed: tuple[str, float] | None = None  # (resourceVersion, when first seen)

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    async def acquire(self) -> None:
        """Return once this instance holds the Lease."""
        while not await self._try():
            await asyncio.sleep(self.retry_s)
        log.info("hub lease acquired", lease=f"{self.namespace}/{self.name}", identity=self.identity)

    async def hold(self) -> None:
        """Renew the Lease until a renewal has failed for `renew_deadline_s`; then return (lost)."""
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.retry_s)
            try:
                if await self._try():
                    renewed = time.monotonic()
                    continue
            except HubError as error:
                log.warning("hub lease not renewed", error=str(error))
            if time.monotonic() - renewed > self.renew_deadline_s:
                log.warning("hub lease lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
                return

    async def release(self) -> None:
        """Give the Lease up (a clean stop), so that a successor need not wait for it to expire."""
        try:
            lease = await self.api.request("GET", self.path)
            spec = lease.get("spec", {})
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = {
                **spec,
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": _micro_time(),
            }
            await self.api.request("PUT", self.path, body=lease)
        except HubError as error:
            log.warning("hub lease not released; it expires instead", error=str(error))

    async def _try(self) -> bool:
        """Take or renew the Lease; False when another holder has it (or won the race)."""
        now = _micro_time()
        try:
            lease: dict[str, Any] = await self.api.request("GET", self.path)
        except HubError as error:
            if error.status != 404:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, acquire_time=now, transitions=0),
            }
            try:
                await self.api.request(
                    "POST", f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases", body=body
                )
            except HubError as lost:
                if lost.status == 409:
                    return False
                raise
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        version = str(lease["metadata"]["resourceVersion"])
        if self._observed is None or self._observed[0] != version:
            self._observed = (version, time.monotonic())
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire_time = spec.get("acquireTime") or now
        if holder != self.identity:
            expired = time.monotonic() - self._observed[1] > float(spec.get("leaseDurationSeconds") or 0)
            if holder and not expired:
                return False
            transitions, acquire_time = transitions + 1, now
        lease["spec"] = self._spec(now, acquire_time=acquire_time, transitions=transitions)
        try:
            await self.api.request("PUT", self.path, body=lease)
        except HubError as error:
            if error.status == 409:
                return False
            raise
        return True

    def _spec(self, now: str, *, acquire_time: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.duration_s)),
            "acquireTime": acquire_time,
            "renewTime": now,
            "leaseTransitions": transitions,
        }
