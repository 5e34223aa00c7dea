"""Reading the settings: durations, the progressDeadline check, thresholds, the strategy object."""

from __future__ import annotations

import pytest

from fleetplace.shared.rollout import (
    NO_DEADLINE,
    DurationError,
    MandatoryGroup,
    RolloutStrategy,
    StrategyTypeError,
    ThresholdError,
    parse_go_duration,
    parse_progress_deadline,
    rollout,
    threshold_of,
)

from .builders import NOW, groups

S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("90s", 90 * S),
        ("1h30m", 5400 * S),
        ("90ms", 90_000_000),
        ("1m0s", 60 * S),
        ("2h", 7200 * S),
        ("0", 0),
        ("-0", 0),
        ("+5s", 5 * S),
        ("-5m", -300 * S),
        ("1.5h", 5400 * S),
        (".5s", S // 2),
        ("1s5ns", S + 5),
        ("3us", 3000),
        ("3µs", 3000),
        ("3μs", 3000),
        ("2562047h47m16.854775807s", (1 << 63) - 1),
        ("-2562047h47m16.854775808s", -(1 << 63)),
    ],
)
def test_go_durations_parse_to_nanoseconds(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("90", 'time: missing unit in duration "90"'),
        ("5x", 'time: unknown unit "x" in duration "5x"'),
        ("2d", 'time: unknown unit "d" in duration "2d"'),
        ("s", 'time: invalid duration "s"'),
        (".s", 'time: invalid duration ".s"'),
        ("5s garbage", 'time: unknown unit "s garbage" in duration "5s garbage"'),
        ("2562047h47m16.854775808s", 'time: invalid duration "2562047h47m16.854775808s"'),
        ("9999999999999999999h", 'time: invalid duration "9999999999999999999h"'),
        ("1é", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
    ],
)
def test_bad_go_durations_give_gos_message(text: str, message: str) -> None:
    with pytest.raises(DurationError) as e:
        parse_go_duration(text)
    assert str(e.value) == message


@pytest.mark.parametrize("text", [None, "", "None"])
def test_absent_empty_or_none_deadline_never_times_out(text: str | None) -> None:
    assert parse_progress_deadline(text) == NO_DEADLINE


def test_deadline_of_the_largest_duration_means_no_deadline() -> None:
    assert parse_progress_deadline("2562047h47m16.854775807s") == NO_DEADLINE


@pytest.mark.parametrize(
    ("text", "nanos"), [("90s", 90 * S), ("90ms", 90_000_000), ("1h30m", 5400 * S), ("05m", 300 * S)]
)
def test_deadline_starting_with_digits_and_a_unit_parses_as_a_duration(text: str, nanos: int) -> None:
    assert parse_progress_deadline(text) == nanos


@pytest.mark.parametrize("text", ["90", "-5m", "1.5h", "+5m", "h", " 5m", "5d", "None "])
def test_deadline_not_starting_with_digits_and_h_m_s_is_an_invalid_timeout_format(text: str) -> None:
    with pytest.raises(DurationError, match=r"^invalid timeout format$"):
        parse_progress_deadline(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5|", 'time: unknown unit "|" in duration "5|"'),
        ("xNone", 'time: invalid duration "xNone"'),
        ("5mx", 'time: unknown unit "mx" in duration "5mx"'),
        ("2d5h", None),
    ],
)
def test_deadline_pattern_checks_only_the_start_or_the_end(text: str, message: str | None) -> None:
    # "2d5h" starts with a digit and `d`: the pattern rejects it before the parser sees it.
    with pytest.raises(DurationError) as e:
        parse_progress_deadline(text)
    assert str(e.value) == (message or "invalid timeout format")


def test_deadline_pattern_end_anchor_is_end_of_text_not_before_a_newline() -> None:
    with pytest.raises(DurationError, match="invalid timeout format"):
        parse_progress_deadline("xNone\n")


@pytest.mark.parametrize(
    ("value", "total", "default", "expected"),
    [
        (3, 10, 0, 3),
        (0, 10, 7, 7),
        (-1, 10, 7, 7),
        (11, 10, 7, 7),
        (10, 10, 0, 10),
        ("50%", 5, 0, 3),
        ("7%", 100, 0, 8),
        ("5.5%", 100, 0, 6),
        ("1e2%", 4, 0, 4),
        ("-10%", 4, 2, 2),
        ("0%", 4, 2, 2),
        ("100%", 6, 0, 6),
        ("200%", 6, 1, 1),
        ("25%", 0, 0, 0),
        ("inf%", 4, 1, 1),
        ("nan%", 4, 1, 1),
        ("1e300%", 4, 1, 1),
        ("0x1p3%", 100, 0, 8),
        ("1_0%", 100, 0, 10),
        ("0.0001%", 3, 0, 1),
    ],
)
def test_thresholds_round_up_percentages_and_fall_back_to_the_default(
    value: int | str, total: int, default: int, expected: int
) -> None:
    assert threshold_of(value, total, default) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "'0' is an invalid maximum threshold value: string is not a percentage"),
        ("3", "'3' is an invalid maximum threshold value: string is not a percentage"),
        ("abc", "'abc' is an invalid maximum threshold value: string is not a percentage"),
        ("", "'' is an invalid maximum threshold value: string is not a percentage"),
        ("%", 'strconv.ParseFloat: parsing "": invalid syntax'),
        ("abc%", 'strconv.ParseFloat: parsing "abc": invalid syntax'),
        ("50%%", 'strconv.ParseFloat: parsing "50%": invalid syntax'),
        (" 5%", 'strconv.ParseFloat: parsing " 5": invalid syntax'),
        ("+nan%", 'strconv.ParseFloat: parsing "+nan": invalid syntax'),
        ("0x1%", 'strconv.ParseFloat: parsing "0x1": invalid syntax'),
        ("1__0%", 'strconv.ParseFloat: parsing "1__0": invalid syntax'),
        ("1e400%", 'strconv.ParseFloat: parsing "1e400": value out of range'),
    ],
)
def test_threshold_strings_that_are_not_percentages_are_errors(value: str, message: str) -> None:
    with pytest.raises(ThresholdError) as e:
        threshold_of(value, 10, 0)
    assert str(e.value) == message


@pytest.mark.parametrize("text", ["\u0131nf", "\u0130nf", "\u0131nfinity", "INF\u0131NITY"])
def test_infinity_is_spelled_in_ascii_letters_only(text: str) -> None:
    # Go compares the letters of "inf"/"infinity"/"nan" byte by byte, ignoring ASCII case only.
    with pytest.raises(ThresholdError) as e:
        threshold_of(text + "%", 10, 0)
    assert str(e.value) == f'strconv.ParseFloat: parsing "{text}": invalid syntax'


@pytest.mark.parametrize("text", ["Inf%", "-INFINITY%", "+iNf%", "NaN%", "nAn%"])
def test_ascii_infinity_and_nan_in_any_case_fall_back_to_the_default(text: str) -> None:
    assert threshold_of(text, 10, 3) == 3


def test_only_the_sub_object_named_by_type_is_read() -> None:
    parsed = RolloutStrategy.from_json(
        {
            "type": "Progressive",
            "progressivePerGroup": {"maxFailures": "bad"},
            "all": {"progressDeadline": "bad"},
            "progressive": {"maxConcurrency": "50%", "timeout": "bad", "unknown": 1},
        }
    )
    assert parsed.max_concurrency == "50%"
    assert parsed.progress_deadline == ""
    assert parsed.max_failures == 0


@pytest.mark.parametrize("settings", [None, {}])
def test_absent_or_null_sub_object_means_defaults(settings: dict[str, object] | None) -> None:
    parsed = RolloutStrategy.from_json({"type": "ProgressivePerGroup", "progressivePerGroup": settings})
    assert parsed == RolloutStrategy(type="ProgressivePerGroup")


def test_min_success_time_is_a_go_duration_and_may_be_negative() -> None:
    parsed = RolloutStrategy.from_json({"type": "Progressive", "progressive": {"minSuccessTime": "-1m"}})
    assert parsed.min_success_time_nanos == -60 * S


def test_all_does_not_read_min_success_time() -> None:
    parsed = RolloutStrategy.from_json({"type": "All", "all": {"minSuccessTime": "1h"}})
    assert parsed.min_success_time_nanos == 0


def test_mandatory_groups_by_name_or_index_default_to_index_zero() -> None:
    parsed = RolloutStrategy.from_json(
        {
            "type": "Progressive",
            "progressive": {"mandatoryDecisionGroups": [{"groupName": "canary"}, {"groupIndex": 2}, {}]},
        }
    )
    assert parsed.mandatory_groups == (
        MandatoryGroup("canary", 0),
        MandatoryGroup("", 2),
        MandatoryGroup("", 0),
    )


@pytest.mark.parametrize("kind", [None, "", "all", "progressive", "Canary"])
def test_unknown_strategy_type_is_an_error(kind: str | None) -> None:
    parsed = RolloutStrategy.from_json({"type": kind})
    with pytest.raises(StrategyTypeError) as e:
        rollout(parsed, groups(("", 0, ["c1"])), [], NOW)
    assert str(e.value) == f"incorrect rollout strategy type {kind or ''}"
