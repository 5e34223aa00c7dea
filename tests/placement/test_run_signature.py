"""`run_signature` holds everything a run reads: placements with equal signatures get equal results.

Three placements share or do not share a namespace (with different bindings), a spec (with or
without Balance and Steady, with or without a toleration) and previous decisions, over a random
fleet with taints and AddOn scores. Whenever two signatures are equal, the two runs must agree on
everything but the placement's own key and PlacementDecision names. The test fails if a signature
leaves out the namespace, the spec, the own decisions or (with Balance) the decision counts:
hypothesis finds placements that differ only there (the decision counts between two runs of one
placement, before and after another placement's decision moved).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import PlacementEngine, ScheduleResult, apply_object
from fleetplace.shared.placement.scheduler import run_signature

from .builders import (
    NOW,
    addon,
    addon_score,
    ago,
    binding,
    builtin,
    cluster,
    cluster_set,
    global_set,
    placement,
    policy,
)

NAMES = [f"c{i}" for i in range(5)]
SPECS: list[dict[str, Any]] = [
    {"numberOfClusters": 2, "prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableCPU"))},
    {"numberOfClusters": 2},  # Additive: Balance and Steady
    {"numberOfClusters": 1, "prioritizerPolicy": policy("Exact", builtin("Steady"), addon("demo", "demo"))},
    {
        "numberOfClusters": 3,
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "prioritizerPolicy": policy("Exact", builtin("Balance")),
    },
]
KEYS = ["ns1/a", "ns1/b", "ns2/c"]

cluster_st = st.tuples(
    st.integers(1, 64),  # allocatable CPU
    st.booleans(),  # tainted gpu:NoSelect
    st.booleans(),  # in the set ns2 is bound to
    st.integers(-100, 100),  # AddOn score
)


def _fleet(engine: PlacementEngine, clusters: list[tuple[int, bool, bool, int]]) -> None:
    objects: list[dict[str, Any]] = [
        global_set(),
        binding("global"),
        cluster_set("east", "LabelSelector", {"matchLabels": {"zone": "east"}}),
        binding("east", "ns2"),
    ]
    for name, (cpu, tainted, east, value) in zip(NAMES, clusters, strict=True):
        taints = [{"key": "gpu", "effect": "NoSelect", "timeAdded": ago(5)}] if tainted else []
        objects.append(
            cluster(
                name,
                labels={"zone": "east" if east else "west"},
                allocatable={"cpu": str(cpu)},
                capacity={"cpu": "64"},
                taints=taints,
            )
        )
        objects.append(addon_score(name, "demo", {"demo": value}))
    for raw in objects:
        apply_object(engine.fleet, parse_object(raw), raw)


def _outcome(result: ScheduleResult) -> tuple[Any, ...]:
    return (
        result.status,
        result.decisions,
        result.scores,
        [(p.name, p.weight, p.scores) for p in result.prioritizers],
        result.groups,
        result.conditions,
        result.requeue_at,
        result.unscheduled,
        result.skipped,
        result.filtered,
    )


@settings(max_examples=200, deadline=None)
@given(
    clusters=st.lists(cluster_st, min_size=len(NAMES), max_size=len(NAMES)),
    specs=st.lists(st.sampled_from(range(len(SPECS))), min_size=3, max_size=3),
    previous=st.lists(st.frozensets(st.sampled_from(NAMES), max_size=3), min_size=3, max_size=3),
    moved=st.frozensets(st.sampled_from(NAMES), max_size=3),
)
def test_equal_signatures_mean_equal_results(
    clusters: list[tuple[int, bool, bool, int]],
    specs: list[int],
    previous: list[frozenset[str]],
    moved: frozenset[str],
) -> None:
    engine = PlacementEngine()
    _fleet(engine, clusters)
    for key, spec, chosen in zip(KEYS, specs, previous, strict=True):
        ns, _, name = key.partition("/")
        raw = placement(SPECS[spec], name=name, namespace=ns)
        apply_object(engine.fleet, parse_object(raw), raw)
        engine.set_decision(key, sorted(chosen))
    fleet = engine.fleet
    runs = {}
    for key in KEYS:
        result = engine.evaluate(key, NOW)
        assert result is not None
        runs[key] = (run_signature(fleet.placements[key], fleet, NOW), _outcome(result))
    # Within one fleet state two placements with equal signatures also hold equal own decisions, so
    # what Balance reads of the others is equal too. Only a later state, where another placement
    # decided differently, can tell a placement's run from itself: run everything once more then.
    engine.set_decision("ns2/c", sorted(moved))
    for key in KEYS:
        result = engine.evaluate(key, NOW)
        assert result is not None
        runs[f"{key} after ns2/c moved"] = (
            run_signature(fleet.placements[key], fleet, NOW),
            _outcome(result),
        )
    for (a, (sig_a, out_a)), (b, (sig_b, out_b)) in combinations(runs.items(), 2):
        if sig_a == sig_b:
            assert out_a == out_b, (a, b)


def test_a_signature_moves_with_what_the_run_reads() -> None:
    engine = PlacementEngine()
    _fleet(
        engine,
        [
            (8, False, True, 1),
            (16, False, False, 2),
            (32, True, True, 3),
            (4, False, False, 4),
            (2, False, False, 5),
        ],
    )
    for key in ("ns1/a", "ns1/b"):
        ns, _, name = key.partition("/")
        raw = placement(SPECS[1], name=name, namespace=ns)  # Balance and Steady
        apply_object(engine.fleet, parse_object(raw), raw)
    fleet = engine.fleet

    def sig(key: str) -> tuple[Any, ...]:
        return run_signature(fleet.placements[key], fleet, NOW)

    assert sig("ns1/a") == sig("ns1/b")  # alike until one of them holds a decision
    engine.set_decision("ns1/a", ["c0"])
    assert sig("ns1/a") != sig("ns1/b")
    before = sig("ns1/b")
    engine.set_decision("ns1/a", ["c1"])  # another placement's decision: Balance reads it
    assert sig("ns1/b") != before
    before = sig("ns1/b")
    raw = cluster("c4", allocatable={"cpu": "3"}, capacity={"cpu": "64"})
    apply_object(fleet, parse_object(raw), raw)
    assert sig("ns1/b") != before
    before = sig("ns1/b")
    raw = binding("east", "ns1")  # bindings carry no version: the signature lists them
    apply_object(fleet, parse_object(raw), raw)
    assert sig("ns1/b") != before
