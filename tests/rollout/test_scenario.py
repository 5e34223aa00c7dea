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


def _strategy_error(kind: str, settings: dict[str, Any]) -> str | None:
    section = {"All": "all", "Progressive": "progressive", "ProgressivePerGroup": "progressivePerGroup"}[kind]
    line = evaluate_scenario(scenario(rolloutStrategy={"type": kind, section: settings}))
    error: str | None = line["error"]
    return error


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (60, "json: cannot unmarshal number into Go value of type string"),
        (1.5, "json: cannot unmarshal number into Go value of type string"),
        (True, "json: cannot unmarshal bool into Go value of type string"),
        ({}, "json: cannot unmarshal object into Go value of type string"),
        (["1s"], "json: cannot unmarshal array into Go value of type string"),
        (None, 'time: invalid duration ""'),
        ("", 'time: invalid duration ""'),
    ],
)
def test_min_success_time_that_is_not_a_duration_string_fails_like_a_kubernetes_duration(
    value: Any, message: str
) -> None:
    assert _strategy_error("Progressive", {"minSuccessTime": value}) == message
    assert _strategy_error("ProgressivePerGroup", {"minSuccessTime": value}) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "json: cannot unmarshal number 1.5 into Go value of type int32"),
        (2.0, "json: cannot unmarshal number 2.0 into Go value of type int32"),
        (2**31, "json: cannot unmarshal number 2147483648 into Go value of type int32"),
        (-(2**31) - 1, "json: cannot unmarshal number -2147483649 into Go value of type int32"),
        (False, "json: cannot unmarshal bool into Go value of type int32"),
        ({"a": 1}, "json: cannot unmarshal object into Go value of type int32"),
        ([1], "json: cannot unmarshal array into Go value of type int32"),
    ],
)
def test_thresholds_that_are_neither_int32_nor_string_fail_like_a_kubernetes_int_or_string(
    value: Any, message: str
) -> None:
    assert _strategy_error("Progressive", {"maxFailures": value}) == message
    assert _strategy_error("Progressive", {"maxConcurrency": value}) == message
    assert _strategy_error("ProgressivePerGroup", {"maxFailures": value}) == message
    assert _strategy_error("All", {"maxFailures": value}) == message


def test_int32_bounds_are_valid_thresholds() -> None:
    assert _strategy_error("Progressive", {"maxFailures": 2**31 - 1, "maxConcurrency": -(2**31)}) is None


def test_the_first_bad_setting_in_document_order_is_reported() -> None:
    both = {"maxFailures": 1.5, "minSuccessTime": 5}
    assert (
        _strategy_error("Progressive", both)
        == "json: cannot unmarshal number 1.5 into Go value of type int32"
    )
    reordered = {"minSuccessTime": 5, "maxFailures": 1.5}
    assert (
        _strategy_error("Progressive", reordered)
        == "json: cannot unmarshal number into Go value of type string"
    )


def test_all_decodes_its_soak_time_and_max_failures_without_using_them() -> None:
    assert _strategy_error("All", {"minSuccessTime": "1d"}) == 'time: unknown unit "d" in duration "1d"'
    assert _strategy_error("All", {"minSuccessTime": "1h", "maxFailures": "9%"}) is None


@pytest.mark.parametrize(
    ("kind", "settings"),
    [
        ("All", {"maxConcurrency": 1.5, "mandatoryDecisionGroups": 7}),
        ("ProgressivePerGroup", {"maxConcurrency": {"x": 1}}),
    ],
)
def test_settings_a_type_does_not_have_are_ignored(kind: str, settings: dict[str, Any]) -> None:
    assert _strategy_error(kind, settings) is None


@pytest.mark.parametrize("value", [0, False, [], 5])
def test_progress_deadline_that_is_not_a_string_is_an_error_not_no_deadline(value: Any) -> None:
    assert _strategy_error("All", {"progressDeadline": value}) is not None


def test_null_progress_deadline_means_none() -> None:
    assert _strategy_error("All", {"progressDeadline": None}) is None
