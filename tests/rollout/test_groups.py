"""Decision groups: selecting groups by reference, all groups besides some, gaps in indices."""

from __future__ import annotations

from fleetplace.shared.rollout import GroupKey, MandatoryGroup
from fleetplace.shared.rollout._groups import PlacementGroups

from .builders import groups

PLACEMENT = PlacementGroups(
    groups(("canary", 0, ["a", "b"]), ("", 1, ["c"]), ("canary", 2, ["d"]), ("", 3, []))
)


def test_reference_by_name_selects_every_group_of_that_name_in_index_order() -> None:
    assert list(PLACEMENT.selected([MandatoryGroup("canary")])) == [
        GroupKey("canary", 0),
        GroupKey("canary", 2),
    ]


def test_reference_by_name_ignores_its_index() -> None:
    assert list(PLACEMENT.selected([MandatoryGroup("canary", 1)])) == [
        GroupKey("canary", 0),
        GroupKey("canary", 2),
    ]


def test_reference_by_index_selects_that_group_whatever_its_name() -> None:
    assert list(PLACEMENT.selected([MandatoryGroup("", 2)])) == [GroupKey("canary", 2)]


def test_empty_reference_means_index_zero() -> None:
    assert list(PLACEMENT.selected([MandatoryGroup()])) == [GroupKey("canary", 0)]


def test_references_to_nothing_are_dropped() -> None:
    assert len(PLACEMENT.selected([MandatoryGroup("missing"), MandatoryGroup("", 9)])) == 0


def test_empty_group_is_still_a_group() -> None:
    selected = PLACEMENT.selected([MandatoryGroup("", 3)])
    assert dict(selected) == {GroupKey("", 3): frozenset()}


def test_besides_walks_indices_and_skips_the_excluded() -> None:
    rest = PLACEMENT.besides([MandatoryGroup("canary")])
    assert rest.ordered_keys() == [GroupKey("", 1), GroupKey("", 3)]
    assert rest.clusters() == {"c"}


def test_groups_past_a_gap_in_the_indices_disappear() -> None:
    gapped = PlacementGroups(groups(("", 0, ["a"]), ("", 2, ["b"])))
    # Two distinct indices: the walk covers 0 and 1 only.
    assert gapped.besides().clusters() == {"a"}


def test_two_entries_with_one_key_are_one_group() -> None:
    merged = PlacementGroups(groups(("g", 0, ["a"]), ("g", 0, ["b"])))
    assert dict(merged.besides()) == {GroupKey("g", 0): frozenset({"a", "b"})}
