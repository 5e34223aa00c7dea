"""Decision groups and PlacementDecision pages."""

from __future__ import annotations

import pytest

from fleetplace.shared.placement import ScheduleResult
from fleetplace.shared.placement.groups import GroupError, group_length

from .builders import (
    NO_BINDINGS,
    NO_MATCH,
    addon,
    addon_score,
    binding,
    bound_set,
    cluster,
    expr,
    global_set,
    groups_of,
    misconfigured,
    names,
    policy,
    satisfied,
    schedule_spec,
)

# -- group length ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "length"),
    [
        (3, 10, 3),
        (None, 10, 10),  # absent: one chunk per group
        (0, 10, 10),
        (-2, 10, 10),  # integers are not range-checked; <= 0 falls back to total
        (11, 10, 10),  # > total falls back to total
        ("25%", 4, 1),
        ("25%", 3, 1),  # ceil(0.75)
        ("50%", 5, 3),  # ceil(2.5)
        ("100%", 7, 7),
        ("7%", 100, 8),  # (7 / 100) × 100 = 7.000000000000001 in doubles
        ("28%", 25, 8),
        ("14%", 50, 8),
        ("12.5%", 8, 1),  # fractions are accepted
        ("1_0%", 20, 2),  # Go float syntax: underscores between digits
        ("0x1p4%", 100, 16),  # Go float syntax: hex floats
        ("1e1%", 100, 10),
        ("5.%", 100, 5),
        (".5%", 1000, 5),
        ("+20%", 10, 2),
        ("0%", 10, 10),  # zero falls back to total
        ("-5%", 10, 10),  # negative falls back to total
        ("150%", 10, 10),  # more than total falls back to total
        ("1e-400%", 10, 10),  # underflows to 0
        ("NaN%", 10, 10),  # non-finite falls back to total
        ("nan%", 10, 10),
        ("Inf%", 10, 10),
        ("-Inf%", 10, 10),
        ("+infinity%", 10, 10),
        ("1e300%", 10, 10),  # finite but far beyond int64
        ("25%", 0, 0),
    ],
)
def test_group_length(value: int | str | None, total: int, length: int) -> None:
    assert group_length(value, total) == length


@pytest.mark.parametrize(
    "value",
    [
        "5",
        "3",
        " 5%",
        "5% ",
        "5 %",
        "x%",
        "%",
        "5%%",
        "1__0%",
        "_10%",
        "10_%",
        "0x10%",
        "1e400%",
        "1,5%",
        "abc",
    ],
)
def test_group_length_misconfigurations(value: str) -> None:
    with pytest.raises(GroupError) as e:
        group_length(value, 10)
    assert str(e.value) == f"{value} invalid type: string is not a percentage"


# -- group construction ---------------------------------------------------------------------------


def groups_spec(*groups: dict[str, object], size: object = None, **spec: object) -> dict[str, object]:
    strategy: dict[str, object] = {"decisionGroups": list(groups)}
    if size is not None:
        strategy["clustersPerDecisionGroup"] = size
    return {"decisionStrategy": {"groupStrategy": strategy}, **spec}


def group(name: str, match_labels: dict[str, str] | None = None, **selector: object) -> dict[str, object]:
    s: dict[str, object] = dict(selector)
    if match_labels is not None:
        s["labelSelector"] = {"matchLabels": match_labels}
    return {"groupName": name, "groupClusterSelector": s}


CLOUDS = bound_set(
    cluster("c1", labels={"cloud": "Amazon"}),
    cluster("c2", labels={"cloud": "Amazon"}),
    cluster("c3", labels={"cloud": "Azure"}),
    cluster("c4", labels={"cloud": "Azure"}),
)


def test_e12_canary_25_percent() -> None:
    result = schedule_spec(groups_spec(group("canary", {"cloud": "Azure"}), size="25%"), *CLOUDS)
    assert groups_of(result) == [
        (0, "canary", ["c3"]),
        (1, "canary", ["c4"]),
        (2, "", ["c1"]),
        (3, "", ["c2"]),
    ]
    assert [(p.name, p.group_name, p.group_index, p.clusters) for p in result.pages] == [
        ("placement1-decision-1", "canary", 0, ("c3",)),
        ("placement1-decision-2", "canary", 1, ("c4",)),
        ("placement1-decision-3", "", 2, ("c1",)),
        ("placement1-decision-4", "", 3, ("c2",)),
    ]
    assert result.decisions == ("c3", "c4", "c1", "c2")


def test_e12_two_named_groups_without_size() -> None:
    objects = bound_set(
        cluster("c1", labels={"cloud": "Amazon"}),
        cluster("c2", labels={"cloud": "Amazon"}),
        cluster("c3", labels={"cloud": "Azure"}),
    )
    result = schedule_spec(
        groups_spec(group("group1", {"cloud": "Amazon"}), group("group2", {"cloud": "Azure"})), *objects
    )
    assert groups_of(result) == [(0, "group1", ["c1", "c2"]), (1, "group2", ["c3"])]


def test_e12_a_group_matching_nothing_produces_no_group() -> None:
    objects = bound_set(*(cluster(n, labels={"cloud": "Amazon"}) for n in ("c1", "c2", "c3")))
    result = schedule_spec(groups_spec(group("azure", {"cloud": "Azure"})), *objects)
    assert groups_of(result) == [(0, "", ["c1", "c2", "c3"])]


def test_e12_25_percent_of_three_is_three_groups_of_one() -> None:
    objects = bound_set(cluster("c1"), cluster("c2"), cluster("c3"))
    result = schedule_spec(groups_spec(size="25%"), *objects)
    assert groups_of(result) == [(0, "", ["c1"]), (1, "", ["c2"]), (2, "", ["c3"])]


def e13(canary: int, other: int) -> list[dict[str, object]]:
    clusters = [cluster(f"canary{i}", clusterset=None, labels={"vendor": "openShift"}) for i in range(canary)]
    clusters += [cluster(f"other{i}", clusterset=None) for i in range(other)]
    return [global_set(), binding("global"), *clusters]


def test_e13_groups_follow_membership() -> None:
    spec = groups_spec(group("canary", {"vendor": "openShift"}), size=2)
    assert groups_of(schedule_spec(spec, *e13(2, 3))) == [
        (0, "canary", ["canary0", "canary1"]),
        (1, "", ["other0", "other1"]),
        (2, "", ["other2"]),
    ]
    shrunk = schedule_spec(spec, *e13(1, 2))
    assert groups_of(shrunk) == [(0, "canary", ["canary0"]), (1, "", ["other0", "other1"])]
    assert [p.name for p in shrunk.pages] == ["placement1-decision-1", "placement1-decision-2"]
    assert groups_of(schedule_spec(spec, *e13(2, 2))) == [
        (0, "canary", ["canary0", "canary1"]),
        (1, "", ["other0", "other1"]),
    ]
    assert len(schedule_spec(spec, *e13(2, 3)).groups) == 3
    gone = schedule_spec(spec)
    assert satisfied(gone) == NO_BINDINGS
    assert groups_of(gone) == [(0, "", [])]
    assert [(p.name, p.clusters) for p in gone.pages] == [("placement1-decision-1", ())]


def test_groups_are_cut_by_name_not_by_score() -> None:
    scores = [addon_score(c, "r", {"s": v}) for c, v in (("c1", 1), ("c2", 3), ("c3", 2), ("c4", 4))]
    result = schedule_spec(
        groups_spec(size=2, prioritizerPolicy=policy("Exact", addon("r", "s", 1))),
        *bound_set(*(cluster(f"c{i}") for i in range(1, 5))),
        *scores,
    )
    assert result.selected == ("c4", "c2", "c3", "c1")
    assert groups_of(result) == [(0, "", ["c1", "c2"]), (1, "", ["c3", "c4"])]


def test_a_cluster_matching_several_groups_goes_to_the_first() -> None:
    result = schedule_spec(
        groups_spec(group("azure", {"cloud": "Azure"}), group("all"), group("amazon", {"cloud": "Amazon"})),
        *CLOUDS,
    )
    assert groups_of(result) == [(0, "azure", ["c3", "c4"]), (1, "all", ["c1", "c2"])]


def test_groups_only_see_selected_clusters() -> None:
    result = schedule_spec(groups_spec(group("azure", {"cloud": "Azure"}), numberOfClusters=2), *CLOUDS)
    assert result.selected == ("c1", "c2")
    assert groups_of(result) == [(0, "", ["c1", "c2"])]


def test_group_claim_selector() -> None:
    objects = bound_set(
        cluster("c1", claims={"region": "eu"}), cluster("c2", claims={"region": "us"}), cluster("c3")
    )
    spec = groups_spec(group("eu", claimSelector={"matchExpressions": [expr("region", "In", "eu")]}))
    assert groups_of(schedule_spec(spec, *objects)) == [(0, "eu", ["c1"]), (1, "", ["c2", "c3"])]


def test_group_label_and_claim_selectors_are_anded() -> None:
    objects = bound_set(
        cluster("c1", labels={"cloud": "Azure"}, claims={"region": "eu"}),
        cluster("c2", labels={"cloud": "Azure"}, claims={"region": "us"}),
    )
    g = group(
        "eu-azure", {"cloud": "Azure"}, claimSelector={"matchExpressions": [expr("region", "In", "eu")]}
    )
    assert groups_of(schedule_spec(groups_spec(g), *objects)) == [(0, "eu-azure", ["c1"]), (1, "", ["c2"])]


def test_groups_with_the_same_name_are_separate_groups() -> None:
    result = schedule_spec(
        groups_spec(group("g", {"cloud": "Azure"}), group("g", {"cloud": "Amazon"})), *CLOUDS
    )
    assert groups_of(result) == [(0, "g", ["c3", "c4"]), (1, "g", ["c1", "c2"])]


def test_nothing_selected_gives_one_empty_group() -> None:
    result = schedule_spec(
        groups_spec(group("azure", {"cloud": "Azure"}), size=1, numberOfClusters=0), *CLOUDS
    )
    assert groups_of(result) == [(0, "", [])]
    assert [(p.name, p.group_name, p.group_index, p.clusters) for p in result.pages] == [
        ("placement1-decision-1", "", 0, ())
    ]


def emptied_by_group_misconfiguration(result: ScheduleResult, message: str) -> None:
    """docs/compatibility.md: OCM deletes every PD but keeps the count; fleetplace empties
    the selection like every other misconfiguration: one empty group, 0 selected."""
    assert misconfigured(result) == ("True", "Misconfigured", message)
    assert groups_of(result) == [(0, "", [])]
    assert [(p.name, p.clusters) for p in result.pages] == [("placement1-decision-1", ())]
    assert result.decisions == ()
    assert result.number_selected == 0
    assert satisfied(result) == NO_MATCH


def test_string_integer_size_is_misconfigured() -> None:
    result = schedule_spec(groups_spec(size="5"), *CLOUDS)
    emptied_by_group_misconfiguration(result, ":5 invalid type: string is not a percentage")


def test_integer_size_is_fine() -> None:
    result = schedule_spec(groups_spec(size=3), *CLOUDS)
    assert misconfigured(result)[0] == "False"
    assert groups_of(result) == [(0, "", ["c1", "c2", "c3"]), (1, "", ["c4"])]


def test_group_selector_error_is_misconfigured_even_after_good_groups() -> None:
    bad = {
        "groupName": "bad",
        "groupClusterSelector": {"labelSelector": {"matchExpressions": [expr("a", "Gt", "1")]}},
    }
    result = schedule_spec(groups_spec(group("azure", {"cloud": "Azure"}), bad, group("rest")), *CLOUDS)
    emptied_by_group_misconfiguration(result, ':"Gt" is not a valid label selector operator')


def test_group_claim_selector_error_is_misconfigured() -> None:
    bad = {
        "groupName": "bad",
        "groupClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
    }
    result = schedule_spec(groups_spec(bad), *CLOUDS)
    emptied_by_group_misconfiguration(
        result, ":values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    )


def test_group_misconfiguration_replaces_the_scheduler_status() -> None:
    result = schedule_spec(groups_spec(size="5", prioritizerPolicy=policy("Foo")), *CLOUDS)
    emptied_by_group_misconfiguration(result, ":5 invalid type: string is not a percentage")


# -- pagination -----------------------------------------------------------------------------------


def test_e14_101_clusters_make_two_pages() -> None:
    cluster_names = names("cluster", 101)
    result = schedule_spec({}, *bound_set(*(cluster(n) for n in cluster_names)))
    assert [(p.name, len(p.clusters)) for p in result.pages] == [
        ("placement1-decision-1", 100),
        ("placement1-decision-2", 1),
    ]
    assert len(result.groups) == 1
    assert len(result.groups[0].clusters) == 101


def test_e14_pages_are_filled_in_byte_wise_name_order() -> None:
    cluster_names = names("cluster", 128)
    result = schedule_spec({}, *bound_set(*(cluster(n) for n in cluster_names)))
    first, second = result.pages
    assert first.clusters[:5] == ("cluster1", "cluster10", "cluster100", "cluster101", "cluster102")
    assert first.clusters == tuple(sorted(cluster_names))[:100]
    assert second.clusters == tuple(sorted(cluster_names))[100:]
    assert second.clusters[-1] == "cluster99"
    shrunk = schedule_spec({}, *bound_set(*(cluster(n) for n in cluster_names[:10])))
    assert [p.name for p in shrunk.pages] == ["placement1-decision-1"]


def test_pages_number_across_groups_with_one_counter() -> None:
    clusters = [cluster(f"a{i:03d}", labels={"g": "a"}) for i in range(150)] + [
        cluster(f"b{i:02d}") for i in range(30)
    ]
    result = schedule_spec(groups_spec(group("big", {"g": "a"})), *bound_set(*clusters))
    assert [(p.name, p.group_name, p.group_index, len(p.clusters)) for p in result.pages] == [
        ("placement1-decision-1", "big", 0, 100),
        ("placement1-decision-2", "big", 0, 50),
        ("placement1-decision-3", "", 1, 30),
    ]
