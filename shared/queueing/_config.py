"""Parse and validate a partition config into immutable queue specs and rule objects.

Everything is checked before anything is built, and every problem is collected with its field
path: a config with any problem is rejected whole (`ConfigError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fleetplace.shared.api.queues import PlacementRuleConfig, QueueConfig, SchedulerConfig
from fleetplace.shared.queueing._acl import ACL, NOBODY, coarse_problem, parse_acl, strict_problem
from fleetplace.shared.queueing._decode import decode_document
from fleetplace.shared.queueing._errors import ConfigError, ConfigProblem
from fleetplace.shared.queueing._filter import build_filter, single_entry_problem, type_problem
from fleetplace.shared.queueing._names import ROOT, go_lower, invalid_levels, is_queue_name, is_rule_name
from fleetplace.shared.queueing._rules import RULE_TYPES, FixedRule, ProvidedRule, Rule, TagRule
from fleetplace.shared.queueing._shape import PartitionDraft, shape
from fleetplace.shared.queueing._static_check import static_path_problem
from fleetplace.shared.queueing._tree import QueueSpec

DEFAULT_PARTITION = "default"

# What YuniKorn runs with when there is no configuration at all.
DEFAULT_CONFIG_YAML = """\
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
"""


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """One validated partition: its configured queue tree and its rules (without recovery)."""

    name: str
    root: QueueSpec
    rules: tuple[Rule, ...]
    # names of the tags any rule reads: they are all a decision can depend on among the tags
    tag_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QueueingConfig:
    """A validated configuration: partitions by name (names normalised: empty means `default`, lower-cased)."""

    partitions: Mapping[str, PartitionSpec]


def parse_config(source: str | bytes | Mapping[str, Any] | SchedulerConfig | None) -> QueueingConfig:
    """Decode (YAML or JSON text, or an already decoded mapping) and validate a config.

    `None` or an empty document means "no configuration at all": YuniKorn's default, one
    `root` partition with a single `provided` rule that does not create queues.
    Raises `ConfigError` listing every problem when the config is not acceptable.
    """
    if isinstance(source, str | bytes):
        source = decode_document(source)
    if source is None:
        source = decode_document(DEFAULT_CONFIG_YAML)
    problems: list[ConfigProblem] = []
    partitions = _partitions(shape(source, problems), problems)
    if problems:
        raise ConfigError(problems)
    return QueueingConfig(MappingProxyType(partitions))


# -- partitions and queues --------------------------------------------------


def _partitions(drafts: list[PartitionDraft], problems: list[ConfigProblem]) -> dict[str, PartitionSpec]:
    specs: dict[str, PartitionSpec] = {}
    seen: dict[str, int] = {}
    for draft in drafts:
        where = f"partitions[{draft.index}]"
        name = DEFAULT_PARTITION
        if draft.name is not None:
            if draft.name != "" and go_lower(draft.name) != DEFAULT_PARTITION:
                name = draft.name
            folded = go_lower(name)
            if folded in seen:
                problems.append(
                    ConfigProblem(
                        f"{where}.name",
                        f"duplicate partition name {name!r} (equal ignoring case to partitions[{seen[folded]}])",
                    )
                )
            seen.setdefault(folded, draft.index)
        root = _root(draft.queues, where, problems) if draft.queues_ok else None
        rules = _partition_rules(draft, where, root, problems)
        if root is not None:
            specs[name] = PartitionSpec(name, root, rules, _tag_names(rules))
    return specs


def _root(top: list[QueueConfig] | None, where: str, problems: list[ConfigProblem]) -> QueueSpec | None:
    if top is None:
        problems.append(
            ConfigProblem(f"{where}.queues", "is required: a partition must configure its queues")
        )
        return None
    if len(top) == 1 and go_lower(top[0].name) == ROOT:
        # the one top-level queue named root (any case) is the root, forced to be a parent
        listed = top[0]
        root_where = f"{where}.queues[0]"
        if listed.name != ROOT:
            # quirk: validation passes, then YuniKorn fails to create the partition
            problems.append(
                ConfigProblem(
                    f"{root_where}.name", f"the root queue must be named exactly 'root', not {listed.name!r}"
                )
            )
        if listed.resources is not None and (
            listed.resources.guaranteed is not None or listed.resources.max is not None
        ):
            problems.append(
                ConfigProblem(f"{root_where}.resources", "the root queue must not have resources")
            )
        return QueueSpec(
            name=ROOT,
            configured_name=listed.name,
            parent_flag=True,
            submit_acl=_acl(listed.submitacl, f"{root_where}.submitacl", problems),
            admin_acl=_acl(listed.adminacl, f"{root_where}.adminacl", problems),
            children=_children(listed.queues or [], f"{root_where}.queues", problems),
        )
    # anything else gets a root without ACLs inserted above it
    return QueueSpec(ROOT, ROOT, True, NOBODY, NOBODY, _children(top, f"{where}.queues", problems))


def _children(queues: list[QueueConfig], where: str, problems: list[ConfigProblem]) -> tuple[QueueSpec, ...]:
    specs = []
    seen: dict[str, int] = {}
    for j, queue in enumerate(queues):
        queue_where = f"{where}[{j}]"
        if not is_queue_name(queue.name):
            problems.append(
                ConfigProblem(
                    f"{queue_where}.name",
                    f"invalid queue name {queue.name!r}: 1 to 64 of a-z A-Z 0-9 _ - : # / @, no dots",
                )
            )
        lowered = go_lower(queue.name)
        if lowered in seen:
            problems.append(
                ConfigProblem(
                    f"{queue_where}.name",
                    f"duplicate queue name {queue.name!r} (equal ignoring case to {where}[{seen[lowered]}])",
                )
            )
        seen.setdefault(lowered, j)
        specs.append(
            QueueSpec(
                name=lowered,
                configured_name=queue.name,
                parent_flag=queue.parent,
                submit_acl=_acl(queue.submitacl, f"{queue_where}.submitacl", problems),
                admin_acl=_acl(queue.adminacl, f"{queue_where}.adminacl", problems),
                children=_children(queue.queues or [], f"{queue_where}.queues", problems),
            )
        )
    return tuple(specs)


def _acl(text: str, where: str, problems: list[ConfigProblem]) -> ACL:
    problem = coarse_problem(text) or strict_problem(text)
    if problem is not None:
        problems.append(ConfigProblem(where, problem))
        return NOBODY
    return parse_acl(text)


# -- rules ------------------------------------------------------------------


def _partition_rules(
    draft: PartitionDraft, where: str, root: QueueSpec | None, problems: list[ConfigProblem]
) -> tuple[Rule, ...]:
    if not draft.rules_given:
        # no rules means one implicit `provided` rule without create
        return (ProvidedRule(create=False),)
    rules = []
    for j, config in draft.rules:
        rule_where = f"{where}.placementrules[{j}]"
        before = len(problems)
        rule = _rule(config, rule_where, problems)
        # the static check only makes sense for a chain that is otherwise well formed
        if len(problems) == before and root is not None:
            problem = static_path_problem(config, root)
            if problem is not None:
                problems.append(ConfigProblem(rule_where, problem))
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _rule(config: PlacementRuleConfig, where: str, problems: list[ConfigProblem]) -> Rule | None:
    """Check one rule and its parents; build it if it is sound."""
    before = len(problems)
    name_ok = is_rule_name(config.name)
    if not name_ok:
        problems.append(
            ConfigProblem(f"{where}.name", f"invalid rule name {config.name!r}: a rule name is an identifier")
        )
    parent = _rule(config.parent, f"{where}.parent", problems) if config.parent is not None else None
    if config.filter is not None:
        _filter_problems(config, f"{where}.filter", problems)
    kind = go_lower(config.name)
    if name_ok and kind == "recovery":
        problems.append(
            ConfigProblem(
                f"{where}.name", "'recovery' is reserved: the recovery rule is implicit and always last"
            )
        )
    elif name_ok and kind not in RULE_TYPES:
        problems.append(
            ConfigProblem(
                f"{where}.name", f"unknown rule type {config.name!r}: expected provided, user, fixed or tag"
            )
        )
    value = go_lower(config.value)
    if kind == "fixed":
        problem = _fixed_value_problem(value, has_parent=config.parent is not None)
        if problem is not None:
            problems.append(ConfigProblem(f"{where}.value", problem))
    elif kind == "tag" and value == "":
        problems.append(ConfigProblem(f"{where}.value", "a tag rule needs the tag name in value"))
    if len(problems) != before:
        return None
    common: dict[str, Any] = {
        "create": config.create,
        "filter": build_filter(config.filter),
        "parent": parent,
    }
    if kind == "fixed":
        return FixedRule(value=value, **common)
    if kind == "tag":
        return TagRule(tag_name=value, **common)
    return RULE_TYPES[kind](**common)


def _fixed_value_problem(value: str, *, has_parent: bool) -> str | None:
    if value == "":
        return "a fixed rule needs a queue name in value"
    if value.startswith(ROOT) and value != ROOT and not value.startswith(f"{ROOT}."):
        # service decision: YuniKorn takes `rootqueue` as qualified and then misbehaves
        return f"queue {value!r} starts with 'root' but is neither 'root' nor 'root.<path>'"
    bad = invalid_levels(value)
    if bad:
        return f"queue {value!r} has invalid queue names {bad}"
    if has_parent and (value == ROOT or value.startswith(f"{ROOT}.")):
        return f"a fixed rule with the fully qualified queue {value!r} cannot have a parent rule"
    return None


def _filter_problems(config: PlacementRuleConfig, where: str, problems: list[ConfigProblem]) -> None:
    assert config.filter is not None
    problem = type_problem(config.filter.type)
    if problem is not None:
        problems.append(ConfigProblem(f"{where}.type", problem))
    for kind, entries in (("user", config.filter.users), ("group", config.filter.groups)):
        if len(entries) == 1:
            problem = single_entry_problem(entries[0], kind=kind)
            if problem is not None:
                problems.append(ConfigProblem(f"{where}.{kind}s[0]", problem))


def _tag_names(rules: tuple[Rule, ...]) -> tuple[str, ...]:
    names: set[str] = set()
    for top in rules:
        rule: Rule | None = top
        while rule is not None:
            if isinstance(rule, TagRule):
                names.add(rule.tag_name)
            rule = rule.parent
    return tuple(sorted(names))
