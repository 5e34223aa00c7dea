"""The placement page's agreement with OCM (shadow mode), on the real control plane.

The whole path runs: clusters, a set, its binding and a Placement created on the hub; the bridge
(shadow mode) copies them onto the topics and writes the scheduler's decisions back as slices; a
stand-in for OCM's placement controller writes its own PlacementDecisions and Placement status.
The explorer, given the hub, shows the two agreeing, then the planted disagreement: the cluster
only fleetplace chose with the reason it gave, and the tainted cluster only OCM chose with
fleetplace's verdict on it. Without a hub, the page has no agreement; with a hub that does not
answer, it says so.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from fleetplace.services.explorer import Explorer
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ControlPlane
from fleetplace.shared.settings import Settings
from tests.hub.conftest import hub  # noqa: F401  (the control plane fixture)
from tests.hub.test_bridge import eventually, settings_for
from tests.hub.test_bridge import running as running_bridge
from tests.hub.test_bridge_writeback import clusters_on_hub
from tests.hub.test_writeback import new_namespace, ocm_writes
from tests.scheduler.harness import running as running_scheduler

pytestmark = pytest.mark.integration

G = "cluster.open-cluster-management.io"
_SIGMC = "/apis/multicluster.x-k8s.io/v1alpha1"
G_PATH = f"/apis/{G}/v1beta1"
TAINT = {"key": "gpu", "value": "broken", "effect": "NoSelect", "timeAdded": "2026-12-01T00:00:00Z"}


def create_fleet(control_plane: ControlPlane, namespace: str) -> dict[str, str]:
    """Four clusters in a set bound to `namespace` (the fourth tainted NoSelect) and the Placement
    `web` selecting from it; the clusters' names by role."""
    names = {role: f"{namespace}-{role}" for role in ("c1", "c2", "c3", "c9")}
    clusterset = f"{namespace}-set"
    control_plane.apply(
        {"apiVersion": f"{G}/v1beta2", "kind": "ManagedClusterSet", "metadata": {"name": clusterset}}
    )
    for role, name in names.items():
        control_plane.apply(
            {
                "apiVersion": f"{G}/v1",
                "kind": "ManagedCluster",
                "metadata": {"name": name, "labels": {f"{G}/clusterset": clusterset}},
                "spec": {"hubAcceptsClient": True, "taints": [TAINT] if role == "c9" else []},
            }
        )
    control_plane.apply(
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": clusterset, "namespace": namespace},
            "spec": {"clusterSet": clusterset},
        }
    )
    control_plane.apply(
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"clusterSets": [clusterset]},
        }
    )
    return names


async def page(explorer: Explorer, key: str) -> str:
    async with aiohttp.ClientSession() as http, http.get(f"{explorer.url}/placements/{key}") as response:
        assert response.status == 200
        return await response.text()


def agreement_of(html: str) -> dict[str, Any] | None:
    """The page's agreement section: its verdict, its reason, and each differing cluster's
    chooser and explanation; None when the page has none."""
    found = re.search(r'<div id="agreement" data-live>(.*?)</div></section>', html, re.S)
    if found is None:
        return None
    section = found.group(1)
    verdict = re.search(r'data-verdict="([^"]+)">[^<]*</span>([^<]*)</p>', section)
    rows = re.findall(
        r'<tr data-cluster="([^"]+)"><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td></tr>', section
    )
    return {
        "verdict": verdict.group(1) if verdict else None,
        "reason": verdict.group(2).strip() if verdict else None,
        "text": re.sub(r"<[^>]+>", " ", section),
        "differences": {cluster: (by, explanation) for cluster, by, explanation in rows},
    }


@dataclass(frozen=True)
class ShadowHub:
    """A hub in shadow mode with its fleet, fleetplace's slices written, and settings for an
    explorer that asks it."""

    namespace: str
    names: dict[str, str]
    explorer_settings: Settings

    @property
    def key(self) -> str:
        return f"{self.namespace}/web"


@contextlib.asynccontextmanager
async def shadow_hub(control_plane: ControlPlane, broker: str, topics: Topics) -> AsyncIterator[ShadowHub]:
    """The fleet on the hub, the bridge and the scheduler running on `topics`, until fleetplace's
    slices for `web` are on the hub (its three untainted clusters)."""
    namespace = new_namespace(control_plane)
    names = create_fleet(control_plane, namespace)
    chosen = sorted(names[c] for c in ("c1", "c2", "c3"))
    bridge_settings = settings_for(broker, topics.prefix, control_plane)
    scheduler_settings = bridge_settings.model_copy(
        update={"sigmc_decisions": True, "scheduler_group_id": f"{topics.prefix}scheduler"}
    )
    async with running_bridge(bridge_settings), running_scheduler(scheduler_settings):

        async def written() -> bool:
            return clusters_on_hub(control_plane, _SIGMC, namespace, "sigmc") == chosen

        await eventually(written, "fleetplace's slices on the hub", timeout=120)
        yield ShadowHub(
            namespace,
            names,
            bridge_settings.model_copy(update={"explorer_hub_kubeconfig": str(control_plane.kubeconfig)}),
        )


async def test_the_page_shows_agreement_then_the_planted_disagreement_named(
    hub: ControlPlane,  # noqa: F811
    broker: str,
    topics: Topics,
) -> None:
    async with shadow_hub(hub, broker, topics) as shadow:
        names, key = shadow.names, shadow.key
        ocm_writes(hub, shadow.namespace, sorted(names[c] for c in ("c1", "c2", "c3")))
        async with Explorer(shadow.explorer_settings, port=0) as explorer:
            await explorer.wait_caught_up(60)

            async def shown(verdict: str) -> dict[str, Any] | None:
                found = agreement_of(await page(explorer, key))
                return found if found is not None and found["verdict"] == verdict else None

            agreeing = await eventually(lambda: shown("agreeing"), "the page to show agreement")
            assert agreeing["differences"] == {}
            assert "the same clusters" in agreeing["reason"]

            # the planted disagreement: OCM drops c3 and picks the tainted c9
            ocm_writes(hub, shadow.namespace, sorted([names["c1"], names["c2"], names["c9"]]))
            planted = await eventually(lambda: shown("disagreeing"), "the page to show the disagreement")
    differences = planted["differences"]
    assert set(differences) == {names["c3"], names["c9"]}
    by, reason = differences[names["c3"]]
    assert by == "only fleetplace"
    assert reason and reason != "selected (no reason given)"  # the reason on fleetplace's slice
    by, reason = differences[names["c9"]]
    assert by == "only ocm"
    assert reason.startswith("filtered by TaintToleration"), reason
    assert "gpu" in reason


async def test_without_a_hub_the_page_has_no_agreement(
    explorer_settings_no_hub: tuple[Settings, str],
) -> None:
    settings, key = explorer_settings_no_hub
    async with Explorer(settings, port=0) as explorer:
        await explorer.wait_caught_up(60)
        html = await page(explorer, key)
    assert "Agreement with OCM" not in html
    assert agreement_of(html) is None


async def test_a_hub_that_does_not_answer_is_said_not_to(
    explorer_settings_no_hub: tuple[Settings, str], tmp_path: Path
) -> None:
    settings, key = explorer_settings_no_hub
    kubeconfig = tmp_path / "unreachable.kubeconfig"
    kubeconfig.write_text(unreachable_kubeconfig(closed_port()))
    async with Explorer(
        settings.model_copy(update={"explorer_hub_kubeconfig": str(kubeconfig)}), port=0
    ) as explorer:
        await explorer.wait_caught_up(60)
        found = agreement_of(await page(explorer, key))
    assert found is not None
    assert found["verdict"] is None
    assert "Not known: the hub:" in found["text"]


@pytest.fixture
async def explorer_settings_no_hub(broker: str, topics: Topics) -> tuple[Settings, str]:
    """Settings over topics holding one placement with a decision (the scheduler, no hub)."""
    from tests.scheduler.harness import Bus, base_fleet, cluster, placement
    from tests.scheduler.harness import settings_for as scheduler_settings_for

    settings = scheduler_settings_for(broker, topics.prefix)
    async with Bus(broker, topics) as bus, running_scheduler(settings):
        await bus.publish(*base_fleet(), cluster("c1"), placement("ns1", "web"))

        await bus.wait_for(
            lambda: bool(bus.latest().get("ns1/web", {}).get("decisions")), what="a decision of ns1/web"
        )
    return settings, "ns1/web"


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unreachable_kubeconfig(port: int) -> str:
    return f"""apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {{server: "https://127.0.0.1:{port}", insecure-skip-tls-verify: true}}
users:
- name: nobody
  user: {{token: not-a-token}}
contexts:
- name: gone
  context: {{cluster: gone, user: nobody}}
current-context: gone
"""


EXPLORER = [sys.executable, "-m", "fleetplace.services.cli", "explorer"]


def test_a_hub_kubeconfig_that_does_not_load_stops_the_explorer_at_start_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-such.kubeconfig"
    done = subprocess.run(
        [*EXPLORER, "-b", "127.0.0.1:9", "--port", "0", "--hub-kubeconfig", str(missing)],
        env={k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "FLEETPLACE_"))},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"error: the hub: kubeconfig {missing}: no such file\n"
