"""Small builders for rollout tests: times around a fixed `NOW`, statuses, groups, strategies."""

from __future__ import annotations

from typing import Any

from fleetplace.shared.rollout import (
    ClusterRolloutStatus,
    DecisionGroup,
    GroupKey,
    Instant,
    RolloutResult,
    RolloutStatus,
    RolloutStrategy,
    rollout,
)

NOW = Instant.parse("2022-01-01T00:00:00Z")
SECOND = 1_000_000_000


def at(seconds: float) -> Instant:
    """NOW plus (or minus) some seconds."""
    return NOW.plus(round(seconds * SECOND))


def status(
    name: str,
    state: str,
    ago: float | None = None,
    group: tuple[str, int] = ("", 0),
) -> ClusterRolloutStatus:
    """A cluster's status, its last transition `ago` seconds before NOW (None: no time)."""
    return ClusterRolloutStatus(
        cluster_name=name,
        status=RolloutStatus(state),
        group_key=GroupKey(*group),
        last_transition_time=None if ago is None else at(-ago),
    )


def groups(*spec: tuple[str, int, list[str]]) -> list[DecisionGroup]:
    return [DecisionGroup(name, index, tuple(clusters)) for name, index, clusters in spec]


def strategy(kind: str, **settings: Any) -> RolloutStrategy:
    section = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}.get(
        kind, "x"
    )
    return RolloutStrategy.from_json({"type": kind, section: settings})


def run(
    strat: RolloutStrategy,
    decision_groups: list[DecisionGroup],
    statuses: list[ClusterRolloutStatus],
    now: Instant = NOW,
) -> RolloutResult:
    return rollout(strat, decision_groups, statuses, now)


def names(statuses: tuple[ClusterRolloutStatus, ...]) -> list[str]:
    return [s.cluster_name for s in statuses]


def brief(statuses: tuple[ClusterRolloutStatus, ...]) -> list[tuple[str, str]]:
    return [(s.cluster_name, s.status.value) for s in statuses]
