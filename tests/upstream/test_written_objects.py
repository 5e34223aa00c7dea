"""Every Kubernetes object fleetplace prints or writes is one the API server accepts.

Over random worlds (long and odd names included: placement names up to 253 characters, dotted,
namespaces up to 63), the objects of

- `fleetplace simulate --output sig-mc` (the scenario runner it calls),
- the scheduler's `placement-decisions` records (their `items`) and `sigmc-placement-decisions`
  records (the processor the worker runs),
- `fleetplace export placementdecisions` in both formats (the folds it calls on those records)

are checked against the pinned upstream CRDs' `openAPIV3Schema` and the API server's name and
label rules (tests/upstream/schema.py). The world's own input objects are checked the same way,
so the worlds are ones an API server would hold.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplace.services.auditor.export import fold_placement_decisions, fold_sigmc_slices, kubernetes_objects
from fleetplace.services.commands.simulate_scenarios import SigmcRefs, load_scenarios, run_scenario
from fleetplace.services.scheduler.core import SchedulerOptions, SchedulerProcessor
from fleetplace.shared.bus.records import Record
from tests.placement.builders import NOW
from tests.upstream.schema import problems

G = "cluster.open-cluster-management.io"
SET = "prod"
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


@st.composite
def dns_label(draw: st.DrawFn, size: int) -> str:
    if size == 1:
        return draw(st.sampled_from(_ALNUM))
    ends = st.sampled_from(_ALNUM)
    middle = draw(st.text(alphabet=_ALNUM + "-", min_size=size - 2, max_size=size - 2))
    return draw(ends) + middle + draw(ends)


@st.composite
def subdomain(draw: st.DrawFn, longest: int = 253) -> str:
    """A DNS-1123 subdomain, short, around the 63-character label limit, or near `longest`."""
    target = draw(st.one_of(st.integers(1, 12), st.integers(52, 75), st.integers(longest - 12, longest)))
    parts: list[str] = []
    total = 0
    while total < target:
        room = min(63, target - total - (1 if parts else 0))
        if room < 1:
            break
        size = draw(st.integers(1, room))
        parts.append(draw(dns_label(size)))
        total += size + (1 if len(parts) > 1 else 0)
    return ".".join(parts)


@st.composite
def namespace(draw: st.DrawFn) -> str:
    return draw(dns_label(draw(st.one_of(st.integers(1, 10), st.integers(55, 63)))))


@st.composite
def world(draw: st.DrawFn) -> dict[str, Any]:
    ns = draw(namespace())
    profile_ns = draw(namespace())
    named = draw(st.lists(subdomain(), min_size=0, max_size=4, unique=True))
    bulk = draw(st.sampled_from([0, 3, 101, 205]))
    names = sorted(set(named) | {f"c{i:03d}" for i in range(bulk)})
    as_profile = {n for n in names if draw(st.booleans())} if len(names) <= 10 else set()
    return {
        "namespace": ns,
        "profile_namespace": profile_ns,
        "placement": draw(subdomain()),
        "clusters": names,
        "profiles": as_profile,
        "sort_by_score": draw(st.booleans()),
        "groups": draw(st.booleans()),
        "managed_namespaces": draw(st.booleans()),
    }


def _objects(w: dict[str, Any]) -> list[dict[str, Any]]:
    ns = w["namespace"]
    clusterset: dict[str, Any] = {
        "apiVersion": f"{G}/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": SET},
    }
    if w["managed_namespaces"]:
        clusterset["spec"] = {"managedNamespaces": [{"name": "apps"}]}
    out: list[dict[str, Any]] = [
        clusterset,
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": ns, "name": SET},
            "spec": {"clusterSet": SET},
        },
    ]
    for i, name in enumerate(w["clusters"]):
        labels = {f"{G}/clusterset": SET, "tier": "canary" if i % 3 == 0 else "main"}
        if name in w["profiles"]:
            out.append(
                {
                    "apiVersion": "multicluster.x-k8s.io/v1alpha1",
                    "kind": "ClusterProfile",
                    "metadata": {"namespace": w["profile_namespace"], "name": name, "labels": labels},
                    "spec": {"displayName": name, "clusterManager": {"name": "test"}},
                    "status": {
                        "conditions": [
                            {
                                "type": "ControlPlaneHealthy",
                                "status": "True",
                                "reason": "Healthy",
                                "message": "",
                                "lastTransitionTime": "2020-01-01T00:00:00Z",
                            }
                        ]
                    },
                }
            )
        else:
            out.append(
                {
                    "apiVersion": f"{G}/v1",
                    "kind": "ManagedCluster",
                    "metadata": {"name": name, "labels": labels},
                }
            )
    spec: dict[str, Any] = {"clusterSets": [SET]}
    if w["sort_by_score"]:
        spec["sortBy"] = "Score"
    if w["groups"]:
        spec["decisionStrategy"] = {
            "groupStrategy": {
                "decisionGroups": [
                    {
                        "groupName": "canary",
                        "groupClusterSelector": {"labelSelector": {"matchLabels": {"tier": "canary"}}},
                    }
                ]
            }
        }
    out.append(
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": ns, "name": w["placement"]},
            "spec": spec,
        }
    )
    return out


def _topic(key_value: list[tuple[str, dict[str, Any] | None]], topic: str) -> list[Record]:
    return [
        Record(topic, 0, i, key, orjson.dumps(value) if value is not None else None)
        for i, (key, value) in enumerate(key_value)
    ]


def _written(w: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    objects = _objects(w)
    processor = SchedulerProcessor(SchedulerOptions(sigmc=True))
    topic_of = {
        "ManagedClusterSet": "clustersets",
        "ManagedClusterSetBinding": "clustersetbindings",
        "ManagedCluster": "clusters",
        "ClusterProfile": "cluster-profiles",
        "Placement": "placements",
    }
    for o in objects:
        meta = o["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
        processor.apply(topic_of[o["kind"]], key, o)
    current: list[tuple[str, dict[str, Any] | None]] = []
    sigmc: list[tuple[str, dict[str, Any] | None]] = []
    for diff in processor.evaluate(NOW):
        key = diff["placement"]
        sigmc.extend(processor.sigmc_changes(key, processor.take_pending(key)))
        current.append((key, processor.placement_decisions(key)))
    assert current, "the world's placement was not evaluated"
    scenario_text = yaml.safe_dump_all(objects)
    (scenario,) = load_scenarios([("world.yaml", scenario_text)], None, None, None)
    assert not isinstance(scenario, Exception), scenario
    simulated = run_scenario(scenario, None, NOW, sigmc=SigmcRefs())
    placement_records = _topic(current, "placement-decisions")
    return {
        "inputs": objects,
        "simulate --output sig-mc": [s for line in simulated for s in line["sigmc"]],
        "placement-decisions": [item for _, value in current if value for item in value["items"]],
        "sigmc-placement-decisions": [value for _, value in sigmc if value is not None],
        "export --format ocm": kubernetes_objects(fold_placement_decisions(placement_records)),
        "export --format sig-mc": fold_sigmc_slices(_topic(sigmc, "sigmc-placement-decisions")),
    }


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(world())
def test_every_object_fleetplace_writes_is_one_the_api_server_accepts(w: dict[str, Any]) -> None:
    written = _written(w)
    assert written["placement-decisions"] and written["sigmc-placement-decisions"]
    refused = {
        f"{source}: {obj['kind']} {obj['metadata'].get('name', '')!r}"[:120]: found
        for source, objs in written.items()
        for obj in objs
        if (found := problems(obj))
    }
    assert refused == {}
