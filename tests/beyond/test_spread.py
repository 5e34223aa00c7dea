"""Spread constraints, the PreferNoSelect penalty and sortBy: Score (docs/beyond-ocm.md)."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.commands.simulate_inputs import read_objects
from fleetplace.services.commands.simulate_scenarios import Scenario, run_scenario
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import fleet_of, schedule
from fleetplace.shared.placement.options import EngineOptions

G = "cluster.open-cluster-management.io"
NOW = datetime(2026, 11, 22, tzinfo=UTC)
EXAMPLES = Path(__file__).parents[2] / "docs" / "examples" / "spread"


def scenario(doc: dict[str, Any], name: str = "t") -> Scenario:
    docs = [(f"{name}[{i}]", o) for i, o in enumerate(doc["objects"])]
    objects, _ = read_objects(docs)
    return Scenario(name, doc.get("name"), NOW, doc["placement"], objects)


def test_the_worked_examples_in_the_docs_hold() -> None:
    files = sorted(EXAMPLES.glob("*.json"))
    assert len(files) >= 4
    for f in files:
        doc = json.loads(f.read_text())
        (got,) = run_scenario(scenario(doc, f.name), None, NOW)
        exp = doc["expect"]
        assert got["decisions"] == exp["decisions"], f.name
        assert got["numberOfSelectedClusters"] == exp["numberOfSelectedClusters"], f.name
        for want, have in zip(exp["conditions"], got["conditions"], strict=True):
            assert {k: have[k] for k in want} == want, f.name


def test_explanation_names_the_spread_term_that_kept_a_cluster_out() -> None:
    doc = json.loads((EXAMPLES / "region-maxskew1-one-domain-without-capacity.json").read_text())
    (got,) = run_scenario(scenario(doc), None, NOW)
    out = got["explain"]["c-us-a3"]
    assert out["selected"] is False
    assert "spreadConstraints[0] (Label region, maxSkew 1, DoNotSchedule)" in out["spread"]


def exact(builtin: str, weight: int = 1) -> dict[str, Any]:
    """An Exact-mode prioritizer policy with one built-in prioritizer."""
    return {
        "mode": "Exact",
        "configurations": [{"scoreCoordinate": {"type": "BuiltIn", "builtIn": builtin}, "weight": weight}],
    }


def fleet_doc(
    clusters: list[tuple[str, str | None, str | None, int]], spec: dict[str, Any]
) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSet",
            "metadata": {"name": "g"},
            "spec": {"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}},
        },
        {
            "apiVersion": f"{G}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"namespace": "ns", "name": "g"},
            "spec": {"clusterSet": "g"},
        },
    ]
    for name, region, zone, cpu in clusters:
        labels = {k: v for k, v in (("region", region), ("zone", zone)) if v is not None}
        objs.append(
            {
                "apiVersion": f"{G}/v1",
                "kind": "ManagedCluster",
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": {"cpu": str(cpu)}, "capacity": {"cpu": "64"}},
            }
        )
    objs.append(
        {
            "apiVersion": f"{G}/v1beta1",
            "kind": "Placement",
            "metadata": {"namespace": "ns", "name": "p"},
            "spec": spec,
        }
    )
    return objs


def run(objs: list[dict[str, Any]], options: EngineOptions | None = None) -> Any:
    fleet = fleet_of([parse_object(o) for o in objs])
    return schedule(fleet.placements["ns/p"], fleet, NOW, options=options)  # type: ignore[arg-type]


cluster_st = st.lists(
    st.tuples(
        st.sampled_from(["r1", "r2", "r3", None]), st.sampled_from(["z1", "z2", None]), st.integers(1, 64)
    ),
    min_size=1,
    max_size=25,
)
term_st = st.lists(
    st.tuples(st.sampled_from(["region", "zone"]), st.integers(1, 3), st.booleans()), min_size=1, max_size=3
)


@settings(max_examples=150, deadline=None)
@given(clusters=cluster_st, terms=term_st, n=st.integers(0, 30), seed=st.integers(0, 1000))
def test_do_not_schedule_terms_never_exceed_max_skew_and_order_does_not_matter(
    clusters: list[tuple[str | None, str | None, int]], terms: list[tuple[str, int, bool]], n: int, seed: int
) -> None:
    named = [(f"c{i:02d}", r, z, cpu) for i, (r, z, cpu) in enumerate(clusters)]
    spread = [
        {
            "topologyKey": k,
            "topologyKeyType": "Label",
            "maxSkew": skew,
            "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        }
        for k, skew, hard in terms
    ]
    spec = {
        "numberOfClusters": n,
        "prioritizerPolicy": exact("ResourceAllocatableCPU"),
        "spreadPolicy": {"spreadConstraints": spread},
    }
    objs = fleet_doc(named, spec)
    result = run(objs)
    shuffled = objs[:]
    random.Random(seed).shuffle(shuffled)
    again = run(shuffled)
    assert (again.decisions, again.scores, [c.to_json() for c in again.conditions]) == (
        result.decisions,
        result.scores,
        [c.to_json() for c in result.conditions],
    )
    assert len(result.decisions) <= n
    labels = {name: {"region": r, "zone": z} for name, r, z, _ in named}
    for key, skew, hard in terms:
        if not hard:
            continue
        domains = {labels[c][key] for c in labels if labels[c][key] is not None}
        counts = Counter(labels[c][key] for c in result.decisions)
        assert None not in counts, "a cluster without the key was selected under DoNotSchedule"
        if domains:
            per_domain = [counts.get(d, 0) for d in domains]
            assert max(per_domain) - min(per_domain) <= skew


def reference_spread(
    ranked: list[str], domain: dict[str, dict[str, str | None]], n: int, terms: list[tuple[str, int, bool]]
) -> list[str]:
    """The greedy rule of docs/beyond-ocm.md, written out naively: skews computed in full each step."""
    # per term (two terms may share a key): its domains among the feasible clusters, and counts
    counts = [dict.fromkeys({domain[c][k] for c in ranked} - {None}, 0) for k, _, _ in terms]
    hard = [i for i, t in enumerate(terms) if t[2]]
    soft = [i for i, t in enumerate(terms) if not t[2]]

    def keeps(cluster: str, term: int) -> bool:
        key, skew, is_hard = terms[term]
        value = domain[cluster][key]
        if value is None:
            return not is_hard
        after = dict(counts[term])
        after[value] += 1
        return after[value] - min(after.values()) <= skew

    chosen: list[str] = []
    remaining = list(ranked)
    while len(chosen) < n:
        admissible = [c for c in remaining if all(keeps(c, t) for t in hard)]
        if not admissible:
            break
        for keep in range(len(soft), -1, -1):
            candidates = [c for c in admissible if all(keeps(c, t) for t in soft[:keep])]
            if candidates:
                break
        pick = candidates[0]
        chosen.append(pick)
        remaining.remove(pick)
        for i, (key, _, _) in enumerate(terms):
            if domain[pick][key] is not None:
                counts[i][domain[pick][key]] += 1
    return chosen


def test_schedule_anyway_terms_are_relaxed_from_the_last_index() -> None:
    # after `a`, nothing keeps both terms: `b` keeps only zone (term 1), `c` only region (term 0);
    # relaxing from the last index keeps term 0, so `c` is taken although `b` ranks higher
    clusters = [("a", "r1", "z1", 64), ("b", "r1", "z2", 50), ("c", "r2", "z1", 40)]
    soft = [
        {"topologyKey": key, "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}
        for key in ("region", "zone")
    ]
    spec = {
        "numberOfClusters": 2,
        "prioritizerPolicy": exact("ResourceAllocatableCPU"),
        "spreadPolicy": {"spreadConstraints": soft},
    }
    assert list(run(fleet_doc(clusters, spec)).decisions) == ["a", "c"]
    spec["spreadPolicy"] = {"spreadConstraints": soft[::-1]}
    assert list(run(fleet_doc(clusters, spec)).decisions) == ["a", "b"]
    domain = {name: {"region": r, "zone": z} for name, r, z, _ in clusters}
    terms = [("region", 1, False), ("zone", 1, False)]
    assert reference_spread(["a", "b", "c"], domain, 2, terms) == ["a", "c"]


@settings(max_examples=300, deadline=None)
@given(
    clusters=cluster_st,
    terms=st.lists(
        st.tuples(st.sampled_from(["region", "zone"]), st.integers(1, 2), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    n=st.integers(1, 30),
)
def test_spread_selection_equals_the_naive_greedy_rule(
    clusters: list[tuple[str | None, str | None, int]], terms: list[tuple[str, int, bool]], n: int
) -> None:
    named = [(f"c{i:02d}", r, z, cpu) for i, (r, z, cpu) in enumerate(clusters)]
    spec = {
        "numberOfClusters": n,
        "prioritizerPolicy": exact("ResourceAllocatableCPU"),
        "spreadPolicy": {
            "spreadConstraints": [
                {
                    "topologyKey": k,
                    "maxSkew": skew,
                    "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
                }
                for k, skew, hard in terms
            ]
        },
    }
    result = run(fleet_doc(named, spec))
    ranked = sorted(result.scores, key=lambda c: (-result.scores[c], c))
    domain = {name: {"region": r, "zone": z} for name, r, z, _ in named}
    assert sorted(result.decisions) == sorted(reference_spread(ranked, domain, n, terms))


@settings(max_examples=80, deadline=None)
@given(clusters=cluster_st, n=st.one_of(st.none(), st.integers(0, 30)))
def test_with_the_features_off_decisions_equal_the_ocm_result(
    clusters: list[tuple[str | None, str | None, int]], n: int | None
) -> None:
    named = [(f"c{i:02d}", r, z, cpu) for i, (r, z, cpu) in enumerate(clusters)]
    spec: dict[str, Any] = {
        "prioritizerPolicy": {
            "configurations": [
                {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 2}
            ]
        }
    }
    if n is not None:
        spec["numberOfClusters"] = n
    plain = run(fleet_doc(named, spec))
    penalize = run(
        fleet_doc(named, spec), EngineOptions(prefer_no_select="penalize")
    )  # no PreferNoSelect taints here
    by_name = run(fleet_doc(named, {**spec, "sortBy": "ClusterName"}))
    for other in (penalize, by_name):
        assert (other.decisions, other.scores, other.conditions) == (
            plain.decisions,
            plain.scores,
            plain.conditions,
        )
    # and the OCM rule itself: the best N by score, then name, listed by name
    ranked = sorted(plain.scores, key=lambda c: (-plain.scores[c], c))
    assert list(plain.decisions) == sorted(ranked if n is None else ranked[:n])


def test_prefer_no_select_is_ignored_by_default_and_penalised_when_on() -> None:
    objs = fleet_doc([("a", None, None, 8), ("b", None, None, 8)], {"numberOfClusters": 1})
    objs[2]["spec"] = {
        "taints": [{"key": "spot", "effect": "PreferNoSelect", "timeAdded": "2026-11-22T00:00:00Z"}]
    }
    assert run(objs).decisions == ("a",)  # OCM: PreferNoSelect has no effect, name order wins
    on = run(objs, EngineOptions(prefer_no_select="penalize"))
    # a (tainted): Balance 100 + Steady 0 - 100 penalty = 0; b: 100
    assert on.decisions == ("b",) and on.scores == {"a": 0, "b": 100}
    tolerant = [
        o
        if o["kind"] != "Placement"
        else {**o, "spec": {"numberOfClusters": 1, "tolerations": [{"key": "spot", "operator": "Exists"}]}}
        for o in objs
    ]
    assert run(tolerant, EngineOptions(prefer_no_select="penalize")).decisions == ("a",)


def test_taint_toleration_prioritizer_is_configurable_only_when_the_penalty_is_on() -> None:
    cfg = {
        "numberOfClusters": 1,
        "prioritizerPolicy": exact("TaintToleration", 3),
    }
    objs = fleet_doc([("a", None, None, 8), ("b", None, None, 8)], cfg)
    objs[2]["spec"] = {"taints": [{"key": "spot", "effect": "PreferNoSelect"}]}
    off = run(objs)
    assert off.conditions[0].message == ":incorrect builtin prioritizer: TaintToleration"
    on = run(objs, EngineOptions(prefer_no_select="penalize"))
    assert on.decisions == ("b",) and on.scores == {"a": -300, "b": 0}


def test_sort_by_score_orders_each_group_by_score_then_name() -> None:
    clusters = [("a", None, None, 2), ("b", None, None, 64), ("c", None, None, 33), ("d", None, None, 64)]
    cfg = {
        "mode": "Exact",
        "configurations": [
            {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "ResourceAllocatableCPU"}, "weight": 1}
        ],
    }
    by_name = run(fleet_doc(clusters, {"prioritizerPolicy": cfg}))
    by_score = run(fleet_doc(clusters, {"prioritizerPolicy": cfg, "sortBy": "Score"}))
    assert by_name.decisions == ("a", "b", "c", "d")
    assert by_score.decisions == ("b", "d", "c", "a")  # 100, 100, 0 (ratio 31/62 = 0.5), -100
    assert set(by_score.selected) == set(by_name.selected)
