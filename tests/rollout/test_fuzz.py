"""Random scenarios, edge-case settings included: every one yields a result line or an error
line, the same one each time, and the lines keep the rules that hold whatever the strategy."""

from __future__ import annotations

import re
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetplace.shared.rollout import evaluate_scenario

from .builders import NOW, SECOND

WHOLE_SECONDS = re.compile(r"\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")

CLUSTERS = ["", "a", "b", "c", "cluster1", "cluster10", "cluster2", "d", "gone"]

DURATIONS = [
    "0",
    "0s",
    "90s",
    "90ms",
    "1h30m",
    "1s5ns",
    "-5m",
    "+5s",
    ".5s",
    "5.s",
    "1.5h",
    "3µs",
    "3μs",
    "2562047h47m16.854775807s",
    "2562047h47m16.854775808s",
    "9999999999999999999h",
    "90",
    "2d",
    "5x",
    "5|",
    "5m ",
    " 5m",
    "None",
    "xNone",
    "5mNone",
    "",
    "1é",
]
THRESHOLDS: list[Any] = [
    "1e2%",
    "0x10%",
    "0x1p3%",
    "0x_1p-2%",
    "+5%",
    "-10%",
    "inf%",
    "-Infinity%",
    "NaN%",
    "+nan%",
    "ınf%",
    " 5%",
    "5 %",
    "_5%",
    "1_0%",
    "1__0%",
    "1e400%",
    "1e-400%",
    "5.5%",
    "7%",
    "50%",
    "100%",
    "200%",
    "%",
    "50%%",
    "abc",
    "3",
    "",
    0,
    1,
    2,
    -1,
    99,
    2**31,
    1.5,
    True,
    None,
    {},
    [],
]

text_st = st.text(alphabet="0123456789hmsnuµ.+-_%eExXpPiInNfFaAtyNone |d", max_size=8)
# Mostly settings that decode, so that most scenarios get as far as the rollout itself.
valid_duration_st = st.sampled_from(["0s", "30s", "90s", "90ms", "2m", "1s5ns", "-1m", "1h30m"])
duration_st = st.one_of(
    valid_duration_st, valid_duration_st, valid_duration_st, st.sampled_from(DURATIONS), text_st, st.none()
)
deadline_st = st.one_of(
    valid_duration_st, valid_duration_st, st.sampled_from(["", "None"]), st.sampled_from(DURATIONS), text_st
)
valid_threshold_st = st.one_of(st.integers(-1, 8), st.sampled_from(["0%", "25%", "50%", "7.5%", "100%"]))
threshold_st = st.one_of(
    valid_threshold_st,
    valid_threshold_st,
    valid_threshold_st,
    st.sampled_from(THRESHOLDS),
    text_st,
    text_st.map(lambda t: t + "%"),
)
mandatory_st = st.lists(
    st.one_of(
        st.builds(lambda name: {"groupName": name}, st.sampled_from(["canary", "", "nope", "g2"])),
        st.builds(lambda index: {"groupIndex": index}, st.integers(-1, 4)),
        st.just({}),
    ),
    max_size=3,
)


@st.composite
def rollout_strategies(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.one_of(
            st.sampled_from(["All", "Progressive", "ProgressivePerGroup"]),
            st.sampled_from(["All", "Progressive", "ProgressivePerGroup"]),
            st.sampled_from(["All", "Progressive", "ProgressivePerGroup"]),
            st.sampled_from(["", "all", None]),
        )
    )
    section = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}.get(
        kind or "", "progressive"
    )
    config: dict[str, Any] = {}
    for key, values in (
        ("progressDeadline", deadline_st),
        ("minSuccessTime", duration_st),
        ("maxFailures", threshold_st),
        ("maxConcurrency", threshold_st),
        ("mandatoryDecisionGroups", mandatory_st),
    ):
        if draw(st.booleans()):
            config[key] = draw(values)
    return {"type": kind, section: config}


@st.composite
def decision_groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    # Distinct indices, mostly 0..n-1 but sometimes with a gap.
    count = draw(st.integers(0, 4))
    indices = list(range(count))
    if count and draw(st.booleans()):
        indices[-1] += draw(st.integers(1, 2))
    return [
        {
            "groupName": draw(st.sampled_from(["canary", "", "g2"])),
            "groupIndex": index,
            "clusters": draw(st.lists(st.sampled_from(CLUSTERS[:-1]), max_size=4)),
        }
        for index in indices
    ]


time_st = st.one_of(
    st.none(),
    st.integers(-400 * SECOND, 400 * SECOND).map(lambda offset: NOW.plus(offset).rfc3339()),
    st.sampled_from(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "2021-12-31T23:59:00+01:00"]),
)

status_st = st.fixed_dictionaries(
    {
        "clusterName": st.sampled_from(CLUSTERS),
        "status": st.sampled_from(["ToApply", "Progressing", "Succeeded", "Failed", "TimeOut", "Skip"]),
        "lastTransitionTime": time_st,
    },
    optional={"groupName": st.sampled_from(["canary", "", "old"]), "groupIndex": st.integers(0, 3)},
)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "name": "fuzz",
        "now": draw(st.sampled_from([NOW.rfc3339(), "2022-01-01T00:00:00.5Z", "9999-12-31T23:00:00Z"])),
        "rolloutStrategy": draw(rollout_strategies()),
        "decisionGroups": draw(decision_groups()),
        "clusterStatuses": draw(st.lists(status_st, max_size=16)),
    }


def _placed(groups: list[dict[str, Any]]) -> set[str]:
    """The clusters of the groups numbered 0..n-1 for n distinct indices (past a gap: none)."""
    indices = {group["groupIndex"] for group in groups}
    return {
        cluster for group in groups if group["groupIndex"] < len(indices) for cluster in group["clusters"]
    }


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_every_random_scenario_gives_one_well_formed_line_the_same_each_time(doc: dict[str, Any]) -> None:
    # Through JSON, as the command reads scenario files.
    line = evaluate_scenario(orjson.loads(orjson.dumps(doc)))
    assert evaluate_scenario(orjson.loads(orjson.dumps(doc))) == line
    assert set(line) == {
        "name",
        "clustersToRollout",
        "clustersTimeOut",
        "clustersRemoved",
        "maxFailureBreach",
        "recheckAfterSeconds",
        "error",
    }
    if line["error"] is not None:
        assert isinstance(line["error"], str) and line["error"]
        assert line["clustersToRollout"] == line["clustersTimeOut"] == line["clustersRemoved"] == []
        assert line["maxFailureBreach"] is False and line["recheckAfterSeconds"] is None
        return

    placed = _placed(doc["decisionGroups"])
    removed = [s["clusterName"] for s in doc["clusterStatuses"] if s["clusterName"] not in placed - {""}]
    assert [s["clusterName"] for s in line["clustersRemoved"]] == removed
    # mandatory groups are taken by reference, past a gap in the indices too
    grouped = {cluster for group in doc["decisionGroups"] for cluster in group["clusters"]}
    for entry in line["clustersToRollout"] + line["clustersTimeOut"]:
        assert entry["clusterName"] in grouped
    assert all(entry["status"] == "TimeOut" for entry in line["clustersTimeOut"])
    recheck = line["recheckAfterSeconds"]
    assert recheck is None or recheck > 0
    named = [s["clusterName"] for s in doc["clusterStatuses"] if s["clusterName"]]
    if doc["rolloutStrategy"]["type"] == "All" and len(named) == len(set(named)):
        # its failure limit is the number of clusters: only a cluster listed twice, which is
        # processed twice, can exceed it
        assert line["maxFailureBreach"] is False
    for entry in line["clustersToRollout"] + line["clustersTimeOut"] + line["clustersRemoved"]:
        for key in ("lastTransitionTime", "timeOutTime"):
            if entry[key] is not None:
                # whole seconds, also past year 9999 (where the year takes more digits)
                assert WHOLE_SECONDS.fullmatch(entry[key]), entry[key]


def test_a_mandatory_group_past_a_gap_in_the_indices_is_still_rolled_out() -> None:
    # found by the test above: the only group has index 1, so "all groups" (0..n-1) is empty,
    # but the mandatory phase takes the group by its name
    doc = {
        "name": "gap",
        "now": "2022-01-01T00:00:00Z",
        "rolloutStrategy": {
            "type": "Progressive",
            "progressive": {"mandatoryDecisionGroups": [{"groupName": "canary"}]},
        },
        "decisionGroups": [{"groupName": "canary", "groupIndex": 1, "clusters": ["a"]}],
        "clusterStatuses": [],
    }
    line = evaluate_scenario(doc)
    assert line["error"] is None
    assert [(e["clusterName"], e["status"]) for e in line["clustersToRollout"]] == [("a", "ToApply")]


def test_all_breaches_only_when_a_cluster_is_listed_twice_and_fails_twice() -> None:
    # found by the test above: All's failure limit is its number of clusters (1 here), but a
    # status listed twice is processed twice, so one failing cluster counts two failures
    doc = {
        "name": "twice",
        "now": "2022-01-01T00:00:00Z",
        "rolloutStrategy": {"type": "All", "all": {}},
        "decisionGroups": [{"groupName": "canary", "groupIndex": 0, "clusters": ["a"]}],
        "clusterStatuses": [
            {"clusterName": "a", "status": "TimeOut", "lastTransitionTime": None},
            {"clusterName": "a", "status": "Failed", "lastTransitionTime": None},
        ],
    }
    assert evaluate_scenario(doc)["maxFailureBreach"] is True
    doc["clusterStatuses"] = doc["clusterStatuses"][1:]
    assert evaluate_scenario(doc)["maxFailureBreach"] is False
