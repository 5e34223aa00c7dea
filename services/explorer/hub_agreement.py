"""The placement page's agreement with OCM (shadow mode), asked of the hub when the page is shown.

The explorer reads everything else from the topics. The agreement is the exception because one
side of it is not on any topic: OCM's PlacementDecisions and Placement status live only on the
hub and change without a record of ours. So the page asks the hub, with the explorer's own
kubeconfig, the same three questions `fleetplace hub status` asks (fleetplace's slices, OCM's
PlacementDecisions, the Placement), compares them with the same function, and explains a cluster
only OCM chose from the placement's latest decision, recomputed from the topics as `fleetplace
explain` does. Without a kubeconfig the explorer never talks to a hub.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fleetplace.services.auditor.explain import Explanation
from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.services.hub.agreement import Agreement, explained, why_not
from fleetplace.services.hub.api import HubApi, HubError
from fleetplace.services.hub.writeback import agreement_on_hub
from fleetplace.shared.api.ocm import placement_label_value

__all__ = ["HubAgreement", "HubAnswer"]

# A page waits this long for the hub, then says it did not answer.
HUB_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class HubAnswer:
    """The agreement, or why the hub could not tell (`error`)."""

    agreement: Agreement | None
    error: str = ""


class HubAgreement:
    """`await connect()` at start (HubError when the kubeconfig does not load), `ask` per page,
    `close()` at the end."""

    def __init__(self, kubeconfig: str, *, qps: float, burst: int, timeout_s: float = HUB_TIMEOUT_S) -> None:
        self.kubeconfig = kubeconfig
        self.qps = qps
        self.burst = burst
        self.timeout_s = timeout_s
        self._api: HubApi | None = None

    async def connect(self) -> None:
        if self._api is None:
            self._api = await HubApi.connect(self.kubeconfig, qps=self.qps, burst=self.burst)

    async def close(self) -> None:
        if self._api is not None:
            api, self._api = self._api, None
            await api.close()

    async def ask(
        self,
        key: str,
        latest: DecisionRecord | None,
        explain: Callable[[DecisionRecord], Awaitable[Explanation]],
    ) -> HubAnswer:
        """`key`'s agreement; `latest` is its latest decision, which `explain` explains when a
        cluster only OCM chose needs fleetplace's reason (an explanation costs a replay)."""
        if self._api is None:
            return HubAnswer(None, "not connected to the hub")
        generation = None
        if latest is not None and not latest.deleted:
            generation = int(latest.value.get("generation") or 0)
        try:
            async with asyncio.timeout(self.timeout_s):
                found = await agreement_on_hub(
                    self._api, key, placement_label_value(key.partition("/")[2]), generation
                )
        except TimeoutError:
            return HubAnswer(None, f"the hub did not answer within {self.timeout_s:g} s")
        except HubError as error:
            return HubAnswer(None, f"the hub: {error}")
        if latest is not None and found.has_ocm_only:
            result = (await explain(latest)).result or {}
            found = explained(found, why_not(result.get("explain") or {}))
        return HubAnswer(found)
