"""The placement rules of spec §7: provided, user, fixed, tag, and the implicit recovery rule.

Every rule is one immutable object with one step, `propose`: given the application and the
current tree it returns a fully qualified path (not necessarily existing), None for "no
match", or raises `RuleEvaluationError`. Rules chain through `parent` (§7.6); a rule applies
its own `create` flag to its own result (§7.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shared.queueing._errors import RuleEvaluationError
from shared.queueing._filter import ALLOW_ALL, Filter
from shared.queueing._names import (
    RECOVERY_QUEUE,
    ROOT,
    ROOT_PREFIX,
    invalid_levels,
    is_qualified,
    is_queue_name,
    replace_dots,
)
from shared.queueing._subject import Subject
from shared.queueing._tree import QueueTree


@dataclass(frozen=True, slots=True)
class Rule:
    kind: ClassVar[str]
    create: bool = False
    filter: Filter = ALLOW_ALL
    parent: Rule | None = None

    def propose(self, subject: Subject, tree: QueueTree) -> str | None:
        raise NotImplementedError

    def _parent_path(self, subject: Subject, tree: QueueTree) -> str | None:
        """Spec §7.6: the path the parent rule yields, qualified, and not an existing leaf."""
        if self.parent is None:
            return ROOT
        path = self.parent.propose(subject, tree)
        if path is None:
            return None
        if not path.startswith(ROOT_PREFIX):
            # quirk: a parent `fixed: root` returns `root`, which becomes `root.root`
            path = ROOT_PREFIX + path
        node = tree.get(path)
        if node is not None and node.is_leaf:
            raise RuleEvaluationError(f"{self.kind} rule: parent rule returned a leaf queue: {path}")
        return path

    def _below_parent(self, name: str, subject: Subject, tree: QueueTree) -> str | None:
        parent = self._parent_path(subject, tree)
        return None if parent is None else f"{parent}.{name}"

    def _create_check(self, path: str | None, tree: QueueTree) -> str | None:
        # §7.1: without create the queue must exist already; creation itself is decided later
        if path is None or (not self.create and tree.get(path) is None):
            return None
        return path

    def _one_level(self, raw: str, what: str) -> str:
        name = replace_dots(raw)
        if not is_queue_name(name):
            raise RuleEvaluationError(
                f"{self.kind} rule: {what} {raw!r} gives an invalid queue name {name!r}"
            )
        return name

    def _qualified(self, path: str, what: str) -> str:
        bad = invalid_levels(path)
        if bad:
            raise RuleEvaluationError(f"{self.kind} rule: {what} {path!r} has invalid queue names {bad}")
        return path


@dataclass(frozen=True, slots=True)
class ProvidedRule(Rule):
    """Spec §7.2: the queue named in the submission."""

    kind: ClassVar[str] = "provided"

    def propose(self, subject: Subject, tree: QueueTree) -> str | None:
        requested = subject.queue
        if not requested or not self.filter.admits(subject.user, subject.groups):
            return None
        if is_qualified(requested):
            # qualified: taken as is, the parent rule is not run
            return self._create_check(self._qualified(requested, "requested queue"), tree)
        name = self._one_level(requested, "requested queue")
        return self._create_check(self._below_parent(name, subject, tree), tree)


@dataclass(frozen=True, slots=True)
class UserRule(Rule):
    """Spec §7.3: the submitting user's name, dots replaced, one level."""

    kind: ClassVar[str] = "user"

    def propose(self, subject: Subject, tree: QueueTree) -> str | None:
        if not self.filter.admits(subject.user, subject.groups):
            return None
        name = self._one_level(subject.user, "user name")
        return self._create_check(self._below_parent(name, subject, tree), tree)


@dataclass(frozen=True, slots=True)
class FixedRule(Rule):
    """Spec §7.4: a configured queue (lower-cased at load); its dots are levels, not replaced."""

    kind: ClassVar[str] = "fixed"
    value: str = ""

    @property
    def qualified(self) -> bool:
        # `root` itself counts (the root, a parent, so never accepted); `rootx` is refused at load
        return self.value == ROOT or self.value.startswith(ROOT_PREFIX)

    def propose(self, subject: Subject, tree: QueueTree) -> str | None:
        if not self.filter.admits(subject.user, subject.groups):
            return None
        if self.qualified:
            return self._create_check(self.value, tree)
        return self._create_check(self._below_parent(self.value, subject, tree), tree)


@dataclass(frozen=True, slots=True)
class TagRule(Rule):
    """Spec §7.5: the value of an application tag (tag name lower-cased at load)."""

    kind: ClassVar[str] = "tag"
    tag_name: str = ""

    def propose(self, subject: Subject, tree: QueueTree) -> str | None:
        value = subject.tag(self.tag_name)
        if not value or not self.filter.admits(subject.user, subject.groups):
            return None
        if is_qualified(value):
            return self._create_check(self._qualified(value, f"tag {self.tag_name!r} value"), tree)
        name = self._one_level(value, f"tag {self.tag_name!r} value")
        return self._create_check(self._below_parent(name, subject, tree), tree)


@dataclass(frozen=True, slots=True)
class RecoveryRule(Rule):
    """Spec §7.7: always last, never configured; only forced applications reach it."""

    kind: ClassVar[str] = "recovery"

    def propose(self, subject: Subject, tree: QueueTree) -> str | None:
        return RECOVERY_QUEUE if subject.forced else None


RULE_TYPES: dict[str, type[Rule]] = {rule.kind: rule for rule in (ProvidedRule, UserRule, FixedRule, TagRule)}
