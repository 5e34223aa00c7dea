"""Progressive rollout cluster by cluster (the All and Progressive strategies)."""

from __future__ import annotations

from collections.abc import Sequence

from ._cluster_status import FAILURES, Lists, assess, recheck_after
from ._groups import GroupMap
from ._models import ClusterRolloutStatus, RolloutResult, RolloutStatus
from ._sorting import go_sort_slice
from ._time import Instant


def progressive_per_cluster(
    groups: GroupMap,
    size: int,
    max_failures: int,
    min_success_nanos: int,
    deadline_nanos: int,
    statuses: Sequence[ClusterRolloutStatus],
    now: Instant,
) -> RolloutResult:
    """Fill up to `size` rollout slots: existing statuses first, then new clusters, by name.

    Existing statuses hold slots while they roll out (ToApply, Progressing and Failed before the
    deadline, Succeeded while soaking); the scan stops as soon as the slots are full, so later
    failures go uncounted. Once failures exceed `max_failures`, ToApply statuses are dropped and
    no new cluster is added.
    """
    lists = Lists()
    existing: set[str] = set()
    failures = 0
    breach = False

    def result(breached: bool) -> RolloutResult:
        return RolloutResult(
            clusters_to_rollout=tuple(lists.to_rollout),
            clusters_timeout=tuple(lists.timed_out),
            max_failure_breach=breached,
            recheck_after_nanos=recheck_after(lists.to_rollout, now),
        )

    for status in go_sort_slice(statuses, lambda a, b: a.cluster_name < b.cluster_name):
        if status.cluster_name == "":
            continue
        existing.add(status.cluster_name)
        if not breach or status.status != RolloutStatus.TO_APPLY:
            status = assess(status, min_success_nanos, deadline_nanos, now, lists)
        if status.status in FAILURES:
            failures += 1
            breach = failures > max_failures
        if len(lists.to_rollout) >= size:
            return result(breach)

    if breach:
        return result(True)

    group_key_of = groups.group_key_of()
    for cluster in sorted(groups.clusters()):
        if cluster in existing:
            continue
        lists.to_rollout.append(ClusterRolloutStatus(cluster, RolloutStatus.TO_APPLY, group_key_of[cluster]))
        if len(lists.to_rollout) >= size:
            break
    return result(False)
