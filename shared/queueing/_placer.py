"""`QueuePlacer`: choose a queue for each application and create it (spec §5, §8).

A placer holds, per partition, the live queue tree and the set of live applications. Placing
is two steps: *decide* (run the rules, §8.1 — a pure function of the application's user,
groups, requested queue, relevant tags and forced flag, and of the tree) and *commit* (create
the queue if needed, §8.2). Decisions are memoised per tree version: the tree changes only when
a queue is created, released or reconfigured, so after a warm-up almost every application is a
dictionary lookup away from its queue.

Not thread-safe: one worker task owns a placer, and a reload happens between placements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.api.queues import ApplicationSubmission, PlacementOutcome, RejectionReason
from shared.queueing._config import DEFAULT_PARTITION, PartitionSpec, QueueingConfig, parse_config
from shared.queueing._errors import RuleEvaluationError
from shared.queueing._names import (
    DEFAULT_QUEUE,
    FORCE_TAG,
    RECOVERY_GROUP,
    RECOVERY_NAME,
    RECOVERY_QUEUE,
    RECOVERY_USER,
    go_lower,
    go_parse_bool,
    is_queue_name,
    is_user_name,
)
from shared.queueing._rules import RecoveryRule, Rule
from shared.queueing._subject import Subject, fold_tags
from shared.queueing._tree import QueueNode, QueueTree

_MEMO_LIMIT = 1 << 16
_NO_TAGS: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class QueueState:
    """A queue as the placer sees it now (for inspection; the tree itself stays private)."""

    path: str
    leaf: bool
    dynamic: bool
    draining: bool
    applications: int


@dataclass(frozen=True, slots=True)
class _Accepted:
    path: str  # as proposed: level names keep their case until they are created (§8.2)
    rule: str
    rule_index: int | None
    node: QueueNode | None  # the queue, if it existed when the decision was made


@dataclass(frozen=True, slots=True)
class _Rejected:
    reason: RejectionReason
    detail: str


_Decision = _Accepted | _Rejected


class _Partition:
    def __init__(self, spec: PartitionSpec, *, memoize: bool) -> None:
        self.spec = spec
        self.rules: tuple[Rule, ...] = (*spec.rules, RecoveryRule())
        self.tree = QueueTree(spec.root)
        self.applications: dict[str, QueueNode] = {}
        self.draining = False
        self._memoize = memoize
        self._decisions: dict[tuple[object, ...], _Decision] = {}
        self._decided_at = self.tree.version
        self._user_valid: dict[str, bool] = {}

    def reconfigure(self, spec: PartitionSpec) -> None:
        self.spec = spec
        self.rules = (*spec.rules, RecoveryRule())
        self.tree.apply_config(spec.root)
        self.draining = False

    def place(self, app: ApplicationSubmission) -> PlacementOutcome:
        app_id = app.application_id
        tags = fold_tags(app.tags) if app.tags else _NO_TAGS
        forced = go_parse_bool(tags.get(FORCE_TAG, ""))
        user, groups = app.user, app.groups
        # spec §5, checks before any rule runs
        if user == "":
            if not forced:
                return _rejection(app_id, RejectionReason.INVALID_USER, "empty user")
            user, groups = RECOVERY_USER, (RECOVERY_GROUP,)
        elif not groups:
            groups = (user,)  # YuniKorn's default resolver: one group named like the user
        elif not self._is_valid_user(user):
            return _rejection(app_id, RejectionReason.INVALID_USER, f"invalid user name {user!r}")
        if app_id in self.applications:
            return _rejection(
                app_id,
                RejectionReason.DUPLICATE_APPLICATION,
                f"application {app_id!r} is already in queue {self.applications[app_id].path}",
            )
        tree = self.tree
        if self._decided_at != tree.version:
            self._decisions.clear()
            self._decided_at = tree.version
        key = (user, groups, app.queue, forced, *[tags.get(n, "") for n in self.spec.tag_names])
        decision = self._decisions.get(key) if self._memoize else None
        if decision is None:
            decision = self._decide(Subject(user, groups, app.queue, tags, forced))
            if self._memoize:
                if len(self._decisions) >= _MEMO_LIMIT:
                    self._decisions.clear()
                self._decisions[key] = decision
        if isinstance(decision, _Rejected):
            return _rejection(app_id, decision.reason, decision.detail)
        return self._commit(app_id, decision, user, groups)

    def _is_valid_user(self, user: str) -> bool:
        valid = self._user_valid.get(user)
        if valid is None:
            if len(self._user_valid) >= _MEMO_LIMIT:
                self._user_valid.clear()
            valid = self._user_valid[user] = is_user_name(user)
        return valid

    def _decide(self, subject: Subject) -> _Decision:
        """Spec §8.1: the first rule whose proposal passes the leaf, ACL and draining checks."""
        tree = self.tree
        last = len(self.rules) - 1
        for index, rule in enumerate(self.rules):
            try:
                path = rule.propose(subject, tree)
            except RuleEvaluationError as e:
                # an error rejects at once: no later rule, no fallback, even when forced (§8.1.1)
                return _Rejected(RejectionReason.RULE_ERROR, str(e))
            kind: str = rule.kind
            rule_index: int | None = index
            if index == last:
                rule_index = None
                if path is None and DEFAULT_QUEUE in tree.nodes:
                    # the root.default fallback comes after recovery declined (§8.1.2, quirk 13)
                    path, kind = DEFAULT_QUEUE, "default-queue"
            if path is None:
                continue
            if subject.forced and path == RECOVERY_QUEUE:
                return _Accepted(path, kind, rule_index, tree.get(path))  # no checks (§8.1.4)
            node = tree.get(path)
            if node is not None:
                if not node.is_leaf or node.draining:
                    continue
                if not tree.submit_allowed(node, subject.user, subject.groups):
                    continue
                return _Accepted(path, kind, rule_index, node)
            # not there yet: the deepest existing ancestor decides, leaf or not (§8.1.6)
            if tree.submit_allowed(tree.deepest_existing(path), subject.user, subject.groups):
                return _Accepted(path, kind, rule_index, None)
        return _Rejected(
            RejectionReason.NO_RULE_MATCHED,
            "no placement rule matched and no fallback applied",
        )

    def _commit(
        self, app_id: str, accepted: _Accepted, user: str, groups: tuple[str, ...]
    ) -> PlacementOutcome:
        """Spec §8.2: go to the queue, or create the missing levels. No going back to rules."""
        tree = self.tree
        node = accepted.node
        created = False
        if node is not None:
            if not node.is_leaf:
                return _rejection(app_id, RejectionReason.NOT_A_LEAF, f"queue {node.path} is not a leaf")
        elif go_lower(accepted.path) == RECOVERY_QUEUE:
            node, created = tree.create(tree.root, [RECOVERY_NAME]), True
        else:
            ancestor = tree.deepest_existing(accepted.path)
            levels = accepted.path.split(".")[ancestor.path.count(".") + 1 :]
            refusal = _creation_refusal(tree, ancestor, levels, user, groups)
            if refusal is not None:
                return _rejection(app_id, *refusal)
            node, created = tree.create(ancestor, levels), True
        node.applications += 1
        self.applications[app_id] = node
        return PlacementOutcome.model_construct(
            application_id=app_id,
            queue=node.path,
            rule=accepted.rule,
            rule_index=accepted.rule_index,
            created=created,
            reason=None,
            detail="",
        )

    def release(self, app_id: str) -> bool:
        node = self.applications.pop(app_id, None)
        if node is None:
            return False
        self.tree.release(node)
        return True


def _creation_refusal(
    tree: QueueTree, ancestor: QueueNode, levels: list[str], user: str, groups: tuple[str, ...]
) -> tuple[RejectionReason, str] | None:
    if not tree.submit_allowed(ancestor, user, groups):
        return (
            RejectionReason.CREATE_DENIED,
            f"{user} may not submit to {ancestor.path} to create {'.'.join(levels)}",
        )
    if ancestor.is_leaf:
        return (
            RejectionReason.CREATE_UNDER_LEAF,
            f"cannot create {'.'.join(levels)}: {ancestor.path} is a leaf",
        )
    if ancestor.draining:
        return RejectionReason.CREATE_REFUSED, f"cannot create below {ancestor.path}: it is draining"
    # the name test is on the level as produced, case-sensitively: `@RECOVERY@` is allowed (§8.2)
    bad = [level for level in levels if not is_queue_name(level) or level == RECOVERY_NAME]
    if bad:
        return RejectionReason.CREATE_REFUSED, f"cannot create queues named {bad} below {ancestor.path}"
    return None


def _rejection(app_id: str, reason: RejectionReason, detail: str) -> PlacementOutcome:
    return PlacementOutcome.model_construct(
        application_id=app_id,
        queue=None,
        rule=None,
        rule_index=None,
        created=False,
        reason=reason,
        detail=detail,
    )


class QueuePlacer:
    """Places applications into queues with YuniKorn's placement rules.

    Built from a validated config (`parse_config`), or from the default config of spec §4.6.
    It remembers the queues earlier placements created and the applications it placed;
    `reload` swaps in a new config and keeps the dynamic queues (spec §4.7). `memoize=False`
    turns the decision memo off (tests compare both ways; the answers must be the same).
    """

    def __init__(self, config: QueueingConfig | None = None, *, memoize: bool = True) -> None:
        self._memoize = memoize
        self._config = config if config is not None else parse_config(None)
        self._partitions: dict[str, _Partition] = {
            name: _Partition(spec, memoize=memoize) for name, spec in self._config.partitions.items()
        }

    @property
    def config(self) -> QueueingConfig:
        return self._config

    def place(self, app: ApplicationSubmission) -> PlacementOutcome:
        # spec §5: empty means default; otherwise an exact, case-sensitive match (quirk 18)
        partition = self._partitions.get(app.partition or DEFAULT_PARTITION)
        if partition is None:
            return _rejection(
                app.application_id,
                RejectionReason.UNKNOWN_PARTITION,
                f"partition {app.partition!r} is not configured",
            )
        if partition.draining:
            return _rejection(
                app.application_id,
                RejectionReason.PARTITION_DRAINING,
                f"partition {partition.spec.name!r} was removed from the config and is draining",
            )
        return partition.place(app)

    def reload(self, config: QueueingConfig) -> None:
        """Activate a new validated config (spec §4.7). Partitions that are gone drain: they
        refuse new applications; their live applications and queues are kept."""
        partitions: dict[str, _Partition] = {}
        for name, spec in config.partitions.items():
            current = self._partitions.get(name)
            if current is None:
                partitions[name] = _Partition(spec, memoize=self._memoize)
            else:
                current.reconfigure(spec)
                partitions[name] = current
        for name, current in self._partitions.items():
            if name not in partitions:
                current.draining = True
                partitions[name] = current
        self._partitions = partitions
        self._config = config

    def release(self, application_id: str, partition: str = "") -> bool:
        """The application left: its ID may be used again, and a draining or dynamic queue it
        leaves empty is removed. False if the application was not placed here."""
        state = self._partitions.get(partition or DEFAULT_PARTITION)
        return state is not None and state.release(application_id)

    def queues(self, partition: str = "") -> Mapping[str, QueueState]:
        """The partition's queues by path, configured and dynamic (empty if it is unknown)."""
        state = self._partitions.get(partition or DEFAULT_PARTITION)
        if state is None:
            return {}
        return {
            node.path: QueueState(node.path, node.is_leaf, not node.managed, node.draining, node.applications)
            for node in state.tree
        }
