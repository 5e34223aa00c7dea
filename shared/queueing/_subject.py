"""What the rules see of an application: user, groups, requested queue, tags, forced flag.

Spec §5: an empty user is `nobody`/`[nogroup]` for a forced application; empty groups resolve
to one group named like the user (YuniKorn's default resolver); tag keys match ignoring case,
and when two keys differ only in case the lexicographically smallest one wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.queueing._names import FORCE_TAG, RECOVERY_GROUP, RECOVERY_USER, go_parse_bool


@dataclass(frozen=True, slots=True)
class Subject:
    user: str
    groups: tuple[str, ...]
    queue: str
    tags: Mapping[str, str]  # lower-cased key → value
    forced: bool

    def tag(self, name: str) -> str:
        """The value of tag `name` (already lower-case), or "" when it is absent."""
        return self.tags.get(name, "")


def fold_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Tags keyed by lower-cased name; of keys equal ignoring case, the smallest one's value."""
    folded: dict[str, str] = {}
    chosen: dict[str, str] = {}
    for key, value in tags.items():
        low = key.lower()
        previous = chosen.get(low)
        if previous is None or key < previous:
            chosen[low] = key
            folded[low] = value
    return folded


def subject_of(user: str, groups: tuple[str, ...], queue: str, tags: Mapping[str, str]) -> Subject:
    folded = fold_tags(tags)
    forced = go_parse_bool(folded.get(FORCE_TAG, ""))
    if user == "" and forced:
        user, groups = RECOVERY_USER, (RECOVERY_GROUP,)
    elif not groups:
        groups = (user,)
    return Subject(user=user, groups=groups, queue=queue, tags=folded, forced=forced)
