"""Shadow mode's report: does fleetplace pick the clusters OCM picked, placement by placement?

Two decisions are compared only once both have settled on the same inputs; until then the
placement is *not comparable*, with the reason:

- a side has no decision on the hub yet (OCM's pages, fleetplace's slices);
- fleetplace's decision is for an older generation of the Placement than the hub serves;
- OCM is between writes: its PlacementDecisions do not hold the `numberOfSelectedClusters` its
  Placement status reports (OCM rewrites its pages one by one).

Settled decisions *agree* when they hold the same clusters (pages and order aside: both sides
page by their own rules), else *disagree*, naming every cluster only one side chose and
fleetplace's explanation for it — the reason fleetplace gave when it chose the cluster, or why it
did not (`fleetplace explain` reports it for every cluster).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

__all__ = [
    "Agreement",
    "AgreementGauge",
    "ClusterDifference",
    "FleetplaceSide",
    "OcmSide",
    "Verdict",
    "compare",
    "explained",
    "fleetplace_side",
    "ocm_side",
    "render_status",
    "why_not",
]


class Verdict(StrEnum):
    AGREEING = "agreeing"
    DISAGREEING = "disagreeing"
    NOT_COMPARABLE = "not comparable"


@dataclass(frozen=True)
class FleetplaceSide:
    """fleetplace's decision as the bridge wrote it: the clusters with their reasons, and the
    Placement generation the scheduler evaluated."""

    clusters: Mapping[str, str]  # cluster → reason
    generation: int


@dataclass(frozen=True)
class OcmSide:
    """OCM's PlacementDecisions for the placement and its Placement status's count."""

    clusters: tuple[str, ...]
    number_selected: int | None  # status.numberOfSelectedClusters, None when OCM wrote no status


@dataclass(frozen=True)
class ClusterDifference:
    cluster: str
    chosen_by: str  # "fleetplace" or "ocm"
    explanation: str


@dataclass(frozen=True)
class Agreement:
    placement: str
    verdict: Verdict
    reason: str = ""  # why not comparable
    differences: tuple[ClusterDifference, ...] = field(default=())

    @property
    def has_ocm_only(self) -> bool:
        """A cluster only OCM chose is among the differences (fleetplace's reason for it is asked
        of an explanation, which costs a replay)."""
        return any(d.chosen_by == "ocm" for d in self.differences)


def compare(
    placement: str,
    fleetplace: FleetplaceSide | None,
    ocm: OcmSide | None,
    placement_generation: int,
    why_not: Mapping[str, str],
) -> Agreement:
    """The verdict for one placement. `why_not`: fleetplace's reason for not choosing a cluster
    (its filter verdict or its score below the cut), for the clusters only OCM chose."""
    if fleetplace is None:
        return Agreement(placement, Verdict.NOT_COMPARABLE, "fleetplace has written no decision yet")
    if ocm is None or ocm.number_selected is None:
        return Agreement(placement, Verdict.NOT_COMPARABLE, "OCM has written no decision yet")
    if fleetplace.generation != placement_generation:
        return Agreement(
            placement,
            Verdict.NOT_COMPARABLE,
            f"fleetplace decided generation {fleetplace.generation}, the Placement is at {placement_generation}",
        )
    if len(ocm.clusters) != ocm.number_selected:
        return Agreement(
            placement,
            Verdict.NOT_COMPARABLE,
            f"OCM is between writes: its PlacementDecisions hold {len(ocm.clusters)} clusters, "
            f"its Placement status says {ocm.number_selected}",
        )
    ours, theirs = set(fleetplace.clusters), set(ocm.clusters)
    if ours == theirs:
        return Agreement(placement, Verdict.AGREEING)
    differences = [
        ClusterDifference(c, "fleetplace", fleetplace.clusters[c] or "selected (no reason given)")
        for c in sorted(ours - theirs)
    ]
    differences += [
        ClusterDifference(
            c, "ocm", why_not.get(c, f"not selected; `fleetplace explain {placement}` says why")
        )
        for c in sorted(theirs - ours)
    ]
    return Agreement(placement, Verdict.DISAGREEING, differences=tuple(differences))


def explained(agreement: Agreement, reasons: Mapping[str, str]) -> Agreement:
    """The agreement with fleetplace's reason (`why_not`) for each cluster only OCM chose; a
    cluster fleetplace's explanation does not name is one it has never read."""
    if not agreement.has_ocm_only:
        return agreement
    return replace(
        agreement,
        differences=tuple(
            d
            if d.chosen_by != "ocm"
            else replace(d, explanation=reasons.get(d.cluster, "fleetplace knows no cluster of this name"))
            for d in agreement.differences
        ),
    )


def ocm_side(pages: Iterable[Mapping[str, Any]], placement: Mapping[str, Any]) -> OcmSide | None:
    """OCM's decision from its PlacementDecisions (those labelled with the placement, written by
    OCM, not by this bridge) and the Placement it writes the status of; None without pages."""
    pages = list(pages)
    if not pages:
        return None
    clusters = tuple(
        str(d.get("clusterName", "")) for p in pages for d in (p.get("status") or {}).get("decisions") or []
    )
    status = placement.get("status") or {}
    number = status.get("numberOfSelectedClusters")
    return OcmSide(tuple(c for c in clusters if c), int(number) if number is not None else None)


def fleetplace_side(slices: Iterable[Mapping[str, Any]], generation: int) -> FleetplaceSide | None:
    """fleetplace's decision from the SIG-MC slices the bridge keeps for the placement."""
    slices = list(slices)
    if not slices:
        return None
    clusters = {
        str(d["clusterProfileRef"]["name"]): str(d.get("reason", ""))
        for s in slices
        for d in s.get("decisions") or []
    }
    return FleetplaceSide(clusters, generation)


def why_not(explain: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """fleetplace's reason for every cluster it did not choose, from an explanation in the
    debugger's format (`fleetplace explain`, `simulate`): the filter and its verdict, or the
    total score and its parts when it lost on score."""
    out: dict[str, str] = {}
    for cluster, entry in explain.items():
        if "filteredBy" in entry:
            out[cluster] = f"filtered by {entry['filteredBy']}: {entry['reason']}"
        elif not entry.get("selected", False):
            parts = ", ".join(
                f"{name} {p['score']}×{p['weight']}" for name, p in (entry.get("prioritizers") or {}).items()
            )
            out[cluster] = f"scored {entry.get('total')} ({parts}), below the clusters chosen"
    return out


class AgreementGauge:
    """`fleetplace_hub_placements{agreement=...}`: how many placements are in each verdict."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._gauge = Gauge(
            "fleetplace_hub_placements",
            "Placements by agreement of fleetplace's decision with OCM's (shadow mode)",
            ["agreement"],
            registry=registry,
        )
        for verdict in Verdict:
            self._gauge.labels(agreement=verdict.value).set(0)

    def update(self, agreements: Iterable[Agreement]) -> None:
        counts = Counter(a.verdict for a in agreements)
        for verdict in Verdict:
            self._gauge.labels(agreement=verdict.value).set(counts[verdict])


def render_status(agreements: Iterable[Agreement]) -> str:
    """`fleetplace hub status`: one line per placement, then one indented line per difference."""
    lines: list[str] = []
    for a in sorted(agreements, key=lambda a: a.placement):
        line = f"{a.placement}  {a.verdict.value}"
        if a.reason:
            line += f": {a.reason}"
        lines.append(line)
        for d in a.differences:
            lines.append(f"    {d.cluster}  only {d.chosen_by}: {d.explanation}")
    return "\n".join(lines) + ("\n" if lines else "")
