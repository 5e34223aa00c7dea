"""Who asks, and how an application's tags are read.

The same user with the same groups submits many applications, and what filters say about
them does not depend on the application: a `Principal` remembers those answers.
Tag keys match ignoring case; when two keys differ only in case the lexicographically
smallest one wins.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetplace.shared.queueing._filter import Filter
from fleetplace.shared.queueing._tree import QueueNode


class Principal:
    """A user and their groups (as resolved from the submission), with the filter answers given so far. The
    filters belong to the config, so the placer drops its principals when it is reloaded."""

    __slots__ = ("_filters", "groups", "user")

    def __init__(self, user: str, groups: tuple[str, ...]) -> None:
        self.user = user
        self.groups = groups
        self._filters: dict[int, bool] = {}

    def passes(self, rule_filter: Filter) -> bool:
        key = id(rule_filter)  # filters live as long as the config that holds the principal
        hit = self._filters.get(key)
        if hit is None:
            hit = self._filters[key] = rule_filter.admits(self.user, self.groups)
        return hit

    def may_submit(self, node: QueueNode) -> bool:
        """The queue's submit or admin ACL admits, else its parent's, recursively —
        a walk precomputed into `QueueNode.submitters`, the union of the ACLs it would ask."""
        return node.submitters.admits(self.user, self.groups)


def fold_tags(tags: Mapping[str, str]) -> Mapping[str, str]:
    """Tags keyed by lower-cased name; of keys equal ignoring case, the smallest one's value."""
    if "".join(tags).islower():
        return tags  # the common case: no capital in any key, so keys are folded already
    folded: dict[str, str] = {}
    chosen: dict[str, str] = {}
    for key, value in tags.items():
        low = key.lower()
        previous = chosen.get(low)
        if previous is None or key < previous:
            chosen[low] = key
            folded[low] = value
    return folded
