"""Raw metric values → OCM scores: integers in [-100, 100].

Linear from [min, max] to [-100, 100], clamped, then rounded half away from zero (so 0.5 → 1 and
-0.5 → -1: the rule is symmetric, which makes `invert` an exact mirror); `invert` negates the
score. Every step is monotone under IEEE arithmetic (a subtraction and a division by a positive
constant, a multiplication, a clamp, a rounding), so a larger value never scores lower.
docs/scores.md#normalization says the same for users.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fleetplace.shared.api.score_sources import Normalize

__all__ = ["SCORE_MAX", "SCORE_MIN", "normalize", "normalize_all", "round_half_away", "scores_for"]

SCORE_MIN = -100
SCORE_MAX = 100


def round_half_away(x: float) -> int:
    """The nearest integer; a tie (x.5) goes away from zero."""
    magnitude = math.floor(abs(x) + 0.5)
    return int(magnitude) if x >= 0 else -int(magnitude)


def normalize(value: float, low: float, high: float, *, invert: bool = False) -> int:
    """The score of `value` with `low` ↦ -100 and `high` ↦ 100 (clamped); `invert` mirrors it.

    `low == high` (a fleet whose values are all equal) scores 0. NaN has no score: ValueError."""
    if math.isnan(value):
        raise ValueError("NaN has no score")
    if not low <= high:
        raise ValueError(f"low {low} must not exceed high {high}")
    if low == high:
        return 0
    if value <= low:
        scaled = float(SCORE_MIN)
    elif value >= high:
        scaled = float(SCORE_MAX)
    else:
        span = high - low
        if math.isfinite(span):
            fraction = (value - low) / span  # value - low <= span: finite
        else:  # a span past the largest float: the same fraction, in halves that cannot overflow
            fraction = (value / 2 - low / 2) / (high / 2 - low / 2)
        scaled = SCORE_MIN + (SCORE_MAX - SCORE_MIN) * fraction
        scaled = min(max(scaled, SCORE_MIN), SCORE_MAX)
    score = round_half_away(scaled)
    return -score if invert else score


def normalize_all(
    values: Mapping[str, float],
    *,
    low: float | None = None,
    high: float | None = None,
    invert: bool = False,
) -> dict[str, int]:
    """Every value's score. Without `low`/`high` (fleet mode) they are the smallest and largest of
    `values` themselves, so the lowest scores -100 and the highest 100."""
    if not values:
        return {}
    if low is None or high is None:
        low, high = min(values.values()), max(values.values())
    return {key: normalize(v, low, high, invert=invert) for key, v in values.items()}


def scores_for(rule: Normalize, values: Mapping[str, float]) -> dict[str, int]:
    """The scores of a source's values under its `normalize` rule."""
    if rule.fleet:
        return normalize_all(values, invert=rule.invert)
    return normalize_all(values, low=rule.min, high=rule.max, invert=rule.invert)
