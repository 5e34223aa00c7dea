"""A placement's decision groups, and the selections of them a rollout works over.

Mirrors how OCM tracks a placement's decisions: a map from group key to clusters, plus
index → name and name → indices for resolving references to groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from ._models import DecisionGroup, GroupKey, MandatoryGroup


@dataclass(frozen=True, slots=True)
class GroupMap(Mapping[GroupKey, frozenset[str]]):
    """Some decision groups: group key → the clusters decided in that group."""

    groups: Mapping[GroupKey, frozenset[str]]

    def __getitem__(self, key: GroupKey) -> frozenset[str]:
        return self.groups[key]

    def __iter__(self) -> Iterator[GroupKey]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def ordered_keys(self) -> list[GroupKey]:
        """The group keys by index."""
        return sorted(self.groups, key=lambda key: key.group_index)

    def clusters(self) -> frozenset[str]:
        """Every cluster of every group, once."""
        return frozenset().union(*self.groups.values())

    def group_key_of(self) -> dict[str, GroupKey]:
        """Each cluster's group (a placement puts a cluster in one group only)."""
        return {cluster: key for key in self.ordered_keys() for cluster in self.groups[key]}


class PlacementGroups:
    """All decision groups of a placement, with lookups by name and by index."""

    def __init__(self, decision_groups: Iterable[DecisionGroup]) -> None:
        groups: dict[GroupKey, set[str]] = {}
        for group in decision_groups:
            # Two entries with one key are one group (as two decision pages of a group are).
            groups.setdefault(group.key, set()).update(group.clusters)
        self._groups = {key: frozenset(clusters) for key, clusters in groups.items()}
        self._name_of_index: dict[int, str] = {}
        indices_of_name: dict[str, list[int]] = {}
        for key in self._groups:
            self._name_of_index[key.group_index] = key.group_name
            indices_of_name.setdefault(key.group_name, []).append(key.group_index)
        self._indices_of_name = {name: sorted(indices) for name, indices in indices_of_name.items()}

    def resolve(self, references: Iterable[MandatoryGroup]) -> list[GroupKey]:
        """The keys that references select: a name selects every group of that name in index
        order, otherwise the index selects its group; references to nothing select nothing."""
        keys: list[GroupKey] = []
        for ref in references:
            if ref.group_name:
                keys.extend(
                    GroupKey(ref.group_name, i) for i in self._indices_of_name.get(ref.group_name, ())
                )
            elif ref.group_index in self._name_of_index:
                keys.append(GroupKey(self._name_of_index[ref.group_index], ref.group_index))
        return keys

    def selected(self, references: Iterable[MandatoryGroup]) -> GroupMap:
        """The groups the references select (an empty group counts as selected)."""
        return GroupMap({key: self._groups[key] for key in self.resolve(references) if key in self._groups})

    def besides(self, references: Iterable[MandatoryGroup] = ()) -> GroupMap:
        """Every group except the referenced ones.

        Groups are taken to be numbered 0..n-1 for n distinct indices: the walk goes over
        those indices only, so a group past a gap in the numbering is left out.
        """
        excluded = set(self.resolve(references))
        selected: dict[GroupKey, frozenset[str]] = {}
        for index in range(len(self._name_of_index)):
            key = GroupKey(self._name_of_index.get(index, ""), index)
            if key not in excluded and key in self._groups:
                selected[key] = self._groups[key]
        return GroupMap(selected)
