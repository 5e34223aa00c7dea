"""Normalization: any value to an integer in [-100, 100], monotone, `invert` the exact mirror."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetplace.shared.scoring import normalize, normalize_all, round_half_away

finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.floats(allow_nan=False)  # ±Inf included: the rule must hold for them too


@st.composite
def ranges(draw: st.DrawFn) -> tuple[float, float]:
    low, high = sorted((draw(finite), draw(finite)))
    return (low, high) if low < high else (low, math.nextafter(low, math.inf))


@given(values, ranges(), st.booleans())
def test_every_value_scores_an_integer_in_range(
    value: float, bounds: tuple[float, float], invert: bool
) -> None:
    score = normalize(value, *bounds, invert=invert)
    assert type(score) is int and -100 <= score <= 100


@given(values, values, ranges())
def test_a_larger_value_never_scores_lower(a: float, b: float, bounds: tuple[float, float]) -> None:
    low, high = sorted((a, b))
    assert normalize(low, *bounds) <= normalize(high, *bounds)
    assert normalize(low, *bounds, invert=True) >= normalize(high, *bounds, invert=True)


@given(values, ranges())
def test_invert_is_the_mirror(value: float, bounds: tuple[float, float]) -> None:
    assert normalize(value, *bounds, invert=True) == -normalize(value, *bounds)


@given(st.dictionaries(st.text(min_size=1, max_size=4), finite, min_size=1), st.booleans())
def test_fleet_mode_spans_the_whole_range_and_keeps_the_order(
    cluster_values: dict[str, float], invert: bool
) -> None:
    scores = normalize_all(cluster_values, invert=invert)
    assert set(scores) == set(cluster_values)
    assert all(-100 <= s <= 100 for s in scores.values())
    ordered = sorted(cluster_values, key=lambda c: cluster_values[c])
    ranked = [scores[c] for c in ordered]
    assert ranked == sorted(ranked, reverse=invert)
    if len(set(cluster_values.values())) > 1:
        top, bottom = (-100, 100) if invert else (100, -100)
        assert scores[ordered[-1]] == top and scores[ordered[0]] == bottom
    else:
        assert set(scores.values()) == {0}


@pytest.mark.parametrize(
    ("value", "score"),
    [
        (0.0, -100),  # min
        (64.0, 100),  # max
        (32.0, 0),  # the midpoint
        (-5.0, -100),  # clamped below
        (1e300, 100),  # clamped above
        (16.0, -50),
        (48.0, 50),
        (0.15, -100),  # -99.53 → -100
        (0.17, -99),  # -99.47 → -99
        (32.2, 1),  # 0.625 → 1
        (31.8, -1),  # -0.625 → -1
        (32.1, 0),  # 0.3125 → 0
    ],
)
def test_the_documented_examples_for_min_0_max_64(value: float, score: int) -> None:
    # docs/scores.md#normalization: score = -100 + 200 × (value − min) / (max − min), clamped,
    # rounded half away from zero
    assert normalize(value, 0.0, 64.0) == score


def test_rounding_is_half_away_from_zero_on_both_sides() -> None:
    assert [round_half_away(x) for x in (2.5, -2.5, 0.5, -0.5, 0.49, -0.49, 99.5)] == [
        3,
        -3,
        1,
        -1,
        0,
        0,
        100,
    ]


def test_nan_has_no_score() -> None:
    with pytest.raises(ValueError, match="NaN"):
        normalize(math.nan, 0.0, 1.0)
