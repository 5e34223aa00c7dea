"""Properties over random fleets (issue: order independence, determinism) and a differential check
against a direct, unoptimised reading of the rules (candidates, filters, prioritizers, groups)
over a constrained world."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplace.services.commands.simulate_scenarios import Scenario, run_scenario
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import ScheduleResult, fleet_of, schedule

from .builders import (
    NOW,
    addon,
    addon_score,
    binding,
    builtin,
    cluster,
    cluster_set,
    decision,
    expr,
    iso,
    label_predicate,
    placement,
    policy,
    taint,
    toleration,
)

NAMES = ["c1", "c2", "c3", "c10", "c20", "alpha", "Zeta", "b-1", "b.1", "cluster100"]
SETS: dict[str, dict[str, Any]] = {
    "set1": cluster_set("set1"),
    "set2": cluster_set("set2", "ExclusiveClusterSetLabel"),
    "global": cluster_set("global", "LabelSelector", {}),
    "prod": cluster_set("prod", "LabelSelector", {"matchExpressions": [expr("env", "In", "prod")]}),
}
TOLERATIONS = [
    toleration("k1", "Exists"),
    toleration("k1", "Exists", seconds=30),
    toleration("k2", "Equal", seconds=10),
    toleration(None, "Exists", effect="NoSelectIfNew"),
    toleration("k2", "Foo"),
    toleration(None, "Equal"),  # misconfigured
]
PREDICATES: list[list[dict[str, Any]]] = [
    [],
    [label_predicate({"env": "prod"})],
    [label_predicate(None, expr("env", "NotIn", "prod"))],
    [label_predicate({"env": "prod"}), label_predicate(None, expr("zone", "Exists"))],
    [{}],
]
CONFIGS = {
    "memory": lambda w: builtin("ResourceAllocatableMemory", w),
    "cpu": lambda w: builtin("ResourceAllocatableCPU", w),
    "steady": lambda w: builtin("Steady", w),
    "balance": lambda w: builtin("Balance", w),
    "addon": lambda w: addon("demo", "s", w),
}


@dataclass
class ClusterSpec:
    name: str
    clusterset: str | None
    env: str | None
    zone: str | None
    taints: list[tuple[str, str, int | None]]  # key, effect, seconds ago (None: no timeAdded)
    memory: int | None
    cpu: int | None
    deleting: bool


@dataclass
class World:
    clusters: list[ClusterSpec]
    sets: list[str]
    bindings: list[str]
    own: list[list[str]]  # pages of this placement's PDs
    foreign: list[tuple[str, str | None, list[str]]]  # namespace, placement label, clusters
    scores: dict[str, tuple[int, int | None]]  # cluster -> (value, validUntil offset from now)
    number: int | None
    cluster_sets: list[str] | None
    predicates: int
    tolerations: list[int]
    mode: str
    configs: list[tuple[str, int]]
    group_env: bool
    per_group: int | str | None


@st.composite
def worlds(draw: st.DrawFn) -> World:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=1, max_size=8))
    clusters = [
        ClusterSpec(
            name=n,
            clusterset=draw(st.sampled_from(["set1", "set1", "set1", "set2", None])),
            env=draw(st.sampled_from(["prod", "dev", None])),
            zone=draw(st.sampled_from(["a", None])),
            taints=draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(["k1", "k2"]),
                        st.sampled_from(["NoSelect", "PreferNoSelect", "NoSelectIfNew"]),
                        st.sampled_from([0, 5, 20, 30, 100, None]),
                    ),
                    max_size=2,
                    unique_by=lambda t: t[0],
                )
            ),
            memory=draw(st.sampled_from([None, 0, 1, 3, 50, 80, 100])),
            cpu=draw(st.sampled_from([None, 7, 9, 10])),
            deleting=draw(st.integers(0, 4)) == 0,
        )
        for n in names
    ]
    pool = [*names, "ghost"]
    return World(
        clusters=clusters,
        sets=["set1", *draw(st.lists(st.sampled_from(["set2", "global", "prod"]), unique=True))],
        bindings=["set1"] * draw(st.sampled_from([1, 1, 1, 1, 0]))
        + draw(st.lists(st.sampled_from(["set2", "global", "prod", "nope"]), unique=True)),
        own=draw(st.lists(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=4), max_size=2)),
        foreign=draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["ns1", "ns2"]),
                    st.sampled_from(["other", None, "placement1"]),
                    st.lists(st.sampled_from(pool), max_size=4),
                ),
                max_size=3,
            )
        ),
        scores=draw(
            st.dictionaries(
                st.sampled_from(pool),
                st.tuples(st.integers(-100, 100), st.sampled_from([None, -60, 0, 60])),
                max_size=6,
            )
        ),
        number=draw(st.sampled_from([None, 0, 1, 2, 3, 5, 20])),
        cluster_sets=draw(
            st.sampled_from([None, None, None, ["set1"], ["set2", "global"], ["prod", "set1", "prod"]])
        ),
        predicates=draw(st.integers(0, len(PREDICATES) - 1)),
        tolerations=draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5]), max_size=3)),
        mode=draw(st.sampled_from(["Additive", "Exact", ""])),
        configs=draw(st.lists(st.tuples(st.sampled_from(sorted(CONFIGS)), st.integers(-2, 3)), max_size=4)),
        group_env=draw(st.booleans()),
        per_group=draw(st.sampled_from([None, 1, 2, "50%", "34%"])),
    )


# -- the world as Kubernetes objects ----------------------------------------------------------------


def objects_of(w: World) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [SETS[s] for s in w.sets]
    objs += [binding(b) for b in w.bindings]
    for c in w.clusters:
        labels = {k: v for k, v in (("env", c.env), ("zone", c.zone)) if v is not None}
        taints = [
            taint(key, effect, added=iso(NOW - timedelta(seconds=ago)) if ago is not None else None)
            for key, effect, ago in c.taints
        ]
        alloc = {k: str(v) for k, v in (("memory", c.memory), ("cpu", c.cpu)) if v is not None}
        objs.append(
            cluster(
                c.name,
                clusterset=c.clusterset,
                labels=labels,
                taints=taints,
                allocatable=alloc or None,
                capacity=alloc or None,
                deleting=c.deleting,
            )
        )
    objs += [decision(f"placement1-decision-{i}", page) for i, page in enumerate(w.own, 1)]
    objs += [
        decision(f"foreign-{i}", names, placement_name=label, namespace=ns)
        for i, (ns, label, names) in enumerate(w.foreign)
    ]
    for name, (value, until) in w.scores.items():
        valid_until = iso(NOW + timedelta(seconds=until)) if until is not None else None
        objs.append(addon_score(name, "demo", {"s": value}, valid_until=valid_until))
    spec: dict[str, Any] = {
        "predicates": PREDICATES[w.predicates],
        "tolerations": [TOLERATIONS[i] for i in w.tolerations],
        "prioritizerPolicy": policy(w.mode, *(CONFIGS[kind](weight) for kind, weight in w.configs)),
    }
    if w.number is not None:
        spec["numberOfClusters"] = w.number
    if w.cluster_sets is not None:
        spec["clusterSets"] = w.cluster_sets
    strategy: dict[str, Any] = {}
    if w.group_env:
        strategy["decisionGroups"] = [
            {"groupName": "prod", "groupClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
        ]
    if w.per_group is not None:
        strategy["clustersPerDecisionGroup"] = w.per_group
    spec["decisionStrategy"] = {"groupStrategy": strategy}
    objs.append(placement(spec))
    return objs


def run_world(objs: list[dict[str, Any]]) -> ScheduleResult:
    fleet = fleet_of((parse_object(o), o) for o in objs)
    return schedule(fleet.placements["ns1/placement1"], fleet, NOW)


def simulate_bytes(objs: list[dict[str, Any]]) -> bytes:
    sc = Scenario("t", "prop", NOW, "ns1/placement1", [(parse_object(o), o) for o in objs])
    return b"\n".join(orjson.dumps(line) for line in run_scenario(sc, None, NOW))


# -- a direct reading of the spec -------------------------------------------------------------------


def in_set(c: ClusterSpec, s: str) -> bool:
    if s in ("set1", "set2"):
        return c.clusterset == s
    if s == "global":
        return True
    return c.env == "prod"


def predicate_matches(w: World, c: ClusterSpec) -> bool:
    if w.predicates == 1:
        return c.env == "prod"
    if w.predicates == 2:
        return c.env != "prod"
    if w.predicates == 3:
        return c.env == "prod" or c.zone is not None
    return True


def taint_verdict(
    w: World, key: str, effect: str, ago: int | None, decided: bool
) -> tuple[bool, float | None]:
    """(tolerated, seconds until its deadline): a toleration holds until the taint's timeAdded
    plus its tolerationSeconds."""
    if effect == "PreferNoSelect" or (effect == "NoSelectIfNew" and decided):
        return True, None
    for i in w.tolerations:
        t = TOLERATIONS[i]
        if t.get("effect") and t["effect"] != effect:
            continue
        if t.get("key") and t["key"] != key:
            continue
        op = t.get("operator", "")
        if op in ("", "Equal"):
            if t.get("value", "") != "":
                continue
        elif op != "Exists":
            continue
        seconds = t.get("tolerationSeconds")
        if seconds is None:
            return True, None
        if ago is not None and seconds - ago > 0:
            return True, seconds - ago
    return False, None


def cluster_verdict(w: World, c: ClusterSpec, decided: bool) -> tuple[bool, float | None]:
    soonest: float | None = None
    for key, effect, ago in c.taints:
        ok, left = taint_verdict(w, key, effect, ago, decided)
        if not ok:
            return False, None
        if left is not None:
            soonest = left if soonest is None else min(soonest, left)
    return True, soonest


def resource_scores(post: list[ClusterSpec], attr: str) -> dict[str, int]:
    have = {c.name: float(getattr(c, attr)) for c in post if getattr(c, attr) is not None}
    if not have:
        return {}
    lo, hi = min(have.values()), max(have.values())
    if hi - lo == 0:
        return dict.fromkeys(have, 100)
    return {n: int(((v - lo) / (hi - lo) - 0.5) * 2.0 * 100.0) for n, v in have.items()}


@dataclass
class Expected:
    misconfigured: bool
    ranked: list[str]
    selected: list[str]
    scores: dict[str, int]
    raw: dict[str, dict[str, int]]
    groups: list[tuple[str, list[str]]]
    requeue: float | None


def expected_of(w: World) -> Expected:
    by_name = {c.name: c for c in w.clusters}
    bound = sorted(b for b in w.bindings if b in w.sets)
    eligible = sorted(set(bound) & set(w.cluster_sets)) if w.cluster_sets else bound
    available = [c for c in w.clusters if not c.deleting and any(in_set(c, s) for s in eligible)]
    decided = {n for page in w.own for n in page}
    decided |= {n for ns, label, names in w.foreign if (ns, label) == ("ns1", "placement1") for n in names}
    post = [c for c in available if predicate_matches(w, c)]
    misconfigured = bool(post) and any(
        not TOLERATIONS[i].get("key") and TOLERATIONS[i].get("operator") != "Exists" for i in w.tolerations
    )
    post = [c for c in post if cluster_verdict(w, c, c.name in decided)[0]]
    if misconfigured:
        return Expected(True, [], [], {}, {}, [("", [])], None)

    weights: dict[Any, tuple[str, int]] = {}
    if w.mode in ("Additive", ""):
        weights = {"balance": ("balance", 1), "steady": ("steady", 1)}
    for i, (kind, weight) in enumerate(w.configs):
        weights[kind if kind != "addon" else ("addon", i)] = (kind, weight)

    counts: Counter[str] = Counter(
        n for ns, label, names in w.foreign if not (ns == "ns1" and label == "placement1") for n in names
    )
    top = max(counts.values(), default=0)
    raw: dict[str, dict[str, int]] = {
        "balance": {
            c.name: 100 if not counts[c.name] else 2 * int(100 * (0.5 - counts[c.name] / top)) for c in post
        },
        "steady": {c.name: 100 if c.name in decided else 0 for c in post},
        "memory": resource_scores(post, "memory"),
        "cpu": resource_scores(post, "cpu"),
        "addon": {},
    }
    for c in post:
        value, until = w.scores.get(c.name, (0, None))
        raw["addon"][c.name] = 0 if until is not None and until < 0 else value
    totals = dict.fromkeys((c.name for c in post), 0)
    for kind, weight in weights.values():
        if weight:
            for n, s in raw[kind].items():
                totals[n] += weight * s
    ranked = sorted(totals, key=lambda n: (-totals[n], n.encode()))
    selected = ranked if w.number is None else ranked[: w.number]

    total = len(selected)
    length = 0
    if isinstance(w.per_group, int):
        length = w.per_group
    elif isinstance(w.per_group, str):
        length = math.ceil(float(w.per_group[:-1]) / 100 * total)
    if length <= 0 or length > total:
        length = total
    groups: list[tuple[str, list[str]]] = []
    remaining = sorted(selected, key=str.encode)
    if w.group_env:
        prod = [n for n in remaining if by_name[n].env == "prod"]
        remaining = [n for n in remaining if by_name[n].env != "prod"]
        groups += [("prod", prod[i : i + length]) for i in range(0, len(prod), max(length, 1))]
    groups += [("", remaining[i : i + length]) for i in range(0, len(remaining), max(length, 1))]

    requeue: float | None = None
    for n in decided:
        if n in by_name:
            ok, left = cluster_verdict(w, by_name[n], True)
            if ok and left is not None:
                requeue = left if requeue is None else min(requeue, left)
    return Expected(False, ranked, selected, totals, raw, groups or [("", [])], requeue)


RAW_NAMES = {
    "Balance": "balance",
    "Steady": "steady",
    "ResourceAllocatableMemory": "memory",
    "ResourceAllocatableCPU": "cpu",
    "AddOn/demo/s": "addon",
}
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(worlds())
def test_engine_agrees_with_a_direct_reading_of_the_spec(w: World) -> None:
    result = run_world(objects_of(w))
    expected = expected_of(w)
    assert (result.status.code == "Misconfigured") is expected.misconfigured
    assert list(result.ranked) == expected.ranked
    assert list(result.selected) == expected.selected
    assert result.scores == expected.scores
    for p in result.prioritizers:
        assert dict(p.scores) == expected.raw[RAW_NAMES[p.name]]
    assert [(g.name, list(g.clusters)) for g in result.groups] == expected.groups
    assert result.requeue_after_seconds() == expected.requeue


@PROPERTY
@given(worlds())
def test_invariants(w: World) -> None:
    result = run_world(objects_of(w))
    feasible = len(result.scores)
    n = w.number
    if result.status.code != "Misconfigured":
        # selected count = min(N, feasible); scores exist for every post-filter cluster
        assert result.number_selected == (feasible if n is None else min(n, feasible))
        assert set(result.scores) == set(result.ranked)
        assert set(result.selected) <= set(result.scores)
    for g in result.groups:  # decisions are sorted by name within a group
        assert list(g.clusters) == sorted(g.clusters, key=str.encode)
    for p in result.pages:
        assert len(p.clusters) <= 100
    assert sorted(result.decisions) == sorted(result.selected)
    assert [g.index for g in result.groups] == list(range(len(result.groups)))


@PROPERTY
@given(worlds(), st.randoms(use_true_random=False))
def test_object_order_does_not_change_the_output(w: World, rnd: Any) -> None:
    objs = objects_of(w)
    shuffled = list(objs)
    rnd.shuffle(shuffled)
    assert simulate_bytes(shuffled) == simulate_bytes(objs)


@PROPERTY
@given(worlds())
def test_same_input_and_now_give_the_same_output(w: World) -> None:
    objs = objects_of(w)
    assert simulate_bytes(objs) == simulate_bytes(objs)
    # and on one fleet: repeated runs, with another placement scheduled in between, agree
    other = placement({"numberOfClusters": 1, "predicates": PREDICATES[3]}, name="other")
    fleet = fleet_of((parse_object(o), o) for o in [*objs, other])
    first = schedule(fleet.placements["ns1/placement1"], fleet, NOW)
    schedule(fleet.placements["ns1/other"], fleet, NOW)
    second = schedule(fleet.placements["ns1/placement1"], fleet, NOW)
    for a, b in ((first, second), (first, run_world(objs))):
        assert (a.selected, a.decisions, a.scores, a.requeue_at, a.conditions) == (
            b.selected,
            b.decisions,
            b.scores,
            b.requeue_at,
            b.conditions,
        )
        assert [(g.name, g.clusters) for g in a.groups] == [(g.name, g.clusters) for g in b.groups]
