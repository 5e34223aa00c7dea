"""Rule filters: the syntax check at load, how a filter is built from its entries, and how it is
evaluated.

Filter expressions are Go RE2 expressions, so they are compiled with RE2 itself (google-re2):
an expression Python's `re` would accept but RE2 refuses (a back-reference, a look-ahead) must
be a config error, and the other way round (`[[:alpha:]]`, `\\z`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import re2  # type: ignore[import-untyped]

from fleetplace.shared.api.queues import FilterConfig
from fleetplace.shared.queueing._names import has_regexp_marker, is_group_name, is_user_name

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused expression is reported as a config problem instead

Matcher = Callable[[str], bool]


def _compile(expression: str) -> Matcher | None:
    """An unanchored, case-sensitive search (Go's `MatchString`), or None if RE2 refuses it."""
    try:
        compiled = re2.compile(expression, options=_RE2_OPTIONS)
    except re2.error:
        return None

    def search(name: str) -> bool:
        return compiled.search(name) is not None

    return search


def single_entry_problem(entry: str, *, kind: str) -> str | None:
    """A one-entry list must be a valid name, or a compiling RE2 expression that
    contains a regexp marker. (Lists of two or more are never an error; see `build_filter`.)"""
    valid_name = is_user_name(entry) if kind == "user" else is_group_name(entry)
    if valid_name:
        return None
    if _compile(entry) is None:
        return f"{entry!r} is neither a valid {kind} name nor an RE2 expression that compiles"
    if not has_regexp_marker(entry):
        return f"{entry!r} is not a valid {kind} name and has no regexp character (^ $ * + ? ( ) [ {{ }} |)"
    return None


def type_problem(filter_type: str) -> str | None:
    if filter_type == "" or filter_type.lower() in ("allow", "deny"):
        return None
    return f"filter type {filter_type!r} must be empty, 'allow' or 'deny'"


@dataclass(frozen=True, slots=True)
class _Criterion:
    """Names or one expression; `matches` answers for one user name or one group name."""

    names: frozenset[str] = frozenset()
    expression: Matcher | None = None
    # expressions are evaluated once per distinct name: RE2 calls from Python are not cheap
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def matches(self, name: str) -> bool:
        if self.expression is None:
            return name in self.names
        hit = self._seen.get(name)
        if hit is None:
            if len(self._seen) > 65536:
                self._seen.clear()
            hit = self._seen[name] = self.expression(name)
        return hit


def _criterion(entries: Sequence[str], is_name: Callable[[str], bool]) -> _Criterion | None:
    if not entries:
        return None
    if len(entries) == 1:
        entry = entries[0]
        # the marker test comes first: `admin$` is an expression although it is a valid name
        if has_regexp_marker(entry):
            return _Criterion(expression=_compile(entry))
        return _Criterion(names=frozenset(entries if is_name(entry) else ()))
    # two or more: a set of the valid names; expressions and invalid names are dropped
    return _Criterion(names=frozenset(e for e in entries if is_name(e)))


@dataclass(frozen=True, slots=True)
class Filter:
    """A built filter. `allow` is false only for the exact type `deny` (quirk: `DENY` allows)."""

    allow: bool = True
    users: _Criterion | None = None
    groups: _Criterion | None = None

    @property
    def empty(self) -> bool:
        return self.users is None and self.groups is None

    def admits(self, user: str, groups: Sequence[str]) -> bool:
        """The first match (user, then each group in order) decides."""
        if self.users is None and self.groups is None:
            return self.allow
        if self.users is not None and self.users.matches(user):
            return self.allow
        if self.groups is not None:
            for group in groups:
                if self.groups.matches(group):
                    return self.allow
        return not self.allow


def build_filter(config: FilterConfig | None) -> Filter | None:
    """The rule's filter, or None when it lets everybody through (absent, or empty and allow)."""
    if config is None:
        return None
    built = Filter(
        allow=config.type != "deny",
        users=_criterion(config.users, is_user_name),
        groups=_criterion(config.groups, is_group_name),
    )
    return None if built.empty and built.allow else built
