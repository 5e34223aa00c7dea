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

        Only the sub-object named by `type` is read; an absent or null one means all defaults;
        unknown keys (the old `timeout` among them) are ignored.
        """
        document = document or {}
        if not isinstance(document, Mapping):
            raise StrategyTypeError(f"rolloutStrategy must be an object, not {type(document).__name__}")
        kind = document.get("type") or ""
        if not isinstance(kind, str):
            raise StrategyTypeError(f"incorrect rollout strategy type {kind}")
        section = _SECTIONS.get(kind)
        settings = (document.get(section) if section else None) or {}
        if not isinstance(settings, Mapping):
            raise StrategyTypeError(f"rolloutStrategy.{section} must be an object")
        deadline = settings.get("progressDeadline") or ""
        if not isinstance(deadline, str):
            raise DurationError(f"progressDeadline must be a string, not {deadline!r}")
        min_success = 0
        if kind != StrategyType.ALL:
            # All has no soak time, so its minSuccessTime is never read.
            min_success = _duration(settings.get("minSuccessTime"), "minSuccessTime")
        return cls(
            type=kind,
            progress_deadline=deadline,
            min_success_time_nanos=min_success,
            max_failures=_int_or_string(settings.get("maxFailures"), "maxFailures"),
            max_concurrency=_int_or_string(settings.get("maxConcurrency"), "maxConcurrency"),
            mandatory_groups=_mandatory_groups(settings.get("mandatoryDecisionGroups")),
        )


def _duration(value: Any, name: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, str):
        raise DurationError(f'{name} must be a duration string such as "60s", not {value!r}')
    return parse_go_duration(value)


def _int_or_string(value: Any, name: str) -> IntOrString:
    """An absent or null threshold is the integer 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ThresholdError(f"{name} must be an integer or a string, not {value!r}")
    return value


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
