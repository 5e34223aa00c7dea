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


def test_times_print_in_whole_seconds_while_the_recheck_keeps_the_fraction() -> None:
    line = evaluate_scenario(scenario())
    assert line["clustersToRollout"][0]["timeOutTime"] == "2022-01-01T00:00:00Z"
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


def test_recheck_times_past_year_9999_print_with_a_longer_year() -> None:
    # Kubernetes writes a time's year with at least four digits, more when it needs them.
    line = evaluate_scenario(
        scenario(
            now="9999-12-31T23:00:00Z",
            rolloutStrategy={"type": "All", "all": {"progressDeadline": "2h"}},
        )
    )
    assert line["error"] is None
    assert line["clustersToRollout"][0]["timeOutTime"] == "10000-01-01T01:00:00Z"
    assert line["recheckAfterSeconds"] == 7200


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("0000-02-29T12:00:00Z", "0000-02-29T12:00:00Z"),
        ("0001-01-01T00:30:00+01:00", "0000-12-31T23:30:00Z"),
        ("1969-12-31T23:59:59.999999999Z", "1969-12-31T23:59:59Z"),
        ("2024-02-29T00:00:00-05:30", "2024-02-29T05:30:00Z"),
    ],
)
def test_times_from_year_zero_on_read_and_print_in_utc(text: str, printed: str) -> None:
    assert Instant.parse(text).rfc3339(fraction=False) == printed


@pytest.mark.parametrize(
    "text",
    ["2023-02-29T00:00:00Z", "2022-13-01T00:00:00Z", "2022-01-01T24:00:00Z", "2022-01-01T00:00:60Z"],
)
def test_impossible_dates_and_times_are_not_times(text: str) -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 time"):
        Instant.parse(text)


def test_the_zero_time_prints_as_null_like_an_unset_kubernetes_time() -> None:
    line = evaluate_scenario(
        scenario(
            clusterStatuses=[
                {"clusterName": "c1", "status": "Progressing", "lastTransitionTime": "0001-01-01T00:00:00Z"}
            ],
            rolloutStrategy={"type": "All", "all": {"progressDeadline": "5s"}},
        )
    )
    timed_out = line["clustersTimeOut"][0]
    assert (timed_out["lastTransitionTime"], timed_out["timeOutTime"]) == (None, "0001-01-01T00:00:05Z")
