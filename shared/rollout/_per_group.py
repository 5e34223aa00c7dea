"""Progressive rollout group by group (ProgressivePerGroup, and mandatory groups first)."""

from __future__ import annotations

from collections.abc import Sequence

from ._cluster_status import FAILURES, Lists, assess, recheck_after
from ._groups import GroupMap
from ._models import ClusterRolloutStatus, RolloutResult, RolloutStatus
from ._thresholds import IntOrString, threshold_of
from ._time import Instant


def progressive_per_group(
    groups: GroupMap,
    max_failures: IntOrString,
    min_success_nanos: int,
    deadline_nanos: int,
    statuses: Sequence[ClusterRolloutStatus],
    now: Instant,
) -> RolloutResult:
    """Roll out the first group, by index, that is not finished.

    Every existing status is assessed first, whatever its group, so a cluster still rolling out
    anywhere stops the walk after the first group. ToApply statuses are not taken as they are:
    the groups' clusters without a status are listed as new ToApply instead. Within a group the
    failure limit is `max_failures` over the group's size (default 0); the walk stops at the
    group where clusters roll out beyond the failures counted so far, or where failures exceed
    the limit — the rest of that group is still listed.
    """
    lists = Lists()
    assessed: dict[str, RolloutStatus] = {}
    for status in statuses:
        if status.cluster_name == "" or status.status == RolloutStatus.TO_APPLY:
            continue
        assessed[status.cluster_name] = assess(status, min_success_nanos, deadline_nanos, now, lists).status

    total_failures = 0
    breach = False
    for key in groups.ordered_keys():
        clusters = groups[key]
        limit = threshold_of(max_failures, len(clusters), 0)
        group_failures = 0
        for cluster in sorted(clusters):
            if cluster in assessed:
                if assessed[cluster] in FAILURES:
                    group_failures += 1
                    breach = group_failures > limit
                continue
            lists.to_rollout.append(ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY, key))
        total_failures += group_failures
        if len(lists.to_rollout) - total_failures > 0 or breach:
            break

    return RolloutResult(
        clusters_to_rollout=tuple(lists.to_rollout),
        clusters_timeout=tuple(lists.timed_out),
        max_failure_breach=breach,
        recheck_after_nanos=recheck_after(lists.to_rollout, now),
    )
