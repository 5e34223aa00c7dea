"""The write-back's least privilege: each mode's ClusterRole (as docs/hub.md shows it) writes
nothing but PlacementDecisions and Placement status, and the start-up check names every missing
verb. (The hub → topics half's roles: tests/hub/test_rbac.py.)"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetplace.services.hub.rbac import (
    MissingPermissions,
    Mode,
    Permission,
    access_review,
    check_permissions,
    cluster_role,
    permissions,
)

ROOT = Path(__file__).resolve().parents[2]
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def test_docs_show_each_modes_cluster_role_as_the_bridge_checks_it() -> None:
    text = (ROOT / "docs" / "hub.md").read_text()
    shown = [d for b in re.findall(r"```yaml\n(.*?)```", text, re.S) for d in yaml.safe_load_all(b) if d]
    writing = {f"fleetplace-hub-{m.value}" for m in Mode}
    roles = {d["metadata"]["name"]: d for d in shown if d["metadata"]["name"] in writing}
    assert roles == {f"fleetplace-hub-{m.value}": cluster_role(m) for m in Mode}


@pytest.mark.parametrize("mode", list(Mode))
def test_the_write_back_writes_nothing_but_placement_decisions_and_placement_status(mode: Mode) -> None:
    written = {p.resource for p in permissions(mode) if p.verb in WRITES}
    allowed = {
        "placementdecisions",
        "placementdecisions/status",
        "placements/status",
        "placements/finalizers",
    }
    assert written <= allowed
    if mode is Mode.SHADOW:
        assert {p.group for p in permissions(mode) if p.verb in WRITES} == {"multicluster.x-k8s.io"}


def test_a_subresource_is_asked_for_as_resource_and_subresource() -> None:
    review = access_review(Permission("update", "cluster.open-cluster-management.io", "placements/status"))
    assert review["kind"] == "SelfSubjectAccessReview"
    assert review["spec"]["resourceAttributes"] == {
        "verb": "update",
        "group": "cluster.open-cluster-management.io",
        "resource": "placements",
        "subresource": "status",
    }


def test_the_full_role_passes_the_start_up_check() -> None:
    asked: list[dict[str, Any]] = []

    async def allowed(review: dict[str, Any]) -> bool:
        asked.append(review["spec"]["resourceAttributes"])
        return True

    asyncio.run(check_permissions(Mode.REPLACE, allowed))
    assert len(asked) == len(permissions(Mode.REPLACE))


def test_a_role_with_a_verb_less_fails_naming_the_verb_and_resource() -> None:
    async def allowed(review: dict[str, Any]) -> bool:
        a = review["spec"]["resourceAttributes"]
        return not (
            a["verb"] == "update" and a["resource"] == "placements" and a.get("subresource") == "status"
        )

    with pytest.raises(MissingPermissions) as raised:
        asyncio.run(check_permissions(Mode.REPLACE, allowed))
    assert raised.value.missing == (
        Permission("update", "cluster.open-cluster-management.io", "placements/status"),
    )
    assert str(raised.value) == (
        "the hub bridge in replace mode may not update placements/status.cluster.open-cluster-management.io: "
        "bind its credentials to the ClusterRole fleetplace-hub-replace (docs/hub.md)"
    )
