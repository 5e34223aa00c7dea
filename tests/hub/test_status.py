"""`fleetplace hub status`'s report, from real topics (the embedded broker) and the real control
plane: fleetplace's published decision against a stand-in OCM writer's, agreeing, then a planted
disagreement named by cluster."""

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
from tests.hub.test_writeback import make_placement, new_namespace, ocm_writes, served_kinds  # noqa: F401
from tests.scheduler.harness import Bus

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
