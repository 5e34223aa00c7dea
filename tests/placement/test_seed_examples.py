"""The seed article: its published scenarios and the three examples worked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleetplace.services.commands.simulate_scenarios import Scenario, run_scenario, scenarios_of

from .builders import (
    NOW,
    bound_set,
    builtin,
    memory_cluster,
    own_decision,
    policy,
    satisfied,
    schedule_spec,
)

SEED = Path(__file__).parent / "data" / "ocm-seed-article.json"
SCENARIOS: list[dict[str, Any]] = json.loads(SEED.read_text())


def comparable(line: dict[str, Any], expect: dict[str, Any]) -> dict[str, Any]:
    """The simulate output reduced to the fields (and condition keys) `expect` states."""
    out = {key: line[key] for key in expect if key != "conditions"}
    if "conditions" in expect:
        keys = {k for c in expect["conditions"] for k in c}
        out["conditions"] = [{k: c[k] for k in c if k in keys} for c in line["conditions"]]
    return out


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_seed_scenario(scenario: dict[str, Any]) -> None:
    parsed = list(scenarios_of(json.dumps(scenario), "seed.json"))
    assert len(parsed) == 1
    sc = parsed[0]
    assert isinstance(sc, Scenario)
    (line,) = run_scenario(sc, None, NOW)
    assert line["placement"] == scenario["placement"]
    assert comparable(line, scenario["expect"]) == scenario["expect"]


def test_the_seed_file_is_one_array_of_scenarios() -> None:
    parsed = list(scenarios_of(SEED.read_text(), str(SEED)))
    assert [s.name for s in parsed if isinstance(s, Scenario)] == [s["name"] for s in SCENARIOS]


# -- by hand --------------------------------------------------------------------------------------


def memory_fleet(*memory: str) -> list[dict[str, Any]]:
    return bound_set(*(memory_cluster(f"cluster{i}", m) for i, m in enumerate(memory, 1)))


def article_spec(memory_weight: int, steady_weight: int | None = None) -> dict[str, Any]:
    configs = [builtin("ResourceAllocatableMemory", memory_weight)]
    if steady_weight is not None:
        configs.append(builtin("Steady", steady_weight))
    return {"numberOfClusters": 2, "prioritizerPolicy": policy("Additive", *configs)}


@pytest.mark.parametrize("unit", ["M", "Mi"])
def test_s1_memory_weight_1(unit: str) -> None:
    spec = article_spec(1)
    first = schedule_spec(spec, *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}"))
    assert first.scores == {"cluster1": 0, "cluster2": 100, "cluster3": 200}
    assert first.decisions == ("cluster2", "cluster3")
    assert satisfied(first)[1] == "AllDecisionsScheduled"
    decided = own_decision(first.decisions)
    # a fourth cluster with 100: ties cluster2 at 200 and loses on name
    same = schedule_spec(spec, *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}", f"100{unit}"), decided)
    assert same.scores == {"cluster1": 0, "cluster2": 200, "cluster3": 300, "cluster4": 200}
    assert same.decisions == ("cluster2", "cluster3")
    # a fourth cluster with 150: ratios 0, 0.222, 0.444, 1 -> -100, -55, -11, 100
    bigger = schedule_spec(spec, *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}", f"150{unit}"), decided)
    assert bigger.scores == {"cluster1": 0, "cluster2": 145, "cluster3": 189, "cluster4": 200}
    assert bigger.decisions == ("cluster3", "cluster4")


@pytest.mark.parametrize("unit", ["M", "Mi"])
def test_s2_memory_weight_3_follows_resources(unit: str) -> None:
    spec = article_spec(3)
    first = schedule_spec(spec, *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}"))
    assert first.scores == {"cluster1": -200, "cluster2": 100, "cluster3": 400}
    assert first.decisions == ("cluster2", "cluster3")
    later = schedule_spec(
        spec,
        *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}", f"100{unit}"),
        own_decision(first.decisions),
    )
    assert later.scores == {"cluster1": -200, "cluster2": 200, "cluster3": 500, "cluster4": 400}
    assert later.decisions == ("cluster3", "cluster4")


@pytest.mark.parametrize("unit", ["M", "Mi"])
def test_s3_steady_weight_3_keeps_the_decision(unit: str) -> None:
    spec = article_spec(1, steady_weight=3)
    first = schedule_spec(spec, *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}"))
    assert first.scores == {"cluster1": 0, "cluster2": 100, "cluster3": 200}
    later = schedule_spec(
        spec,
        *memory_fleet(f"60{unit}", f"80{unit}", f"100{unit}", f"150{unit}"),
        own_decision(first.decisions),
    )
    assert later.scores == {"cluster1": 0, "cluster2": 345, "cluster3": 389, "cluster4": 200}
    assert later.decisions == ("cluster2", "cluster3")
