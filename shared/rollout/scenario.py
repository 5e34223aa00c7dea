"""Rollout scenarios as JSON: read one, evaluate it, render the result line.

A scenario is `{"name", "now", "rolloutStrategy", "decisionGroups", "clusterStatuses"}`; its
result line is `{"name", "clustersToRollout", "clustersTimeOut", "clustersRemoved",
"maxFailureBreach", "recheckAfterSeconds", "error"}` (see docs/rollouts.md). A scenario that
cannot be evaluated gets a line with `error` set and empty lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._errors import RolloutError, ScenarioError
from ._models import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    RolloutResult,
    RolloutStatus,
    RolloutStrategy,
)
from ._strategies import rollout
from ._time import Instant

ResultLine = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    now: Instant
    strategy: RolloutStrategy
    decision_groups: tuple[DecisionGroup, ...]
    cluster_statuses: tuple[ClusterRolloutStatus, ...]


def _string(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: expected a string, not {value!r}")
    return value


def _integer(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{where}: expected an integer, not {value!r}")
    return value


def _list(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ScenarioError(f"{where}: expected a list")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected an object")
    return value


def _time(value: Any, where: str) -> Instant | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ScenarioError(f"{where}: expected an RFC 3339 time, not {value!r}")
    try:
        return Instant.parse(value)
    except ValueError:
        raise ScenarioError(f"{where}: not an RFC 3339 time: {value!r}") from None


def parse_scenario(document: Any) -> Scenario:
    """Read one scenario object; raises RolloutError (ScenarioError, or the strategy's own
    errors such as a bad minSuccessTime)."""
    doc = _object(document, "scenario")
    name = _string(doc.get("name"), "name")
    now = _time(doc.get("now"), "now")
    if now is None:
        raise ScenarioError("now: required")
    groups = []
    for i, raw in enumerate(_list(doc.get("decisionGroups"), "decisionGroups")):
        where = f"decisionGroups[{i}]"
        group = _object(raw, where)
        clusters = tuple(
            _string(c, f"{where}.clusters[{j}]") for j, c in enumerate(_list(group.get("clusters"), where))
        )
        groups.append(
            DecisionGroup(
                _string(group.get("groupName"), f"{where}.groupName"),
                _integer(group.get("groupIndex"), f"{where}.groupIndex"),
                clusters,
            )
        )
    statuses = []
    for i, raw in enumerate(_list(doc.get("clusterStatuses"), "clusterStatuses")):
        where = f"clusterStatuses[{i}]"
        item = _object(raw, where)
        text = _string(item.get("status"), f"{where}.status")
        try:
            status = RolloutStatus(text)
        except ValueError:
            known = ", ".join(s.value for s in RolloutStatus)
            raise ScenarioError(f"{where}.status: {text!r} is not one of {known}") from None
        statuses.append(
            ClusterRolloutStatus(
                cluster_name=_string(item.get("clusterName"), f"{where}.clusterName"),
                status=status,
                group_key=GroupKey(
                    _string(item.get("groupName"), f"{where}.groupName"),
                    _integer(item.get("groupIndex"), f"{where}.groupIndex"),
                ),
                last_transition_time=_time(item.get("lastTransitionTime"), f"{where}.lastTransitionTime"),
            )
        )
    return Scenario(
        name=name,
        now=now,
        strategy=RolloutStrategy.from_json(doc.get("rolloutStrategy")),
        decision_groups=tuple(groups),
        cluster_statuses=tuple(statuses),
    )


# Go's zero time, which Kubernetes writes as null.
_ZERO_TIME: Final = Instant.parse("0001-01-01T00:00:00Z")


def _kubernetes_time(moment: Instant | None) -> str | None:
    """A time as Kubernetes serialises a `metav1.Time`: whole seconds (a `90ms` deadline still
    counts to the nanosecond; only the printed time is truncated), and null for Go's zero time."""
    if moment is None or moment == _ZERO_TIME:
        return None
    return moment.rfc3339(fraction=False)


def render_status(status: ClusterRolloutStatus) -> dict[str, Any]:
    """OCM's cluster rollout status holds its times as `metav1.Time`."""
    return {
        "clusterName": status.cluster_name,
        "groupName": status.group_key.group_name,
        "groupIndex": status.group_key.group_index,
        "status": status.status.value,
        "lastTransitionTime": _kubernetes_time(status.last_transition_time),
        "timeOutTime": _kubernetes_time(status.recheck_time),
    }


def _seconds(result: RolloutResult) -> int | float | None:
    """Whole seconds print as an integer (`30`), others as a float (`0.09`)."""
    seconds = result.recheck_after_seconds
    if seconds is None:
        return None
    return int(seconds) if seconds.is_integer() else seconds


def render_result(name: str, result: RolloutResult) -> ResultLine:
    return {
        "name": name,
        "clustersToRollout": [render_status(s) for s in result.clusters_to_rollout],
        "clustersTimeOut": [render_status(s) for s in result.clusters_timeout],
        "clustersRemoved": [render_status(s) for s in result.clusters_removed],
        "maxFailureBreach": result.max_failure_breach,
        "recheckAfterSeconds": _seconds(result),
        "error": None,
    }


def render_error(name: str, message: str) -> ResultLine:
    """The line of a scenario that could not be evaluated: the error and nothing else."""
    return {
        "name": name,
        "clustersToRollout": [],
        "clustersTimeOut": [],
        "clustersRemoved": [],
        "maxFailureBreach": False,
        "recheckAfterSeconds": None,
        "error": message,
    }


def evaluate_scenario(document: Any) -> ResultLine:
    """The result line of one scenario object; a RolloutError becomes the line's `error`."""
    name = document.get("name") if isinstance(document, Mapping) else None
    name = name if isinstance(name, str) else ""
    try:
        scenario = parse_scenario(document)
        result = rollout(scenario.strategy, scenario.decision_groups, scenario.cluster_statuses, scenario.now)
    except RolloutError as e:
        return render_error(name, str(e))
    return render_result(scenario.name, result)
