"""OCM's own rollout unit-test cases, with the results OCM's code gives for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from fleetplace.shared.rollout import evaluate_scenario

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "rollout-ocm-unit-sample.json"
CASES: list[dict[str, Any]] = orjson.loads(SAMPLES.read_bytes())


@pytest.mark.parametrize("scenario", CASES, ids=[c["name"] for c in CASES])
def test_sample_matches_ocm(scenario: dict[str, Any]) -> None:
    line = evaluate_scenario(scenario)
    assert line["name"] == scenario["name"]
    assert {k: v for k, v in line.items() if k != "name"} == scenario["expect"]


def test_sample_lines_serialise_like_the_expectations() -> None:
    # Whole seconds print as integers, times without fractions.
    for scenario in CASES:
        line = evaluate_scenario(scenario)
        rendered = orjson.loads(orjson.dumps({k: v for k, v in line.items() if k != "name"}))
        assert orjson.dumps(rendered) == orjson.dumps(scenario["expect"])
