"""The rollout's inputs and output: strategy, decision groups, cluster statuses, result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Any

from ._durations import parse_go_duration
from ._errors import DurationError, StrategyTypeError, ThresholdError
from ._thresholds import IntOrString
from ._time import Instant


class RolloutStatus(StrEnum):
    """Where the workload stands on one cluster, as the applier reports it."""

    TO_APPLY = "ToApply"
    PROGRESSING = "Progressing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIME_OUT = "TimeOut"
    SKIP = "Skip"


class StrategyType(StrEnum):
    ALL = "All"
    PROGRESSIVE = "Progressive"
    PROGRESSIVE_PER_GROUP = "ProgressivePerGroup"


# The sub-object of a RolloutStrategy that holds each type's settings.
_SECTIONS: dict[str, str] = {
    StrategyType.ALL: "all",
    StrategyType.PROGRESSIVE: "progressive",
    StrategyType.PROGRESSIVE_PER_GROUP: "progressivePerGroup",
}


@dataclass(frozen=True, order=True, slots=True)
class GroupKey:
    """A decision group's identity: its name (may be empty) and its index."""

    group_name: str = ""
    group_index: int = 0


@dataclass(frozen=True, slots=True)
class DecisionGroup:
    """One of a placement's decision groups and the clusters it decided."""

    group_name: str
    group_index: int
    clusters: tuple[str, ...] = ()

    @property
    def key(self) -> GroupKey:
        return GroupKey(self.group_name, self.group_index)


@dataclass(frozen=True, slots=True)
class MandatoryGroup:
    """A reference to decision groups that must finish first: by name when one is given
    (every group of that name), else by index."""

    group_name: str = ""
    group_index: int = 0


@dataclass(frozen=True, slots=True)
class ClusterRolloutStatus:
    """The workload's status on one cluster; `recheck_time` is set by the rollout, when a soak
    ends or a deadline passes."""

    cluster_name: str
    status: RolloutStatus
    group_key: GroupKey = GroupKey()
    last_transition_time: Instant | None = None
    recheck_time: Instant | None = None


@dataclass(frozen=True, slots=True)
class RolloutStrategy:
    """The settings of the strategy named by `type`; the other types' settings are not kept.

    `progress_deadline` stays text and the thresholds stay integer-or-string: OCM checks them
    while it rolls out, in an order that decides which error is reported.
    """

    type: str
    progress_deadline: str = ""
    min_success_time_nanos: int = 0
    max_failures: IntOrString = 0
    max_concurrency: IntOrString = 0
    mandatory_groups: tuple[MandatoryGroup, ...] = ()

    @classmethod
    def from_json(cls, document: Mapping[str, Any] | None) -> RolloutStrategy:
        """Read OCM's RolloutStrategy object (`{"type": ..., "progressive": {...}}`).

        Only the sub-object named by `type` is read; an absent or null one means all defaults.
        Its settings are decoded as Kubernetes decodes them, in document order, stopping at the
        first duration or threshold it cannot hold; keys the type does not have (the old
        `timeout` among them) are ignored.
        """
        document = document or {}
        if not isinstance(document, Mapping):
            raise StrategyTypeError(f"rolloutStrategy must be an object, not {type(document).__name__}")
        kind = document.get("type")
        kind = "" if kind is None else kind
        if not isinstance(kind, str):
            raise StrategyTypeError(f"incorrect rollout strategy type {kind}")
        section = _SECTIONS.get(kind)
        settings = (document.get(section) if section else None) or {}
        if not isinstance(settings, Mapping):
            raise StrategyTypeError(f"rolloutStrategy.{section} must be an object")
        fields = _FIELDS.get(kind, frozenset())
        decoded: dict[str, Any] = {}
        for key, value in settings.items():
            if key not in fields:
                continue
            if key == "minSuccessTime":
                decoded[key] = _duration(value)
            elif key in ("maxFailures", "maxConcurrency"):
                decoded[key] = _int_or_string(value)
        # Plain fields are checked last: Kubernetes reports a bad one only when no duration or
        # threshold failed.
        deadline = settings.get("progressDeadline") if "progressDeadline" in fields else None
        deadline = "" if deadline is None else deadline
        if not isinstance(deadline, str):
            raise DurationError(f"progressDeadline must be a string, not {deadline!r}")
        mandatory = settings.get("mandatoryDecisionGroups") if "mandatoryDecisionGroups" in fields else None
        return cls(
            type=kind,
            progress_deadline=deadline,
            # All has no soak time: its minSuccessTime is decoded but never used.
            min_success_time_nanos=0 if kind == StrategyType.ALL else decoded.get("minSuccessTime", 0),
            max_failures=decoded.get("maxFailures", 0),
            max_concurrency=decoded.get("maxConcurrency", 0),
            mandatory_groups=_mandatory_groups(mandatory),
        )


# The settings each type has (OCM's RolloutAll, RolloutProgressive, RolloutProgressivePerGroup).
_COMMON_FIELDS = frozenset({"minSuccessTime", "progressDeadline", "maxFailures"})
_FIELDS: dict[str, frozenset[str]] = {
    StrategyType.ALL: _COMMON_FIELDS,
    StrategyType.PROGRESSIVE: _COMMON_FIELDS | {"mandatoryDecisionGroups", "maxConcurrency"},
    StrategyType.PROGRESSIVE_PER_GROUP: _COMMON_FIELDS | {"mandatoryDecisionGroups"},
}

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _json_kind(value: Any) -> str:
    """The kind of a JSON value as Go's JSON decoder names it in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    return "array"


def _duration(value: Any) -> int:
    """A `metav1.Duration`: a Go duration string. Null decodes as the empty string, which is
    not a duration; any other non-string is the JSON decoder's error."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise DurationError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type string")
    return parse_go_duration(value)


def _int_or_string(value: Any) -> IntOrString:
    """An `intstr.IntOrString`: a string, or a number that is an int32. Null is the integer 0."""
    if value is None:
        return 0
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and _INT32_MIN <= value <= _INT32_MAX:
        return value
    kind = _json_kind(value)
    if kind == "number":
        kind = f"number {value!r}"
    raise ThresholdError(f"json: cannot unmarshal {kind} into Go value of type int32")


def _mandatory_groups(value: Any) -> tuple[MandatoryGroup, ...]:
    if value is None:
        return ()
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise StrategyTypeError("mandatoryDecisionGroups must be a list")
    groups = []
    for item in value:
        if not isinstance(item, Mapping):
            raise StrategyTypeError("each mandatoryDecisionGroups entry must be an object")
        name = item.get("groupName") or ""
        index = item.get("groupIndex") or 0
        if not isinstance(name, str) or isinstance(index, bool) or not isinstance(index, int):
            raise StrategyTypeError(f"bad mandatoryDecisionGroups entry {dict(item)!r}")
        groups.append(MandatoryGroup(name, index))
    return tuple(groups)


@dataclass(frozen=True, slots=True)
class RolloutResult:
    """What to do now: clusters to roll out, clusters timed out, clusters no longer placed,
    whether failures exceeded maxFailures, and when to evaluate again.

    `recheck_after_nanos` is exact; `recheck_after` is the same as a timedelta (to the
    microsecond).
    """

    clusters_to_rollout: tuple[ClusterRolloutStatus, ...] = ()
    clusters_timeout: tuple[ClusterRolloutStatus, ...] = ()
    clusters_removed: tuple[ClusterRolloutStatus, ...] = ()
    max_failure_breach: bool = False
    recheck_after_nanos: int | None = field(default=None)

    @property
    def recheck_after(self) -> timedelta | None:
        if self.recheck_after_nanos is None:
            return None
        return timedelta(microseconds=self.recheck_after_nanos // 1_000)

    @property
    def recheck_after_seconds(self) -> float | None:
        """Seconds as Go's `Duration.Seconds()` computes them (whole part plus fraction)."""
        if self.recheck_after_nanos is None:
            return None
        whole, fraction = divmod(self.recheck_after_nanos, 1_000_000_000)
        return float(whole) + float(fraction) / 1e9
