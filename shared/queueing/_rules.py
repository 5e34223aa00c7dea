"""YuniKorn's placement rules: provided, user, fixed, tag, and the implicit recovery rule.

Every rule is one immutable object with one step, `propose`: given who asks, the requested
queue, the (case-folded) tags and the current tree, it returns a fully qualified path (not
necessarily existing), None for "no match", or raises `RuleEvaluationError`. Rules chain
through `parent`; a rule applies its own `create` flag to its own result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from fleetplace.shared.queueing._errors import RuleEvaluationError
from fleetplace.shared.queueing._filter import Filter
from fleetplace.shared.queueing._names import (
    FORCE_TAG,
    RECOVERY_QUEUE,
    ROOT,
    ROOT_PREFIX,
    as_level,
    go_parse_bool,
    invalid_levels,
    is_valid_path,
    replace_dots,
)
from fleetplace.shared.queueing._principal import Principal
from fleetplace.shared.queueing._tree import QueueTree


@dataclass(frozen=True, slots=True)
class Rule:
    kind: ClassVar[str]
    create: bool = False
    filter: Filter | None = None  # None: nobody is filtered out
    parent: Rule | None = None

    def propose(self, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree) -> str | None:
        raise NotImplementedError

    def _filtered(self, who: Principal) -> bool:
        return self.filter is not None and not who.passes(self.filter)

    def _below_parent(
        self, level: str, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree
    ) -> str | None:
        """`level` below the path the parent rule yields (root without a parent)."""
        if self.parent is None:
            return f"{ROOT}.{level}"
        path = self.parent.propose(who, queue, tags, tree)
        if path is None:
            return None
        if not path.startswith(ROOT_PREFIX):
            # quirk: a parent `fixed: root` returns `root`, which becomes `root.root`
            path = ROOT_PREFIX + path
        node = tree.get(path)
        if node is not None and node.is_leaf:
            raise RuleEvaluationError(f"{self.kind} rule: parent rule returned a leaf queue: {path}")
        return f"{path}.{level}"

    def _created_or_existing(self, path: str | None, tree: QueueTree) -> str | None:
        # without create the queue must exist already; creation itself is decided later
        if path is None or (not self.create and tree.get(path) is None):
            return None
        return path

    def _level(self, raw: str, what: str) -> str:
        level = as_level(raw)
        if not level:
            raise RuleEvaluationError(
                f"{self.kind} rule: {what} {raw!r} gives an invalid queue name {replace_dots(raw)!r}"
            )
        return level

    def _qualified(self, path: str, what: str) -> str:
        if not is_valid_path(path):
            raise RuleEvaluationError(
                f"{self.kind} rule: {what} {path!r} has invalid queue names {invalid_levels(path)}"
            )
        return path


@dataclass(frozen=True, slots=True)
class ProvidedRule(Rule):
    """The queue named in the submission."""

    kind: ClassVar[str] = "provided"

    def propose(self, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree) -> str | None:
        if not queue or self._filtered(who):
            return None
        if queue.startswith(ROOT_PREFIX):
            # qualified (`root.`, case-sensitive: `ROOT.dev` is not): taken as is, the
            # parent rule is not run
            return self._created_or_existing(self._qualified(queue, "requested queue"), tree)
        level = self._level(queue, "requested queue")
        return self._created_or_existing(self._below_parent(level, who, queue, tags, tree), tree)


@dataclass(frozen=True, slots=True)
class UserRule(Rule):
    """The submitting user's name, dots replaced, one level."""

    kind: ClassVar[str] = "user"

    def propose(self, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree) -> str | None:
        if self._filtered(who):
            return None
        level = self._level(who.user, "user name")
        return self._created_or_existing(self._below_parent(level, who, queue, tags, tree), tree)


@dataclass(frozen=True, slots=True)
class FixedRule(Rule):
    """A configured queue (lower-cased at load); its dots are levels, not replaced."""

    kind: ClassVar[str] = "fixed"
    value: str = ""
    # `root` itself counts (the root, a parent, so never accepted); `rootx` is refused at load
    qualified: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "qualified", self.value == ROOT or self.value.startswith(ROOT_PREFIX))

    def propose(self, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree) -> str | None:
        if self._filtered(who):
            return None
        if self.qualified:
            return self._created_or_existing(self.value, tree)
        return self._created_or_existing(self._below_parent(self.value, who, queue, tags, tree), tree)


@dataclass(frozen=True, slots=True)
class TagRule(Rule):
    """The value of an application tag (tag name lower-cased at load)."""

    kind: ClassVar[str] = "tag"
    tag_name: str = ""

    def propose(self, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree) -> str | None:
        value = tags.get(self.tag_name)
        if not value or self._filtered(who):
            return None
        if value.startswith(ROOT_PREFIX):
            return self._created_or_existing(self._qualified(value, "tag value"), tree)
        level = self._level(value, "tag value")
        return self._created_or_existing(self._below_parent(level, who, queue, tags, tree), tree)


@dataclass(frozen=True, slots=True)
class RecoveryRule(Rule):
    """Always last, never configured; only forced applications reach it."""

    kind: ClassVar[str] = "recovery"

    def propose(self, who: Principal, queue: str, tags: Mapping[str, str], tree: QueueTree) -> str | None:
        return RECOVERY_QUEUE if go_parse_bool(tags.get(FORCE_TAG, "")) else None


RULE_TYPES: dict[str, type[Rule]] = {rule.kind: rule for rule in (ProvidedRule, UserRule, FixedRule, TagRule)}
