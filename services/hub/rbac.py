"""The least the write-back half of the bridge may do on the hub, per mode, and the check it
makes at start-up (the hub → topics half's roles and check are services/hub/access.py).

It writes nothing but PlacementDecisions and, in replace mode, Placement status, and reads the
PlacementDecisions and Placements it compares and owns. The ClusterRole of each mode is the table
below, rendered into docs/hub.md; at start-up the bridge asks the API server, with one
SelfSubjectAccessReview per rule and verb (which every authenticated user may create), whether it
holds each, and refuses to start naming every verb and resource it lacks — rather than failing on
the first write, hours later, in the middle of a move.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "MissingPermissions",
    "Mode",
    "Permission",
    "Rule",
    "access_review",
    "check_permissions",
    "cluster_role",
    "permissions",
    "rules",
]

OCM_CLUSTER = "cluster.open-cluster-management.io"
SIGMC = "multicluster.x-k8s.io"

READ = ("get", "list", "watch")


class Mode(StrEnum):
    SHADOW = "shadow"
    REPLACE = "replace"


@dataclass(frozen=True)
class Rule:
    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


@dataclass(frozen=True)
class Permission:
    verb: str
    group: str
    resource: str  # `placements/status` for a subresource

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


_SINK = {
    # SIG-MC slices of its own beside OCM's; OCM's PlacementDecisions only read, to compare
    Mode.SHADOW: (
        Rule(SIGMC, ("placementdecisions",), (*READ, "create", "update", "delete")),
        Rule(OCM_CLUSTER, ("placementdecisions",), READ),
        Rule(OCM_CLUSTER, ("placements",), ("get",)),
    ),
    # OCM's PlacementDecisions and the Placement status, as OCM's controller writes them;
    # placements/finalizers: an owner reference that blocks the owner's deletion needs it where
    # the OwnerReferencesPermissionEnforcement admission plugin runs
    Mode.REPLACE: (
        Rule(OCM_CLUSTER, ("placementdecisions",), (*READ, "create", "update", "delete")),
        Rule(OCM_CLUSTER, ("placements",), ("get",)),
        Rule(OCM_CLUSTER, ("placementdecisions/status", "placements/status"), ("update",)),
        Rule(OCM_CLUSTER, ("placements/finalizers",), ("update",)),
    ),
}


def rules(mode: Mode) -> tuple[Rule, ...]:
    return _SINK[mode]


def permissions(mode: Mode) -> list[Permission]:
    return [Permission(v, r.group, res) for r in rules(mode) for res in r.resources for v in r.verbs]


def cluster_role(mode: Mode, name: str | None = None) -> dict[str, Any]:
    """The ClusterRole of `mode`, as docs/hub.md shows it."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name or f"fleetplace-hub-{mode.value}"},
        "rules": [
            {"apiGroups": [r.group], "resources": list(r.resources), "verbs": list(r.verbs)}
            for r in rules(mode)
        ],
    }


def access_review(permission: Permission) -> dict[str, Any]:
    """The SelfSubjectAccessReview that asks for `permission` in every namespace."""
    resource, _, subresource = permission.resource.partition("/")
    attributes: dict[str, Any] = {"verb": permission.verb, "group": permission.group, "resource": resource}
    if subresource:
        attributes["subresource"] = subresource
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }


class MissingPermissions(Exception):
    """The bridge's credentials lack permissions its mode needs."""

    def __init__(self, mode: Mode, missing: Iterable[Permission]) -> None:
        self.mode = mode
        self.missing = tuple(missing)
        listed = ", ".join(str(p) for p in self.missing)
        super().__init__(
            f"the hub bridge in {mode.value} mode may not {listed}: "
            f"bind its credentials to the ClusterRole fleetplace-hub-{mode.value} (docs/hub.md)"
        )


async def check_permissions(mode: Mode, allowed: Callable[[dict[str, Any]], Awaitable[bool]]) -> None:
    """Ask for every permission of `mode` (`allowed` posts a review and returns its
    `status.allowed`); MissingPermissions naming all that are refused."""
    missing = [p for p in permissions(mode) if not await allowed(access_review(p))]
    if missing:
        raise MissingPermissions(mode, missing)
