"""What the pages show, shaped from the store: pure functions, `now` passed in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from fleetplace.services.auditor.history import DecisionRecord
from fleetplace.shared.api.ocm import Placement, Taint, Toleration
from fleetplace.shared.bus.envelope import parse_time
from fleetplace.shared.placement.fleet import Fleet
from fleetplace.shared.placement.plugins.taints import matched_by_toleration

# ---- the placements list --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlacementRow:
    key: str
    namespace: str
    name: str
    labels: Mapping[str, str]
    selected: int
    wanted: int | None  # None: every cluster that passes
    conditions: tuple[Mapping[str, str], ...]
    groups: tuple[Mapping[str, Any], ...]
    changed_at: str | None
    trigger: str
    seq: int
    deleted: bool

    @property
    def misconfigured(self) -> str | None:
        """The message of a PlacementMisconfigured=True condition."""
        for c in self.conditions:
            if c.get("type") == "PlacementMisconfigured" and c.get("status") == "True":
                return str(c.get("message", ""))
        return None

    def condition_names(self) -> set[str]:
        """`Satisfied`, `Unsatisfied`, `Misconfigured`, `Deleted`: what the condition filter matches."""
        names = set()
        for c in self.conditions:
            kind = str(c.get("type", "")).removeprefix("Placement")
            if kind == "Satisfied":
                names.add("Satisfied" if c.get("status") == "True" else "Unsatisfied")
            elif c.get("status") == "True":
                names.add(kind)
        if self.deleted:
            names.add("Deleted")
        return names

    def to_json(self) -> dict[str, Any]:
        return {
            "placement": self.key,
            "namespace": self.namespace,
            "name": self.name,
            "labels": dict(self.labels),
            "selected": self.selected,
            "wanted": self.wanted,
            "conditions": [dict(c) for c in self.conditions],
            "groups": [dict(g) for g in self.groups],
            "changedAt": self.changed_at,
            "trigger": self.trigger,
            "seq": self.seq,
            "deleted": self.deleted,
        }


def trigger_text(record: DecisionRecord) -> str:
    trigger = record.trigger
    kind, key = trigger.get("kind"), trigger.get("key")
    return f"{kind}:{key}" if key else str(kind or "")


def placement_row(key: str, placement: Placement | None, latest: DecisionRecord | None) -> PlacementRow:
    namespace, _, name = key.partition("/")
    value: Mapping[str, Any] = latest.value if latest is not None else {}
    status = value.get("status") or {}
    return PlacementRow(
        key=key,
        namespace=namespace,
        name=name,
        labels=placement.metadata.labels if placement is not None else {},
        selected=len(value.get("decisions") or ()),
        wanted=placement.spec.number_of_clusters if placement is not None else None,
        conditions=tuple(status.get("conditions") or ()),
        groups=tuple(value.get("groups") or ()),
        changed_at=latest.evaluated_at if latest is not None else None,
        trigger=trigger_text(latest) if latest is not None else "",
        seq=latest.seq if latest is not None else 0,
        deleted=latest.deleted if latest is not None else False,
    )


@dataclass(frozen=True, slots=True)
class PlacementFilter:
    namespace: str = ""
    label: str = ""  # key or key=value
    condition: str = ""  # Satisfied, Unsatisfied, Misconfigured, Deleted
    query: str = ""  # a substring of the key

    def admits(self, row: PlacementRow) -> bool:
        if self.namespace and row.namespace != self.namespace:
            return False
        if self.label:
            k, sep, v = self.label.partition("=")
            if k not in row.labels or (sep and row.labels[k] != v):
                return False
        if self.condition and self.condition not in row.condition_names():
            return False
        return not self.query or self.query.lower() in row.key.lower()


# ---- one placement: verdicts per cluster ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterVerdict:
    cluster: str
    verdict: str  # selected, outranked, filtered
    why: str  # the filter and its reason, or the spread term that kept it out
    total: int | None
    parts: tuple[tuple[str, int, int], ...]  # (prioritizer, score, weight)
    joined: bool = False  # not in the fleet at the decision: its verdict is the evaluation now


def cluster_verdicts(
    explain: Mapping[str, Mapping[str, Any]], joined: Mapping[str, Mapping[str, Any]] | None = None
) -> list[ClusterVerdict]:
    """One verdict per cluster of the fleet: selected first, then outranked (both by total, highest
    first), then filtered, each by name. `joined`: an evaluation now, whose clusters that
    `explain` does not know (they joined the fleet after it) are added, marked."""
    out = []
    later = {c: ex for c, ex in (joined or {}).items() if c not in explain}
    for cluster, ex in [*explain.items(), *later.items()]:
        new = cluster in later
        if "filteredBy" in ex:
            why = f"{ex['filteredBy']}: {ex['reason']}"
            out.append(ClusterVerdict(cluster, "filtered", why, None, (), new))
            continue
        parts = tuple((p, int(v["score"]), int(v["weight"])) for p, v in ex["prioritizers"].items())
        verdict = "selected" if ex["selected"] else "outranked"
        why = str(ex.get("spread") or "")
        out.append(ClusterVerdict(cluster, verdict, why, int(ex["total"]), parts, new))
    rank = {"selected": 0, "outranked": 1, "filtered": 2}
    out.sort(key=lambda v: (rank[v.verdict], -(v.total or 0), v.cluster))
    return out


# ---- one placement: tolerations and the next requeue ----------------------------------------


@dataclass(frozen=True, slots=True)
class TolerationExpiry:
    toleration: str
    cluster: str
    taint: str
    deadline: datetime | None  # None: tolerated for good
    decided: bool  # the cluster is in the decision now


def _toleration_text(t: Toleration) -> str:
    seconds = "" if t.toleration_seconds is None else f" for {t.toleration_seconds} s"
    what = t.key or "*"
    if t.operator != "Exists":
        what += f"={t.value}"
    return f"{what}{':' + t.effect if t.effect else ''}{seconds}"


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"


def toleration_expiries(
    placement: Placement, fleet: Fleet, decided: frozenset[str], now: datetime
) -> list[TolerationExpiry]:
    """Each toleration with the taints it matches on the fleet's clusters and when that runs out."""
    out = []
    tainted = [info for info in fleet.clusters.values() if info.taints]
    for t in placement.spec.tolerations:
        forever = t.model_copy(update={"toleration_seconds": None})
        for info in tainted:
            for taint in info.taints:
                matched, _ = matched_by_toleration(taint, [forever], now)
                if not matched:
                    continue
                deadline = None
                if t.toleration_seconds is not None:
                    added = taint.time_added or datetime.min.replace(tzinfo=now.tzinfo)
                    deadline = added + timedelta(seconds=t.toleration_seconds)
                out.append(
                    TolerationExpiry(
                        _toleration_text(t), info.name, _taint_text(taint), deadline, info.name in decided
                    )
                )
    out.sort(key=lambda e: (e.deadline is None, e.deadline or now, e.cluster))
    return out


def requeue_reason(
    latest: DecisionRecord | None,
    placement: Placement | None,
    fleet: Fleet,
    expiries: Sequence[TolerationExpiry],
    addon_resync_s: float,
) -> tuple[str | None, str]:
    """(nextRequeueAt as recorded, why): a toleration running out, an AddOn score's validUntil,
    or the AddOn score resync (docs/semantics.md lists the three timers)."""
    if latest is None or placement is None:
        return None, "no requeue: the placement does not exist"
    at_text = latest.value.get("nextRequeueAt")
    if not isinstance(at_text, str):
        return None, "no timer: the next evaluation waits for a change of its inputs"
    at = parse_time(at_text)
    for e in expiries:
        if e.decided and e.deadline is not None and abs((e.deadline - at).total_seconds()) < 1:
            return at_text, f"the toleration of {e.taint} on {e.cluster} runs out"
    resources = {
        c.score_coordinate.add_on.resource_name
        for c in placement.spec.prioritizer_policy.configurations
        if c.score_coordinate is not None and c.score_coordinate.add_on is not None
    }
    for (namespace, resource), score in fleet.scores.items():
        until = score.status.valid_until
        if resource in resources and until is not None and abs((until - at).total_seconds()) < 1:
            return at_text, f"the AddOn score {namespace}/{resource} is valid until then"
    if resources:
        return at_text, f"the AddOn score resync (every {addon_resync_s:g} s)"
    return at_text, "a timer of the scheduler"
