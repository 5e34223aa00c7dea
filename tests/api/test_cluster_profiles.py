"""ClusterProfiles as a cluster source: the engine sees a profile exactly as the ManagedCluster of
docs/cluster-inventory.md's table, in `simulate` (scenarios and object files) and in the worker's
processor; bad profiles are refused with the field and the reason."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.services.scheduler.core import InvalidRecord, SchedulerProcessor
from fleetplace.shared.api.admission import read_object
from fleetplace.shared.api.objects import ObjectError
from fleetplace.shared.placement.engine import PlacementEngine

from ..placement.builders import (
    NOW,
    binding,
    bound_set,
    builtin,
    cluster,
    cluster_set,
    iso,
    placement,
    policy,
    taint,
    toleration,
)
from ..placement.test_properties import World, objects_of, worlds
from .profiles import as_profiles, profile_of

DATA = Path(__file__).resolve().parent.parent / "placement" / "data"
UNAVAILABLE = "cluster.open-cluster-management.io/unavailable"
UNREACHABLE = "cluster.open-cluster-management.io/unreachable"


def simulate_scenario(objects: list[dict[str, Any]], key: str = "ns1/placement1") -> dict[str, Any]:
    scenario = {"name": "t", "now": iso(NOW), "placement": key, "objects": objects}
    result = CliRunner().invoke(app, ["simulate", "-", "-o", "json"], input=json.dumps(scenario))
    assert result.exit_code == 0, result.output
    (line,) = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    line.pop("name")
    return line


def healthy(name: str, *, status: str | None = "True", since: str = "2026-03-01T11:00:00Z", **kw: Any) -> Any:
    profile = profile_of(cluster(name, **kw), "ns1")
    if status is None:
        profile["status"]["conditions"] = []
    else:
        profile["status"]["conditions"][0].update(status=status, lastTransitionTime=since)
    return profile


# ---- the same decisions from either source ---------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_a_fleet_of_profiles_is_placed_as_its_managed_clusters(w: World) -> None:
    objects = objects_of(w)
    assert simulate_scenario(as_profiles(objects)) == simulate_scenario(objects)


def test_the_seed_article_scenarios_give_the_same_answers_as_profiles(tmp_path: Path) -> None:
    scenarios = json.loads((DATA / "ocm-seed-article.json").read_text())
    for sc in scenarios:
        sc["objects"] = as_profiles(sc["objects"], namespace=sc["placement"].split("/")[0])
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps(scenarios))
    result = CliRunner().invoke(app, ["simulate", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output  # a scenario whose expect differs exits 1
    assert len([x for x in result.stdout.splitlines() if x.startswith("{")]) == len(scenarios)
    assert "ClusterProfile" in path.read_text()


def test_the_public_profile_sample_matches_its_expectations() -> None:
    result = CliRunner().invoke(app, ["simulate", str(DATA / "clusterprofile-ocm-sample.json"), "-o", "json"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == len(json.loads((DATA / "clusterprofile-ocm-sample.json").read_text()))


def test_a_version_2_profile_is_refused_as_no_upstream_crd_serves_it() -> None:
    # cluster-inventory-api, OCM and KubeFleet ship ClusterProfile v1alpha1 only (docs/cluster-inventory.md)
    doc = profile_of(cluster("c1"), "ns1", api_version="v1alpha2")
    with pytest.raises(ObjectError, match=r"apiVersion: 'multicluster.x-k8s.io/v1alpha2' does not serve"):
        read_object(doc, "profile.yaml")
    read_object(profile_of(cluster("c1"), "ns1"), "profile.yaml")


# ---- the mapping, field by field ---------------------------------------------------------------------


def test_control_plane_health_maps_to_ocms_availability_taints() -> None:
    objects = [
        cluster_set("set1"),
        binding("set1"),
        healthy("ok", clusterset="set1"),
        healthy("down", status="False", clusterset="set1"),
        healthy("unknown", status="Unknown", clusterset="set1"),
        healthy("silent", status=None, clusterset="set1"),
    ]
    line = simulate_scenario([*objects, placement({})])
    assert line["decisions"] == ["ok"]
    assert line["explain"]["down"]["filteredBy"] == "TaintToleration"
    assert UNAVAILABLE in line["explain"]["down"]["reason"]
    assert UNREACHABLE in line["explain"]["unknown"]["reason"]
    assert UNREACHABLE in line["explain"]["silent"]["reason"]


@pytest.mark.parametrize(("ago", "tolerated"), [(100, True), (400, False)])
def test_a_toleration_of_the_health_taint_expires_from_the_conditions_transition_time(
    ago: int, tolerated: bool
) -> None:
    down = healthy("down", status="False", since=iso(NOW - timedelta(seconds=ago)), clusterset="set1")
    tol = toleration(UNAVAILABLE, "Exists", seconds=300)
    line = simulate_scenario([cluster_set("set1"), binding("set1"), down, placement({"tolerations": [tol]})])
    assert line["decisions"] == (["down"] if tolerated else [])


@pytest.mark.parametrize(("ago", "tolerated"), [(250, True), (350, False)])
def test_an_absent_health_condition_dates_the_taint_from_the_profiles_creation(
    ago: int, tolerated: bool
) -> None:
    silent = healthy("silent", status=None, clusterset="set1")
    silent["metadata"]["creationTimestamp"] = iso(NOW - timedelta(seconds=ago))
    tol = toleration(UNREACHABLE, "Exists", seconds=300)
    line = simulate_scenario(
        [cluster_set("set1"), binding("set1"), silent, placement({"tolerations": [tol]})]
    )
    assert line["decisions"] == (["silent"] if tolerated else [])


def test_kubefleet_resource_properties_are_allocatable_and_capacity() -> None:
    # c2 has more allocatable CPU and the same capacity: it wins only if its allocatable is read
    # as allocatable (a tie, or capacity read as allocatable, goes to c1 by name). A scenario is
    # as written: without a weight the prioritizer would count for nothing.
    objects = bound_set(
        cluster("c1", allocatable={"cpu": "2", "memory": "1Gi"}, capacity={"cpu": "8", "memory": "8Gi"}),
        cluster("c2", allocatable={"cpu": "6", "memory": "6Gi"}, capacity={"cpu": "8", "memory": "8Gi"}),
    )
    spec = {"numberOfClusters": 1, "prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableCPU", 1))}
    line = simulate_scenario([*as_profiles(objects), placement(spec)])
    assert line["decisions"] == ["c2"]
    assert line["scores"] == {"c1": -100, "c2": 100}
    # and they stay claims too
    claims = {"resources.kubernetes-fleet.io/allocatable-cpu": "6"}
    selector = {
        "claimSelector": {
            "matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in claims.items()]
        }
    }
    line = simulate_scenario(
        [*as_profiles(objects), placement({"predicates": [{"requiredClusterSelector": selector}]})]
    )
    assert line["decisions"] == ["c2"]


def test_cel_sees_a_profile_as_its_managed_cluster() -> None:
    c = cluster("c1", labels={"env": "prod"}, claims={"region": "eu"})
    c["status"]["version"] = {"kubernetes": "v1.30.2"}
    objects = bound_set(c, cluster("c2", labels={"env": "dev"}))
    cel = [
        'managedCluster.metadata.labels["env"] == "prod"',
        'managedCluster.status.clusterClaims.exists(c, c.name == "region" && c.value == "eu")',
        'managedCluster.status.version.kubernetes == "v1.30.2"',
    ]
    spec = {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": cel}}}]}
    assert simulate_scenario([*as_profiles(objects), placement(spec)])["decisions"] == ["c1"]
    assert simulate_scenario([*objects, placement(spec)])["decisions"] == ["c1"]


def test_a_terminating_profile_is_a_terminating_cluster() -> None:
    objects = bound_set(cluster("c1"), cluster("c2", deleting=True))
    assert simulate_scenario([*as_profiles(objects), placement({})])["decisions"] == ["c1"]


# ---- several sources for one name ------------------------------------------------------------------


def _processor_with(*records: tuple[str, str, dict[str, Any] | None]) -> SchedulerProcessor:
    processor = SchedulerProcessor()
    for topic, key, value in records:
        processor.apply(topic, key, value)
    return processor


def test_profiles_of_one_name_in_several_namespaces_are_one_cluster_the_first_namespace_wins() -> None:
    a = healthy("c1", labels={"zone": "a"})
    b = copy.deepcopy(a)
    b["metadata"]["namespace"] = "alpha"
    b["metadata"]["labels"] = {"zone": "b"}
    for order in ((a, b), (b, a)):
        p = _processor_with(*[("cluster-profiles", f"{x['metadata']['namespace']}/c1", x) for x in order])
        assert list(p.fleet.clusters) == ["c1"]
        assert p.fleet.clusters["c1"].labels["zone"] == "b"  # namespace "alpha" sorts first
    p.apply("cluster-profiles", "alpha/c1", None)
    assert p.fleet.clusters["c1"].labels["zone"] == "a"
    p.apply("cluster-profiles", "ns1/c1", None)
    assert "c1" not in p.fleet.clusters


def test_a_managed_cluster_wins_over_a_profile_of_the_same_name() -> None:
    profile = healthy("c1", labels={"from": "profile"})
    managed = cluster("c1", labels={"from": "managed"})
    for records in (
        [("cluster-profiles", "ns1/c1", profile), ("clusters", "c1", managed)],
        [("clusters", "c1", managed), ("cluster-profiles", "ns1/c1", profile)],
    ):
        p = _processor_with(*records)
        assert p.fleet.clusters["c1"].labels["from"] == "managed"
    p.apply("clusters", "c1", None)
    assert p.fleet.clusters["c1"].labels["from"] == "profile"


def test_taints_of_the_taints_topic_add_to_a_profiles_cluster() -> None:
    p = _processor_with(
        ("cluster-profiles", "ns1/c1", healthy("c1", status="False")),
        ("taints", "c1", {"taints": [taint("maintenance", added=iso(NOW))]}),
    )
    keys = sorted(t.key for t in p.fleet.clusters["c1"].taints)
    assert keys == [UNAVAILABLE, "maintenance"]


def test_a_profile_whose_health_turns_false_moves_the_placement() -> None:
    engine_objects = [cluster_set("set1"), binding("set1"), placement({"numberOfClusters": 1})]
    p = SchedulerProcessor()
    for o in engine_objects:
        kind = o["kind"]
        topic = {"ManagedClusterSet": "clustersets", "ManagedClusterSetBinding": "clustersetbindings"}.get(
            kind, "placements"
        )
        key = (
            o["metadata"]["name"]
            if topic == "clustersets"
            else f"{o['metadata']['namespace']}/{o['metadata']['name']}"
        )
        p.apply(topic, key, o)
    for name in ("a", "b"):
        p.apply("cluster-profiles", f"ns1/{name}", healthy(name, clusterset="set1"))
    (first,) = p.evaluate(NOW)
    assert first["decisions"] == ["a"]
    p.apply("cluster-profiles", "ns1/a", healthy("a", status="False", clusterset="set1"))
    (second,) = p.evaluate(NOW)
    assert second["decisions"] == ["b"]
    assert second["trigger"] == {"kind": "cluster", "key": "a"}


# ---- bad profiles ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "path", "reason"),
    [
        (lambda d: d["spec"].pop("clusterManager"), "spec.clusterManager.name", "Required value"),
        (lambda d: d["status"]["properties"].append({"name": "x"}), "status.properties[0].value", "Required"),
        (
            lambda d: d["status"]["properties"].append(
                {"name": "resources.kubernetes-fleet.io/allocatable-cpu", "value": "lots"}
            ),
            "status.properties[0].value",
            "not a Kubernetes quantity",
        ),
        (lambda d: d["metadata"].pop("namespace"), "metadata.namespace", "Required value"),
        (
            lambda d: d["status"]["conditions"][0].update(status="Maybe"),
            "status.conditions[0].status",
            "Unsupported",
        ),
    ],
)
def test_a_bad_profile_is_refused_with_its_field_and_reason(change: Any, path: str, reason: str) -> None:
    doc = healthy("c1")
    change(doc)
    with pytest.raises(ObjectError) as e:
        read_object(doc, "fleet.yaml#0")
    assert path in str(e.value) and reason in str(e.value) and "fleet.yaml#0" in str(e.value)
    with pytest.raises(InvalidRecord, match=path.replace("[", r"\[").replace("]", r"\]")):
        SchedulerProcessor().apply("cluster-profiles", "ns1/c1", doc)


def test_unknown_fields_and_versions_are_refused_under_strict_validation() -> None:
    doc = healthy("c1")
    doc["status"]["propertys"] = []
    with pytest.raises(ObjectError, match=r"status\.propertys: unknown field"):
        read_object(doc, "f")
    doc = healthy("c1")
    doc["apiVersion"] = "multicluster.x-k8s.io/v1"
    with pytest.raises(ObjectError, match="does not serve ClusterProfile"):
        read_object(doc, "f")
    # fields upstream defines that placement does not read are known
    doc = healthy("c1")
    doc["status"]["credentialProviders"] = [{"name": "token"}]
    doc["status"]["properties"][0:0] = [{"name": "a", "value": "b", "lastObservedTime": iso(NOW)}]
    read_object(doc, "f")


def test_a_profile_keyed_other_than_namespace_name_is_refused() -> None:
    with pytest.raises(InvalidRecord, match="does not match"):
        SchedulerProcessor().apply("cluster-profiles", "c1", healthy("c1"))
    with pytest.raises(InvalidRecord, match="does not match"):
        SchedulerProcessor().apply("cluster-profiles", "other/c1", healthy("c1"))


def test_engine_unchanged_for_managed_clusters() -> None:
    # a ManagedCluster alone is read exactly as before: no profile machinery in its way
    p = _processor_with(("clusters", "c1", cluster("c1", labels={"a": "b"})))
    assert p.fleet.clusters["c1"].labels["a"] == "b"
    assert isinstance(p.engine, PlacementEngine)


def test_a_sequence_gives_the_same_decisions_step_by_step_from_profiles(tmp_path: Path) -> None:
    # the worker's stepwise semantics: profiles and ClusterTaints are ingested as records, taints
    # expire as time moves, a cluster's upsert in a later step replaces its profile and taints
    data = Path(__file__).resolve().parent.parent / "data" / "sequence-tolerations.json"
    sequences = json.loads(data.read_text())
    for seq in sequences:
        seq["initial"]["objects"] = as_profiles(seq["initial"]["objects"])
        for step in seq["steps"]:
            if "upsert" in step:
                step["upsert"] = as_profiles(step["upsert"])
            assert all(d["kind"] != "ManagedCluster" for d in step.get("delete", []))
    converted = tmp_path / "profiles.json"
    converted.write_text(json.dumps(sequences))

    def run(path: Path) -> list[dict[str, Any]]:
        result = CliRunner().invoke(app, ["simulate", "--sequence", str(path)])
        assert result.exit_code == 0, result.output
        return [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]

    assert "ClusterTaints" in converted.read_text()
    original, profiles = run(data), run(converted)
    assert len(original) >= 4
    assert profiles == original
