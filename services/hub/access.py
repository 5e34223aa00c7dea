"""What the bridge may do on the hub, checked at start with SelfSubjectAccessReviews, so that a
missing permission is a message naming the verb and the resource, not a watch retried for ever
(docs/hub.md#rbac)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fleetplace.services.hub.api import HubApi, HubError
from fleetplace.services.hub.kinds import HUB_KINDS


@dataclass(frozen=True, slots=True)
class Permission:
    verb: str
    group: str
    resource: str
    namespace: str = ""  # empty: every namespace (or a cluster-scoped resource)

    def __str__(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return (
            f"{self.verb} {self.resource}.{self.group}{where}"
            if self.group
            else f"{self.verb} {self.resource}{where}"
        )


class AccessDenied(HubError):
    """The bridge's credentials lack a permission it needs."""


def reading(lease_namespace: str) -> list[Permission]:
    """What the hub → topics half needs: list and watch every kind it copies, and its Lease."""
    wanted = [Permission(verb, k.group, k.plural) for k in HUB_KINDS for verb in ("list", "watch")]
    wanted += [
        Permission(verb, "coordination.k8s.io", "leases", lease_namespace)
        for verb in ("get", "create", "update")
    ]
    return wanted


async def missing(api: HubApi, wanted: Iterable[Permission]) -> list[Permission]:
    """The permissions of `wanted` the API server's authorizer denies to the bridge's user."""
    denied = []
    for permission in wanted:
        review = await api.request(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            body={
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {
                        "verb": permission.verb,
                        "group": permission.group,
                        "resource": permission.resource,
                        "namespace": permission.namespace,
                    }
                },
            },
        )
        if not review.get("status", {}).get("allowed", False):
            denied.append(permission)
    return denied


async def require(api: HubApi, wanted: Iterable[Permission]) -> None:
    """AccessDenied naming every permission that is missing."""
    denied = await missing(api, wanted)
    if denied:
        raise AccessDenied("the bridge may not " + "; ".join(str(p) for p in denied), 403)
