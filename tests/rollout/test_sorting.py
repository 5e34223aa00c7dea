"""Go's sort.Slice order, which decides where statuses sharing a cluster name end up."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from fleetplace.shared.rollout._sorting import go_sort_slice


@given(st.lists(st.integers(min_value=0, max_value=20)))
def test_go_sort_slice_sorts(values: list[int]) -> None:
    assert go_sort_slice(values, lambda a, b: a < b) == sorted(values)


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=3), st.integers()), max_size=12))
def test_go_sort_slice_keeps_input_order_of_equal_keys_up_to_twelve_items(
    items: list[tuple[int, int]],
) -> None:
    assert go_sort_slice(items, lambda a, b: a[0] < b[0]) == sorted(items, key=lambda item: item[0])


def test_go_sort_slice_may_reorder_equal_keys_in_longer_lists() -> None:
    rng = random.Random(7)
    items = [(rng.randrange(3), i) for i in range(60)]
    out = go_sort_slice(items, lambda a, b: a[0] < b[0])
    assert [k for k, _ in out] == sorted(k for k, _ in items)
    assert out != sorted(items, key=lambda item: item[0])


def test_go_sort_slice_reverses_descending_input() -> None:
    items = list(range(100, 0, -1))
    assert go_sort_slice(items, lambda a, b: a < b) == list(range(1, 101))
