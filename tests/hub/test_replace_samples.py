"""Replace mode on the public samples: the seed article's scenarios created on the real hub, the
bridge and a scheduler worker running on the embedded broker, and what the bridge writes on the
hub is what `fleetplace export placementdecisions` and `fleetplace simulate` print for the same
objects: the PlacementDecision pages (names, labels, decisions) and the Placement's status
(conditions, numberOfSelectedClusters, decisionGroups).

Some scenarios start from an earlier PlacementDecision (Steady keeps it). In replace mode that is
fleetplace's own earlier decision (docs/hub.md, "Switching to replace mode"): the hub is seeded as
fleetplace would have left it, the earlier decision on the `decisions` topic (what the scheduler
reads back as the decision in force) and its page on the hub, written by fleetplace before.

Each scenario's cluster-scoped objects (clusters, the set) get a prefix of their own and its
placement a namespace of its own, so all of them run on one hub at once; the prefix is the same
for every cluster of a scenario, so the order by name that breaks ties is unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from fleetplace.services.commands.simulate_scenarios import Scenario, run_scenario, scenarios_of
from fleetplace.shared.api.decision_diff import DecisionDiff, DecisionGroup, DecisionTrigger
from fleetplace.shared.bus.codec import encode_json
from fleetplace.shared.bus.topics import Topics
from fleetplace.shared.control_plane import ControlPlane
from tests.hub.test_bridge import eventually, running, settings_for
from tests.placement.builders import NOW
from tests.scheduler.harness import Bus
from tests.scheduler.harness import running as running_scheduler
from tests.scheduler.harness import settings_for as scheduler_settings

pytestmark = pytest.mark.integration

# the public samples (the same bytes as the conformance examples the project is checked against)
SAMPLES = Path(__file__).parents[1] / "placement" / "data" / "ocm-seed-article.json"
ALL = json.loads(SAMPLES.read_text())
_OCM = "/apis/cluster.open-cluster-management.io"
_SET_LABEL = "cluster.open-cluster-management.io/clusterset"
_PLACEMENT_LABEL = "cluster.open-cluster-management.io/placement"


def renamed(scenario: dict[str, Any], tag: str) -> dict[str, Any]:
    """The scenario with its clusters and sets prefixed by `tag` and its namespace `tag`."""
    out = json.loads(json.dumps(scenario))
    for obj in out["objects"]:
        meta, spec = obj["metadata"], obj.get("spec", {})
        if "namespace" in meta:
            meta["namespace"] = tag
        if obj["kind"] in ("ManagedCluster", "ManagedClusterSet", "ManagedClusterSetBinding"):
            meta["name"] = f"{tag}-{meta['name']}"
        labels = meta.get("labels", {})
        if _SET_LABEL in labels:
            labels[_SET_LABEL] = f"{tag}-{labels[_SET_LABEL]}"
        if "clusterSet" in spec:
            spec["clusterSet"] = f"{tag}-{spec['clusterSet']}"
        if "clusterSets" in spec:
            spec["clusterSets"] = [f"{tag}-{s}" for s in spec["clusterSets"]]
        if obj["kind"] == "PlacementDecision":
            for decision in obj["status"]["decisions"]:
                decision["clusterName"] = f"{tag}-{decision['clusterName']}"
    out["placement"] = f"{tag}/{scenario['placement'].partition('/')[2]}"
    return out


def simulated(scenario: dict[str, Any]) -> dict[str, Any]:
    """The line `fleetplace simulate` prints for the scenario."""
    (parsed,) = scenarios_of(json.dumps(scenario), "samples.json")
    assert isinstance(parsed, Scenario)
    (line,) = run_scenario(parsed, None, NOW)
    return line


def earlier_pages(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario's earlier PlacementDecisions: fleetplace's pages before the scenario."""
    return [o for o in scenario["objects"] if o["kind"] == "PlacementDecision"]


def create_on_hub(hub: ControlPlane, scenario: dict[str, Any], tag: str) -> None:
    hub.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": tag}})
    for obj in scenario["objects"]:
        if obj["kind"] == "PlacementDecision":
            continue  # after its Placement, which owns it
        hub.apply({k: v for k, v in obj.items() if k != "status"})
        if obj["kind"] == "ManagedCluster" and "status" in obj:
            # a klusterlet reports it through the status subresource
            path = f"{_OCM}/v1/managedclusters/{obj['metadata']['name']}/status"
            hub.request("PATCH", path, {"status": obj["status"]}, content_type="application/merge-patch+json")
    placement = status_owner(hub, scenario["placement"])
    for page in earlier_pages(scenario):
        meta = page["metadata"]
        hub.apply(
            {
                "apiVersion": page["apiVersion"],
                "kind": "PlacementDecision",
                "metadata": {**meta, "ownerReferences": [placement]},
            },
            field_manager="fleetplace",
        )
        path = f"{_OCM}/v1beta1/namespaces/{meta['namespace']}/placementdecisions/{meta['name']}/status"
        hub.request("PATCH", path, {"status": page["status"]}, content_type="application/merge-patch+json")


def status_owner(hub: ControlPlane, key: str) -> dict[str, Any]:
    """The owner reference fleetplace's pages carry to their Placement."""
    namespace, _, name = key.partition("/")
    placement = hub.request("GET", f"{_OCM}/v1beta1/namespaces/{namespace}/placements/{name}")
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "name": name,
        "uid": placement["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def earlier_decision(scenario: dict[str, Any]) -> DecisionDiff | None:
    """The decision fleetplace published before the scenario, as its earlier pages hold it: the
    first on the placement's `decisions` log. Its status is not in the sample; the scheduler
    publishes the decision again with its status when it evaluates."""
    pages = sorted(earlier_pages(scenario), key=lambda p: p["metadata"]["name"])
    if not pages:
        return None
    clusters = tuple(d["clusterName"] for p in pages for d in p["status"]["decisions"])
    return DecisionDiff(
        placement=scenario["placement"],
        seq=1,
        evaluated_at="2026-01-01T00:00:00Z",
        trigger=DecisionTrigger("placement", scenario["placement"]),
        added=clusters,
        decisions=clusters,
        groups=(DecisionGroup("", 0, clusters),),
    )


def exported(broker: str, prefix: str, key: str) -> list[dict[str, Any]]:
    """What `fleetplace export placementdecisions --placement KEY -o json` prints."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "fleetplace.services.cli", "export", "placementdecisions"),
            *("--placement", key, "-o", "json", "--bootstrap", broker, "--prefix", prefix),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def pages_on_hub(hub: ControlPlane, key: str) -> list[dict[str, Any]]:
    namespace, _, name = key.partition("/")
    selector = f"?labelSelector={_PLACEMENT_LABEL}%3D{name}"
    items = hub.request("GET", f"{_OCM}/v1beta1/namespaces/{namespace}/placementdecisions{selector}")["items"]
    return sorted(items, key=lambda p: p["metadata"]["name"])


def status_on_hub(hub: ControlPlane, key: str) -> dict[str, Any]:
    namespace, _, name = key.partition("/")
    placement = hub.request("GET", f"{_OCM}/v1beta1/namespaces/{namespace}/placements/{name}")
    status: dict[str, Any] = placement.get("status") or {}
    return status


def page_view(page: dict[str, Any]) -> dict[str, Any]:
    """What a page says: its name, labels and decisions."""
    return {
        "name": page["metadata"]["name"],
        "labels": page["metadata"].get("labels", {}),
        "decisions": [
            (d["clusterName"], d.get("reason", "")) for d in (page.get("status") or {}).get("decisions") or []
        ],
    }


def conditions(listed: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return sorted((c["type"], c["status"], c["reason"], c.get("message", "")) for c in listed)


async def test_replace_mode_writes_what_export_and_simulate_print_for_the_public_samples(
    hub: ControlPlane, broker: str, topics: Topics
) -> None:
    assert len([s for s in ALL if earlier_pages(s)]) >= 8, "the samples lost their earlier decisions"
    run = uuid.uuid4().hex[:6]
    scenarios = {f"s{run}-{i}": renamed(s, f"s{run}-{i}") for i, s in enumerate(ALL)}
    expected = {tag: simulated(s) for tag, s in scenarios.items()}
    async with Bus(broker, topics) as bus:
        for tag, scenario in scenarios.items():
            # the renamed scenario decides as the published one, names aside
            wanted = [f"{tag}-{c}" for c in ALL[list(scenarios).index(tag)]["expect"]["decisions"]]
            assert expected[tag]["decisions"] == wanted
            create_on_hub(hub, scenario, tag)
            earlier = earlier_decision(scenario)
            if earlier is not None:
                await bus.send("decisions", earlier.placement, encode_json(earlier.to_value()))

    bridge = settings_for(broker, topics.prefix, hub, hub_mode="replace")
    # the bridge first: once it leads, every object on the hub is on the topics, so the scheduler
    # decides each placement on all of its inputs, as `simulate` does (a placement decided before
    # its clusters or scores arrive is decided again, but Steady then weighs that first decision)
    async with running(bridge), running_scheduler(scheduler_settings(broker, topics.prefix)):
        behind: list[str] = []

        async def settled() -> bool:
            behind.clear()
            for tag, scenario in scenarios.items():
                key, line = scenario["placement"], expected[tag]
                chosen = sorted(d[0] for p in pages_on_hub(hub, key) for d in page_view(p)["decisions"])
                status = status_on_hub(hub, key)
                if chosen != sorted(line["decisions"]):
                    behind.append(f"{key}: decisions {chosen}, not {sorted(line['decisions'])}")
                elif status.get("numberOfSelectedClusters") != line["numberOfSelectedClusters"]:
                    behind.append(f"{key}: numberOfSelectedClusters {status.get('numberOfSelectedClusters')}")
                elif conditions(status.get("conditions", [])) != conditions(line["conditions"]):
                    behind.append(f"{key}: conditions {status.get('conditions')}")
            return not behind

        await eventually(
            settled,
            "every sample's decision and status on the hub",
            timeout=120,
            why=lambda: "; ".join(behind),
        )

    for tag, scenario in scenarios.items():
        key, line = scenario["placement"], expected[tag]
        pages = pages_on_hub(hub, key)
        assert [page_view(p) for p in pages] == [
            page_view(p) for p in exported(broker, topics.prefix, key)
        ], tag
        for page in pages:
            (owner,) = page["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["controller"]) == (
                "Placement",
                key.partition("/")[2],
                True,
            )
        status = status_on_hub(hub, key)
        assert status["numberOfSelectedClusters"] == line["numberOfSelectedClusters"]
        assert conditions(status["conditions"]) == conditions(line["conditions"]), tag
        by_name = {p["metadata"]["name"]: p for p in pages}
        groups = [
            (
                g.get("decisionGroupIndex", 0),
                g.get("decisionGroupName", ""),
                sorted(d[0] for n in g.get("decisions", []) for d in page_view(by_name[n])["decisions"]),
                g.get("clusterCount"),
            )
            for g in status.get("decisionGroups", [])
        ]
        assert groups == [
            (g["groupIndex"], g["groupName"], sorted(g["clusters"]), len(g["clusters"]))
            for g in line["decisionGroups"]
        ], tag
