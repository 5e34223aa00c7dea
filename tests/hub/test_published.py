"""The sink's view of the topics: the scheduler's slices and pages per placement, duplicates and
tombstones applied, equal to what `fleetplace export` prints."""

from __future__ import annotations

from fleetplace.services.hub.published import PublishedDecisions
from tests.hub.slices import diff, ocm_pages, sigmc_slices

KEY = "ns1/web"


def test_slices_are_kept_per_placement_and_a_tombstone_deletes_one() -> None:
    published = PublishedDecisions()
    for s in sigmc_slices(KEY, [("", 0, [f"c{i:03d}" for i in range(150)])]):
        assert published.apply_slice(f"ns1/{s['metadata']['name']}", s) == KEY
    published.apply_slice("ns1/other-0", sigmc_slices("ns1/other", [("", 0, ["c1"])])[0])
    assert list(published.shadow(KEY)) == ["web-0", "web-1"]
    assert published.apply_slice("ns1/web-1", None) == KEY
    assert list(published.shadow(KEY)) == ["web-0"]
    assert published.placements() == ["ns1/other", KEY]


def test_replace_state_is_the_exported_pages_and_the_status_of_the_last_decision() -> None:
    published = PublishedDecisions()
    groups = [("canary", 0, ["c1", "c2"]), ("", 1, ["c3"])]
    assert published.apply_decision(KEY, diff(KEY, [("", 0, ["c9"])], seq=1).to_value()) == KEY
    assert published.apply_decision(KEY, diff(KEY, groups, seq=2).to_value()) == KEY
    assert (
        published.apply_decision(KEY, diff(KEY, [("", 0, ["c9"])], seq=2).to_value()) is None
    )  # a duplicate
    state = published.replace(KEY)
    assert state is not None
    assert state.pages == ocm_pages(KEY, groups, seq=2)
    assert state.status["numberOfSelectedClusters"] == 3
    assert state.evaluated_at == "2026-12-01T00:00:00Z"
    assert published.replace("ns1/unknown") is None


def test_a_shortened_placement_label_is_read_back_to_the_whole_name() -> None:
    """A placement name too long for a label value: the scheduler shortens the label and keeps
    the whole name in an annotation; the sink keys by the name and selects by the label."""
    long_name = "web-" + "x" * 70
    key = f"ns1/{long_name}"
    (s,) = sigmc_slices(key, [("", 0, ["c1"])])
    s["metadata"]["labels"]["cluster.open-cluster-management.io/placement"] = "web-xxxx-0123456789"
    s["metadata"].setdefault("annotations", {})["fleetplace.dev/placement"] = long_name
    published = PublishedDecisions()
    assert published.apply_slice(f"ns1/{s['metadata']['name']}", s) == key
    assert list(published.shadow(key).values()) == [s]
    assert published.label(key) == "web-xxxx-0123456789"
    assert published.label("ns1/short") == "short"
