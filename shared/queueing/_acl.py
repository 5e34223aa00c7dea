"""Queue ACLs: the two syntax checks YuniKorn makes (validator and queue build), and how an ACL
is parsed and evaluated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleetplace.shared.queueing._names import go_fields, go_trim_space, is_acl_group, is_acl_user

_WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ACL:
    """Who an ACL admits: everybody, or the listed users and groups (exact, case-sensitive)."""

    everybody: bool = False
    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        if self.everybody or user in self.users:
            return True
        return not self.groups.isdisjoint(groups)

    def union(self, other: ACL) -> ACL:
        """The ACL that admits whoever either admits."""
        if self.everybody or other.everybody:
            return EVERYBODY
        if not (other.users or other.groups):
            return self
        if not (self.users or self.groups):
            return other
        return ACL(users=self.users | other.users, groups=self.groups | other.groups)


NOBODY = ACL()
EVERYBODY = ACL(everybody=True)


def coarse_problem(text: str) -> str | None:
    """YuniKorn's validator check: more than two white-space separated fields."""
    trimmed = go_trim_space(text)
    if trimmed in ("", _WILDCARD):
        return None
    if len(go_fields(trimmed)) > 2:
        return f"ACL {text!r} has more than two space-separated parts (users, then groups)"
    return None


def strict_problem(text: str) -> str | None:
    """The check made when the queue is built: split on *single* spaces, before any
    wildcard test — so `"  "`, `" a b"` and `" * "` pass the coarse check and fail here."""
    if text != "" and len(text.split(" ")) > 2:
        return f"ACL {text!r} splits on single spaces into more than two parts"
    return None


def parse_acl(text: str) -> ACL:
    """Parse an ACL that passed both checks.

    The wildcard counts only as the whole trimmed string, the whole user part or the whole
    group part; invalid and empty entries are skipped and duplicates collapse.
    """
    if text == "":
        return NOBODY
    parts = text.split(" ")
    if len(parts) > 2:
        raise ValueError(strict_problem(text))
    everybody = go_trim_space(text) == _WILDCARD
    user_list = parts[0].split(",")
    users: frozenset[str] = frozenset()
    if user_list == [_WILDCARD]:
        everybody = True
    else:
        users = frozenset(u for u in user_list if u and is_acl_user(u))
    groups: frozenset[str] = frozenset()
    if len(parts) == 2 and not everybody:
        group_list = parts[1].split(",")
        if group_list == [_WILDCARD]:
            # a wildcard group list admits everybody and discards the user list
            return EVERYBODY
        groups = frozenset(g for g in group_list if g and is_acl_group(g))
    if everybody:
        return EVERYBODY
    return ACL(users=users, groups=groups)
