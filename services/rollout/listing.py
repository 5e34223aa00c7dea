"""A rollout's clusters as people read them: per cluster its group, status, since when, soak end
or deadline, and what happens next.

`fleetplace rollout status` prints the clusters its `rollout-state` record lists; the explorer
also draws the placed clusters the state does not list — those whose workload is done or skipped
and those still waiting for their turn — from the placement's decision groups and the deployers'
reports of the rollout's revision (docs/rollouts.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC
from typing import Any

from fleetplace.shared.bus.envelope import parse_time
from fleetplace.shared.rollout import RolloutStatus

# (list, state field): the lists of the rollout function, in the order they are shown
# (told: clusters the worker told and keeps in the set until their deployer's first report is
# read — not a list of the rollout function; docs/rollouts.md#told-clusters-stay-told)
LISTS = (
    ("rollout", "clustersToRollout"),
    ("told", "clustersAwaitingReport"),
    ("timeout", "clustersTimeOut"),
    ("removed", "clustersRemoved"),
)
STATUSES = tuple(s.value for s in RolloutStatus)


def to_the_second(text: str) -> str:
    """A time as every page and command shows it: RFC 3339 in UTC to the second, whatever
    precision the record carries (a deployer's report may have microseconds, a deadline none);
    text that is not a time is shown as it is."""
    try:
        t = parse_time(text)
    except ValueError:
        return text
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def group_label(name: str, index: int) -> str:
    """A decision group as every page and command shows it: `canary #0`, or `#1` for a group
    with no name (OCM's groups by cluster count)."""
    return f"{name} #{index}" if name else f"#{index}"


@dataclass(frozen=True, slots=True)
class ClusterLine:
    placement: str
    cluster: str
    group_name: str
    group_index: int
    status: str  # one of STATUSES
    since: str | None  # the status's lastTransitionTime
    until: str | None  # soak end or deadline (the function's timeOutTime)
    listed: str  # rollout, told, timeout, removed; "" for a placed cluster the state does not list
    next: str
    message: str | None = None  # the deployer's last message about it (its report of the revision)

    def to_json(self) -> dict[str, Any]:
        """The line as `rollout explain -o json` and the explorer's API print it."""
        return {
            "placement": self.placement,
            "cluster": self.cluster,
            "groupName": self.group_name,
            "groupIndex": self.group_index,
            "status": self.status,
            "since": self.since,
            "until": self.until,
            "listed": self.listed or None,
            "next": self.next,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Reported:
    """A deployer's report of the rollout's current revision on one cluster."""

    status: str
    since: str | None
    message: str | None = None


# maxFailures breached stops the rollout: a cluster not yet told is not told until it clears
NOT_TOLD_WHILE_BREACHED = "not told while maxFailures is breached"


def next_step(listed: str, entry: Mapping[str, Any], breach: bool = False) -> str:
    """What happens next to a cluster, in a phrase; `breach`: its placement's maxFailureBreach."""
    status, until = entry["status"], entry.get("timeOutTime")
    if listed == "removed":
        return "remove the workload (no longer placed)"
    if listed == "timeout":
        return "timed out: counts as a failure"
    if listed == "told":
        return "told: waits for its deployer's first report"
    if not listed:
        if status == "Succeeded":
            return "done"
        if status == "Skip":
            return "skipped"
        if status == "ToApply":
            return NOT_TOLD_WHILE_BREACHED if breach else "waits for its turn"
        return "nothing now"
    if status == "ToApply":
        return "apply now"
    if status == "Succeeded":
        return f"soaking until {until}, then done"
    if status == "Failed":
        # a Failed cluster counts as a failure and stays listed until its deadline (OCM)
        return (
            f"failed: counts as a failure; times out at {until}" if until else "failed: counts as a failure"
        )
    return f"waits for a report; times out at {until}" if until else "waits for a report"


def _line(placement: str, listed: str, entry: Mapping[str, Any], breach: bool = False) -> ClusterLine:
    return ClusterLine(
        placement,
        str(entry["clusterName"]),
        str(entry.get("groupName") or ""),
        int(entry.get("groupIndex") or 0),
        str(entry["status"]),
        entry.get("lastTransitionTime"),
        entry.get("timeOutTime"),
        listed,
        next_step(listed, entry, breach),
    )


def listed_lines(placement: Mapping[str, Any]) -> list[ClusterLine]:
    """The clusters one placementRef of a state lists: to roll out, told, timed out, removed."""
    name = str(placement["name"])
    return [_line(name, listed, e) for listed, field in LISTS for e in placement.get(field) or ()]


def placement_lines(
    placement: Mapping[str, Any],
    groups: Iterable[Mapping[str, Any]],
    reports: Mapping[str, Reported],
) -> list[ClusterLine]:
    """Every cluster of one placementRef: the placed ones in group order (as the state lists them,
    else as reported, else ToApply), then the removed ones, each with the message of its report.
    `groups` are the placement's decision groups (`groupName`, `groupIndex`, `clusters`);
    `reports` those of the rollout's revision."""
    lines = _placement_lines(placement, groups, reports)
    return [
        replace(line, message=report.message)
        if (report := reports.get(line.cluster)) is not None and report.message
        else line
        for line in lines
    ]


def _placement_lines(
    placement: Mapping[str, Any],
    groups: Iterable[Mapping[str, Any]],
    reports: Mapping[str, Reported],
) -> list[ClusterLine]:
    name = str(placement["name"])
    listed = {line.cluster: line for line in listed_lines(placement) if line.listed != "removed"}
    out = []
    seen: set[str] = set()
    for g in sorted(groups, key=lambda g: int(g.get("groupIndex") or 0)):
        for cluster in g.get("clusters") or ():
            if cluster in seen:
                continue
            seen.add(cluster)
            line = listed.get(cluster)
            if line is None:
                report = reports.get(cluster)
                entry = {
                    "clusterName": cluster,
                    "groupName": g.get("groupName") or "",
                    "groupIndex": g.get("groupIndex") or 0,
                    "status": report.status if report is not None else "ToApply",
                    "lastTransitionTime": report.since if report is not None else None,
                }
                line = _line(name, "", entry, bool(placement.get("maxFailureBreach")))
            out.append(line)
    # listed but not in the groups known here (the placement moved on since): still shown
    out.extend(line for c, line in listed.items() if c not in seen)
    out.extend(_line(name, "removed", e) for e in placement.get("clustersRemoved") or ())
    return out


def placement_counts(
    placement: Mapping[str, Any],
    groups: Iterable[Mapping[str, Any]],
    reports: Mapping[str, Reported],
) -> dict[str, int]:
    """`counts(placement_lines(placement, groups, reports))` without making the lines: what a
    list of every rollout needs."""
    listed = {
        str(e["clusterName"]): str(e["status"])
        for field in ("clustersToRollout", "clustersAwaitingReport", "clustersTimeOut")
        for e in placement.get(field) or ()
    }
    out = dict.fromkeys(STATUSES, 0)
    for status in listed.values():  # every cluster the state lists, placed or not
        out[status] = out.get(status, 0) + 1
    # the other placed clusters: as reported, else ToApply (set operations: 1,000 x 1,000 is a
    # million clusters for the list of every rollout)
    placed = set().union(*(g.get("clusters") or () for g in groups)) - listed.keys()
    reported = placed & reports.keys()
    for cluster in reported:
        status = reports[cluster].status
        out[status] = out.get(status, 0) + 1
    out["ToApply"] += len(placed) - len(reported)
    return out


def counts(lines: Sequence[ClusterLine]) -> dict[str, int]:
    """Placed clusters by status (removed ones are not placed)."""
    out = dict.fromkeys(STATUSES, 0)
    for line in lines:
        if line.listed != "removed":
            out[line.status] = out.get(line.status, 0) + 1
    return out
