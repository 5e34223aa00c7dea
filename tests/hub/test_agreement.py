"""Shadow mode's agreement report: agreeing, a planted disagreement named cluster by cluster with
fleetplace's explanation, and each reason a placement is not comparable yet."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from fleetplace.services.hub.agreement import (
    AgreementGauge,
    ClusterDifference,
    Verdict,
    compare,
    explained,
    fleetplace_side,
    ocm_side,
    render_status,
    why_not,
)
from tests.hub.slices import ocm_pages, sigmc_slices

KEY = "ns1/web"


def ocm(clusters: list[str], selected: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What OCM's controller serves: its pages and the Placement with its status."""
    placement: dict[str, Any] = {"metadata": {"name": "web", "namespace": "ns1", "generation": 2}}
    if selected is not None or clusters:
        placement["status"] = {"numberOfSelectedClusters": len(clusters) if selected is None else selected}
    return ocm_pages(KEY, [("", 0, clusters)]), placement


def ours(clusters: list[str], reasons: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return sigmc_slices(KEY, [("", 0, clusters)], reasons)


def verdict_of(
    fleetplace: list[dict[str, Any]], hub: tuple[list[dict[str, Any]], dict[str, Any]], generation: int = 2
) -> Any:
    pages, placement = hub
    return compare(
        KEY,
        fleetplace_side(fleetplace, generation),
        ocm_side(pages, placement),
        placement["metadata"]["generation"],
        {"c9": "filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated"},
    )


def test_the_same_clusters_paged_differently_agree() -> None:
    clusters = [f"c{i:03d}" for i in range(150)]
    agreement = verdict_of(ours(clusters), ocm(list(reversed(clusters))))
    assert agreement.verdict is Verdict.AGREEING
    assert agreement.differences == ()


def test_a_planted_disagreement_names_each_cluster_and_fleetplaces_explanation() -> None:
    agreement = verdict_of(
        ours(["c1", "c2", "c3"], {"c3": "score 80 (ResourceAllocatableMemory)"}),
        ocm(["c1", "c2", "c9"]),
    )
    assert agreement.verdict is Verdict.DISAGREEING
    assert agreement.differences == (
        ClusterDifference("c3", "fleetplace", "score 80 (ResourceAllocatableMemory)"),
        ClusterDifference(
            "c9", "ocm", "filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated"
        ),
    )
    assert render_status([agreement]) == (
        "ns1/web  disagreeing\n"
        "    c3  only fleetplace: score 80 (ResourceAllocatableMemory)\n"
        "    c9  only ocm: filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated\n"
    )


def test_a_decision_for_an_older_generation_is_not_compared() -> None:
    agreement = verdict_of(ours(["c1"]), ocm(["c2"]), generation=1)
    assert agreement.verdict is Verdict.NOT_COMPARABLE
    assert agreement.reason == "fleetplace decided generation 1, the Placement is at 2"


def test_ocm_between_writes_is_not_compared() -> None:
    agreement = verdict_of(ours(["c1", "c2"]), ocm(["c1"], selected=2))
    assert agreement.verdict is Verdict.NOT_COMPARABLE
    assert "its PlacementDecisions hold 1 clusters, its Placement status says 2" in agreement.reason


def test_a_side_without_decisions_is_not_compared() -> None:
    pages, placement = ocm(["c1"])
    missing_ocm = compare(KEY, fleetplace_side(ours(["c1"]), 2), ocm_side([], placement), 2, {})
    assert (missing_ocm.verdict, missing_ocm.reason) == (
        Verdict.NOT_COMPARABLE,
        "OCM has written no decision yet",
    )
    missing_ours = compare(KEY, fleetplace_side([], 2), ocm_side(pages, placement), 2, {})
    assert missing_ours.reason == "fleetplace has written no decision yet"


def test_the_gauge_counts_placements_per_verdict() -> None:
    registry = CollectorRegistry()
    gauge = AgreementGauge(registry)
    gauge.update(
        [
            verdict_of(ours(["c1"]), ocm(["c1"])),
            verdict_of(ours(["c1"]), ocm(["c2"])),
            verdict_of(ours(["c1"]), ocm(["c1"]), generation=1),
            verdict_of(ours(["c3"]), ocm(["c3"])),
        ]
    )

    def value(verdict: str) -> float | None:
        return registry.get_sample_value("fleetplace_hub_placements", {"agreement": verdict})

    assert (value("agreeing"), value("disagreeing"), value("not comparable")) == (2, 1, 1)


def test_why_not_gives_the_filter_verdict_or_the_score_that_lost() -> None:
    explained = {
        "c1": {"total": 200, "selected": True, "prioritizers": {"Balance": {"score": 100, "weight": 1}}},
        "c2": {"filteredBy": "TaintToleration", "reason": "taint gpu=broken:NoSelect is not tolerated"},
        "c3": {
            "total": 50,
            "selected": False,
            "prioritizers": {"Balance": {"score": 50, "weight": 1}, "Steady": {"score": 0, "weight": 1}},
        },
    }
    assert why_not(explained) == {
        "c2": "filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated",
        "c3": "scored 50 (Balance 50×1, Steady 0×1), below the clusters chosen",
    }


def test_explained_gives_each_cluster_only_ocm_chose_fleetplaces_reason_and_leaves_the_rest() -> None:
    agreement = compare(
        KEY,
        fleetplace_side(ours(["c1", "c3"], {"c3": "score 80"}), 2),
        ocm_side(*ocm(["c1", "c8", "c9"])),
        2,
        {},
    )
    assert [d.explanation for d in agreement.differences if d.chosen_by == "ocm"] == [
        "not selected; `fleetplace explain ns1/web` says why"
    ] * 2
    reasons = {"c9": "filtered by TaintToleration: taint gpu=broken:NoSelect is not tolerated"}
    assert explained(agreement, reasons).differences == (
        ClusterDifference("c3", "fleetplace", "score 80"),
        ClusterDifference("c8", "ocm", "fleetplace knows no cluster of this name"),
        ClusterDifference("c9", "ocm", reasons["c9"]),
    )
    agreeing = verdict_of(ours(["c1"]), ocm(["c1"]))
    assert explained(agreeing, reasons) is agreeing
