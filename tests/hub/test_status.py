"""`fleetplace hub status`'s report, from real topics (the embedded broker) and the real control
plane: fleetplace's published decision against a stand-in OCM writer's, agreeing, then a planted
disagreement named by cluster; and a cluster only OCM chose, explained by the running bridge and
the command with the reason fleetplace's scheduler left it out."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from fleetplace.services.hub.agreement import ClusterDifference, Verdict, render_status
from fleetplace.services.hub.rbac import Mode
from fleetplace.services.hub.status import agreements
from fleetplace.services.hub.writeback import WriteBack
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ControlPlane
from tests.hub.requests import connected
from tests.hub.slices import diff, sigmc_slices
from tests.hub.test_bridge import eventually, running, settings_for
from tests.hub.test_writeback import make_placement, new_namespace, ocm_writes
from tests.scheduler.harness import Bus
from tests.scheduler.harness import running as running_scheduler
from tests.scheduler.harness import settings_for as scheduler_settings

pytestmark = pytest.mark.integration


async def test_status_reports_agreement_then_the_planted_disagreement(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    namespace = new_namespace(hub)
    make_placement(hub, namespace)
    key = f"{namespace}/web"
    generation = hub.request(
        "GET", f"/apis/cluster.open-cluster-management.io/v1beta1/namespaces/{namespace}/placements/web"
    )["metadata"]["generation"]
    groups = [("", 0, ["c1", "c2", "c3"])]
    async with Bus(broker, topics) as bus:
        await bus.send(
            "decisions", key, encode_json({**diff(key, groups, 1).to_value(), "generation": generation})
        )
        for s in sigmc_slices(key, groups, {"c3": "score 80"}):
            await bus.send(
                "sigmc-placement-decisions", f"{namespace}/{s['metadata']['name']}", encode_json(s)
            )
    async with connected(hub) as api:
        # the bridge writes fleetplace's slices; OCM's stand-in writes its own decision
        writeback = WriteBack(Mode.SHADOW)
        writeback.observe("decisions", key, {**diff(key, groups, 1).to_value(), "generation": generation})
        for s in sigmc_slices(key, groups, {"c3": "score 80"}):
            writeback.observe("sigmc-placement-decisions", f"{namespace}/{s['metadata']['name']}", s)
        await writeback.write_dirty(api)
        ocm_writes(hub, namespace, ["c1", "c2", "c3"])
        (agreeing,) = [a for a in await agreements(broker, topics, api) if a.placement == key]
        assert agreeing.verdict is Verdict.AGREEING
        ocm_writes(hub, namespace, ["c1", "c2"])
        (planted,) = [a for a in await agreements(broker, topics, api) if a.placement == key]
    assert planted.verdict is Verdict.DISAGREEING
    assert planted.differences == (ClusterDifference("c3", "fleetplace", "score 80"),)
    assert render_status([planted]) == f"{key}  disagreeing\n    c3  only fleetplace: score 80\n"
    # the command prints the same report
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "fleetplace.services.cli", "hub", "status", "--bootstrap", broker],
        env={
            **os.environ,
            "FLEETPLACE_TOPIC_PREFIX": topics.prefix,
            "FLEETPLACE_HUB_KUBECONFIG": str(hub.kubeconfig),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"{key}  disagreeing\n    c3  only fleetplace: score 80\n" in done.stdout


def create_fleet(hub: ControlPlane, namespace: str, tag: str) -> None:
    """Three clusters in a set bound to `namespace`, the third tainted gpu=broken:NoSelect, and
    the Placement `web` that takes every cluster it may (no toleration)."""
    hub.apply(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSet",
            "metadata": {"name": tag},
            "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}},
        }
    )
    hub.apply(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": tag, "namespace": namespace},
            "spec": {"clusterSet": tag},
        }
    )
    for i in (1, 2, 3):
        spec: dict[str, object] = {"hubAcceptsClient": True}
        if i == 3:
            spec["taints"] = [
                {"key": "gpu", "value": "broken", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
            ]
        hub.apply(
            {
                "apiVersion": "cluster.open-cluster-management.io/v1",
                "kind": "ManagedCluster",
                "metadata": {
                    "name": f"{tag}-c{i}",
                    "labels": {"cluster.open-cluster-management.io/clusterset": tag},
                },
                "spec": spec,
            }
        )
    make_placement(hub, namespace)


async def test_a_cluster_only_ocm_chose_is_named_with_the_taint_fleetplace_filtered_it_by(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    """The running bridge (its agreement report, behind the metric) and `fleetplace hub status`
    name the cluster OCM's stand-in chose and fleetplace left out, with fleetplace's reason: the
    taint it does not tolerate."""
    namespace = new_namespace(hub)
    tag = f"s{namespace}"
    create_fleet(hub, namespace, tag)
    key = f"{namespace}/web"
    chosen = [f"{tag}-c1", f"{tag}-c2"]
    # OCM's stand-in chose the tainted cluster too
    ocm_writes(hub, namespace, [*chosen, f"{tag}-c3"])
    expected = (
        ClusterDifference(
            f"{tag}-c3", "ocm", "filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated"
        ),
    )
    scheduler = scheduler_settings(broker, topics.prefix, sigmc_decisions=True)
    bridge_settings = settings_for(broker, topics.prefix, hub, hub_mode="shadow")
    async with running_scheduler(scheduler), running(bridge_settings) as bridge:

        async def reported() -> bool:
            found = bridge.writeback.agreements.get(key)
            return (
                found is not None and found.verdict is Verdict.DISAGREEING and found.differences == expected
            )

        await eventually(
            reported,
            "the running bridge's report of the cluster only OCM chose",
            why=lambda: repr(bridge.writeback.agreements.get(key)),
        )
        async with connected(hub) as api:
            (planted,) = [a for a in await agreements(broker, topics, api) if a.placement == key]
    assert planted.differences == expected
    assert render_status([planted]) == (
        f"{key}  disagreeing\n"
        f"    {tag}-c3  only ocm: filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated\n"
    )
