"""Topics → hub against the real control plane (RBAC on, the upstream CRDs, strict field
validation): shadow slices and replace-mode pages as the scheduler published them, nothing
written twice, a 409 re-planned, no served version without a still-selected cluster during many
moves, agreement with a stand-in OCM writer, and the least-privilege roles."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest

from fleetplace.services.hub.agreement import ClusterDifference, Verdict
from fleetplace.services.hub.api import HubApi
from fleetplace.services.hub.desired import OCM, SIGMC, SliceFormat, placement_status
from fleetplace.services.hub.rbac import MissingPermissions, Mode, Permission, cluster_role
from fleetplace.services.hub.writeback import WriteBack
from fleetplace.shared.control_plane import ControlPlane
from tests.hub.requests import connected
from tests.hub.slices import diff, ocm_pages, sigmc_slices

pytestmark = pytest.mark.integration


_OCM = "/apis/cluster.open-cluster-management.io/v1beta1"
_SIGMC = "/apis/multicluster.x-k8s.io/v1alpha1"


def clusters(n: int, start: int = 0) -> list[str]:
    return [f"c{i:03d}" for i in range(start, start + n)]


_namespaces = iter(range(1, 1_000_000))


@pytest.fixture(name="api")
async def admin_api(hub: ControlPlane) -> AsyncIterator[HubApi]:
    """The bridge's own client, as the hub's admin."""
    async with connected(hub) as client:
        yield client


def new_namespace(hub: ControlPlane) -> str:
    name = f"wb-{time.monotonic_ns() % 10**9}-{next(_namespaces)}"
    hub.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def make_placement(hub: ControlPlane, namespace: str, name: str = "web") -> dict[str, Any]:
    placed: dict[str, Any] = hub.apply(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {},
        }
    )
    return placed


def publish(
    writeback: WriteBack, key: str, groups: Any, seq: int, reasons: Mapping[str, str] | None = None
) -> None:
    """What the scheduler publishes for one decision, as the bridge reads it from the topics."""
    namespace = key.partition("/")[0]
    old = set(writeback.published.shadow(key))
    new = sigmc_slices(key, groups, reasons, seq)
    for s in new:
        writeback.observe("sigmc-placement-decisions", f"{namespace}/{s['metadata']['name']}", s)
    for name in old - {s["metadata"]["name"] for s in new}:
        writeback.observe("sigmc-placement-decisions", f"{namespace}/{name}", None)
    writeback.observe("decisions", key, diff(key, groups, seq).to_value())


def listed(hub: ControlPlane, base: str, namespace: str, placement: str = "web") -> dict[str, dict[str, Any]]:
    answer = hub.request(
        "GET",
        f"{base}/namespaces/{namespace}/placementdecisions?labelSelector=cluster.open-cluster-management.io/placement%3D{placement}",
    )
    return {o["metadata"]["name"]: o for o in answer["items"]}


# ---- shadow mode ------------------------------------------------------------------------------


async def test_shadow_slices_are_written_as_published_and_not_again(hub: ControlPlane, api: HubApi) -> None:
    namespace = new_namespace(hub)
    make_placement(hub, namespace)
    key = f"{namespace}/web"
    writeback = WriteBack(Mode.SHADOW)
    publish(writeback, key, [("", 0, clusters(150))], 1, {"c000": "score 100"})
    assert await writeback.write_dirty(api) == 2
    served = listed(hub, _SIGMC, namespace)
    assert {n: SIGMC.owned(o) for n, o in served.items()} == {
        n: SIGMC.owned(o) for n, o in writeback.published.shadow(key).items()
    }
    assert served["web-0"]["decisions"][0] == {
        "clusterProfileRef": sigmc_slices(key, [("", 0, ["c000"])])[0]["decisions"][0]["clusterProfileRef"],
        "reason": "score 100",
    }
    writeback.dirty.add(key)
    assert await writeback.write_dirty(api) == 0
    versions = {n: o["metadata"]["resourceVersion"] for n, o in listed(hub, _SIGMC, namespace).items()}
    assert versions == {n: o["metadata"]["resourceVersion"] for n, o in served.items()}


async def test_a_slice_changed_under_the_sink_is_read_again_and_rewritten(
    hub: ControlPlane, api: HubApi
) -> None:
    """A write that loses the race (409) is planned again from what the hub serves then."""
    namespace = new_namespace(hub)
    key = f"{namespace}/web"
    writeback = WriteBack(Mode.SHADOW)
    publish(writeback, key, [("", 0, clusters(3))], 1)

    class Interleaved:
        """The real API server; before the sink's first update someone else edits the slice."""

        def __init__(self, api: HubApi) -> None:
            self.api = api
            self.raced = False

        async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
            if method == "PUT" and not self.raced:
                self.raced = True
                current = hub.request("GET", path)
                current["decisions"] = current["decisions"][:1]
                hub.request("PUT", path, current)
            return await self.api.request(method, path, **kwargs)

    await writeback.write_dirty(api)
    publish(writeback, key, [("", 0, clusters(3, 1))], 2)
    racing = Interleaved(api)
    await writeback.write_dirty(racing)
    assert racing.raced
    served = listed(hub, _SIGMC, namespace)
    assert [d["clusterProfileRef"]["name"] for d in served["web-0"]["decisions"]] == clusters(3, 1)
    assert not writeback.dirty


async def test_a_slice_of_another_scheduler_is_never_overwritten(hub: ControlPlane, api: HubApi) -> None:
    namespace = new_namespace(hub)
    key = f"{namespace}/web"
    theirs = sigmc_slices(key, [("", 0, ["c1"])])[0]
    theirs["schedulerName"] = "someone-else"
    hub.apply(theirs)
    writeback = WriteBack(Mode.SHADOW)
    publish(writeback, key, [("", 0, ["c2"])], 1)
    await writeback.write_dirty(api)
    assert listed(hub, _SIGMC, namespace)["web-0"]["schedulerName"] == "someone-else"
    assert key in writeback.dirty


def owned_by(placement: dict[str, Any]) -> list[dict[str, Any]]:
    """The owner references of OCM's pages of `placement` (a controller reference, so that the
    garbage collector removes them with it)."""
    return [
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "name": placement["metadata"]["name"],
            "uid": placement["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def ocm_writes(hub: ControlPlane, namespace: str, chosen: list[str]) -> None:
    """A stand-in for OCM's placement controller: its pages and its Placement status."""
    placement = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")
    for page in ocm_pages(f"{namespace}/web", [("", 0, chosen)]):
        page["metadata"]["ownerReferences"] = owned_by(placement)
        hub.apply({k: v for k, v in page.items() if k != "status"}, field_manager="ocm-stand-in")
        path = f"{_OCM}/namespaces/{namespace}/placementdecisions/{page['metadata']['name']}/status"
        hub.request("PATCH", path, {"status": page["status"]}, content_type="application/merge-patch+json")
    hub.request(
        "PATCH",
        f"{_OCM}/namespaces/{namespace}/placements/web/status",
        {"status": {"numberOfSelectedClusters": len(chosen), "decisionGroups": []}},
        content_type="application/merge-patch+json",
    )


async def test_shadow_mode_reports_agreement_and_a_planted_disagreement_by_cluster(
    hub: ControlPlane, api: HubApi
) -> None:
    namespace = new_namespace(hub)
    make_placement(hub, namespace)
    key = f"{namespace}/web"
    generation = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")["metadata"]["generation"]
    writeback = WriteBack(Mode.SHADOW)
    groups = [("", 0, ["c1", "c2", "c3"])]
    publish(writeback, key, groups, 1, {"c3": "score 80"})
    writeback.observe("decisions", key, {**diff(key, groups, 2).to_value(), "generation": generation})
    ocm_writes(hub, namespace, ["c1", "c2", "c3"])
    await writeback.write_dirty(api)
    assert writeback.agreements[key].verdict is Verdict.AGREEING
    ocm_writes(hub, namespace, ["c1", "c2", "c9"])  # the planted disagreement
    writeback.dirty.add(key)
    await writeback.write_dirty(api)
    agreement = writeback.agreements[key]
    assert agreement.verdict is Verdict.DISAGREEING
    assert agreement.differences[0] == ClusterDifference("c3", "fleetplace", "score 80")
    assert [(d.cluster, d.chosen_by) for d in agreement.differences] == [("c3", "fleetplace"), ("c9", "ocm")]


# ---- replace mode -----------------------------------------------------------------------------


async def test_replace_mode_writes_ocms_pages_and_placement_status_as_exported(
    hub: ControlPlane, api: HubApi
) -> None:
    namespace = new_namespace(hub)
    placement = make_placement(hub, namespace)
    key = f"{namespace}/web"
    groups = [("canary", 0, clusters(2)), ("", 1, clusters(120, 2))]
    writeback = WriteBack(Mode.REPLACE)
    publish(writeback, key, groups, 1)
    await writeback.write_dirty(api)
    served = listed(hub, _OCM, namespace)
    exported = ocm_pages(key, groups)
    assert list(served) == [p["metadata"]["name"] for p in exported]
    for page in exported:
        got = served[page["metadata"]["name"]]
        assert got["metadata"]["labels"] == page["metadata"]["labels"]
        assert got["status"] == page["status"]
        (owner,) = got["metadata"]["ownerReferences"]
        assert (owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
            placement["metadata"]["uid"],
            True,
            True,
        )
    status = hub.request("GET", f"{_OCM}/namespaces/{namespace}/placements/web")["status"]
    assert status == placement_status(exported, diff(key, groups).status, None, "2026-12-01T00:00:00Z")
    writeback.dirty.add(key)
    assert await writeback.write_dirty(api) == 0


# ---- moves ------------------------------------------------------------------------------------


Seen = list[tuple[str, Any]]  # ("version", clusters served) or ("marker", step)


async def watch_versions(
    client: HubApi, path: str, fmt: SliceFormat, seen: Seen, ready: asyncio.Event
) -> None:
    """Every version of the placement's slices the API server serves, in its order, and the
    marker object's updates between them (the test's boundaries between two decisions)."""
    start = await client.request("GET", path)
    state = {
        o["metadata"]["name"]: fmt.clusters(o) for o in start["items"] if o["metadata"]["name"] != "marker"
    }
    seen.append(("version", {c for cs in state.values() for c in cs}))
    ready.set()
    async for event in client.watch(path, start["metadata"]["resourceVersion"], timeout_s=600):
        obj = event["object"]
        name = obj["metadata"]["name"]
        if event["type"] == "BOOKMARK":
            continue
        if name == "marker":
            seen.append(("marker", int(obj["metadata"]["annotations"]["step"])))
            continue
        if event["type"] == "DELETED":
            state.pop(name, None)
        else:
            state[name] = fmt.clusters(obj)
        seen.append(("version", {c for cs in state.values() for c in cs}))


def mark(hub: ControlPlane, fmt: SliceFormat, namespace: str, step: int) -> None:
    """Update the marker: every write made before it is served before this event."""
    template = (sigmc_slices if fmt is SIGMC else ocm_pages)(f"{namespace}/marker", [("", 0, [])])[0]
    template["metadata"]["name"] = "marker"
    template["metadata"]["annotations"] = {"step": str(step)}
    template.pop("status", None)
    hub.apply(template)


def random_decisions(count: int, seed: int) -> list[list[tuple[str, int, list[str]]]]:
    """Decisions of 150 to 320 of 330 clusters in a canary group and the rest, so that each
    change moves clusters between pages and groups both ways."""
    rng = random.Random(seed)
    pool = clusters(330)
    out = []
    for _ in range(count):
        chosen = sorted(rng.sample(pool, rng.randint(150, 320)))
        canary = set(rng.sample(chosen, rng.randint(0, len(chosen))))
        groups = [("canary", 0, sorted(canary)), ("", 1, [c for c in chosen if c not in canary])]
        out.append([g for g in groups if g[2]])
    return out


@pytest.mark.parametrize("mode", [Mode.SHADOW, Mode.REPLACE])
async def test_no_served_version_lacks_a_still_selected_cluster_during_many_moves(
    hub: ControlPlane, api: HubApi, mode: Mode
) -> None:
    namespace = new_namespace(hub)
    make_placement(hub, namespace)
    key = f"{namespace}/web"
    fmt, base = (SIGMC, _SIGMC) if mode is Mode.SHADOW else (OCM, _OCM)
    path = f"{base}/namespaces/{namespace}/placementdecisions"
    decisions = random_decisions(25, seed=41)
    writeback = WriteBack(mode)
    seen: Seen = []
    ready = asyncio.Event()
    watcher = asyncio.create_task(watch_versions(api, path, fmt, seen, ready))
    await asyncio.wait([asyncio.ensure_future(ready.wait()), watcher], return_when=asyncio.FIRST_COMPLETED)
    if watcher.done():
        watcher.result()  # the watch failed before it started: say how
    try:
        for step, groups in enumerate(decisions):
            publish(writeback, key, groups, step + 1)
            await writeback.write_dirty(api)
            mark(hub, fmt, namespace, step)
        while ("marker", len(decisions) - 1) not in seen:
            if watcher.done():
                watcher.result()  # the watch failed: say how
                raise AssertionError("the watch ended")
            await asyncio.sleep(0.05)  # until the watch has delivered every write; no time asserted
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    # the versions served while moving to decision i: between markers i-1 and i
    segments: list[list[set[str]]] = [[]]
    for what, value in seen[1:]:
        if what == "marker":
            segments.append([])
        else:
            segments[-1].append(value)
    selected = [{c for _, _, cs in d for c in cs} for d in decisions]
    checked = 0
    for i in range(1, len(decisions)):
        staying = selected[i - 1] & selected[i]
        assert segments[i], f"nothing served while moving to decision {i}"
        for served in segments[i]:
            assert staying <= served, f"moving to decision {i}: {sorted(staying - served)} vanished"
            checked += 1
        assert segments[i][-1] == selected[i]
    assert checked > 2 * len(decisions)


# ---- least privilege --------------------------------------------------------------------------


def bound_token(hub: ControlPlane, account: str, mode: Mode, edit: Callable[[dict[str, Any]], None]) -> str:
    """The token of a ServiceAccount bound to `mode`'s ClusterRole as `edit` leaves it."""
    hub.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": "default"}}
    )
    role = cluster_role(mode, name=f"{account}-role")
    edit(role)
    hub.apply(role)
    hub.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{account}-binding"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role["metadata"]["name"],
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "default"}],
        }
    )
    token: str = hub.request(
        "POST",
        f"/api/v1/namespaces/default/serviceaccounts/{account}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )["status"]["token"]
    return token


def unchanged(role: dict[str, Any]) -> None:
    return None


@pytest.mark.parametrize("mode", [Mode.SHADOW, Mode.REPLACE])
async def test_the_minimal_role_starts_and_writes(hub: ControlPlane, mode: Mode) -> None:
    namespace = new_namespace(hub)
    make_placement(hub, namespace)
    key = f"{namespace}/web"
    writeback = WriteBack(mode)
    async with connected(hub, bound_token(hub, f"bridge-{mode.value}", mode, unchanged)) as api:
        await writeback.start(api)
        publish(writeback, key, [("", 0, clusters(130))], 1)
        assert await writeback.write_dirty(api) > 0
        assert not writeback.dirty
        assert len(listed(hub, _SIGMC if mode is Mode.SHADOW else _OCM, namespace)) == 2
        publish(writeback, key, [("", 0, clusters(30, 100))], 2)  # a move and a deletion, same role
        await writeback.write_dirty(api)
    assert not writeback.dirty
    assert len(listed(hub, _SIGMC if mode is Mode.SHADOW else _OCM, namespace)) == 1


@pytest.mark.parametrize("mode", list(Mode))
async def test_a_role_with_a_verb_less_fails_at_start_naming_it(hub: ControlPlane, mode: Mode) -> None:
    def without_delete(role: dict[str, Any]) -> None:
        for rule in role["rules"]:
            if rule["resources"] == ["placementdecisions"] and "delete" in rule["verbs"]:
                rule["verbs"].remove("delete")

    group = "multicluster.x-k8s.io" if mode is Mode.SHADOW else "cluster.open-cluster-management.io"
    async with connected(hub, bound_token(hub, f"short-{mode.value}", mode, without_delete)) as api:
        with pytest.raises(MissingPermissions) as raised:
            await WriteBack(mode).start(api)
    assert raised.value.missing == (Permission("delete", group, "placementdecisions"),)
    assert f"may not delete placementdecisions.{group}" in str(raised.value)
