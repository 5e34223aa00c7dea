"""The scenario codec: reading scenario objects and rendering result lines."""

from __future__ import annotations

from typing import Any

import pytest

from fleetplace.shared.rollout import Instant, ScenarioError, evaluate_scenario, parse_scenario

BASE: dict[str, Any] = {
    "name": "s",
    "now": "2022-01-01T00:00:00Z",
    "rolloutStrategy": {"type": "All", "all": {"progressDeadline": "90ms"}},
    "decisionGroups": [{"groupName": "g", "groupIndex": 0, "clusters": ["c1", "c2"]}],
    "clusterStatuses": [{"clusterName": "c1", "status": "Progressing", "lastTransitionTime": None}],
}


def scenario(**changes: Any) -> dict[str, Any]:
    return BASE | changes


def test_fractional_times_render_without_trailing_zeros() -> None:
    line = evaluate_scenario(scenario())
    assert line["clustersToRollout"][0]["timeOutTime"] == "2022-01-01T00:00:00.09Z"
    assert line["recheckAfterSeconds"] == 0.09


def test_whole_second_recheck_renders_as_an_integer() -> None:
    line = evaluate_scenario(scenario(rolloutStrategy={"type": "All", "all": {"progressDeadline": "2m"}}))
    assert line["recheckAfterSeconds"] == 120 and isinstance(line["recheckAfterSeconds"], int)


def test_absent_group_key_of_a_status_means_empty_name_and_index_zero() -> None:
    line = evaluate_scenario(scenario())
    entry = line["clustersToRollout"][0]
    assert (entry["groupName"], entry["groupIndex"]) == ("", 0)
    assert line["clustersToRollout"][1] == {
        "clusterName": "c2",
        "groupName": "g",
        "groupIndex": 0,
        "status": "ToApply",
        "lastTransitionTime": None,
        "timeOutTime": None,
    }


def test_times_with_offsets_and_nanoseconds_render_in_utc() -> None:
    assert Instant.parse("2022-01-01T01:00:00.123456789+01:00").rfc3339() == "2022-01-01T00:00:00.123456789Z"
    assert Instant.parse("2022-01-01T00:00:00.500Z").rfc3339() == "2022-01-01T00:00:00.5Z"


def test_evaluation_error_gives_a_line_with_only_the_error() -> None:
    line = evaluate_scenario(scenario(rolloutStrategy={"type": "All", "all": {"progressDeadline": "90"}}))
    assert line == {
        "name": "s",
        "clustersToRollout": [],
        "clustersTimeOut": [],
        "clustersRemoved": [],
        "maxFailureBreach": False,
        "recheckAfterSeconds": None,
        "error": "invalid timeout format",
    }


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"now": "yesterday"}, "now: not an RFC 3339 time"),
        ({"now": None}, "now: required"),
        ({"clusterStatuses": [{"clusterName": "c1", "status": "Done"}]}, "clusterStatuses[0].status"),
        ({"decisionGroups": [{"groupIndex": "one"}]}, "decisionGroups[0].groupIndex"),
    ],
)
def test_malformed_scenarios_raise_scenario_errors_that_name_the_field(
    changes: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(ScenarioError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(scenario(**changes))
    assert fragment in (evaluate_scenario(scenario(**changes))["error"] or "")


def test_bad_min_success_time_is_reported_with_gos_message() -> None:
    line = evaluate_scenario(
        scenario(rolloutStrategy={"type": "Progressive", "progressive": {"minSuccessTime": "1d"}})
    )
    assert line["error"] == 'time: unknown unit "d" in duration "1d"'


def test_deprecated_timeout_field_is_ignored() -> None:
    line = evaluate_scenario(scenario(rolloutStrategy={"type": "All", "all": {"timeout": "1s"}}))
    assert line["error"] is None and line["clustersTimeOut"] == []
