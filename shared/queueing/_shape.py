"""The shape of a config document — keys, types, lists and mappings.

The document is checked piece by piece (each partition's own keys, its queue tree, each rule)
so that one broken rule does not hide the problems of the others: every piece that has the
right shape is handed on to the semantic checks, and every piece that has not is a problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from fleetplace.shared.api.queues import (
    PartitionConfig,
    PlacementRuleConfig,
    QueueConfig,
    SchedulerConfig,
    field_errors,
)
from fleetplace.shared.queueing._errors import ConfigProblem

_QUEUE_LIST = TypeAdapter(list[QueueConfig])
_SPLIT_KEYS = ("queues", "placementrules")


@dataclass(frozen=True, slots=True)
class PartitionDraft:
    """A partition whose pieces have been shape-checked. `name` is None when the partition's
    own keys are broken; `queues_ok` is false when the queue tree is; broken rules are left
    out of `rules`, which keeps each rule's position in the config for problem paths."""

    index: int
    name: str | None
    queues: list[QueueConfig] | None
    queues_ok: bool
    rules: tuple[tuple[int, PlacementRuleConfig], ...]
    rules_given: bool


def _problems(error: ValidationError, prefix: str) -> list[ConfigProblem]:
    out = []
    for path, reason in field_errors(error, prefix):
        if reason == "unknown key":
            reason = "unknown key (YuniKorn decodes its configuration strictly)"
        out.append(ConfigProblem(path, reason))
    return out


def shape(document: Any, problems: list[ConfigProblem]) -> list[PartitionDraft]:
    if isinstance(document, SchedulerConfig):
        document = document.model_dump(exclude_none=True)
    if not isinstance(document, dict):
        problems.append(ConfigProblem("", "the document must be a mapping with a 'partitions' list"))
        return []
    try:
        SchedulerConfig.model_validate({**document, "partitions": None})
    except ValidationError as e:
        problems.extend(_problems(e, ""))
    partitions = document.get("partitions")
    if partitions is None:
        return []
    if not isinstance(partitions, list):
        problems.append(ConfigProblem("partitions", "must be a list"))
        return []
    return [_partition(i, raw, problems) for i, raw in enumerate(partitions)]


def _partition(index: int, raw: Any, problems: list[ConfigProblem]) -> PartitionDraft:
    where = f"partitions[{index}]"
    if not isinstance(raw, dict):
        problems.append(ConfigProblem(where, "must be a mapping"))
        return PartitionDraft(index, None, None, False, (), False)
    name: str | None = None
    try:
        name = PartitionConfig.model_validate({k: v for k, v in raw.items() if k not in _SPLIT_KEYS}).name
    except ValidationError as e:
        problems.extend(_problems(e, where))
    queues: list[QueueConfig] | None = None
    queues_ok = True
    if raw.get("queues") is not None:
        try:
            queues = _QUEUE_LIST.validate_python(raw["queues"])
        except ValidationError as e:
            problems.extend(_problems(e, f"{where}.queues"))
            queues_ok = False
    rules: list[tuple[int, PlacementRuleConfig]] = []
    given = raw.get("placementrules")
    if given is not None and not isinstance(given, list):
        problems.append(ConfigProblem(f"{where}.placementrules", "must be a list"))
    elif given:
        for j, rule in enumerate(given):
            try:
                rules.append((j, PlacementRuleConfig.model_validate(rule)))
            except ValidationError as e:
                problems.extend(_problems(e, f"{where}.placementrules[{j}]"))
    return PartitionDraft(index, name, queues, queues_ok, tuple(rules), bool(given))
