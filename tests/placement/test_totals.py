"""The shared-base totals (`shared/placement/shared_totals.py`) equal OCM's rule run one
prioritizer at a time (`totals.one_by_one`).

Placements with random Balance/Steady/resource/AddOn weights (Balance twice, zero and negative
weights included) are evaluated and committed in rounds, so that the base is reused across
placements and rebuilt as decisions move; at every evaluation the best clusters, the totals, the
rank keys and the per-prioritizer rows must be those of the plain computation.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fleetplace.shared.placement.shared_totals as totals_module
from fleetplace.shared.api.objects import parse_object
from fleetplace.shared.placement import PlacementEngine, apply_object
from fleetplace.shared.placement.framework import SUCCESS, ScheduleContext
from fleetplace.shared.placement.options import DEFAULT_OPTIONS
from fleetplace.shared.placement.scheduler import _eligible, _plan
from fleetplace.shared.placement.shared_totals import totals
from fleetplace.shared.placement.totals import best, one_by_one

from .builders import NOW, addon, addon_score, binding, builtin, cluster, global_set, placement, policy

weight_st = st.integers(-3, 10)


def _balance_with_addon_object(weight: int) -> dict[str, Any]:
    config = builtin("Balance", weight)
    config["scoreCoordinate"]["addOn"] = {"resourceName": "r", "scoreName": "s"}
    return config


config_st = st.lists(
    st.one_of(
        st.builds(lambda w: builtin("Balance", w), weight_st),
        st.builds(lambda w: builtin("Steady", w), weight_st),
        st.builds(lambda w: builtin("ResourceAllocatableCPU", w), weight_st),
        st.builds(lambda w: addon("demo", "demo", w), weight_st),
        # a BuiltIn with an addOn object is a coordinate of its own: Balance configured twice
        st.builds(_balance_with_addon_object, weight_st),
    ),
    max_size=4,
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]], int]:
    size = draw(st.integers(1, 8))
    objects = [global_set(), binding("global")]
    for i in range(size):
        cpu = draw(st.integers(1, 8))
        objects.append(cluster(f"c{i}", allocatable={"cpu": str(cpu)}, capacity={"cpu": "8"}))
        if draw(st.booleans()):
            objects.append(addon_score(f"c{i}", "demo", {"demo": draw(st.integers(-100, 100))}))
    specs = []
    for k in range(draw(st.integers(1, 5))):
        mode = draw(st.sampled_from(["Additive", "Exact"]))
        configs = draw(config_st)
        spec: dict[str, Any] = {"prioritizerPolicy": policy(mode, *configs)}
        n = draw(st.one_of(st.none(), st.integers(0, size + 1)))
        if n is not None:
            spec["numberOfClusters"] = n
        # placements with the same spec share a base, which their decisions then move
        for copy in range(draw(st.integers(1, 3))):
            specs.append((f"p{k}-{copy}", spec))
    return objects, specs, draw(st.integers(1, 4))


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.sampled_from([1, 4]))
def test_shared_base_totals_equal_one_prioritizer_at_a_time(
    scenario: tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]], int], prefix: int
) -> None:
    objects, specs, rounds = scenario
    # 1: the smallest prefix of the base's best clusters, so that runs also grow it; 4: a prefix
    # that outlives decisions moving (bases patched, not rebuilt, with their leaders kept)
    with mock.patch.object(totals_module, "PREFIX", prefix):
        _check(objects, specs, rounds)


def _check(objects: list[dict[str, Any]], specs: list[tuple[str, dict[str, Any]]], rounds: int) -> None:
    engine = PlacementEngine()
    for obj in objects:
        apply_object(engine.fleet, parse_object(obj))
    for name, spec in specs:
        apply_object(engine.fleet, parse_object(placement(spec, name=name)))
    fleet = engine.fleet
    for _ in range(rounds):
        for name, _spec in specs:
            key = f"ns1/{name}"
            p = fleet.placements[key]
            eligible = _eligible(p, fleet)[1]
            ctx = ScheduleContext(p, fleet, NOW, fleet.decisions.own("ns1", name), lineage=eligible)
            slots = fleet.candidates(eligible)
            plan = _plan(p, fleet, DEFAULT_OPTIONS)
            fast = totals(ctx, plan, slots, SUCCESS)
            plain = one_by_one(ctx, plan, slots, SUCCESS)
            assert fast.status == plain.status
            assert fast.totals.tolist() == plain.totals.tolist()
            assert fast.keys.tolist() == plain.keys.tolist()
            assert [(n, w, s.tolist()) for n, w, s, _ in fast.rows] == [
                (n, w, s.tolist()) for n, w, s, _ in plain.rows
            ]
            for n in (None, 0, 1, 2, len(slots), len(slots) + 1):
                top = fast.top(n)
                assert top == best(plain.keys, n)
                assert fast.totals_of(top) == plain.totals[top].tolist()
            known = fast.known()
            for i, total in known.items():
                assert plain.totals[i] == total
            # every own candidate is known (what a run that drops them reports without all scores)
            own_at = {i for i, slot in enumerate(slots.tolist()) if fleet.name_of(slot) in ctx.own}
            assert set(known) == own_at
            assert plain.known() == {i: int(plain.totals[i]) for i in own_at}
            result = engine.evaluate(key, NOW)
            assert result is not None
            engine.commit(result)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-1000, 1000), min_size=1, max_size=40, unique=True),
    st.integers(1, 40),
    st.lists(st.tuples(st.integers(0, 39), st.integers(-1000, 1000)), max_size=6),
)
def test_a_moved_base_keeps_its_leaders_in_rank_order(
    keys: list[int], first: int, moves: list[tuple[int, int]]
) -> None:
    """After entries move, the leaders a base keeps are still exactly its best in rank order."""
    size = len(keys)
    zeros = np.zeros(size, dtype=np.int64)
    old = totals_module._Base((0,), [], [zeros], zeros, np.array(keys, dtype=np.int64), None)
    with mock.patch.object(totals_module, "PREFIX", 1):
        old.leaders(min(first, size))
    taken = set(keys)
    at: list[int] = []
    new_keys: list[int] = []
    for i, key in moves:
        if i < size and i not in at and key not in taken:  # keys stay unique, as packed keys are
            taken.add(key)
            at.append(i)
            new_keys.append(key)
    moved = old.moved((1,), at, {0: [0] * len(at)}, [0] * len(at), new_keys)
    expected = list(keys)
    for i, key in zip(at, new_keys, strict=True):
        expected[i] = key
    ranked = sorted(range(size), key=lambda i: expected[i])
    kept, kept_keys = moved._order, moved._order_keys
    assert kept == ranked[: len(kept)]
    assert kept_keys == [expected[i] for i in kept]
    order, _ = moved.leaders(size)
    assert order == ranked
