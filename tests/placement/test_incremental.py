"""The engine's incremental state (per-slot score columns, set masks, selector verdicts, decision
counts, caches shared across placements) agrees with a fleet built from scratch.

A long-lived engine takes a random sequence of cluster and AddOn-score upserts and deletes (names
drawn from a small pool, so slots are freed and reused; a cluster update may change only its
status, as a heartbeat does, or its labels and claims), evaluating and committing its placements
after every step, as the worker does. At the end every placement's result must equal the result
of a fresh engine that is given only the final objects and the same current decisions.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import PlacementEngine, apply_object
from fleetplace.shared.placement.engine import delete_object

from .builders import (
    NOW,
    addon,
    addon_score,
    ago,
    binding,
    builtin,
    claim_predicate,
    cluster,
    cluster_set,
    expr,
    global_set,
    label_predicate,
    placement,
    policy,
)

NAMES = [f"c{i}" for i in range(6)]
PLACEMENTS = {
    "ns1/scored": {
        "numberOfClusters": 2,
        "prioritizerPolicy": policy(
            "Exact", addon("demo", "demo"), builtin("ResourceAllocatableCPU"), builtin("Balance")
        ),
    },
    "ns1/gold": {
        "predicates": [label_predicate({"tier": "gold"})],
        "prioritizerPolicy": policy("Additive", addon("demo", "demo", 2)),
    },
    "ns1/east": {  # a claim selector
        "predicates": [claim_predicate(expr("region", "In", "east"))],
    },
    "ns2/silver": {  # a set that selects by label
        "clusterSets": ["silver"],
    },
}

op_st = st.one_of(
    st.tuples(
        st.just("cluster"),
        st.sampled_from(NAMES),
        st.sampled_from(["gold", "silver"]),
        st.integers(1, 64),
        st.sampled_from(["east", "west"]),
        st.booleans(),  # tainted NoSelectIfNew: kept only by placements that already decided it
    ),
    st.tuples(st.just("score"), st.sampled_from(NAMES), st.integers(-100, 100)),
    st.tuples(st.just("delete-cluster"), st.sampled_from(NAMES)),
    st.tuples(st.just("delete-score"), st.sampled_from(NAMES)),
)


def _cluster(name: str, tier: str, cpu: int, region: str, tainted: bool) -> dict[str, Any]:
    return cluster(
        name,
        labels={"tier": tier},
        allocatable={"cpu": str(cpu)},
        capacity={"cpu": "64"},
        claims={"region": region},
        taints=[{"key": "drain", "effect": "NoSelectIfNew", "timeAdded": ago(30)}] if tainted else [],
    )


def _apply(engine: PlacementEngine, raw: dict[str, Any]) -> None:
    apply_object(engine.fleet, parse_object(raw), raw)


def _frame() -> list[dict[str, Any]]:
    silver = cluster_set("silver", "LabelSelector", {"matchLabels": {"tier": "silver"}})
    objs: list[dict[str, Any]] = [global_set(), binding("global"), silver, binding("silver", "ns2")]
    for key, spec in PLACEMENTS.items():
        ns, _, name = key.partition("/")
        objs.append(placement(spec, name=name, namespace=ns))
    return objs


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=40))
def test_incremental_state_equals_a_fleet_built_from_scratch(ops: list[tuple[Any, ...]]) -> None:
    live = PlacementEngine()
    for raw in _frame():
        _apply(live, raw)
    clusters: dict[str, dict[str, Any]] = {}
    scores: dict[str, dict[str, Any]] = {}
    for op in ops:
        kind, name = op[0], op[1]
        if kind == "cluster":
            clusters[name] = _cluster(name, op[2], op[3], op[4], op[5])
            _apply(live, clusters[name])
        elif kind == "score":
            scores[name] = addon_score(name, "demo", {"demo": op[2]})
            _apply(live, scores[name])
        elif kind == "delete-cluster":
            clusters.pop(name, None)
            delete_object(live.fleet, "ManagedCluster", "", name)
        else:
            scores.pop(name, None)
            delete_object(live.fleet, "AddOnPlacementScore", name, "demo")
        for key in PLACEMENTS:
            result = live.evaluate(key, NOW)
            assert result is not None
            live.commit(result)

    fresh = PlacementEngine()
    for raw in [*_frame(), *clusters.values(), *scores.values()]:
        _apply(fresh, raw)
    for key in PLACEMENTS:
        ns, _, name = key.partition("/")
        fresh.set_decision(key, live.fleet.decisions.own(ns, name))
    for key in PLACEMENTS:
        got, want = live.evaluate(key, NOW), fresh.evaluate(key, NOW)
        assert got is not None and want is not None
        assert (got.decisions, got.scores, [p.scores for p in got.prioritizers]) == (
            want.decisions,
            want.scores,
            [p.scores for p in want.prioritizers],
        ), key
