"""A decision as SIG-Multicluster PlacementDecision slices: at most 100 decisions each, in the
placement's order, one decision key, indexes 0..n-1, the upstream CRD's constraints; what
`simulate --output sig-mc` prints for `kubectl apply`."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetplace.services.cli import app
from fleetplace.shared.api.sigmc import (
    DECISION_INDEX_LABEL,
    DECISION_KEY_LABEL,
    SigmcPlacementDecision,
    decision_key,
    slice_count,
    slices,
)
from fleetplace.shared.bus.codec import decode_object, encode_json

from ..placement.builders import NOW, addon, addon_score, bound_set, cluster, iso, placement, policy
from .profiles import as_profiles

GROUP_NAME = "cluster.open-cluster-management.io/decision-group-name"
GROUP_INDEX = "cluster.open-cluster-management.io/decision-group-index"


def _groups(sizes: list[int]) -> list[tuple[str, int, list[str]]]:
    out, n = [], 0
    for index, size in enumerate(sizes):
        out.append((f"g{index}" if index else "", index, [f"c{n + i:05d}" for i in range(size)]))
        n += size
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=350), min_size=1, max_size=5),
    st.text(min_size=1, max_size=80),
)
def test_the_slices_union_is_the_decision_in_order(sizes: list[int], name: str) -> None:
    groups = _groups(sizes)
    made = slices(f"ns1/{name}", groups, {}, lambda c: "ns1", seq=7)
    assert len(made) == slice_count(groups)
    labels = [s["metadata"]["labels"] for s in made]
    assert [int(lab[DECISION_INDEX_LABEL]) for lab in labels] == list(range(len(made)))
    assert {lab[DECISION_KEY_LABEL] for lab in labels} == {decision_key(name)}
    assert len(decision_key(name)) <= 63
    union = [d["clusterProfileRef"]["name"] for s in made for d in s["decisions"]]
    assert union == [c for _, _, clusters in groups for c in clusters]
    for s in made:
        SigmcPlacementDecision.model_validate(s)  # maxItems 100, required fields, no stray field
        assert len(s["decisions"]) <= 100
    # each group's clusters sit in slices labelled with that group, in group order
    for gname, gindex, clusters in groups:
        mine = [s for s in made if s["metadata"]["labels"][GROUP_INDEX] == str(gindex)]
        assert all(s["metadata"]["labels"][GROUP_NAME] == gname for s in mine)
        assert [d["clusterProfileRef"]["name"] for s in mine for d in s["decisions"]] == clusters


def test_a_placement_name_that_is_no_label_value_gets_a_short_unique_key() -> None:
    long_a, long_b = "a" * 70 + "x", "a" * 70 + "y"
    assert decision_key("web") == "web"
    for name in (long_a, "web/evil:name"):
        key = decision_key(name)
        assert len(key) <= 63 and key[0].isalnum() and key[-1].isalnum()
    assert decision_key(long_a) != decision_key(long_b)


def _sigmc(objects: list[dict[str, Any]], *args: str) -> list[dict[str, Any]]:
    scenario = {"name": "t", "now": iso(NOW), "placement": "ns1/placement1", "objects": objects}
    result = CliRunner().invoke(app, ["simulate", "-", "-o", "sig-mc", *args], input=json.dumps(scenario))
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(result.stdout)
    assert doc["apiVersion"] == "v1" and doc["kind"] == "List"
    return list(doc["items"])


def test_simulate_prints_250_selected_clusters_as_three_slices() -> None:
    objects = bound_set(*[cluster(f"c{i:03d}") for i in range(250)])
    items = _sigmc([*as_profiles(objects), placement({})])
    assert [len(s["decisions"]) for s in items] == [100, 100, 50]
    assert [s["metadata"]["name"] for s in items] == ["placement1-0", "placement1-1", "placement1-2"]
    assert {s["metadata"]["labels"][DECISION_KEY_LABEL] for s in items} == {"placement1"}
    for s in items:
        SigmcPlacementDecision.model_validate(s)
        assert s["schedulerName"] == "fleetplace"
        assert s["metadata"]["labels"]["cluster.open-cluster-management.io/placement"] == "placement1"
        for d in s["decisions"]:
            # upstream's ClusterProfileReference: a name and a namespace, nothing else
            assert set(d["clusterProfileRef"]) == {"name", "namespace"}
            assert d["clusterProfileRef"]["namespace"] == "ns1"
            assert d["reason"].startswith("rank ") and "/250, score " in d["reason"]
    assert [d["clusterProfileRef"]["name"] for s in items for d in s["decisions"]] == [
        f"c{i:03d}" for i in range(250)
    ]


def test_every_reason_names_rank_total_and_each_prioritizers_share() -> None:
    objects = bound_set(*[cluster(f"c{i}") for i in range(4)])
    scores = [addon_score(f"c{i}", "demo", {"s": 20 * i}) for i in range(4)]
    spec = {"numberOfClusters": 2, "prioritizerPolicy": policy("Exact", addon("demo", "s", 3))}
    items = _sigmc([*objects, *scores, placement(spec)])
    reasons = {d["clusterProfileRef"]["name"]: d["reason"] for s in items for d in s["decisions"]}
    assert reasons == {
        "c3": "rank 1/4, score 180: AddOn/demo/s 60×3",
        "c2": "rank 2/4, score 120: AddOn/demo/s 40×3",
    }


def test_managed_clusters_are_referenced_in_the_namespace_given() -> None:
    objects = bound_set(cluster("c1"))
    items = _sigmc([*objects, placement({})], "--cluster-namespace", "inventory")
    assert items[0]["decisions"][0]["clusterProfileRef"]["namespace"] == "inventory"
    profiles = as_profiles(objects, namespace="fleet-a")
    items = _sigmc([*profiles, placement({})], "--cluster-namespace", "inventory")
    assert items[0]["decisions"][0]["clusterProfileRef"]["namespace"] == "fleet-a"


def test_hostile_values_cannot_break_the_yaml_or_the_record() -> None:
    hostile = 'x"\n- kind: Secret\n  data: {a: "b"}\' #: ' * 250  # about 10 kB: quotes, newlines, YAML syntax
    c1 = cluster("c1", claims={"note": hostile})
    objects = bound_set(c1, cluster("c2"))
    profiles = as_profiles(objects)
    scores = [addon_score("c1", hostile[:200], {hostile[:100]: 50})]
    spec = {"prioritizerPolicy": policy("Additive", addon(hostile[:200], hostile[:100], 1))}
    items = _sigmc([*profiles, *scores, placement(spec)])
    assert len(items) == 1 and all(item["kind"] == "PlacementDecision" for item in items)
    reason = items[0]["decisions"][0]["reason"]
    assert hostile[:100] in reason  # the AddOn coordinate is named as written, and survives intact
    # and as the worker's records: encoded and decoded, the same slices
    assert [decode_object(encode_json(s)) for s in items] == items
