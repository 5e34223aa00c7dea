"""The three rollout strategies and the `rollout` entry point."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from ._durations import parse_progress_deadline
from ._errors import StrategyTypeError, ThresholdError
from ._groups import GroupMap, PlacementGroups
from ._models import ClusterRolloutStatus, DecisionGroup, RolloutResult, RolloutStrategy, StrategyType
from ._per_cluster import progressive_per_cluster
from ._per_group import progressive_per_group
from ._thresholds import check_threshold, threshold_of
from ._time import Instant, as_instant


def _split_removed(
    groups: GroupMap, statuses: Sequence[ClusterRolloutStatus]
) -> tuple[list[ClusterRolloutStatus], tuple[ClusterRolloutStatus, ...]]:
    """Statuses of clusters still in some group, and (in input order) those of clusters that are
    no longer placed. A status without a cluster name is never placed, even when a group lists
    an empty name."""
    placed = groups.clusters() - {""}
    current = [s for s in statuses if s.cluster_name in placed]
    removed = tuple(s for s in statuses if s.cluster_name not in placed)
    return current, removed


def _wrapped(setting: str, error: ThresholdError) -> ThresholdError:
    return ThresholdError(f"failed to parse the provided {setting}: {error}")


def _rollout_all(
    strategy: RolloutStrategy, groups: PlacementGroups, statuses: Sequence[ClusterRolloutStatus], now: Instant
) -> RolloutResult:
    """Every cluster at once, until its deadline: no soak time, no failure limit."""
    deadline = parse_progress_deadline(strategy.progress_deadline)
    everything = groups.besides()
    current, removed = _split_removed(everything, statuses)
    count = len(everything.clusters())
    result = progressive_per_cluster(everything, count, count, 0, deadline, current, now)
    return replace(result, clusters_removed=removed)


def _mandatory_phase(
    strategy: RolloutStrategy,
    groups: PlacementGroups,
    current: Sequence[ClusterRolloutStatus],
    deadline: int,
    now: Instant,
) -> RolloutResult | None:
    """Mandatory groups first, tolerating no failure. The phase is unfinished (its result is
    the answer) while any cluster, mandatory or not, is listed to roll out or timed out."""
    mandatory = groups.selected(strategy.mandatory_groups)
    if not mandatory:
        return None
    result = progressive_per_group(mandatory, 0, strategy.min_success_time_nanos, deadline, current, now)
    if result.clusters_to_rollout or result.clusters_timeout:
        return result
    return None


def _rollout_progressive(
    strategy: RolloutStrategy, groups: PlacementGroups, statuses: Sequence[ClusterRolloutStatus], now: Instant
) -> RolloutResult:
    """Mandatory groups, then up to maxConcurrency clusters at a time, by name."""
    deadline = parse_progress_deadline(strategy.progress_deadline)
    everything = groups.besides()
    current, removed = _split_removed(everything, statuses)
    try:
        # maxFailures is a share of every placed cluster, mandatory ones included.
        max_failures = threshold_of(strategy.max_failures, len(everything.clusters()), 0)
    except ThresholdError as e:
        raise _wrapped("maxFailures", e) from None
    mandatory = _mandatory_phase(strategy, groups, current, deadline, now)
    if mandatory is not None:
        return replace(mandatory, clusters_removed=removed)
    rest = groups.besides(strategy.mandatory_groups)
    count = len(rest.clusters())
    try:
        # maxConcurrency is a share of the clusters outside the mandatory groups; it is only
        # checked once the mandatory groups are done.
        size = threshold_of(strategy.max_concurrency, count, count)
    except ThresholdError as e:
        raise _wrapped("maxConcurrency", e) from None
    result = progressive_per_cluster(
        rest, size, max_failures, strategy.min_success_time_nanos, deadline, current, now
    )
    return replace(result, clusters_removed=removed)


def _rollout_progressive_per_group(
    strategy: RolloutStrategy, groups: PlacementGroups, statuses: Sequence[ClusterRolloutStatus], now: Instant
) -> RolloutResult:
    """Mandatory groups, then one decision group at a time, in index order."""
    deadline = parse_progress_deadline(strategy.progress_deadline)
    try:
        check_threshold(strategy.max_failures)
    except ThresholdError as e:
        raise _wrapped("maxFailures", e) from None
    everything = groups.besides()
    current, removed = _split_removed(everything, statuses)
    mandatory = _mandatory_phase(strategy, groups, current, deadline, now)
    if mandatory is not None:
        return replace(mandatory, clusters_removed=removed)
    rest = groups.besides(strategy.mandatory_groups)
    result = progressive_per_group(
        rest, strategy.max_failures, strategy.min_success_time_nanos, deadline, current, now
    )
    return replace(result, clusters_removed=removed)


_Strategy = Callable[
    [RolloutStrategy, PlacementGroups, Sequence[ClusterRolloutStatus], Instant], RolloutResult
]

_STRATEGIES: dict[str, _Strategy] = {
    StrategyType.ALL: _rollout_all,
    StrategyType.PROGRESSIVE: _rollout_progressive,
    StrategyType.PROGRESSIVE_PER_GROUP: _rollout_progressive_per_group,
}


def rollout(
    strategy: RolloutStrategy,
    decision_groups: Iterable[DecisionGroup],
    cluster_statuses: Sequence[ClusterRolloutStatus],
    now: datetime | Instant,
) -> RolloutResult:
    """Which clusters to roll the workload out to now, given the strategy, the placement's
    decision groups and the workload's status on each cluster (in the applier's order).

    Raises a RolloutError subclass for a setting OCM rejects; see docs/rollouts.md.
    """
    run = _STRATEGIES.get(strategy.type)
    if run is None:
        raise StrategyTypeError(f"incorrect rollout strategy type {strategy.type}")
    return run(strategy, PlacementGroups(decision_groups), cluster_statuses, as_instant(now))
