"""The hub sink's plan for one placement: the objects the scheduler published, written in an order
that never loses a still-selected cluster, and nothing written when the hub already serves them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.services.hub.desired import (
    OCM,
    SIGMC,
    SliceFormat,
    placement_status,
    replace_desired,
    shadow_desired,
)
from fleetplace.services.hub.plan import Put, Remove, plan_placement
from fleetplace.shared.api.names import DNS1123_SUBDOMAIN_MAX, dns1123_subdomain_problem
from tests.hub.slices import CONFIGURED, SATISFIED, ocm_pages, served, sigmc_slices

KEY = "ns1/web"


def shadow(groups: Any, reasons: dict[str, str] | None = None, seq: int = 1) -> dict[str, dict[str, Any]]:
    return shadow_desired(sigmc_slices(KEY, groups, reasons, seq))[KEY]


def on_hub(objects: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: served(obj, i + 1) for i, (name, obj) in enumerate(objects.items())}


def clusters(n: int, start: int = 0) -> list[str]:
    return [f"c{i:03d}" for i in range(start, start + n)]


def test_shadow_slices_are_created_on_an_empty_hub_as_the_scheduler_built_them() -> None:
    desired = shadow([("", 0, clusters(150))], {"c000": "score 100"})
    ops = plan_placement(SIGMC, "web", {}, desired)
    assert [op.name for op in ops] == ["web-0", "web-1"]
    assert all(isinstance(op, Put) and op.served is None for op in ops)
    first = ops[0]
    assert isinstance(first, Put)
    assert first.desired["schedulerName"] == "fleetplace"
    assert first.desired["decisions"][0]["reason"] == "score 100"


def test_nothing_is_written_when_the_hub_serves_what_was_published() -> None:
    desired = shadow([("", 0, clusters(250))], {"c001": "why"})
    assert plan_placement(SIGMC, "web", on_hub(desired), desired) == []
    pages = replace_desired(ocm_pages(KEY, [("", 0, clusters(250))]), "uid-web")
    assert plan_placement(OCM, "web", on_hub(pages), pages) == []


def test_a_changed_reason_rewrites_only_its_slice() -> None:
    before = shadow([("", 0, clusters(150))], {"c120": "old"})
    after = shadow([("", 0, clusters(150))], {"c120": "new"})
    ops = plan_placement(SIGMC, "web", on_hub(before), after)
    assert [(type(op), op.name) for op in ops] == [(Put, "web-1")]


def test_replace_mode_pages_are_owned_by_the_placement_and_labelled_as_ocm_does() -> None:
    pages = replace_desired(
        ocm_pages(KEY, [("canary", 0, clusters(2)), ("", 1, clusters(101, 2))]), "uid-web"
    )
    assert list(pages) == ["web-decision-1", "web-decision-2", "web-decision-3"]
    second = pages["web-decision-2"]
    assert second["metadata"]["labels"] == {
        "cluster.open-cluster-management.io/placement": "web",
        "cluster.open-cluster-management.io/decision-group-name": "",
        "cluster.open-cluster-management.io/decision-group-index": "1",
    }
    assert second["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "name": "web",
            "uid": "uid-web",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert [d["clusterName"] for d in second["status"]["decisions"]] == clusters(100, 2)
    assert pages["web-decision-3"]["status"]["decisions"] == [{"clusterName": "c102", "reason": ""}]


def test_a_foreign_label_on_an_ocm_page_is_removed_as_ocm_removes_it() -> None:
    pages = replace_desired(ocm_pages(KEY, [("", 0, clusters(3))]), "uid-web")
    hub = on_hub(pages)
    hub["web-decision-1"]["metadata"]["labels"]["someone"] = "else"
    ops = plan_placement(OCM, "web", hub, pages)
    assert [op.name for op in ops] == ["web-decision-1"]


def test_a_shrunk_decision_writes_the_remaining_page_before_deleting_the_others() -> None:
    before = replace_desired(ocm_pages(KEY, [("", 0, clusters(250))]), "uid-web")
    after = replace_desired(ocm_pages(KEY, [("", 0, clusters(60, 190))]), "uid-web")
    ops = plan_placement(OCM, "web", on_hub(before), after)
    assert [(type(op).__name__, op.name) for op in ops] == [
        ("Put", "web-decision-1"),
        ("Remove", "web-decision-2"),
        ("Remove", "web-decision-3"),
    ]


def test_placement_status_lists_each_group_with_its_pages_and_cluster_count() -> None:
    pages = ocm_pages(KEY, [("canary", 0, clusters(2)), ("", 1, clusters(101, 2))])
    implied = {"numberOfSelectedClusters": 103, "conditions": [CONFIGURED, SATISFIED]}
    status = placement_status(pages, implied, None, "2026-12-01T00:00:00Z")
    assert status["numberOfSelectedClusters"] == 103
    assert status["decisionGroups"] == [
        {
            "decisionGroupIndex": 0,
            "decisionGroupName": "canary",
            "decisions": ["web-decision-1"],
            "clusterCount": 2,
        },
        {
            "decisionGroupIndex": 1,
            "decisionGroupName": "",
            "decisions": ["web-decision-2", "web-decision-3"],
            "clusterCount": 101,
        },
    ]
    assert [c["type"] for c in status["conditions"]] == ["PlacementMisconfigured", "PlacementSatisfied"]
    assert {c["lastTransitionTime"] for c in status["conditions"]} == {"2026-12-01T00:00:00Z"}


def test_a_condition_keeps_its_transition_time_unless_its_status_flips() -> None:
    pages = ocm_pages(KEY, [("", 0, [])])
    unmatched = {
        "type": "PlacementSatisfied",
        "status": "False",
        "reason": "NoManagedClusterMatched",
        "message": "No ManagedCluster matches any of the cluster predicate",
    }
    first = placement_status(pages, {"conditions": [CONFIGURED, SATISFIED]}, None, "t1")
    same = placement_status(pages, {"conditions": [CONFIGURED, SATISFIED]}, first, "t2")
    assert same == first
    flipped = placement_status(pages, {"conditions": [CONFIGURED, unmatched]}, first, "t3")
    times = {c["type"]: c["lastTransitionTime"] for c in flipped["conditions"]}
    assert times == {"PlacementMisconfigured": "t1", "PlacementSatisfied": "t3"}
    assert flipped["conditions"][1]["reason"] == "NoManagedClusterMatched"
    assert flipped["decisionGroups"] == [
        {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["web-decision-1"], "clusterCount": 0}
    ]


# ---- every served version during a move -----------------------------------------------------


def replay(
    fmt: SliceFormat, hub: dict[str, dict[str, Any]], desired: dict[str, dict[str, Any]]
) -> list[set[str]]:
    """The clusters in the served slices after each operation, as a watcher sees them; checks
    each write replaces the version it was planned against."""
    state = dict(hub)
    seen = [{c for o in state.values() for c in fmt.clusters(o)}]
    for op in plan_placement(fmt, "web", hub, desired):
        assert (
            (state.get(op.name) is None) == (op.served is None) if isinstance(op, Put) else op.name in state
        )
        if isinstance(op, Remove):
            del state[op.name]
        else:
            assert len(fmt.entries_of(op.desired)) <= fmt.capacity
            state[op.name] = op.desired
        seen.append({c for o in state.values() for c in fmt.clusters(o)})
    assert {n: fmt.owned(o) for n, o in state.items()} == {n: fmt.owned(o) for n, o in desired.items()}
    return seen


names = st.lists(st.sampled_from(clusters(320)), unique=True, max_size=320)


@st.composite
def decisions(draw: st.DrawFn) -> list[tuple[str, int, list[str]]]:
    chosen = draw(names)
    cut = draw(st.integers(min_value=0, max_value=len(chosen)))
    groups = [("canary", 0, sorted(chosen[:cut])), ("", 1, sorted(chosen[cut:]))]
    return [(n, i, cs) for n, i, cs in groups if cs] or [("", 0, [])]


@settings(max_examples=60, deadline=None)
@given(before=decisions(), after=decisions(), fmt=st.sampled_from([SIGMC, OCM]))
def test_no_version_served_during_a_move_lacks_a_cluster_that_stays_selected(
    before: list[tuple[str, int, list[str]]], after: list[tuple[str, int, list[str]]], fmt: SliceFormat
) -> None:
    if fmt is SIGMC:
        hub, desired = on_hub(shadow(before, seq=1)), shadow(after, seq=2)
    else:
        hub = on_hub(replace_desired(ocm_pages(KEY, before), "uid-web"))
        desired = replace_desired(ocm_pages(KEY, after, seq=2), "uid-web")
    staying = {c for _, _, cs in before for c in cs} & {c for _, _, cs in after for c in cs}
    for version in replay(fmt, hub, desired):
        assert staying <= version


def test_a_score_is_written_as_the_integer_the_crd_declares() -> None:
    page = ocm_pages(KEY, [("", 0, ["c1"])])[0]
    page["status"]["decisions"][0]["score"] = "87"
    (written,) = replace_desired([page], "uid-web").values()
    assert written["status"]["decisions"] == [{"clusterName": "c1", "reason": "", "score": 87}]
    assert page["status"]["decisions"][0]["score"] == "87"  # the exported page is left as it was


# ---- the names of the temporary slices -------------------------------------------------------

_ALNUM = frozenset("abcxyz0189")


@st.composite
def placement_names(draw: st.DrawFn) -> str:
    """A valid placement name (a DNS-1123 subdomain), most of them near the 253-character limit."""
    length = draw(st.integers(230, DNS1123_SUBDOMAIN_MAX) | st.integers(1, DNS1123_SUBDOMAIN_MAX))
    out: list[str] = []
    for i, c in enumerate(
        draw(st.lists(st.sampled_from(sorted(_ALNUM | {"-", "."})), min_size=length, max_size=length))
    ):
        previous = out[-1] if out else ""
        if (c == "." and previous not in _ALNUM) or (c == "-" and previous in ("", ".")) or i == length - 1:
            c = c if c in _ALNUM else "z"
        out.append(c)
    return "".join(out)


def crossing(name: str, fmt: SliceFormat) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Two full slices of placement `name` that swap a cluster each way: neither can hold the
    union of its old and new clusters, so the plan passes through a carry slice."""
    key = f"ns1/{name}"
    before = [("", 0, clusters(200))]
    after = [("", 0, [*clusters(99), "c100", "c099", *clusters(99, 101)])]
    if fmt is SIGMC:
        return on_hub(shadow_desired(sigmc_slices(key, before))[key]), shadow_desired(
            sigmc_slices(key, after, seq=2)
        )[key]
    served_pages = on_hub(replace_desired(ocm_pages(key, before), "uid"))
    return served_pages, replace_desired(ocm_pages(key, after, seq=2), "uid")


@settings(max_examples=80, deadline=None)
@given(name=placement_names(), fmt=st.sampled_from([SIGMC, OCM]))
def test_a_carry_slice_of_a_long_placement_name_is_a_valid_stable_name_of_its_own(
    name: str, fmt: SliceFormat
) -> None:
    assert dns1123_subdomain_problem(name) is None, name
    hub, desired = crossing(name, fmt)
    ops = plan_placement(fmt, name, hub, desired)
    carries = {op.name for op in ops} - set(hub) - set(desired)
    assert len(carries) == 1, [op.name for op in ops]  # the crossing needs exactly one
    (carry,) = carries
    assert dns1123_subdomain_problem(carry) is None, carry
    # named as the slices are: the next page or index after those in use
    following = (OCM is fmt and "-decision-3") or "-2"
    assert carry.endswith(following)
    assert carry.removesuffix(following) == next(iter(desired)).removesuffix(
        (OCM is fmt and "-decision-1") or "-0"
    )
    # the same name at every planning, and a Put then a Remove of it
    assert plan_placement(fmt, name, hub, desired) == ops
    assert [type(op) for op in ops if op.name == carry] == [Put, Remove]
