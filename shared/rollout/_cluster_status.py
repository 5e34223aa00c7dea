"""The per-cluster rule: is a cluster still rolling out, finished, or timed out?"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ._durations import MAX_DURATION
from ._models import ClusterRolloutStatus, RolloutStatus
from ._time import Instant

FAILURES = (RolloutStatus.TIME_OUT, RolloutStatus.FAILED)


def _recheck_time(status: ClusterRolloutStatus, duration: int, now: Instant) -> Instant | None:
    """When `duration` after the last transition ends (counting from now without one); none for
    the largest duration, which stands for "no deadline"."""
    if duration == MAX_DURATION:
        return None
    start = status.last_transition_time if status.last_transition_time is not None else now
    return start.plus(duration)


@dataclass(slots=True)
class Lists:
    """The clusters gathered so far: to roll out, and timed out."""

    to_rollout: list[ClusterRolloutStatus] = field(default_factory=list)
    timed_out: list[ClusterRolloutStatus] = field(default_factory=list)


def assess(
    status: ClusterRolloutStatus, min_success_nanos: int, deadline_nanos: int, now: Instant, lists: Lists
) -> ClusterRolloutStatus:
    """Append `status` to the list it belongs in and return it as assessed.

    - ToApply is rolled out as it is.
    - Succeeded keeps rolling out while it soaks (until minSuccessTime after its transition).
    - TimeOut and Skip are left alone.
    - Anything else (Progressing, Failed) rolls out until its deadline and times out at it;
      the boundaries are strict: exactly at the deadline is timed out, at the soak end is done.
    """
    match status.status:
        case RolloutStatus.TO_APPLY:
            lists.to_rollout.append(status)
        case RolloutStatus.SUCCEEDED:
            soak_end = _recheck_time(status, min_success_nanos, now)
            if soak_end is not None and now < soak_end:
                status = replace(status, recheck_time=soak_end)
                lists.to_rollout.append(status)
        case RolloutStatus.TIME_OUT | RolloutStatus.SKIP:
            pass
        case _:
            deadline = _recheck_time(status, deadline_nanos, now)
            status = replace(status, recheck_time=deadline)
            if deadline is None or now < deadline:
                lists.to_rollout.append(status)
            else:
                status = replace(status, status=RolloutStatus.TIME_OUT)
                lists.timed_out.append(status)
    return status


_MIN_GO_DURATION = -(1 << 63)


def recheck_after(to_rollout: list[ClusterRolloutStatus], now: Instant) -> int | None:
    """Nanoseconds to the earliest recheck time still ahead, over the clusters to roll out."""
    soonest: int | None = None
    for status in to_rollout:
        if status.recheck_time is None:
            continue
        # A time difference saturates at the ends of the duration range, as in Go.
        wait = min(max(status.recheck_time.unix_nanos - now.unix_nanos, _MIN_GO_DURATION), MAX_DURATION)
        if wait > 0 and (soonest is None or wait < soonest):
            soonest = wait
    return soonest
