"""Kubernetes quantities: the one parser, its approximate doubles and canonical text.

The resource prioritizers compare approximate doubles. Every expected value is worked from the
rules: the fast path is `double(int(digits)) × 10^scale` (no multiplication when scale is 0),
binary suffixes without a fraction are the exact integer, and everything else is the exact value
rounded up to nano units, then `double(nanos) × 10⁻⁹`.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetplace.shared.api.objects import ObjectError, parse_object
from fleetplace.shared.api.ocm import ManagedCluster
from fleetplace.shared.placement.quantity import InvalidQuantity, approximate_float, canonical, parse_quantity

from .builders import bound_set, builtin, memory_cluster, policy, prioritizer_scores, schedule_spec


def slow_path(nanos: int) -> float:
    """The slow path's conversion once the exact value is a whole number of nanos."""
    return float(nanos) * 1e-9


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the spec's own examples
        ("300m", 0.3),
        ("9m", 0.009000000000000001),
        ("0.3", 0.30000000000000004),
        ("60M", 6e7),
        ("16Gi", 17179869184.0),
        ("500m", 0.5),
        # decimal suffixes: digits × 10^scale
        ("100", 100.0),
        ("7m", 7 * 0.001),
        ("1k", 1000.0),
        ("100M", 1e8),
        ("2G", 2e9),
        ("1.5", 15 * 0.1),
        ("2.5M", 25 * 1e5),
        ("1500m", 1500 * 0.001),
        ("250u", 250 * 1e-6),
        ("3n", 3 * 1e-9),
        ("1T", 1e12),
        ("4P", 4e15),
        ("2E", 2e18),
        # exponent notation is a decimal suffix too
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        ("1.5e3", 15 * 100.0),
        ("5e-3", 5 * 0.001),
        ("12e+2", 1200.0),
        # signs
        ("-300m", -0.3),
        ("+2k", 2000.0),
        # 18 digits is still the fast path
        ("123456789012345678", float(123456789012345678)),
        # binary suffixes without a fraction: the exact integer
        ("100Ki", 102400.0),
        ("1Mi", 1048576.0),
        ("1024Mi", 1073741824.0),
        ("3Ti", float(3 * 2**40)),
        ("0Mi", 0.0),
    ],
)
def test_approximate_float_fast_paths(text: str, expected: float) -> None:
    assert approximate_float(text) == expected


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        # binary with a fraction -> slow path (exact value, then nanos)
        ("1.5Gi", 1610612736 * 10**9),
        ("0.5Ki", 512 * 10**9),
        ("1.1Ki", 11264 * 10**8),
        # Ei never fits the fast path
        ("1Ei", 2**60 * 10**9),
        # too many digits for the binary fast path: len(digits) > 14 - floor(0.3 * 50) for Pi
        ("1Pi", 2**50 * 10**9),
        ("99999Ti", 99999 * 2**40 * 10**9),
        # more than 18 digits
        ("1234567890123456789", 1234567890123456789 * 10**9),
        ("12345678901234567890", 12345678901234567890 * 10**9),
        # below nano: rounded *up* (away from zero) to a multiple of 10^-9
        ("1e-10", 1),
        ("0.5n", 1),
        ("1.5n", 2),
        ("0.0000000001", 1),
        ("1.0000000001", 1000000001),
    ],
)
def test_approximate_float_slow_path_rounds_up_to_nanos(text: str, nanos: int) -> None:
    assert approximate_float(text) == slow_path(nanos)


def test_slow_path_of_a_negative_value_rounds_away_from_zero() -> None:
    assert approximate_float("-1e-10") == -1e-9
    assert approximate_float("-1.5Gi") == -slow_path(1610612736 * 10**9)


def test_values_beyond_a_decimal_context_do_not_crash_the_engine() -> None:
    # 20+ digits and exa-binary values go through the slow path exactly
    result = schedule_spec(
        {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 1))},
        *bound_set(memory_cluster("c1", "10Ei"), memory_cluster("c2", "123456789012345678901234")),
    )
    assert prioritizer_scores(result, "ResourceAllocatableMemory") == {"c1": -100, "c2": 100}


def test_a_power_of_ten_beyond_doubles_is_infinite_as_go_pow10() -> None:
    assert approximate_float("1e400") == math.inf


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("00000000000000000.12", 12 * 0.01),  # 1 + 2 digits once the zeros are stripped: fast path
        ("0000000000000000000000300m", 300 * 0.001),
        (".5", 5 * 0.1),
        ("0000000000000001Ki", 1024.0),
    ],
)
def test_leading_zeros_do_not_count_as_digits(text: str, expected: float) -> None:
    assert approximate_float(text) == expected


def test_nineteen_digits_and_eighteen_digits_take_different_paths() -> None:
    # The 19-digit value goes through nanos, so it is not simply float() of the integer text.
    assert approximate_float("123456789012345678") == float(123456789012345678)
    assert approximate_float("1234567890123456789") == float(1234567890123456789 * 10**9) * 1e-9


@pytest.mark.parametrize("text", ["", "abc", "1Qi", "1.2.3", "1e", "--1", "1 Gi", "1eX", "1e+", "1E-"])
def test_text_that_is_not_a_quantity_is_rejected(text: str) -> None:
    with pytest.raises(InvalidQuantity):
        approximate_float(text)
    with pytest.raises(InvalidQuantity):
        parse_quantity(text)


_SUFFIXES = st.sampled_from(
    ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "e3", "E-2"]
)
_QUANTITY_TEXT = st.builds(
    lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}",
    st.sampled_from(["", "+", "-"]),
    st.integers(0, 10**20).map(str),
    st.one_of(st.just(""), st.integers(0, 10**6).map(lambda n: f".{n}")),
    _SUFFIXES,
)


@given(_QUANTITY_TEXT)
def test_the_canonical_text_reads_back_as_the_same_quantity(text: str) -> None:
    quantity = parse_quantity(text)
    again = parse_quantity(canonical(quantity))
    assert again == quantity
    assert canonical(again) == canonical(quantity)


@given(_QUANTITY_TEXT)
def test_the_approximate_double_is_within_a_nano_unit_of_the_exact_value(text: str) -> None:
    # both readings come from the one parser: they may differ by rounding only
    exact = parse_quantity(text).value
    approx = approximate_float(text)
    assert math.isclose(approx, float(exact), rel_tol=1e-12, abs_tol=1e-9)
    assert parse_quantity(text).approximate_float() == approx


@pytest.mark.parametrize(
    ("raw", "text"),
    [(100, "100"), (8053063680, "8053063680"), (0, "0"), ("16Gi", "16Gi")],
)
def test_quantities_written_as_json_numbers_are_read_as_their_text(raw: object, text: str) -> None:
    cluster = ManagedCluster.model_validate(
        {"metadata": {"name": "c1"}, "status": {"allocatable": {"memory": raw}, "capacity": {"memory": raw}}}
    )
    assert cluster.status.allocatable["memory"] == text


@pytest.mark.parametrize(("raw", "text"), [(2.5, "2.5"), (2.0, "2"), (1e20, "100000000000000000000")])
def test_fractional_json_numbers_are_read_as_their_shortest_text(raw: float, text: str) -> None:
    cluster = ManagedCluster.model_validate({"status": {"capacity": {"cpu": raw}}})
    assert cluster.status.capacity["cpu"] == text


@pytest.mark.parametrize("raw", [True, [1], {"value": 1}])
def test_a_quantity_that_is_neither_text_nor_number_is_one_string_error_at_its_key(raw: object) -> None:
    with pytest.raises(ObjectError) as caught:
        parse_object({"kind": "ManagedCluster", "status": {"allocatable": {"cpu": raw}}}, "clusters/c1")
    assert str(caught.value) == ("clusters/c1: ManagedCluster: status.allocatable.cpu: must be a string")


def test_json_number_quantities_score_like_their_strings() -> None:
    # E2 with numbers instead of strings: 60/80/100 -> -100/0/100
    spec = {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 1))}
    result = schedule_spec(
        spec, *bound_set(memory_cluster("c1", 60), memory_cluster("c2", 80), memory_cluster("c3", 100))
    )
    assert prioritizer_scores(result, "ResourceAllocatableMemory") == {"c1": -100, "c2": 0, "c3": 100}


def test_mixed_units_compare_by_value() -> None:
    # 1Gi = 1073741824, 1G = 1e9, 1024Mi = 1Gi: min 1e9, max 1Gi
    spec = {"prioritizerPolicy": policy("Exact", builtin("ResourceAllocatableMemory", 1))}
    result = schedule_spec(
        spec,
        *bound_set(memory_cluster("a", "1Gi"), memory_cluster("b", "1G"), memory_cluster("c", "1024Mi")),
    )
    assert prioritizer_scores(result, "ResourceAllocatableMemory") == {"a": 100, "b": -100, "c": 100}
