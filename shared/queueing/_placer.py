"""`QueuePlacer`: choose a queue for each application and create it.

A placer holds, per partition, the live queue tree and the live applications. Placing is two
steps: *decide* (run the rules) and *commit* (create the queue if needed).

This is the worker's hot path, so it is written to do little per application. Decisions are
remembered (applications repeat: the same users, namespaces and queues; see `_Partition`);
to make a new one, the submit check is one set test against ACLs merged down the tree
(`QueueNode.submitters`), filter answers are remembered per user and groups (`Principal`) and
name checks per string. Not thread-safe: one worker task owns a placer, and a reload happens
between placements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from fleetplace.shared.api.queues import ApplicationSubmission, PlacementOutcome, RejectionReason
from fleetplace.shared.queueing._config import DEFAULT_PARTITION, PartitionSpec, QueueingConfig, parse_config
from fleetplace.shared.queueing._errors import RuleEvaluationError
from fleetplace.shared.queueing._names import (
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
from fleetplace.shared.queueing._principal import Principal, fold_tags
from fleetplace.shared.queueing._rules import RecoveryRule
from fleetplace.shared.queueing._tree import QueueNode, QueueTree

_MEMO_LIMIT = 1 << 16  # bounds each cache; past it the cache starts over
_RECOVERY = RecoveryRule()
_new_tuple = tuple.__new__

# An accepted proposal: the path as proposed (level names keep their case until they are
# created), the rule type, the rule's index, and the queue if it exists already.
_Accepted = tuple[str, str, int | None, QueueNode | None]


class _Rejected(NamedTuple):
    reason: RejectionReason
    detail: str


_Decision = _Accepted | _Rejected


@dataclass(frozen=True, slots=True)
class QueueState:
    """A queue as the placer sees it now (for inspection; the tree itself stays private)."""

    path: str
    leaf: bool
    dynamic: bool
    draining: bool
    applications: int


class _Partition:
    """One partition: its tree, its live applications, and the decisions it remembers.

    A decision is a pure function of the submission's user, groups, requested queue and the
    tags the rules read, and of the tree (which carries the ACLs); it is remembered under
    those inputs until the tree changes in a way that can change it. A reload or a removed
    queue forgets everything; a created queue forgets only the decisions that looked for it
    and found nothing (the tree notes those lookups while a decision is made).
    """

    def __init__(self, spec: PartitionSpec, *, memoize: bool) -> None:
        self.spec = spec
        self.tree = QueueTree(spec.root)
        self.applications: dict[str, QueueNode] = {}
        self._memoize = memoize
        self._principals: dict[tuple[str, tuple[str, ...]], Principal] = {}
        # the tags a decision can depend on: those the tag rules read, and the force flag
        self._key_tags = (*spec.tag_names, FORCE_TAG)
        self._decisions: dict[tuple[object, ...], _Decision] = {}
        # path → the remembered decisions that looked for that queue and did not find it
        self._waiting_for: dict[str, list[tuple[object, ...]]] = {}

    def reconfigure(self, spec: PartitionSpec) -> None:
        self.spec = spec
        self._key_tags = (*spec.tag_names, FORCE_TAG)
        self.tree.apply_config(spec.root)
        self._forget_decisions()
        self._principals.clear()  # the filter answers they remember belong to the old config

    def place(self, app: ApplicationSubmission) -> PlacementOutcome:
        app_id = app.application_id
        tags: Mapping[str, str] = app.tags
        if tags and not "".join(tags).islower():
            tags = fold_tags(tags)  # only when some key has a capital (see fold_tags)
        key = (app.user, app.groups, app.queue, *map(tags.get, self._key_tags))
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decide_and_remember(key, app, tags)
        if isinstance(decision, _Rejected):
            # an invalid user is refused before the partition looks at the ID
            if decision.reason is RejectionReason.INVALID_USER or app_id not in self.applications:
                return _rejection(app_id, decision.reason, decision.detail)
            return self._duplicate(app_id)
        if app_id in self.applications:
            return self._duplicate(app_id)
        path, rule, index, node = decision
        if node is not None and node.is_leaf:  # the common case: the queue is there
            node.applications += 1
            self.applications[app_id] = node
            # tuple.__new__ is how a named tuple is built without its Python-level __new__
            return _new_tuple(PlacementOutcome, (app_id, node.path, rule, index, False, None, ""))
        resolved = _resolved(app, tags)
        assert not isinstance(resolved, _Rejected)  # the decision was made for this user
        return self._commit(app_id, path, rule, index, node, self._principal(*resolved))

    def _duplicate(self, app_id: str) -> PlacementOutcome:
        where = self.applications[app_id].path
        return _rejection(
            app_id,
            RejectionReason.DUPLICATE_APPLICATION,
            f"application {app_id!r} is already in queue {where}",
        )

    def _decide_and_remember(
        self, key: tuple[object, ...], app: ApplicationSubmission, tags: Mapping[str, str]
    ) -> _Decision:
        resolved = _resolved(app, tags)
        if isinstance(resolved, _Rejected):
            decision: _Decision = resolved
        elif not self._memoize:
            return self._decide(Principal(*resolved), app.queue, tags)
        else:
            who = self._principal(*resolved)
            absent: list[str] = []
            self.tree.absent = absent  # note the queues the rules look for and do not find
            try:
                decision = self._decide(who, app.queue, tags)
            finally:
                self.tree.absent = None
            for path in absent:
                self._waiting_for.setdefault(path, []).append(key)
        if self._memoize:
            if len(self._decisions) >= _MEMO_LIMIT:
                self._forget_decisions()
            self._decisions[key] = decision
        return decision

    def _forget_decisions(self) -> None:
        self._decisions.clear()
        self._waiting_for.clear()

    def _created(self, queues: list[QueueNode]) -> None:
        """New queues change only the decisions that looked for them and found nothing."""
        for queue in queues:
            for key in self._waiting_for.pop(queue.path, ()):
                self._decisions.pop(key, None)

    def _principal(self, user: str, groups: tuple[str, ...]) -> Principal:
        who = self._principals.get((user, groups))
        if who is None:
            if len(self._principals) >= _MEMO_LIMIT:
                self._principals.clear()
            who = self._principals[user, groups] = Principal(user, groups)
        return who

    def explain(self, app: ApplicationSubmission) -> tuple[str, ...]:
        tags: Mapping[str, str] = fold_tags(app.tags) if app.tags else app.tags
        resolved = _resolved(app, tags)
        if isinstance(resolved, _Rejected):
            return (resolved.detail,)
        trace: list[str] = []
        decision = self._decide(Principal(*resolved), app.queue, tags, trace)
        if isinstance(decision, _Rejected):
            trace.append(decision.detail)
        return tuple(trace)

    def _decide(
        self, who: Principal, queue: str, tags: Mapping[str, str], trace: list[str] | None = None
    ) -> _Decision:
        """The first rule whose proposal passes the leaf, ACL and draining checks;
        then the recovery rule; then the root.default fallback. `trace`, when given,
        collects why each rule was passed over (`QueuePlacer.explain`)."""
        tree = self.tree
        forced = FORCE_TAG in tags and go_parse_bool(tags[FORCE_TAG])
        try:
            for index, rule in enumerate(self.spec.rules):
                path = rule.propose(who, queue, tags, tree)
                if path is not None:
                    accepted = self._accept(path, rule.kind, index, who, forced, trace)
                    if accepted is not None:
                        return accepted
                elif trace is not None:
                    trace.append(f"rule {index} ({rule.kind}): no match")
            path = _RECOVERY.propose(who, queue, tags, tree)
        except RuleEvaluationError as e:
            # an error rejects at once: no later rule, no fallback, even when forced
            return _Rejected(RejectionReason.RULE_ERROR, str(e))
        if path is not None:
            return path, _RECOVERY.kind, None, tree.get(path)  # forced: no checks
        # the root.default fallback comes only after recovery declined
        if tree.get(DEFAULT_QUEUE) is not None:
            accepted = self._accept(DEFAULT_QUEUE, "default-queue", None, who, forced, trace)
            if accepted is not None:
                return accepted
        elif trace is not None:
            trace.append(f"default-queue: {DEFAULT_QUEUE} does not exist")
        return _Rejected(RejectionReason.NO_RULE_MATCHED, "no placement rule matched and no fallback applied")

    def _accept(
        self,
        path: str,
        kind: str,
        index: int | None,
        who: Principal,
        forced: bool,
        trace: list[str] | None = None,
    ) -> _Accepted | None:
        """The leaf, ACL and draining checks for one proposal: accepted, or None for "try the next rule"."""
        tree = self.tree
        if forced and path == RECOVERY_QUEUE:
            return path, kind, index, tree.get(path)  # no checks
        node = tree.get(path)
        if node is not None:
            if node.is_leaf and not node.draining and who.may_submit(node):
                return path, kind, index, node
            if trace is not None:
                trace.append(f"{_rule_label(kind, index)} proposed {node.path}: {_refusal(node, who)}")
            return None
        # not there yet: the deepest existing ancestor decides, leaf or not
        ancestor = tree.deepest_existing(path)
        if who.may_submit(ancestor):
            return path, kind, index, None
        if trace is not None:
            trace.append(
                f"{_rule_label(kind, index)} proposed {path} (to be created): the submit ACLs of "
                f"{ancestor.path} and its parents do not admit {who.user}"
            )
        return None

    def _commit(
        self, app_id: str, path: str, rule: str, index: int | None, node: QueueNode | None, who: Principal
    ) -> PlacementOutcome:
        """Go to the queue, or create the missing levels. No going back to rules."""
        tree = self.tree
        if node is not None:
            # an existing parent: only a forced application can get here
            return _rejection(app_id, RejectionReason.NOT_A_LEAF, f"queue {node.path} is not a leaf")
        if go_lower(path) == RECOVERY_QUEUE:
            created = tree.create(tree.root, [RECOVERY_NAME])
        else:
            ancestor = tree.deepest_existing(path)
            levels = path.split(".")[ancestor.path.count(".") + 1 :]
            refusal = _creation_refusal(ancestor, levels, who)
            if refusal is not None:
                return _rejection(app_id, *refusal)
            created = tree.create(ancestor, levels)
        self._created(created)
        node = created[-1]
        node.applications += 1
        self.applications[app_id] = node
        return PlacementOutcome(app_id, node.path, rule, index, True)

    def release(self, app_id: str) -> bool:
        node = self.applications.pop(app_id, None)
        if node is None:
            return False
        if self.tree.release(node):
            self._forget_decisions()  # queues went away: decisions that found them are stale
        return True


def _creation_refusal(
    ancestor: QueueNode, levels: list[str], who: Principal
) -> tuple[RejectionReason, str] | None:
    created = ".".join(levels)
    if not who.may_submit(ancestor):
        return (
            RejectionReason.CREATE_DENIED,
            f"{who.user} may not submit to {ancestor.path} to create {created}",
        )
    if ancestor.is_leaf:
        return RejectionReason.CREATE_UNDER_LEAF, f"cannot create {created}: {ancestor.path} is a leaf"
    if ancestor.draining:
        return RejectionReason.CREATE_REFUSED, f"cannot create below {ancestor.path}: it is draining"
    # the name test is on the level as produced, case-sensitively: `@RECOVERY@` is allowed
    bad = [level for level in levels if not is_queue_name(level) or level == RECOVERY_NAME]
    if bad:
        return RejectionReason.CREATE_REFUSED, f"cannot create queues named {bad} below {ancestor.path}"
    return None


def _rule_label(kind: str, index: int | None) -> str:
    return kind if index is None else f"rule {index} ({kind})"


def _refusal(node: QueueNode, who: Principal) -> str:
    """Why an existing queue refused a proposal, in the order the checks run."""
    if not node.is_leaf:
        return "not a leaf"
    if node.draining:
        return "draining"
    return f"the submit ACLs of {node.path} and its parents do not admit {who.user}"


def _resolved(app: ApplicationSubmission, tags: Mapping[str, str]) -> tuple[str, tuple[str, ...]] | _Rejected:
    """The user and groups the rules see, or why the submission is refused."""
    user, groups = app.user, app.groups
    if user == "":
        if not go_parse_bool(tags.get(FORCE_TAG, "")):
            return _Rejected(RejectionReason.INVALID_USER, "empty user")
        return RECOVERY_USER, (RECOVERY_GROUP,)
    if not groups:
        return user, (user,)  # YuniKorn's default resolver: one group named like the user
    if not is_user_name(user):
        return _Rejected(RejectionReason.INVALID_USER, f"invalid user name {user!r}")
    return user, groups


def _rejection(app_id: str, reason: RejectionReason, detail: str) -> PlacementOutcome:
    return PlacementOutcome(app_id, reason=reason, detail=detail)


class QueuePlacer:
    """Places applications into queues with YuniKorn's placement rules.

    Built from a validated config (`parse_config`), or from YuniKorn's default config.
    It remembers the queues earlier placements created and the applications it placed;
    `reload` swaps in a new config and keeps the dynamic queues. `memoize=False`
    turns off remembering decisions and filter answers (tests compare both ways).
    """

    def __init__(self, config: QueueingConfig | None = None, *, memoize: bool = True) -> None:
        self._memoize = memoize
        self._config = config if config is not None else parse_config(None)
        self._partitions: dict[str, _Partition] = {
            name: _Partition(spec, memoize=memoize) for name, spec in self._config.partitions.items()
        }
        # partitions a reload removed: they refuse new applications and keep their queues
        self._draining: dict[str, _Partition] = {}

    @property
    def config(self) -> QueueingConfig:
        return self._config

    def place(self, app: ApplicationSubmission) -> PlacementOutcome:
        # empty means default; otherwise an exact, case-sensitive match
        name = app.partition or DEFAULT_PARTITION
        partition = self._partitions.get(name)
        if partition is not None:
            return partition.place(app)
        return self._without_partition(app)

    def _without_partition(self, app: ApplicationSubmission) -> PlacementOutcome:
        name = app.partition or DEFAULT_PARTITION
        if name in self._draining:
            return _rejection(
                app.application_id,
                RejectionReason.PARTITION_DRAINING,
                f"partition {name!r} was removed from the config and is draining",
            )
        return _rejection(
            app.application_id,
            RejectionReason.UNKNOWN_PARTITION,
            f"partition {app.partition!r} is not configured",
        )

    def explain(self, app: ApplicationSubmission) -> tuple[str, ...]:
        """Why the rules passed `app` over, one line per rule in order, on the tree as it is now,
        ending with the rejection when there is one. Places nothing."""
        partition = self._partitions.get(app.partition or DEFAULT_PARTITION)
        if partition is None:
            return (self._without_partition(app).detail,)
        return partition.explain(app)

    def reload(self, config: QueueingConfig) -> None:
        """Activate a new validated config. Partitions that are gone drain: they
        refuse new applications; their live applications and queues are kept."""
        known = {**self._draining, **self._partitions}
        partitions: dict[str, _Partition] = {}
        for name, spec in config.partitions.items():
            current = known.pop(name, None)
            if current is None:
                partitions[name] = _Partition(spec, memoize=self._memoize)
            else:
                current.reconfigure(spec)
                partitions[name] = current
        self._partitions, self._draining, self._config = partitions, known, config

    def release(self, application_id: str, partition: str = "") -> bool:
        """The application left: its ID may be used again, and a draining or dynamic queue it
        leaves empty is removed. False if the application was not placed here."""
        state = self._partition(partition)
        return state is not None and state.release(application_id)

    def queues(self, partition: str = "") -> Mapping[str, QueueState]:
        """The partition's queues by path, configured and dynamic (empty if it is unknown)."""
        state = self._partition(partition)
        if state is None:
            return {}
        return {
            node.path: QueueState(node.path, node.is_leaf, not node.managed, node.draining, node.applications)
            for node in state.tree
        }

    def _partition(self, name: str) -> _Partition | None:
        name = name or DEFAULT_PARTITION
        return self._partitions.get(name) or self._draining.get(name)
